"""benches/ns3/bench.py without ns-3: the cases, the wayside scenario it
builds, the ns-3 command line derived from it, reading driveby.cc's output
and the report's width."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

import wayside

_PATH = Path(__file__).resolve().parents[2] / "benches" / "ns3" / "bench.py"
_spec = importlib.util.spec_from_file_location("bench_ns3", _PATH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_ns3"] = bench
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def base():
    return wayside.load_scenario(bench.BASE_SCENARIO)


def _args(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv)


def test_cases_place_one_car_or_fifty_evenly():
    assert bench.car_starts("one") == [-1500.0]
    xs = bench.car_starts("fifty")
    assert len(xs) == 50
    assert xs[0] == -1900.0 and xs[-1] == pytest.approx(-100.0)
    gaps = {round(b - a, 9) for a, b in zip(xs, xs[1:])}
    assert gaps == {round(1800 / 49, 9)}


def test_unknown_case_names_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed: one, fifty"):
        bench.car_starts("ten")


@pytest.mark.parametrize(
    "text, value",
    [("80 km/h", 80 / 3.6), ("19 dBm", 19.0), ("25 ms", 0.025), ("100 Mbps", 1e8), (1.5, 1.5), (7, 7.0)],
)
def test_quantity_reads_scenario_units(text, value):
    assert bench.quantity(text, "k") == pytest.approx(value)


def test_quantity_rejects_an_unknown_unit_naming_the_key():
    with pytest.raises(ValueError, match=r"node\.ap\.tx_power: '19 furlongs'"):
        bench.quantity("19 furlongs", "node.ap.tx_power")


def test_scenario_has_one_minstrel_car_and_transfer_per_start(base):
    xs = bench.car_starts("fifty")
    s = bench.wayside_scenario(base, xs)
    cars = [n for n in s["node"] if n.get("role") == "sta"]
    assert [c["name"] for c in cars] == [bench.car_name(i) for i in range(50)]
    assert [c["position"][0] for c in cars] == xs
    assert {c["mobility"]["speed"] for c in cars} == {"80 km/h"}
    assert [a["to"] for a in s["app"]] == [c["name"] for c in cars]
    assert {a["from"] for a in s["app"]} == {"server"}
    assert {n["tcp"] for n in s["node"]} == {"linux-modern"}
    assert s["mac"]["fast_frames"] is False
    assert s["mac"]["rate_control"] == {"algorithm": "minstrel"}
    ap = next(n for n in s["node"] if n.get("role") == "ap")
    assert ap["rate_control"] == {"algorithm": "minstrel"}
    # wayside itself accepts it.
    resolved = wayside.load_scenario(s)
    assert len(resolved["node"]) == 52


@pytest.mark.parametrize("queue", ["fifo", "fq_codel", "airtime"])
def test_scenario_gives_the_ap_the_queue_asked_for(base, queue):
    s = bench.wayside_scenario(base, [-1500.0], queue)
    ap = next(n for n in s["node"] if n.get("role") == "ap")
    # fifo is the default and stays unset, so the scenario is as before.
    assert ap.get("queue", "fifo") == queue and ("queue" in ap) == (queue != "fifo")
    resolved = next(n for n in wayside.load_scenario(s)["node"] if n["name"] == "ap")
    assert resolved.get("queue", "fifo") == queue


def test_ns3_command_line_matches_the_scenario(base):
    s = bench.wayside_scenario(base, [-1500.0, -100.0])
    a = _args(bench.ns3_args(s))
    assert a["xs"] == "-1500.000,-100.000"
    assert float(a["apTxPower"]) == 19 and float(a["carTxPower"]) == 15
    assert float(a["antennaGain"]) == 7 and float(a["height"]) == 1.5
    assert float(a["apY"]) - float(a["carY"]) == 10
    assert float(a["speed"]) == pytest.approx(80 / 3.6)
    # Free space at 1 m on channel 6 (2437 MHz).
    assert float(a["referenceLoss"]) == pytest.approx(20 * math.log10(4 * math.pi * 2.437e9 / 299_792_458), abs=1e-3)
    assert (float(a["d1"]), float(a["d2"])) == (230, 700)
    n = tuple(float(x) for x in s["environment"]["path_loss_exponents"])
    assert (float(a["n0"]), float(a["n1"]), float(a["n2"])) == n
    # -174 dBm/Hz over 20 MHz plus the figure gives the -95 dBm floor.
    assert -174 + 10 * math.log10(20e6) + float(a["noiseFigure"]) == pytest.approx(-95, abs=1e-3)
    # Rician K = 0 dB as Nakagami m = (K+1)^2 / (2K+1).
    assert float(a["nakagamiM"]) == pytest.approx(4 / 3, abs=1e-4)
    assert float(a["preambleMinRssi"]) == -95
    assert float(a["captureMargin"]) == 10 and float(a["ccaEd"]) == -62
    assert (float(a["linkMbps"]), float(a["linkDelayMs"])) == (100, 25)
    # The application starts 1-2 s after association, drawn per run.
    assert (float(a["startDelay"]), float(a["startDelayMax"])) == (1, 2) and float(a["duration"]) == 135
    assert a["class3Deauth"] == "1"
    # linux-modern's 64 KB window, MSS, minimum RTO and delayed ACK.
    assert (a["rcvBuf"], a["mss"], a["minRtoMs"], a["delAckMs"]) == ("65535", "1460", "200", "40")


def test_ns3_command_line_options(base):
    s = bench.wayside_scenario(base, [-1500.0])
    a = _args(bench.ns3_args(s, preamble_floor=-82.0, class3_deauth=False))
    assert float(a["preambleMinRssi"]) == -82 and a["class3Deauth"] == "0"
    assert "apQdisc" not in a
    a = _args(bench.ns3_args(s, ap_fifo=True))
    assert a["apQdisc"] == "0"
    assert (a["ns3::WifiMacQueue::MaxSize"], a["ns3::WifiMacQueue::MaxDelay"]) == ("1000p", "1000s")
    next(n for n in s["node"] if n.get("role") == "ap")["queue_limit"] = 30
    assert _args(bench.ns3_args(s, ap_fifo=True))["ns3::WifiMacQueue::MaxSize"] == "30p"
    # Only the age limit goes: the queue disc and the queue's size stay.
    a = _args(bench.ns3_args(s, no_max_delay=True))
    assert a["ns3::WifiMacQueue::MaxDelay"] == "1000s"
    assert "apQdisc" not in a and "ns3::WifiMacQueue::MaxSize" not in a
    # --ns3-set goes last, over what the bench derived.
    argv = bench.ns3_args(s, no_max_delay=True, extra=["ns3::WifiMacQueue::MaxSize=123p", "nakagamiM=0"])
    a = _args(argv)
    assert (a["ns3::WifiMacQueue::MaxSize"], a["nakagamiM"]) == ("123p", "0")
    assert argv[-1] == "--nakagamiM=0" and sum(x.startswith("--nakagamiM=") for x in argv) == 1
    with pytest.raises(ValueError, match="'nakagamiM' is not NAME=VALUE"):
        bench.ns3_args(s, extra=["nakagamiM"])


def test_main_refuses_a_malformed_ns3_setting(tmp_path, capsys):
    fake = tmp_path / "driveby"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert bench.main(["--ns3", str(fake), "--case", "one", "--ns3-set", "=3"]) == 2
    assert "'=3' is not NAME=VALUE" in capsys.readouterr().err


def test_ns3_side_refuses_a_channel_it_does_not_model(base):
    s = bench.wayside_scenario(base, [-1500.0])
    s["environment"] = dict(s["environment"], path_loss="free-space")
    with pytest.raises(ValueError, match="environment.path_loss: 'free-space'"):
        bench.ns3_args(s)


NS3_OUTPUT = """\
car index=1 bytes=0 associated=0 assoc_x=0.00 assoc_t=0.0000 ap_accepted=0 ap_accepted_x=0.00 \
data=0 data_x=0.00 data_t=0.0000
car index=0 bytes=35947444 associated=1 assoc_x=-465.37 assoc_t=46.5584 ap_accepted=1 ap_accepted_x=-444.28 \
data=1 data_x=-420.50 data_t=48.6000
apqueue wmq_enqueued=34121 wmq_expired=2049 wmq_refused=0 wmq_removed=34121 wmq_mean_s=0.3719 \
qdisc_enqueued=33937 qdisc_overflow=0 qdisc_codel=0 tries_failed=17000 mpdus_failed=900
loop wall_s=6.2200 cpu_s=3.1200 events=123
"""


def test_parse_ns3_output():
    o = bench.parse_ns3(NS3_OUTPUT, 2)
    assert (o.wall_s, o.cpu_s) == (6.22, 3.12)
    assert o.bytes == [35947444, 0]
    assert o.assoc_x == [-465.37, None]
    assert o.ap_assoc_x == [-444.28, None]
    assert o.data_x == [-420.5, None]
    assert (o.queue["wmq_expired"], o.queue["qdisc_codel"], o.queue["wmq_mean_s"]) == (2049, 0, 0.3719)


def test_parse_ns3_output_of_an_older_driveby():
    """Without the first-data fields and the `apqueue` line: no first
    data known, no queue counters."""
    old = "\n".join(" ".join(w for w in line.split() if not w.startswith("data"))
                    for line in NS3_OUTPUT.splitlines() if not line.startswith("apqueue"))
    o = bench.parse_ns3(old, 2)
    assert o.bytes == [35947444, 0] and o.data_x == [None, None] and o.queue == {}


def test_parse_ns3_output_missing_lines():
    with pytest.raises(ValueError, match="expected 3 car lines"):
        bench.parse_ns3(NS3_OUTPUT, 3)
    with pytest.raises(ValueError, match="no loop line"):
        bench.parse_ns3(NS3_OUTPUT.rsplit("loop", 1)[0], 2)


def test_wayside_outcome_from_a_short_run(base):
    s = bench.wayside_scenario(base, [-300.0, -2500.0])
    s["duration"] = "30 s"
    o = bench.run_wayside(s, 2)
    # The near car associates on the road before the AP and gets data; the
    # far one is still out of range after 30 s (at -1833 m).
    assert o.assoc_x[0] is not None and -300 < o.assoc_x[0] < 300
    assert o.bytes[0] > 0
    assert (o.assoc_x[1], o.bytes[1]) == (None, 0)
    # Data comes after association, on the road the car drives.
    assert o.data_x[0] is not None and o.assoc_x[0] < o.data_x[0] < 300
    assert o.data_x[1] is None


def test_report_fits_80_columns():
    xs = bench.car_starts("fifty")
    n = bench.Outcome(100.5, 42.5, [1_550_000] * 50, [-417.0] * 50, [None] * 50)
    w = bench.Outcome(6.87, 3.2, [0] * 49 + [11_550_000], [None] * 49 + [-75.0])
    n.queue = bench.parse_ns3(NS3_OUTPUT, 2).queue
    text = bench.report("fifty", xs, n, w)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "expired 2049 (MaxDelay)" in text
    assert "Unacknowledged AP tries: 17000; MPDUs that used up their tries: 900." in text
    assert "13.28x" in text  # CPU: 42.5 / 3.2
    assert "0.15x" in text  # data: 11.55 / 77.5


def test_main_reports_unreadable_ns3_output(tmp_path, capsys):
    fake = tmp_path / "driveby"
    fake.write_text("#!/bin/sh\necho 'not what driveby prints'\n")
    fake.chmod(0o755)
    assert bench.main(["--ns3", str(fake), "--case", "one"]) == 1
    assert "expected 1 car lines and a loop line" in capsys.readouterr().err


def test_main_refuses_a_missing_ns3_binary(tmp_path, capsys):
    assert bench.main(["--ns3", str(tmp_path / "none"), "--case", "one"]) == 2
    assert "is not a file" in capsys.readouterr().err
