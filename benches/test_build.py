"""What the Rust tests cost with the `release` profile (thin LTO) against
the `test-release` profile scripts/test.sh uses (no LTO), measured in one
run.

Builds the workspace's tests from a clean target directory with each
profile, then runs them, and prints each one's wall time and the ratio
(release / test-release: above 1 means test-release is faster). About
25 minutes on two cores.

    python benches/test_build.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("release", "test-release")


def timed(args: list[str], target: Path) -> float:
    """Wall seconds of one cargo invocation into `target`."""
    t0 = time.perf_counter()
    subprocess.run(["cargo", *args, "--target-dir", str(target)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    # Dependencies are fetched first, so neither build pays for the network.
    subprocess.run(["cargo", "fetch", "-q"], cwd=ROOT, check=True)
    rows: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for profile in PROFILES:
            target = Path(tmp) / profile
            build = timed(["test", "--profile", profile, "--workspace", "--no-run"], target)
            run = timed(["test", "--profile", profile, "--workspace"], target)
            rows[profile] = (build, run)
    print(f"{'profile':<14} {'build s':>8} {'run s':>7}")
    for profile, (build, run) in rows.items():
        print(f"{profile:<14} {build:>8.0f} {run:>7.0f}")
    (b0, r0), (b1, r1) = rows[PROFILES[0]], rows[PROFILES[1]]
    print(f"{'ratio':<14} {b0 / b1:>7.2f}× {r0 / r1:>6.2f}×  ({PROFILES[0]} / {PROFILES[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
