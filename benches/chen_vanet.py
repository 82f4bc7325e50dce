"""Chen et al. (chen-vanet): the Figures 2-11 sweep with 95% intervals,
and its speed.

Prints (1) wall time per simulated second at 30% density (about 240
vehicles on the road, every one beaconing) against the same at 10% measured
in this run, (2) the sweep's wall time on `--workers` processes, and (3) the
report (wayside.vanet.report). The paper's set-up is 20 runs per point:

    python benches/chen_vanet.py --runs 20 --workers 2 --out chen.parquet

`--quick` runs a reduced grid (a few ranges, 2 runs) to see the shape.
`--fig9 PATH` also saves Fig. 9 (cwnd against time of one of two sources,
10% density, 100 m range, seed 1) as a PNG.
"""

from __future__ import annotations

import argparse
import time

import polars as pl

from wayside import vanet
from wayside.runner import run


def per_sim_second(density: float, duration_s: float = 20.0) -> float:
    t0 = time.perf_counter()
    run("chen-vanet", seed=1, overrides=vanet.overrides(500, density, 1, duration_s))
    return (time.perf_counter() - t0) / duration_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--quick", action="store_true", help="ranges 100, 300, 500, 900 and sources 1-3 only")
    ap.add_argument("--out", help="write every run's row to this Parquet file")
    ap.add_argument("--fig9", help="save Fig. 9 (cwnd against time) to this PNG")
    args = ap.parse_args()

    if args.fig9:
        two = run("chen-vanet", seed=1, overrides=vanet.overrides(100, 0.1, 2, args.duration))
        vanet.cwnd_figure(two).savefig(args.fig9, dpi=110, metadata={"Software": None})
        print(f"Fig. 9: {args.fig9}")

    sparse, dense = per_sim_second(0.1), per_sim_second(0.3)
    print(f"wall per simulated s: 10% {sparse * 1e3:.0f} ms, 30% {dense * 1e3:.0f} ms "
          f"(30%/10% = {dense / sparse:.2f})")

    ranges = (100, 300, 500, 900) if args.quick else vanet.RANGES
    many = () if args.quick else (5, 10, 20)
    points = [(r, d, 1) for r in ranges for d in vanet.DENSITIES]
    points += [(r, 0.1, s) for r in ranges for s in (2, 3, *many)]
    t0 = time.perf_counter()
    runs = vanet.sweep(points, args.runs, duration_s=args.duration, workers=args.workers)
    wall = time.perf_counter() - t0
    sims = len(points) * args.runs
    print(f"sweep: {len(points)} points x {args.runs} runs = {sims} runs of {args.duration:g} s "
          f"in {wall:.0f} s on {args.workers} workers ({wall / sims:.1f} s per run)")
    if args.out:
        runs.write_parquet(args.out)
    print(vanet.report(runs))
    if many:
        print(vanet.table(runs.filter(pl.col("density") == 0.1), "system_kBps", ["sources", "range_m"]))


if __name__ == "__main__":
    main()
