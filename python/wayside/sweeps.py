"""`wayside sweep` and `wayside.sweep(...)`: many runs of one scenario —
seeds times points of overrides — on local processes or a Dask cluster,
each saved as a run directory (with its drive-by digest when the scenario
is a drive-by past one AP with a bulk TCP flow between it and the car), plus a manifest.json that
`wayside report` reads, and a table of the data every run delivered, in all
and per flow.

The points: the product of the `--grid` lists (first key slowest), times
the `--zip` lists taken in step (all of one length: the first values
together, then the second ...). A key may name several keys joined by
commas, which all take each value (`node.ap2.x,node.ap3.x=...`).

Layout of the output directory::

    manifest.json            scenario, grid, seeds, and every run's directory and outcome
    seed1/ seed2/ ...        without a grid
    p0/seed1/ p1/seed1/ ...  with a grid: one directory per point, or per
                             recommendation (--recommendations)
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

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


Grid = Sequence[tuple[str, Sequence[str]]]


def parse_grid(specs: Sequence[str], option: str = "--grid") -> list[tuple[str, list[str]]]:
    """`--grid KEY=V1,V2,...` (or `--zip`) options as (key, values); values
    are written as for `--set` (TOML, or plain text taken as a string). KEY
    may be several keys joined by commas, which all take each value."""
    grid: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for spec in specs:
        key, sep, values = spec.partition("=")
        keys = [k.strip() for k in key.split(",")]
        if not sep or not all(keys):
            raise SweepError(f"{option} {spec!r}: write KEY=V1,V2,... or KEY1,KEY2=V1,V2,... "
                             f"(e.g. {option} 'mac.rate=\"11 Mbps\",\"54 Mbps\"')")
        vals = split_values(values)
        if any(not v for v in vals):
            raise SweepError(f"{option} {spec!r}: an empty value; separate values with single commas")
        for k in keys:
            if k in seen:
                raise SweepError(f"{option} {k}: given twice; list every value of a key in one --grid or --zip")
            seen.add(k)
        grid.append((",".join(keys), vals))
    return grid


def grid_points(grid: Grid, zipped: Grid = ()) -> list[tuple[str, tuple[str, ...]]]:
    """(label, overrides) for every point: the product of the grid's lists,
    each with every step of the zipped lists (which must be of one length)."""
    both = {k for key, _ in grid for k in key.split(",")} & {k for key, _ in zipped for k in key.split(",")}
    if both:
        raise SweepError(f"{', '.join(sorted(both))}: in both --grid and --zip; give a key in one of them")
    lengths = {k: len(v) for k, v in zipped}
    if len(set(lengths.values())) > 1:
        raise SweepError("--zip: the lists differ in length (" + ", ".join(f"{k}: {n}" for k, n in lengths.items())
                         + "); zipped keys take their values in step, so give each the same number")
    axes = [[((k, x),) for x in v] for k, v in grid]
    if zipped:
        axes.append([tuple((k, v[i]) for k, v in zipped) for i in range(len(zipped[0][1]))])
    points = []
    for combo in itertools.product(*axes):
        overrides = tuple(f"{k}={v}" for step in combo for keys, v in step for k in keys.split(","))
        label = ", ".join(f"{keys}={v}" for step in combo for keys, v in step)
        points.append((label, overrides))
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
    from wayside import breakdown, driveby
    from wayside.runner import run

    started = time.perf_counter()
    try:
        result = run(job.scenario, seed=job.seed, overrides=list(job.overrides))
        directory = Path(job.directory)
        result.save(directory)
        d = None  # digested only for a drive-by past one AP with a bulk TCP flow
        if driveby.single_pass(result.scenario):
            try:
                d = driveby.digest(result, name=directory.name)
            except ValueError:
                pass
        if d is not None:
            (directory / driveby.DIGEST_FILE).write_text(d.to_json(), encoding="utf-8")
        flows = breakdown.flows(result)
        return {"status": "ok", "wall_s": time.perf_counter() - started,
                "data_mb": float(flows["data_mb"].sum()),
                "flows": {breakdown.flow_label(f): f["data_mb"] for f in flows.iter_rows(named=True)},
                "driveby_mb": d.data_mb if d is not None else None}
    except BaseException as e:  # report it in the manifest, keep going
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return {"status": "error", "message": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - started}


def plan(scenario: str, runs: int, grid: Grid, out: Path, base_seed: int = 1, overrides: Sequence[str] = (),
         recommendations: bool = False, zipped: Grid = ()) -> tuple[list[SweepJob], dict[str, Any]]:
    """The jobs of a sweep and its manifest (outcomes not filled in yet).
    With `recommendations` the points are the scenario as it is, each of
    Hadaller's recommendations it accepts and all of them together
    (`wayside.recommend`) instead of a grid. Every point is resolved first,
    so a bad key fails before any run."""
    from wayside import recommend
    from wayside.scenario import scenario_text

    if runs < 1:
        raise SweepError(f"--runs {runs}: give at least 1")
    if recommendations and (grid or zipped):
        raise SweepError("--recommendations and --grid/--zip: give one or the other")
    spec = scenario_spec(scenario)
    text = scenario_text(spec)
    skipped: list[tuple[str, str]] = []
    if recommendations:
        points, skipped = recommend.points(text, tuple(overrides))
    else:
        points = grid_points(grid, zipped)
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
        sub = f"p{i}" if grid or zipped or recommendations else ""
        entries = []
        for k in range(runs):
            seed = base_seed + k
            rel = f"{sub}/seed{seed}" if sub else f"seed{seed}"
            jobs.append(SweepJob(spec, all_overrides, seed, str((out / rel).resolve())))
            entries.append({"seed": seed, "dir": rel})
        manifest_points.append({"label": label, "overrides": list(all_overrides), "runs": entries})
    manifest = {
        "scenario": name, "source": scenario, "runs": runs, "base_seed": base_seed,
        "grid": {k: list(v) for k, v in grid}, "zip": {k: list(v) for k, v in zipped},
        "overrides": list(overrides), "points": manifest_points,
        "recommendations": recommendations, "skipped": [{"name": n, "reason": r} for n, r in skipped],
    }
    return jobs, manifest


def sweep(scenario: str, runs: int, out: str | Path, grid: Grid = (), base_seed: int = 1,
          overrides: Sequence[str] = (), executor: str = "local", workers: int | None = None,
          progress: ProgressFn | None = None, recommendations: bool = False, zipped: Grid = ()) -> dict[str, Any]:
    """Runs a sweep (see the module doc) and returns its manifest, also
    written to OUT/manifest.json."""
    out = Path(out)
    jobs, manifest = plan(scenario, runs, grid, out, base_seed, overrides, recommendations, zipped)
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


def runs_table(manifest: dict[str, Any]) -> pl.DataFrame:
    """One row per run of a sweep's manifest: point (its label), index of
    the point, seed, status, data_mb (application data delivered over all
    flows) and one column per flow, "MB FROM→TO"."""
    rows = []
    flows: dict[str, None] = {}
    for i, p in enumerate(manifest["points"]):
        for r in p["runs"]:
            per_flow = r.get("flows") or {}
            flows.update(dict.fromkeys(per_flow))
            rows.append({"point": p["label"] or "(scenario as is)", "p": i, "seed": r["seed"],
                         "status": r.get("status", "not run"), "data_mb": r.get("data_mb"),
                         **{f"MB {k}": v for k, v in per_flow.items()}})
    schema = {"point": pl.Utf8, "p": pl.Int64, "seed": pl.Int64, "status": pl.Utf8, "data_mb": pl.Float64,
              **{f"MB {k}": pl.Float64 for k in flows}}
    return pl.DataFrame(rows, schema=schema)


def _as_grid(values: Mapping[str, Sequence[Any] | str] | None) -> list[tuple[str, list[str]]]:
    """A dict of key -> values (Python values or TOML text) as grid lists."""
    out = []
    for key, vals in (values or {}).items():
        if isinstance(vals, str):
            vals = split_values(vals)
        out.append((key, [v if isinstance(v, str) and _is_toml(v) else _toml(v) for v in vals]))
    return parse_grid([f"{k}={','.join(v)}" for k, v in out])


def _is_toml(text: str) -> bool:
    import tomllib

    try:
        tomllib.loads(f"v = {text}")
        return True
    except tomllib.TOMLDecodeError:
        return False


def _toml(value: Any) -> str:
    """A Python value as a one-line TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def run_sweep(scenario: str, runs: int = 5, grid: Mapping[str, Sequence[Any] | str] | None = None,
              zip: Mapping[str, Sequence[Any] | str] | None = None, out: str | Path | None = None,
              seed: int = 1, overrides: Sequence[str] = (), workers: int | None = None,
              executor: str = "local") -> pl.DataFrame:
    """Runs a sweep and returns `runs_table` of it (exported as
    `wayside.sweep`). `grid` and `zip` map a key (or keys joined by commas)
    to its values, Python values or TOML text: `grid={"mac.rate":
    ["11 Mbps", "54 Mbps"]}`, `zip={"node.ap2.position": [[300, 10], [400,
    10]], "node.ap3.position": [[600, 10], [800, 10]]}`. The runs are saved
    under `out` (a temporary directory, removed afterwards, if None)."""
    import tempfile

    from wayside.jobs import ExecutorError

    kwargs = dict(grid=_as_grid(grid), base_seed=seed, overrides=overrides, executor=executor, workers=workers,
                  zipped=_as_grid(zip))
    try:
        if out is not None:
            return runs_table(sweep(scenario, runs, out, **kwargs))
        with tempfile.TemporaryDirectory(prefix="wayside-sweep-") as tmp:
            return runs_table(sweep(scenario, runs, tmp, **kwargs))
    except ExecutorError as e:
        main = sys.modules.get("__main__")
        if executor == "local" and getattr(main, "__file__", None) and getattr(main, "__spec__", None) is None:
            raise SweepError(f"{e}. The workers start by importing your script {main.__file__}: call wayside.sweep "
                             "under `if __name__ == \"__main__\":` (or give workers=1)") from None
        raise
