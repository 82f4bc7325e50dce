"""Where one `wayside epidemic run` process spends its CPU on a trace:
Python's start, the CLI's imports, reading the trace, the run, and the
whole process (with its peak memory); and the Parquet read against a peer,
pyarrow reading the same four columns into memory.

    python benches/the_one/phases.py TRACE [-p 12.5] [-s 12] [--rules the-one] [--repeat 5]

Each phase is the best of --repeat fresh processes (CPU time, user +
system), so that a loaded machine's noise does not add up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# One fresh process: CPU at each phase's end, as JSON on stdout.
PHASES = r"""
import json, sys, time
cpu = [time.process_time()]
from wayside import cli  # noqa: F401  (the CLI's imports, as the wayside command pays them)
cpu.append(time.process_time())
from wayside import epidemic, movement
trace = movement.load(sys.argv[1])
cpu.append(time.process_time())
o = epidemic.run(trace, float(sys.argv[2]) / 100, int(sys.argv[3]), 1, 0, sys.argv[4])
cpu.append(time.process_time())
print(json.dumps({"cpu": cpu, "complete": o.complete}))
"""

PEER = r"""
import json, sys, time
t0 = time.process_time()
import pyarrow.parquet as pq
t1 = time.process_time()
cols = pq.ParquetFile(sys.argv[1]).schema_arrow.names
want = [c for c in ("time", "vehicle", "x", "y", "timestep_time", "vehicle_id", "vehicle_x", "vehicle_y") if c in cols]
t = pq.read_table(sys.argv[1], columns=want)
t2 = time.process_time()
print(json.dumps({"import": t1 - t0, "read": t2 - t1, "rows": t.num_rows}))
"""


def child(cmd: list[str]) -> tuple[str, float, int]:
    """Runs `cmd`; returns its stdout, CPU seconds and peak memory (KiB),
    this child's alone (`wait4`)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd[:4])} ... failed:\n{err.read()[-2000:]}")
        return out.read(), usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("-p", "--penetration", type=float, default=12.5)
    ap.add_argument("-s", "--seeds", type=int, default=12)
    ap.add_argument("--rules", default="the-one")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    args = [str(a.trace), str(a.penetration), str(a.seeds), a.rules]
    wayside = str(Path(sys.executable).parent / "wayside")
    whole_cmd = [wayside, "epidemic", "run", str(a.trace), "-p", str(a.penetration), "-s", str(a.seeds),
                 "--rules", a.rules]
    best: dict[str, float] = {}
    peak = 0
    for _ in range(a.repeat):
        out, _, _ = child([sys.executable, "-c", PHASES, *args])
        c = json.loads(out)["cpu"]
        for name, v in (("start", c[0]), ("imports", c[1] - c[0]), ("read", c[2] - c[1]), ("run", c[3] - c[2])):
            best[name] = min(best.get(name, v), v)
        _, cpu, rss = child(whole_cmd)
        best["whole"] = min(best.get("whole", cpu), cpu)
        peak = max(peak, rss)
        if a.trace.suffix == ".parquet":
            out, _, _ = child([sys.executable, "-c", PEER, str(a.trace)])
            p = json.loads(out)
            for name in ("import", "read"):
                best[f"peer {name}"] = min(best.get(f"peer {name}", p[name]), p[name])
    print(f"{a.trace}, {a.penetration:g}%, {a.seeds} seeds, --rules {a.rules}; CPU, best of {a.repeat}:")
    for name, label in (("start", "Python start"), ("imports", "the CLI's imports"),
                        ("read", "reading the trace"), ("run", "the run")):
        print(f"  {label:<30}{best[name]:7.3f} s")
    rest = best["whole"] - sum(best[n] for n in ("start", "imports", "read", "run"))
    print(f"  {'the rest (printing, exit)':<30}{rest:7.3f} s")
    print(f"  {'whole wayside process':<30}{best['whole']:7.3f} s, peak {peak / 1024:.0f} MB")
    startup = best["start"] + best["imports"] + best["read"]
    print(f"start-up (start, imports, read) {startup:.3f} s against the run's {best['run']:.3f} s: "
          f"{startup / best['run']:.1f}x")
    if "peer read" in best:
        print(f"peer: pyarrow imports in {best['peer import']:.3f} s and reads the four columns in "
              f"{best['peer read']:.3f} s; our read {best['read']:.3f} s: "
              f"{(best['peer import'] + best['peer read']) / best['read']:.1f}x less than pyarrow's import and read")


if __name__ == "__main__":
    main()
