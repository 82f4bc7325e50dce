"""Running validation targets: each target's scenario resolved, one
simulation per (scenario, overrides, seed) measured for every target that
wants it, over local processes or a Dask cluster (`wayside.jobs`), and the
same targets on several disjoint sets of seeds."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from wayside import engine
from wayside import metrics as metrics_module
from wayside.jobs import ProgressFn, run_jobs
from wayside.scenario import builtin_scenarios, scenario_text
from wayside.validate.judging import (
    IN_SAMPLE,
    OUT_OF_SAMPLE,
    UNFITTED,
    Row,
    aggregate,
    error_row,
    judge,
    monotone_row,
    ratio_row,
)
from wayside.validate.targets import Point, Target, ValidationFileError


def seed_set(targets: Sequence[Target], index: int, runs: int | None = None) -> list[Target]:
    """The targets moved to seed set `index`: set j runs seeds
    base_seed + j·n .. base_seed + (j + 1)·n − 1, n being the target's runs
    (or `runs`), so that the sets share no seed and set 0 is the file's own."""
    return [replace(t, base_seed=t.base_seed + index * (runs if runs is not None else t.runs)) for t in targets]


def resolve_scenario(spec: str, file: str) -> str:
    """A built-in name as is; otherwise an existing path (absolute, or
    relative to the validation file's directory, its parent, or the working
    directory). Raises ScenarioError naming the scenario when none exists."""
    if engine.builtin_text(spec) is not None:
        return spec
    p = Path(spec)
    vdir = Path(file).parent
    candidates = [p] if p.is_absolute() else [vdir.parent / p, vdir / p, Path.cwd() / p]
    if not p.suffix and len(p.parts) == 1:  # a scenario in a checkout, not compiled in (yet)
        candidates += [vdir.parent / "scenarios" / f"{spec}.toml", Path.cwd() / "scenarios" / f"{spec}.toml"]
    for c in candidates:
        if c.is_file():
            return str(c.resolve())
    raise engine.ScenarioError(
        f"scenario '{spec}': no such built-in scenario or file; built-in: {', '.join(builtin_scenarios())}"
    )


def calibrated_on(spec: str, text: str) -> list[str]:
    """The scenario's `calibrated_on` patterns ("paper/target", globs).
    Raises ValidationFileError naming the scenario for a malformed entry."""
    raw = tomllib.loads(text).get("calibrated_on", [])
    bad = [p for p in raw if not isinstance(p, str) or p.count("/") != 1 or not all(p.split("/"))]
    if not isinstance(raw, list) or bad:
        raise ValidationFileError(
            f"scenario {spec}: calibrated_on must be a list of \"paper/target\" strings (globs allowed); "
            f"got {bad or raw!r}"
        )
    return raw


def _is_calibrated(t: Target, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(f"{t.paper}/{t.name}", p) for p in patterns)


@dataclass(frozen=True)
class Request:
    key: tuple[int, int, int]  # (target, point, run)
    metric: str
    metric_args: dict[str, Any]
    ship: str | None  # an across-runs metric: send back the "result" or its "digest"; None: the value


@dataclass
class Job:
    """One simulation run and every measurement wanted from it (targets
    that share a scenario, overrides and seed share the run)."""

    scenario: str
    overrides: tuple[str, ...]
    seed: int
    requests: list[Request] = field(default_factory=list)


def execute(job: Job) -> list[tuple[tuple[int, int, int], str, Any]]:
    """Runs one job (in a worker process). For each request: (key, "ok",
    value, RunResult or drive-by digest) or (key, "error", message)."""
    import wayside
    from wayside import driveby

    try:
        result = wayside.run(job.scenario, seed=job.seed, overrides=list(job.overrides))
    except ValueError as e:  # ScenarioError
        return [(r.key, "error", str(e)) for r in job.requests]
    except BaseException as e:  # a panic in the engine: report it, keep going
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return [(r.key, "error", f"run with seed {job.seed} failed: {type(e).__name__}: {e}") for r in job.requests]
    out = []
    digest: Any = None
    for r in job.requests:
        if r.ship == "result":
            out.append((r.key, "ok", result))
            continue
        try:
            if r.ship == "digest":
                digest = digest or driveby.digest(result, name=f"seed{job.seed}")
                out.append((r.key, "ok", digest))
                continue
            out.append((r.key, "ok", float(metrics_module.METRICS[r.metric](result, **r.metric_args))))
        except ValueError as e:
            out.append((r.key, "error", f"metric {r.metric}: {e}"))
        except Exception as e:
            out.append((r.key, "error", f"metric {r.metric}: {type(e).__name__}: {e}"))
    return out


@dataclass
class _Plan:
    """The simulations that a list of targets needs, and what is known
    before running them."""

    work: list[Job] = field(default_factory=list)
    point_error: dict[tuple[int, int], str] = field(default_factory=dict)  # (target, point): why it cannot run
    calibrated: set[int] = field(default_factory=set)  # targets their scenario was calibrated on
    fitted: set[int] = field(default_factory=set)  # targets whose scenario was calibrated on any target


def _plan(targets: Sequence[Target], runs: int | None) -> _Plan:
    plan = _Plan()
    jobs_by_run: dict[tuple[str, tuple[str, ...], int], Job] = {}
    for ti, t in enumerate(targets):
        n = runs if runs is not None else t.runs
        fn = metrics_module.METRICS[t.metric]
        ship = metrics_module.run_input(fn) if metrics_module.is_across_runs(fn) else None
        for pi, p in enumerate(t.points):
            overrides = t.overrides + p.overrides
            try:
                spec = resolve_scenario(t.scenario, t.file)
                text = scenario_text(spec)
                engine.resolve(text, list(overrides))
                patterns = calibrated_on(spec, text)
                if patterns:
                    plan.fitted.add(ti)
                if _is_calibrated(t, patterns):
                    if len(t.points) > 1:
                        raise ValidationFileError(
                            f"scenario {spec} is calibrated on {t.paper}/{t.name}, a table of {len(t.points)} "
                            "rows: fit at most one row of a table and predict the rest (give the fitted row "
                            "a target of its own)"
                        )
                    plan.calibrated.add(ti)
            except ValueError as e:
                plan.point_error[(ti, pi)] = str(e)
                continue
            for i in range(n):
                seed = t.base_seed + i
                job = jobs_by_run.setdefault((spec, overrides, seed), Job(spec, overrides, seed))
                job.requests.append(Request((ti, pi, i), t.metric, t.metric_args, ship))
    plan.work = list(jobs_by_run.values())
    return plan


def _point_row(t: Target, p: Point, got: list[tuple[str, Any]]) -> Row:
    """A grid point's row from its runs' answers (status, value)."""
    errors = [v for s, v in got if s == "error"]
    if errors:
        return error_row(t, p, errors[0])
    fn = metrics_module.METRICS[t.metric]
    if not metrics_module.is_across_runs(fn):
        values = [float(v) for _, v in got]
        return judge(t, p, aggregate(values, t.aggregate), values, len(got))
    try:
        measured = float(fn([v for _, v in got], **t.metric_args))
    except Exception as e:
        msg = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
        return error_row(t, p, f"metric {t.metric}: {msg}")
    return judge(t, p, measured, [measured], len(got))


def _run(targets: Sequence[Target], runs: int | None, jobs: int | None, progress: ProgressFn | None,
         executor: str) -> tuple[list[Row], int]:
    """`run_targets`, and how many simulations it took."""
    plan = _plan(targets, runs)
    outcomes: dict[tuple[int, int, int], tuple[str, Any]] = {}
    for _, answers in run_jobs(execute, plan.work, executor=executor, workers=jobs, progress=progress):
        for key, status, value in answers:
            outcomes[key] = (status, value)

    rows: list[Row] = []
    for ti, t in enumerate(targets):
        n = runs if runs is not None else t.runs
        point_rows = []
        for pi, p in enumerate(t.points):
            if (ti, pi) in plan.point_error:
                point_rows.append(error_row(t, p, plan.point_error[(ti, pi)]))
            else:
                point_rows.append(_point_row(t, p, [outcomes[(ti, pi, i)] for i in range(n)]))
        if t.monotone:
            point_rows.append(monotone_row(t, point_rows))
        if t.ratio:
            point_rows.append(ratio_row(t, point_rows))
        for row in point_rows:
            row.calibrated = ti in plan.calibrated
            row.sample = IN_SAMPLE if row.calibrated else OUT_OF_SAMPLE if ti in plan.fitted else UNFITTED
        rows.extend(point_rows)
    return rows, len(plan.work)


def run_targets(targets: Sequence[Target], runs: int | None = None, jobs: int | None = None,
                progress: ProgressFn | None = None, executor: str = "local") -> list[Row]:
    """Runs every target (all runs of all grid points, in parallel over `jobs`
    local processes or on a Dask cluster, see `wayside.jobs`; runs with the
    same scenario, overrides and seed are simulated once) and returns the
    outcome rows in file order."""
    return _run(targets, runs, jobs, progress, executor)[0]


def run_seed_sets(targets: Sequence[Target], sets: int, runs: int | None = None, jobs: int | None = None,
                  progress: ProgressFn | None = None, executor: str = "local",
                  starting: Callable[[int], None] | None = None) -> tuple[list[list[Row]], int]:
    """Runs the targets on `sets` disjoint sets of seeds (`seed_set`), one set
    after the other, as `run_targets` does; returns every set's rows (each
    row's `seed_set` says which set it is from) and the number of
    simulations. `starting(j)` is called as set j starts, `progress(done,
    total)` as that set's simulations finish."""
    out: list[list[Row]] = []
    simulations = 0
    for j in range(sets):
        if starting is not None:
            starting(j)
        rows, n = _run(seed_set(targets, j, runs), runs, jobs, progress, executor)
        for r in rows:
            r.seed_set = j
        out.append(rows)
        simulations += n
    return out, simulations
