"""The corrections of Hadaller et al. (2007) Table 2 for systematic GPS
error, applied to the logs of a set of drive-by runs past one AP:

- clock offsets between hosts: every log is put on the reference host's
  clock first (the offsets come from `wayside.sniffers`, or are given);
- short-term variation and long-term drift at the AP: the AP's position is
  the mean of its fixes during each run, recomputed per run ("rather than
  computing a global average over all measurements"); the vehicle's
  positions are taken relative to it;
- GPS measurement delay: a fix reports where the receiver was some time
  before it was stamped. Runs in opposite directions then place the peak
  of the signal strength on opposite sides of where it really is ("a
  consistent separation of approximately 3 s between peaks"); the delay is
  the time shift of every fix that makes the signal strength against
  position of the runs one way match that of the runs the other way over
  the peak region (the `PEAK_REGION_DB` below the strongest bin), found on
  a grid of `DELAY_STEP_S` up to `MAX_DELAY_S`;
- infrequent fixes: positions between the 1 Hz fixes are interpolated
  linearly (extrapolated from the end fixes beyond them), "appropriate as
  we were traveling in a constant direction at a constant speed".

Positions come out in metres along the road (x: the principal axis of all
the vehicle's fixes, pointing east, or north on a north-south road) and
across it (y), from the run's AP position."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from wayside.gpslog import LocalPlane

# Our choices, where the paper gives none: the signal strength is compared
# in 5 m bins (a quarter of the analysis' 20 m), over the bins within 15 dB
# of the strongest (the peak and its flanks, where RSSI changes fastest with
# position), with at least 3 observation slots of each direction per bin.
BIN_M = 5.0
PEAK_REGION_DB = 15.0
MIN_SLOTS = 3
# RSSI readings are averaged (in dB) over 50 ms slots per run first: about
# 1 m at 80 km/h, and a thousandfold fewer points to shift.
SLOT_S = 0.05
# Table 2 found 1.5 s; the search covers up to 5 s in 10 ms steps (0.2 m at
# 80 km/h).
MAX_DELAY_S = 5.0
DELAY_STEP_S = 0.01


class CorrectionError(ValueError):
    """GPS logs that cannot be corrected as asked."""


@dataclass
class RunLogs:
    """One run's inputs, every time on the reference clock (s): the
    vehicle's and the AP's GPS logs (time_s, lat, lon) and the signal
    strength of the AP's frames heard at the vehicle (time_s, rssi_dbm)."""

    name: str
    vehicle: pl.DataFrame
    ap: pl.DataFrame
    rssi: pl.DataFrame


@dataclass
class CorrectedRun:
    name: str
    ap_lat: float
    ap_lon: float
    fix_s: np.ndarray  # fix times after the delay correction
    x: np.ndarray  # along the road from the run's AP position, m
    y: np.ndarray  # across the road, m

    def position(self, times_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The vehicle's position at `times_s`, interpolated between fixes."""
        return interpolate(times_s, self.fix_s, self.x), interpolate(times_s, self.fix_s, self.y)

    @property
    def direction(self) -> float:
        return 1.0 if self.x[-1] >= self.x[0] else -1.0


@dataclass
class Corrections:
    delay_s: float
    delay_estimated: bool
    axis: tuple[float, float]  # the road's direction, unit (east, north)
    runs: dict[str, CorrectedRun] = field(default_factory=dict)
    ap_spread_m: dict[str, float] = field(default_factory=dict)  # per run: mean distance of AP fixes from their mean


def interpolate(t: np.ndarray, ts: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Linear interpolation of (ts, vs) at t, extrapolated linearly from
    the first and last two points beyond them."""
    t = np.asarray(t, dtype=float)
    out = np.interp(t, ts, vs)
    if len(ts) >= 2:
        lo, hi = t < ts[0], t > ts[-1]
        out[lo] = vs[0] + (t[lo] - ts[0]) * (vs[1] - vs[0]) / (ts[1] - ts[0])
        out[hi] = vs[-1] + (t[hi] - ts[-1]) * (vs[-1] - vs[-2]) / (ts[-1] - ts[-2])
    return out


def _slots(rssi: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    s = rssi.filter(pl.col("rssi_dbm").is_not_nan()).with_columns((pl.col("time_s") / SLOT_S).floor().alias("slot"))
    s = s.group_by("slot").agg(pl.col("time_s").mean(), pl.col("rssi_dbm").cast(pl.Float64).mean()).sort("slot")
    return s["time_s"].to_numpy(), s["rssi_dbm"].to_numpy()


def _mismatch(shifted: list[tuple[float, np.ndarray, np.ndarray]]) -> float:
    """Mean squared difference (dB²) between the binned signal strength of
    the runs each way, over the peak region both cover; inf without one."""
    curves = {}
    lo = math.floor(min(x.min() for _, x, _ in shifted) / BIN_M)
    n = math.floor(max(x.max() for _, x, _ in shifted) / BIN_M) - lo + 1
    for sign in (1.0, -1.0):
        xs = [x for d, x, _ in shifted if d == sign]
        rs = [r for d, _, r in shifted if d == sign]
        idx = np.floor(np.concatenate(xs) / BIN_M).astype(int) - lo
        count = np.bincount(idx, minlength=n)
        total = np.bincount(idx, weights=np.concatenate(rs), minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            curves[sign] = (np.where(count >= MIN_SLOTS, total / np.maximum(count, 1), np.nan))
    both = ~np.isnan(curves[1.0]) & ~np.isnan(curves[-1.0])
    if not both.any():
        return math.inf
    peak = np.nanmax(np.where(both, (curves[1.0] + curves[-1.0]) / 2, np.nan))
    region = both & ((curves[1.0] + curves[-1.0]) / 2 >= peak - PEAK_REGION_DB)
    return float(np.mean((curves[1.0][region] - curves[-1.0][region]) ** 2))


def estimate_delay(tracks: list[tuple[np.ndarray, np.ndarray]], rssi: list[pl.DataFrame]) -> float:
    """The GPS measurement delay (s) that aligns the signal strength of runs
    in opposite directions (see the module doc). `tracks`: per run, fix
    times and positions along the road; `rssi`: per run, time_s and
    rssi_dbm of the AP's frames heard at the vehicle."""
    runs = []
    for (ts, xs), r in zip(tracks, rssi):
        t, v = _slots(r)
        if len(t) and len(ts) >= 2:
            runs.append((1.0 if xs[-1] >= xs[0] else -1.0, ts, xs, t, v))
    if not runs:
        raise CorrectionError("no run has signal readings of the AP near the vehicle, which the GPS delay is "
                              "estimated from; give a [[sniffer]] near the vehicle, or gps.delay in capture.toml")
    ways = {d for d, *_ in runs}
    if ways != {1.0, -1.0}:
        raise CorrectionError(
            f"the GPS delay is estimated from runs in opposite directions (Hadaller Table 2), but all "
            f"{len(runs)} runs with signal readings go the same way; give gps.delay in capture.toml")
    best, best_d = math.inf, 0.0
    for d in np.arange(0.0, MAX_DELAY_S + DELAY_STEP_S / 2, DELAY_STEP_S):
        # A fix stamped T reports the position at T - d: position at t is the
        # log's at t + d.
        shifted = [(way, interpolate(t + d, ts, xs), v) for way, ts, xs, t, v in runs]
        score = _mismatch(shifted)
        if score < best:
            best, best_d = score, float(d)
    if math.isinf(best):
        raise CorrectionError("runs in opposite directions never heard the AP at the same stretch of road; "
                              "give gps.delay in capture.toml")
    return round(best_d, 6)


def road_axis(points: np.ndarray) -> tuple[float, float]:
    """Unit vector of the principal axis of (east, north) points, pointing
    east (north when the road runs exactly north-south)."""
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    ex, ey = float(vt[0][0]), float(vt[0][1])
    if ex < 0 or (ex == 0 and ey < 0):
        ex, ey = -ex, -ey
    return ex, ey


def correct(runs: list[RunLogs], delay_s: float | None = None) -> Corrections:
    """Applies Table 2's corrections to every run (see the module doc); the
    delay is estimated when `delay_s` is None."""
    if not runs:
        raise CorrectionError("no runs to correct")
    first_ap = runs[0].ap
    plane = LocalPlane(float(first_ap["lat"].mean()), float(first_ap["lon"].mean()))
    rel, spread = {}, {}
    for r in runs:
        if r.vehicle.height < 2 or r.ap.is_empty():
            raise CorrectionError(f"run {r.name}: needs at least 2 vehicle fixes and 1 AP fix "
                                  f"(has {r.vehicle.height} and {r.ap.height})")
        ax, ay = plane.to_xy(r.ap["lat"].to_numpy(), r.ap["lon"].to_numpy())
        cx, cy = float(ax.mean()), float(ay.mean())
        spread[r.name] = float(np.hypot(ax - cx, ay - cy).mean())
        vx, vy = plane.to_xy(r.vehicle["lat"].to_numpy(), r.vehicle["lon"].to_numpy())
        rel[r.name] = (cx, cy, vx - cx, vy - cy)
    ex, ey = road_axis(np.concatenate([np.column_stack((v[2], v[3])) for v in rel.values()]))
    along = {n: (v[2] * ex + v[3] * ey, -v[2] * ey + v[3] * ex) for n, v in rel.items()}
    estimated = delay_s is None
    if estimated:
        delay_s = estimate_delay([(r.vehicle["time_s"].to_numpy(), along[r.name][0]) for r in runs], [r.rssi for r in runs])
    out = Corrections(float(delay_s), estimated, (ex, ey), ap_spread_m=spread)
    for r in runs:
        cx, cy = rel[r.name][:2]
        lat, lon = plane.to_latlon(np.array([cx]), np.array([cy]))
        x, y = along[r.name]
        out.runs[r.name] = CorrectedRun(r.name, float(lat[0]), float(lon[0]), r.vehicle["time_s"].to_numpy() - delay_s, x, y)
    return out
