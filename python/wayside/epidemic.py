"""Contact-level epidemic dissemination on a vehicle trace, and the Figure 13
sweep of Zahn et al. (2009) §5.6: the fraction of devices holding a file
after the trace (15 minutes), against the fraction of vehicles carrying a
device, for 4, 12 and 24 seeds, 20 runs a point, median with 5th and 95th
percentiles. The model itself is in Rust (wayside-contact's `epidemic`
module, which cites §5.6 rule by rule, and its `rules` module: §5.6's
transfer rules or The ONE's); this module runs it, fans runs out
to local processes or a Dask cluster (`wayside.jobs`), and tabulates and
plots the outcome.

Layout of a sweep's output directory::

    manifest.json     trace, its figures, points, executor, wall time
    runs.parquet      one row per run: penetration, seeds, run, devices, complete, fraction
    figure13.csv      per point: median, p5, p95 of the fraction complete
    figure13.png      the plot
"""

from __future__ import annotations

import csv
import functools
import json
import sys
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from wayside import engine as _native, movement

if TYPE_CHECKING:
    import polars as pl

    from wayside.jobs import ProgressFn

# polars (and, for the plot, matplotlib) are imported by the functions
# that use them: a single run needs neither.

# Figure 13's x axis: 1/256 to 1/8 of the vehicles (0.39% to 12.5%).
PENETRATIONS = (1 / 256, 1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8)
SEED_COUNTS = (4, 12, 24)
RUNS = 20
MANIFEST = "manifest.json"
# §5.6: "within 150 meters for 20 seconds".
RANGE_M = 150.0
TRANSFER_S = 20.0
# Transfer rules: §5.6's, The ONE's, or SENDERS,PROGRESS,COMPLETION (see
# wayside-contact's `rules` module).
RULES = ("paper", "the-one")


class EpidemicError(ValueError):
    """A run or sweep that cannot be made; the message says what to change."""


@dataclass(frozen=True)
class Outcome:
    penetration: float
    seeds: int
    seed: int
    run: int
    vehicles: int
    devices: int
    complete: int
    fraction: float
    seed_vehicles: tuple[str, ...]
    times: tuple[float, ...]  # every step, s
    complete_over_time: tuple[int, ...]  # devices complete at each step
    device_vehicles: tuple[str, ...] = ()
    rules: str = "paper"
    broken: int = 0

    def row(self) -> dict[str, Any]:
        return {"penetration": self.penetration, "seeds": self.seeds, "seed": self.seed, "run": self.run,
                "vehicles": self.vehicles, "devices": self.devices, "complete": self.complete, "fraction": self.fraction,
                "broken": self.broken}

    @property
    def timeline(self) -> pl.DataFrame:
        """time (s), complete, fraction at every step."""
        import polars as pl

        return pl.DataFrame({"time": self.times, "complete": self.complete_over_time,
                             "fraction": [c / self.devices for c in self.complete_over_time]},
                            schema={"time": pl.Float64, "complete": pl.UInt32, "fraction": pl.Float64})

    def write_timeline(self, path: str | Path) -> None:
        """The timeline as CSV (time, complete, fraction)."""
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(("time", "complete", "fraction"))
            w.writerows((t, c, c / self.devices) for t, c in zip(self.times, self.complete_over_time))

    def roles(self) -> list[tuple[str, str]]:
        """The equipped vehicles: (vehicle id, role: device or seed), the
        table that `save_roles` writes and `load_roles` reads."""
        return [(v, "device") for v in self.device_vehicles] + [(v, "seed") for v in self.seed_vehicles]


Roles = tuple[list[str], list[str]]  # device ids, seed ids


def run(trace: movement.Trace, penetration: float, seeds: int, seed: int = 1, run_index: int = 0,
        rules: str = "paper", range_m: float = RANGE_M, transfer_s: float = TRANSFER_S,
        roles: Roles | None = None) -> Outcome:
    """One run on a loaded trace (the GIL is released while it runs). With
    `roles`, the devices and seeds are given rather than drawn."""
    try:
        d = _native.epidemic_run(trace, penetration, seeds, seed, run_index, range_m, transfer_s, rules, roles)
    except ValueError as e:
        raise EpidemicError(str(e)) from None
    times, done = array("d", d["times"]), array("I", d["complete_over_time"])
    if sys.byteorder == "big":  # the buffers are little-endian
        times.byteswap()
        done.byteswap()
    return Outcome(penetration, len(d["seeds"]), seed, run_index, d["vehicles"], d["devices"], d["complete"],
                   d["fraction"], tuple(d["seeds"]), tuple(times), tuple(done), tuple(d["device_ids"]), d["rules"],
                   d["broken"])


def save_roles(outcome: Outcome, path: str | Path) -> None:
    """Writes the run's equipped vehicles as CSV (vehicle, role)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("vehicle", "role"))
        w.writerows(outcome.roles())


def load_roles(path: str | Path) -> Roles:
    """Reads a roles CSV (vehicle, role: device or seed), as `save_roles`
    writes; the ids must be the trace's."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise EpidemicError(f"{path}: cannot be read as a roles table ({e})") from None
    if not rows or rows[0][:2] != ["vehicle", "role"]:
        raise EpidemicError(f"{path}: needs the columns vehicle, role; it has {', '.join(rows[0] if rows else [])}")
    ids: dict[str, list[str]] = {"device": [], "seed": []}
    for row in rows[1:]:
        vehicle, role = (row + ["", ""])[:2]
        if role not in ids or not vehicle:
            raise EpidemicError(f"{path}: vehicle {vehicle or None!r} has role {role or None!r}; allowed: device, seed")
        ids[role].append(vehicle)
    return ids["device"], ids["seed"]


@functools.lru_cache(maxsize=2)
def _cached(path: str, mtime_ns: int, window: tuple[float, float] | None) -> movement.Trace:
    return movement.load(path, window)


def load_cached(path: str, window: tuple[float, float] | None = None) -> movement.Trace:
    """A trace read once per process (a worker runs many points on it)."""
    p = Path(path)
    return _cached(str(p.resolve()), p.stat().st_mtime_ns, window)


@dataclass(frozen=True)
class PointJob:
    """All runs of one (penetration, seeds) point on one trace file."""
    trace: str  # absolute path
    window: tuple[float, float] | None
    penetration: float
    seeds: int
    seed: int
    runs: int
    rules: str = "paper"
    range_m: float = RANGE_M
    transfer_s: float = TRANSFER_S


def execute_point(job: PointJob) -> dict[str, Any]:
    """Runs one point (a job for `wayside.jobs.run_jobs`); returns its rows
    and the time spent reading the trace (0 when this process had it)."""
    started = time.perf_counter()
    trace = load_cached(job.trace, job.window)
    read_s = time.perf_counter() - started
    rows = [run(trace, job.penetration, job.seeds, job.seed, r, job.rules, job.range_m, job.transfer_s).row()
            for r in range(job.runs)]
    return {"rows": rows, "read_s": read_s, "wall_s": time.perf_counter() - started}


def plan(trace: str | Path, penetrations: Sequence[float] = PENETRATIONS, seed_counts: Sequence[int] = SEED_COUNTS,
         runs: int = RUNS, seed: int = 1, window: tuple[float, float] | None = None, rules: str = "paper",
         range_m: float = RANGE_M, transfer_s: float = TRANSFER_S) -> list[PointJob]:
    """The jobs of a sweep, every point checked on the trace first."""
    if runs < 1:
        raise EpidemicError(f"--runs {runs}: give at least 1")
    path = Path(trace)
    t = load_cached(str(path), window)
    jobs = []
    for s in seed_counts:
        for p in penetrations:
            run(t, p, s, seed, 0, rules, range_m, transfer_s)  # raises a clear error for an impossible point
            jobs.append(PointJob(str(path.resolve()), window, p, s, seed, runs, rules, range_m, transfer_s))
    return jobs


def summarize(runs: pl.DataFrame) -> pl.DataFrame:
    """Per point: devices, and the median, 5th and 95th percentiles of the
    fraction complete (linear interpolation between runs)."""
    import polars as pl

    return (runs.group_by("seeds", "penetration", maintain_order=True)
            .agg(pl.col("devices").median().alias("devices"),
                 pl.col("fraction").median().alias("median"),
                 pl.col("fraction").quantile(0.05, "linear").alias("p5"),
                 pl.col("fraction").quantile(0.95, "linear").alias("p95"),
                 pl.len().alias("runs"))
            .sort("seeds", "penetration"))


def _draw(ax: Any, summary: pl.DataFrame, title: str) -> None:
    for (s,), g in summary.group_by("seeds", maintain_order=True):
        x = g["penetration"].to_numpy() * 100
        m, lo, hi = (g[c].to_numpy() * 100 for c in ("median", "p5", "p95"))
        ax.errorbar(x, m, yerr=[m - lo, hi - m], marker="o", capsize=3, label=f"{s} seeds")
    ax.set_xscale("log", base=2)
    ax.set_xticks([p * 100 for p in PENETRATIONS], [f"{p * 100:.3g}" for p in PENETRATIONS])
    ax.set_xlabel("vehicles carrying a device (%)")
    ax.set_ylabel("devices with the file after the trace (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title, fontsize=9)


def plot(summary: pl.DataFrame, out: Path, title: str) -> None:
    plot_panels({title: summary}, out)


def plot_panels(panels: dict[str, pl.DataFrame], out: Path) -> None:
    """Figure 13 summaries side by side, one panel each (title: summary)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False, sharey=True)
    for ax, (title, summary) in zip(axes[0], panels.items()):
        _draw(ax, summary, title)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def sweep(trace: str | Path, out: str | Path, penetrations: Sequence[float] = PENETRATIONS,
          seed_counts: Sequence[int] = SEED_COUNTS, runs: int = RUNS, seed: int = 1,
          window: tuple[float, float] | None = None, executor: str = "local", workers: int | None = None,
          progress: ProgressFn | None = None, rules: str = "paper", range_m: float = RANGE_M,
          transfer_s: float = TRANSFER_S) -> dict[str, Any]:
    """The Figure 13 sweep (see the module doc); returns the manifest."""
    import polars as pl

    from wayside.jobs import run_jobs

    out = Path(out)
    started = time.perf_counter()
    jobs = plan(trace, penetrations, seed_counts, runs, seed, window, rules, range_m, transfer_s)
    stats = load_cached(str(trace), window).stats()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EpidemicError(f"--out {out}: cannot be created ({e.strerror or e})") from None
    rows: list[dict[str, Any]] = []
    read_s = []
    for _, answer in run_jobs(execute_point, jobs, executor=executor, workers=workers, progress=progress):
        rows.extend(answer["rows"])
        read_s.append(answer["read_s"])
    table = pl.DataFrame(rows).sort("seeds", "penetration", "run")
    table.write_parquet(out / "runs.parquet")
    summary = summarize(table)
    summary.write_csv(out / "figure13.csv")
    plot(summary, out / "figure13.png",
         f"{Path(trace).name}: {stats['vehicles']} vehicles, {stats['steps']} steps, {runs} runs a point, "
         f"rules {rules}")
    manifest = {
        "trace": str(trace), "window": window, "vehicles": stats["vehicles"], "steps": stats["steps"],
        "mean_moving_speed_kmh": stats["mean_moving_speed"] * 3.6, "penetrations": list(penetrations),
        "seed_counts": list(seed_counts), "runs": runs, "seed": seed, "executor": executor,
        "rules": rules, "range_m": range_m, "transfer_s": transfer_s,
        "wall_s": time.perf_counter() - started, "trace_reads_s": read_s,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
