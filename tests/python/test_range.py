"""The range scenario: broadcast probes at every 802.11g rate from a sounder
driving away. Without shadowing or fading each rate's delivery ratio falls
through 50% where the mean SNR meets that rate's threshold, and faster rates
reach less far."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import wayside
from wayside.analysis import delivery_vs_distance, rate_crossings

DSSS = [1.0, 2.0, 5.5, 11.0]
OFDM = [6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0]


@pytest.fixture(scope="module")
def range_result():
    return wayside.run("range", seed=1)


@pytest.fixture(scope="module")
def crossings(range_result):
    return rate_crossings(range_result, "sounder", "receiver")


def by_rate(crossings: pl.DataFrame, column: str) -> dict[float, float]:
    return dict(zip(crossings["rate_mbps"].to_list(), crossings[column].to_list()))


def test_every_rate_crosses(crossings):
    assert sorted(crossings["rate_mbps"].to_list()) == sorted(DSSS + OFDM)
    for column in ("d50_delivery_m", "d_threshold_m", "threshold_db"):
        assert crossings[column].null_count() == 0, crossings


def test_delivery_is_complete_close_and_nil_far(range_result):
    dv = delivery_vs_distance(range_result, "sounder", "receiver")
    for rate in DSSS + OFDM:
        curve = dv.filter(pl.col("rate_mbps") == rate).sort("distance_m")
        assert curve["ratio"][0] == pytest.approx(1.0), rate
        assert curve["ratio"][-1] == pytest.approx(0.0), rate
        # Every full 20 m bin holds dozens of probes per rate (the last bin is cut short).
        assert curve["sent"].head(-1).min() >= 10


@pytest.mark.parametrize("family, rates", [("DSSS", DSSS), ("OFDM", OFDM)])
def test_higher_rates_reach_shorter_distances(crossings, family, rates):
    d50 = by_rate(crossings, "d50_delivery_m")
    distances = [d50[r] for r in rates]
    assert all(a > b for a, b in zip(distances, distances[1:])), f"{family} d50 not strictly decreasing: {dict(zip(rates, distances))}"
    thresholds = by_rate(crossings, "threshold_db")
    levels = [thresholds[r] for r in rates]
    assert all(a < b for a, b in zip(levels, levels[1:])), f"{family} thresholds not increasing: {levels}"


@pytest.mark.parametrize("rate", DSSS + OFDM)
def test_d50_matches_threshold_distance(crossings, rate):
    row = crossings.filter(pl.col("rate_mbps") == rate).row(0, named=True)
    d50, dth = row["d50_delivery_m"], row["d_threshold_m"]
    assert abs(d50 - dth) <= max(0.05 * dth, 15.0), row


@pytest.mark.parametrize(
    "overrides",
    [
        ['traffic.0.payload="1.5 kB"'],
        ['traffic.0.payload="1500B"'],
    ],
)
def test_crossings_read_payload_units(crossings, overrides):
    # The same 1500-byte probes written with other units must give the same
    # thresholds (they are per PSDU size) and the same crossings.
    other = rate_crossings(wayside.run("range", seed=1, overrides=overrides), "sounder", "receiver")
    assert other["threshold_db"].to_list() == crossings["threshold_db"].to_list()
    assert other["d_threshold_m"].to_list() == pytest.approx(crossings["d_threshold_m"].to_list())


def test_crossings_read_implementation_loss_units():
    a = rate_crossings(wayside.run("range", seed=1, overrides=['radio.implementation_loss="3 dB"']), "sounder", "receiver")
    b = rate_crossings(wayside.run("range", seed=1, overrides=['radio.implementation_loss="3dB"']), "sounder", "receiver")
    assert a["threshold_db"].to_list() == b["threshold_db"].to_list()
    base = dict(zip(a["rate_mbps"].to_list(), a["threshold_db"].to_list()))
    # A 3 dB implementation loss moves each threshold up by 3 dB and the
    # crossing closer in.
    plain = rate_crossings(wayside.run("range", seed=1), "sounder", "receiver")
    for rate, th in zip(plain["rate_mbps"].to_list(), plain["threshold_db"].to_list()):
        assert base[rate] == pytest.approx(th + 3.0, abs=0.01)
    assert all(x < y for x, y in zip(a["d_threshold_m"].to_list(), plain["d_threshold_m"].to_list()))


def test_cli_writes_delivery_figure(cli, tmp_path):
    out = tmp_path / "range-run"
    p = cli("run", "range", "--out", out, "-q")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert Path(p.stdout.strip()) == out
    pngs = sorted(out.glob("delivery_*.png"))
    assert [f.name for f in pngs] == ["delivery_sounder_to_receiver.png"]
    data = pngs[0].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    crossings_csv = pl.read_csv(out / "delivery_sounder_to_receiver_crossings.csv")
    assert crossings_csv.height == 12
    assert (out / "delivery_sounder_to_receiver.csv").is_file()
