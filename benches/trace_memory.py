"""Peak memory of a run written in full, the trace streamed to Parquet as
the run goes on against the trace kept whole, measured in one run.

Each case runs twice, each time in a process of its own: `streamed` writes
the run directory with `wayside.runner.run_to_directory` (Parquet row
groups while the run goes on), `whole` with `wayside.run(...).save(...)`
(the trace in memory until the run ends); `cli` (asked for with --mode)
is `wayside run` (the trace streamed, then read back for the summaries
and figures). Prints each one's peak resident memory, CPU seconds and
`frames` rows, and the ratio.

    python benches/trace_memory.py [--case mukherjee-pedestrian]
        [--case district] [--case highway-10000]
        [--mode streamed] [--mode whole] [--mode cli]

`district` is the 252-vehicle cut of the shipped small city trace (120 s,
docs/epidemic.md); `highway-10000` is benches/many_nodes.py's highway with
10,000 radios 150 m apart (60 s).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("mukherjee-pedestrian", "district", "highway-10000")

CHILD = """
import json, sys
from pathlib import Path
import pyarrow.parquet as pq
import wayside
from wayside.runner import run_to_directory
mode, scenario, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
if mode == "streamed":
    run_to_directory(scenario, out)
elif mode == "cli":
    from wayside.cli import app
    app(["run", scenario, "--out", str(out), "--quiet"], standalone_mode=False)
else:
    wayside.run(scenario).save(out)
print(pq.ParquetFile(out / "frames.parquet").metadata.num_rows)
"""


def scenario_file(case: str, tmp: Path) -> str:
    """The scenario of `case`: a built-in name, or a file written into `tmp`."""
    if case == "mukherjee-pedestrian":
        return case
    path = tmp / f"{case}.toml"
    if case == "district":
        trace = ROOT / "traces" / "small-city.fcd.xml.gz"
        subprocess.run([sys.executable, "-m", "wayside.cli", "epidemic", "district", str(trace),
                        "--area", "2300,1800,2700,2200", "--start", "60", "--duration", "120",
                        "--out", str(path)], check=True, capture_output=True)
    else:
        sys.path.insert(0, str(ROOT / "benches"))
        from many_nodes import scenario

        path.write_text(scenario(10_000, 60, 150.0), encoding="utf-8")
    return str(path)


def measure(mode: str, scenario: str, out: Path) -> tuple[float, float, int]:
    """Peak MB, CPU seconds and frames rows of one run in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-c", CHILD, mode, scenario, str(out)],
                       capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # Called in a process of its own (`--child`), whose one child is this run.
    return after.ru_maxrss / 1024, cpu, int(r.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", choices=CASES)
    ap.add_argument("--mode", action="append", choices=["streamed", "whole", "cli"],
                    help="run these (default: streamed and whole)")
    args = ap.parse_args()
    modes = args.mode or ["streamed", "whole"]
    print(f"{'case':<22} {'mode':<9} {'peak MB':>8} {'CPU s':>7} {'frames rows':>12}")
    for case in args.case or CASES:
        with tempfile.TemporaryDirectory() as tmp:
            scenario = scenario_file(case, Path(tmp))
            peaks = {}
            for mode in modes:
                # A fresh process per measurement: its own peak.
                r = subprocess.run([sys.executable, __file__, "--child", mode, scenario, str(Path(tmp) / mode)],
                                   capture_output=True, text=True, check=True)
                peak, cpu, rows = (float(x) for x in r.stdout.split())
                peaks[mode] = peak
                print(f"{case:<22} {mode:<9} {peak:>8.0f} {cpu:>7.1f} {int(rows):>12,}", flush=True)
            if {"whole", "streamed"} <= set(peaks):
                print(f"{case:<22} whole / streamed peak: {peaks['whole'] / peaks['streamed']:.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        peak, cpu, rows = measure(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        print(peak, cpu, rows)
        sys.exit(0)
    sys.exit(main())
