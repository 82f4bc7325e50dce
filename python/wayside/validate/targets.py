"""Validation targets: the model of a validation file (targets, grid
points, tolerances, ratios), loading and checking it from TOML, finding the
files (those shipped with wayside in `wayside/validation/`, or the user's
own, by path) and selecting targets by name."""

from __future__ import annotations

import fnmatch
import inspect
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from wayside import metrics as metrics_module

TOLERANCE_KINDS = ("relative", "absolute", "factor", "range")
AGGREGATES = "median, mean, min, max, pNN (percentile 0–100, e.g. p90), none"
TARGET_KEYS = {
    "name", "source", "scenario", "overrides", "runs", "base_seed", "metric", "metric_args",
    "aggregate", "expected", "tolerance", "grid", "monotone", "ratio", "unit", "notes",
}
META_KEYS = {"paper", "title", "base_seed", "notes"}


class ValidationFileError(ValueError):
    """A validation file (or a command-line selection) that cannot be used."""


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


def fmt(v: float | None) -> str:
    """A number for the table: 4 significant digits, thousands grouped."""
    if v is None:
        return ""
    if math.isnan(v):
        return "undefined"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


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


# The validation files of the papers wayside reproduces, shipped inside the
# package so that `wayside validate` works wherever it is installed.
SHIPPED = Path(__file__).resolve().parent.parent / "validation"


def find_files(specs: Sequence[str]) -> list[Path]:
    """Validation files for command-line arguments: files and directories
    (every *.toml in them) by path, or a paper name (the stem of a shipped
    file); no arguments: every shipped file."""
    files: list[Path] = []
    for spec in specs or [str(SHIPPED)]:
        p = Path(spec)
        if p.is_dir():
            found = sorted(p.glob("*.toml"))
            if not found:
                raise ValidationFileError(f"{spec}: no *.toml validation files in this directory")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        elif (SHIPPED / f"{spec}.toml").is_file():
            files.append(SHIPPED / f"{spec}.toml")
        else:
            known = ", ".join(sorted(f.stem for f in SHIPPED.glob("*.toml"))) or "none"
            raise ValidationFileError(f"{spec}: no such validation file, directory or paper; shipped papers: {known}")
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
