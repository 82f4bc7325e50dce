"""Simulator speed against an earlier commit, measured in one run.

Builds the release `run` example of wayside-sim at BASE (in a temporary git
worktree; or takes a binary already built there, --base-exe) and at the
working tree, then runs scenarios with both binaries, interleaved, and
prints per scenario the median CPU seconds (user + system) of each, the
ratio (base / current: above 1 means the current tree is faster), and the
events each processed. With --callgrind it also counts the instructions of
one run of each under callgrind (exact, unlike CPU time on a shared
machine) and prints their ratio.

    python benches/speed_vs_commit.py --base 438b744 [--repeat 5]
        [--callgrind] [--case NAME ...] [--base-exe PATH] [--now-exe PATH]

(--now-exe: compare against a binary built before, e.g. both in the
test-release profile, instead of building the working tree.)

Fewer events with the same results count towards the ratio: the current
tree runs arrivals of undetectable preambles outside the event queue.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES: dict[str, list[str]] = {
    "saturation": ["duration=\"2 s\""],
    "drive-by": [],
    "hadaller-highway": [],
    "drivethru-autobahn": [],
    "zahn-motorway": [],
    "chen-vanet": [],
}


def build(tree: Path, target: Path) -> Path:
    """Builds the `run` example of `tree` into `target`."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "wayside-sim", "--example", "run"],
                   cwd=tree, check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release" / "examples" / "run"


def once(exe: Path, name: str, overrides: list[str]) -> tuple[float, int]:
    """CPU seconds of one run of the scenario's own seed, and its events."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([str(exe), name, "--no-digest", *overrides], capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, int(r.stdout.split()[0])


def instructions(exe: Path, name: str, overrides: list[str]) -> int:
    """Instructions one run executes, counted by callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
                            str(exe), name, "--no-digest", *overrides],
                           capture_output=True, text=True, check=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if m is None:
        raise RuntimeError(f"callgrind printed no count for {name}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the commit to compare against (built here)")
    ap.add_argument("--base-exe", type=Path, help="the base's `run` example, already built")
    ap.add_argument("--now-exe", type=Path, help="the working tree's `run` example, already built")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="only these scenarios")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (slow)")
    args = ap.parse_args()
    if (args.base is None) == (args.base_exe is None):
        print("give one of --base COMMIT or --base-exe PATH", file=sys.stderr)
        return 2
    for flag, exe in (("--base-exe", args.base_exe), ("--now-exe", args.now_exe)):
        if exe is not None and not exe.is_file():
            print(f"{flag}: {exe} is not a file", file=sys.stderr)
            return 2
    if args.callgrind and shutil.which("valgrind") is None:
        print("--callgrind needs valgrind on the PATH", file=sys.stderr)
        return 2
    target = ROOT / "target" / "speed-vs-commit"
    with tempfile.TemporaryDirectory() as tmp:
        if args.base_exe is not None:
            base = args.base_exe
        else:
            tree = Path(tmp) / "base"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), args.base], cwd=ROOT, check=True)
            try:
                base = Path(shutil.copy(build(tree, target / "base"), Path(tmp) / "run-base"))
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
        current = args.now_exe or build(ROOT, Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")))
        head = f"{'scenario':<18} {'base s':>7} {'now s':>7} {'ratio':>6} {'events base':>12} {'events now':>11}"
        print(head + (f" {'instr ratio':>11}" if args.callgrind else ""))
        for name in args.case or list(CASES):
            overrides = CASES[name]
            cpu: dict[str, list[float]] = {"base": [], "now": []}
            events = {}
            for _ in range(args.repeat):
                for label, exe in (("base", base), ("now", current)):
                    t, e = once(exe, name, overrides)
                    cpu[label].append(t)
                    events[label] = e
            b, n = statistics.median(cpu["base"]), statistics.median(cpu["now"])
            line = f"{name:<18} {b:>7.2f} {n:>7.2f} {b / n:>5.2f}x {events['base']:>12,} {events['now']:>11,}"
            if args.callgrind:
                ib, inow = instructions(base, name, overrides), instructions(current, name, overrides)
                line += f" {ib / inow:>10.2f}x  ({ib:,} / {inow:,})"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
