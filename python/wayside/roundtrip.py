"""Simulated runs measured as real ones were, to check the capture path
against the simulator's own traces.

- Without files (`measure`): each host's sniffer view of a run (what its
  radio sent and received, stamped by its clock) and its GPS logs written
  with Hadaller Table 2's errors (`wayside.gpsout`), put through the
  capture path's clock estimation and GPS log reading, ready for
  `wayside.gpscorrect`.
- Through pcap files (`capture_sweep`): a sweep of passes written as a
  capture directory (one pcap per radio, its record times moved onto its
  host's clock, GPS logs with Table 2's errors, a capture.toml), analysed
  by `wayside.capture` as a real capture, and compared figure for figure
  (`compare`) with the drive-by analysis of the native runs.

Both give the corrected positions' error against the simulated ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import dpkt
import numpy as np
import polars as pl
import tomli_w

from wayside import capture, driveby, gpscorrect, gpslog, gpsout, sniffers
from wayside.pcapread import BROADCAST, RECORD_SCHEMA
from wayside.result import RunResult
from wayside.runner import run
from wayside.traces import table

_SUFFIX = {"nmea": ".nmea", "gpx": ".gpx", "csv": ".csv"}


def sniffer_view(result: RunResult, host: str, clock_offset_s: float, epoch_s: float) -> pl.DataFrame:
    """The records a sniffer on the host of node `host` would hold of a
    simulated run: every frame its radio sent or received, node names for
    addresses, stamped by a clock `clock_offset_s` off the true time, run
    time 0 at `epoch_s`. Without upper-layer fields: a capture without
    files (`capture_sweep` writes real ones)."""
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
class Truth:
    """Where a simulated run's vehicle really was, to check corrected
    positions against."""

    name: str
    positions: pl.DataFrame  # the vehicle's simulated positions: time_s, x, y
    ap_xy: tuple[float, float]
    ap_clock_s: float  # the AP's (reference) clock offset from the true time
    start_s: float  # run time 0 on the wall clock, Unix seconds (the scenario's start)


def truth(result: RunResult, name: str, errors: gpsout.GpsErrors, ap: str = "ap", vehicle: str = "car") -> Truth:
    return Truth(name, gpsout.recorded_positions(result, vehicle), tuple(gpsout.recorded_positions(result, ap).row(0)[1:]),
                 gpsout.clock_offset(ap, errors), gpsout.run_start(result).timestamp())


@dataclass
class Measured:
    """One simulated run as measured: the corrections' input, and the
    truth to check their output against."""

    logs: gpscorrect.RunLogs
    clock_error_s: float  # estimated minus injected offset, vehicle against AP
    truth: Truth


def measure(result: RunResult, name: str, errors: gpsout.GpsErrors, directory: str | Path, fmt: str = "nmea",
            ap: str = "ap", vehicle: str = "car") -> Measured:
    """Writes the run's GPS logs with `errors` under DIRECTORY, estimates
    the hosts' clock offsets from the frames both caught, and reads the logs
    back onto the AP's clock."""
    d = Path(directory)
    epoch = gpsout.run_start(result).timestamp()
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
        truth=truth(result, name, errors, ap, vehicle),
    )


def position_errors(corrections: gpscorrect.Corrections, truths: list[Truth]) -> np.ndarray:
    """Distance (m) between the corrected and the simulated position of the
    vehicle at every instant it recorded, within the span its corrected
    fixes cover (no extrapolation), over all runs."""
    out = []
    for m in truths:
        run = corrections.runs[m.name]
        t = m.positions["time_s"].to_numpy() + m.start_s + m.ap_clock_s
        inside = (t >= run.fix_s[0]) & (t <= run.fix_s[-1])
        x, y = run.position(t[inside])
        true_x = m.positions["x"].to_numpy()[inside] - m.ap_xy[0]
        true_y = m.positions["y"].to_numpy()[inside] - m.ap_xy[1]
        out.append(np.hypot(x - true_x, y - true_y))
    return np.concatenate(out) if out else np.array([])


# ---------------------------------------------------------------- through pcap files

# The way back: the car starts east of the AP and drives west.
WEST = ["node.car.position=[1500, 0]", "node.car.mobility.heading=180"]


def sweep_overrides(i: int, fast_frames: bool = True) -> list[str]:
    """Pass `i` of a sweep alternates directions, as the paper's runs did
    (§3.4): the GPS delay estimate needs runs both ways."""
    return (WEST if i % 2 else []) + ([] if fast_frames else ["mac.fast_frames=false"])


def shift_capture(path: Path, offset_s: float) -> None:
    """Puts every record of the pcap at `path` on a clock `offset_s` ahead
    of the one it was written with, to the nanosecond (dpkt gives a
    nanosecond pcap's times as exact decimals)."""
    shift = Decimal(round(offset_s * 1e9)) / 10**9
    tmp = path.with_name(path.name + ".tmp")
    with path.open("rb") as f, tmp.open("wb") as g:
        reader = dpkt.pcap.Reader(f)
        writer = dpkt.pcap.Writer(g, snaplen=reader.snaplen, linktype=reader.datalink(), nano=True)
        writer.writepkts((ts + shift, buf) for ts, buf in reader)
    tmp.replace(path)


def manifest(ap: str = "ap", vehicle: str = "car", delay_s: float | None = None) -> str:
    """The capture.toml of a simulated capture directory: the AP sends
    bulk TCP to the vehicle, one sniffer per radio on its own host, node i
    with the addresses the simulator's pcaps give it."""
    nodes = [{"name": n, "role": role, "mac": f"02:00:00:00:00:{i + 1:02x}", "ip": f"10.0.0.{i + 1}", "gps": f"{n}.nmea"}
             for i, (n, role) in enumerate(((ap, "ap"), (vehicle, "sta")))]
    doc = {"node": nodes, "sniffer": [{"file": f"{n}.pcap", "host": n} for n in (ap, vehicle)],
           "app": {"from": ap, "to": vehicle}, "gps": {"delay": "auto" if delay_s is None else f"{delay_s} s"}}
    return tomli_w.dumps(doc)


@dataclass
class CapturedSweep:
    native: list[driveby.RunDigest]  # the simulator's own traces
    captured: list[driveby.RunDigest]  # the same runs read back from pcap and GPS files
    converted: capture.Converted
    truths: list[Truth]


def capture_sweep(directory: str | Path, runs: int, scenario: str = "hadaller-highway", seed: int = 1,
                  fast_frames: bool = True, delay_s: float = 1.5, spacing_min: float = 10.0) -> CapturedSweep:
    """Simulates `runs` passes (seeds seed, seed+1, …, alternating
    directions) and writes them as a capture directory DIR/capture: per
    pass the AP's and the car's pcaps on their hosts' clocks and their GPS
    logs as NMEA with Table 2's errors (delay `delay_s`, passes
    `spacing_min` minutes apart for the drift, clock offsets and noise at
    Table 2's figures); then reads it as `wayside analyze` does into
    DIR/runs (the scenario must name its radios `ap` and `car`, placed
    first)."""
    root = Path(directory)
    native, truths = [], []
    for i in range(runs):
        name = f"run{i:02d}"
        d = root / "capture" / name
        r = run(scenario, seed=seed + i, overrides=sweep_overrides(i, fast_frames), pcap=d)
        errors = gpsout.GpsErrors(delay_s=delay_s, day_hours=i * spacing_min / 60, seed=100 + seed + i)
        gpsout.write_gps(r, d, "nmea", errors)
        for host in ("ap", "car"):
            shift_capture(d / f"{host}.pcap", gpsout.clock_offset(host, errors))
        native.append(driveby.digest(r, name))
        truths.append(truth(r, name, errors))
    (root / "capture" / capture.MANIFEST).write_text(manifest(), encoding="utf-8")
    converted = capture.convert(root / "capture", root / "runs")
    captured = [driveby.load_digest(p) for p in converted.runs]
    return CapturedSweep(native, captured, converted, truths)


PHASE_BOUNDARIES = (("entry start (m)", "entry_start_m"), ("production start (m)", "production_start_m"),
                    ("production end (m)", "production_end_m"), ("exit end (m)", "exit_end_m"))


def figures(a: driveby.Analysis, split: driveby.Phases | None = None) -> dict[str, float]:
    """The phases' boundaries and the supremum data (in all and per
    phase) of a drive-by analysis; the data per phase between the
    boundaries of `split` where given, else its own."""
    p = a.phases
    out = {label: getattr(p, key) if p else math.nan for label, key in PHASE_BOUNDARIES}
    out["supremum (MB)"] = a.supremum_mb
    split = split or p
    shares = driveby.phase_shares(a.bins, split) if split else dict.fromkeys(("entry", "production", "exit"), math.nan)
    for phase, share in shares.items():
        out[f"supremum, {phase} (MB)"] = share * a.supremum_mb
    return out


def compare(sweep: CapturedSweep) -> list[tuple[str, float, float, float]]:
    """Per figure: native, captured and the relative difference |c − n| / |n|
    (infinite where the native figure is 0 and the captured one is not).
    Each side's boundaries are its own, but the captured data per phase is
    counted between the native boundaries: a bin at the production
    threshold that tips to the other side moves the boundary (compared as
    such) without moving data between the phases' figures. Phases and
    supremum do not use the static-rate profile (only the theoretical
    potential does), so none is measured."""
    a_native = driveby.analyze(sweep.native, [])
    native = figures(a_native)
    captured = figures(driveby.analyze(sweep.captured, []), split=a_native.phases)
    def relative(n: float, c: float) -> float:
        return abs(c - n) / abs(n) if n else (0.0 if c == 0 else math.inf)

    return [(k, native[k], captured[k], relative(native[k], captured[k])) for k in native]
