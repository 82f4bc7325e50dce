"""Validation against the papers: `wayside validate` reads `validation/*.toml`,
runs the scenario behind each published figure, measures it, and compares.

File format
-----------

One file per paper. Every target names a published value, the scenario that
reproduces it, the metric that measures it (a function in
`wayside.metrics`), and how close is close enough::

    [meta]
    paper = "hadaller-2007"          # defaults to the file name
    title = "Vehicular opportunistic communication under the microscope"
    base_seed = 1                    # run i of every target uses seed base_seed + i

    [defaults]                       # optional: any target key, for every target
    scenario = "hadaller-highway"
    overrides = ['duration="100 s"'] # defaults' overrides come first, then the target's

    [[target]]
    name = "table3-54mbps"           # unique in the file; --only selects by it (globs allowed)
    source = "Hadaller et al. 2007, Table 3"
    scenario = "static-lab"          # built-in name, or a TOML path relative to the repository
                                     # (the validation directory's parent), this file, or the
                                     # working directory; a bare name not built in is also looked
                                     # up as scenarios/NAME.toml in the repository
    overrides = ['mac.rate="54 Mbps"']   # as `wayside run --set`
    runs = 1                         # seeds base_seed .. base_seed + runs - 1; --runs N replaces it
    metric = "tcp_goodput_mbps"      # a function in wayside.metrics
    metric_args = { receiver = "client", skip = "2 s" }
    aggregate = "median"             # over runs: median (default) | mean | min | max | pNN
                                     # (percentile, e.g. p90) | none (the metric takes every
                                     # run at once, e.g. supremum_data_mb)
    expected = 29.3                  # the paper's figure
    tolerance = { relative = 0.10 }  # one of: relative = r   -> expected·(1 ± r)
                                     #         absolute = a   -> expected ± a
                                     #         factor = f     -> expected/f .. expected·f
                                     #         range = [lo, hi] (expected then optional, shown only)
    unit = "Mb/s"                    # optional, for the table

A target with a `grid` is run once per grid point (the same seeds at every
point), and measured and checked per point::

    [[target]]
    name = "udp-mobile-volume"
    grid = { "node.car.mobility.speed" = ["80 km/h", "120 km/h", "180 km/h"] }
    expected = [8.8, 7.8, 3.7]       # one per point (or one number for all points)
    tolerance = { relative = 0.35 }  # applies to each point
    monotone = "decreasing"          # optional: the measured values must fall (or "increasing": rise)
                                     # strictly from point to point

Several grid keys vary together (zipped, equal lengths), not as a product.
Each point's value becomes an override `key=value` after the target's own.

A grid target may also check the ratio of two of its points' measured
values (the points named by their labels), with its own expected value and
tolerance; it adds one row::

    grid = { "node.ap.rate_control.preset" = ["default", "tuned"] }
    ratio = { of = "default", to = "tuned", expected = 0.25, tolerance = { range = [0.15, 0.5] } }

A ratio or trend target whose points have no published figure of their
own leaves out `expected` and `tolerance`: its points are then measured
and shown, never judged or counted; only the ratio or trend row is.

`to = "best"` compares with whichever point measured highest (for "is this
point close to the best?", e.g. a packet size against every other).

Command line::

    wayside validate [TARGETS...] [--runs N] [--jobs J] [--only NAME] [--out DIR]
                     [--executor E] [--details] [--seed-sets K]

TARGETS are validation files, directories, or paper names (file stems in
validation/); default: every file in validation/. `--runs N` replaces every
target's runs (a quick subset for CI); `--jobs J` worker processes (default:
the number of CPUs; `--executor dask://HOST:PORT` runs them on a Dask
cluster instead, see `wayside.jobs`); `--only` selects targets by name, "paper/name" or
"name [point]" (globs, repeatable); `--out DIR` also writes
DIR/validation.json and DIR/validation.csv. Runs with the same scenario,
overrides and seed are simulated once and measured for every target that
wants them. `--seed-sets K` measures everything K times on disjoint seeds
(`seed_set`: set j shifts every target's seeds by j × its runs) and shows,
per row, in how many sets it passed and the range of its values over the
sets (`render_sets`, `tally_sets`); the files then hold every set's rows,
told apart by `seed_set`.

Calibration: a scenario lists the targets it was fitted to in its
top-level `calibrated_on` ("paper/target", globs allowed). Those rows are
measured and shown apart, as "held" or "DRIFT", and never counted as
reproduced: the summary counts independent targets only.

Outcome, one line per target (per grid point, plus one for a monotone or
ratio check), fitting 80 columns: PASS, MISS or ERROR, the target, the
measured value, the paper's, and the deviation. `--details` adds under each
its source, scenario, metric, allowed range, runs, and how far outside it
missed (or the error: a scenario that does not exist or does not resolve,
a metric that cannot be computed). Exit code 0 if everything passes or
holds, 1 if any target misses or drifts, 2 on bad input (a malformed file,
an unknown metric or target, any ERROR).
"""

from __future__ import annotations

import csv
import fnmatch
import inspect
import json
import math
import statistics
import textwrap
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from wayside import metrics as metrics_module
from wayside.jobs import ProgressFn, run_jobs

TOLERANCE_KINDS = ("relative", "absolute", "factor", "range")
# The status of a grid point that has no figure of its own: measured for its
# target's ratio or trend, shown, never judged or counted.
MEASURED = "MEASURED"
AGGREGATES = "median, mean, min, max, pNN (percentile 0–100, e.g. p90), none"
TARGET_KEYS = {
    "name", "source", "scenario", "overrides", "runs", "base_seed", "metric", "metric_args",
    "aggregate", "expected", "tolerance", "grid", "monotone", "ratio", "unit", "notes",
}
META_KEYS = {"paper", "title", "base_seed", "notes"}


class ValidationFileError(ValueError):
    """A validation file (or a command-line selection) that cannot be used."""


# ---------------------------------------------------------------- model


@dataclass(frozen=True)
class Tolerance:
    kind: str
    value: float | tuple[float, float]

    def bounds(self, expected: float | None) -> tuple[float, float]:
        if self.kind == "range":
            lo, hi = self.value  # type: ignore[misc]
            return float(lo), float(hi)
        assert expected is not None
        v = float(self.value)  # type: ignore[arg-type]
        if self.kind == "relative":
            a, b = expected * (1 - v), expected * (1 + v)
            return min(a, b), max(a, b)
        if self.kind == "absolute":
            return expected - v, expected + v
        return expected / v, expected * v  # factor

    def describe(self) -> str:
        if self.kind == "range":
            lo, hi = self.value  # type: ignore[misc]
            return f"{fmt(lo)}–{fmt(hi)}"
        if self.kind == "relative":
            return f"±{float(self.value) * 100:g}%"  # type: ignore[arg-type]
        if self.kind == "absolute":
            return f"±{fmt(float(self.value))}"  # type: ignore[arg-type]
        return f"×/÷{fmt(float(self.value))}"  # type: ignore[arg-type]


@dataclass(frozen=True)
class Point:
    label: str  # "" without a grid
    overrides: tuple[str, ...]
    expected: float | None


@dataclass(frozen=True)
class Ratio:
    """Measured value at grid point `of` over that at grid point `to`."""

    of: str
    to: str
    expected: float | None
    tolerance: Tolerance


@dataclass(frozen=True)
class Target:
    file: str
    paper: str
    name: str
    source: str
    scenario: str
    overrides: tuple[str, ...]
    runs: int
    base_seed: int
    metric: str
    metric_args: dict[str, Any]
    aggregate: str
    tolerance: Tolerance | None  # None: the points are measured only, for the ratio or trend
    points: tuple[Point, ...]
    monotone: str | None
    unit: str
    ratio: Ratio | None = None

    def display(self, point: Point) -> str:
        return f"{self.name} [{point.label}]" if point.label else self.name


@dataclass
class Row:
    """One line of the outcome table."""

    paper: str
    target: str
    point: str
    source: str
    scenario: str
    metric: str
    unit: str
    expected: float | None
    measured: float | None
    lo: float | None
    hi: float | None
    allowed: str
    status: str  # PASS | MISS | ERROR | MEASURED
    detail: str
    runs: int
    values: list[float] = field(default_factory=list)
    kind: str = "value"  # "value", "ratio" (of two grid points), or "monotone": the grid's trend (then `shown` holds the sequence)
    shown: str = ""
    calibrated: bool = False  # the scenario was calibrated on this target: shown, never counted as reproduced
    seed_set: int = 0  # which set of seeds measured it (`seed_sets`)

    @property
    def name(self) -> str:
        """The target, with its grid point in brackets."""
        return f"{self.target} [{self.point}]" if self.point else self.target

    @property
    def deviation(self) -> float | None:
        if self.expected in (None, 0) or self.measured is None or math.isnan(self.measured):
            return None
        return (self.measured - self.expected) / abs(self.expected)


def fmt(v: float | None) -> str:
    """A number for the table: 4 significant digits, thousands grouped."""
    if v is None:
        return ""
    if math.isnan(v):
        return "undefined"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


# ---------------------------------------------------------------- loading


def _toml_value(v: Any) -> str:
    """`v` as an inline TOML value (for a `key=value` override)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v), ensure_ascii=False)  # a TOML basic string


def _label(v: Any) -> str:
    return v if isinstance(v, str) else _toml_value(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _parse_tolerance(where: str, tol: Any) -> Tolerance:
    allowed = "{ relative = 0.1 }, { absolute = 0.5 }, { factor = 2 } or { range = [lo, hi] }"
    if not isinstance(tol, dict) or len(tol) != 1:
        raise ValidationFileError(f"{where}tolerance: {tol!r} is not usable; give exactly one of {allowed}")
    ((kind, value),) = tol.items()
    if kind not in TOLERANCE_KINDS:
        raise ValidationFileError(f"{where}tolerance: unknown kind '{kind}'; allowed: {', '.join(TOLERANCE_KINDS)}")
    if kind == "range":
        if not (isinstance(value, list) and len(value) == 2 and all(map(_is_number, value)) and value[0] <= value[1]):
            raise ValidationFileError(f"{where}tolerance.range: {value!r} is not usable; give [lo, hi] with lo <= hi")
        return Tolerance(kind, (float(value[0]), float(value[1])))
    if not _is_number(value) or value < 0 or (kind == "factor" and value < 1):
        need = "a number >= 1" if kind == "factor" else "a number >= 0"
        raise ValidationFileError(f"{where}tolerance.{kind}: {value!r} is not usable; give {need}")
    return Tolerance(kind, float(value))


def _check_aggregate(where: str, agg: Any) -> str:
    if isinstance(agg, str):
        if agg in ("median", "mean", "min", "max", "none"):
            return agg
        if agg.startswith("p"):
            try:
                q = float(agg[1:])
            except ValueError:
                q = -1.0
            if 0 <= q <= 100:
                return agg
    raise ValidationFileError(f"{where}aggregate: {agg!r} is not usable; allowed: {AGGREGATES}")


def _check_metric(where: str, name: Any, args: Any, aggregate: str) -> None:
    if not isinstance(name, str) or name not in metrics_module.METRICS:
        raise ValidationFileError(
            f"{where}metric: unknown metric {name!r}; available: {', '.join(sorted(metrics_module.METRICS))}"
        )
    if not isinstance(args, dict):
        raise ValidationFileError(f"{where}metric_args: {args!r} is not a table; write metric_args = {{ key = value, ... }}")
    fn = metrics_module.METRICS[name]
    params = list(inspect.signature(fn).parameters)[1:]
    try:
        inspect.signature(fn).bind(None, **args)
    except TypeError as e:
        raise ValidationFileError(f"{where}metric_args: {e} (metric {name} takes {', '.join(params)})") from None
    across = metrics_module.is_across_runs(fn)
    if across and aggregate != "none":
        raise ValidationFileError(f"{where}aggregate: metric {name} takes every run at once; use aggregate = \"none\"")
    if not across and aggregate == "none":
        raise ValidationFileError(f"{where}aggregate: \"none\" is for metrics that take every run at once; {name} measures one run")


def _grid_points(where: str, grid: Any) -> list[tuple[str, tuple[str, ...]]]:
    if grid is None:
        return [("", ())]
    if not isinstance(grid, dict) or not grid:
        raise ValidationFileError(f"{where}grid: give a table of key = [values], e.g. grid = {{ \"mac.rate\" = [\"6 Mbps\", \"54 Mbps\"] }}")
    lengths = set()
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValidationFileError(f"{where}grid.{key}: {values!r} is not a non-empty list of values")
        lengths.add(len(values))
    if len(lengths) != 1:
        raise ValidationFileError(f"{where}grid: the lists vary together and must have equal lengths; got {sorted(lengths)}")
    n = lengths.pop()
    points = []
    for i in range(n):
        items = [(k, v[i]) for k, v in grid.items()]
        overrides = tuple(f"{k}={_toml_value(v)}" for k, v in items)
        label = _label(items[0][1]) if len(items) == 1 else ", ".join(f"{k}={_label(v)}" for k, v in items)
        points.append((label, overrides))
    return points


# A ratio's `to` that names the grid point measured highest.
BEST = "best"


def _parse_ratio(where: str, raw: Any, labels: list[str]) -> Ratio | None:
    if raw is None:
        return None
    usage = "give { of = POINT, to = POINT, expected = R, tolerance = {...} } with POINT a grid label"
    if not isinstance(raw, dict) or set(raw) - {"of", "to", "expected", "tolerance"} or not {"of", "to", "tolerance"} <= set(raw):
        raise ValidationFileError(f"{where}ratio: {raw!r} is not usable; {usage}")
    if len(labels) < 2:
        raise ValidationFileError(f"{where}ratio: needs a grid of at least 2 points")
    for key in ("of", "to"):
        if raw[key] not in labels and not (key == "to" and raw[key] == BEST):
            also = f', or "{BEST}"' if key == "to" else ""
            raise ValidationFileError(f"{where}ratio.{key}: {raw[key]!r} is not a grid point; points: {', '.join(labels)}{also}")
    tolerance = _parse_tolerance(f"{where}ratio.", raw["tolerance"])
    expected = raw.get("expected")
    if expected is not None and not _is_number(expected):
        raise ValidationFileError(f"{where}ratio.expected: {expected!r} is not a number")
    if expected is None and tolerance.kind != "range":
        raise ValidationFileError(f"{where}ratio.expected: missing; required unless the tolerance is a range")
    return Ratio(raw["of"], raw["to"], None if expected is None else float(expected), tolerance)


def _load_target(path: Path, paper: str, meta: dict, defaults: dict, raw: Any, index: int) -> Target:
    if not isinstance(raw, dict):
        raise ValidationFileError(f"{path}: target[{index}] is not a table; write [[target]] sections")
    name = raw.get("name")
    where = f"{path}: target '{name}': " if isinstance(name, str) else f"{path}: target[{index}]: "
    unknown = sorted(set(raw) - TARGET_KEYS)
    if unknown:
        raise ValidationFileError(f"{where}unknown key '{unknown[0]}'; allowed: {', '.join(sorted(TARGET_KEYS))}")
    if not isinstance(name, str) or not name.strip():
        raise ValidationFileError(f"{where}name: give each target a non-empty name")
    t = {**defaults, **raw}
    t["overrides"] = list(defaults.get("overrides", [])) + list(raw.get("overrides", []))
    for key in ("scenario", "metric"):
        if key not in t:
            raise ValidationFileError(f"{where}{key}: missing (required: scenario, metric, tolerance)")
    measured_only = "tolerance" not in t and t.get("expected") is None and bool(t.get("ratio") or t.get("monotone"))
    if "tolerance" not in t and not measured_only:
        raise ValidationFileError(
            f"{where}tolerance: missing; required unless the target only checks a ratio or a trend of its points"
            " (no expected value)"
        )
    scenario = t["scenario"]
    if not isinstance(scenario, str) or not scenario.strip():
        raise ValidationFileError(f"{where}scenario: {scenario!r} is not a scenario name or path")
    overrides = t["overrides"]
    if not all(isinstance(o, str) and "=" in o for o in overrides):
        raise ValidationFileError(f"{where}overrides: give a list of \"key=value\" strings, as for wayside run --set")
    runs = t.get("runs", 1)
    if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= 100_000:
        raise ValidationFileError(f"{where}runs: {runs!r} is not usable; give a whole number from 1 to 100000")
    seed = t.get("base_seed", meta.get("base_seed", 1))
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise ValidationFileError(f"{where}base_seed: {seed!r} is not usable; give a whole number from 0 to 2^63-1")
    aggregate = _check_aggregate(where, t.get("aggregate", "median"))
    args = t.get("metric_args", {})
    _check_metric(where, t["metric"], args, aggregate)
    tolerance = None if measured_only else _parse_tolerance(where, t["tolerance"])
    points = _grid_points(where, t.get("grid"))
    expected = t.get("expected")
    if expected is None:
        if tolerance is not None and tolerance.kind != "range":
            raise ValidationFileError(f"{where}expected: missing; required unless tolerance is a range")
        values: list[float | None] = [None] * len(points)
    elif _is_number(expected):
        values = [float(expected)] * len(points)
    elif isinstance(expected, list) and all(map(_is_number, expected)):
        if len(expected) != len(points):
            what = f"{len(points)} grid points" if t.get("grid") is not None else "no grid (give one number)"
            raise ValidationFileError(f"{where}expected: {len(expected)} values for {what}")
        values = [float(v) for v in expected]
    else:
        raise ValidationFileError(f"{where}expected: {expected!r} is not a number or a list of numbers")
    if tolerance is not None and tolerance.kind == "factor" and any(v is not None and v <= 0 for v in values):
        raise ValidationFileError(f"{where}tolerance.factor: needs expected values above 0")
    monotone = t.get("monotone")
    if monotone is not None:
        if monotone not in ("increasing", "decreasing"):
            raise ValidationFileError(f"{where}monotone: {monotone!r} is not allowed; allowed: increasing, decreasing")
        if len(points) < 2:
            raise ValidationFileError(f"{where}monotone: needs a grid of at least 2 points")
    ratio = _parse_ratio(where, t.get("ratio"), [label for label, _ in points])
    unit = t.get("unit", "")
    source = t.get("source", "")
    if not isinstance(unit, str) or not isinstance(source, str):
        raise ValidationFileError(f"{where}unit and source are strings")
    return Target(
        file=str(path),
        paper=paper,
        name=name.strip(),
        source=source,
        scenario=scenario,
        overrides=tuple(overrides),
        runs=runs,
        base_seed=seed,
        metric=t["metric"],
        metric_args=dict(args),
        aggregate=aggregate,
        tolerance=tolerance,
        points=tuple(Point(label, ov, e) for (label, ov), e in zip(points, values)),
        monotone=monotone,
        unit=unit,
        ratio=ratio,
    )


def load_file(path: str | Path) -> list[Target]:
    """Parses and checks one validation file. Raises ValidationFileError."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValidationFileError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise ValidationFileError(f"{path}: not UTF-8 text ({e.reason})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValidationFileError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(doc) - {"meta", "defaults", "target"})
    if unknown:
        raise ValidationFileError(f"{path}: unknown section '{unknown[0]}'; allowed: [meta], [defaults], [[target]]")
    meta = doc.get("meta", {})
    defaults = doc.get("defaults", {})
    if not isinstance(meta, dict) or not isinstance(defaults, dict):
        raise ValidationFileError(f"{path}: [meta] and [defaults] are tables")
    bad = sorted(set(meta) - META_KEYS)
    if bad:
        raise ValidationFileError(f"{path}: meta: unknown key '{bad[0]}'; allowed: {', '.join(sorted(META_KEYS))}")
    bad = sorted(set(defaults) - (TARGET_KEYS - {"name"}))
    if bad:
        raise ValidationFileError(f"{path}: defaults: unknown key '{bad[0]}'; allowed: any target key but name")
    paper = meta.get("paper", path.stem)
    if not isinstance(paper, str):
        raise ValidationFileError(f"{path}: meta.paper: {paper!r} is not a string")
    raw_targets = doc.get("target", [])
    if not isinstance(raw_targets, list) or not raw_targets:
        raise ValidationFileError(f"{path}: no targets; add [[target]] sections")
    targets = [_load_target(path, paper, meta, defaults, raw, i) for i, raw in enumerate(raw_targets)]
    seen: set[str] = set()
    for t in targets:
        if t.name in seen:
            raise ValidationFileError(f"{path}: target '{t.name}': the name is used twice; names must be unique in a file")
        seen.add(t.name)
    return targets


def default_directory() -> Path:
    """validation/ under the working directory, else the source checkout's."""
    here = Path("validation")
    if here.is_dir():
        return here
    checkout = Path(__file__).resolve().parents[2] / "validation"
    return checkout if checkout.is_dir() else here


def find_files(specs: Sequence[str]) -> list[Path]:
    """Validation files for command-line arguments: files, directories (every
    *.toml in them), or a paper name (file stem) in the default directory."""
    base = default_directory()
    if not specs:
        if not base.is_dir():
            raise ValidationFileError("no validation directory: validation/ not found here; give a file or directory")
        specs = [str(base)]
    files: list[Path] = []
    for spec in specs:
        p = Path(spec)
        if p.is_dir():
            found = sorted(p.glob("*.toml"))
            if not found:
                raise ValidationFileError(f"{spec}: no *.toml validation files in this directory")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        elif (base / f"{spec}.toml").is_file():
            files.append(base / f"{spec}.toml")
        else:
            known = ", ".join(sorted(f.stem for f in base.glob("*.toml"))) if base.is_dir() else "none"
            raise ValidationFileError(f"{spec}: no such validation file, directory or paper; papers in {base}: {known}")
    return files


def select(targets: list[Target], only: Sequence[str]) -> list[Target]:
    """Targets matching one of the globs in `only`, by name, "paper/name",
    or "name [grid point]". A glob that matches nothing is an error."""
    if not only:
        return targets

    def names(t: Target) -> list[str]:
        return [t.name, f"{t.paper}/{t.name}"] + [t.display(p) for p in t.points]

    for pattern in only:
        if not any(fnmatch.fnmatchcase(n, pattern) for t in targets for n in names(t)):
            known = ", ".join(t.name for t in targets)
            raise ValidationFileError(f"--only {pattern}: no such target; targets: {known}")
    return [t for t in targets if any(fnmatch.fnmatchcase(n, pattern) for pattern in only for n in names(t))]


# ---------------------------------------------------------------- running


def seed_set(targets: Sequence[Target], index: int, runs: int | None = None) -> list[Target]:
    """The targets moved to seed set `index`: set j runs seeds
    base_seed + j·n .. base_seed + (j + 1)·n − 1, n being the target's runs
    (or `runs`), so that the sets share no seed and set 0 is the file's own."""
    return [replace(t, base_seed=t.base_seed + index * (runs if runs is not None else t.runs)) for t in targets]


def resolve_scenario(spec: str, file: str) -> str:
    """A built-in name as is; otherwise an existing path (absolute or relative
    to the repository, the validation file, or the working directory).
    Raises ScenarioError naming the scenario when none exists."""
    from wayside import _native
    from wayside.scenario import builtin_scenarios

    if _native.builtin_text(spec) is not None:
        return spec
    p = Path(spec)
    vdir = Path(file).parent
    candidates = [p] if p.is_absolute() else [vdir.parent / p, vdir / p, Path.cwd() / p]
    if not p.suffix and len(p.parts) == 1:  # a scenario in the checkout not compiled in (yet)
        candidates.append(vdir.parent / "scenarios" / f"{spec}.toml")
    for c in candidates:
        if c.is_file():
            return str(c.resolve())
    raise _native.ScenarioError(
        f"scenario '{spec}': no such built-in scenario or file; built-in: {', '.join(builtin_scenarios())}"
    )


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


def aggregate(values: Sequence[float], how: str) -> float:
    """Aggregates per-run values; NaN (undefined) runs are left out."""
    vs = sorted(v for v in values if not math.isnan(v))
    if not vs:
        return math.nan
    if how == "median":
        return float(statistics.median(vs))
    if how == "mean":
        return float(statistics.fmean(vs))
    if how == "min":
        return vs[0]
    if how == "max":
        return vs[-1]
    return metrics_module.quantile(vs, float(how[1:]) / 100)  # pNN


def _judge(t: Target, p: Point, measured: float, values: list[float], n_runs: int) -> Row:
    if t.tolerance is None:
        return Row(t.paper, t.name, p.label, t.source, t.scenario, t.metric, t.unit, None, measured, None, None,
                   "", MEASURED, "", n_runs, values)
    lo, hi = t.tolerance.bounds(p.expected)
    undefined = sum(1 for v in values if math.isnan(v))
    if math.isnan(measured):
        status, detail = "MISS", "undefined in every run"
    elif lo <= measured <= hi:
        status, detail = "PASS", ""
    elif measured < lo:
        status, detail = "MISS", f"{fmt(measured)} is {fmt(lo - measured)} below {fmt(lo)}"
    else:
        status, detail = "MISS", f"{fmt(measured)} is {fmt(measured - hi)} above {fmt(hi)}"
    if undefined and not math.isnan(measured):
        detail = (detail + "; " if detail else "") + f"undefined in {undefined} of {n_runs} runs"
    allowed = f"{fmt(lo)}–{fmt(hi)}"
    if t.tolerance.kind != "range":
        allowed += f" ({t.tolerance.describe()})"
    return Row(t.paper, t.name, p.label, t.source, t.scenario, t.metric, t.unit, p.expected, measured, lo, hi,
               allowed, status, detail, n_runs, values)


def _error_row(t: Target, p: Point, message: str) -> Row:
    return Row(t.paper, t.name, p.label, t.source, t.scenario, t.metric, t.unit, p.expected, None, None, None,
               "", "ERROR", message, 0)


def _monotone_row(t: Target, rows: list[Row]) -> Row:
    vals = [r.measured for r in rows]
    shown = (" > " if t.monotone == "decreasing" else " < ").join(fmt(v) if v is not None else "?" for v in vals)
    row = Row(t.paper, t.name, t.monotone or "", t.source, t.scenario, t.metric, t.unit, None, None, None, None,
              "strictly", "PASS", "", rows[0].runs if rows else 0, kind="monotone", shown=shown)
    if any(r.status == "ERROR" for r in rows):
        row.status, row.detail = "ERROR", "not checked: a grid point failed"
        return row
    for a, b, r in zip(vals, vals[1:], rows[1:]):
        ok = a is not None and b is not None and not math.isnan(a) and not math.isnan(b)
        ok = ok and (b < a if t.monotone == "decreasing" else b > a)
        if not ok:
            row.status = "MISS"
            row.detail = f"not {t.monotone} at {r.point}"
            break
    return row


def _ratio_row(t: Target, rows: list[Row]) -> Row:
    r = t.ratio
    assert r is not None
    by_label = {row.point: row for row in rows}
    of = by_label[r.of]
    if r.to == BEST:
        measured = [row for row in rows if row.status != "ERROR" and row.measured is not None and math.isfinite(row.measured)]
        to = max(measured, key=lambda row: row.measured) if measured else of
        label = f"{r.of} / best ({to.point})"
    else:
        to = by_label[r.to]
        label = f"{r.of} / {r.to}"
    ratio_target = replace(t, tolerance=r.tolerance, unit="")
    if of.status == "ERROR" or to.status == "ERROR":
        row = _error_row(ratio_target, Point(label, (), r.expected), "not checked: a grid point failed")
    else:
        a, b = of.measured, to.measured
        measured = a / b if a is not None and b not in (None, 0) else math.nan
        row = _judge(ratio_target, Point(label, (), r.expected), measured, [measured], of.runs)
    row.kind = "ratio"
    return row


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


def run_targets(targets: Sequence[Target], runs: int | None = None, jobs: int | None = None,
                progress: ProgressFn | None = None, executor: str = "local") -> list[Row]:
    """Runs every target (all runs of all grid points, in parallel over `jobs`
    local processes or on a Dask cluster, see `wayside.jobs`; runs with the
    same scenario, overrides and seed are simulated once) and returns the
    outcome rows in file order."""
    from wayside import _native

    from wayside.scenario import scenario_text

    point_error: dict[tuple[int, int], str] = {}
    calibrated: set[int] = set()
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
                _native.resolve(text, list(overrides))
                if _is_calibrated(t, calibrated_on(spec, text)):
                    calibrated.add(ti)
            except ValueError as e:
                point_error[(ti, pi)] = str(e)
                continue
            for i in range(n):
                seed = t.base_seed + i
                job = jobs_by_run.setdefault((spec, overrides, seed), Job(spec, overrides, seed))
                job.requests.append(Request((ti, pi, i), t.metric, t.metric_args, ship))
    work = list(jobs_by_run.values())

    outcomes: dict[tuple[int, int, int], tuple[str, Any]] = {}
    for _, answers in run_jobs(execute, work, executor=executor, workers=jobs, progress=progress):
        for key, status, value in answers:
            outcomes[key] = (status, value)

    rows: list[Row] = []
    for ti, t in enumerate(targets):
        n = runs if runs is not None else t.runs
        point_rows = []
        for pi, p in enumerate(t.points):
            if (ti, pi) in point_error:
                point_rows.append(_error_row(t, p, point_error[(ti, pi)]))
                continue
            got = [outcomes[(ti, pi, i)] for i in range(n)]
            errors = [v for s, v in got if s == "error"]
            if errors:
                point_rows.append(_error_row(t, p, errors[0]))
                continue
            fn = metrics_module.METRICS[t.metric]
            if metrics_module.is_across_runs(fn):
                try:
                    measured = float(fn([v for _, v in got], **t.metric_args))
                except Exception as e:
                    msg = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
                    point_rows.append(_error_row(t, p, f"metric {t.metric}: {msg}"))
                    continue
                values = [measured]
            else:
                values = [float(v) for _, v in got]
                measured = aggregate(values, t.aggregate)
            point_rows.append(_judge(t, p, measured, values, n))
        if t.monotone:
            point_rows.append(_monotone_row(t, point_rows))
        if t.ratio:
            point_rows.append(_ratio_row(t, point_rows))
        for row in point_rows:
            row.calibrated = ti in calibrated
        rows.extend(point_rows)
    return rows


def exit_code(rows: Iterable[Row]) -> int:
    """2 on any ERROR, else 1 on any MISS (a calibrated target that misses
    means the calibration no longer holds), else 0."""
    statuses = {r.status for r in rows}
    return 2 if "ERROR" in statuses else 1 if "MISS" in statuses else 0


def tally(rows: Iterable[Row]) -> str:
    """The summary line's counts: independent rows by outcome; calibrated
    rows apart, as held or drifted, never as passes."""
    rows = list(rows)
    judged = [r for r in rows if r.status != MEASURED]
    own = [r for r in judged if not r.calibrated]
    cal = [r for r in judged if r.calibrated]
    n = {s: sum(r.status == s for r in own) for s in ("PASS", "MISS", "ERROR")}
    text = f"{n['PASS']} pass, {n['MISS']} miss, {n['ERROR']} error of {len(own)} independent"
    if cal:
        held = sum(r.status == "PASS" for r in cal)
        text += f"; calibrated on {len(cal)} (not counted): {held} held, {len(cal) - held} not"
    return text


# ---------------------------------------------------------------- output


WIDTH = 80  # the outcome table fits an 80-column terminal
_VALUE_W = 11  # a measured or published value with its unit
_DEV_W = 8
_SPAN_W = 2 * _VALUE_W + _DEV_W + 2  # the three value columns
_NAME_W = WIDTH - 2 - 6 - _SPAN_W - 1


def _value(v: float | None, unit: str) -> str:
    return "" if v is None else fmt(v) + (f" {unit}" if unit and not math.isnan(v) else "")


def _deviation(dev: float | None) -> str:
    if dev is None:
        return ""
    return f"{dev:+.1%}" if abs(dev) < 10 else f"×{dev + 1:.3g}"  # beyond +-1000%: the ratio


def _line(status: str, name: str, measured: str, paper: str = "", dev: str = "", span: bool = False) -> list[str]:
    """One row as one line, or two when the name or a value is too wide for
    its column (the values then on a line of their own, flush right). With
    `span`, `measured` (a monotone row's sequence) spans the value columns,
    cut with "…" where it is longer (--details shows it whole)."""
    if span:
        values = f"{measured:>{_SPAN_W}}" if len(measured) <= _SPAN_W else measured[: _SPAN_W - 1] + "…"
    else:
        values = f"{measured:>{_VALUE_W}} {paper:>{_VALUE_W}} {dev:>{_DEV_W}}"
    head = f"  {status:<5} {name}"
    if len(name) <= _NAME_W and len(values) <= _SPAN_W:
        return [f"{head:<{WIDTH - _SPAN_W - 1}} {values}".rstrip()]
    heads = textwrap.wrap(head, WIDTH, subsequent_indent=" " * 10, break_on_hyphens=False)
    return [*heads, f"{values.strip():>{WIDTH}}"]


def _wrapped(facts: Iterable[str]) -> list[str]:
    """Detail lines under a row: indented, wrapped at WIDTH."""
    return [line for f in facts for line in textwrap.wrap(f, WIDTH, initial_indent=" " * 8,
                                                             subsequent_indent=" " * 10, break_on_hyphens=False)]


def _details(r: Row) -> list[str]:
    facts = [f"source: {r.source}", f"scenario: {r.scenario}; metric: {r.metric}"]
    if r.allowed:
        facts.append(f"allowed: {r.allowed}" + (f"; runs: {r.runs}" if r.runs else ""))
    if r.kind == "monotone":
        facts.append(f"measured: {r.shown}")
    if r.detail:
        facts.append(("error: " if r.status == "ERROR" else "why: ") + r.detail)
    return _wrapped(facts)


def _sections(items: Sequence[Any], first: Callable[[Any], Row]) -> Iterable[tuple[str, Any]]:
    """`items` (rows, or groups of rows whose `first` row speaks for them) in
    the table's order: per paper its title, then its independent items, then
    those its scenarios were calibrated on. Yields ("paper", title),
    ("calibrated", None) before the calibrated items, and ("item", item);
    the independent items come after ("independent", None)."""
    for paper in dict.fromkeys(first(i).paper for i in items):
        yield "paper", paper
        mine = [i for i in items if first(i).paper == paper]
        for calibrated in (False, True):
            group = [i for i in mine if first(i).calibrated == calibrated]
            if group:
                yield ("calibrated" if calibrated else "independent"), None
                for i in group:
                    yield "item", i


def render(rows: Sequence[Row], details: bool = False) -> list[tuple[str, str]]:
    """The outcome as (line, status) pairs, every line at most WIDTH columns:
    per paper, one line per independent row (result, target, measured,
    paper's value, deviation), then the rows its scenarios were calibrated
    on under a heading of their own ("held" or "DRIFT", never PASS).
    `details` adds each row's source, allowed range, runs and reason.
    `status` is PASS, MISS or ERROR for a row's first line, "" otherwise
    (and for a point measured only for its target's ratio or trend)."""
    out: list[tuple[str, str]] = []
    shown_as = {"PASS": "held", "MISS": "DRIFT", "ERROR": "ERROR"}
    for kind, item in _sections(rows, lambda r: r):
        if kind == "paper":
            out.append((item[:WIDTH], ""))
        elif kind == "calibrated":
            out.append(("  calibrated on (not counted as reproduced):", ""))
        elif kind == "independent":
            out.append((_line("", "target", "measured", "paper", "vs paper")[0], ""))
        else:
            r = item
            if r.kind == "monotone":
                measured, paper_v = r.shown, ""
            else:
                measured, paper_v = _value(r.measured, r.unit), _value(r.expected, r.unit)
            if r.status == MEASURED:
                status = ""
            else:
                status = shown_as[r.status] if r.calibrated else r.status
            lines = _line(status, r.name, measured, paper_v, _deviation(r.deviation), span=r.kind == "monotone")
            out.append((lines[0], status and r.status))
            out.extend((line, "") for line in lines[1:])
            if details:
                out.extend((line, "") for line in _details(r))
    return out


def _range(values: Sequence[float | None], unit: str) -> str:
    """The span of a row's measured values over the seed sets, "lo..hi unit"."""
    got = [v for v in values if v is not None and not math.isnan(v)]
    if not got:
        return "undefined"
    lo, hi = fmt(min(got)), fmt(max(got))
    return (lo if lo == hi else f"{lo}..{hi}") + (f" {unit}" if unit else "")


def _aligned(sets: Sequence[Sequence[Row]]) -> list[tuple[Row, ...]]:
    """The rows of every seed set side by side (the same targets in the same
    order in every set)."""
    first = [(r.paper, r.target, r.point) for r in sets[0]]
    for rows in sets[1:]:
        if [(r.paper, r.target, r.point) for r in rows] != first:
            raise ValueError("seed sets measured different targets")
    return list(zip(*sets))


def _set_status(group: Sequence[Row]) -> str:
    """ERROR if any set erred, else PASS if every set passed, MISS if none
    did, SOME in between; "" for a point measured only."""
    statuses = [r.status for r in group]
    if MEASURED in statuses:
        return ""
    if "ERROR" in statuses:
        return "ERROR"
    passed = statuses.count("PASS")
    return "PASS" if passed == len(group) else "MISS" if passed == 0 else "SOME"


def render_sets(sets: Sequence[Sequence[Row]], details: bool = False) -> list[tuple[str, str]]:
    """The same targets measured on several seed sets (`seed_set`), as
    (line, status) pairs of at most WIDTH columns: per row, in how many sets
    it passed (or held, for a row its scenario was calibrated on), the range
    of its measured values over the sets and the paper's value. `details`
    adds each set's value. `status` is `_set_status` on a row's first line,
    "" otherwise."""
    out: list[tuple[str, str]] = []
    n = len(sets)
    for kind, item in _sections(_aligned(sets), lambda g: g[0]):
        if kind == "paper":
            out.append((item[:WIDTH], ""))
        elif kind == "calibrated":
            out.append(("  calibrated on (not counted), held in:", ""))
        elif kind == "independent":
            out.append((_line("sets", "target", f"{'measured':>20} {'paper':>11}", span=True)[0], ""))
        else:
            g, r = item, item[0]
            status = _set_status(g)
            passed = sum(x.status == "PASS" for x in g)
            shown = f"{passed}/{n}" if status and status != "ERROR" else status
            measured = "" if r.kind == "monotone" else _range([x.measured for x in g], r.unit)
            paper_v = "" if r.kind == "monotone" else _value(r.expected, r.unit)
            lines = _line(shown, r.name, f"{measured:>20} {paper_v:>11}", span=True)
            out.append((lines[0], status))
            out.extend((line, "") for line in lines[1:])
            if details:
                each = ", ".join(x.shown if x.kind == "monotone" else fmt(x.measured) for x in g)
                facts = [f"per set: {each}"] + ([f"allowed: {r.allowed}; runs per set: {r.runs}"] if r.allowed else [])
                out.extend((line, "") for line in _wrapped(facts))
    return out


def tally_sets(sets: Sequence[Sequence[Row]]) -> str:
    """The summary over seed sets: independent rows that passed in every set,
    in some, in none (and those with errors); calibration rows held in every
    set or not, never counted as passes."""
    n = len(sets)
    groups = [g for g in _aligned(sets) if _set_status(g)]
    own = [_set_status(g) for g in groups if not g[0].calibrated]
    cal = [_set_status(g) for g in groups if g[0].calibrated]
    text = (f"of {len(own)} independent: {own.count('PASS')} pass in all {n} seed sets, "
            f"{own.count('SOME')} in some, {own.count('MISS')} in none")
    if own.count("ERROR"):
        text += f", {own.count('ERROR')} with errors"
    if cal:
        text += f"; calibrated on {len(cal)} (not counted): {cal.count('PASS')} held in all sets, {len(cal) - cal.count('PASS')} not"
    return text


def write_outputs(rows: Sequence[Row], directory: str | Path) -> list[Path]:
    """Writes validation.json (every field, per-run values included) and
    validation.csv (per-run values joined by ';') into `directory`."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    records = []
    for r in rows:
        rec = asdict(r)
        rec["deviation"] = r.deviation
        for k, v in rec.items():
            if isinstance(v, float) and math.isnan(v):
                rec[k] = None
        rec["values"] = [None if math.isnan(v) else v for v in r.values]
        records.append(rec)
    jpath = d / "validation.json"
    jpath.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    cpath = d / "validation.csv"
    with cpath.open("w", newline="", encoding="utf-8") as f:
        fields = list(records[0]) if records else ["paper", "target"]
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for rec in records:
            w.writerow({**rec, "values": ";".join("" if v is None else repr(v) for v in rec["values"])})
    return [jpath, cpath]
