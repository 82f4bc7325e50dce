#!/usr/bin/env python3
"""Compares the AP's rate-control algorithms on the hadaller-highway drive-by.

For each algorithm at the AP (the car keeps the scenario's own: madwifi
SampleRate with default parameters, as in Hadaller et al. 2007) and each car
speed, runs the scenario N times (seed fixed, run = 0..N-1) and reports the
median TCP data delivered to the car per pass, in MB, relative to Ideal
(the oracle upper bound); plus the gain of environment-aware selection over
the paper's tuned SampleRate and over environment-aware without a map.

Writes `rate-control.md` (the table, with the command used) and
`rate-control.png` (median and interquartile range per algorithm and speed)
to the output directory, and prints the table.

    python scripts/compare-rate-control.py --out results/rate-control [--runs 20] [--workers 2]

The numbers depend on the environment calibration of hadaller-highway:
rerun after it changes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shlex
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

SCENARIO = "hadaller-highway"
SEED = 1

# (label, the AP's rate_control, the car's rate_control or None to keep the scenario's)
ENV_AP = '{algorithm="environment-aware", training_passes=3}'
ALGORITHMS: list[tuple[str, str, str | None]] = [
    ("Ideal (oracle)", '{algorithm="ideal"}', None),
    ("SampleRate default", '{algorithm="samplerate", preset="default"}', None),
    ("SampleRate tuned", '{algorithm="samplerate", preset="tuned"}', None),
    ("Onoe", '{algorithm="onoe"}', None),
    ("AMRR", '{algorithm="amrr"}', None),
    ("RRAA", '{algorithm="rraa"}', None),
    ("Minstrel", '{algorithm="minstrel"}', None),
    ("Env.-aware, no map", '{algorithm="environment-aware"}', None),
    ("Env.-aware, 3 passes", ENV_AP, None),
    ("Env.-aware, 3 passes + car hints", ENV_AP, '{algorithm="environment-aware", beacon_hints=true}'),
]
IDEAL = ALGORITHMS[0][0]
BASELINE = "SampleRate tuned"
NO_MAP = "Env.-aware, no map"
TRAINED = "Env.-aware, 3 passes"


def overrides(ap: str, car: str | None, speed: int) -> list[str]:
    o = [f"node.ap.rate_control={ap}", f'node.car.mobility.speed="{speed} km/h"']
    if car is not None:
        o.append(f"node.car.rate_control={car}")
    return o


def one_run(label: str, ap: str, car: str | None, speed: int, run: int) -> tuple[str, int, int, float]:
    import wayside
    import wayside.metrics

    result = wayside.run(SCENARIO, SEED, run=run, overrides=overrides(ap, car, speed))
    mb = wayside.metrics.data_transferred_mb(result, "car", sender="ap", proto="tcp")
    return label, speed, run, mb


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--speeds", type=int, nargs="+", default=[80, 120], help="car speeds, km/h")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs: at least 2 (quartiles)")
    args.out.mkdir(parents=True, exist_ok=True)

    tasks = [(label, a, c, s, r) for label, a, c in ALGORITHMS for s in args.speeds for r in range(args.runs)]
    mb: dict[tuple[str, int], list[float]] = {}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool, Progress() as progress:
        bar = progress.add_task("runs", total=len(tasks))
        futures = [pool.submit(one_run, *t) for t in tasks]
        for f in as_completed(futures):
            label, speed, _, value = f.result()
            mb.setdefault((label, speed), []).append(value)
            progress.advance(bar)

    stats = {k: quartiles(v) for k, v in mb.items()}
    med = {k: v[1] for k, v in stats.items()}
    command = "python scripts/compare-rate-control.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )

    table = Table(title=f"{SCENARIO}: median MB per pass over {args.runs} runs (relative to Ideal)")
    table.add_column("algorithm at the AP")
    for s in args.speeds:
        table.add_column(f"{s} km/h", justify="right")
    md = [
        "| algorithm at the AP | " + " | ".join(f"{s} km/h: MB (IQR) | rel. Ideal" for s in args.speeds) + " |",
        "|---|" + "---:|---:|" * len(args.speeds),
    ]
    for label, _, _ in ALGORITHMS:
        cells, mdcells = [], []
        for s in args.speeds:
            q1, m, q3 = stats[(label, s)]
            rel = m / med[(IDEAL, s)] if med[(IDEAL, s)] > 0 else float("nan")
            cells.append(f"{m:.1f} ({rel:.0%})")
            mdcells += [f"{m:.1f} ({q1:.1f}–{q3:.1f})", f"{rel:.0%}"]
        table.add_row(label, *cells)
        md.append(f"| {label} | " + " | ".join(mdcells) + " |")

    gains = []
    for s in args.speeds:
        t = med[(TRAINED, s)]
        gains.append(
            f"- {s} km/h: environment-aware with 3 earlier passes {t:.1f} MB, "
            f"{t / med[(BASELINE, s)] - 1:+.0%} over SampleRate tuned ({med[(BASELINE, s)]:.1f} MB), "
            f"{t / med[(NO_MAP, s)] - 1:+.0%} over environment-aware without a map ({med[(NO_MAP, s)]:.1f} MB)."
        )

    console = Console()
    console.print(table)
    for g in gains:
        console.print(g)

    text = "\n".join(
        [
            f"Median TCP data delivered to the car per pass of `{SCENARIO}` over {args.runs} runs "
            f"(seed {SEED}, runs 0–{args.runs - 1}; interquartile range in brackets), by the AP's rate "
            "control; the car runs SampleRate with default parameters except where it takes hints.",
            "",
            *md,
            "",
            "Gain of environment-aware selection:",
            "",
            *gains,
            "",
            f"Command: `{command}`",
            "",
        ]
    )
    (args.out / "rate-control.md").write_text(text)

    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(args.speeds)
    xs = range(len(ALGORITHMS))
    for j, s in enumerate(args.speeds):
        meds = [stats[(label, s)][1] for label, _, _ in ALGORITHMS]
        lo = [stats[(label, s)][1] - stats[(label, s)][0] for label, _, _ in ALGORITHMS]
        hi = [stats[(label, s)][2] - stats[(label, s)][1] for label, _, _ in ALGORITHMS]
        ax.bar([x + j * width for x in xs], meds, width, yerr=[lo, hi], capsize=2, label=f"{s} km/h")
    ax.set_xticks([x + width * (len(args.speeds) - 1) / 2 for x in xs])
    ax.set_xticklabels([label for label, _, _ in ALGORITHMS], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TCP data per pass (MB), median and IQR")
    ax.set_title(f"{SCENARIO}: rate control at the AP, {args.runs} runs per bar")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "rate-control.png", dpi=120)
    console.print(f"wrote {args.out / 'rate-control.md'} and {args.out / 'rate-control.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
