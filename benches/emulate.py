"""Real-time emulation: how late events run against the wall clock.

1. A whole `hadaller-highway` pass (135 s of wall time) with real bulk TCP
   between real hosts at the AP and in the car: the lateness distribution
   (p50, p99, max), whether the run kept up, and the volume delivered
   against the fully simulated pass on the linux-modern TCP profile.
2. Offered load: the car parked 50 m from the AP while the AP's real host
   sends 1000-byte UDP datagrams to it at a rising rate, 20 s per rate (the
   car associates after about 8.5 s). The bench prints, per rate, the
   datagrams/s that reached the emulator, what the car received while
   associated, and p99 lateness; then the highest rate whose p99 stays
   under 1 ms.
3. The same parked run at 4000 datagrams/s with and without the kernel's
   real-time FIFO policy for the simulation's thread (the baseline): the
   ratio of their p99 lateness.

Needs root, /dev/net/tun and `ip`. Everything (the simulator, the real
hosts' programs and kernels) shares this machine's cores. The load average
is printed with the figures, since other work on the machine moves them.

    python benches/emulate.py [--skip-pass] [--rates 1000,4000,16000,32000,64000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

import wayside
from wayside import emulate as emu

HOSTS_PY = str(Path(__file__).resolve().parent.parent / "tests" / "python" / "emulate_hosts.py")
REAL_APP = 2**32 - 1
LINUX = ['node.ap.tcp="linux-modern"', 'node.car.tcp="linux-modern"']
PARKED_S = 20
PARKED = ['node.car.position=[-50, 0]', 'node.car.mobility={model="static"}', f'duration="{PARKED_S} s"']


def in_ns(ns: str, *cmd: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, HOSTS_PY, *cmd],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"


def to_car(result, real: bool) -> int:
    t = pl.DataFrame(result.transport).with_columns(pl.col("node").cast(pl.Utf8)).filter(pl.col("node") == "car")
    if real:
        t = t.filter(pl.col("app") == REAL_APP)
    return int(t["bytes"].cast(pl.Int64).sum())


def lateness(e: dict) -> str:
    return (f"p50 {e['lateness_p50_ms']:.3f} ms, p99 {e['lateness_p99_ms']:.3f} ms, "
            f"max {e['lateness_max_ms']:.3f} ms over {e['events']:,} events; "
            f"{'FELL BEHIND' if e['behind'] else 'kept up'} ({e['late_events']:,} later than "
            f"{e['tolerance_ms']:g} ms)")


def whole_pass(hosts: dict[str, str]) -> None:
    addrs = emu.set_up("hadaller-highway", hosts)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            server = in_ns(hosts["ap"], "serve", addrs["ap"], "8000", "137")
            client = in_ns(hosts["car"], "fetch", addrs["ap"], "8000", "136", f"{tmp}/fetched.json")
            time.sleep(0.5)
            print(f"whole pass: {load()} at the start", flush=True)
            result = emu.emulate("hadaller-highway", hosts)
            client.wait(timeout=60)
            server.kill()
            server.wait()
        finally:
            emu.tear_down(list(hosts.values()))
        fetched = json.loads(Path(f"{tmp}/fetched.json").read_text())
    e = result.stats["emulation"]
    print(f"hadaller-highway, whole pass, real bulk TCP: lateness {lateness(e)}")
    print(f"  {load()} at the end")
    simulated = wayside.run("hadaller-highway", overrides=LINUX)
    real, sim = to_car(result, True), to_car(simulated, False)
    print(f"  delivered to the car: real Linux TCP {real / 1e6:.2f} MB (its program read "
          f"{fetched['bytes'] / 1e6:.2f} MB), simulated linux-modern {sim / 1e6:.2f} MB: ratio {real / sim:.3f}")


def received_mbps(result) -> float:
    """What the car received over the time it received anything, Mb/s."""
    t = pl.DataFrame(result.transport).with_columns(pl.col("node").cast(pl.Utf8)).filter(
        (pl.col("node") == "car") & (pl.col("app") == REAL_APP))
    if t.height < 2:
        return 0.0
    span = (t["time_ns"].max() - t["time_ns"].min()) / 1e9
    return float(t["bytes"].cast(pl.Int64).sum()) * 8 / span / 1e6


def parked_run(hosts: dict[str, str], rate: int, priority: bool = True):
    """One parked run with the AP's host offering `rate` datagrams/s."""
    addrs = emu.set_up("hadaller-highway", hosts, PARKED)
    try:
        blast = in_ns(hosts["ap"], "blast", addrs["car"], "9000", str(PARKED_S), str(rate), "1000")
        result = emu.emulate("hadaller-highway", hosts, overrides=PARKED, realtime_priority=priority)
        blast.kill()
        blast.wait()
    finally:
        emu.tear_down(list(hosts.values()))
    return result


def offered(hosts: dict[str, str], rates: list[int]) -> None:
    print(f"offered load (UDP 1000 B from the AP's host to the parked car, {PARKED_S} s each): {load()}")
    best = None
    for rate in rates:
        result = parked_run(hosts, rate)
        e = result.stats["emulation"]
        entered = e["packets_from_hosts"] / PARKED_S
        print(f"  {rate:>6}/s asked, {entered:>7.0f}/s entered ({entered * 8 / 1e3:5.1f} Mb/s), car received "
              f"{received_mbps(result):5.1f} Mb/s: {lateness(e)}", flush=True)
        if e["lateness_p99_ms"] < 1.0:
            best = (rate, entered)
    print("highest offered load with p99 lateness under 1 ms: " + (
        "none of those tried" if best is None else
        f"{best[1]:.0f} datagrams/s entered ({best[1] * 8 / 1e3:.1f} Mb/s; {best[0]}/s asked)") + f" ({load()})")


def priority(hosts: dict[str, str], rate: int = 4000) -> None:
    """The same parked run with and without the real-time FIFO policy."""
    with_fifo, without = (parked_run(hosts, rate, p).stats["emulation"] for p in (True, False))
    print(f"real-time priority at {rate}/s: with FIFO {lateness(with_fifo)}")
    print(f"  without: {lateness(without)}")
    print(f"  p99 lateness without / with: {without['lateness_p99_ms'] / with_fifo['lateness_p99_ms']:.1f}x "
          f"({load()})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-pass", action="store_true", help="only the offered-load ladder")
    ap.add_argument("--rates", default="1000,4000,16000,32000,64000")
    args = ap.parse_args()
    why = emu.can_set_up()
    if why:
        sys.exit(f"emulation bench cannot run: {why}")
    hosts = {"ap": f"wbench{os.getpid() % 1000}ap", "car": f"wbench{os.getpid() % 1000}car"}
    if not args.skip_pass:
        whole_pass(hosts)
    offered(hosts, [int(r) for r in args.rates.split(",")])
    priority(hosts)


if __name__ == "__main__":
    main()
