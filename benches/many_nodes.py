"""Memory and wall time of the simulator as the number of radios grows.

A multilane highway: N vehicles on 8 lanes (4 each way, 4 m apart), a
vehicle every GAP metres in each lane (default 150 m: about 670 vehicles an
hour a lane at 100 km/h, a third of a lane's capacity), so the road grows
with N (10,000 vehicles: 187.5 km) and each radio has the same neighbours
whatever N; all at 100 km/h, each sending a 200-byte broadcast beacon once a second
from a random phase, over the hadaller-highway channel (three-slope path
loss, 4 dB shadowing, Rician fading). Each size is one process running the
release `run` example; peak memory is that process's maximum resident set.
Memory should grow with N (radios x neighbours), not N squared; `per node`
shows it. Every broadcast reaching a radio above the reception floor is a
row of the trace (about 60 bytes), which is most of the memory.

    nice -n 10 python benches/many_nodes.py [--nodes 1000,2500,5000,10000]
        [--seconds 60] [--gap 150]
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANES = 8
LANE_GAP = 4.0

HEADER = """name = "many-nodes"
duration = "{seconds} s"

[environment]
path_loss = "three-log-distance"
path_loss_exponents = [3.0, 4.0, 6.0]
path_loss_breakpoints = ["230 m", "700 m"]
shadowing_sigma = "4 dB"
shadowing_decorrelation = "20 m"
fading = "rician"
rician_k = "0 dB"
noise_floor = "-95 dBm"

[radio]
standard = "802.11g"
channel = 6
"""


def scenario(n: int, seconds: int, gap: float) -> str:
    rng = random.Random(1)
    parts = [HEADER.format(seconds=seconds)]
    per_lane = -(-n // LANES)
    road = per_lane * gap
    for i in range(n):
        lane, k = i % LANES, i // LANES
        eastbound = lane < LANES // 2
        y = lane * LANE_GAP
        x = k * gap if eastbound else road - k * gap
        parts.append(f'[[node]]\nname = "v{i}"\nposition = [{x:.1f}, {y:.1f}]\ntx_power = "15 dBm"\n'
                     f'mobility = {{ model = "line", speed = "100 km/h", heading = {0 if eastbound else 180} }}\n')
    for i in range(n):
        parts.append(f'[[traffic]]\nkind = "cbr"\nfrom = "v{i}"\nto = "broadcast"\npayload = "200 B"\n'
                     f'interval = "1 s"\nstart = "{rng.uniform(0, 1):.6f} s"\n')
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="1000,2500,5000,10000")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--gap", type=float, default=150.0, help="metres between vehicles in a lane")
    args = ap.parse_args()
    try:
        sizes = sorted(int(x) for x in args.nodes.split(","))
    except ValueError:
        ap.error(f"--nodes: {args.nodes!r} is not a comma-separated list of whole numbers")
    if args.seconds < 1 or args.gap <= 0 or min(sizes) < 1:
        ap.error("--seconds, --gap and every size in --nodes must be positive")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "wayside-sim", "--example", "run"], cwd=ROOT, check=True)
    exe = ROOT / "target" / "release" / "examples" / "run"
    print(f"{args.seconds} s simulated, {args.gap:g} m between vehicles in a lane")
    print(f"{'nodes':>6} {'road km':>8} {'wall s':>8} {'peak MiB':>9} {'KiB/node':>9} {'events':>13} {'frames':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"n{n}.toml"
            path.write_text(scenario(n, args.seconds, args.gap), encoding="utf-8")
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            t0 = time.perf_counter()
            r = subprocess.run([str(exe), str(path), "--no-digest"], capture_output=True, text=True)
            wall = time.perf_counter() - t0
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            if r.returncode != 0:
                print(f"{n:>6} failed: {r.stderr.strip()}")
                return 1
            words = r.stdout.split()
            # ru_maxrss of children is the largest so far: sizes run ascending.
            mib = max(peak, before) / 1024
            km = -(-n // LANES) * args.gap / 1000
            print(f"{n:>6} {km:>8.1f} {wall:>8.1f} {mib:>9.0f} {mib * 1024 / n:>9.0f} {int(words[0]):>13,} {int(words[2]):>9,}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
