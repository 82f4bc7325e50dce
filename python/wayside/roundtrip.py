"""Simulated runs measured as real ones were: each host's sniffer view of a
run (`wayside.sniffers.from_run`) and its GPS logs written with Hadaller
Table 2's errors (`wayside.gpsout`), put through the capture path's clock
estimation and GPS log reading, ready for `wayside.gpscorrect`; and the
corrected positions' error against the simulated ones. This checks the
corrections end to end until the simulator writes pcap (then the whole
capture path, `wayside.capture`, can be checked against native runs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from wayside import gpscorrect, gpslog, gpsout, sniffers
from wayside.result import RunResult

_SUFFIX = {"nmea": ".nmea", "gpx": ".gpx", "csv": ".csv"}


@dataclass
class Measured:
    """One simulated run as measured: the corrections' input, and the
    truth to check their output against."""

    logs: gpscorrect.RunLogs
    clock_error_s: float  # estimated minus injected offset, vehicle against AP
    positions: pl.DataFrame  # the vehicle's simulated positions: time_s, x, y
    ap_xy: tuple[float, float]
    ap_clock_s: float  # the AP's (reference) clock offset from the true time


def measure(result: RunResult, name: str, errors: gpsout.GpsErrors, directory: str | Path, fmt: str = "nmea",
            ap: str = "ap", vehicle: str = "car") -> Measured:
    """Writes the run's GPS logs with `errors` under DIRECTORY, estimates
    the hosts' clock offsets from the frames both caught, and reads the logs
    back onto the AP's clock."""
    d = Path(directory)
    epoch = gpsout.START.timestamp()
    gpsout.write_gps(result, d, fmt, errors)
    injected = {h: gpsout.clock_offset(h, errors) for h in (ap, vehicle)}
    records = pl.concat([sniffers.from_run(result, h, injected[h], epoch) for h in (ap, vehicle)])
    est = sniffers.clock_offsets(records, {ap: ap, vehicle: vehicle}, ap)
    on_ref = {h: gpslog.read_log(d / f"{h}{_SUFFIX[fmt]}").with_columns(pl.col("time_s") - est.seconds[h])
              for h in (ap, vehicle)}
    heard = records.filter((pl.col("sniffer") == vehicle) & (pl.col("ta") == ap)).with_columns(
        pl.col("time_s") - est.seconds[vehicle]).select("time_s", "rssi_dbm")
    return Measured(
        logs=gpscorrect.RunLogs(name, on_ref[vehicle], on_ref[ap], heard),
        clock_error_s=est.seconds[vehicle] - (injected[vehicle] - injected[ap]),
        positions=gpsout.recorded_positions(result, vehicle),
        ap_xy=tuple(gpsout.recorded_positions(result, ap).row(0)[1:]),
        ap_clock_s=injected[ap],
    )


def position_errors(corrections: gpscorrect.Corrections, measured: list[Measured]) -> np.ndarray:
    """Distance (m) between the corrected and the simulated position of the
    vehicle at every instant it recorded, within the span its corrected
    fixes cover (no extrapolation), over all runs."""
    out = []
    for m in measured:
        run = corrections.runs[m.logs.name]
        t = m.positions["time_s"].to_numpy() + gpsout.START.timestamp() + m.ap_clock_s
        inside = (t >= run.fix_s[0]) & (t <= run.fix_s[-1])
        x, y = run.position(t[inside])
        true_x = m.positions["x"].to_numpy()[inside] - m.ap_xy[0]
        true_y = m.positions["y"].to_numpy()[inside] - m.ap_xy[1]
        out.append(np.hypot(x - true_x, y - true_y))
    return np.concatenate(out) if out else np.array([])
