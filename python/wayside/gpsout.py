"""GPS logs of a simulated run: each radio node's position once a second
on its host's clock, as NMEA, GPX or CSV, optionally with the systematic
errors Hadaller et al. (2007) Table 2 found in theirs, so that a simulated
run can be analysed the way a measured one is (`wayside analyze`).

Positions are the ones the run recorded (every trace row carries its
node's x, y), interpolated at the fix times; a moving node gets fixes only
over the span its rows cover (from its first to its last record), a node
that never moved over the whole run. The simulated plane is laid on the
earth at `ORIGIN` (x east, y north), run time 0 at the scenario's `start`
(`run_start`), where the run's captures put it too.

Errors (all seeded, so the same run, errors and seed give the same log):
- measurement delay: a fix stamped at T reports where the receiver was at
  T − delay (Table 2: 1.5 s, the half of the 3 s between the signal
  peaks of runs in opposite directions, Figure 8);
- slow drift: an offset growing at `drift_m_per_h` in one direction drawn
  from the seed (Table 2: 7.5 m over 5.5 hours, about 1.36 m per hour),
  the same for every receiver (it comes from the satellites' signal paths,
  common to receivers a kilometre apart), `day_hours` into the day;
- short-term noise: independent Gaussian per fix and axis, σ = 1.13 m, so
  that two fixes of a still receiver lie 2 m apart on average as Table 2
  measured (for a 2-D Gaussian the mean distance is σ√π);
- clock offset: each host's clock (which stamps its fixes and, in a
  capture, its frames) is off the true time by a constant drawn uniformly
  from ±`clock_offset_s` (Table 2: over 500 ms of drift in 24 hours)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

from wayside import engine
from wayside.gpslog import LOG_SCHEMA, LocalPlane, write_log
from wayside.gpscorrect import interpolate
from wayside.result import TABLES, RunResult
from wayside.traces import table

# An arbitrary place for the simulated plane: the University of Waterloo,
# where Hadaller et al. worked.
ORIGIN = (43.4723, -80.5449)
TRUTH_FILE = "gps.json"


@dataclass(frozen=True)
class GpsErrors:
    delay_s: float = 1.5
    drift_m_per_h: float = 1.36
    noise_m: float = 1.13
    clock_offset_s: float = 0.5
    day_hours: float = 0.0
    seed: int = 1


NO_ERRORS = GpsErrors(delay_s=0.0, drift_m_per_h=0.0, noise_m=0.0, clock_offset_s=0.0)


def _stream(seed: int, *names: str) -> np.random.Generator:
    """A random stream fixed by the seed and names (SHA-256, not Python's
    salted hash), so adding a host does not change another's draws."""
    digest = hashlib.sha256("\0".join((str(seed), *names)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def clock_offset(host: str, errors: GpsErrors) -> float:
    """The host's clock minus the true time, s."""
    if errors.clock_offset_s == 0:
        return 0.0
    return float(_stream(errors.seed, "clock", host).uniform(-errors.clock_offset_s, errors.clock_offset_s))


def drift(t_s: np.ndarray, errors: GpsErrors) -> tuple[np.ndarray, np.ndarray]:
    """The drift's offset (east, north) at run times t_s, m."""
    angle = _stream(errors.seed, "drift").uniform(0, 2 * math.pi)
    metres = errors.drift_m_per_h * (errors.day_hours + np.asarray(t_s) / 3600)
    return metres * math.cos(angle), metres * math.sin(angle)


def recorded_positions(result: RunResult, node: str) -> pl.DataFrame:
    """Where `node` was, from every trace row it recorded: time_s, x, y."""
    parts = []
    for name in TABLES:
        df = table(result, name)
        if {"time_ns", "node", "x", "y"} <= set(df.columns):
            parts.append(df.filter(pl.col("node") == node).select("time_ns", "x", "y"))
    rows = pl.concat(parts).unique("time_ns", keep="first").sort("time_ns") if parts else pl.DataFrame()
    if rows.is_empty():
        raise ValueError(f"node '{node}' recorded nothing: no positions to write a GPS log from")
    return rows.select((pl.col("time_ns") / 1e9).alias("time_s"), pl.col("x").cast(pl.Float64), pl.col("y").cast(pl.Float64))


def radio_nodes(result: RunResult) -> list[str]:
    """The nodes with a radio (those that appear in the frames table)."""
    seen = set(table(result, "frames")["node"].unique().to_list())
    return [n for n in result.nodes if n in seen]


def run_start(result: RunResult) -> dt.datetime:
    """The wall-clock time of the run's time zero: its scenario's `start`
    (RFC 3339; default the Unix epoch), which its captures count from."""
    resolved = tomllib.loads(engine.resolve_defaults(result.resolved))
    return dt.datetime.fromisoformat(resolved["start"])


def node_log(result: RunResult, node: str, errors: GpsErrors = NO_ERRORS, origin: tuple[float, float] = ORIGIN,
             start: dt.datetime | None = None) -> pl.DataFrame:
    """`node`'s GPS log at 1 Hz on its host's clock (see the module doc),
    run time 0 at `start` (default `run_start`)."""
    pos = recorded_positions(result, node)
    ts, xs, ys = pos["time_s"].to_numpy(), pos["x"].to_numpy(), pos["y"].to_numpy()
    still = bool(np.ptp(xs) == 0 and np.ptp(ys) == 0)
    lo, hi = (0.0, result.duration_s) if still else (ts[0] + errors.delay_s, ts[-1] + errors.delay_s)
    offset = clock_offset(node, errors)
    epoch0 = (start or run_start(result)).timestamp()
    # Fixes on whole seconds of the host's clock, as a 1 Hz polling loop logs them.
    host = np.arange(math.ceil(epoch0 + offset + lo), math.floor(epoch0 + offset + hi) + 1, dtype=float)
    t = host - epoch0 - offset
    seen = t - errors.delay_s
    x, y = interpolate(seen, ts, xs), interpolate(seen, ts, ys)
    dx, dy = drift(t, errors)
    noise = _stream(errors.seed, "noise", node).normal(0.0, 1.0, (len(t), 2)) * errors.noise_m
    lat, lon = LocalPlane(*origin).to_latlon(x + dx + noise[:, 0], y + dy + noise[:, 1])
    return pl.DataFrame({"time_s": host, "lat": lat, "lon": lon}, schema=LOG_SCHEMA)


def write_gps(result: RunResult, directory: str | Path, fmt: str = "nmea", errors: GpsErrors = NO_ERRORS,
              origin: tuple[float, float] = ORIGIN, start: dt.datetime | None = None) -> list[Path]:
    """Writes DIR/NODE.{nmea,gpx,csv} for every radio node, and DIR/gps.json
    with what was injected (errors, each host's clock offset, origin and
    start, default `run_start`) so that corrections can be checked against
    it."""
    d = Path(directory)
    start = start or run_start(result)
    suffix = {"nmea": ".nmea", "gpx": ".gpx", "csv": ".csv"}[fmt]
    paths = [write_log(node_log(result, n, errors, origin, start), d / f"{n}{suffix}", fmt) for n in radio_nodes(result)]
    truth = {"errors": asdict(errors), "origin": list(origin), "start": start.isoformat(),
             "clock_offsets_s": {n: clock_offset(n, errors) for n in radio_nodes(result)}}
    (d / TRUTH_FILE).write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return paths + [d / TRUTH_FILE]
