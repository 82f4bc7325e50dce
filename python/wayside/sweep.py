"""`wayside sweep`: many runs of one scenario — seeds times a grid of
overrides — on local processes or a Dask cluster, each saved as a run
directory (with its drive-by digest when the scenario has a bulk TCP flow
between an AP and a station), plus a manifest.json that `wayside report`
reads.

Layout of the output directory::

    manifest.json            scenario, grid, seeds, and every run's directory and outcome
    seed1/ seed2/ ...        without a grid
    p0/seed1/ p1/seed1/ ...  with a grid: one directory per grid point (the
                             product of the --grid lists, first key slowest),
                             or per recommendation (--recommendations)
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from wayside import engine as _native
from wayside.jobs import ProgressFn, run_jobs

MANIFEST = "manifest.json"


class SweepError(ValueError):
    """A sweep that cannot be started (bad grid, scenario or directory)."""


@dataclass(frozen=True)
class SweepJob:
    scenario: str  # built-in name or absolute path
    overrides: tuple[str, ...]
    seed: int
    directory: str  # absolute


def split_values(text: str) -> list[str]:
    """Splits "v1,v2,..." on the commas outside brackets, braces and quotes
    (so "[-200, 0],[-300, 0]" gives two points)."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_grid(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`--grid KEY=V1,V2,...` options as (key, values); values are written as
    for `--set` (TOML, or plain text taken as a string)."""
    grid: list[tuple[str, list[str]]] = []
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SweepError(f"--grid {spec!r}: write KEY=V1,V2,... (e.g. --grid 'mac.rate=\"11 Mbps\",\"54 Mbps\"')")
        vals = split_values(values)
        if any(not v for v in vals):
            raise SweepError(f"--grid {spec!r}: an empty value; separate values with single commas")
        if key in (k for k, _ in grid):
            raise SweepError(f"--grid {key}: given twice; list every value of a key in one --grid")
        grid.append((key, vals))
    return grid


def grid_points(grid: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, tuple[str, ...]]]:
    """(label, overrides) for every point of the product of the grid's lists."""
    if not grid:
        return [("", ())]
    keys = [k for k, _ in grid]
    points = []
    for combo in itertools.product(*(v for _, v in grid)):
        overrides = tuple(f"{k}={v}" for k, v in zip(keys, combo))
        points.append((", ".join(overrides), overrides))
    return points


def scenario_spec(scenario: str) -> str:
    """A built-in name as is, else the absolute path of an existing file."""
    from wayside.scenario import scenario_text

    if _native.builtin_text(scenario) is not None:
        return scenario
    scenario_text(scenario)  # raises ScenarioError naming the scenario when there is none
    return str(Path(scenario).resolve())


def execute_run(job: SweepJob) -> dict[str, Any]:
    """Runs, saves and digests one run (a job for `wayside.jobs.run_jobs`)."""
    from wayside import driveby
    from wayside.runner import run

    started = time.perf_counter()
    try:
        result = run(job.scenario, seed=job.seed, overrides=list(job.overrides))
        directory = Path(job.directory)
        result.save(directory)
        try:
            d = driveby.digest(result, name=directory.name)
        except ValueError:
            d = None  # not a drive-by with a bulk TCP flow: nothing to digest
        if d is not None:
            (directory / driveby.DIGEST_FILE).write_text(d.to_json(), encoding="utf-8")
        return {"status": "ok", "wall_s": time.perf_counter() - started,
                "data_mb": d.data_mb if d is not None else None}
    except BaseException as e:  # report it in the manifest, keep going
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return {"status": "error", "message": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - started}


def plan(scenario: str, runs: int, grid: Sequence[tuple[str, Sequence[str]]], out: Path,
         base_seed: int = 1, overrides: Sequence[str] = (), recommendations: bool = False) -> tuple[list[SweepJob], dict[str, Any]]:
    """The jobs of a sweep and its manifest (outcomes not filled in yet).
    With `recommendations` the points are the scenario as it is, each of
    Hadaller's recommendations it accepts and all of them together
    (`wayside.recommend`) instead of a grid. Every point is resolved first,
    so a bad key fails before any run."""
    from wayside import recommend
    from wayside.scenario import scenario_text

    if runs < 1:
        raise SweepError(f"--runs {runs}: give at least 1")
    if recommendations and grid:
        raise SweepError("--recommendations and --grid: give one or the other")
    spec = scenario_spec(scenario)
    text = scenario_text(spec)
    skipped: list[tuple[str, str]] = []
    if recommendations:
        points, skipped = recommend.points(text, tuple(overrides))
    else:
        points = grid_points(grid)
    jobs: list[SweepJob] = []
    manifest_points = []
    name = None
    for i, (label, point_overrides) in enumerate(points):
        all_overrides = tuple(overrides) + point_overrides
        try:
            resolved = _native.resolve(text, list(all_overrides))
        except _native.ScenarioError as e:
            raise SweepError(f"{label or 'scenario'}: {e}") from None
        if name is None:
            import tomllib

            name = tomllib.loads(resolved).get("name", Path(scenario).stem)
        sub = f"p{i}" if grid or recommendations else ""
        entries = []
        for k in range(runs):
            seed = base_seed + k
            rel = f"{sub}/seed{seed}" if sub else f"seed{seed}"
            jobs.append(SweepJob(spec, all_overrides, seed, str((out / rel).resolve())))
            entries.append({"seed": seed, "dir": rel})
        manifest_points.append({"label": label, "overrides": list(all_overrides), "runs": entries})
    manifest = {
        "scenario": name, "source": scenario, "runs": runs, "base_seed": base_seed,
        "grid": {k: list(v) for k, v in grid}, "overrides": list(overrides), "points": manifest_points,
        "recommendations": recommendations, "skipped": [{"name": n, "reason": r} for n, r in skipped],
    }
    return jobs, manifest


def sweep(scenario: str, runs: int, out: str | Path, grid: Sequence[tuple[str, Sequence[str]]] = (),
          base_seed: int = 1, overrides: Sequence[str] = (), executor: str = "local",
          workers: int | None = None, progress: ProgressFn | None = None,
          recommendations: bool = False) -> dict[str, Any]:
    """Runs a sweep (see the module doc) and returns its manifest, also
    written to OUT/manifest.json."""
    out = Path(out)
    jobs, manifest = plan(scenario, runs, grid, out, base_seed, overrides, recommendations)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"--out {out}: cannot be created ({e.strerror or e})") from None
    entries = [e for p in manifest["points"] for e in p["runs"]]
    started = time.perf_counter()
    for i, outcome in run_jobs(execute_run, jobs, executor=executor, workers=workers, progress=progress):
        entries[i].update(outcome)
    manifest["wall_s"] = time.perf_counter() - started
    manifest["executor"] = executor
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    f = Path(directory) / MANIFEST
    if not f.is_file():
        return None
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except ValueError as e:
        raise SweepError(f"{f}: not a readable manifest ({e})") from None
