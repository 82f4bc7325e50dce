"""Any scenario's road: the breakdown per flow, car and AP (on the corridor
of tests/python/data, 3 APs and 8 cars), linked sweeps and `wayside.sweep`,
the run summary and figures of `wayside run`, the report of a scenario that
is not a paper's, and `wayside view` rendered in headless Chromium."""

from __future__ import annotations

import json
import math
import re
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import wayside
from wayside import breakdown
from wayside import sweeps as sw

CORRIDOR = str(Path(__file__).parent / "data" / "corridor.toml")
SHORT = ['duration="40 s"']
SET = [a for o in SHORT for a in ("--set", o)]


@pytest.fixture(scope="module")
def corridor():
    return wayside.run(CORRIDOR, seed=1, overrides=SHORT)


@pytest.fixture(scope="module")
def parts(corridor):
    return breakdown.breakdown(corridor)


def test_flows_count_every_byte_delivered(corridor, parts):
    transport = pl.DataFrame(corridor.transport)
    assert parts.flows.height == 8
    assert parts.flows["to"].to_list() == [f"car{i}" for i in range(8)]
    assert parts.data_mb == pytest.approx(float(transport["bytes"].cast(pl.Int64).sum()) / 1e6)
    assert parts.data_mb > 1.0
    # Each car receives exactly its own flow.
    by_car = dict(zip(parts.cars["car"], parts.cars["received_mb"]))
    for f in parts.flows.iter_rows(named=True):
        assert by_car[f["to"]] == pytest.approx(f["data_mb"])


def test_cars_associations_and_road_agree(corridor, parts):
    cars, assocs = parts.cars, parts.associations
    assert cars.height == 8 and parts.aps.height == 3
    # No roaming yet: every car is served by ap1 first.
    firsts = assocs.sort("start_s").group_by("car", maintain_order=True).agg(pl.col("ap").first())
    assert set(firsts["ap"]) == {"ap1"}
    ap1 = parts.aps.filter(pl.col("ap") == "ap1").row(0, named=True)
    assert ap1["to_cars_mb"] > 0 and ap1["cars"] == 8 and ap1["channel"] == 1
    for r in cars.iter_rows(named=True):
        # Data starts where the car is, after it associated.
        mine = assocs.filter(pl.col("car") == r["car"])
        assert r["associations"] == mine.height >= 1
        assert r["first_data_s"] >= mine["start_s"].min()
        assert r["first_data_x"] < r["last_data_x"]  # the cars drive towards +x
    # Every byte lands in a bin of the road, and a car's time on the road
    # adds up to the time it was tracked.
    along = parts.along_road.group_by("car").agg(pl.col("bytes").sum(), pl.col("time_s").sum())
    for r in along.iter_rows(named=True):
        got = cars.filter(pl.col("car") == r["car"])["received_mb"][0]
        assert r["bytes"] / 1e6 == pytest.approx(got)
        assert r["time_s"] == pytest.approx(40.0, abs=0.2)
    # Phases per association: entry, production and exit add up to the
    # association's data, production lies inside it, and the fastest cars
    # of this road still reach it.
    phased = assocs.filter(pl.col("production_mb").is_not_nan())
    assert phased.height >= 4
    for r in phased.iter_rows(named=True):
        assert r["entry_mb"] + r["production_mb"] + r["exit_mb"] == pytest.approx(r["data_mb"])
        assert r["start_x"] - 1 <= r["production_start_x"] <= r["production_end_x"] <= r["end_x"] + 1
        assert r["production_mb"] > 0
    # The data moved during associations is the car's data.
    per_assoc = assocs.group_by("car").agg(pl.col("data_mb").sum())
    for car, mb in per_assoc.iter_rows():
        assert mb == pytest.approx(cars.filter(pl.col("car") == car)["received_mb"][0])


def test_handovers_are_changes_of_ap():
    assocs = pl.DataFrame({"car": ["a", "a", "a", "b"], "ap": ["ap1", "ap1", "ap2", "ap1"], "start_s": [1.0, 5.0, 9.5, 2.0],
                           "end_s": [4.0, 9.0, 20.0, 20.0], "start_x": [0.0, 50.0, 300.0, 0.0],
                           "end_x": [40.0, 290.0, 600.0, 100.0], "ended": ["disassociated"] * 2 + ["end of run"] * 2,
                           "data_mb": [1.0] * 4})
    h = breakdown.handovers(assocs)
    row = h.to_dicts()
    assert len(row) == 1 and math.isnan(row[0].pop("data_gap_s")) and math.isnan(row[0].pop("lost_mb"))
    assert row == [{"car": "a", "time_s": 9.0, "x": 290.0, "from": "ap1", "to": "ap2", "how": "disassociated",
                    "gap_s": 0.5}]
    assert breakdown.serving_ap(assocs, "a", np.array([0.5, 2.0, 4.5, 10.0])) == [None, "ap1", None, "ap2"]


# ---------------------------------------------------------------- sweeps


def test_zip_takes_lists_in_step_and_keys_can_share_a_list():
    grid = sw.parse_grid(["a=1,2"])
    zipped = sw.parse_grid(["b=x,y,z", "c=7,8,9"], "--zip")
    points = sw.grid_points(grid, zipped)
    assert len(points) == 6  # 2 grid values times 3 zipped steps
    assert points[0] == ("a=1, b=x, c=7", ("a=1", "b=x", "c=7"))
    assert points[-1][1] == ("a=2", "b=z", "c=9")
    shared = sw.grid_points(sw.parse_grid(["k1,k2=10,20"]))
    assert shared == [("k1,k2=10", ("k1=10", "k2=10")), ("k1,k2=20", ("k1=20", "k2=20"))]
    with pytest.raises(sw.SweepError, match="differ in length"):
        sw.grid_points([], sw.parse_grid(["b=1,2", "c=1"], "--zip"))
    with pytest.raises(sw.SweepError, match="in both --grid and --zip"):
        sw.grid_points(sw.parse_grid(["b=1,2"]), sw.parse_grid(["b=1,2"], "--zip"))
    with pytest.raises(sw.SweepError, match="given twice"):
        sw.parse_grid(["a,b=1", "b=2"])


def test_python_sweep_returns_a_table_of_all_flows(tmp_path):
    table = wayside.sweep(CORRIDOR, runs=2, overrides=['duration="15 s"'], out=tmp_path / "s", workers=2,
                          zip={"node.ap2.position": [[300, 10], [500, 10]],
                               "node.ap3.position": "[600, 10],[1000, 10]"})
    assert table.height == 4 and table["status"].to_list() == ["ok"] * 4
    assert table["point"].unique(maintain_order=True).to_list() == [
        "node.ap2.position=[300, 10], node.ap3.position=[600, 10]",
        "node.ap2.position=[500, 10], node.ap3.position=[1000, 10]"]
    flows = [c for c in table.columns if c.startswith("MB ")]
    assert flows == [f"MB server→car{i}" for i in range(8)]
    assert np.allclose(table["data_mb"].to_numpy(), table.select(flows).sum_horizontal().to_numpy())
    # The two zipped keys moved together in each point's runs.
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    for p, (ap2, ap3) in zip(manifest["points"], [(300, 600), (500, 1000)]):
        nodes = {n["name"]: n for n in tomllib.loads((tmp_path / "s" / p["runs"][0]["dir"] / "scenario.toml").read_text())["node"]}
        assert nodes["ap2"]["position"][0] == ap2 and nodes["ap3"]["position"][0] == ap3


def test_sweep_cli_counts_every_flow(cli, tmp_path):
    r = cli("sweep", CORRIDOR, "--runs", "1", "--zip", "node.car0.mobility.speed,node.car1.mobility.speed=60 km/h,90 km/h",
            "--out", tmp_path / "z", "--set", 'duration="10 s"', "-j", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "all flows" in r.stdout and "server→car7" in r.stdout
    manifest = json.loads((tmp_path / "z" / "manifest.json").read_text())
    for p in manifest["points"]:
        run = p["runs"][0]
        assert run["data_mb"] == pytest.approx(sum(run["flows"].values()))
    r = cli("sweep", CORRIDOR, "--zip", "a=1,2", "--zip", "b=1", "--out", tmp_path / "x")
    assert r.returncode == 2 and "differ in length" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- wayside run


def test_run_prints_a_short_summary_per_car(cli, tmp_path):
    r = cli("run", CORRIDOR, "--out", tmp_path / "run", *SET, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "per car" in r.stdout and "connection events" not in r.stdout
    for i in range(8):
        assert re.search(rf"^\s*car{i}\s+\d+\.\d\d\s", r.stdout, re.M), r.stdout
    assert len(r.stdout.splitlines()) < 60
    table = r.stdout[r.stdout.index("per car"):r.stdout.index("data delivered")]
    assert max(len(line) for line in table.splitlines()) <= 80
    assert (tmp_path / "run" / "time_space.png").stat().st_size > 10_000
    r = cli("run", CORRIDOR, "--out", tmp_path / "run2", "--events", *SET, timeout=300)
    assert r.returncode == 0 and "connection events (first occurrence)" in r.stdout


def test_a_sounder_to_many_receivers_draws_one_figure(cli, tmp_path):
    receivers = "\n".join(f'[[node]]\nname = "r{i}"\nposition = [{20 * (i + 1)}, 0]\n' for i in range(30))
    (tmp_path / "sounder.toml").write_text(f'''name = "many"
duration = "2 s"
[radio]
standard = "802.11g"
[environment]
path_loss = "two-ray"
[[node]]
name = "sounder"
position = [0, 0]
{receivers}
[[traffic]]
kind = "sounder"
from = "sounder"
to = "broadcast"
payload = "1500 B"
interval = "20 ms"
''')
    r = cli("run", tmp_path / "sounder.toml", "--out", tmp_path / "out", "-q", timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["delivery_sounder.png"]
    dv = pl.read_csv(tmp_path / "out" / "delivery_sounder.csv")
    result = wayside.RunResult.load(tmp_path / "out")
    frames = pl.DataFrame(result.frames).with_columns(pl.col("node").cast(pl.Utf8), pl.col("event").cast(pl.Utf8))
    probes = frames.filter((pl.col("node") == "sounder") & (pl.col("event") == "tx")).height
    # Every probe counts once at each of the 30 receivers, near or far.
    assert dv["sent"].sum() == probes * 30
    near, far = dv.filter(pl.col("distance_m") < 100), dv.filter(pl.col("distance_m") > 550)
    assert near["received"].sum() / near["sent"].sum() > 0.95
    assert far["received"].sum() / far["sent"].sum() < 0.5


# ---------------------------------------------------------------- report and view


@pytest.fixture(scope="module")
def corridor_runs(tmp_path_factory):
    from conftest import run_cli

    out = tmp_path_factory.mktemp("corridor") / "sweep"
    r = run_cli("sweep", CORRIDOR, "--runs", "2", "--out", out, "-j", "2", *SET, timeout=600)
    assert r.returncode == 0, r.stderr
    rep = run_cli("report", out, timeout=600)
    assert rep.returncode == 0, rep.stderr
    return out, rep


def test_report_of_a_users_road_is_about_that_road(corridor_runs):
    out, rep = corridor_runs
    text = (out / "report.html").read_text()
    assert "MB" in rep.stdout and (out / "report.html").stat().st_size < 5e6
    assert not re.search(r"(src|href)\s*=\s*['\"](?!data:)", text)
    # Nothing of Hadaller's: no paper comparison, no drive-by figures.
    body = text.split("</style>", 1)[1]
    for word in ("Hadaller", "outside", "within ±", "fig5", "supremum"):
        assert word not in body, word
    for key in ("goodput", "data-per-car", "time-space"):
        assert text.count(f"id='{key}'") == 1, key
    for i in range(8):
        assert f"<td>car{i}</td>" in text and f"server→car{i}" in text
    # Two runs: no interval, and the page says why.
    assert "n=2, too few for a CI" in text and "±" not in re.sub(r"<p>.*?</p>", "", body)
    assert "Theoretical potential" in text and "potential MB" in text
    assert text.count("data:image/png;base64,") <= 3 + 3  # road figures + at most 3 TCP loss figures
    # Three APs and eight cars are no single drive-by: no digest of car0 alone.
    manifest = json.loads((out / "manifest.json").read_text())
    for r in manifest["points"][0]["runs"]:
        assert r["driveby_mb"] is None and not (out / r["dir"] / "driveby.json").exists()


def test_report_progress_runs_to_its_total(corridor_runs):
    from wayside import report

    out, _ = corridor_runs
    calls = []
    report.render(out, progress=lambda what, done, total: calls.append((what, done, total)))
    totals = {t for _, _, t in calls}
    assert len(totals) == 1 and calls[-1] == ("done", *[totals.pop()] * 2)
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls)
    assert any(what.startswith("run seed") for what, _, _ in calls)


def _chromium() -> str | None:
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_view_replays_the_run_in_headless_chromium(corridor_runs, cli, tmp_path):
    out, _ = corridor_runs
    run_dir = out / "seed1"
    r = cli("view", run_dir, "--out", tmp_path / "view.html", timeout=300)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "view.html").read_text()
    assert not re.search(r"(src|href)\s*=", text) and "http" not in text.replace("http-equiv", "")
    assert (tmp_path / "view.html").stat().st_size < 5e6
    data = json.loads(re.search(r'id="data">(.*?)</script>', text, re.S).group(1))
    associated = {e[1] for e in data["events"] if e[3] == "associated"}
    assert associated == {f"car{i}" for i in range(8)}
    assert [n["name"] for n in data["nodes"] if n["role"] == "ap"] == ["ap1", "ap2", "ap3"]
    assert "server" not in [n["name"] for n in data["nodes"]]  # no radio: not on the road
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium: install the Debian package 'chromium' (scripts/test.sh does when run as root)")
    page = (tmp_path / "view.html").as_uri() + "#t=20"
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", page],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r'data-state="([^"]*)"', dom.stdout)
    assert m, f"the page did not draw: {dom.stderr[-2000:]}"
    state = json.loads(m.group(1).replace("&quot;", '"'))
    assert state["t"] == 20
    cars = {c["name"]: c for c in state["cars"]}
    assert sorted(cars) == [f"car{i}" for i in range(8)]
    # Where the page puts each car is where the trace has it, and it is
    # served by the AP the associations name.
    result = wayside.RunResult.load(run_dir)
    b = breakdown.breakdown(result)
    track = breakdown.tracks(result)
    for name, c in cars.items():
        assert c["x"] == pytest.approx(breakdown.position_at(track, name, np.array([20.0]))[0], abs=2)
        assert c["ap"] == breakdown.serving_ap(b.associations, name, np.array([20.0]))[0]
    assert any(c["ap"] == "ap1" for c in cars.values())
    assert state["links"]["links"] > 0
    shot = tmp_path / "view.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1400,800", "--virtual-time-budget=5000",
                    f"--screenshot={shot}", page], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_view_errors_are_clear(cli, tmp_path):
    r = cli("view", tmp_path)
    assert r.returncode == 2 and "not a run directory" in r.stderr and "Traceback" not in r.stderr


def test_a_script_without_the_main_guard_is_told_why_the_sweep_failed(tmp_path):
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text("import wayside\nwayside.sweep('hadaller-highway', runs=2, workers=2, "
                      "overrides=['duration=\"5 s\"'])\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert 'if __name__ == "__main__":' in r.stderr and "SweepError" in r.stderr
