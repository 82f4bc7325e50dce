"""wayside against The ONE, side by side, on the same trace, the same
equipped vehicles and the same seeds: the curve of devices holding the
file, and the CPU time of each whole process (start-up and reading the
trace included).

    python benches/the_one/compare.py --the-one SRC --trace TRACE \\
        [-p 12.5 ...] [-s 12] [--runs 10] [--router epidemic|spray-and-wait ...]

SRC is a source tree of The ONE (the public repository akeranen/the-one
on GitHub); the bench compiles it with `javac` (a JDK from the OS
packages, e.g. Debian's default-jdk-headless) into the work directory.
Run r draws its devices and seeds as `wayside epidemic run --seed 1 --run
r` does; both sides get them: The ONE through the scenario `wayside
epidemic convert` writes (only equipped vehicles as hosts, every seed
creating the file at 0 s), wayside through `--roles`.

wayside's side: `wayside epidemic run --rules the-one` for epidemic; for
spray-and-wait, `wayside epidemic one` on The ONE's own settings file
(our DTN engine, where the file created at every seed is one message, as
in The ONE; a device holds it from its `first_received`). The ONE's side:
a device holds the file from its first `DE ... R` line in the event log.
Each point (penetration, router) prints its curve; a table of all points
ends the output.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from wayside import epidemic, epidemic_one, movement

PACKAGES = ("core", "movement", "report", "routing", "gui", "input", "applications", "interfaces")


def cpu_of(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Runs `cmd`; returns (CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def build(src: Path, work: Path) -> Path:
    """Compiles The ONE into work/classes (once); returns the class path."""
    classes = work / "classes"
    jars = [str(j) for j in sorted((src / "lib").glob("*.jar"))]
    if not (classes / "core" / "DTNSim.class").is_file():
        classes.mkdir(parents=True, exist_ok=True)
        files = [str(f) for pkg in PACKAGES for f in sorted((src / "src" / pkg).glob("*.java"))]
        print(f"compiling The ONE ({len(files)} files) ...", flush=True)
        cpu_of(["javac", "-nowarn", "-sourcepath", str(src / "src"), "-d", str(classes), "-cp", ":".join(jars), *files])
    return Path(":".join([str(classes), *jars]))


def one_curve(events: Path, devices: set[int], times: np.ndarray) -> np.ndarray:
    """Devices holding the file at each time, from The ONE's event log."""
    first: dict[int, float] = {}
    for line in events.read_text().splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] == "DE" and f[5] == "R":
            to = int(re.search(r"(\d+)$", f[3]).group(1))
            if to in devices:
                first.setdefault(to, float(f[0]))
    got = np.sort(np.fromiter(first.values(), float, len(first)))
    return np.searchsorted(got, times, side="right")


def run_point(a: argparse.Namespace, cp: Path, trace_path: Path, trace: object, percent: float,
              router: str) -> dict:
    """`a.runs` runs of one point on both sides; prints the curve table and
    returns the point's summary row."""
    end = trace.stats()["end"]
    times = np.arange(0.0, end + 1.0, 1.0)
    one_cpu = ours_cpu = 0.0
    curves: dict[str, list[np.ndarray]] = {"the-one": [], "wayside": []}
    devices_n = 0
    wayside = [str(Path(sys.executable).parent / "wayside"), "epidemic"]
    for r in range(a.runs):
        d = a.work.resolve() / f"{trace_path.name}-{percent:g}-{a.seeds}-{router}" / f"run{r}"
        d.mkdir(parents=True, exist_ok=True)
        o = epidemic.run(trace, percent / 100, a.seeds, 1, r)
        devices_n = o.devices
        epidemic.save_roles(o, d / "roles.csv")
        paths = epidemic_one.export(trace, d / "m.one", (list(o.device_vehicles), list(o.seed_vehicles)),
                                    router, 150.0, 20.0)
        hosts = pl.read_csv(paths["hosts"], schema_overrides={"vehicle": pl.String})
        dev = set(hosts.filter(pl.col("role") == "device")["host"].to_list())
        c1, _ = cpu_of(["java", "-Xmx4G", "-cp", str(cp), "core.DTNSim", "-b", "1", str(paths["settings"])], cwd=d)
        one_cpu += c1
        curves["the-one"].append(one_curve(d / "m-reports" / "m_EventLogReport.txt", dev, times))
        if router == "epidemic":
            c, _ = cpu_of([*wayside, "run", str(trace_path.resolve()), "--roles", str(d / "roles.csv"), "--rules",
                           "the-one", "--seed", "1", "--run", str(r), "--timeline", str(d / "timeline.csv")])
            tl = pl.read_csv(d / "timeline.csv")
            curves["wayside"].append(np.interp(times, tl["time"].to_numpy(), tl["complete"].to_numpy()))
        else:
            c, _ = cpu_of([*wayside, "one", str(paths["settings"]), "--out", str(d / "ours")])
            got = pl.read_parquet(d / "ours" / "hosts.parquet").filter(pl.col("number").is_in(list(dev)))
            first = np.sort(got["first_received"].drop_nulls().to_numpy())
            curves["wayside"].append(np.searchsorted(first, times, side="right").astype(float))
        ours_cpu += c
        print(f"run {r}: {devices_n} devices; holding the file at the end: The ONE "
              f"{curves['the-one'][-1][-1]:.0f}, wayside {curves['wayside'][-1][-1]:.0f}; CPU {c1:.1f} s "
              f"against {c:.2f} s", flush=True)
    one = np.array(curves["the-one"])
    ours = np.array(curves["wayside"])
    at = [*range(0, len(times) - 1, max(len(times) // 10, 1)), len(times) - 1]
    print(f"\n{trace_path.name}, {percent:g}% ({devices_n} devices), {a.seeds} seeds, {router}, {a.runs} runs")
    print(f"{'time s':>7} {'The ONE min-med-max':>22} {'wayside min-med-max':>22}  in spread")
    inside = []
    for i in at:
        lo, mid, hi = np.min(one[:, i]), np.median(one[:, i]), np.max(one[:, i])
        col = ours[:, i]
        m = np.median(col)
        inside.append(lo <= m <= hi)
        print(f"{times[i]:7.0f} {lo:6.0f}{mid:8.0f}{hi:8.0f} {np.min(col):6.0f}{m:8.0f}{np.max(col):8.0f}"
              f"  {'yes' if inside[-1] else 'NO'}")
    print(f"wayside's median inside The ONE's run-to-run range at {sum(inside)} of {len(inside)} times")
    print(f"CPU, whole processes: The ONE {one_cpu:.1f} s, wayside {ours_cpu:.1f} s: "
          f"{one_cpu / ours_cpu:.1f}x less for wayside\n", flush=True)
    last = len(times) - 1
    return {"trace": trace_path.name, "point": f"{percent:g}% ({devices_n})", "router": router,
            "one": (np.min(one[:, last]), np.median(one[:, last]), np.max(one[:, last])),
            "ours": (np.min(ours[:, last]), np.median(ours[:, last]), np.max(ours[:, last])),
            "inside": (sum(inside), len(inside)), "cpu": (one_cpu, ours_cpu)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--the-one", type=Path, help="The ONE's source tree (akeranen/the-one).")
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("-p", "--penetration", type=float, action="append", help="percent (repeatable; default 12.5)")
    ap.add_argument("-s", "--seeds", type=int, default=12)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--router", choices=("epidemic", "spray-and-wait"), action="append",
                    help="repeatable; default both")
    ap.add_argument("--work", type=Path, default=Path("runs/the-one"))
    a = ap.parse_args()
    if a.the_one is None or not (a.the_one / "src" / "core" / "DTNSim.java").is_file():
        sys.exit("give --the-one SRC: a source tree of The ONE, e.g. a clone of the public repository "
                 "akeranen/the-one on GitHub; it is compiled with javac (a JDK from the OS packages, "
                 "e.g. default-jdk-headless)")
    cp = build(a.the_one.resolve(), a.work.resolve())
    trace = movement.load(a.trace)
    rows = [run_point(a, cp, a.trace, trace, p, router)
            for p in (a.penetration or [12.5]) for router in (a.router or ["epidemic", "spray-and-wait"])]
    print(f"{a.trace.name}, {a.seeds} seeds, {a.runs} runs a point. Devices holding the file at the end,\n"
          "min/median/max; 'in': times (of 11) at which wayside's median lies in\n"
          "The ONE's range; CPU of the whole processes, The ONE / wayside.")
    print(f"{'point':<13}{'router':<11}{'The ONE':>15}{'wayside':>15}{'in':>6}{'CPU':>7}{'':>7}{'ratio':>6}")
    for r in rows:
        print(f"{r['point']:<13}{r['router'].replace('spray-and-wait', 'spray&wait'):<11}"
              f"{'%.0f/%.0f/%.0f' % r['one']:>15}{'%.0f/%.0f/%.0f' % r['ours']:>15}{'%d/%d' % r['inside']:>6}"
              f"{r['cpu'][0]:6.1f}s{r['cpu'][1]:6.1f}s{r['cpu'][0] / r['cpu'][1]:5.1f}x")


if __name__ == "__main__":
    main()
