"""`wayside validate` and the metrics behind it: metric functions on small
runs whose values can be worked out by hand, tolerance and aggregation
rules, validation-file checking, and the command line (exit code 0 / 1 / 2,
the table, JSON/CSV output)."""

from __future__ import annotations

import copy
import csv
import json
import math

import polars as pl
import pyarrow as pa
import pytest
import tomli_w

import wayside
from wayside import metrics as M
from wayside import validate as V

# An AP, a station 20 m away and a wired server behind the AP, no fading:
# nothing is lost. The server sends 1000-byte datagrams every 10 ms from 1 s
# to 3 s (exactly 200: seq 0..199); the AP sends bulk TCP to the station
# after it associates.
BSS = {
    "name": "bss",
    "duration": "4 s",
    "environment": {"path_loss": "free-space"},
    "radio": {"standard": "802.11g", "channel": 6},
    "mac": {"rate": "24 Mbps"},
    "management": {"scan_channels": [6], "scan_dwell": "50 ms"},
    "node": [
        {"name": "ap", "role": "ap"},
        {"name": "client", "role": "sta", "position": [20, 0]},
        {"name": "server", "radio": False},
    ],
    "link": [{"a": "ap", "b": "server", "bandwidth": "100 Mbps", "delay": "1 ms"}],
    "app": [
        {"kind": "udp-cbr", "from": "server", "to": "client", "payload": "1000 B", "interval": "10 ms", "start": "1 s", "stop": "3 s"},
        {"kind": "tcp-bulk", "from": "ap", "to": "client", "start": "on-association", "start_delay": "0.5 s"},
    ],
}


@pytest.fixture(scope="module")
def bss():
    return wayside.run(BSS, seed=1)


# ---------------------------------------------------------------- metrics on runs


def test_udp_volume_and_loss_of_a_lossless_flow(bss):
    assert M.udp_mb(bss, "client") == pytest.approx(0.2)  # 200 x 1000 B
    assert M.udp_mb(bss, "client", app=0, sender="server") == pytest.approx(0.2)
    assert M.data_transferred_mb(bss, "client", proto="udp") == pytest.approx(0.2)
    assert M.udp_loss(bss, "client", app=0) == 0.0
    assert M.udp_mb(bss, "ap") == 0.0


def test_data_transferred_adds_up_the_transport_table(bss):
    t = M.table(bss, "transport").filter(pl.col("node") == "client")
    tcp = t.filter(pl.col("proto") == "tcp")["bytes"].sum()
    assert tcp > 1e6
    assert M.data_transferred_mb(bss, "client") == pytest.approx(tcp / 1e6)
    assert M.data_transferred_mb(bss, "client", proto="any") == pytest.approx(tcp / 1e6 + 0.2)
    # TCP's in-order counter (seq) ends at the total delivered.
    assert tcp == tcp_seq_max(bss)


def tcp_seq_max(result) -> int:
    return M.table(result, "transport").filter(pl.col("proto") == "tcp")["seq"].max()


def test_tcp_goodput_is_bytes_after_skip_over_the_remaining_time(bss):
    t = M.table(bss, "transport").filter((pl.col("node") == "client") & (pl.col("proto") == "tcp"))
    whole = M.tcp_goodput_mbps(bss, "client")
    assert whole == pytest.approx(t["bytes"].sum() * 8 / 4.0 / 1e6)
    late = M.tcp_goodput_mbps(bss, "client", skip="2 s")
    assert late == pytest.approx(t.filter(pl.col("time_ns") >= 2e9)["bytes"].sum() * 8 / 2.0 / 1e6)
    first = t["time_ns"].min()
    since = M.tcp_goodput_mbps(bss, "client", skip="500 ms", origin="first-data")
    start = first + 0.5e9
    assert since == pytest.approx(t.filter(pl.col("time_ns") >= start)["bytes"].sum() * 8 / ((4e9 - start) * 1e-9) / 1e6)
    # A 24 Mbps link shared with a 0.8 Mb/s UDP flow: steady TCP goodput well
    # under the rate, well over half of it.
    assert 10 < since < 20
    assert M.tcp_goodput_mbps(bss, "client", sender="server") == 0.0


def test_one_sender_on_a_clean_link_loses_nothing(saturation):
    # Only the frame in the air when the run ends goes unacknowledged.
    tx = M.table(saturation, "frames").filter((pl.col("node") == "sender") & (pl.col("event") == "tx")).height
    assert M.mac_frame_loss(saturation, "sender") * tx == pytest.approx(1.0)
    assert M.tcp_loss_rate(saturation, "sender") == 0.0
    assert math.isnan(M.mac_frame_loss(saturation, "receiver"))  # sends only ACKs
    # Link-level traffic only: nothing reaches an application.
    assert M.data_transferred_mb(saturation, "receiver", proto="any") == 0.0


def test_two_senders_collide_but_retries_hide_it_and_the_receiver_position_is_known(bss):
    # The AP's data and the station's TCP ACKs contend: a few collisions,
    # every one recovered by a retry.
    assert 0.0 < M.mac_frame_loss(bss, "ap") < 0.1
    assert M.tcp_loss_rate(bss, "ap") == 0.0
    assert M.last_data_position_m(bss, "client", reference="ap") == pytest.approx(20.0)
    # Nobody moves: no span of road.
    assert M.connection_span_m(bss, "ap", "client") == pytest.approx(0.0)


def test_mac_losses_on_a_drive_by_match_the_msdu_outcomes(drive_by_short):
    r = drive_by_short
    mac = M.table(r, "mac").filter((pl.col("node") == "ap") & (pl.col("peer") == "car"))
    delivered = mac.filter(pl.col("event") == "delivered")
    failed = mac.filter(pl.col("event") == "failed")
    # Every transmission belongs to an MSDU that ended delivered or failed
    # (but for the one in flight when the run ends).
    attempts = int(delivered["attempts"].cast(pl.Int64).sum() + failed["attempts"].cast(pl.Int64).sum())
    loss = M.mac_frame_loss(r, "ap", receiver="car")
    assert 0.0 < loss < 0.5
    assert loss == pytest.approx(1 - delivered.height / attempts, abs=1e-3)
    assert M.tcp_loss_rate(r, "ap") == pytest.approx(failed.height / (failed.height + delivered.height))
    assert math.isnan(M.mac_frame_loss(r, "car"))  # the car sends no data


def test_connection_span_is_the_road_between_first_and_last_acknowledged_frame(drive_by_short):
    # The car drives 20 s at 80 km/h from x = -200 m, within reach of the AP
    # throughout: 444 m of road with two-way traffic, whichever end is named first.
    span = M.connection_span_m(drive_by_short, "ap", "car")
    assert span == pytest.approx(80 / 3.6 * 20, abs=2.0)
    assert M.connection_span_m(drive_by_short, "car", "ap") == 0.0  # the car sends no data frames


def test_supremum_span_and_data_take_every_run(drive_by_short, drive_by_overrides):
    later = wayside.run("drive-by", seed=1, overrides=[*drive_by_overrides, "node.car.position=[0, 0]"])
    a, b = M.connection_span_m(drive_by_short, "ap", "car"), M.connection_span_m(later, "ap", "car")
    union = M.supremum_connection_span_m([drive_by_short, later], "ap", "car")
    assert max(a, b) < union == pytest.approx(200 + 80 / 3.6 * 20, abs=3.0)
    assert M.supremum_connection_span_m([drive_by_short], "ap", "car") == pytest.approx(a)


def test_supremum_data_of_one_run_twice_is_its_data(bss):
    assert M.supremum_data_mb([bss, bss], "client") == pytest.approx(M.data_transferred_mb(bss, "client"))
    assert M.supremum_data_mb([bss], "client", proto="udp", bin="1 km") == pytest.approx(0.2)


def test_metrics_name_unknown_nodes_and_apps(bss):
    with pytest.raises(ValueError, match="receiver: no node named 'car'.*ap, client, server"):
        M.udp_mb(bss, "car")
    with pytest.raises(ValueError, match="app: 5 is not an application"):
        M.udp_loss(bss, "client", app=5)
    with pytest.raises(ValueError, match="proto: 'sctp'"):
        M.data_transferred_mb(bss, "client", proto="sctp")
    with pytest.raises(ValueError, match="skip: '1 parsec'"):
        M.tcp_goodput_mbps(bss, "client", skip="1 parsec")


# ---------------------------------------------------------------- metrics on synthetic tables


class Synthetic:
    """A stand-in for RunResult with hand-made tables."""

    def __init__(self, nodes, **tables):
        self.nodes = nodes
        self.scenario = {"app": [{}, {}]}
        self.duration_s = 10.0
        for name, columns in tables.items():
            cols = {}
            for k, v in columns.items():
                if k in ("node", "peer", "proto", "event", "kind"):
                    cols[k] = pa.array(v, pa.string()).dictionary_encode()
                else:
                    cols[k] = pa.array(v)
            setattr(self, name, pa.table(cols))


def test_udp_loss_counts_from_the_first_to_the_last_datagram_received():
    seqs = [3, 4, 5, 8, 9, 9]  # 7 sent in 3..9; 5 distinct received; one duplicate
    r = Synthetic(
        ["a", "b"],
        transport={"time_ns": list(range(6)), "node": ["b"] * 6, "peer": ["a"] * 6, "proto": ["udp"] * 6,
                   "app": [1] * 6, "seq": seqs, "bytes": [100] * 6},
    )
    assert M.udp_loss(r, "b") == pytest.approx(2 / 7)
    assert M.udp_mb(r, "b") == pytest.approx(600 / 1e6)
    assert math.isnan(M.udp_loss(r, "b", app=0))  # nothing from app 0: undefined


def test_udp_throughput_spreads_the_payload_over_first_to_last_arrival():
    # 5 datagrams of 1250 B over 2 s: 50,000 bits/s.
    r = Synthetic(
        ["a", "b"],
        transport={"time_ns": [i * 500_000_000 for i in range(5)], "node": ["b"] * 5, "peer": ["a"] * 5,
                   "proto": ["udp"] * 5, "app": [1] * 5, "seq": [0, 1, 2, 3, 4], "bytes": [1250] * 5},
    )
    assert M.udp_throughput_mbps(r, "b") == pytest.approx(0.025)
    one = Synthetic(
        ["a", "b"],
        transport={"time_ns": [7], "node": ["b"], "peer": ["a"], "proto": ["udp"], "app": [1], "seq": [0],
                   "bytes": [1250]},
    )
    assert math.isnan(M.udp_throughput_mbps(one, "b"))  # one datagram spans no time


def test_udp_loss_needs_an_app_when_several_flows_arrive():
    r = Synthetic(
        ["a", "b"],
        transport={"time_ns": [0, 1], "node": ["b", "b"], "peer": ["a", "a"], "proto": ["udp", "udp"],
                   "app": [0, 1], "seq": [0, 0], "bytes": [1, 1]},
    )
    with pytest.raises(ValueError, match="2 UDP flows.*give app"):
        M.udp_loss(r, "b")


def test_mac_frame_loss_is_unacknowledged_transmissions():
    # 5 data transmissions to b (one broadcast ignored); 3 MSDUs delivered.
    frames = {"time_ns": list(range(7)), "node": ["a"] * 7, "peer": ["b"] * 5 + ["broadcast", "b"],
              "event": ["tx"] * 6 + ["rx"], "kind": ["data"] * 6 + ["ack"]}
    mac = {"time_ns": [1, 3, 4, 5], "node": ["a"] * 4, "peer": ["b", "b", "b", "broadcast"],
           "event": ["delivered", "failed", "delivered", "delivered"], "x": [0.0] * 4, "y": [0.0] * 4}
    r = Synthetic(["a", "b"], frames=frames, mac=mac)
    assert M.mac_frame_loss(r, "a") == pytest.approx(1 - 2 / 5)
    assert M.tcp_loss_rate(r, "a") == pytest.approx(1 / 3)


# ---------------------------------------------------------------- tolerances, aggregation


def test_tolerance_bounds():
    assert V.Tolerance("relative", 0.1).bounds(20.0) == pytest.approx((18.0, 22.0))
    assert V.Tolerance("relative", 0.1).bounds(-20.0) == pytest.approx((-22.0, -18.0))
    assert V.Tolerance("absolute", 0.5).bounds(2.0) == (1.5, 2.5)
    assert V.Tolerance("factor", 2.0).bounds(0.185) == pytest.approx((0.0925, 0.37))
    assert V.Tolerance("range", (1.0, 3.0)).bounds(None) == (1.0, 3.0)
    assert V.Tolerance("relative", 0.35).describe() == "±35%"


def test_aggregates():
    vs = [4.0, 1.0, 3.0, 2.0, math.nan]
    assert V.aggregate(vs, "median") == 2.5  # NaN (undefined) runs are left out
    assert V.aggregate(vs, "mean") == 2.5
    assert V.aggregate(vs, "min") == 1.0 and V.aggregate(vs, "max") == 4.0
    assert V.aggregate(vs, "p0") == 1.0 and V.aggregate(vs, "p100") == 4.0
    assert V.aggregate(vs, "p50") == 2.5 and V.aggregate(vs, "p90") == pytest.approx(3.7)
    assert math.isnan(V.aggregate([math.nan], "median"))


# ---------------------------------------------------------------- validation files


def write_validation(tmp_path, targets, meta=None, defaults=None, scenario=BSS):
    (tmp_path / "bss.toml").write_text(tomli_w.dumps(scenario), encoding="utf-8")
    doc = {"meta": meta or {"paper": "tiny", "base_seed": 1}, "target": targets}
    if defaults:
        doc["defaults"] = defaults
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


UDP_OK = {"name": "udp-volume", "source": "by hand", "scenario": "bss.toml", "metric": "udp_mb",
          "metric_args": {"receiver": "client", "app": 0}, "expected": 0.2, "tolerance": {"relative": 0.01}, "unit": "MB"}
UDP_MISS = {**UDP_OK, "name": "udp-volume-wrong", "expected": 0.3, "tolerance": {"relative": 0.1}}
GRID = {**UDP_OK, "name": "udp-interval", "grid": {"app.0.interval": ["10 ms", "20 ms", "40 ms"]},
        "expected": [0.2, 0.1, 0.05], "monotone": "decreasing"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metric": "nonsense"}, "metric: unknown metric 'nonsense'; available: .*udp_mb"),
        ({"metric_args": {"receiver": "client", "colour": 1}}, "metric_args: .*colour.*takes receiver, app, sender"),
        ({"metric_args": {}}, "metric_args: .*receiver"),
        ({"tolerance": {"relative": 0.1, "absolute": 1}}, "tolerance: .*exactly one of"),
        ({"tolerance": {"wobble": 1}}, "tolerance: unknown kind 'wobble'"),
        ({"tolerance": {"range": [3, 1]}}, "tolerance.range: .*lo <= hi"),
        ({"tolerance": {"factor": 0.5}}, "tolerance.factor: .*>= 1"),
        ({"aggregate": "mode"}, "aggregate: 'mode' is not usable; allowed: median"),
        ({"aggregate": "none"}, "aggregate: \"none\" is for metrics that take every run"),
        ({"expected": [1, 2]}, "expected: 2 values for no grid"),
        ({"runs": 0}, "runs: 0 is not usable"),
        ({"monotone": "decreasing"}, "monotone: needs a grid"),
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"overrides": ["duration"]}, "overrides: give a list of \"key=value\""),
    ],
)
def test_bad_targets_are_named(tmp_path, change, message):
    path = write_validation(tmp_path, [{**UDP_OK, **change}])
    with pytest.raises(V.ValidationFileError, match=message) as e:
        V.load_file(path)
    assert "target 'udp-volume'" in str(e.value) and str(path) in str(e.value)


def test_bad_files_are_named(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[[target]\nname = 1", encoding="utf-8")
    with pytest.raises(V.ValidationFileError, match="broken.toml: not valid TOML"):
        V.load_file(path)
    path.write_text("[meta]\npaper = 'x'\n", encoding="utf-8")
    with pytest.raises(V.ValidationFileError, match="no targets"):
        V.load_file(path)
    path = write_validation(tmp_path, [UDP_OK, UDP_OK])
    with pytest.raises(V.ValidationFileError, match="used twice"):
        V.load_file(path)
    path = write_validation(tmp_path, [{**UDP_OK, "grid": {"a": [1, 2], "b": [1]}}])
    with pytest.raises(V.ValidationFileError, match="equal lengths"):
        V.load_file(path)


def test_defaults_apply_to_every_target_and_overrides_add_up(tmp_path):
    t = {k: v for k, v in UDP_OK.items() if k != "scenario"}
    path = write_validation(tmp_path, [{**t, "overrides": ["b=2"]}], defaults={"scenario": "bss.toml", "runs": 3, "overrides": ["a=1"]})
    (target,) = V.load_file(path)
    assert target.scenario == "bss.toml" and target.runs == 3
    assert target.overrides == ("a=1", "b=2")
    assert target.points == (V.Point("", (), 0.2),)


def test_grid_points_become_overrides(tmp_path):
    (target,) = V.load_file(write_validation(tmp_path, [GRID]))
    assert [p.label for p in target.points] == ["10 ms", "20 ms", "40 ms"]
    assert target.points[1].overrides == ('app.0.interval="20 ms"',)
    assert [p.expected for p in target.points] == [0.2, 0.1, 0.05]


RATIO = {"of": "40 ms", "to": "10 ms", "expected": 0.25, "tolerance": {"relative": 0.01}}


def test_ratio_of_two_grid_points_adds_a_row(tmp_path):
    miss = {**{k: v for k, v in GRID.items() if k != "monotone"}, "name": "udp-interval-half", "ratio": {**RATIO, "expected": 0.5}}
    targets = V.load_file(write_validation(tmp_path, [{**GRID, "ratio": RATIO}, miss]))
    assert targets[0].ratio == V.Ratio("40 ms", "10 ms", 0.25, V.Tolerance("relative", 0.01))
    rows = V.run_targets(targets, jobs=1)
    ratio_rows = [r for r in rows if r.kind == "ratio"]
    assert [r.point for r in ratio_rows] == ["40 ms / 10 ms", "40 ms / 10 ms"]
    # 0.05 MB at 40 ms over 0.2 MB at 10 ms.
    assert ratio_rows[0].measured == pytest.approx(0.25) and ratio_rows[0].status == "PASS"
    assert ratio_rows[1].status == "MISS" and ratio_rows[1].expected == 0.5
    assert [r.kind for r in rows] == ["value", "value", "value", "monotone", "ratio", "value", "value", "value", "ratio"]


def test_points_without_a_figure_are_measured_not_counted(tmp_path):
    bare = {k: v for k, v in GRID.items() if k not in ("expected", "tolerance", "monotone")}
    (target,) = V.load_file(write_validation(tmp_path, [{**bare, "ratio": RATIO}]))
    assert target.tolerance is None and all(p.expected is None for p in target.points)
    rows = V.run_targets([target], jobs=1)
    assert [r.status for r in rows] == [V.MEASURED] * 3 + ["PASS"]
    assert rows[2].measured == pytest.approx(0.05)
    assert V.tally(rows).startswith("1 pass, 0 miss, 0 error of 1 independent")
    shown = V.render(rows)
    assert [status for _, status in shown if status] == ["PASS"]
    assert any("udp-interval [40 ms]" in line and "0.05 MB" in line for line, _ in shown)
    # Without a ratio or a trend a target needs its tolerance.
    with pytest.raises(V.ValidationFileError, match="tolerance: missing; required unless"):
        V.load_file(write_validation(tmp_path, [{k: v for k, v in bare.items()}]))


def test_ratio_to_the_best_point_picks_the_highest(tmp_path):
    best = {**{k: v for k, v in GRID.items() if k != "monotone"}, "ratio": {"of": "20 ms", "to": "best", "tolerance": {"range": [0.4, 0.6]}}}
    rows = V.run_targets(V.load_file(write_validation(tmp_path, [best])), jobs=1)
    (ratio,) = [r for r in rows if r.kind == "ratio"]
    # 0.1 MB at 20 ms over the best, 0.2 MB at 10 ms.
    assert ratio.point == "20 ms / best (10 ms)" and ratio.measured == pytest.approx(0.5) and ratio.status == "PASS"


@pytest.mark.parametrize(
    ("ratio", "message"),
    [
        ({**RATIO, "of": "15 ms"}, "ratio.of: '15 ms' is not a grid point; points: 10 ms, 20 ms, 40 ms"),
        ({**RATIO, "to": "15 ms"}, "ratio.to: '15 ms' is not a grid point; points: 10 ms, 20 ms, 40 ms, or \"best\""),
        ({**RATIO, "of": "best"}, "ratio.of: 'best' is not a grid point"),
        ({"of": "40 ms", "to": "10 ms"}, "ratio: .* is not usable"),
        ({**RATIO, "tolerance": {"wobble": 1}}, "ratio.tolerance: unknown kind 'wobble'"),
        ({**RATIO, "expected": "a lot"}, "ratio.expected: 'a lot' is not a number"),
    ],
)
def test_bad_ratios_are_named(tmp_path, ratio, message):
    path = write_validation(tmp_path, [{**GRID, "ratio": ratio}])
    with pytest.raises(V.ValidationFileError, match=message):
        V.load_file(path)
    path = write_validation(tmp_path, [{**UDP_OK, "ratio": RATIO}])
    with pytest.raises(V.ValidationFileError, match="ratio: needs a grid"):
        V.load_file(path)


def test_the_shipped_validation_files_load():
    files = V.find_files([])
    names = {f.stem for f in files}
    assert {"hadaller-2007", "hadaller-2007-ratecontrol", "ott-kutscher-2004"} <= names
    targets = [t for f in files for t in V.load_file(f)]
    table3 = next(t for t in targets if t.name == "table3-static-tcp-goodput")
    assert len(table3.points) == 12 and table3.points[-1].expected == 29.3


def test_runs_in_parallel_give_the_same_values(tmp_path):
    targets = V.load_file(write_validation(tmp_path, [{**UDP_OK, "metric": "tcp_goodput_mbps", "metric_args": {"receiver": "client"},
                                                       "expected": 10, "tolerance": {"factor": 3}, "runs": 2}]))
    one = V.run_targets(targets, jobs=1)
    two = V.run_targets(targets, jobs=2)
    assert one[0].values == two[0].values and len(one[0].values) == 2
    assert one[0].values[0] != one[0].values[1]  # seeds 1 and 2 differ


# ---------------------------------------------------------------- command line


def outcome_lines(stdout: str) -> dict[str, str]:
    """The outcome table's rows by target name: a row starts with its
    result in columns 3-7 and has the name from column 9."""
    rows = {}
    for line in stdout.splitlines():
        if line[2:7].strip() in ("PASS", "MISS", "ERROR", "held", "DRIFT"):
            rest = line[8:]
            rows[(rest[:40] if len(rest) > 40 else rest).strip()] = line
    return rows


def test_cli_pass_and_miss_exit_1_with_the_table(cli, tmp_path):
    path = write_validation(tmp_path, [UDP_OK, UDP_MISS, GRID])
    out = tmp_path / "out"
    p = cli("validate", path, "--jobs", "1", "--out", out, "--details")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert max(len(line) for line in p.stdout.splitlines() if not line.startswith("wrote ")) <= 80
    lines = outcome_lines(p.stdout)
    assert lines["udp-volume"].startswith("  PASS")
    assert lines["udp-volume-wrong"].startswith("  MISS") and "why: 0.2 is 0.07 below 0.27" in p.stdout
    assert "PASS" in lines["udp-interval [40 ms]"] and "0.05 MB" in lines["udp-interval [40 ms]"]
    assert "0.2 > 0.1 > 0.05" in lines["udp-interval [decreasing]"] and "PASS" in lines["udp-interval [decreasing]"]
    assert "5 pass, 1 miss, 0 error of 6 independent" in p.stdout
    records = json.loads((out / "validation.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in records] == ["PASS", "MISS", "PASS", "PASS", "PASS", "PASS"]
    assert records[1]["measured"] == pytest.approx(0.2) and records[1]["lo"] == pytest.approx(0.27)
    with (out / "validation.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["target"] == "udp-volume" and rows[0]["status"] == "PASS"


def test_cli_all_pass_exit_0_and_only_selects(cli, tmp_path):
    path = write_validation(tmp_path, [UDP_OK, UDP_MISS])
    p = cli("validate", path, "--only", "udp-volume", "--jobs", "1", "--runs", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "udp-volume-wrong" not in p.stdout and "1 pass, 0 miss" in p.stdout


@pytest.mark.parametrize(
    ("targets", "args", "message"),
    [
        ([{**UDP_OK, "metric": "nonsense"}], [], "metric: unknown metric 'nonsense'"),
        ([UDP_OK], ["--only", "nothing-like-this"], "--only nothing-like-this: no such target; targets: udp-volume"),
    ],
)
def test_cli_bad_input_exits_2(cli, tmp_path, targets, args, message):
    path = write_validation(tmp_path, targets)
    p = cli("validate", path, "--jobs", "1", *args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr + p.stdout


def test_cli_malformed_file_and_unknown_paper_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("this is not = = toml", encoding="utf-8")
    p = cli("validate", bad)
    assert p.returncode == 2 and "bad.toml: not valid TOML" in p.stderr and "Traceback" not in p.stderr
    p = cli("validate", "no-such-paper", cwd=tmp_path)
    assert p.returncode == 2 and "no-such-paper: no such validation file" in p.stderr


def test_cli_unknown_scenario_is_an_error_row_and_exit_2(cli, tmp_path):
    scenario = copy.deepcopy(BSS)
    path = write_validation(tmp_path, [UDP_OK, {**UDP_OK, "name": "ghost", "scenario": "no-such-scenario"},
                                       {**UDP_OK, "name": "bad-override", "overrides": ["mac.rate=\"7 Mbps\""]}],
                            scenario=scenario)
    p = cli("validate", path, "--jobs", "1")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    lines = outcome_lines(p.stdout)
    assert "PASS" in lines["udp-volume"]  # the other targets still run
    assert "ERROR" in lines["ghost"] and "ERROR" in lines["bad-override"]
    assert "tiny/ghost: scenario 'no-such-scenario': no such built-in scenario or file" in p.stderr
    assert "tiny/bad-override: mac.rate: 7 Mbps is not a rate of 802.11g" in p.stderr


def test_cli_metric_failure_is_an_error_row(cli, tmp_path):
    path = write_validation(tmp_path, [{**UDP_OK, "metric_args": {"receiver": "nobody"}}])
    p = cli("validate", path, "--jobs", "1")
    assert p.returncode == 2
    assert "metric udp_mb: receiver: no node named 'nobody'" in p.stderr


def test_targets_on_the_same_runs_share_the_simulations(tmp_path):
    loss = {**UDP_OK, "name": "udp-loss", "metric": "udp_loss", "expected": 0.0, "tolerance": {"absolute": 0.01}}
    span = {**UDP_OK, "name": "span", "metric": "supremum_connection_span_m", "metric_args": {"a": "ap", "b": "client"},
            "aggregate": "none", "expected": 0.0, "tolerance": {"absolute": 1.0}}
    targets = V.load_file(write_validation(tmp_path, [UDP_OK, loss, span]))
    totals = []
    rows = V.run_targets(targets, runs=2, jobs=1, progress=lambda done, total: totals.append(total))
    assert set(totals) == {2}  # 3 targets x 2 runs, 2 simulations
    assert [r.status for r in rows] == ["PASS", "PASS", "PASS"]
    assert rows[2].values == [rows[2].measured] and rows[0].runs == 2


# ---------------------------------------------------------------- calibration


def test_targets_a_scenario_was_calibrated_on_are_apart_and_not_counted(cli, tmp_path):
    scenario = {"calibrated_on": ["tiny/udp-volume*"], **BSS}
    path = write_validation(tmp_path, [UDP_OK, UDP_MISS, {**UDP_OK, "name": "other", "scenario": "other.toml"}],
                            scenario=scenario)
    (tmp_path / "other.toml").write_text(tomli_w.dumps(BSS), encoding="utf-8")
    rows = V.run_targets(V.load_file(path), jobs=1)
    assert [(r.target, r.calibrated) for r in rows] == [("udp-volume", True), ("udp-volume-wrong", True), ("other", False)]
    assert V.tally(rows) == "1 pass, 0 miss, 0 error of 1 independent; calibrated on 2 (not counted): 1 held, 1 not"
    assert V.exit_code(rows) == 1  # a calibration that no longer holds is still a failure
    text = [line for line, _ in V.render(rows)]
    heading = text.index("  calibrated on (not counted as reproduced):")
    assert [line.split()[0] for line in text[heading + 1:]] == ["held", "DRIFT"]
    assert text[heading - 1].split()[:2] == ["PASS", "other"]
    p = cli("validate", path, "--jobs", "1")
    assert "calibrated on 2 (not counted)" in " ".join(p.stdout.split()) and p.returncode == 1


def test_in_sample_and_out_of_sample_errors_are_reported_apart(tmp_path):
    # The scenario is fitted on udp-volume: udp-volume-wrong, on the same
    # scenario, is what the fit predicts; "other" runs a scenario fitted on
    # nothing. Each class has its own error.
    scenario = {"calibrated_on": ["tiny/udp-volume"], **BSS}
    (tmp_path / "other.toml").write_text(tomli_w.dumps(BSS), encoding="utf-8")
    other = {**UDP_OK, "name": "other", "scenario": "other.toml", "expected": 0.25, "tolerance": {"relative": 0.5}}
    path = write_validation(tmp_path, [UDP_OK, UDP_MISS, other], scenario=scenario)
    rows = V.run_targets(V.load_file(path), jobs=1)
    assert [(r.target, r.sample) for r in rows] == [
        ("udp-volume", V.IN_SAMPLE), ("udp-volume-wrong", V.OUT_OF_SAMPLE), ("other", V.UNFITTED)]
    # 0.2 MB measured: 0% off in sample, 1/3 off (0.3) out of it, 20% (0.25) unfitted.
    assert V.sample_errors(rows) == ("median |error|: in sample 0.0% (1 rows), out of sample 33.3% (1 rows), "
                                     "unfitted 20.0% (1 rows)")
    text = [line for line, _ in V.render(rows)]
    assert text[0] == "tiny" and text[1].split()[:3] == ["median", "|error|:", "in"]
    assert max(map(len, text)) <= V.WIDTH
    records = json.loads(V.write_outputs(rows, tmp_path / "out")[0].read_text())
    assert [r["sample"] for r in records] == ["in", "out", "none"]


def test_a_scenario_fits_at_most_one_row_of_a_table(tmp_path):
    path = write_validation(tmp_path, [GRID], scenario={"calibrated_on": ["tiny/udp-interval"], **BSS})
    rows = V.run_targets(V.load_file(path), jobs=1)
    assert {r.status for r in rows} == {"ERROR"}
    assert "fit at most one row of a table" in rows[0].detail


@pytest.mark.parametrize("bad", [["udp-volume"], [3], "tiny/udp-volume", ["tiny/"]])
def test_a_malformed_calibrated_on_is_an_error_naming_it(tmp_path, bad):
    path = write_validation(tmp_path, [UDP_OK], scenario={"calibrated_on": bad, **BSS})
    (row,) = V.run_targets(V.load_file(path), jobs=1)
    assert row.status == "ERROR" and "calibrated_on" in row.detail


def test_every_calibrated_on_of_a_builtin_names_a_shipped_target():
    import fnmatch
    import tomllib

    from wayside.scenario import builtin_scenarios, scenario_text

    shipped = [f"{t.paper}/{t.name}" for f in V.find_files([]) for t in V.load_file(f)]
    listed = 0
    for name in builtin_scenarios():
        for pattern in tomllib.loads(scenario_text(name)).get("calibrated_on", []):
            listed += 1
            assert fnmatch.filter(shipped, pattern), f"{name}: calibrated_on {pattern} matches no target"
    assert listed >= 4


def test_the_outcome_fits_80_columns_whatever_the_names():
    row = V.Row("p", "a-target-name-far-longer-than-the-column-it-is-given-here", "1 Mbps", "s " * 60, "x",
                "m", "Mb/s", 29.3, 1234567.0, 1.0, 2.0, "1–2", "MISS", "far above " * 20, 3)
    mono = V.Row("p", "t", "decreasing", "s", "x", "m", "", None, None, None, None, "strictly", "PASS", "", 3,
                 kind="monotone", shown=" > ".join(["1,234,567"] * 12))
    # A grid point names every override it sets: longer than a line.
    point = ", ".join(f"node.car.mobility.param{i}=12{i} km/h" for i in range(4))
    grid = V.Row("p", "a-target", point, "s", "x", "m", "MB", 1.0, 2.0, 1.0, 3.0, "1–3", "PASS", "", 3)
    lines = [line for line, _ in V.render([row, mono, grid], details=True)]
    assert max(map(len, lines)) <= V.WIDTH
    assert any("a-target-name-far-longer" in line for line in lines)
    assert any("param3=123 km/h]" in line for line in lines)
    assert any(line.lstrip().startswith("measured: 1,234,567 > ") for line in lines)


# ---------------------------------------------------------------- seed sets


def test_seed_sets_are_disjoint_runs_of_the_same_targets(tmp_path):
    targets = V.load_file(write_validation(tmp_path, [{**UDP_OK, "runs": 3}, {**UDP_MISS, "runs": 1}]))
    assert [t.base_seed for t in V.seed_set(targets, 0)] == [1, 1]
    assert [t.base_seed for t in V.seed_set(targets, 2)] == [7, 3]
    assert [t.base_seed for t in V.seed_set(targets, 2, runs=5)] == [11, 11]  # --runs replaces every target's runs


def _row(name: str, status: str, measured: float, calibrated: bool = False) -> V.Row:
    return V.Row("p", name, "", "s", "x", "m", "MB", 1.0, measured, 0.9, 1.1, "0.9–1.1", status, "", 20,
                 calibrated=calibrated)


def test_seed_sets_show_in_how_many_sets_each_target_passed():
    sets = [
        [_row("always", "PASS", 1.0), _row("once", "PASS", 1.05), _row("never", "MISS", 2.0), _row("fit", "PASS", 1.0, True)],
        [_row("always", "PASS", 0.95), _row("once", "MISS", 1.5), _row("never", "MISS", 3.0), _row("fit", "MISS", 1.2, True)],
    ]
    lines = V.render_sets(sets, details=True)
    assert max(len(line) for line, _ in lines) <= V.WIDTH
    first = {line.split()[1]: (line, status) for line, status in lines if status}
    assert first["always"][1] == "PASS" and first["always"][0].split()[0] == "2/2" and "0.95..1 MB" in first["always"][0]
    assert first["once"][1] == "SOME" and first["once"][0].split()[0] == "1/2" and "1.05..1.5 MB" in first["once"][0]
    assert first["never"][1] == "MISS" and first["never"][0].split()[0] == "0/2"
    assert first["fit"][1] == "SOME"
    assert any("per set: 2, 3" in line for line, _ in lines)
    assert V.tally_sets(sets) == ("of 3 independent: 1 pass in all 2 seed sets, 1 in some, 1 in none; "
                                  "calibrated on 1 (not counted): 0 held in all sets, 1 not")
    with pytest.raises(ValueError, match="different targets"):
        V.render_sets([sets[0], sets[1][:2]])


def test_cli_seed_sets_run_each_set_and_write_them_all(cli, tmp_path):
    path = write_validation(tmp_path, [UDP_OK, UDP_MISS])
    out = tmp_path / "out"
    p = cli("validate", path, "--jobs", "1", "--seed-sets", "2", "--out", out)
    assert p.returncode == 1, p.stdout + p.stderr
    assert max(len(line) for line in p.stdout.splitlines() if not line.startswith("wrote ")) <= 80
    lines = {line.split()[1]: line for line in p.stdout.splitlines() if line[2:5] in ("2/2", "0/2", "1/2")}
    assert lines["udp-volume"].split()[0] == "2/2" and lines["udp-volume-wrong"].split()[0] == "0/2"
    assert "1 pass in all 2 seed sets, 0 in some, 1 in none" in " ".join(p.stdout.split())
    assert "2 targets x 2 seed sets" in p.stdout
    records = json.loads((out / "validation.json").read_text(encoding="utf-8"))
    assert [(r["target"], r["seed_set"]) for r in records] == [
        ("udp-volume", 0), ("udp-volume-wrong", 0), ("udp-volume", 1), ("udp-volume-wrong", 1)]
    p = cli("validate", path, "--seed-sets", "0")
    assert p.returncode == 2 and "Traceback" not in p.stderr


# ---------------------------------------------------------------- shipped files and the user's own


def test_the_shipped_papers_run_from_any_directory(cli, tmp_path):
    p = cli("validate", "ott-kutscher-2004", "--only", "lab-mobile-sender-throughput", "--runs", "1", "--jobs", "1",
            cwd=tmp_path)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    assert p.stdout.startswith("ott-kutscher-2004\n")
    assert "lab-mobile-sender-throughput" in p.stdout and "1 targets, 1 measured runs" in p.stdout
    assert [f.stem for f in V.find_files(["ott-kutscher-2004"])] == ["ott-kutscher-2004"]
    assert V.find_files([]) == sorted(V.SHIPPED.glob("*.toml")) and len(V.find_files([])) >= 6


def test_every_shipped_target_runs_a_scenario_built_into_the_engine():
    # Nothing outside the package is needed once it is installed.
    for f in V.find_files([]):
        for t in V.load_file(f):
            assert wayside.engine.builtin_text(t.scenario) is not None, f"{f.name}: {t.name}: {t.scenario}"


def test_a_users_own_files_by_path_find_their_scenario_from_anywhere(cli, tmp_path):
    # mine/bss.toml is the scenario, mine/targets/tiny.toml names it as
    # "bss.toml": found beside the file's directory, not in the working one.
    mine = tmp_path / "mine"
    (mine / "targets").mkdir(parents=True)
    write_validation(mine, [UDP_OK]).rename(mine / "targets" / "tiny.toml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = cli("validate", "../mine/targets/tiny.toml", "--jobs", "1", cwd=elsewhere)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("tiny\n") and "1 pass, 0 miss, 0 error of 1 independent" in p.stdout
    p = cli("validate", "mine/targets", "--jobs", "1", cwd=tmp_path)  # a directory of the user's files
    assert p.returncode == 0 and "udp-volume" in p.stdout


def test_seed_sets_shift_the_seeds_and_count_the_simulations(tmp_path):
    targets = V.load_file(write_validation(tmp_path, [{**UDP_OK, "runs": 2}]))
    started = []
    sets, simulations = V.run_seed_sets(targets, 2, jobs=1, starting=started.append)
    assert started == [0, 1] and simulations == 4
    assert [[r.seed_set for r in rows] for rows in sets] == [[0], [1]]
    alone = V.run_targets(V.seed_set(targets, 1), jobs=1)
    assert sets[1][0].values == alone[0].values  # set 1 is seeds 3 and 4
