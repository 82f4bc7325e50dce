"""Simulator speed against an earlier commit, measured in one run.

Builds the release `run` example of wayside-sim at BASE (in a temporary git
worktree) and at the working tree, then runs the built-in scenarios with
both binaries, interleaved, and prints each one's median wall time and the
ratio (base / current: above 1 means the current tree is faster), with the
events each processed (equal counts: most likely the same results; the
example of older commits prints no digest).

    python benches/speed_vs_commit.py --base 438b744 [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [("saturation", ["duration=\"2 s\""]), ("drive-by", []), ("hadaller-highway", []), ("drivethru-autobahn", []),
         ("zahn-motorway", [])]


def build(tree: Path, target: Path) -> Path:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "wayside-sim", "--example", "run"],
                   cwd=tree, check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release" / "examples" / "run"


def once(exe: Path, flags: list[str], name: str, overrides: list[str]) -> tuple[float, int]:
    """Wall seconds of one run of the scenario's own seed, and its events."""
    t0 = time.perf_counter()
    r = subprocess.run([str(exe), name, *flags, *overrides], capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, int(r.stdout.split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    target = ROOT / "target" / "speed-vs-commit"
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), args.base], cwd=ROOT, check=True)
        try:
            base = shutil.copy(build(tree, target / "base"), Path(tmp) / "run-base")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
        current = build(ROOT, target / "current")
        print(f"{'scenario':<20} {'base s':>8} {'now s':>8} {'ratio':>6} {'events base':>12} {'events now':>12}")
        for name, overrides in CASES:
            times: dict[str, list[float]] = {"base": [], "now": []}
            events = {}
            for _ in range(args.repeat):
                # Today's example would also hash the whole trace; older ones did not.
                for label, exe, flags in (("base", Path(base), []), ("now", current, ["--no-digest"])):
                    t, e = once(exe, flags, name, overrides)
                    times[label].append(t)
                    events[label] = e
            b, n = statistics.median(times["base"]), statistics.median(times["now"])
            print(f"{name:<20} {b:>8.3f} {n:>8.3f} {b / n:>5.2f}x {events['base']:>12,} {events['now']:>12,}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
