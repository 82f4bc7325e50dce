"""`wayside report`: one self-contained HTML page (figures embedded as PNG
data URIs, no external resources, works offline) of a set of runs.

Every scenario gets the road view (`wayside.roadreport`: data in all and
per flow, per car and per AP, associations, goodput against position, the
time-space plot) and the TCP loss events of a few flows. A drive-by past
one AP (a paper's scenario, or a measured drive-by read by `wayside
analyze`) also gets the analysis of Hadaller et al. (2007) — figures
mirroring the paper's 5, 9, 12, 14, 18/19 and 22, the summary and phase
tables — and only the paper's own scenarios are set against the paper's
numbers."""

from __future__ import annotations

import html
import math
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from wayside import driveby, roadreport, tcploss  # noqa: E402
from wayside.driveby import SETUP_LABELS, Analysis  # noqa: E402
from wayside.htmlparts import fmt as _f  # noqa: E402
from wayside.htmlparts import png as _png  # noqa: E402
from wayside.htmlparts import table as _table  # noqa: E402
from wayside.metrics import quantile  # noqa: E402
from wayside.result import RunResult  # noqa: E402
from wayside.stats import describe, paired_gain  # noqa: E402
from wayside.sweeps import read_manifest  # noqa: E402


class ReportError(ValueError):
    """A runs directory that cannot be reported on."""


# The scenarios that reproduce Hadaller et al. (2007): their runs, and only
# theirs, are compared with the paper's numbers.
PAPER_SCENARIOS = ("hadaller-highway", "hadaller-highway-remote")
# Figures of TCP loss events in a report, whatever the number of flows.
TCP_LOSS_FIGURES = 3

Progress = Callable[[str, int, int], None]


@dataclass
class Group:
    """Runs of one grid point."""

    label: str
    dirs: list[Path]
    errors: list[str]


def groups(root: str | Path) -> list[Group]:
    """The runs under `root`: per grid point of its manifest.json (runs that
    failed are listed, not analyzed), else every run directory below it."""
    root = Path(root)
    if not root.is_dir():
        raise ReportError(f"{root}: no such directory; give a directory written by `wayside sweep` or `wayside run`")
    manifest = read_manifest(root)
    if manifest is None:
        dirs = driveby.run_dirs(root)
        if not dirs:
            raise ReportError(f"{root}: no run directories (with summary.json) found below it")
        return [Group("", dirs, [])]
    out = []
    for p in manifest.get("points", []):
        ok = [root / r["dir"] for r in p["runs"] if r.get("status") == "ok"]
        errs = [f"seed {r['seed']}: {r.get('message', r.get('status', 'not run'))}" for r in p["runs"] if r.get("status") != "ok"]
        out.append(Group(p.get("label", ""), ok, errs))
    if not any(g.dirs for g in out):
        raise ReportError(f"{root}: the manifest lists no successful run")
    return out


# ---------------------------------------------------------------- figures


def _phase_lines(ax: Any, a: Analysis) -> None:
    if a.phases is None:
        return
    p = a.phases
    ax.axvspan(p.entry_start_m, p.production_start_m, color="#f4d6a0", alpha=0.35, lw=0)
    ax.axvspan(p.production_start_m, p.production_end_m, color="#bfe3bf", alpha=0.35, lw=0)
    ax.axvspan(p.production_end_m, p.exit_end_m, color="#f4d6a0", alpha=0.35, lw=0)


def _xlim(ax: Any, a: Analysis) -> None:
    live = a.bins.filter((pl.col("sup_mbps") > 0) | (pl.col("rssi_dbm").is_not_nan()))
    if not live.is_empty():
        ax.set_xlim(float(live["start_m"].min()) - 40, float(live["start_m"].max()) + 60)


def fig5(a: Analysis) -> str:
    fig, axes = plt.subplots(3, 1, figsize=(9, 9.5), sharex=True)
    b = a.bins
    x = b["centre_m"].to_numpy()
    axes[0].plot(x, b["rssi_dbm"].to_numpy(), color="tab:blue", lw=1.6, label="mean RSSI over runs")
    axes[0].axhline(driveby.NOISE_FLOOR_DBM, color="grey", ls=":", lw=1, label="noise floor")
    axes[0].set_ylabel("RSSI at the car (dBm)")
    axes[0].set_title("(a) signal strength per 20 m", fontsize=10, loc="left")
    for run, g in a.run_goodput.group_by("run", maintain_order=True):
        axes[1].plot(g["start_m"] + driveby.BIN_M / 2, g["mean_rate_mbps"], lw=0.6, alpha=0.5)
    mean_rate = a.run_goodput.group_by("start_m").agg(pl.col("mean_rate_mbps").mean()).sort("start_m")
    axes[1].plot(mean_rate["start_m"] + driveby.BIN_M / 2, mean_rate["mean_rate_mbps"], color="black", lw=1.6, label="mean over runs")
    axes[1].set_ylabel("sender's MAC rate (Mb/s)")
    axes[1].set_title("(b) MAC bit rate of the data frames, per run", fontsize=10, loc="left")
    for i, (run, g) in enumerate(a.run_goodput.group_by("run", maintain_order=True)):
        axes[2].plot(g["start_m"] + driveby.BIN_M / 2, g["goodput_mbps"], color="grey", lw=0.4, alpha=0.5,
                     label="each run" if i == 0 else None)
    mean, ci = b["mean_mbps"].to_numpy(), np.nan_to_num(b["ci95_mbps"].to_numpy())
    axes[2].fill_between(x, np.maximum(mean - ci, 0), mean + ci, color="tab:blue", alpha=0.25, lw=0, label="95% interval of the mean")
    axes[2].plot(x, mean, color="tab:blue", lw=1.4, label="mean goodput")
    axes[2].plot(x, b["sup_mbps"].to_numpy(), color="tab:red", lw=1.4, label="supremum goodput")
    axes[2].step(x, b["potential_mbps"].to_numpy(), where="mid", color="tab:green", lw=1.0, ls="--", label="theoretical potential")
    axes[2].axhline(driveby.PRODUCTION_MBPS, color="grey", ls=":", lw=1)
    axes[2].set_ylabel("TCP goodput (Mb/s)")
    axes[2].set_xlabel("position relative to the AP (m)")
    axes[2].set_title("(c) goodput per 20 m: each run, mean with 95% interval, supremum, potential", fontsize=10, loc="left")
    for ax in axes:
        _phase_lines(ax, a)
        ax.grid(alpha=0.3)
        _xlim(ax, a)
    for ax in (axes[0], axes[1], axes[2]):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return _png(fig)


def _cdf(ax: Any, values: Sequence[float], complementary: bool, **kw: Any) -> None:
    v = np.sort(np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float))
    if len(v) == 0:
        ax.text(0.5, 0.5, "no run", transform=ax.transAxes, ha="center")
        return
    # Steps at each value: the CDF rises from 0 to 1, the CCDF (share of
    # runs at or beyond a value) falls from 1 to 0.
    xs = np.concatenate([[v[0]], v])
    y = np.arange(0, len(v) + 1) / len(v)
    ax.step(xs, 1 - y if complementary else y, where="post", **kw)


def fig9(a: Analysis) -> str:
    fig, ax = plt.subplots(figsize=(8, 4.2))
    _cdf(ax, a.per_run["data_mb"].to_list(), False, color="tab:blue", lw=1.6, label="data per run")
    ax.axvline(a.supremum_mb, color="tab:red", ls="--", label=f"supremum {a.supremum_mb:.1f} MB")
    ax.axvline(a.potential_mb, color="tab:green", ls="--", label=f"theoretical potential {a.potential_mb:.1f} MB")
    for v, name in ((21.6, "paper min"), (32.6, "paper median"), (51.1, "paper max")):
        ax.axvline(v, color="grey", ls=":", lw=0.8)
        ax.text(v, 0.02, name, rotation=90, fontsize=7, color="grey", va="bottom")
    ax.set_xlabel("data transferred per run (MB)")
    ax.set_ylabel("CDF of runs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    return _png(fig)


def _position_ccdf(a: Analysis, column: str, xlabel: str) -> str:
    fig, ax = plt.subplots(figsize=(8, 4.2))
    _phase_lines(ax, a)
    _cdf(ax, a.per_run[column].to_list(), True, color="tab:blue", lw=1.6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CCDF of runs")
    ax.set_ylim(0, 1.02)
    _xlim(ax, a)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def fig14(a: Analysis) -> str:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    runs = a.per_run.sort("setup_delay_s", nulls_last=True)
    bottom = np.zeros(runs.height)
    colors = plt.get_cmap("tab10")
    for i, label in enumerate(SETUP_LABELS):
        v = np.nan_to_num(runs[f"setup:{label}"].to_numpy())
        ax.bar(np.arange(runs.height), v, bottom=bottom, color=colors(i), label=label)
        bottom += v
    ax.set_xticks(np.arange(runs.height), runs["run"].to_list(), rotation=60, fontsize=7)
    ax.set_ylabel("setup delay (s)")
    ax.set_xlabel("run (sorted by delay)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return _png(fig)


def fig18_19(a: Analysis) -> str:
    fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    titles = {"sender": "(18) MAC rates of the TCP sender's data frames", "receiver": "(19) MAC rates of the TCP receiver's ACK frames"}
    all_rates = sorted(a.rates["rate_mbps"].unique().to_list())
    cmap = plt.get_cmap("viridis", max(len(all_rates), 2))
    for ax, who in zip(axes, ("sender", "receiver")):
        r = a.rates.filter(pl.col("who") == who)
        if r.is_empty():
            ax.text(0.5, 0.5, "no frames", transform=ax.transAxes, ha="center")
            continue
        wide = r.pivot(on="rate_mbps", index="bin", values="frames", aggregate_function="sum").fill_null(0).sort("bin")
        x = wide["bin"].to_numpy() * driveby.BIN_M + driveby.BIN_M / 2
        cols = [c for c in wide.columns if c != "bin"]
        stack = np.array([wide[c].to_numpy() for c in cols], dtype=float)
        stack = stack / np.maximum(stack.sum(axis=0), 1)
        order = sorted(range(len(cols)), key=lambda i: float(cols[i]))
        ax.stackplot(x, stack[order], labels=[f"{float(cols[i]):g} Mb/s" for i in order],
                     colors=[cmap(all_rates.index(float(cols[i]))) for i in order])
        ax.set_ylabel("share of frames")
        ax.set_title(titles[who], fontsize=10, loc="left")
        ax.set_ylim(0, 1)
        _xlim(ax, a)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[-1].set_xlabel("position relative to the AP (m)")
    fig.tight_layout()
    return _png(fig)


# ---------------------------------------------------------------- tables


def _describe(values: Sequence[Any]) -> str:
    return html.escape(describe(values))


def _finite(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(v)]




@dataclass
class Comparison:
    what: str
    paper: str
    ours: str
    deviation: str
    verdict: str


def _vs(what: str, paper: float, ours: float, unit: str, tol: float, scale: float = 1.0,
        kind: str = "relative") -> Comparison:
    """`ours` against `paper`, with the tolerance of the matching target in
    validation/hadaller-2007.toml where there is one: `kind` relative (paper·(1 ± tol)),
    absolute (paper ± tol) or factor (paper/tol .. paper·tol)."""
    p, o = paper * scale, ours * scale
    if math.isnan(ours):
        return Comparison(what, f"{p:.3g}{unit}", "undefined", "", "no value")
    dev = f"{o - p:+.3g}{unit}" + (f" ({(ours - paper) / abs(paper):+.0%})" if paper else "")
    if kind == "factor":
        ok, shown = min(paper / tol, paper * tol) <= ours <= max(paper / tol, paper * tol), f" ×/÷{tol:g}"
    elif kind == "absolute":
        ok, shown = abs(ours - paper) <= tol, f" ±{tol * scale:g}{unit}"
    else:
        ok, shown = abs(ours - paper) <= abs(paper) * tol, f" ±{tol:.0%}"
    return Comparison(what, f"{p:.3g}{unit}", f"{o:.3g}{unit}", dev, ("within" if ok else "outside") + shown)


def _vs_range(what: str, lo: float, hi: float, ours: float, unit: str = "", scale: float = 1.0) -> Comparison:
    o = ours * scale
    if math.isnan(ours):
        return Comparison(what, f"{lo * scale:.3g}–{hi * scale:.3g}{unit}", "undefined", "", "no value")
    if lo <= ours <= hi:
        return Comparison(what, f"{lo * scale:.3g}–{hi * scale:.3g}{unit}", f"{o:.3g}{unit}", "in range", "within")
    edge = lo if ours < lo else hi
    return Comparison(what, f"{lo * scale:.3g}–{hi * scale:.3g}{unit}", f"{o:.3g}{unit}",
                      f"{(ours - edge) * scale:+.3g}{unit} beyond the range", "outside")


def comparisons(a: Analysis) -> list[Comparison]:
    """Our figures against Hadaller et al. (2007) wherever it gives a number."""
    r = a.per_run
    data = _finite(r["data_mb"].to_list())
    med = statistics.median(data) if data else math.nan
    delays = _finite(r["setup_delay_s"].to_list())
    out = [
        _vs("data per run: least (Fig. 9)", 21.6, min(data) if data else math.nan, " MB", 0.25),
        _vs_range("data per run: median (Fig. 9: 32.6 MB, between the paper's least and most)", 21.6, 51.1, med, " MB"),
        _vs("data per run: most (Fig. 9)", 51.1, max(data) if data else math.nan, " MB", 0.25),
        _vs("supremum data / median data (§5, 'about 50%')", 2.0, a.supremum_mb / med if med else math.nan, "×", 0.25),
    ]
    p = a.phases
    nan = math.nan
    out += [
        _vs("entry phase starts (§6.1)", -640, p.entry_start_m if p else nan, " m", 100, kind="absolute"),
        _vs("production phase starts (§6.1)", -320, p.production_start_m if p else nan, " m", 100, kind="absolute"),
        _vs("production phase ends (§6.1)", 320, p.production_end_m if p else nan, " m", 100, kind="absolute"),
        _vs("exit phase ends (§6.1)", 640, p.exit_end_m if p else nan, " m", 100, kind="absolute"),
        _vs("share of supremum data in production (§6.1)", 0.94, p.share.get("production", nan) if p else nan, "%", 0.05, scale=100),
        _vs("setup delay, mean (Table 4: 13.1 s ± 12.3)", 13.1, statistics.fmean(delays) if delays else nan, " s", 0.5),
        _vs("data lost to setup delay, median (§6.2.8)", 0.075, quantile(r["setup_loss"].to_list(), 0.5), "%", 2, scale=100, kind="factor"),
        _vs("data lost to setup delay, worst 15% of runs (§6.2.8)", 0.228, quantile(r["setup_loss"].to_list(), 0.85), "%", 2, scale=100, kind="factor"),
        _vs("last useful packet, median position (Fig. 22)", 398, quantile(r["end_m"].to_list(), 0.5), " m", 0.25),
        _vs("data lost to an early end, median (§6.4.2)", 0.021, quantile(r["exit_loss"].to_list(), 0.5), "%", 2, scale=100, kind="factor"),
        _vs("data lost to an early end, worst 15% (§6.4.2)", 0.030, quantile(r["exit_loss"].to_list(), 0.85), "%", 2, scale=100, kind="factor"),
        _vs_range("mid-production mean below supremum (§6.3.2)", 0.20, 0.30, a.production_gap, "%", scale=100),
        _vs_range("receiver's ACK-rate penalty (§6.3.2)", 0.16, 0.23, a.ack_penalty, "%", scale=100),
    ]
    return out


def _why(a: Analysis) -> list[str]:
    """Observations from the runs that explain the deviations."""
    r = a.per_run
    notes = []
    usable = quantile(r["usable_m"].to_list(), 0.5)
    if a.phases and not math.isnan(usable):
        gap = usable - a.phases.entry_start_m
        notes.append(
            f"The median run became usable at {usable:.0f} m, {gap:.0f} m after the supremum connection starts "
            f"({a.phases.entry_start_m:.0f} m): setup delay and setup loss are measured over that stretch."
        )
    heard, chosen = quantile(r["first_beacon_m"].to_list(), 0.5), quantile(r["selected_m"].to_list(), 0.5)
    if not math.isnan(heard) and not math.isnan(chosen):
        notes.append(f"Median run: first beacon heard at {heard:.0f} m, AP selected at {chosen:.0f} m "
                     f"(paper: beacons from 750+ m, connections usable around the production phase, -320 m).")
    parts = {label: statistics.fmean(_finite(r[f"setup:{label}"].to_list()) or [0.0]) for label in SETUP_LABELS}
    top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
    notes.append("Mean setup delay by cause: " + ", ".join(f"{k} {v:.2f} s" for k, v in top) + ".")
    timeouts = r["tcp_timeouts"].to_list()
    notes.append(f"TCP timeouts per run: median {statistics.median(timeouts):g} (max {max(timeouts)}).")
    if a.phases and a.phases.entry_start_m == a.phases.production_start_m:
        notes.append("No run delivered anything before the supremum reached production goodput: the entry phase is empty, "
                     "so the car associates where the link is already good (or nothing is sent before).")
    if a.phases:
        acks = a.rates.filter((pl.col("who") == "receiver") & (pl.col("bin") * driveby.BIN_M >= a.phases.production_start_m)
                              & (pl.col("bin") * driveby.BIN_M < a.phases.production_end_m))
        total = float(acks["frames"].sum())
        if total:
            fast = float(acks.filter(pl.col("rate_mbps") >= 24)["frames"].sum()) / total
            notes.append(f"In the production phase {fast:.0%} of the receiver's ACK frames went at 24 Mb/s or faster "
                         "(paper, Figure 19: mostly 2, 6 and 11 Mb/s), which is what the ACK-rate penalty prices.")
    if a.supremum_mb and a.potential_mb:
        notes.append(f"Supremum {a.supremum_mb:.1f} MB is {a.supremum_mb / a.potential_mb:.0%} of the theoretical potential "
                     f"{a.potential_mb:.1f} MB (from static goodput per rate).")
    return notes


def _section(title: str, group: Group, a: Analysis, compare: bool) -> str:
    """The Hadaller view of a drive-by; with `compare`, against the paper."""
    figures: list[tuple[str, Callable[[Analysis], str], str]] = [
        ("fig5", fig5, "Figure 5 — (a) mean RSSI, (b) sender's MAC rate per run, (c) goodput per run, mean goodput with 95% interval, supremum and theoretical potential, per 20 m (shaded: entry/exit and production phases)."),
        ("fig9", fig9, "Figure 9 — CDF of data transferred per run, with the supremum and the theoretical potential."),
        ("fig12", lambda a: _position_ccdf(a, "usable_m", "position where the connection became usable (m)"), "Figure 12 — CCDF of where the connection became usable (≥ 3 Mb/s over the next second)."),
        ("fig14", fig14, "Figure 14 — setup delay per run, from the start of the supremum connection to usable, by cause."),
        ("fig18-19", fig18_19, "Figures 18/19 — MAC rates used per position by the TCP sender (data) and receiver (ACKs), over all runs."),
        ("fig22", lambda a: _position_ccdf(a, "end_m", "position of the last useful TCP packet (m)"), "Figure 22 — CCDF of where the connection ended."),
    ]
    parts = [f"<h3>{html.escape(title)}: the drive-by past the AP (Hadaller et al. 2007)</h3>"]
    r = a.per_run
    data = _finite(r["data_mb"].to_list())
    summary = [
        ("runs analyzed", f"{r.height}"),
        ("data per run, MB (min / median / max)", f"{min(data):.1f} / {statistics.median(data):.1f} / {max(data):.1f}" if data else "—"),
        ("supremum data, MB", f"{a.supremum_mb:.1f}"),
        ("theoretical potential, MB", f"{a.potential_mb:.1f}"),
        ("median run / supremum", _f(statistics.median(data) / a.supremum_mb if data and a.supremum_mb else math.nan, "{:.0%}")),
        ("setup delay, s (mean ± 95%)", _describe(r["setup_delay_s"].to_list())),
        ("usable at, m (median)", _f(quantile(r["usable_m"].to_list(), 0.5), "{:.0f}")),
        ("ended at, m (median)", _f(quantile(r["end_m"].to_list(), 0.5), "{:.0f}")),
        ("mid-production mean below supremum", _f(a.production_gap, "{:.1%}")),
        ("ACK-rate penalty", _f(a.ack_penalty, "{:.1%}")),
    ]
    parts.append("<h3>Summary</h3>" + _table(["", "value"], [(html.escape(k), v) for k, v in summary]))
    if a.phases:
        p = a.phases
        parts.append("<h3>Phases (supremum goodput &gt; 3 Mb/s is production)</h3>" + _table(
            ["phase", "from (m)", "to (m)", "share of supremum data"],
            [("entry", f"{p.entry_start_m:.0f}", f"{p.production_start_m:.0f}", _f(p.share["entry"], "{:.1%}")),
             ("production", f"{p.production_start_m:.0f}", f"{p.production_end_m:.0f}", _f(p.share["production"], "{:.1%}")),
             ("exit", f"{p.production_end_m:.0f}", f"{p.exit_end_m:.0f}", _f(p.share["exit"], "{:.1%}"))]))
    if compare:
        cmp_rows = [(html.escape(c.what), html.escape(c.paper), html.escape(c.ours), html.escape(c.deviation),
                     f"<span class='{c.verdict.split(' ')[0] if c.verdict else ''}'>{html.escape(c.verdict)}</span>")
                    for c in comparisons(a)]
        parts.append("<h3>Against the paper</h3>" + _table(["figure", "paper", "ours", "deviation", "verdict"], cmp_rows, "cmp"))
        parts.append("<ul class='why'>" + "".join(f"<li>{html.escape(n)}</li>" for n in _why(a)) + "</ul>")
    for key, fn, caption in figures:
        parts.append(f"<figure id='{key}'><img alt='{html.escape(caption)}' src='data:image/png;base64,{fn(a)}'>"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    rows = []
    for row in r.iter_rows(named=True):
        rows.append([html.escape(str(row["run"])), _f(row["data_mb"], "{:.1f}"), _f(row["usable_m"], "{:.0f}"),
                     _f(row["end_m"], "{:.0f}"), _f(row["setup_delay_s"], "{:.1f}")]
                    + [_f(row[f"setup:{k}"], "{:.2f}") for k in SETUP_LABELS]
                    + [_f(row["setup_loss"], "{:.1%}"), _f(row["exit_loss"], "{:.1%}"), str(row["tcp_timeouts"])])
    parts.append("<h3>Per run: setup and losses</h3>" + _table(
        ["run", "MB", "usable (m)", "end (m)", "setup delay (s)"] + [f"{k} (s)" for k in SETUP_LABELS]
        + ["lost to setup", "lost at exit", "TCP timeouts"], rows, "runs"))
    return "\n".join(parts)


def _tcp_losses(group: Group, first: RunResult, most: int = TCP_LOSS_FIGURES) -> str:
    """TCP loss events of the first `most` flows of the first runs
    (Mukherjee et al. 2014, see wayside.tcploss): per TCP sender, a table
    of its DupAck bursts and the paper's Figures 3-5 for it. `first` is
    the first run, already loaded."""
    parts = []
    for i, d in enumerate(group.dirs[:most]):
        if len(parts) == most:
            break
        r = first if i == 0 else RunResult.load(d)
        for sender, receiver in tcploss.tcp_senders(r):
            if len(parts) == most:
                break
            ev = tcploss.loss_events(r, sender, receiver)
            arq = tcploss.arq_retries(r, receiver)
            failed = arq.filter(pl.col("outcome") == "failed").height
            rows = [(_f(e["time_s"], "{:.2f}"), str(e["dupacks"]), str(e["cwnd_before"]), str(e["cwnd_after"]),
                     _f(e["srtt_ms"], "{:.1f}"), _f(e["recovery_s"], "{:.2f}"), html.escape(e["kind"]),
                     _f(e["since_rto_s"], "{:.2f}"))
                    for e in ev.iter_rows(named=True)]
            caption = (f"{d.name}: {sender} to {receiver} — goodput, cwnd, ARQ retries per retried frame (red: "
                       "failed all tries), TCP retransmissions, DupAcks per burst, SRTT (Mukherjee et al. 2014, Figs. 3-5).")
            parts.append(f"<h4>{html.escape(d.name)}: {html.escape(sender)} → {html.escape(receiver)}</h4>"
                         f"<p>{arq.height} frames to {html.escape(receiver)}, {arq.filter(pl.col('retries') > 0).height} "
                         f"retried, {failed} failed all tries; {ev.height} loss events.</p>"
                         + _table(["time (s)", "DupAcks", "cwnd before", "cwnd after", "SRTT (ms)", "recovery (s)", "class",
                                   "since RTO (s)"],
                                  rows, "runs")
                         + f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,"
                         f"{_png(tcploss.figure(r, sender, receiver, f'{d.name}: {sender} to {receiver}'))}'>"
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    if not parts:
        return ""
    return ("<h3>TCP loss events</h3><p>Per DupAck burst at a TCP sender: its size, cwnd before and after, SRTT at the "
            "loss, time to rebuild cwnd, and its class — penalizing when the goodput over the 2 s after the burst "
            "falls below 75% of the 2 s before, else moderate (wayside.tcploss).</p>" + "".join(parts))


def _points_compared(analyzed: Sequence[tuple[str, Analysis]], manifest: dict[str, Any]) -> str:
    """The sweep's points side by side, each against the first (with
    `--recommendations`: the scenario as measured)."""
    def by_run(a: Analysis) -> dict[str, float]:
        return dict(zip(a.per_run["run"].to_list(), a.per_run["data_mb"].to_list()))

    base = by_run(analyzed[0][1])
    rows, labels, gains = [], [], []
    for label, a in analyzed:
        r = a.per_run
        data = _finite(r["data_mb"].to_list())
        median = statistics.median(data) if data else math.nan
        gain = paired_gain(base, by_run(a))
        labels.append(label)
        gains.append(gain)
        rows.append((html.escape(label), f"{r.height}", _describe(data), _f(median, "{:.1f}"), html.escape(str(gain)),
                     _f(a.supremum_mb, "{:.1f}"), _f(quantile(r["usable_m"].to_list(), 0.5), "{:.0f}"),
                     _describe(r["setup_delay_s"].to_list())))
    fig, ax = plt.subplots(figsize=(8, max(2.6, 0.45 * len(labels) + 1.2)))
    y = np.arange(len(labels))[::-1]
    ax.barh(y, [g.value for g in gains], color="tab:blue")
    err = np.array([[g.value - g.lo, g.hi - g.value] for g in gains]).T
    ax.errorbar([g.value for g in gains], y, xerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=3)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"mean data per run relative to '{labels[0]}' (95% CI, paired by run)")
    fig.tight_layout()
    caption = "Mean data per run of each point relative to the first, runs paired by seed, 95% bootstrap interval."
    skipped = manifest.get("skipped", [])
    note = ""
    if manifest.get("recommendations"):
        note = ("<p>Hadaller et al. estimate that environmental awareness could bring up to 2× (§10); "
                "each switch is one of their recommendations (§7, §8), alone and all combined.</p>")
    if skipped:
        note += "<p>Not applicable to this scenario: " + html.escape("; ".join(f"{x['name']} ({x['reason']})" for x in skipped)) + "</p>"
    return ("<h2>Points compared</h2>" + note + _table(
        ["point", "runs", "MB per run (mean ± 95%)", "median MB", "mean vs first (95% CI)", "supremum MB", "usable at (m, median)",
         "setup delay (s)"], rows)
        + f"<figure id='points'><img alt='{html.escape(caption)}' src='data:image/png;base64,{_png(fig)}'>"
        f"<figcaption>{html.escape(caption)}</figcaption></figure>")


_CSS = """
body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th:first-child,td:first-child{text-align:left}
table.runs{font-size:11px}
figure{margin:1em 0}
figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:13px;color:#444}
.within{color:#176b17}.outside{color:#a31515;font-weight:bold}.err{color:#a31515}
ul.why{font-size:13px}
p.note{font-size:13px;color:#444}
"""


def _kind(dirs: Sequence[Path]) -> str:
    """paper (a scenario of Hadaller et al.), driveby (a measured drive-by)
    or road (any other scenario), from the first run's scenario."""
    try:
        scenario = tomllib.loads((dirs[0] / "scenario.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ReportError(f"{dirs[0]}: no readable scenario.toml ({e})") from None
    if scenario.get("name") in PAPER_SCENARIOS:
        return "paper"
    return "driveby" if "capture" in scenario else "road"


def render(root: str | Path, static_scenario: str = "static-lab", workers: int | None = None,
           progress: Progress | None = None) -> str:
    """The report page for the runs under `root`, as HTML text;
    `progress(what, done, total)` is called as it goes."""
    root = Path(root)
    manifest = read_manifest(root)
    gs = groups(root)
    total = sum(len(g.dirs) + 3 for g in gs)
    done = [0]

    def step(what: str) -> None:
        if progress:
            progress(what, min(done[0], total), total)
        done[0] += 1

    sections = []
    kinds = set()
    road: list[tuple[str, roadreport.RoadRuns]] = []
    analyzed: list[tuple[str, Analysis]] = []
    for g in gs:
        title = g.label or "all runs"
        if not g.dirs:
            sections.append(f"<h2>{html.escape(g.label)}</h2><p class='err'>no successful run: {html.escape('; '.join(g.errors))}</p>")
            continue
        kind = _kind(g.dirs)
        kinds.add(kind)
        parts = [f"<h2>{html.escape(title)}</h2>"]
        if g.errors:
            parts.append("<p class='err'>Runs that failed: " + html.escape("; ".join(g.errors)) + "</p>")
        rr = roadreport.load(g.dirs, step)
        road.append((title, rr))
        parts.append(roadreport.section(rr, workers, step))
        if kind != "road":
            step("drive-by analysis")
            try:
                a = driveby.analyze_dirs(g.dirs, static_scenario=static_scenario, workers=workers)
            except ValueError as e:
                raise ReportError(f"{g.label or root}: {e}") from None
            analyzed.append((title, a))
            parts.append(_section(title, g, a, compare=kind == "paper"))
        step("TCP loss events")
        parts.append(_tcp_losses(g, rr.first))
        sections.append("\n".join(parts))
    if len(analyzed) > 1 and kinds == {"paper"}:
        sections.insert(0, _points_compared(analyzed, manifest or {}))
    elif len(road) > 1:
        sections.insert(0, roadreport.points_table(road))
    if progress:
        progress("done", total, total)
    name = (manifest or {}).get("scenario") or root.name
    if kinds == {"paper"}:
        head = (f"<h1>Drive-by report: {html.escape(str(name))}</h1><p>Runs from <code>{html.escape(str(root))}</code>. "
                "In the drive-by sections, positions are along the road relative to the AP (negative: before it). Goodput "
                "per 20 m of road; the supremum is the best run in each 20 m; the theoretical potential turns the mean RSSI "
                f"into the fastest rate whose sensitivity it meets (noise floor {driveby.NOISE_FLOOR_DBM:g} dBm) and that "
                f"rate into its static goodput, measured on the <code>{html.escape(static_scenario)}</code> scenario. "
                "Reference: Hadaller, Keshav, Brecht, Agarwal, Vehicular opportunistic communication under the microscope, "
                "MobiSys 2007.</p>")
    else:
        head = (f"<h1>Report: {html.escape(str(name))}</h1><p>Runs from <code>{html.escape(str(root))}</code>. Positions "
                "are x along the road, in the scenario's coordinates.</p>")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>wayside report: {html.escape(str(name))}</title>"
            f"<style>{_CSS}</style></head><body>{head}{''.join(sections)}</body></html>\n")


def write(root: str | Path, out: str | Path | None = None, static_scenario: str = "static-lab",
          workers: int | None = None, progress: Progress | None = None) -> Path:
    """Writes the report (default: ROOT/report.html) and returns its path."""
    path = Path(out) if out is not None else Path(root) / "report.html"
    text = render(root, static_scenario, workers, progress)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ReportError(f"--out {path}: cannot be written ({e.strerror or e})") from None
    return path
