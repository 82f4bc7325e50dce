"""Simulated runs measured as real ones were: each host's sniffer view of a
run (what its radio sent and received, stamped by its clock) and its GPS logs written with Hadaller
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
from wayside.pcapread import BROADCAST, RECORD_SCHEMA
from wayside.result import RunResult
from wayside.traces import table

_SUFFIX = {"nmea": ".nmea", "gpx": ".gpx", "csv": ".csv"}


def sniffer_view(result: RunResult, host: str, clock_offset_s: float, epoch_s: float) -> pl.DataFrame:
    """The records a sniffer on the host of node `host` would hold of a
    simulated run: every frame its radio sent or received, node names for
    addresses, stamped by a clock `clock_offset_s` off the true time, run
    time 0 at `epoch_s`. Without upper-layer fields: it stands for a capture
    until the simulator writes pcap."""
    f = table(result, "frames").filter((pl.col("node") == host) & pl.col("event").is_in(["tx", "rx"]))
    tx = pl.col("event") == "tx"
    peer = pl.when(pl.col("peer") == "broadcast").then(pl.lit(BROADCAST)).otherwise(pl.col("peer"))
    answer = pl.col("kind").is_in(["ack", "cts"])
    rows = f.select(
        pl.lit(host).alias("sniffer"), (pl.col("time_ns") / 1e9 + epoch_s + clock_offset_s).alias("time_s"), "kind",
        pl.when(answer).then(pl.lit("")).when(tx).then(pl.col("node")).otherwise(pl.col("peer")).alias("ta"),
        pl.when(tx).then(peer).otherwise(pl.col("node")).alias("ra"),
        pl.when(answer).then(pl.lit(-1)).otherwise(pl.col("seq").cast(pl.Int32)).alias("seq"),
        (pl.col("attempt") > 0).alias("retry"), pl.lit(False).alias("bad_fcs"), "rate_mbps", "rssi_dbm", "bytes")
    missing = [pl.lit(None).cast(t).alias(c) for c, t in RECORD_SCHEMA.items() if c not in rows.columns]
    return rows.with_columns(missing).select(list(RECORD_SCHEMA)).cast(RECORD_SCHEMA)


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
    records = pl.concat([sniffer_view(result, h, injected[h], epoch) for h in (ap, vehicle)])
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
