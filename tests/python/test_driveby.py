"""The drive-by analysis (wayside.driveby): per-run digests on small
synthetic traces with known answers, the cross-run figures on hand-made
digests, and one real short run of hadaller-highway."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import wayside
from wayside import _native, driveby, metrics
from wayside.driveby import RunDigest, analyze, setup_breakdown, usable_time
from wayside.result import RunResult
from wayside.staticlab import RateProfile

SCENARIO = """
name = "synthetic"
duration = "20 s"
[radio]
standard = "802.11g"
[[node]]
name = "ap"
role = "ap"
[[node]]
name = "car"
role = "sta"
[[app]]
kind = "tcp-bulk"
from = "ap"
to = "car"
"""


def _car_x(t: float) -> float:
    return -200.0 + 20.0 * t  # 20 m/s along x, past the AP at x = 0 (t = 10 s)


def synthetic_run() -> RunResult:
    """A 20 s pass with a known setup: AP selected at 2 s, an auth timeout
    2–4 s, re-selected at 5 s, associated 5.02 s, application at 6 s, ARP
    6–7 s, data frames failing their first attempt 7–7.5 s, a TCP timeout
    (RTO 1 s) at 9 s, then 10 Mb/s from 9.5 s to 15 s."""
    frames: dict[str, list] = {k: [] for k in ("time_ns", "node", "peer", "event", "kind", "rate_mbps", "x", "rssi_dbm", "seq", "bytes")}

    def frame(t: float, node: str, peer: str, event: str, kind: str, rate: float, rssi: float = math.nan) -> None:
        for k, v in zip(frames, (int(t * 1e9), node, peer, event, kind, rate, _car_x(t) if node == "car" else 0.0, rssi, 0, 100)):
            frames[k].append(v)

    frame(0.0, "ap", "broadcast", "tx", "beacon", 1.0)
    for i in range(200):  # the car hears a beacon every 100 ms; RSSI falls 1 dB per 20 m from the AP
        t = i * 0.1
        frame(t + 0.001, "car", "ap", "rx", "beacon", 1.0, rssi=-40.0 - abs(_car_x(t + 0.001)) / 20)
    frame(7.0, "ap", "car", "tx", "data", 54.0)
    for t in np.arange(10.0, 15.0, 0.1):
        frame(float(t), "ap", "car", "tx", "data", 54.0)
        frame(float(t) + 0.0005, "car", "ap", "tx", "data", 11.0)
    ev = [
        (1.0, "car", "first-beacon", -90.0), (2.0, "car", "ap-selected", -70.0), (2.0, "car", "auth-request", 0.0),
        (4.0, "car", "auth-timeout", 0.0), (5.0, "car", "ap-selected", -70.0), (5.0, "car", "auth-request", 0.0),
        (5.01, "car", "auth-ok", 0.0), (5.01, "car", "assoc-request", 0.0), (5.02, "car", "associated", 0.0),
        (5.02, "ap", "associated", 0.0), (6.0, "ap", "app-start", 0.0), (6.0, "ap", "arp-request", 0.0),
        (7.0, "ap", "arp-resolved", 0.0), (7.0, "ap", "syn", 0.0), (7.01, "ap", "established", 0.0),
        (9.0, "ap", "tcp-timeout", 2.0),
    ]
    events = {
        "time_ns": [int(t * 1e9) for t, *_ in ev], "node": [n for _, n, _, _ in ev],
        "peer": ["car" if n == "ap" else "ap" for _, n, _, _ in ev], "event": [e for _, _, e, _ in ev],
        "x": [_car_x(t) if n == "car" else 0.0 for t, n, _, _ in ev], "y": [0.0] * len(ev), "value": [v for *_, v in ev],
    }
    mac = {"time_ns": [int(7.0e9), int(7.5e9)], "node": ["ap", "ap"], "peer": ["car", "car"],
           "event": ["delivered", "delivered"], "attempts": [3, 1]}
    times = [7.5, 8.0] + list(np.arange(9.5, 15.0, 0.0008))  # 1000 B every 0.8 ms: 10 Mb/s
    transport = {"time_ns": [int(t * 1e9) for t in times], "node": ["car"] * len(times), "peer": ["ap"] * len(times),
                 "proto": ["tcp"] * len(times), "bytes": [1000] * len(times), "x": [_car_x(t) for t in times]}
    r = RunResult.__new__(RunResult)
    r.resolved = SCENARIO
    r.nodes = ["ap", "car"]
    r.stats = {"simulated_s": 20.0}
    r.frames = pa.table(frames)
    r.events = pa.table(events)
    r.mac = pa.table(mac)
    r.transport = pa.table(transport)
    r.tcp = pa.table({"time_ns": pa.array([], pa.uint64())})
    return r


@pytest.fixture(scope="module")
def synthetic() -> RunDigest:
    return driveby.digest(synthetic_run(), name="synthetic")


def test_usable_time_needs_the_rate_over_the_next_window():
    times = np.array([0.0, 0.5, 1.0, 1.1, 1.2, 1.3])
    sizes = np.array([1000, 1000, 200_000, 200_000, 0, 0])
    assert usable_time(times, sizes, mbps=3.0) == pytest.approx(0.5)  # 0.5 s: 1000 + 400 kB in [0.5, 1.5)
    assert usable_time(times, sizes, mbps=10.0) is None
    assert usable_time(np.array([]), np.array([])) is None


def test_setup_breakdown_labels_by_priority_and_sums_to_the_delay():
    intervals = [(0.0, 3.0, "AP selection"), (2.0, 4.0, "MAC management timeouts"), (3.5, 5.0, "early TCP timeouts")]
    parts = setup_breakdown(intervals, 1.0, 6.0)
    assert parts["AP selection"] == pytest.approx(1.0)  # 1–2; 2–3 is also a timeout, which wins
    assert parts["MAC management timeouts"] == pytest.approx(1.5)  # 2–3.5
    assert parts["early TCP timeouts"] == pytest.approx(1.5)  # 3.5–5
    assert parts["other"] == pytest.approx(1.0)  # 5–6
    assert sum(parts.values()) == pytest.approx(5.0)
    assert sum(setup_breakdown(intervals, 6.0, 2.0).values()) == 0.0


def test_digest_of_a_synthetic_pass(synthetic: RunDigest):
    d = synthetic
    assert d.data_mb == pytest.approx(len(synthetic_run().transport) * 1000 / 1e6)
    assert int(d.bins["bytes"].sum()) == len(synthetic_run().transport) * 1000
    # 20 m/s: every full 20 m bin lasts 1 s, and positions are relative to the AP.
    full = d.bins.filter((pl.col("start_m") >= -180) & (pl.col("start_m") < 180))
    assert full["time_s"].to_list() == pytest.approx([1.0] * full.height, abs=0.01)
    assert d.pos(10.0) == pytest.approx(0.0, abs=0.5)
    assert d.usable_s == pytest.approx(9.5)
    assert d.usable_m == pytest.approx(-10.0, abs=0.5)
    assert d.end_m == pytest.approx(_car_x(d.end_s), abs=0.5)
    # The mean RSSI per bin follows the synthetic law (1 dB per 20 m).
    near = d.bins.filter(pl.col("start_m") == 100.0)
    assert float(near["rssi_sum"][0] / near["rssi_n"][0]) == pytest.approx(-40 - 110 / 20, abs=0.6)
    # The TCP sender's data rates and the receiver's ACK rates per bin.
    assert set(d.rates.filter(pl.col("who") == "sender")["rate_mbps"]) == {54.0}
    assert set(d.rates.filter(pl.col("who") == "receiver")["rate_mbps"]) == {11.0}
    parts = setup_breakdown(d.intervals, 0.0, d.usable_s)
    expected = {"AP selection": 3.0, "MAC management timeouts": 2.0, "application start": 0.98, "ARP": 1.0,
                "initial-rate overestimation": 0.5, "early TCP timeouts": 1.0, "other": 1.02}
    assert parts == pytest.approx(expected, abs=1e-6)


def test_digest_round_trips_through_json(synthetic: RunDigest):
    again = RunDigest.from_json(synthetic.to_json())
    assert again.to_json() == synthetic.to_json()
    assert again.bins.equals(synthetic.bins)


def test_roles_need_a_bulk_tcp_flow_between_ap_and_station(saturation):
    with pytest.raises(ValueError, match="no tcp-bulk application between a station and its AP"):
        driveby.digest(saturation)


def test_a_server_behind_the_ap_is_analyzed_over_the_air_hop():
    r = wayside.run("hadaller-highway-remote", 1, overrides=['duration="75 s"'])
    roles = driveby.roles(r)
    assert (roles.sender, roles.receiver, roles.air_tx, roles.air_rx) == ("server", "car", "ap", "car")
    d = driveby.digest(r)
    assert d.data_mb > 1
    # The data frames over the air are the AP's, and the setup has its ARP (the AP's, for the car).
    assert set(d.rates.filter(pl.col("who") == "sender")["rate_mbps"].to_list()) - {1.0}
    assert any(label == "ARP" for _, _, label in d.intervals)


def _digest(name: str, goodputs: dict[int, float], usable_m: float, end_m: float) -> RunDigest:
    """A hand-made digest on a road from -100 m to +100 m at 20 m/s
    (1 s per 20 m bin), with `goodputs` (Mb/s) per bin index."""
    bins = list(range(-5, 5))
    track = pl.DataFrame({"time_s": [0.0, 10.0], "pos_m": [-100.0, 100.0]})
    return RunDigest(
        name=name, data_mb=sum(goodputs.values()) / 8,
        bins=pl.DataFrame({"bin": bins, "start_m": [b * 20.0 for b in bins], "time_s": [1.0] * len(bins),
                           "bytes": [int(goodputs.get(b, 0.0) * 1e6 / 8) for b in bins],
                           "rssi_sum": [-60.0 - abs(b) * 6 for b in bins], "rssi_n": [1] * len(bins)}),
        rates=pl.DataFrame({"bin": [0, 0, 0], "who": ["sender", "sender", "receiver"], "rate_mbps": [54.0, 48.0, 11.0],
                            "frames": [3, 1, 4]}),
        track=track, milestones={}, intervals=[],
        timeouts=[], usable_s=(usable_m + 100) / 20, end_s=(end_m + 100) / 20, standard="802.11g",
    )


PROFILE = [RateProfile(11.0, 7.0, 40.0, 400.0), RateProfile(48.0, 26.0, 30.0, 250.0), RateProfile(54.0, 28.0, 30.0, 240.0)]


def test_analyze_supremum_phases_and_losses():
    runs = [
        _digest("a", {-3: 1.0, -2: 4.0, -1: 10.0, 0: 10.0, 1: 2.0}, usable_m=-40.0, end_m=40.0),
        _digest("b", {-2: 2.0, -1: 20.0, 0: 10.0, 1: 5.0, 2: 1.0}, usable_m=-20.0, end_m=60.0),
    ]
    a = analyze(runs, PROFILE)
    sup = dict(zip(a.bins["bin"], a.bins["sup_mbps"]))
    assert [sup[b] for b in range(-3, 3)] == pytest.approx([1.0, 4.0, 20.0, 10.0, 5.0, 1.0])
    assert a.supremum_mb == pytest.approx(41.0 / 8)
    mean = dict(zip(a.bins["bin"], a.bins["mean_mbps"]))
    assert mean[-1] == pytest.approx(15.0)
    ci = dict(zip(a.bins["bin"], a.bins["ci95_mbps"]))
    # 12.706: t(0.975, 1 df) as printed tables give it, to 5 digits.
    assert ci[-1] == pytest.approx(12.706 * np.std([10.0, 20.0], ddof=1) / math.sqrt(2), rel=1e-4)
    p = a.phases
    assert (p.entry_start_m, p.production_start_m, p.production_end_m, p.exit_end_m) == (-60.0, -40.0, 40.0, 60.0)
    assert p.share["production"] == pytest.approx(39.0 / 41.0)
    rows = {r["run"]: r for r in a.per_run.iter_rows(named=True)}
    # Run a is usable from -40 m: the supremum's first bin (1 Mb/s) is lost.
    assert rows["a"]["setup_loss"] == pytest.approx(1.0 / 41.0)
    assert rows["b"]["setup_loss"] == pytest.approx(5.0 / 41.0)
    assert rows["a"]["exit_loss"] == pytest.approx(1.0 / 41.0)  # it ended at +40 m: bin 40–60 m is lost
    assert rows["b"]["exit_loss"] == pytest.approx(0.0)
    # Setup delay: from the supremum's start (-60 m) to usable, at 20 m/s.
    assert rows["a"]["setup_delay_s"] == pytest.approx(1.0)
    assert rows["b"]["setup_delay_s"] == pytest.approx(2.0)
    assert rows["a"]["setup:other"] == pytest.approx(1.0)


def test_theoretical_potential_uses_sensitivity_over_the_noise_floor():
    sens = [(m, s) for m, _, s in _native.rate_thresholds("802.11g", 1500)]
    by_rate = dict(sens)
    assert driveby.potential_rate(by_rate[54.0], sens) == 54.0
    assert driveby.potential_rate(by_rate[48.0] - 0.5, sens) == 36.0
    assert driveby.potential_rate(min(by_rate.values()) - 1, sens) is None
    assert driveby.potential_rate(math.nan, sens) is None
    runs = [_digest("a", {0: 10.0}, -20.0, 20.0)]
    a = analyze(runs, PROFILE)
    # Bin 0's RSSI is -60 dBm: 54 Mbps (sensitivity -65 dBm) -> its static goodput; bins without a
    # measured rate count nothing.
    row = a.bins.filter(pl.col("bin") == 0)
    assert row["potential_rate_mbps"][0] == 54.0 and row["potential_mbps"][0] == 28.0
    assert a.potential_mb == pytest.approx(float((a.bins["potential_mbps"] * a.bins["time_s"]).sum()) / 8)


def test_ack_rate_penalty_from_airtime_per_mbit():
    rates = pl.DataFrame({"bin": [0, 0, 0], "who": ["sender", "sender", "receiver"], "rate_mbps": [54.0, 48.0, 11.0],
                          "frames": [3, 1, 4]})
    got = driveby.ack_rate_penalty(rates, PROFILE, -100, 100)
    a = {p.rate_mbps: p.acks_per_mbit * p.ack_airtime_us * 1e-6 for p in PROFILE}
    g = {p.rate_mbps: p.goodput_mbps for p in PROFILE}
    slowed = 0.75 / (1 / g[54.0] + a[11.0] - a[54.0]) + 0.25 / (1 / g[48.0] + a[11.0] - a[48.0])
    assert got == pytest.approx(1 - slowed / (0.75 * g[54.0] + 0.25 * g[48.0]))
    assert 0 < got < 1
    same = rates.with_columns(pl.when(pl.col("who") == "receiver").then(54.0).otherwise(pl.col("rate_mbps")).alias("rate_mbps"))
    assert driveby.ack_rate_penalty(same.filter(pl.col("who") == "receiver").vstack(
        same.filter((pl.col("who") == "sender") & (pl.col("rate_mbps") == 54.0))), PROFILE, -100, 100) == pytest.approx(0.0)
    assert math.isnan(driveby.ack_rate_penalty(rates, PROFILE, 200, 300))


def test_production_gap_over_the_middle_half_of_the_phase():
    # Production from -200 to +200 m: its middle half is -100..+100 m, the bins centred at -90..+90.
    start = [float(x) for x in range(-200, 200, 20)]
    sup = [10.0] * len(start)
    mean = [2.0 if abs(s + 10) > 100 else 8.0 for s in start]  # the shoulders far below, the middle at 80%
    bins = pl.DataFrame({"start_m": start, "sup_mbps": sup, "mean_mbps": mean})
    p = driveby.Phases(-400.0, -200.0, 200.0, 400.0)
    assert driveby.production_gap(bins, p) == pytest.approx(0.2)
    # A phase with no bin in its middle has no gap.
    assert math.isnan(driveby.production_gap(bins, driveby.Phases(500.0, 600.0, 620.0, 700.0)))


# ---------------------------------------------------------------- a real run

SHORT = ('duration="45 s"', "node.car.position=[-500, 0]")


@pytest.fixture(scope="module")
def highway() -> RunResult:
    return wayside.run("hadaller-highway", seed=3, overrides=SHORT)


def test_digest_of_a_real_pass(highway: RunResult, tmp_path):
    d = driveby.digest(highway, name="seed3")
    assert d.data_mb == pytest.approx(metrics.data_transferred_mb(highway, "car", sender="ap"))
    assert int(d.bins["bytes"].sum()) == round(d.data_mb * 1e6)
    m = d.milestones
    order = [m["first-beacon"], m["ap-selected"], m["associated"], m["app-start"], m["arp-resolved"], m["established"], m["first-data"]]
    assert None not in order and order == sorted(order)
    assert m["first-data"] <= d.usable_s <= d.end_s
    # Positions grow with time along the road; the AP is at 0.
    assert d.pos(m["first-beacon"]) < d.usable_m < d.end_m
    assert d.end_m == pytest.approx(metrics.last_data_position_m(highway, "car", "ap"), abs=0.5)
    parts = setup_breakdown(d.intervals, m["first-beacon"], d.usable_s)
    assert sum(parts.values()) == pytest.approx(d.usable_s - m["first-beacon"])
    assert parts["AP selection"] >= m["ap-selected"] - m["first-beacon"] - 1e-9
    # The car hears the AP more strongly near it than far away.
    rssi = d.bins.filter(pl.col("rssi_n") > 0).with_columns((pl.col("rssi_sum") / pl.col("rssi_n")).alias("r"))
    near = rssi.filter(pl.col("start_m").abs() < 60)["r"].mean()
    far = rssi.filter(pl.col("start_m").abs() > 300)["r"].mean()
    assert near > far + 10
    # A saved run gives the same digest.
    highway.save(tmp_path / "run")
    again = driveby.load_digest(tmp_path / "run")
    assert again.bins.equals(d.bins) and again.intervals == d.intervals and again.usable_s == d.usable_s
    # A digest file from another version is recomputed from the traces.
    (tmp_path / "run" / driveby.DIGEST_FILE).write_text('{"version": 0, "name": "old"}')
    assert driveby.load_digest(tmp_path / "run").to_json() == again.to_json()


def test_static_profile_is_measured_once_and_cached(tmp_path, monkeypatch):
    from wayside import staticlab

    monkeypatch.setenv("WAYSIDE_CACHE", str(tmp_path))
    calls = []
    real = staticlab.measure_rate

    def counting(job):
        calls.append(job)
        return real(job)

    monkeypatch.setattr(staticlab, "measure_rate", counting)
    first = staticlab.static_profile(workers=1)
    n = len(calls)
    assert n == len(first) == 12
    assert staticlab.static_profile(workers=1) == first
    assert len(calls) == n  # from the cache
    assert list(tmp_path.glob("static-*.json"))
    by_rate = {p.rate_mbps: p for p in first}
    # Faster rates give more goodput and cheaper ACKs per Mbit.
    assert by_rate[54.0].goodput_mbps > by_rate[11.0].goodput_mbps > by_rate[1.0].goodput_mbps
    assert by_rate[1.0].ack_us_per_mbit > by_rate[11.0].ack_us_per_mbit > by_rate[54.0].ack_us_per_mbit
    # The Table 3 target's own measurement agrees with the cached goodput.
    r = wayside.run("static-lab", seed=1, overrides=['mac.rate="11 Mbps"'])
    assert by_rate[11.0].goodput_mbps == pytest.approx(
        metrics.tcp_goodput_mbps(r, receiver="client", sender="ap", skip="1 s", origin="first-data"))


def test_drive_by_metrics_take_results_or_digests(highway: RunResult):
    d = driveby.digest(highway, name="seed3")
    cases = [(metrics.setup_loss, {}), (metrics.exit_loss, {"quantile": 0.85}), (metrics.setup_delay_s, {}),
             (metrics.phase_boundary_m, {"boundary": "production-start"}), (metrics.supremum_over_median, {}),
             (metrics.ack_rate_penalty, {}), (metrics.production_gap, {})]
    for fn, args in cases:
        assert metrics.run_input(fn) == "digest"
        a, b = fn([highway], **args), fn([d], **args)
        assert a == pytest.approx(b, nan_ok=True), fn.__name__
    # One run is its own supremum.
    assert metrics.supremum_over_median([d]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="boundary: 'middle' is not a phase boundary"):
        metrics.phase_boundary_m([d], boundary="middle")
    with pytest.raises(ValueError, match="quantile"):
        metrics.setup_loss([d], quantile=2)


def test_validate_ships_digests_for_drive_by_metrics(highway: RunResult):
    from wayside import validate

    job = validate.Job("hadaller-highway", SHORT, 3, [validate.Request((0, 0, 0), "setup_loss", {}, "digest"),
                                                      validate.Request((0, 0, 1), "data_transferred_mb", {"receiver": "car"}, None)])
    (_, status, value), (_, status2, mb) = validate.execute(job)
    assert status == status2 == "ok"
    assert isinstance(value, RunDigest)
    assert value.to_json() == driveby.digest(highway, name="seed3").to_json()
    assert mb == pytest.approx(value.data_mb)
