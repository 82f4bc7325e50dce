"""Sweep + analysis + report of hadaller-highway, end to end.

Measures, in one process and one sitting:

1. baseline: the 20 runs alone (simulation only, nothing saved or
   analyzed) on the same number of local worker processes;
2. the pipeline: `wayside sweep` (20 runs saved as run directories with
   their drive-by digests) followed by `wayside report` (cross-run analysis
   and the HTML page), with an empty static-profile cache so that the 12
   static-lab runs behind the theoretical potential are included;

and prints both wall times and their ratio. The target is a pipeline under
60 s on a 2-core machine.

    python benches/sweep_report.py [--runs 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def simulate(seed: int) -> int:
    import wayside

    return wayside.run("hadaller-highway", seed=seed).stats["transmissions"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    from wayside import report, sweeps as sweep
    from wayside.jobs import run_jobs

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WAYSIDE_CACHE"] = str(Path(tmp) / "cache")  # cold: static runs included

        started = time.perf_counter()
        frames = sum(n for _, n in run_jobs(simulate, list(range(1, args.runs + 1)), workers=args.workers))
        baseline = time.perf_counter() - started

        started = time.perf_counter()
        manifest = sweep.sweep("hadaller-highway", args.runs, Path(tmp) / "runs", workers=args.workers)
        swept = time.perf_counter() - started
        page = report.write(Path(tmp) / "runs", workers=args.workers)
        total = time.perf_counter() - started
        failed = sum(e.get("status") != "ok" for p in manifest["points"] for e in p["runs"])
        size = page.stat().st_size

    print(f"hadaller-highway, {args.runs} runs on {args.workers} workers ({frames:,} frames simulated)")
    print(f"  runs alone (simulate only):     {baseline:6.1f} s")
    print(f"  sweep (simulate, save, digest): {swept:6.1f} s")
    print(f"  report (analysis, static runs, HTML {size / 1e6:.1f} MB): {total - swept:6.1f} s")
    print(f"  sweep + report:                 {total:6.1f} s  (target < 60 s){'' if total < 60 else '  MISSED'}")
    print(f"  ratio pipeline / runs alone:    {total / baseline:6.2f}")
    if failed:
        print(f"  {failed} runs failed")


if __name__ == "__main__":
    main()
