"""Peak memory of a run's trace crossing into Python and on into polars.

Runs mukherjee-pedestrian (seed 1: a 3.9 M-row frames table) in a fresh
process, takes the frames into polars, and prints the process's peak
resident set size (ru_maxrss, as `/usr/bin/time -v` reports it) and the
resident size after each step. `--against PYTHON` measures another install
of wayside (say, a virtual environment built at an earlier commit) in the
same run, and prints the ratio of the peaks (above 1: the current install
needs less).

    python benches/handover_rss.py [--scenario NAME] [--against PYTHON]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, resource, sys
import polars as pl
import psutil
import wayside

rss = lambda: psutil.Process().memory_info().rss / 2**20
result = wayside.run(sys.argv[1], seed=1)
after_run = rss()
frames = pl.DataFrame(result.frames)
print(json.dumps({"rows": frames.height, "after_run": after_run, "after_polars": rss(),
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(python: str, scenario: str) -> dict[str, float]:
    out = subprocess.run([python, "-c", CHILD, scenario], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="mukherjee-pedestrian")
    ap.add_argument("--against", help="Python interpreter of another wayside install (the baseline)")
    args = ap.parse_args()
    runs = [("current", sys.executable)] + ([("baseline", args.against)] if args.against else [])
    got = {}
    for name, python in runs:
        m = got[name] = measure(python, args.scenario)
        print(f"{name:>8}: {m['rows']:,} frame rows; peak {m['peak']:.0f} MiB; resident after the run "
              f"{m['after_run']:.0f} MiB, after polars {m['after_polars']:.0f} MiB")
    if args.against:
        print(f"peak, baseline / current: {got['baseline']['peak'] / got['current']['peak']:.2f}x")


if __name__ == "__main__":
    main()
