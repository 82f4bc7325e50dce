#!/usr/bin/env python3
"""The comparison Mukherjee et al. (2014) ask for: the three built-in
scenarios (mukherjee-static, -slow-drive, -pedestrian) as published (Linux
2.6 Reno, 1000-frame AP queue), with linux-modern (CUBIC with PRR) on both
ends, with split TCP at the AP, and with a 50-frame AP queue (the 50-60
packets the paper saw buffered).

Per scenario and variant, over seeds 1..N: the median data delivered to
the car (MB), loss events (DupAck bursts of 3 or more at the WiFi-side
TCP sender: the server, or the AP when it splits), how many of them are
penalizing (wayside.tcploss), the largest DupAck burst and the RTO count.

    python scripts/compare-mukherjee.py [--runs 3] [--workers 2]

Prints a Markdown table (80 columns) and the command used.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

import polars as pl

import wayside
from wayside import tcploss
from wayside.traces import table

SCENARIOS = ("mukherjee-static", "mukherjee-slow-drive", "mukherjee-pedestrian")
VARIANTS: dict[str, tuple[str, ...]] = {
    "published": (),
    "linux-modern": ('node.server.tcp="linux-modern"', 'node.car.tcp="linux-modern"'),
    "split at AP": ("node.ap.split_tcp=true", 'node.ap.tcp_params.mss="1300 B"'),
    "queue 50": ("node.ap.queue_limit=50",),
    "queue 16": ("node.ap.queue_limit=16",),
}


def measure(scenario: str, variant: str, seed: int) -> tuple[str, str, dict[str, float]]:
    """One run's figures."""
    r = wayside.run(scenario, seed=seed, overrides=list(VARIANTS[variant]))
    sender = "ap" if variant == "split at AP" else "server"
    ev = tcploss.loss_events(r, sender, "car")
    got = table(r, "transport").filter(pl.col("node") == "car", pl.col("proto") == "tcp")
    rto = table(r, "events").filter(pl.col("node") == sender, pl.col("event") == "tcp-timeout")
    return scenario, variant, {
        "mb": float(got["bytes"].cast(pl.Int64).sum()) / 1e6,
        "losses": float(ev.height),
        "penalizing": float(ev.filter(pl.col("kind") == "penalizing").height),
        "burst": float(ev["dupacks"].max() or 0),
        "rto": float(rto.height),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="seeds 1..RUNS per cell")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.runs < 1 or a.workers < 1:
        sys.exit("--runs and --workers: at least 1")
    jobs = [(s, v, seed) for s in SCENARIOS for v in VARIANTS for seed in range(1, a.runs + 1)]
    cells: dict[tuple[str, str], list[dict[str, float]]] = {}
    with ProcessPoolExecutor(a.workers) as pool:
        for s, v, m in pool.map(measure, *zip(*jobs)):
            cells.setdefault((s, v), []).append(m)
    print(f"Median over seeds 1-{a.runs}: MB to the car, loss events (penalizing),")
    print("largest DupAck burst, RTOs.\n")
    print("| scenario    | variant      |     MB | losses (pen.) | burst | RTOs |")
    print("|-------------|--------------|-------:|--------------:|------:|-----:|")
    for s in SCENARIOS:
        for v in VARIANTS:
            ms = cells[(s, v)]
            med = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
            print(f"| {s.removeprefix('mukherjee-'):<11} | {v:<12} | {med['mb']:6.0f} | "
                  f"{med['losses']:5.0f} ({med['penalizing']:3.0f})   | {med['burst']:5.0f} | {med['rto']:4.0f} |")
    print(f"\npython scripts/compare-mukherjee.py --runs {a.runs} --workers {a.workers}")


if __name__ == "__main__":
    main()
