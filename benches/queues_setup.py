"""Set-up under load with each AP queue (Hadaller et al. 2007 §9's
question for today's APs): per car, how long from its first beacon to its
first data, and how much of what it then got it lost to that wait.

Two cases, each with the AP's queue `fifo`, `fq_codel` and `airtime`:
- `two`: the built-in `hadaller-two-cars` (two cars 30 s apart), seeds
  1..SEEDS;
- `fifty`: the 50 cars of the ns-3 bench (benches/ns3/bench.py), one run.

Definitions (per car):
- set-up delay: first data byte delivered to the car's application minus
  the first beacon it heard, s;
- set-up loss: the data the car would have got over its set-up delay at
  its own mean goodput from first to last data, as a share of that plus
  what it got (1 for a car that got nothing).

    python benches/queues_setup.py [--case two|fifty|all] [--seeds N]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

QUEUES = ["fifo", "fq_codel", "airtime"]


def _bench_ns3() -> Any:
    path = Path(__file__).resolve().parent / "ns3" / "bench.py"
    spec = importlib.util.spec_from_file_location("bench_ns3", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


def per_car(result: Any, cars: Sequence[str]) -> list[tuple[float, float]]:
    """(set-up delay s, set-up loss) for each car of `result`."""
    import polars as pl

    ev = pl.DataFrame(result.events).with_columns(pl.col("node").cast(pl.Utf8), pl.col("event").cast(pl.Utf8))
    tr = pl.DataFrame(result.transport).with_columns(pl.col("node").cast(pl.Utf8))
    out = []
    for car in cars:
        beacon = ev.filter((pl.col("node") == car) & (pl.col("event") == "first-beacon"))["time_ns"]
        data = tr.filter(pl.col("node") == car)
        if beacon.is_empty() or data.is_empty():
            out.append((math.nan, 1.0))
            continue
        t0 = beacon.min() * 1e-9
        first, last = data["time_ns"].min() * 1e-9, data["time_ns"].max() * 1e-9
        got = float(data["bytes"].cast(pl.UInt64).sum())
        delay = first - t0
        rate = got / (last - first) if last > first else 0.0
        lost = delay * rate
        out.append((delay, lost / (lost + got) if lost + got > 0 else 1.0))
    return out


def _summary(rows: Sequence[tuple[float, float]]) -> str:
    delays = [d for d, _ in rows if not math.isnan(d)]
    losses = [x for _, x in rows]
    no_data = sum(math.isnan(d) for d, _ in rows)
    if not delays:
        return f"{'-':>8}{'-':>8}{'-':>8}{statistics.median(losses):8.0%}{no_data:>8}"
    return (f"{statistics.mean(delays):8.1f}{statistics.median(delays):8.1f}{max(delays):8.1f}"
            f"{statistics.median(losses):8.1%}{no_data:>8}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=["two", "fifty", "all"], default="all")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the two-car case (default 5)")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        print(f"--seeds: {args.seeds} is not a count of runs; give 1 or more", file=sys.stderr)
        return 2
    import wayside

    head = f"{'queue':10}{'car':>8}{'mean s':>8}{'median':>8}{'max s':>8}{'loss':>8}{'no data':>8}"
    if args.case in ("two", "all"):
        print(f"== hadaller-two-cars, seeds 1-{args.seeds}: set-up delay and loss per car ==")
        print(head)
        for q in QUEUES:
            rows: dict[str, list[tuple[float, float]]] = {"car": [], "car2": []}
            for seed in range(1, args.seeds + 1):
                r = wayside.run("hadaller-two-cars", seed, overrides=[f'node.ap.queue="{q}"'])
                for car, row in zip(rows, per_car(r, list(rows))):
                    rows[car].append(row)
            for car, rs in rows.items():
                print(f"{q:10}{car:>8}{_summary(rs)}")
        print()
    if args.case in ("fifty", "all"):
        bench = _bench_ns3()
        base = wayside.load_scenario(bench.BASE_SCENARIO)
        xs = bench.car_starts("fifty")
        cars = [bench.car_name(i) for i in range(len(xs))]
        print("== 50 cars on the ns-3 bench layout: set-up delay and loss over the cars ==")
        print(head)
        for q in QUEUES:
            r = wayside.run(bench.wayside_scenario(base, xs, q))
            print(f"{q:10}{'all':>8}{_summary(per_car(r, cars))}")
        print()
    print("set-up delay: first beacon to first data; loss: share of the car's")
    print("data lost to that delay at its own mean goodput (1: got nothing).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
