"""Figures written into a run directory: a fixed few per run, whatever the
number of nodes — the time-space plot of the vehicles (positions coloured
by serving AP, frame drops by reason along the road) and, per broadcast
sounder, delivery against distance over all its receivers in one figure."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from wayside import breakdown  # noqa: E402
from wayside.result import RunResult  # noqa: E402
from wayside.traces import table  # noqa: E402

UNSERVED = "#b0b0b0"
DROP_COLOURS = {"preamble-missed": "#9e9e9e", "busy": "#ff7f0e", "captured": "#9467bd", "error": "#d62728",
                "transmitting": "#8c564b"}
MOVING_M = 1.0  # a node whose x spans less than this is not drawn as a vehicle


def delivery_plot(delivery: pl.DataFrame, crossings: pl.DataFrame, path: Path, title: str) -> Path:
    """Delivery ratio against distance, one curve per rate, with a dashed
    marker where the mean SNR meets that rate's threshold."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    rates = sorted(delivery["rate_mbps"].unique().to_list())
    cmap = plt.get_cmap("viridis", max(len(rates), 2))
    for i, rate in enumerate(rates):
        c = delivery.filter(pl.col("rate_mbps") == rate)
        (line,) = ax.plot(c["distance_m"], c["ratio"], color=cmap(i), label=f"{rate:g} Mbps", lw=1.4)
        d = crossings.filter(pl.col("rate_mbps") == rate)["d_threshold_m"].to_list()
        if d and d[0] is not None:
            ax.axvline(d[0], color=line.get_color(), ls="--", lw=0.8, alpha=0.8)
    ax.axhline(0.5, color="grey", lw=0.6)
    ax.set_xlabel("distance (m)")
    ax.set_ylabel("frame delivery ratio")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title + "\n(dashed: where the mean SNR meets the rate's 50% threshold)", fontsize=10)
    ax.legend(ncol=2, fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


# tab10 without its green and red, which mean delivered and lost in the view.
_AP_PALETTE = [0, 1, 4, 5, 6, 8, 9, 7]


def ap_colours(aps: list[str]) -> dict[str, str]:
    """A colour per AP, the same in every figure and in the view."""
    cmap = plt.get_cmap("tab10")
    return {ap: matplotlib.colors.to_hex(cmap(_AP_PALETTE[i % len(_AP_PALETTE)])) for i, ap in enumerate(aps)}


def time_space(result: RunResult, b: breakdown.Breakdown | None = None, title: str | None = None):
    """The time-space figure of a run (a matplotlib Figure), or None when
    no node moves: (a) each moving node's x against time, coloured by the
    AP serving it (grey: none), with its frame drops by reason; (b) the
    drops of frames between cars and APs per 20 m of road, by reason."""
    track = breakdown.tracks(result)
    moving = [n for n in result.nodes if n in track and float(track[n]["x"].max() - track[n]["x"].min()) >= MOVING_M]
    if not moving:
        return None
    assocs = b.associations if b is not None else breakdown.associations(result, track)
    aps = breakdown.access_points(result)
    colours = ap_colours(aps)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 8), gridspec_kw={"height_ratios": [3, 1.4]})
    segments, seg_colours = [], []
    for node in moving:
        ts, xs = track[node]["time_s"].to_numpy(), track[node]["x"].to_numpy()
        serving = breakdown.serving_ap(assocs, node, ts)
        pts = np.column_stack([ts, xs])
        segments.extend(np.stack([pts[:-1], pts[1:]], axis=1))
        seg_colours.extend(colours.get(s, UNSERVED) if s else UNSERVED for s in serving[:-1])
    ax.add_collection(LineCollection(segments, colors=seg_colours, linewidths=1.6))
    ax.autoscale()
    where = {n["name"]: n.get("position", [None])[0] for n in result.scenario.get("node", [])}
    for ap in aps:
        if where.get(ap) is not None:
            ax.axhline(where[ap], color=colours[ap], ls=":", lw=0.9)
            ax.text(ax.get_xlim()[0], where[ap], f" {ap}", color=colours[ap], fontsize=8, va="bottom")
    drops = _link_drops(result, moving, aps)
    for reason, g in drops.group_by("reason", maintain_order=True):
        ax.scatter(g["time_s"], g["x"], s=2, color=DROP_COLOURS.get(reason[0], "black"), alpha=0.5, lw=0,
                   label=f"drop: {reason[0]}")
    handles = [plt.Line2D([], [], color=c, lw=2, label=f"served by {ap}") for ap, c in colours.items()]
    handles.append(plt.Line2D([], [], color=UNSERVED, lw=2, label="not associated"))
    handles += [plt.Line2D([], [], marker="o", ls="", ms=4, color=DROP_COLOURS.get(r, "black"), label=f"drop: {r}")
                for r in drops["reason"].unique(maintain_order=True).to_list()]
    ax.legend(handles=handles, fontsize=7, loc="upper left", ncol=2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("position along the road, x (m)")
    ax.set_title(title or f"{result.scenario.get('name', 'run')}: vehicles over time", fontsize=10, loc="left")
    ax.grid(alpha=0.3)
    if drops.is_empty():
        bx.text(0.5, 0.5, "no frame between a car and an AP was dropped", transform=bx.transAxes, ha="center")
    else:
        binned = drops.with_columns(((pl.col("x") // 20) * 20).alias("bin")).group_by("bin", "reason").agg(pl.len().alias("n"))
        bottom: dict[float, float] = {}
        for reason, g in binned.sort("bin").group_by("reason", maintain_order=True):
            x, n = g["bin"].to_numpy(), g["n"].to_numpy()
            base = np.array([bottom.get(v, 0.0) for v in x])
            bx.bar(x + 10, n, width=20, bottom=base, color=DROP_COLOURS.get(reason[0], "black"), label=reason[0])
            for v, k in zip(x, n):
                bottom[v] = bottom.get(v, 0.0) + k
        bx.legend(fontsize=7, loc="upper right")
    bx.set_xlabel("position along the road, x (m)")
    bx.set_ylabel("frames dropped\nper 20 m")
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _link_drops(result: RunResult, moving: list[str], aps: list[str]) -> pl.DataFrame:
    """Frames between a moving node and an AP that a receiver dropped:
    time_s, x (where the moving node was) and reason."""
    f = table(result, "frames").filter(pl.col("event") == "drop")
    at_car = f.filter(pl.col("node").is_in(moving) & pl.col("peer").is_in(aps)).select("time_ns", "x", "reason")
    at_ap = f.filter(pl.col("node").is_in(aps) & pl.col("peer").is_in(moving)).select(
        "time_ns", pl.col("peer_x").alias("x"), "reason")
    return pl.concat([at_car, at_ap]).sort("time_ns").select(
        (pl.col("time_ns") / 1e9).alias("time_s"), pl.col("x").cast(pl.Float64), "reason")


def save(fig, path: Path, dpi: int = 100) -> Path:
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path


def run_figures(result: RunResult, directory: Path, step: Callable[[str], None] | None = None) -> list[Path]:
    """Writes the run's figures (see the module doc) and the delivery tables
    beside them; `step(name)` is called before each figure is drawn."""
    from wayside.analysis import delivery_vs_distance, rate_crossings

    step = step or (lambda name: None)
    made = []
    step("time-space")
    fig = time_space(result)
    if fig is not None:
        made.append(save(fig, directory / "time_space.png"))
    for t in result.scenario.get("traffic", []):
        if t.get("kind") != "sounder" or t.get("to") != "broadcast":
            continue
        sender = t["from"]
        others = [n for n in result.nodes if n != sender]
        receiver = others[0] if len(others) == 1 else None
        step(f"delivery from {sender}")
        dv = delivery_vs_distance(result, sender, receiver)
        if dv.is_empty():
            continue
        cr = rate_crossings(result, sender, receiver)
        stem = f"delivery_{sender}_to_{receiver}" if receiver else f"delivery_{sender}"
        dv.write_csv(directory / f"{stem}.csv")
        cr.write_csv(directory / f"{stem}_crossings.csv")
        title = f"{sender} → {receiver}" if receiver else f"{sender} → all {len(others)} receivers"
        made.append(delivery_plot(dv, cr, directory / f"{stem}.png", title))
    return made
