"""Judging measured values against the papers' figures: aggregating a
target's runs, one outcome row per target or grid point and per trend or
ratio check, and over rows (or seed sets) the tally and the exit code."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from wayside import metrics as metrics_module
from wayside.validate.targets import BEST, Point, Target, fmt

# Where a row stands to what was fitted: its scenario was calibrated on it
# (in sample); its scenario was calibrated on other targets, so the row is
# what the fit predicts (out of sample); or its scenario lists no
# calibration at all (unfitted: every parameter from a source).
IN_SAMPLE, OUT_OF_SAMPLE, UNFITTED = "in", "out", "none"
SAMPLES = {IN_SAMPLE: "in sample", OUT_OF_SAMPLE: "out of sample", UNFITTED: "unfitted"}

# The status of a grid point that has no figure of its own: measured for its
# target's ratio or trend, shown, never judged or counted.
MEASURED = "MEASURED"


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
    sample: str = ""  # IN_SAMPLE, OUT_OF_SAMPLE or UNFITTED (`SAMPLES`); set with `calibrated`

    @property
    def name(self) -> str:
        """The target, with its grid point in brackets."""
        return f"{self.target} [{self.point}]" if self.point else self.target

    @property
    def deviation(self) -> float | None:
        if self.expected in (None, 0) or self.measured is None or math.isnan(self.measured):
            return None
        return (self.measured - self.expected) / abs(self.expected)


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


def judge(t: Target, p: Point, measured: float, values: list[float], n_runs: int) -> Row:
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


def error_row(t: Target, p: Point, message: str) -> Row:
    return Row(t.paper, t.name, p.label, t.source, t.scenario, t.metric, t.unit, p.expected, None, None, None,
               "", "ERROR", message, 0)


def monotone_row(t: Target, rows: list[Row]) -> Row:
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


def ratio_row(t: Target, rows: list[Row]) -> Row:
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
        row = error_row(ratio_target, Point(label, (), r.expected), "not checked: a grid point failed")
    else:
        a, b = of.measured, to.measured
        measured = a / b if a is not None and b not in (None, 0) else math.nan
        row = judge(ratio_target, Point(label, (), r.expected), measured, [measured], of.runs)
    row.kind = "ratio"
    return row


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


def sample_errors(rows: Iterable[Row]) -> str:
    """In-sample and out-of-sample error apart: per class of `SAMPLES`, the
    judged rows with a paper's value and the median of their absolute
    relative deviations (pooled over seed sets, if several)."""
    rows = [r for r in rows if r.status in ("PASS", "MISS") and r.deviation is not None]
    parts = []
    for sample, label in SAMPLES.items():
        devs = [abs(r.deviation) for r in rows if r.sample == sample]  # type: ignore[arg-type]
        if devs:
            parts.append(f"{label} {float(statistics.median(devs)):.1%} ({len(devs)} rows)")
    return "median |error|: " + ", ".join(parts) if parts else ""


def aligned(sets: Sequence[Sequence[Row]]) -> list[tuple[Row, ...]]:
    """The rows of every seed set side by side (the same targets in the same
    order in every set)."""
    first = [(r.paper, r.target, r.point) for r in sets[0]]
    for rows in sets[1:]:
        if [(r.paper, r.target, r.point) for r in rows] != first:
            raise ValueError("seed sets measured different targets")
    return list(zip(*sets))


def set_status(group: Sequence[Row]) -> str:
    """ERROR if any set erred, else PASS if every set passed, MISS if none
    did, SOME in between; "" for a point measured only."""
    statuses = [r.status for r in group]
    if MEASURED in statuses:
        return ""
    if "ERROR" in statuses:
        return "ERROR"
    passed = statuses.count("PASS")
    return "PASS" if passed == len(group) else "MISS" if passed == 0 else "SOME"


def tally_sets(sets: Sequence[Sequence[Row]]) -> str:
    """The summary over seed sets: independent rows that passed in every set,
    in some, in none (and those with errors); calibration rows held in every
    set or not, never counted as passes."""
    n = len(sets)
    groups = [g for g in aligned(sets) if set_status(g)]
    own = [set_status(g) for g in groups if not g[0].calibrated]
    cal = [set_status(g) for g in groups if g[0].calibrated]
    text = (f"of {len(own)} independent: {own.count('PASS')} pass in all {n} seed sets, "
            f"{own.count('SOME')} in some, {own.count('MISS')} in none")
    if own.count("ERROR"):
        text += f", {own.count('ERROR')} with errors"
    if cal:
        text += f"; calibrated on {len(cal)} (not counted): {cal.count('PASS')} held in all sets, {len(cal) - cal.count('PASS')} not"
    return text
