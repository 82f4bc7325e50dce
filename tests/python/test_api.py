"""The Python API: wayside.run, RunResult tables and summaries,
wayside.load_scenario, and scenarios given as dicts."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import wayside
from wayside import movement
from wayside.scenario import scenario_text

FRAME_COLUMNS = [
    "time_ns", "node", "peer", "event", "reason", "kind", "rate_mbps", "bytes",
    "seq", "attempt", "x", "y", "rssi_dbm", "snr_db", "sinr_db",
]
MAC_COLUMNS = ["time_ns", "node", "peer", "event", "seq", "bytes", "attempts", "delay_ns", "x", "y"]

# The built-in saturation scenario, spelled out as a Python dict.
SATURATION_DICT = {
    "name": "saturation",
    "description": "One saturated 802.11g sender, 1500-byte frames, fixed 54 Mbps",
    "duration": "10 s",
    "environment": {"path_loss": "free-space"},
    "radio": {"standard": "802.11g", "b_compatible": False},
    "mac": {"rate": "54 Mbps"},
    "node": [
        {"name": "sender", "position": [0, 0]},
        {"name": "receiver", "position": [5, 0]},
    ],
    "traffic": [{"kind": "saturate", "from": "sender", "to": "receiver", "payload": "1500 B"}],
}


def ofdm_airtime_us(psdu_bytes: int, mbps: float) -> float:
    """802.11g ERP-OFDM frame duration: 16 us preamble + 4 us SIGNAL, 4 us
    symbols carrying SERVICE (16 bits) + PSDU + tail (6 bits), 6 us signal extension."""
    bits_per_symbol = mbps * 4
    return 20 + 4 * math.ceil((16 + 8 * psdu_bytes + 6) / bits_per_symbol) + 6


def closed_form_goodput_mbps(payload: int = 1500) -> float:
    """Single saturated station, no collisions, no losses (ERP-only 802.11g):
    DIFS + mean backoff (CWmin/2 slots) + DATA + SIFS + ACK per MSDU."""
    slot, sifs = 9, 10
    difs = sifs + 2 * slot  # 28 us
    mean_backoff = 15 / 2 * slot  # 7.5 slots of 9 us
    data = ofdm_airtime_us(payload + 28, 54)  # MAC header + FCS = 28 B
    ack = ofdm_airtime_us(14, 24)  # ACK is 14 B, sent at 24 Mbps (basic rate)
    cycle_us = difs + mean_backoff + data + sifs + ack
    return payload * 8 / cycle_us  # bits per microsecond = Mb/s


def test_closed_form_arithmetic():
    # Guard the test's own arithmetic: 28 + 67.5 + 254 + 10 + 34 = 393.5 us.
    assert ofdm_airtime_us(1528, 54) == 254
    assert ofdm_airtime_us(14, 24) == 34
    assert closed_form_goodput_mbps() == pytest.approx(12000 / 393.5)


def test_run_returns_run_result(saturation):
    assert isinstance(saturation, wayside.RunResult)
    assert isinstance(saturation.frames, pa.Table)
    assert isinstance(saturation.mac, pa.Table)
    assert saturation.nodes == ["sender", "receiver"]
    assert saturation.duration_s == pytest.approx(10.0)
    assert saturation.frames.num_rows > 10_000
    assert saturation.mac.num_rows > 10_000


def test_tables_have_expected_columns(saturation):
    assert set(FRAME_COLUMNS) <= set(saturation.frames.column_names)
    assert set(MAC_COLUMNS) <= set(saturation.mac.column_names)


def test_frames_load_into_polars(saturation):
    frames = pl.DataFrame(saturation.frames)
    mac = pl.DataFrame(saturation.mac)
    assert frames.height == saturation.frames.num_rows
    assert mac.height == saturation.mac.num_rows
    assert set(FRAME_COLUMNS) <= set(frames.columns)
    nodes = set(frames["node"].cast(pl.Utf8).unique().to_list())
    assert nodes == {"sender", "receiver"}
    assert set(frames["event"].cast(pl.Utf8).unique().to_list()) <= {"tx", "rx", "drop"}
    # The sender's data frames are all at the fixed 54 Mbps.
    data = frames.filter((pl.col("node") == "sender") & (pl.col("event") == "tx"))
    assert data["rate_mbps"].unique().to_list() == [54.0]


def test_frames_load_into_pandas(saturation):
    frames = saturation.frames.to_pandas()
    mac = saturation.mac.to_pandas()
    assert isinstance(frames, pd.DataFrame)
    assert len(frames) == saturation.frames.num_rows
    assert len(mac) == saturation.mac.num_rows
    assert set(FRAME_COLUMNS) <= set(frames.columns)
    assert set(frames["node"].astype(str).unique()) == {"sender", "receiver"}
    # Same values as through polars.
    assert frames["time_ns"].to_numpy().tolist()[:100] == pl.DataFrame(saturation.frames)["time_ns"].head(100).to_list()


@pytest.mark.parametrize("which", ["saturation", "drive_by_short"])
def test_time_is_non_decreasing(request, which):
    result = request.getfixturevalue(which)
    for table in (result.frames, result.mac):
        t = table["time_ns"].to_numpy()
        assert len(t) > 0
        assert np.all(np.diff(t.astype(np.int64)) >= 0)
        assert t[-1] <= result.duration_s * 1e9


def test_saturation_goodput_matches_closed_form(saturation):
    expected = closed_form_goodput_mbps()
    summary = saturation.summary()
    receiver = summary.filter(pl.col("node") == "receiver").row(0, named=True)
    sender = summary.filter(pl.col("node") == "sender").row(0, named=True)
    assert receiver["goodput_in_mbps"] == pytest.approx(expected, rel=0.03)
    # Nothing lost at 5 m: every MSDU delivered at the first attempt.
    assert sender["msdu_failed"] == 0
    assert sender["mean_attempts"] == pytest.approx(1.0)
    assert receiver["frames_dropped"] == 0
    assert receiver["msdu_delivered"] == 0
    assert sender["msdu_delivered"] == pytest.approx(receiver["bytes_received"] / 1500, abs=1)


def test_per_second_sums_to_summary(saturation):
    per_second = saturation.per_second()
    summary = saturation.summary()
    for node in saturation.nodes:
        ps = per_second.filter(pl.col("node") == node)
        s = summary.filter(pl.col("node") == node).row(0, named=True)
        assert ps["frames_tx"].sum() == s["frames_tx"]
        assert ps["frames_rx"].sum() == s["frames_rx"]
        assert ps["goodput_in_mbps"].sum() / saturation.duration_s == pytest.approx(s["goodput_in_mbps"])


def test_dict_scenario_runs_like_the_file(saturation):
    result = wayside.run(SATURATION_DICT, seed=1)
    assert result.nodes == ["sender", "receiver"]
    # Same structure and seed as the built-in file: the same run.
    assert pl.DataFrame(result.frames).equals(pl.DataFrame(saturation.frames))
    assert pl.DataFrame(result.mac).equals(pl.DataFrame(saturation.mac))


def test_dict_scenario_with_changes_runs():
    scenario = dict(SATURATION_DICT, duration="1 s", mac={"rate": "11 Mbps"})
    result = wayside.run(scenario, seed=3)
    assert result.duration_s == pytest.approx(1.0)
    frames = pl.DataFrame(result.frames)
    data = frames.filter((pl.col("node") == "sender") & (pl.col("event") == "tx"))
    assert data.height > 100
    assert data["rate_mbps"].unique().to_list() == [11.0]
    assert result.scenario["mac"]["rate"] == "11 Mbps"


def test_load_scenario_applies_overrides():
    s = wayside.load_scenario(
        "saturation",
        ['mac.rate="11 Mbps"', "node.receiver.position=[20, 0]", 'traffic.0.payload="500 B"', "seed=7"],
    )
    assert isinstance(s, dict)
    assert s["mac"]["rate"] == "11 Mbps"
    assert s["node"][1]["name"] == "receiver"
    assert s["node"][1]["position"] == [20, 0]
    assert s["node"][0]["position"] == [0, 0]
    assert s["traffic"][0]["payload"] == "500 B"
    assert s["seed"] == 7
    # Untouched keys are kept as in the file.
    assert s["radio"] == {"standard": "802.11g", "b_compatible": False}
    assert s["duration"] == "10 s"


def test_load_scenario_without_overrides_matches_dict_and_file(tmp_path):
    from_name = wayside.load_scenario("saturation")
    assert from_name == SATURATION_DICT
    assert wayside.load_scenario(SATURATION_DICT) == from_name
    path = tmp_path / "sat.toml"
    path.write_text(scenario_text("saturation"), encoding="utf-8")
    assert wayside.load_scenario(path) == from_name
    assert wayside.load_scenario(str(path), ["duration=\"2 s\""])["duration"] == "2 s"


def test_result_scenario_is_the_resolved_one():
    overrides = ['duration="0.5 s"', 'node.sender.tx_power="10 dBm"']
    result = wayside.run("saturation", seed=2, overrides=overrides)
    assert result.scenario == wayside.load_scenario("saturation", overrides)
    assert result.scenario["node"][0]["tx_power"] == "10 dBm"
    assert result.duration_s == pytest.approx(0.5)


@pytest.mark.parametrize(
    "overrides, words",
    [
        (['mac.rate="13 Mbps"'], ["mac.rate", "13", "54"]),
        (["node.nobody.tx_power=\"1 dBm\""], ["nobody"]),
        (['duration="5 parsecs"'], ["duration", "parsecs"]),
    ],
)
def test_load_scenario_rejects_with_scenario_error(overrides, words):
    with pytest.raises(wayside.ScenarioError) as e:
        wayside.load_scenario("saturation", overrides)
    for w in words:
        assert w in str(e.value)


def test_scenario_error_is_a_value_error():
    assert issubclass(wayside.ScenarioError, ValueError)


def _run_bad(_: int) -> None:
    wayside.run("saturation", overrides=["environment.path_loss_exponent=3"])


def test_errors_raised_in_worker_processes_reach_the_parent_whole():
    # A process pool pickles what a worker raises: the class must be found
    # again by its module and name.
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(wayside.ScenarioError, match="path_loss_exponent"):
            list(pool.map(_run_bad, [0]))
    e = pickle.loads(pickle.dumps(movement.TraceError("a.csv: no such trace file")))
    assert type(e) is movement.TraceError and str(e) == "a.csv: no such trace file"


@pytest.mark.parametrize("kwargs", [{"seed": -1}, {"seed": 2**64}, {"run": -1}, {"run": 2**64}])
def test_run_rejects_out_of_range_seed_and_run(kwargs):
    with pytest.raises(wayside.ScenarioError):
        wayside.run("saturation", **kwargs)


def test_run_rejects_unknown_scenario():
    with pytest.raises(wayside.ScenarioError) as e:
        wayside.run("no-such-scenario-here")
    assert "no-such-scenario-here" in str(e.value)
    assert "saturation" in str(e.value)


def test_builtin_scenarios():
    assert set(wayside.builtin_scenarios()) >= {"saturation", "range", "drive-by"}


def test_sumo_polygon_paths_are_relative_to_the_scenario_file(tmp_path, monkeypatch):
    """An obstacle's `sumo` file is found next to the scenario file,
    whatever the working directory."""
    from wayside.scenario import load_scenario

    (tmp_path / "city.poly.xml").write_text(
        '<additional><poly id="depot" type="building" shape="40,-10 60,-10 60,10 40,10"/></additional>'
    )
    (tmp_path / "s.toml").write_text(
        'duration = "1 s"\n[radio]\nstandard = "802.11g"\n'
        '[[node]]\nname = "a"\n[[node]]\nname = "b"\nposition = [100, 0]\n'
        '[[obstacle]]\nsumo = "city.poly.xml"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    doc = load_scenario(tmp_path / "s.toml")
    assert doc["obstacle"][0]["sumo"] == str((tmp_path / "city.poly.xml").resolve())
