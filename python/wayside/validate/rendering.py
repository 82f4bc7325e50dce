"""Rendering outcome rows: the table, in 80 columns, for one set of seeds
or several side by side, and the files validation.json and validation.csv."""

from __future__ import annotations

import csv
import json
import math
import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from wayside.validate.judging import MEASURED, Row, aligned, sample_errors, set_status
from wayside.validate.targets import fmt

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


def _paper_head(paper: str, rows: Iterable[Row]) -> list[tuple[str, str]]:
    """A paper's title, and under it its in-sample and out-of-sample error
    apart (`sample_errors`), wrapped at WIDTH."""
    errors = sample_errors(r for r in rows if r.paper == paper)
    lines = textwrap.wrap(errors, WIDTH, initial_indent="  ", subsequent_indent="    ") if errors else []
    return [(paper[:WIDTH], "")] + [(line, "") for line in lines]


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
            out.extend(_paper_head(item, rows))
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


def render_sets(sets: Sequence[Sequence[Row]], details: bool = False) -> list[tuple[str, str]]:
    """The same targets measured on several seed sets (`seed_set`), as
    (line, status) pairs of at most WIDTH columns: per row, in how many sets
    it passed (or held, for a row its scenario was calibrated on), the range
    of its measured values over the sets and the paper's value. `details`
    adds each set's value. `status` is `set_status` on a row's first line,
    "" otherwise."""
    out: list[tuple[str, str]] = []
    n = len(sets)
    for kind, item in _sections(aligned(sets), lambda g: g[0]):
        if kind == "paper":
            out.extend(_paper_head(item, [r for rows in sets for r in rows]))
        elif kind == "calibrated":
            out.append(("  calibrated on (not counted), held in:", ""))
        elif kind == "independent":
            out.append((_line("sets", "target", f"{'measured':>20} {'paper':>11}", span=True)[0], ""))
        else:
            g, r = item, item[0]
            status = set_status(g)
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
