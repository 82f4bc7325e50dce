"""Two stations behind one AP (Hadaller et al. 2007 §9): each one's
application waits for its own association, the start delay is drawn per
run within its bounds, and `association_lag_m` measures how much later on
the road the second station associated."""

from __future__ import annotations

import polars as pl
import pytest

import wayside
from wayside import metrics as M

# An AP on channel 6 and two stations that join it 2 s apart (the second
# appears at 2 s); bulk TCP to each 1-2 s after its own association.
TWO = {
    "name": "two",
    "duration": "6 s",
    "environment": {"path_loss": "free-space"},
    "radio": {"standard": "802.11g", "channel": 6},
    "management": {"scan_channels": [6], "scan_dwell": "50 ms"},
    "node": [
        {"name": "ap", "role": "ap"},
        {"name": "a", "role": "sta", "position": [20, 0]},
        {"name": "b", "role": "sta", "position": [40, 0], "appear": "2 s"},
    ],
    "app": [
        {"kind": "tcp-bulk", "from": "ap", "to": "a", "start": "on-association", "start_delay": "1 s", "start_delay_max": "2 s"},
        {"kind": "tcp-bulk", "from": "ap", "to": "b", "port": 5002, "start": "on-association", "start_delay": "1 s", "start_delay_max": "2 s"},
    ],
}


def _first(events: pl.DataFrame, node: str, event: str) -> float:
    return float(events.filter((pl.col("node") == node) & (pl.col("event") == event)).sort("time_ns")["time_ns"][0]) / 1e9


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_application_waits_for_its_own_station_within_the_delay_bounds(seed):
    r = wayside.run(TWO, seed=seed)
    ev = M.table(r, "events")
    for sta in ("a", "b"):
        assoc = _first(ev, sta, "associated")
        start = float(ev.filter((pl.col("node") == "ap") & (pl.col("event") == "app-start") & (pl.col("peer") == sta))["time_ns"].min()) / 1e9
        assert 1.0 <= start - assoc <= 2.0, (sta, assoc, start)


def test_the_start_delay_varies_between_runs():
    delays = set()
    for seed in (1, 2, 3, 4):
        ev = M.table(wayside.run(TWO, seed=seed), "events")
        start = float(ev.filter((pl.col("node") == "ap") & (pl.col("event") == "app-start") & (pl.col("peer") == "a"))["time_ns"].min()) / 1e9
        delays.add(round(start - _first(ev, "a", "associated"), 6))
    assert len(delays) == 4


def test_association_lag_is_where_the_second_associated_minus_the_first():
    r = wayside.run("hadaller-two-cars", seed=1)
    ev = M.table(r, "events").filter(pl.col("event") == "associated").sort("time_ns")
    x = {n: float(ev.filter(pl.col("node") == n)["x"][0]) for n in ("car", "car2")}
    assert M.association_lag_m(r, "car", "car2") == pytest.approx(x["car2"] - x["car"])
    with pytest.raises(ValueError, match="second: no node named 'car3'"):
        M.association_lag_m(r, "car", "car3")


def test_two_cars_drive_the_calibrated_road():
    """hadaller-two-cars reuses hadaller-highway's environment (the one
    fitted to the paper's phases), per-run offset included: a refit of
    one without the other would fail here."""
    import tomllib

    from wayside import _native

    env = {n: tomllib.loads(_native.builtin_text(n))["environment"] for n in ("hadaller-highway", "hadaller-two-cars")}
    assert env["hadaller-two-cars"] == env["hadaller-highway"]
    assert env["hadaller-highway"]["run_shadowing_sigma"] != "0 dB"
