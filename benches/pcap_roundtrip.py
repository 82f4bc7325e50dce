"""The full round trip of issue 17 through files: a sweep of
hadaller-highway passes written as pcaps and GPS logs with Hadaller
Table 2's errors, read back by `wayside analyze` as a real capture, and
its drive-by analysis set against the native runs'.

Simulates `--runs` passes alternating directions, each with one pcap per
radio (the AP's and the car's, their record times moved onto their hosts'
clocks, off by up to 500 ms) and NMEA logs at 1 Hz with a `--delay` s
measurement delay, 1.36 m/h drift (passes `--spacing-min` apart) and
1.13 m noise; converts the capture directory as `wayside analyze` does
(clock offsets from shared frames, merge, GPS corrections, tables); and
prints the estimated delay, the corrected positions' error against the
simulated ones, and the phase boundaries and supremum data of both paths
with their relative difference (the issue's bounds: 0.2 s, 10 m, 5%).
`--no-fast-frames` runs the passes with `mac.fast_frames=false` (a pcap
record of a fast frame holds its first packet only). The capture
directory takes about 120 MB per pass.

    python benches/pcap_roundtrip.py [--runs 15] [--no-fast-frames] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--delay", type=float, default=1.5)
    ap.add_argument("--spacing-min", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-fast-frames", action="store_true")
    ap.add_argument("--keep", type=Path, help="write the capture and run directories here (default: a temporary one)")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs: at least 2 (the delay estimate needs passes both ways)")

    import numpy as np

    from wayside import roundtrip

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        s = roundtrip.capture_sweep(args.keep or tmp, args.runs, seed=args.seed, fast_frames=not args.no_fast_frames,
                                    delay_s=args.delay, spacing_min=args.spacing_min)
        rows = roundtrip.compare(s)
    c = s.converted.corrections
    e = roundtrip.position_errors(c, s.truths)
    frames = "fast frames off" if args.no_fast_frames else "fast frames on"
    print(f"hadaller-highway, {args.runs} passes both ways, {frames}, seeds {args.seed}.."
          f"{args.seed + args.runs - 1} ({time.perf_counter() - started:.0f} s)")
    print(f"GPS delay: injected {args.delay:.2f} s, estimated {c.delay_s:.2f} s "
          f"(error {abs(c.delay_s - args.delay):.2f} s; bound 0.2 s)")
    print(f"corrected positions vs simulated: median {np.median(e):.2f} m,\n"
          f"  95% {np.percentile(e, 95):.2f} m, max {e.max():.2f} m (bound 10 m)")
    print(f"{'figure':<28}{'native':>12}{'captured':>12}{'error':>9}")
    for name, native, captured, err in rows:
        print(f"{name:<28}{native:>12.2f}{captured:>12.2f}{err:>8.1%}")
    worst = max(err for *_, err in rows)
    print(f"largest difference {worst:.1%} (bound 5%)")


if __name__ == "__main__":
    main()
