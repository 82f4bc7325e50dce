"""City traces and the contact-level epidemic (Zahn et al. 2009 §5.6): the
shipped small trace read in every format we support, runs, the Figure 13
sweep locally and on a real local Dask scheduler, the district cut as a
runnable scenario, and the command line's errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

import wayside
from wayside import district, epidemic, epidemic_dtn, epidemic_one, movement

SMALL = Path(__file__).resolve().parents[2] / "traces" / "small-city.fcd.xml.gz"


@pytest.fixture(scope="module")
def small() -> movement.Trace:
    return movement.load(SMALL)


def test_the_shipped_trace_is_a_small_city(small):
    s = small.stats()
    assert 400 <= s["vehicles"] <= 600
    assert s["steps"] == 300 and s["start"] == 0.0 and s["end"] == 299.0
    # Vehicles really move, at city speeds (km/h).
    assert 15 < s["mean_moving_speed"] * 3.6 < 90


def _frame(t: movement.Trace) -> pl.DataFrame:
    return movement.to_frame(t).with_columns(pl.col("vehicle").cast(pl.String)).sort("time", "vehicle")


def test_every_format_reads_the_same_trace(small, tmp_path):
    want = _frame(small)
    # The ONE, with and without the parking lot, plain and gzip.
    for park in (True, False):
        one = tmp_path / f"t{park}.one"
        movement.write_one(small, one, park)
        assert _frame(movement.load(one)).equals(want)
    (tmp_path / "t.one.gz").write_bytes(gzip.compress((tmp_path / "tTrue.one").read_bytes()))
    assert _frame(movement.load(tmp_path / "t.one.gz")).equals(want)
    # Our Parquet.
    movement.save_parquet(small, tmp_path / "t.parquet")
    assert _frame(movement.load(tmp_path / "t.parquet")).equals(want)
    # SUMO's tabular FCD (columns named after the XML attribute paths,
    # ';'-separated, a row with empty vehicle columns for an empty step).
    sumo = want.select(pl.col("time").alias("timestep_time"), pl.col("vehicle").alias("vehicle_id"),
                       pl.col("x").cast(pl.Float64).alias("vehicle_x"), pl.col("y").cast(pl.Float64).alias("vehicle_y"))
    empty = pl.DataFrame({"timestep_time": [1e4]}).with_columns(
        pl.lit(None, pl.String).alias("vehicle_id"), pl.lit(None, pl.Float64).alias("vehicle_x"),
        pl.lit(None, pl.Float64).alias("vehicle_y"))
    pl.concat([sumo, empty]).write_csv(tmp_path / "fcd.csv", separator=";")
    assert _frame(movement.load(tmp_path / "fcd.csv")).equals(want)
    sumo.write_parquet(tmp_path / "fcd.parquet")
    assert _frame(movement.load(tmp_path / "fcd.parquet")).equals(want)


def test_sumo_writes_what_we_read_in_all_three_formats():
    # The same two-vehicle run written by SUMO 1.28 as XML, CSV and Parquet
    # (tests/data/sumo-fcd.*; the XML and CSV round to 0.01 m).
    data = Path(__file__).resolve().parent.parent / "data"
    xml, csv, parquet = (_frame(movement.load(data / f"sumo-fcd.{ext}")) for ext in ("xml", "csv", "parquet"))
    assert xml.equals(csv)
    assert xml.select("time", "vehicle").equals(parquet.select("time", "vehicle"))
    assert (xml["x"] - parquet["x"]).abs().max() < 0.006
    assert xml.height == 13 and xml["vehicle"].unique().sort().to_list() == ["a", "b"]


def test_a_time_window_cuts_and_shifts(small):
    t = movement.load(SMALL, (100.0, 160.0))
    s = t.stats()
    assert (s["steps"], s["start"], s["end"]) == (60, 0.0, 59.0)
    assert s["vehicles"] < small.vehicles


def test_bad_traces_are_clear_errors(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(movement.TraceError, match="unknown trace format"):
        movement.load(tmp_path / "x.json")
    with pytest.raises(movement.TraceError, match="no such trace file"):
        movement.load(tmp_path / "missing.xml")
    (tmp_path / "bad.xml").write_text("<fcd-export><timestep time='0'><vehicle id='a' x='1'/></timestep></fcd-export>")
    with pytest.raises(movement.TraceError, match="needs id, x and y"):
        movement.load(tmp_path / "bad.xml")
    (tmp_path / "bad.csv").write_text("a;b\n1;2\n")
    with pytest.raises(movement.TraceError, match="needs the columns timestep_time"):
        movement.load(tmp_path / "bad.csv")
    pl.DataFrame({"time": [0.0, 1.0], "vehicle": ["a", "a"], "x": [1.0, None], "y": [2.0, 2.0]}).with_columns(
        pl.col("vehicle").cast(pl.Categorical)).write_parquet(tmp_path / "hole.parquet")
    with pytest.raises(movement.TraceError, match=r"hole.parquet: x has nulls; the columns must be time"):
        movement.load(tmp_path / "hole.parquet")


def test_a_single_run_imports_neither_polars_nor_pyarrow(tmp_path):
    """`wayside epidemic run` on our Parquet reads it in Rust: its start-up
    pays for neither polars nor pyarrow."""
    import subprocess
    import sys

    movement.save_parquet(movement.load(SMALL), tmp_path / "t.parquet")
    code = ("import sys; from wayside.cli import main; sys.argv = ['wayside', 'epidemic', 'run', sys.argv[1], "
            "'-p', '12.5', '-s', '4', '--timeline', sys.argv[2]]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e\n"
            "print(sorted(m for m in ('polars', 'pyarrow') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.parquet"), str(tmp_path / "tl.csv")],
                       capture_output=True, text=True, check=True)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout
    assert pl.read_csv(tmp_path / "tl.csv").columns == ["time", "complete", "fraction"]


def test_a_run_is_deterministic_and_its_timeline_ends_at_its_outcome(small):
    a = epidemic.run(small, 0.125, 4, seed=3, run_index=1)
    b = epidemic.run(small, 0.125, 4, seed=3, run_index=1)
    assert a.row() == b.row() and a.seed_vehicles == b.seed_vehicles and a.timeline.equals(b.timeline)
    assert a.devices == round(0.125 * small.vehicles) and len(a.seed_vehicles) == 4
    tl = a.timeline
    assert tl["complete"].is_sorted() and tl["complete"][-1] == a.complete
    assert 0 <= a.fraction <= 1 and a.complete > 0, "12.5% of a busy district must spread the file"
    runs = {epidemic.run(small, 0.125, 4, seed=3, run_index=r).seed_vehicles for r in range(5)}
    assert len(runs) > 1, "the run index must change the draws"


def test_impossible_points_are_clear_errors(small):
    with pytest.raises(epidemic.EpidemicError, match="equips no vehicle"):
        epidemic.run(small, 0.0001, 4)
    with pytest.raises(epidemic.EpidemicError, match="seeds"):
        epidemic.run(small, 0.5, 10_000)


def _small_sweep(out: Path, executor: str = "local", workers: int | None = 1) -> dict:
    return epidemic.sweep(SMALL, out, penetrations=(1 / 16, 1 / 4), seed_counts=(4, 12), runs=5,
                          executor=executor, workers=workers)


def test_sweep_writes_runs_table_and_plot(tmp_path):
    m = _small_sweep(tmp_path / "s")
    runs = pl.read_parquet(tmp_path / "s" / "runs.parquet")
    assert runs.height == 2 * 2 * 5
    summary = pl.read_csv(tmp_path / "s" / "figure13.csv")
    assert summary.select("seeds", "penetration").rows() == [(4, 1 / 16), (4, 1 / 4), (12, 1 / 16), (12, 1 / 4)]
    assert (summary["p5"] <= summary["median"]).all() and (summary["median"] <= summary["p95"]).all()
    assert (tmp_path / "s" / "figure13.png").stat().st_size > 10_000
    assert m["runs"] == 5 and m["vehicles"] == movement.load(SMALL).vehicles


def test_sweep_on_a_dask_cluster_matches_local_runs(dask_cluster, tmp_path):
    _small_sweep(tmp_path / "dask", executor=f"dask://{dask_cluster}")
    _small_sweep(tmp_path / "local")
    a = pl.read_parquet(tmp_path / "dask" / "runs.parquet")
    b = pl.read_parquet(tmp_path / "local" / "runs.parquet")
    assert a.equals(b)


def test_a_district_cut_runs_at_packet_level(small, tmp_path):
    out = tmp_path / "cut.toml"
    b = small.stats()["bounds"]
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    sc = district.write(small, out, area=(cx - 300, cy - 300, cx + 300, cy + 300), start=60.0, duration=20.0,
                        max_vehicles=400, name="cut")
    assert 5 <= len(sc["node"]) <= 400
    # Beacons keep per-vehicle phases: vehicles present from the start do
    # not all send on the same instant every second.
    starts = [t["start"] for t in sc["traffic"]]
    assert len(set(starts)) == len(starts)
    result = wayside.run(str(out), seed=1)
    frames = pl.DataFrame(result.frames)
    senders = frames.filter(pl.col("event") == "tx")["node"].n_unique()
    assert senders >= 5, "every vehicle broadcasts while in the cut"
    # A vehicle's radio is on only during its stay: it sends and hears
    # nothing before it enters the cut or after it has left.
    secs = {n["name"]: (float(n.get("appear", "0 s").split()[0]), float(n["disappear"].split()[0])) for n in sc["node"]}
    assert any(a > 0 for a, _ in secs.values()) and any(d < 20 for _, d in secs.values())
    t = frames.with_columns(t=pl.col("time_ns") / 1e9).select("node", "t").rows()
    outside = [(n, x) for n, x in t if not secs[n][0] <= x < secs[n][1]]
    assert not outside, outside[:3]
    with pytest.raises(district.DistrictError, match="more than --max-vehicles"):
        district.scenario(small, area=b, start=0.0, duration=300.0, max_vehicles=3)


def test_cli_run_sweep_and_errors(cli, tmp_path):
    r = cli("epidemic", "run", SMALL, "--penetration", "12.5", "--seeds", "4")
    assert r.returncode == 0, r.stderr
    assert "devices of" in r.stdout and "simulate" in r.stdout
    r = cli("epidemic", "run", SMALL, "--penetration", "0.001")
    assert r.returncode == 2 and "equips no vehicle" in r.stderr and "Traceback" not in r.stderr
    r = cli("epidemic", "info", tmp_path / "nope.xml")
    assert r.returncode == 2 and "no such trace file" in r.stderr
    r = cli("epidemic", "convert", SMALL, tmp_path / "x.json")
    assert r.returncode == 2 and "unknown output format" in r.stderr
    r = cli("epidemic", "sweep", SMALL, "--executor", "ray://x:1", "--out", tmp_path / "x")
    assert r.returncode == 2 and "allowed: local, or dask://HOST:PORT" in r.stderr
    r = cli("epidemic", "district", SMALL, "--area", "1,2,3")
    assert r.returncode == 2 and "MIN_X,MIN_Y,MAX_X,MAX_Y" in r.stderr


def test_every_vehicle_equipped_with_one_seed(small, cli):
    o = epidemic.run(small, 1.0, 1)
    assert (o.devices, len(o.seed_vehicles)) == (small.vehicles - 1, 1)
    assert not set(o.seed_vehicles) & set(o.device_vehicles)
    r = cli("epidemic", "run", SMALL, "-p", "100", "-s", "1")
    assert r.returncode == 0, r.stderr
    assert f"{small.vehicles - 1} devices of {small.vehicles} vehicles and 1 seed " in r.stdout


def test_the_ones_rules_never_reach_more_devices_than_the_papers(small):
    # One transfer at a time with restarts has, at every step, a subset of
    # the holders of broadcast with resumed progress (the Rust property
    # test proves it on random traces; here on the city's district).
    paper = epidemic.run(small, 0.5, 4, seed=2)
    one = epidemic.run(small, 0.5, 4, seed=2, rules="the-one")
    assert paper.device_vehicles == one.device_vehicles and one.rules == "one-at-a-time,restart,sampled"
    assert (paper.timeline["complete"] >= one.timeline["complete"]).all()
    assert one.complete < paper.complete and one.broken > paper.broken
    # Spelled out, the same rules give the same run.
    spelled = epidemic.run(small, 0.5, 4, seed=2, rules="one-at-a-time,restart,sampled")
    assert spelled.timeline.equals(one.timeline)
    # A longer range reaches more devices; a longer transfer fewer.
    assert epidemic.run(small, 0.5, 4, seed=2, range_m=300).complete > paper.complete
    assert epidemic.run(small, 0.5, 4, seed=2, transfer_s=60).complete < paper.complete
    with pytest.raises(epidemic.EpidemicError, match="allowed: resume, restart"):
        epidemic.run(small, 0.5, 4, rules="broadcast,keep,sampled")


def test_roles_are_printed_saved_and_given_back(small, cli, tmp_path):
    saved = tmp_path / "roles.csv"
    r = cli("epidemic", "run", SMALL, "-p", "25", "-s", "3", "--seed", "9", "--save-roles", saved,
            "--rules", "the-one", "--range", "120", "--transfer", "15")
    assert r.returncode == 0, r.stderr
    o = epidemic.run(small, 0.25, 3, seed=9, rules="the-one", range_m=120, transfer_s=15)
    assert f"seeds: {' '.join(o.seed_vehicles)}" in r.stdout and "drawn with seed 9, run 0" in r.stdout
    roles = epidemic.load_roles(saved)
    assert (tuple(roles[0]), tuple(roles[1])) == (o.device_vehicles, o.seed_vehicles)
    # Given back, the roles reproduce the run whatever the penetration and
    # seed count (the seed still drives the order in which holders choose).
    again = epidemic.run(small, 0.01, 1, seed=9, rules="the-one", range_m=120, transfer_s=15, roles=roles)
    assert again.timeline.equals(o.timeline) and again.seed_vehicles == o.seed_vehicles
    r = cli("epidemic", "run", SMALL, "--roles", saved, "--seed", "9", "--rules", "the-one", "--range", "120",
            "--transfer", "15")
    assert r.returncode == 0 and f"{o.complete:,} devices complete" in r.stdout, r.stderr
    # Bad tables are clear errors.
    (tmp_path / "bad.csv").write_text("vehicle,role\nx,driver\n")
    r = cli("epidemic", "run", SMALL, "--roles", tmp_path / "bad.csv")
    assert r.returncode == 2 and "role 'driver'; allowed: device, seed" in r.stderr
    (tmp_path / "unknown.csv").write_text("vehicle,role\nnobody,seed\n" + f"{o.device_vehicles[0]},device\n")
    r = cli("epidemic", "run", SMALL, "--roles", tmp_path / "unknown.csv")
    assert r.returncode == 2 and "seed 'nobody': no vehicle of the trace" in r.stderr


def _dtn(small, router: str, **kw) -> "epidemic_dtn.Result":
    gen = epidemic_dtn.Generator(interval="5,10", size="100k,500k", hosts=f"0,{small.vehicles}")
    return epidemic_dtn.run(small, epidemic_dtn.Settings(router=router, generators=(gen,), **kw))


def test_the_ones_routers_on_the_small_trace(small, tmp_path):
    runs = {r: _dtn(small, r) for r in epidemic_dtn.ROUTERS}
    for name, r in runs.items():
        s = r.summary
        assert s["created"] == r.messages.height > 30, name
        assert 0 < s["delivered"] <= s["created"] and s["relayed"] >= s["delivered"], name
        assert s["delivery_prob"] == pytest.approx(s["delivered"] / s["created"])
        assert r.messages["delivered_at"].is_not_null().sum() == s["delivered"]
        assert r.hosts["delivered_to"].sum() == s["delivered"] and r.hosts["sent"].sum() == s["relayed"]
    # Direct delivery: one hop, no relaying.
    dd = runs["direct-delivery"].summary
    assert (dd["hopcount_avg"], dd["overhead_ratio"]) == (1.0, 0.0)
    # Binary spray-and-wait hands out at most copies - 1 copies a message.
    snw = runs["spray-and-wait"]
    # (plus the one delivery).
    assert (snw.messages["relayed"] <= epidemic_dtn.COPIES).all()
    assert snw.summary["relayed"] < runs["epidemic"].summary["relayed"]
    # First contact keeps one copy: it never copies, only moves.
    assert runs["first-contact"].summary["removed"] == runs["first-contact"].summary["relayed"]
    # Deterministic; another run index draws other messages.
    again = _dtn(small, "prophet")
    assert again.summary == runs["prophet"].summary and again.messages.equals(runs["prophet"].messages)
    assert not _dtn(small, "prophet", run=1).messages.equals(again.messages)
    # Outputs: Parquet and The ONE's report.
    epidemic_dtn.write(runs["epidemic"], tmp_path / "o", "small", 299.0)
    assert pl.read_parquet(tmp_path / "o" / "hosts.parquet").height == small.vehicles
    summary = pl.read_parquet(tmp_path / "o" / "summary.parquet")
    assert summary["router"][0] == "epidemic" and summary["delivered"][0] == runs["epidemic"].summary["delivered"]
    text = (tmp_path / "o" / "MessageStatsReport.txt").read_text()
    assert text.startswith("Message stats for scenario small\nsim_time: 299.0000\ncreated: ")
    assert f"delivery_prob: {runs['epidemic'].summary['delivery_prob']:.4f}" in text


def test_cli_dtn_prints_the_report_and_rejects_bad_settings(cli, tmp_path):
    r = cli("epidemic", "dtn", SMALL, "--router", "spray-and-wait", "--size", "100k", "--interval", "10,20",
            "--out", tmp_path / "d")
    assert r.returncode == 0, r.stderr
    assert "delivery_prob" in r.stdout and (tmp_path / "d" / "messages.parquet").is_file()
    r = cli("epidemic", "dtn", SMALL, "--router", "maxprop")
    assert r.returncode == 2 and "allowed: epidemic, spray-and-wait" in r.stderr
    r = cli("epidemic", "dtn", SMALL, "--size", "1X")
    assert r.returncode == 2 and "size '1X'" in r.stderr
    r = cli("epidemic", "dtn", SMALL, "--hosts", "0,100000")
    assert r.returncode == 2 and "HI excluded" in r.stderr


def test_convert_writes_a_the_one_scenario_that_runs_here(small, cli, tmp_path):
    out = tmp_path / "s.one.gz"
    r = cli("epidemic", "convert", SMALL, out, "-p", "25", "-s", "3", "--seed", "4", "--router", "spray-and-wait")
    assert r.returncode == 0, r.stderr
    o = epidemic.run(small, 0.25, 3, seed=4)
    hosts = pl.read_csv(tmp_path / "s.hosts.csv", schema_overrides={"vehicle": pl.String})
    # Only the equipped vehicles are hosts, numbered as The ONE numbers them.
    assert sorted(hosts.filter(pl.col("role") == "seed")["vehicle"]) == sorted(o.seed_vehicles)
    assert hosts.height == o.devices + 3 and hosts["host"].to_list() == list(range(hosts.height))
    assert gzip.decompress(out.read_bytes()).split(b"\n", 1)[0].count(b" ") == 5
    settings = epidemic_one.parse(tmp_path / "s.settings.txt")
    assert settings["Group.nrofHosts"] == str(hosts.height) and settings["Group.router"] == "SprayAndWaitRouter"
    assert settings["ExternalMovement.file"] == str(tmp_path / "s.one")
    assert "gunzip s.one.gz first" in (tmp_path / "s.settings.txt").read_text()
    seeds = hosts.filter(pl.col("role") == "seed")["host"].to_list()
    events = (tmp_path / "s.events.txt").read_text().splitlines()
    assert [int(e.split()[3]) for e in events] == seeds and all(e.split()[2] == "F" for e in events)
    # Read back as The ONE sees it (our gzip too), the hosts keep their numbers.
    (tmp_path / "s.one").write_bytes(gzip.decompress(out.read_bytes()))
    sc = epidemic_one.load_settings(tmp_path / "s.settings.txt")
    assert (sc.settings.router, sc.settings.range_m, sc.settings.speed) == ("spray-and-wait", 150.0, 1e6)
    # One file created at every seed: one message with a copy at each.
    assert [(m[0], *m[4]) for m in sc.settings.messages] == [tuple(seeds)]
    trace, res = epidemic_one.run_settings(sc)
    assert trace.names() == hosts["vehicle"].to_list()
    assert res.summary["created"] == 1 and res.summary["relayed"] > 0
    assert res.hosts.filter(pl.col("created") > 0)["number"].to_list() == sorted(seeds)
    got = res.hosts.filter(pl.col("first_received").is_not_null())
    assert got.height == res.summary["relayed"] and not set(got["number"]) & set(seeds)
    r = cli("epidemic", "one", tmp_path / "s.settings.txt", "--out", tmp_path / "o")
    assert r.returncode == 0 and "delivery_prob" in r.stdout, r.stderr
    assert (tmp_path / "o" / "MessageStatsReport.txt").is_file()


def test_the_one_settings_with_a_generator_and_bad_settings(small, tmp_path):
    movement.write_one(small, tmp_path / "m.one", park=True)
    base = {"Scenario.name": "g", "Scenario.endTime": "299", "Scenario.nrofHostGroups": "1",
            "Group.movementModel": "ExternalMovement", "ExternalMovement.file": str(tmp_path / "m.one"),
            "Group.router": "EpidemicRouter", "Group1.router": "ProphetRouter", "Group.interface1": "bt",
            "bt.transmitRange": "150", "bt.transmitSpeed": "250k", "Group.bufferSize": "5M", "Group.msgTtl": "300",
            "Events.nrof": "1", "Events1.class": "MessageEventGenerator", "Events1.interval": "25,35",
            "Events1.size": "500k,1M", "Events1.hosts": "0,519", "Events1.prefix": "M"}

    def write(d: dict) -> Path:
        p = tmp_path / "x.txt"
        p.write_text("# comment\n" + "\n".join(f"{k} = {v}" for k, v in d.items()) + "\n")
        return p

    sc = epidemic_one.load_settings(write(base))
    s = sc.settings
    assert (s.router, s.speed, s.buffer, s.ttl_min, s.queue) == ("prophet", 250_000.0, 5_000_000, 300, "random")
    assert s.generators[0].hosts == "0,519"
    _, res = epidemic_one.run_settings(sc)
    assert 5 <= res.summary["created"] <= 12
    for key, value, msg in (("Scenario.nrofHostGroups", "2", "only one host group"),
                            ("Group1.router", "MaxPropRouter", "allowed: EpidemicRouter"),
                            ("Events1.class", "OneToEachMessageGenerator", "allowed: MessageEventGenerator"),
                            ("Group.movementModel", "RandomWaypoint", "only ExternalMovement")):
        with pytest.raises(epidemic_one.OneError, match=msg):
            epidemic_one.load_settings(write({**base, key: value}))
    with pytest.raises(epidemic_one.OneError, match="bt.transmitRange: missing"):
        epidemic_one.load_settings(write({k: v for k, v in base.items() if k != "bt.transmitRange"}))


def test_sweeps_under_both_rules_side_by_side(cli, tmp_path):
    for rules in ("paper", "the-one"):
        epidemic.sweep(SMALL, tmp_path / rules, penetrations=(1 / 8, 1 / 2), seed_counts=(4,), runs=3, workers=1,
                       rules=rules)
    paper, one = (pl.read_parquet(tmp_path / r / "runs.parquet") for r in ("paper", "the-one"))
    # Same roles run by run, and The ONE's rules never reach more devices.
    assert paper["devices"].equals(one["devices"]) and (one["complete"] <= paper["complete"]).all()
    assert (one["complete"] < paper["complete"]).any()
    r = cli("epidemic", "compare", tmp_path / "paper", tmp_path / "the-one", "--out", tmp_path / "c.png")
    assert r.returncode == 0 and (tmp_path / "c.png").stat().st_size > 20_000, r.stderr
    r = cli("epidemic", "compare", tmp_path / "nothing")
    assert r.returncode == 2 and "not a sweep's output" in r.stderr
