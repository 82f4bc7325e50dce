"""`wayside sweep` and `wayside report`: grid parsing, run directories and
manifest, the Dask executor against a real local scheduler and workers, the
HTML report (self-contained, every figure rendering in headless Chromium)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from wayside import sweeps as sw
from wayside.jobs import ExecutorError, check_executor, run_jobs

SHORT = ['duration="40 s"', "node.car.position=[-450, 0]"]
SET = [a for o in SHORT for a in ("--set", o)]


def test_split_values_respects_brackets_and_quotes():
    assert sw.split_values('"11 Mbps","54 Mbps"') == ['"11 Mbps"', '"54 Mbps"']
    assert sw.split_values("[-200, 0],[-300, 0]") == ["[-200, 0]", "[-300, 0]"]
    assert sw.split_values("80 km/h, 100 km/h") == ["80 km/h", "100 km/h"]
    assert sw.split_values("'a,b',c") == ["'a,b'", "c"]


def test_grid_is_a_product_of_its_lists():
    grid = sw.parse_grid(["a=1,2", "b=x,y,z"])
    points = sw.grid_points(grid)
    assert len(points) == 6
    assert points[0] == ("a=1, b=x", ("a=1", "b=x"))
    assert points[-1][1] == ("a=2", "b=z")
    assert sw.grid_points([]) == [("", ())]
    for bad, msg in (("novalue", "write KEY=V1,V2"), ("a=1,,2", "empty value")):
        with pytest.raises(sw.SweepError, match=msg):
            sw.parse_grid([bad])
    with pytest.raises(sw.SweepError, match="given twice"):
        sw.parse_grid(["a=1", "a=2"])


def test_plan_checks_every_point_before_running(tmp_path):
    jobs, manifest = sw.plan("hadaller-highway", 3, sw.parse_grid(['node.car.tx_power="15 dBm","19 dBm"']), tmp_path, base_seed=5)
    assert [j.seed for j in jobs] == [5, 6, 7, 5, 6, 7]
    assert [p["runs"][0]["dir"] for p in manifest["points"]] == ["p0/seed5", "p1/seed5"]
    with pytest.raises(sw.SweepError, match="mac.ratez"):
        sw.plan("hadaller-highway", 1, sw.parse_grid(["mac.ratez=1,2"]), tmp_path)
    with pytest.raises(ValueError, match="no such built-in scenario or file"):
        sw.plan("no-such-scenario", 1, [], tmp_path)


def test_executor_specifications():
    assert check_executor("local") == "local"
    assert check_executor("dask://127.0.0.1:8786") == "dask://127.0.0.1:8786"
    for bad in ("dask://nohost", "ray://x:1", "dask://h:99999"):
        with pytest.raises(ExecutorError):
            check_executor(bad)
    assert sorted(run_jobs(abs, [-3, 4, -5], workers=1)) == [(0, 3), (1, 4), (2, 5)]


def _die_on_two(n: int) -> int:
    if n == 2:
        os._exit(3)  # a worker process that dies (as a crashed engine would)
    return n


def test_a_dead_local_worker_is_an_executor_error():
    with pytest.raises(ExecutorError, match="a local worker process died"):
        list(run_jobs(_die_on_two, [1, 2, 3], workers=2))


def test_sweep_cli_errors_are_clear(cli, tmp_path):
    r = cli("sweep", "hadaller-highway", "--grid", "mac.rate", "--out", tmp_path / "x")
    assert r.returncode == 2 and "KEY=V1,V2" in r.stderr and "Traceback" not in r.stderr
    r = cli("sweep", "hadaller-highway", "--executor", "ray://x:1", "--out", tmp_path / "x")
    assert r.returncode == 2 and "allowed: local, or dask://HOST:PORT" in r.stderr
    r = cli("sweep", "hadaller-highway", "--set", "mac.bogus=1", "--out", tmp_path / "x")
    assert r.returncode == 2 and "mac" in r.stderr and "Traceback" not in r.stderr
    r = cli("report", tmp_path / "missing")
    assert r.returncode == 2 and "no such directory" in r.stderr
    (tmp_path / "empty").mkdir()
    r = cli("report", tmp_path / "empty")
    assert r.returncode == 2 and "no run directories" in r.stderr


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A 2-point x 2-seed sweep of a shortened hadaller-highway, and its report."""
    from conftest import run_cli

    out = tmp_path_factory.mktemp("sweep") / "hh"
    r = run_cli("sweep", "hadaller-highway", "--runs", "2", "--grid", "node.car.mobility.speed=80 km/h,100 km/h",
                "--workers", "2", "--out", out, *SET, timeout=600)
    assert r.returncode == 0, r.stderr
    rep = run_cli("report", out, "--out", out / "report.html", timeout=600)
    assert rep.returncode == 0, rep.stderr
    return out, r


def test_sweep_writes_runs_digests_and_manifest(swept):
    out, r = swept
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scenario"] == "hadaller-highway"
    assert [p["label"] for p in manifest["points"]] == ["node.car.mobility.speed=80 km/h", "node.car.mobility.speed=100 km/h"]
    runs = [e for p in manifest["points"] for e in p["runs"]]
    assert [e["status"] for e in runs] == ["ok"] * 4
    for e in runs:
        d = out / e["dir"]
        assert (d / "frames.parquet").is_file() and (d / "driveby.json").is_file()
        assert json.loads((d / "driveby.json").read_text())["data_mb"] == pytest.approx(e["driveby_mb"])
        # One flow: all the data is the drive-by's.
        assert e["flows"] == {"ap→car": pytest.approx(e["data_mb"])} and e["data_mb"] == pytest.approx(e["driveby_mb"])
    # The grid value reached the run: the faster car covers more road in 40 s.
    import tomllib

    speeds = [tomllib.loads((out / p["runs"][0]["dir"] / "scenario.toml").read_text())["node"][1]["mobility"]["speed"]
              for p in manifest["points"]]
    assert speeds == ["80 km/h", "100 km/h"]
    assert "ok" in r.stdout and "manifest" in r.stdout


def test_report_is_self_contained_with_every_figure(swept):
    out, _ = swept
    text = (out / "report.html").read_text()
    assert not re.search(r"(src|href)\s*=\s*['\"](?!data:)", text), "the report must not load anything"
    assert "http://" not in text and "https://" not in text
    for fig in ("fig5", "fig9", "fig12", "fig14", "fig18-19", "fig22"):
        assert text.count(f"id='{fig}'") == 2  # one per grid point
    assert text.count("id='points'") == 1  # the grid points side by side
    # 13 drive-by figures, 3 of the road per grid point, and one TCP loss
    # figure per run shown and TCP sender.
    for fig in ("goodput", "data-per-car", "time-space"):
        assert text.count(f"id='{fig}'") == 2
    tcp_figures = text.count("<h4>")
    assert tcp_figures >= 2 and text.count("data:image/png;base64,") == 13 + 6 + tcp_figures
    for label in ("80 km/h", "100 km/h"):
        assert label in text
    for claim in ("21.6 MB", "32.6 MB", "51.1 MB", "-640 m", "13.1 s", "7.5%", "22.8%", "2.1%", "16–23%"):
        assert claim in text, claim


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_report_renders_in_headless_chromium(swept, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium: install the Debian package 'chromium' (scripts/test.sh does when run as root)")
    out, _ = swept
    # The report plus a probe that, once everything has loaded, writes each image's size into the page.
    probe = ("<script>window.addEventListener('load',()=>{const r=document.createElement('pre');r.id='probe';"
             "r.textContent=JSON.stringify([...document.images].map(i=>[i.closest('figure').id,i.complete,i.naturalWidth,i.naturalHeight]));"
             "document.body.appendChild(r);});</script>")
    page = tmp_path / "probe.html"
    page.write_text((out / "report.html").read_text().replace("</body>", probe + "</body>"))
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + str(tmp_path / "profile"),
            "--virtual-time-budget=10000", "--dump-dom", page.as_uri()]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    m = re.search(r"<pre id=\"probe\">(.*?)</pre>", r.stdout, re.S)
    assert m, f"the page did not finish loading: {r.stderr[-2000:]}"
    images = json.loads(m.group(1).replace("&quot;", '"'))
    assert len(images) == 13 + 6 + (out / "report.html").read_text().count("<h4>")  # + TCP loss figures
    for fig, complete, w, h in images:
        assert complete and w > 300 and h > 200, (fig, w, h)
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--user-data-dir=" + str(tmp_path / "profile2"), "--window-size=1100,3000",
                    f"--screenshot={shot}", (out / "report.html").as_uri()], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000


# ---------------------------------------------------------------- Dask


def test_sweep_on_a_dask_cluster_matches_local_runs(cli, dask_cluster, tmp_path):
    r = cli("sweep", "hadaller-highway", "--runs", "2", "--executor", f"dask://{dask_cluster}", "--out", tmp_path / "dask",
            *SET, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"on dask://{dask_cluster}" in r.stdout
    dask = json.loads((tmp_path / "dask" / "manifest.json").read_text())
    local = sw.sweep("hadaller-highway", 2, tmp_path / "local", overrides=SHORT, workers=1)
    assert [e["status"] for p in dask["points"] for e in p["runs"]] == ["ok", "ok"]
    for e in local["points"][0]["runs"]:
        a, b = tmp_path / "dask" / e["dir"], tmp_path / "local" / e["dir"]
        for name in ("frames.parquet", "transport.parquet", "driveby.json"):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_unreachable_dask_scheduler_is_a_clear_error(cli, tmp_path):
    r = cli("sweep", "hadaller-highway", "--runs", "1", "--executor", "dask://127.0.0.1:9", "--out", tmp_path / "x", *SET,
            timeout=120)
    assert r.returncode == 2
    assert "no Dask scheduler answers there" in r.stderr and "Traceback" not in r.stderr


def test_report_on_plain_run_directories(cli, tmp_path):
    """Directories from `wayside run` (no manifest, no digest) are analyzed from their traces."""
    for seed in (1, 2):
        r = cli("run", "hadaller-highway", "--seed", seed, "--quiet", "--out", tmp_path / "runs" / f"s{seed}", *SET, timeout=300)
        assert r.returncode == 0, r.stderr
    r = cli("report", tmp_path / "runs", timeout=300)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "runs" / "report.html").read_text()
    assert text.count("data:image/png;base64,") == 6 + 3 + text.count("<h4>")  # drive-by, road, TCP loss figures
    assert "<td>s1</td>" in text and "<td>s2</td>" in text
