"""Figures written into a run directory."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402


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
