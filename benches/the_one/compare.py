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

wayside's side: `wayside epidemic one` on The ONE's own settings file
(our DTN engine, where the file created at every seed is one message, as
in The ONE; a device holds it from its `first_received`), and for
epidemic also `wayside epidemic run --rules the-one` (the epidemic
engine, which reads the trace itself). The ONE's side: a device holds the
file from its first `DE ... R` line in the event log. Each point
(penetration, router) prints a curve per wayside engine; a table of all
points ends the output ('/dtn': the DTN engine).

The runs of a point can be shared among processes (`--first-run N` with
`--runs M` makes runs N to M-1); `--from-runs` tabulates the runs that
have finished, and `--from-runs --again` runs wayside's side of each
again (after a change to wayside), keeping The ONE's.
"""

from __future__ import annotations

import argparse
import json
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


def wayside_cmd() -> list[str]:
    return [str(Path(sys.executable).parent / "wayside"), "epidemic"]


def run_dtn(d: Path) -> float:
    """wayside's DTN engine on The ONE's own settings file of run d (into
    d/ours); returns its CPU time."""
    c, _ = cpu_of([*wayside_cmd(), "one", str(d / "m.settings.txt"), "--out", str(d / "ours")])
    return c


def run_once(a: argparse.Namespace, cp: Path, trace_path: Path, trace: object, percent: float, router: str,
             d: Path, r: int) -> None:
    """Run r of a point on both sides, in d; saves the CPU times."""
    d.mkdir(parents=True, exist_ok=True)
    o = epidemic.run(trace, percent / 100, a.seeds, 1, r)
    epidemic.save_roles(o, d / "roles.csv")
    paths = epidemic_one.export(trace, d / "m.one", (list(o.device_vehicles), list(o.seed_vehicles)),
                                router, 150.0, 20.0)
    cpu = {"the-one": cpu_of(["java", "-Xmx4G", "-cp", str(cp), "core.DTNSim", "-b", "1", str(paths["settings"])],
                             cwd=d)[0]}
    run_wayside(trace_path, router, d, r, cpu)


def run_wayside(trace_path: Path, router: str, d: Path, r: int, cpu: dict[str, float]) -> None:
    """wayside's side of run r in d (its engines' CPU times into `cpu`,
    saved with The ONE's)."""
    if router == "epidemic":
        cpu["wayside"] = cpu_of([*wayside_cmd(), "run", str(trace_path.resolve()), "--roles", str(d / "roles.csv"),
                                 "--rules", "the-one", "--seed", "1", "--run", str(r), "--timeline",
                                 str(d / "timeline.csv")])[0]
    cpu["wayside-dtn"] = run_dtn(d)
    (d / "cpu.json").write_text(json.dumps(cpu), encoding="utf-8")


def curves_of(d: Path, router: str, times: np.ndarray) -> tuple[int, dict[str, np.ndarray]]:
    """A finished run's devices and curves: The ONE's, and wayside's
    (`wayside`: the epidemic engine under --rules the-one; `wayside-dtn`:
    the DTN engine on The ONE's settings)."""
    hosts = pl.read_csv(d / "m.hosts.csv", schema_overrides={"vehicle": pl.String})
    dev = set(hosts.filter(pl.col("role") == "device")["host"].to_list())
    out = {"the-one": one_curve(d / "m-reports" / "m_EventLogReport.txt", dev, times)}
    if router == "epidemic":
        tl = pl.read_csv(d / "timeline.csv")
        out["wayside"] = np.interp(times, tl["time"].to_numpy(), tl["complete"].to_numpy())
    got = pl.read_parquet(d / "ours" / "hosts.parquet").filter(pl.col("number").is_in(list(dev)))
    first = np.sort(got["first_received"].drop_nulls().to_numpy())
    out["wayside-dtn"] = np.searchsorted(first, times, side="right").astype(float)
    return len(dev), out


def run_point(a: argparse.Namespace, cp: Path | None, trace_path: Path, trace: object, percent: float,
              router: str) -> list[dict]:
    """`a.runs` runs of one point on both sides (with `a.from_runs`, the
    finished runs found in the work directory, running wayside's side again
    with `a.again` or where a run lacks the DTN engine); prints the curve tables and returns the point's
    summary rows, one per wayside engine."""
    end = trace.stats()["end"]
    times = np.arange(0.0, end + 1.0, 1.0)
    cpu_sum: dict[str, float] = {}
    curves: dict[str, list[np.ndarray]] = {}
    devices_n = runs = 0
    for r in range(a.first_run, a.runs):
        d = a.work.resolve() / f"{trace_path.name}-{percent:g}-{a.seeds}-{router}" / f"run{r}"
        if a.from_runs and not (d / "cpu.json").is_file():
            continue
        if not a.from_runs:
            run_once(a, cp, trace_path, trace, percent, router, d, r)
        cpu = json.loads((d / "cpu.json").read_text(encoding="utf-8"))
        if a.again or "wayside-dtn" not in cpu:
            run_wayside(trace_path, router, d, r, cpu)
        devices_n, got = curves_of(d, router, times)
        for k, v in got.items():
            curves.setdefault(k, []).append(v)
            cpu_sum[k] = cpu_sum.get(k, 0.0) + cpu[k]
        runs += 1
        print(f"run {r}: {devices_n} devices; holding the file at the end: "
              + ", ".join(f"{k} {v[-1]:.0f}" for k, v in got.items()) + "; CPU "
              + ", ".join(f"{k} {cpu[k]:.2f} s" for k in got), flush=True)
    if runs == 0:
        print(f"{trace_path.name}, {percent:g}%, {router}: no finished run", flush=True)
        return []
    one = np.array(curves["the-one"])
    at = [*range(0, len(times) - 1, max(len(times) // 10, 1)), len(times) - 1]
    rows = []
    for engine in [k for k in curves if k != "the-one"]:
        ours = np.array(curves[engine])
        print(f"\n{trace_path.name}, {percent:g}% ({devices_n} devices), {a.seeds} seeds, {router}, {runs} runs, "
              f"{engine}")
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
        print(f"CPU, whole processes: The ONE {cpu_sum['the-one']:.1f} s, wayside {cpu_sum[engine]:.1f} s: "
              f"{cpu_sum['the-one'] / cpu_sum[engine]:.1f}x less for wayside\n", flush=True)
        last = len(times) - 1
        rows.append({"point": f"{percent:g}% ({devices_n})",
                     "router": f"{router.replace('spray-and-wait', 'snw')}{'/dtn' * (engine == 'wayside-dtn')}",
                     "one": (np.min(one[:, last]), np.median(one[:, last]), np.max(one[:, last])),
                     "ours": (np.min(ours[:, last]), np.median(ours[:, last]), np.max(ours[:, last])),
                     "inside": (sum(inside), len(inside)), "cpu": (cpu_sum["the-one"], cpu_sum[engine]),
                     "runs": runs})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--the-one", type=Path, help="The ONE's source tree (akeranen/the-one).")
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("-p", "--penetration", type=float, action="append", help="percent (repeatable; default 12.5)")
    ap.add_argument("-s", "--seeds", type=int, default=12)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--first-run", type=int, default=0,
                    help="start at this run (to share a point's runs among processes)")
    ap.add_argument("--router", choices=("epidemic", "spray-and-wait"), action="append",
                    help="repeatable; default both")
    ap.add_argument("--work", type=Path, default=Path("runs/the-one"))
    ap.add_argument("--from-runs", action="store_true",
                    help="run nothing: tabulate the finished runs found in --work")
    ap.add_argument("--again", action="store_true",
                    help="with --from-runs: run wayside's side of every finished run again (The ONE's is kept)")
    a = ap.parse_args()
    has_source = a.the_one is not None and (a.the_one / "src" / "core" / "DTNSim.java").is_file()
    if not (a.from_runs or has_source):
        sys.exit("give --the-one SRC: a source tree of The ONE, e.g. a clone of the public repository "
                 "akeranen/the-one on GitHub; it is compiled with javac (a JDK from the OS packages, "
                 "e.g. default-jdk-headless)")
    cp = None if a.from_runs else build(a.the_one.resolve(), a.work.resolve())
    trace = movement.load(a.trace)
    rows = [r for p in (a.penetration or [12.5]) for router in (a.router or ["epidemic", "spray-and-wait"])
            for r in run_point(a, cp, a.trace, trace, p, router)]
    print(f"{a.trace.name}, {a.seeds} seeds, up to {a.runs} runs a point. Devices holding the file at the end,\n"
          "min/median/max; 'in': times (of 11) at which wayside's median lies in\n"
          "The ONE's range; CPU of the whole processes, The ONE / wayside.")
    print(f"{'point':<14}{'router':<13}{'runs':>4}{'The ONE':>15}{'wayside':>15}{'in':>6}{'CPU':>7}{'':>6}"
          f"{'ratio':>6}")
    for r in rows:
        print(f"{r['point']:<14}{r['router']:<13}{r['runs']:>4}"
              f"{'%.0f/%.0f/%.0f' % r['one']:>15}{'%.0f/%.0f/%.0f' % r['ours']:>15}{'%d/%d' % r['inside']:>6}"
              f"{r['cpu'][0]:6.0f}s{r['cpu'][1]:5.1f}s{r['cpu'][0] / r['cpu'][1]:5.0f}x")


if __name__ == "__main__":
    main()
