"""Figure 12 of Zahn et al. (2009): content-discovery overhead in packets
against the number of common files with differing versions.

Reads the CSV written by `cargo run --release -p broadside --example fig12`
(columns differing, broadside, broadside_first, full_set, perfect_knowledge,
pinsketch, pinsketch_ok) and writes a PNG.

Usage: python benches/broadside/plot_fig12.py [CSV] [PNG]
(defaults: results/fig12.csv and results/fig12.png beside this script).
Needs matplotlib (installed with the wayside package).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent

SERIES = [
    # column, label, style
    ("broadside", "Broadside", dict(marker="o", color="tab:blue")),
    ("broadside_first", "Broadside first", dict(marker="s", color="tab:blue", linestyle="--")),
    ("full_set", "Full set (Minsky et al.)", dict(marker="^", color="tab:red")),
    ("perfect_knowledge", "Perfect knowledge (Minsky et al.)", dict(marker="v", color="tab:orange")),
    ("pinsketch", "PinSketch, |Δ| known", dict(marker="x", color="tab:gray", linestyle=":")),
]


def load(path: Path) -> dict[str, list[float | None]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path}: no rows")
    out: dict[str, list[float | None]] = {}
    for col in ["differing"] + [s[0] for s in SERIES]:
        if col not in rows[0]:
            raise SystemExit(f"{path}: column {col!r} missing; have {list(rows[0])}")
        out[col] = [float(r[col]) if r[col] not in ("", None) else None for r in rows]
    return out


def plot(data: dict[str, list[float | None]], png: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=150)
    x = data["differing"]
    for col, label, style in SERIES:
        pts = [(a, b) for a, b in zip(x, data[col]) if b is not None and a is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, markersize=4, **style)
    ax.set_xlabel("Common files with different versions")
    ax.set_ylabel("Packets transmitted")
    ax.set_title("Content discovery overhead (20,000-file universe, 10,000 per device)", fontsize=9)
    ax.set_xlim(0, max(v for v in x if v is not None))
    top = max(v for col, _, _ in SERIES for v in data[col] if v is not None)
    ax.set_ylim(0, top * 1.4)  # room for the legend above the curves
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left", ncol=2)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else HERE / "results" / "fig12.csv"
    dst = Path(argv[2]) if len(argv) > 2 else HERE / "results" / "fig12.png"
    plot(load(src), dst)
    print(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
