"""`wayside epidemic …`: city traces and epidemic dissemination on them
(Zahn et al. 2009 §5.6, Figure 13).

    wayside epidemic city --out runs/city          # build the SUMO city (cached)
    wayside epidemic info TRACE                    # vehicles, steps, mean moving speed
    wayside epidemic run TRACE --penetration 12.5 --seeds 12
    wayside epidemic sweep TRACE --out runs/fig13 [--executor dask://HOST:PORT]
    wayside epidemic convert TRACE OUT.one         # The ONE's format (or .parquet)
    wayside epidemic district TRACE --area 2000,1000,3000,2000 --duration 120 --out cut.toml

TRACE is SUMO FCD (.xml, .xml.gz, .csv, .parquet), our Parquet, or The
ONE's external movement format (.one, .txt, optionally .gz).

The CLI registers this sub-app with `app.add_typer(epidemic_cli.app, name="epidemic")`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from wayside.terminal import console, errors, fail

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Epidemic dissemination on city traces (Zahn et al. 2009, Figure 13).")

PAPER_SPEED_KMH = 54.0  # §5.6: "The average velocity for moving vehicles is 54km/h."
PAPER_VEHICLES = 16_529


def _window(text: Optional[str]) -> Optional[tuple[float, float]]:
    if text is None:
        return None
    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        fail(f"--window {text!r}: give FROM,TO in seconds, e.g. 0,300")
    if not b > a:
        fail(f"--window {text!r}: TO must be after FROM")
    return a, b


def _load(path: Path, window: Optional[tuple[float, float]] = None):
    from wayside import movement

    try:
        started = time.perf_counter()
        t = movement.load(path, window)
        return t, time.perf_counter() - started
    except movement.TraceError as e:
        fail(str(e))


def _print_stats(name: str, s: dict) -> None:
    speed = s["mean_moving_speed"] * 3.6
    console.print(f"[bold]{escape(name)}[/]: {s['vehicles']:,} vehicles over {s['end'] - s['start']:.0f} s "
                  f"({s['steps']} steps, {s['samples']:,} samples, at most {s['peak_present']:,} at once)",
                  soft_wrap=True, highlight=False)
    console.print(f"mean speed of moving vehicles: {speed:.1f} km/h (the Portland trace: {PAPER_SPEED_KMH:g} km/h); "
                  f"mean stay {s['mean_presence']:.0f} s", soft_wrap=True, highlight=False)


@app.command()
def city(
    out: Path = typer.Option(Path("runs/city"), "--out", help="Directory for the network, demand and trace (cached there)."),
    seed: int = typer.Option(1, "--seed", min=0, help="SUMO and randomTrips seed."),
) -> None:
    """Build the SUMO city (a 3 x 7 km grid with a river and freeways, about
    16,500 vehicles over 15 minutes) and its trace; cached."""
    from wayside import city as c
    from wayside import movement

    params = c.CityParams(seed=seed)
    parquet = out / "trace.parquet"
    try:
        fcd = c.build(out, params, log=lambda m: errors.print(escape(m), highlight=False))
        if not parquet.is_file() or parquet.stat().st_mtime < fcd.stat().st_mtime:
            t, read_s = _load(fcd, (c.WARMUP_S, c.WARMUP_S + c.DURATION_S))
            movement.save_parquet(t, parquet)
            errors.print(f"read the FCD in {read_s:.1f} s; wrote {escape(str(parquet))}", highlight=False)
    except c.CityError as e:
        fail(str(e))
        return
    t, _ = _load(parquet)
    _print_stats(str(parquet), t.stats())
    console.print(f"the Portland trace: {PAPER_VEHICLES:,} vehicles over 900 s", highlight=False)


@app.command()
def info(trace: Path = typer.Argument(..., help="Trace file."),
         window: Optional[str] = typer.Option(None, "--window", help="FROM,TO: keep this time window (s).")) -> None:
    """Print a trace's figures: vehicles, steps, mean moving speed."""
    t, read_s = _load(trace, _window(window))
    _print_stats(str(trace), t.stats())
    console.print(f"read in {read_s:.2f} s", highlight=False)


RULES_HELP = ("Transfer rules: paper (Zahn et al. §5.6: broadcast, resume, sampled), the-one (The ONE's "
              "EpidemicRouter: one-at-a-time, restart, sampled), or SENDERS,PROGRESS,COMPLETION "
              "(broadcast|one-at-a-time, resume|restart, sampled|link-at-end).")


def _rules_option() -> Any:
    return typer.Option("paper", "--rules", help=RULES_HELP)


def _range_option() -> Any:
    return typer.Option(150.0, "--range", help="Contact range, m (§5.6: 150).")


def _transfer_option() -> Any:
    return typer.Option(20.0, "--transfer", help="Contact time to move the file, s (§5.6: 20).")


@app.command()
def run(
    trace: Path = typer.Argument(..., help="Trace file."),
    penetration: float = typer.Option(12.5, "--penetration", "-p", help="Vehicles carrying a device, percent (100: every vehicle, the seeds included)."),
    seeds: int = typer.Option(12, "--seeds", "-s", min=1, help="Seed devices (in addition)."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Random seed."),
    run_index: int = typer.Option(0, "--run", min=0, help="Run index."),
    window: Optional[str] = typer.Option(None, "--window", help="FROM,TO: keep this time window (s)."),
    rules: str = _rules_option(),
    range_m: float = _range_option(),
    transfer_s: float = _transfer_option(),
    roles: Optional[Path] = typer.Option(None, "--roles", help="Take the devices and seeds from this CSV (vehicle, role) instead of drawing them."),
    save_roles: Optional[Path] = typer.Option(None, "--save-roles", help="Write the devices and seeds as CSV (vehicle, role)."),
    timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write the fraction complete over time (CSV)."),
) -> None:
    """One epidemic run: the fraction of devices with the file at the end."""
    from wayside import epidemic

    t, read_s = _load(trace, _window(window))
    started = time.perf_counter()
    try:
        given = epidemic.load_roles(roles) if roles else None
        o = epidemic.run(t, penetration / 100, seeds, seed, run_index, rules, range_m, transfer_s, given)
    except epidemic.EpidemicError as e:
        fail(str(e))
        return
    sim_s = time.perf_counter() - started
    drawn = f"given in {escape(str(roles))}" if roles else "drawn"
    drawn += f" with seed {seed}, run {run_index}"
    console.print(f"{o.devices:,} devices of {o.vehicles:,} vehicles and {o.seeds} seed{'s' * (o.seeds != 1)} ({drawn}); "
                  f"rules {o.rules}, {range_m:g} m, {transfer_s:g} s", soft_wrap=True, highlight=False)
    console.print(f"seeds: {escape(' '.join(o.seed_vehicles))}", soft_wrap=True, highlight=False)
    console.print(f"{o.complete:,} devices complete ({o.fraction * 100:.1f}%); {o.broken:,} transfers broken off",
                  highlight=False)
    console.print(f"read {read_s:.2f} s, simulate {sim_s:.3f} s", highlight=False)
    if save_roles:
        epidemic.save_roles(o, save_roles)
        console.print(f"wrote the devices and seeds to {escape(str(save_roles))}", highlight=False)
    if timeline:
        o.write_timeline(timeline)


@app.command()
def sweep(
    trace: Path = typer.Argument(..., help="Trace file."),
    out: Path = typer.Option(Path("runs/figure13"), "--out", help="Output directory."),
    runs: int = typer.Option(20, "--runs", "-n", min=1, help="Runs per point."),
    penetration: List[float] = typer.Option([], "--penetration", "-p", help="Percent (repeatable; default Figure 13's)."),
    seeds: List[int] = typer.Option([], "--seeds", "-s", help="Seed devices (repeatable; default 4, 12, 24)."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Random seed."),
    window: Optional[str] = typer.Option(None, "--window", help="FROM,TO: keep this time window (s)."),
    executor: str = typer.Option("local", "--executor", help="local, or dask://HOST:PORT (a running Dask scheduler)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, help="Local worker processes (default: the CPUs)."),
    rules: str = _rules_option(),
    range_m: float = _range_option(),
    transfer_s: float = _transfer_option(),
) -> None:
    """The Figure 13 sweep: median, 5th and 95th percentiles per point, as a
    table, CSV and plot."""
    from wayside import epidemic, jobs

    try:
        jobs.check_executor(executor)
        manifest = epidemic.sweep(trace, out, [p / 100 for p in penetration] or epidemic.PENETRATIONS,
                                  seeds or epidemic.SEED_COUNTS, runs, seed, _window(window), executor, workers,
                                  rules=rules, range_m=range_m, transfer_s=transfer_s)
    except (epidemic.EpidemicError, jobs.ExecutorError, ValueError) as e:
        fail(str(e))
        return
    import polars as pl

    summary = pl.read_csv(out / "figure13.csv")
    table = Table(title=f"Figure 13 on {escape(trace.name)}: devices complete after the trace (%)")
    for c in ("seeds", "vehicles with device", "devices", "median", "5th", "95th"):
        table.add_column(c, justify="right")
    for r in summary.iter_rows(named=True):
        table.add_row(str(r["seeds"]), f"{r['penetration'] * 100:.3g}%", f"{r['devices']:.0f}", f"{r['median'] * 100:.1f}",
                      f"{r['p5'] * 100:.1f}", f"{r['p95'] * 100:.1f}")
    console.print(table)
    n = len(summary) * runs
    console.print(f"{n} runs on {escape(executor)}, wall {manifest['wall_s']:.1f} s; "
                  f"{escape(str(out / 'figure13.png'))}", soft_wrap=True, highlight=False)


@app.command()
def compare(
    sweeps: List[Path] = typer.Argument(..., help="Output directories of `sweep` (each with figure13.csv)."),
    out: Path = typer.Option(Path("figure13-compare.png"), "--out", help="The plot, one panel per sweep."),
) -> None:
    """Plot Figure 13 sweeps side by side (e.g. under --rules paper and the-one)."""
    import json

    import polars as pl

    from wayside import epidemic

    panels = {}
    for d in sweeps:
        try:
            m = json.loads((d / epidemic.MANIFEST).read_text(encoding="utf-8"))
            summary = pl.read_csv(d / "figure13.csv")
        except (OSError, ValueError) as e:
            fail(f"{d}: not a sweep's output ({e})")
            return
        panels[f"{Path(m['trace']).name}, rules {m.get('rules', 'paper')}, {m['runs']} runs a point"] = summary
    epidemic.plot_panels(panels, out)
    console.print(f"wrote {escape(str(out))}", highlight=False)


def _dtn_table(title: str, summary: dict) -> Table:
    from wayside import epidemic_dtn as dtn

    table = Table(title=title)
    table.add_column("MessageStatsReport")
    table.add_column("value", justify="right")
    for k in dtn._REPORT_LINES:
        table.add_row(k, dtn._fmt(summary[k]))
    return table


@app.command()
def dtn(
    trace: Path = typer.Argument(..., help="Trace file."),
    router: str = typer.Option("epidemic", "--router", help="epidemic, spray-and-wait (binary), prophet, direct-delivery, first-contact."),
    interval: str = typer.Option("25,35", "--interval", help="Seconds between messages, LO,HI (The ONE's Events1.interval)."),
    size: str = typer.Option("500k,1M", "--size", help="Message size, LO,HI bytes; k, M, G suffixes (Events1.size)."),
    hosts: Optional[str] = typer.Option(None, "--hosts", help="Source hosts LO,HI, HI excluded (default: every host)."),
    to_hosts: Optional[str] = typer.Option(None, "--tohosts", help="Destination hosts LO,HI (default: the source range)."),
    ttl: int = typer.Option(300, "--ttl", min=1, help="Message TTL, minutes (Group.msgTtl)."),
    copies: int = typer.Option(6, "--copies", min=1, help="Spray-and-wait copies per message."),
    buffer: str = typer.Option("5M", "--buffer", help="Buffer per host, bytes (Group.bufferSize)."),
    speed: str = typer.Option("250k", "--speed", help="Link speed, bytes/s (transmitSpeed)."),
    range_m: float = _range_option(),
    queue: str = typer.Option("random", "--queue", help="Send queue: random (The ONE's default) or fifo."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Random seed."),
    run_index: int = typer.Option(0, "--run", min=0, help="Run index."),
    window: Optional[str] = typer.Option(None, "--window", help="FROM,TO: keep this time window (s)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write summary, messages and hosts as Parquet, and MessageStatsReport.txt."),
) -> None:
    """Route generated messages over a trace with one of The ONE's routers;
    print its MessageStatsReport."""
    from wayside import epidemic_dtn as d

    t, read_s = _load(trace, _window(window))
    started = time.perf_counter()
    try:
        gen = d.Generator(interval, size, hosts or f"0,{t.vehicles}", to_hosts)
        s = d.Settings(router=router, generators=(gen,), ttl_min=ttl, copies=copies, range_m=range_m,
                       speed=d.amount(speed, "--speed"), buffer=int(d.amount(buffer, "--buffer")), queue=queue,
                       seed=seed, run=run_index)
        r = d.run(t, s)
        sim_s = time.perf_counter() - started
        end = t.stats()["end"]
        if out:
            d.write(r, out, trace.name, end)
    except d.DtnError as e:
        fail(str(e))
        return
    console.print(_dtn_table(f"{escape(trace.name)}: {router}, {t.vehicles:,} hosts", r.summary))
    console.print(f"read {read_s:.2f} s, simulate {sim_s:.3f} s", highlight=False)
    if out:
        console.print(f"wrote {escape(str(out))}", highlight=False)


@app.command()
def convert(
    trace: Path = typer.Argument(..., help="Trace file."),
    out: Path = typer.Argument(..., help="Output: .one or .txt (The ONE; .gz compresses), or .parquet (ours)."),
    window: Optional[str] = typer.Option(None, "--window", help="FROM,TO: keep this time window (s)."),
    park: bool = typer.Option(True, "--park/--no-park", help="The ONE: park absent vehicles outside the area (The ONE knows only ids present at the first step)."),
    penetration: Optional[float] = typer.Option(None, "--penetration", "-p", help="The ONE: only equipped vehicles are hosts, drawn as `run` draws them (percent)."),
    seeds: int = typer.Option(12, "--seeds", "-s", min=1, help="With --penetration: seed devices."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Random seed (draws, and The ONE's rngSeed)."),
    run_index: int = typer.Option(0, "--run", min=0, help="Run index of the draws."),
    roles: Optional[Path] = typer.Option(None, "--roles", help="The ONE: the equipped vehicles from this CSV (vehicle, role)."),
    router: str = typer.Option("epidemic", "--router", help="The ONE's router in the settings."),
    range_m: float = _range_option(),
    transfer_s: float = _transfer_option(),
) -> None:
    """Convert a trace to our Parquet, or to a The ONE scenario: movement,
    settings (with the seeds' file as message events), host map."""
    from wayside import epidemic, epidemic_one, movement

    t, _ = _load(trace, _window(window))
    name = out.name.lower().removesuffix(".gz")
    try:
        if name.endswith(".parquet") and not out.name.lower().endswith(".gz"):
            movement.save_parquet(t, out)
            console.print(f"wrote {escape(str(out))}: {t.vehicles:,} vehicles, {t.steps} steps", highlight=False)
            return
        if not name.endswith((".one", ".txt")):
            fail(f"{out}: unknown output format; allowed: .one, .txt, .one.gz, .txt.gz (The ONE), .parquet")
        if not park:
            movement.write_one(t, out, park)
            console.print(f"wrote {escape(str(out))}", highlight=False)
            return
        given = epidemic.load_roles(roles) if roles else None
        if penetration is not None and given is None:
            o = epidemic.run(t, penetration / 100, seeds, seed, run_index)
            given = (list(o.device_vehicles), list(o.seed_vehicles))
        paths = epidemic_one.export(t, out, given, router, range_m, transfer_s, seed=seed)
    except (movement.TraceError, epidemic.EpidemicError, epidemic_one.OneError, OSError) as e:
        fail(str(e))
        return
    hosts = sum(1 for _ in open(paths["hosts"], encoding="utf-8")) - 1
    console.print(f"wrote The ONE scenario, {hosts:,} hosts of {t.vehicles:,} vehicles:", highlight=False)
    for k, p in paths.items():
        console.print(f"  {k}: {escape(str(p))}", soft_wrap=True, highlight=False)


@app.command()
def one(
    settings: Path = typer.Argument(..., help="A The ONE settings file with ExternalMovement."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**63 - 1, help="Random seed (default: MovementModel.rngSeed)."),
    run_index: int = typer.Option(0, "--run", min=0, help="Run index."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write summary, messages and hosts as Parquet, and MessageStatsReport.txt."),
) -> None:
    """Run a The ONE settings file (external movement, one host group)
    here; print its MessageStatsReport."""
    from wayside import epidemic_dtn, epidemic_one

    started = time.perf_counter()
    try:
        sc = epidemic_one.load_settings(settings, seed, run_index)
        t, r = epidemic_one.run_settings(sc)
        if out:
            epidemic_dtn.write(r, out, sc.name, sc.end)
    except (epidemic_one.OneError, epidemic_dtn.DtnError) as e:
        fail(str(e))
        return
    console.print(_dtn_table(f"{escape(sc.name)}: {sc.settings.router}, {t.vehicles:,} hosts", r.summary))
    console.print(f"{time.perf_counter() - started:.2f} s, reading included", highlight=False)


@app.command()
def district(
    trace: Path = typer.Argument(..., help="Trace file."),
    area: str = typer.Option(..., "--area", help="MIN_X,MIN_Y,MAX_X,MAX_Y in metres."),
    start: float = typer.Option(0.0, "--start", min=0, help="Window start, s into the trace."),
    duration: float = typer.Option(120.0, "--duration", help="Window length, s."),
    max_vehicles: int = typer.Option(400, "--max-vehicles", min=1, help="Refuse cuts with more vehicle stays."),
    out: Path = typer.Option(Path("district.toml"), "--out", help="Scenario file to write."),
) -> None:
    """Write a district cut of a trace as a scenario for `wayside run`."""
    from wayside import district as d

    try:
        box = tuple(float(v) for v in area.split(","))
        if len(box) != 4:
            raise ValueError
    except ValueError:
        fail(f"--area {area!r}: give MIN_X,MIN_Y,MAX_X,MAX_Y in metres")
        return
    t, _ = _load(trace)
    try:
        sc = d.write(t, out, area=box, start=start, duration=duration, max_vehicles=max_vehicles, name=out.stem)
    except (d.DistrictError, OSError) as e:
        fail(str(e))
        return
    console.print(f"wrote {escape(str(out))}: {len(sc['node'])} vehicles, {duration:g} s; run it with "
                  f"`wayside run {escape(str(out))}`", soft_wrap=True, highlight=False)
