"""The `wayside` command line: run scenarios, sweep them, analyze and report on drive-bys (simulated or captured), list and show them.

Errors in scenarios or arguments print one clear message and exit with
code 2, never a traceback."""

from __future__ import annotations

import statistics
import sys
import textwrap
import time
import tomllib
from pathlib import Path
from typing import List, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from wayside import broadside, emulate, engine as _native, epidemic_cli
from wayside.scenario import builtin_scenarios, load_scenario
from wayside.terminal import console, errors, fail

MOST_NODES = 20  # rows of `wayside run`'s per-node table

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown", help=__doc__.splitlines()[0])
app.add_typer(broadside.app, name="broadside", help="Run Broadside on real hosts: keygen, publish, serve, status, relay.")
app.add_typer(epidemic_cli.app, name="epidemic", help="Epidemic dissemination on city traces: city, info, run, sweep, convert, district.")
app.command("emulate")(emulate.emulate_command)
app.command("emulate-setup")(emulate.setup_command)


@app.command()
def run(
    scenario: str = typer.Argument(..., help="Built-in scenario name or path to a TOML scenario file."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**64 - 1, help="Run seed (default: the scenario's)."),
    run_index: int = typer.Option(0, "--run", min=0, help="Run index, mixed into every random stream."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: `runs/SCENARIO-seedN`)."),
    set_: List[str] = typer.Option([], "--set", help="Override a scenario key: KEY=VALUE (repeatable)."),
    pcap: Optional[Path] = typer.Option(
        None, "--pcap", help="Write one pcap per radio (802.11 + radiotap) into this directory "
        "(default with a [pcap] section: the run directory's pcap/)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the run directory."),
    events: bool = typer.Option(False, "--events", help="Also print every connection event's first occurrence."),
) -> None:
    """Run a scenario once: print a summary per node and per car and write
    a run directory (scenario as run, Parquet traces, per-second summary,
    figures) and, with --pcap or a [pcap] section, a capture per radio."""
    from wayside.result import RunResult
    from wayside.runner import run_to_directory

    try:
        resolved = load_scenario(scenario, set_)
        _warn(resolved)
        name = resolved.get("name") or Path(scenario).stem
        used_seed = seed if seed is not None else resolved.get("seed", 1)
        directory = out or Path("runs") / f"{name}-seed{used_seed}"
        pcap_dir = pcap or (directory / "pcap" if "pcap" in resolved else None)
        # The trace goes to the run directory while the run goes on, so the
        # simulator's memory is bounded by a batch of rows, not by the run.
        started = time.perf_counter()
        try:
            run_to_directory(scenario, directory, seed, run=run_index, overrides=set_, pcap=pcap_dir)
            wall = time.perf_counter() - started
            result = RunResult.load(directory)
            result.save_summaries(directory)
            figures = _figures(result, directory)
        except OSError as e:
            fail(f"run directory {directory}: cannot be written ({e.strerror or e}); give --out a directory that can be created")
            return
    except _native.ScenarioError as e:
        fail(str(e))
        return
    if quiet:
        print(directory)
        return
    _print_summary(result, wall, events)
    console.print(f"run directory: [bold]{escape(str(directory))}[/]", soft_wrap=True)
    for f in figures:
        console.print(f"figure: {escape(str(f))}", soft_wrap=True)


def _figures(result, directory: Path) -> list[Path]:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from wayside.plots import run_figures

    with Progress(SpinnerColumn(), TextColumn("figure: {task.description}"), TimeElapsedColumn(), console=errors,
                  transient=True, disable=not errors.is_terminal) as bar:
        task = bar.add_task("", total=None)
        return run_figures(result, directory, lambda name: bar.update(task, description=escape(name)))


def _print_summary(result, wall: float, events: bool = False) -> None:
    s = result.summary()
    # Two-line headers of at most 7 characters a line keep the table within
    # 80 columns with node names of up to 12.
    table = Table(title=f"{result.scenario.get('name', 'run')}: {result.duration_s:g} s simulated",
                  box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    cols = [
        ("node", "node", str),
        ("frames\ntx", "frames_tx", str),
        ("frames\nrx", "frames_rx", str),
        ("frames\ndropped", "frames_dropped", str),
        ("MSDUs\nok", "msdu_delivered", str),
        ("MSDUs\nfailed", "msdu_failed", str),
        ("queue\ndrops", "msdu_queue_drops", str),
        ("tries\n/MSDU", "mean_attempts", lambda v: f"{v:.2f}"),
        ("goodput\nin Mb/s", "goodput_in_mbps", lambda v: f"{v:.3f}"),
    ]
    for title, _, _ in cols:
        table.add_column(title, justify="right" if title != "node" else "left")
    for row in s.head(MOST_NODES).iter_rows(named=True):
        table.add_row(*[fmt(row[key]) for _, key, fmt in cols])
    console.print(table)
    if s.height > MOST_NODES:
        console.print(f"… and {s.height - MOST_NODES} more nodes (all of them: summary.json in the run directory)",
                      highlight=False)
    if events:
        _print_connection(result)
    _print_cars(result)
    frames = result.frames.num_rows
    tx = result.stats["transmissions"]
    console.print(
        f"{result.stats['events']:,} events, {tx:,} transmissions, {frames:,} frame records; "
        f"wall {wall:.2f} s ({tx / wall if wall > 0 else float('inf'):,.0f} simulated frames/s)"
    )


def _print_cars(result) -> None:
    """Per car: data, first and last data, the APs that served it and, if
    any association changed AP, its handovers; then data per flow."""
    from wayside import breakdown

    b = breakdown.breakdown(result)
    if not b.cars.is_empty():
        moved = b.cars["handovers"].sum() > 0
        table = Table(title="per car (data: application payload in and out)", box=box.SIMPLE_HEAD,
                      collapse_padding=True, pad_edge=False)
        heads = ["car", "data\nMB", "first data\ns (x m)", "last data\ns (x m)", "served by"] + (["hand-\novers"] if moved else [])
        for h in heads:
            table.add_column(h, justify="left" if h in ("car", "served by") else "right", overflow="fold")

        def at(t, x) -> str:
            return "—" if t is None else f"{t:.1f} ({x:.0f})"

        for r in b.cars.iter_rows(named=True):
            row = [escape(r["car"]), f"{r['received_mb'] + r['sent_mb']:.2f}", at(r["first_data_s"], r["first_data_x"]),
                   at(r["last_data_s"], r["last_data_x"]), escape(r["served_by"] or "—")]
            table.add_row(*row, *([str(r["handovers"])] if moved else []))
        console.print(table)
    if not b.flows.is_empty():
        console.print(f"data delivered: {b.data_mb:.2f} MB over {b.flows.height} flow{'s' * (b.flows.height != 1)} "
                      "(per flow: wayside.breakdown.flows)", highlight=False)


def _print_connection(result) -> None:
    """Where each connection milestone first happened, and data delivered."""
    import polars as pl

    events = pl.DataFrame(result.events)
    if events.is_empty():
        return
    first = (
        events.with_columns(pl.col("node").cast(pl.Utf8), pl.col("peer").cast(pl.Utf8), pl.col("event").cast(pl.Utf8))
        .group_by("node", "peer", "event", maintain_order=True)
        .agg(pl.col("time_ns").first(), pl.col("x").first(), pl.len().alias("count"))
        .sort("time_ns")
    )
    table = Table(title="connection events (first occurrence)")
    for c in ("time (s)", "node", "peer", "event", "x (m)", "count"):
        table.add_column(c, justify="left" if c in ("node", "peer", "event") else "right")
    for r in first.iter_rows(named=True):
        table.add_row(f"{r['time_ns'] / 1e9:.3f}", r["node"], r["peer"], r["event"], f"{r['x']:.0f}", str(r["count"]))
    console.print(table)
    transport = pl.DataFrame(result.transport)
    if not transport.is_empty():
        per = transport.with_columns(pl.col("node").cast(pl.Utf8), pl.col("proto").cast(pl.Utf8)).group_by("node", "proto").agg(
            (pl.col("bytes").cast(pl.UInt64).sum() / 1e6).alias("mb")
        )
        for r in per.sort("node").iter_rows(named=True):
            console.print(f"delivered to {r['node']} over {r['proto']}: {r['mb']:.2f} MB")


@app.command()
def scenarios() -> None:
    """List the built-in scenarios."""
    table = Table(title="built-in scenarios")
    table.add_column("name")
    table.add_column("description")
    for name in builtin_scenarios():
        table.add_row(name, load_scenario(name).get("description", ""))
    console.print(table)


@app.command()
def show(
    scenario: str = typer.Argument(..., help="Built-in scenario name or TOML file."),
    set_: List[str] = typer.Option([], "--set", help="Override a scenario key: KEY=VALUE (repeatable)."),
    resolved_: bool = typer.Option(
        False, "--resolved", help="Also write out every default (each node's rate control, timers, ...) as it would run."
    ),
) -> None:
    """Validate a scenario and print it as it would run."""
    from wayside.scenario import scenario_text

    resolve = _native.resolve_defaults if resolved_ else _native.resolve
    try:
        resolved = resolve(scenario_text(scenario), set_)
    except _native.ScenarioError as e:
        fail(str(e))
        return
    _warn(tomllib.loads(resolved))
    # Verbatim: the output is TOML that can be saved and run again.
    sys.stdout.write(resolved)


def _warn(resolved: dict) -> None:
    """Prints the scenario's warnings (`wayside.scenario.warnings`) to stderr."""
    from wayside.scenario import warnings

    for w in warnings(resolved):
        errors.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)


@app.command()
def validate(
    targets: Optional[List[str]] = typer.Argument(
        None, metavar="[TARGETS]...", show_default=False, help="Validation files or directories (paths), or names of the papers whose files ship with wayside (default: every shipped file)."
    ),
    runs: Optional[int] = typer.Option(None, "--runs", min=1, help="Runs per target (and grid point), replacing each file's runs."),
    n_jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Parallel worker processes (default: the number of CPUs)."),
    only: List[str] = typer.Option([], "--only", help="Only targets with this name (glob, repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the table to DIR/validation.json and DIR/validation.csv."),
    executor: str = typer.Option("local", "--executor", help="local, or dask://HOST:PORT (a running Dask scheduler)."),
    details: bool = typer.Option(False, "--details", help="Under each target: its source, allowed range, runs, and why it missed."),
    seed_sets: int = typer.Option(
        1, "--seed-sets", min=1, max=20,
        help="Measure every target on this many disjoint sets of seeds (set j: the file's seeds shifted by j x runs) and show in how many each passes.",
    ),
) -> None:
    """Reproduce the papers' published figures (the validation files shipped
    with wayside, or your own): run each target's scenario, measure, compare
    with the paper within its tolerance.
    Exit code 0 if all pass, 1 if any misses, 2 on bad input or errors."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from wayside import jobs
    from wayside import validate as v

    try:
        jobs.check_executor(executor)
        files = v.find_files(targets or [])
        loaded = [t for f in files for t in v.load_file(f)]
        chosen = v.select(loaded, only)
    except (v.ValidationFileError, jobs.ExecutorError) as e:
        fail(str(e))
        return
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=errors, transient=True, disable=not errors.is_terminal,
    ) as bar:
        task = bar.add_task("running", total=None)

        def starting(j: int) -> None:
            bar.reset(task, total=None, description=f"set {j + 1}/{seed_sets}" if seed_sets > 1 else "running")

        try:
            sets, total_simulations = v.run_seed_sets(
                chosen, seed_sets, runs=runs, jobs=n_jobs, executor=executor, starting=starting,
                progress=lambda done, total: bar.update(task, completed=done, total=total))
        except jobs.ExecutorError as e:
            fail(str(e))
            return
    wall = time.perf_counter() - started
    rows = [r for set_rows in sets for r in set_rows]
    code = v.exit_code(rows)
    n_runs = sum(r.runs for r in rows if r.kind == "value")
    if seed_sets == 1:
        _print_validation(v.render(rows, details))
        summary = v.tally(rows)
    else:
        _print_validation(v.render_sets(sets, details))
        summary = v.tally_sets(sets)
    for text in (summary, *[e for e in [v.sample_errors(rows)] if e], f"{len(chosen)} targets{f' x {seed_sets} seed sets' if seed_sets > 1 else ''}, "
                 f"{n_runs} measured runs from {total_simulations} simulations, wall {wall:.1f} s"):
        console.print(escape(textwrap.fill(text, v.WIDTH, subsequent_indent="  ")), highlight=False, soft_wrap=True)
    if out is not None:
        try:
            for path in v.write_outputs(rows, out):
                console.print(f"wrote {escape(str(path))}", soft_wrap=True)
        except OSError as e:
            fail(f"--out {out}: cannot be written ({e.strerror or e})")
    for r in rows:
        if r.status == "ERROR":
            errors.print(f"[bold red]error:[/] {escape(r.paper)}/{escape(r.name)}: {escape(r.detail)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=code)


@app.command()
def sweep(
    scenario: str = typer.Argument(..., help="Built-in scenario name or path to a TOML scenario file."),
    runs: int = typer.Option(20, "--runs", "-n", min=1, help="Runs per grid point (seeds SEED .. SEED+RUNS-1)."),
    grid: List[str] = typer.Option([], "--grid", help="KEY=V1,V2,... : run every value (repeatable; the product of all lists). KEY1,KEY2=... sets both keys to each value."),
    zip_: List[str] = typer.Option([], "--zip", help="KEY=V1,V2,... : lists taken in step, not crossed (repeatable; all of one length; crossed with --grid)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: `runs/SCENARIO-sweep`)."),
    executor: str = typer.Option("local", "--executor", help="local, or dask://HOST:PORT (a running Dask scheduler)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, help="Local worker processes (default: the number of CPUs)."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Seed of the first run."),
    set_: List[str] = typer.Option([], "--set", help="Override a scenario key for every run: KEY=VALUE (repeatable)."),
    recommendations: bool = typer.Option(False, "--recommendations", help="Instead of a grid: the scenario as it is, each of Hadaller et al.'s recommendations (§7, §8) it accepts, and all combined."),
) -> None:
    """Run a scenario many times (seeds x grid points), save every run and a
    manifest for `wayside report`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    import polars as pl

    from wayside import jobs
    from wayside import sweeps as sw
    from wayside.stats import paired_gain

    try:
        jobs.check_executor(executor)
        parsed = sw.parse_grid(grid)
        zipped = sw.parse_grid(zip_, "--zip")
        name = sw.plan(scenario, runs, parsed, Path("."), seed, set_, recommendations, zipped)[1]["scenario"]
    except (sw.SweepError, jobs.ExecutorError, _native.ScenarioError) as e:
        fail(str(e))
        return
    directory = out or Path("runs") / f"{name}-sweep"
    started = time.perf_counter()
    try:
        with Progress(
            TextColumn("[bold]sweep[/] {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("eta"), TimeRemainingColumn(), console=errors, transient=True, disable=not errors.is_terminal,
        ) as bar:
            task = bar.add_task(escape(str(name)), total=None)
            manifest = sw.sweep(scenario, runs, directory, parsed, seed, set_, executor=executor, workers=workers,
                                progress=lambda done, total: bar.update(task, completed=done, total=total),
                                recommendations=recommendations, zipped=zipped)
    except (sw.SweepError, jobs.ExecutorError, _native.ScenarioError) as e:
        fail(str(e))
        return
    wall = time.perf_counter() - started
    runs_table = sw.runs_table(manifest)
    flows = [c for c in runs_table.columns if c.startswith("MB ")]
    table = Table(title=f"sweep {name}: {runs} runs per point", box=box.SIMPLE_HEAD, collapse_padding=True,
                  pad_edge=False)
    for c in ("point", "runs\nok", "MB per run, all flows\nmin / median / max", "mean vs first\n(95% CI, paired)"):
        table.add_column(c, justify="left" if c == "point" else "right", overflow="fold")
    failed = 0
    first: dict[int, float] = {}
    for p in manifest["points"]:
        ok = [r for r in p["runs"] if r.get("status") == "ok"]
        failed += len(p["runs"]) - len(ok)
        by_seed = {r["seed"]: r["data_mb"] for r in ok if r.get("data_mb") is not None}
        mb = sorted(by_seed.values())
        spread = f"{mb[0]:.1f} / {statistics.median(mb):.1f} / {mb[-1]:.1f}" if mb else "—"
        if p is manifest["points"][0]:
            first = by_seed
        gain = str(paired_gain(first, by_seed)) if p is not manifest["points"][0] else ""
        table.add_row(escape(p["label"] or "(scenario as is)"), f"{len(ok)}/{len(p['runs'])}", spread, gain)
    console.print(table)
    console.print(f"data: application payload delivered, all {len(flows)} flow{'s' * (len(flows) != 1)} of a run\n"
                  "median MB per run, per flow:", highlight=False)
    ok_runs = runs_table.filter(pl.col("status") == "ok")
    for (label,), g in ok_runs.group_by("point", maintain_order=True):
        per_flow = ", ".join(f"{c[3:]} {g[c].median():.2f}" for c in flows if g[c].null_count() < g.height)
        console.print(escape(textwrap.fill(f"{label}: {per_flow or '—'}", 78, subsequent_indent="  ")), highlight=False,
                      soft_wrap=True)
    for s in manifest.get("skipped", []):
        console.print(f"not applicable: {escape(s['name'])} ({escape(s['reason'])})", soft_wrap=True, highlight=False)
    console.print(f"{sum(len(p['runs']) for p in manifest['points'])} runs on {escape(executor)}, wall {wall:.1f} s; "
                  f"manifest: {escape(str(directory / sw.MANIFEST))}", soft_wrap=True, highlight=False)
    for p in manifest["points"]:
        for r in p["runs"]:
            if r.get("status") != "ok":
                errors.print(f"[bold red]error:[/] {escape(p['label'] or name)} seed {r['seed']}: {escape(r.get('message', ''))}",
                             highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(code=1)


@app.command()
def recommendations(
    runs: int = typer.Option(20, "--runs", "-n", min=2, help="Runs per point (seeds SEED .. SEED+RUNS-1)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, help="Local worker processes (default: the number of CPUs)."),
    executor: str = typer.Option("local", "--executor", help="local, or dask://HOST:PORT (a running Dask scheduler)."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1, help="Seed of the first run."),
) -> None:
    """Hadaller et al.'s recommendations (§7, §8) measured on hadaller-highway
    and hadaller-highway-remote: data per run and each one's gain with a 95%
    confidence interval (nothing is written to disk)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from wayside import jobs
    from wayside import recommend as rc

    try:
        jobs.check_executor(executor)
        with Progress(TextColumn("recommendations"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=errors, transient=True, disable=not errors.is_terminal) as bar:
            task = bar.add_task("runs", total=None)
            columns = rc.measure(runs=runs, base_seed=seed, executor=executor, workers=workers,
                                 progress=lambda done, total: bar.update(task, completed=done, total=total))
    except (jobs.ExecutorError, _native.ScenarioError) as e:
        fail(str(e))
        return
    console.print(rc.render(columns, runs, seed), highlight=False, soft_wrap=True, markup=False)


@app.command()
def report(
    runs_dir: Path = typer.Argument(..., help="A directory written by `wayside sweep` (or holding `wayside run` directories)."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file to write (default: RUNS_DIR/report.html)."),
    static: str = typer.Option("static-lab", "--static", help="Scenario measured at each fixed rate for the theoretical potential and ACK costs."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, help="Processes for the static-rate runs when not cached."),
) -> None:
    """Write a self-contained HTML report of runs: data per flow, car and
    AP, goodput along the road, a time-space plot; for a drive-by past one
    AP also figures after Hadaller et al. 2007 (and, for the paper's own
    scenarios, our numbers against the paper's); for a
    Parquet file of chen-vanet sweep runs (benches/chen_vanet.py --out), a
    Markdown report of Chen et al.'s Figures 2-11."""
    from wayside import report as rp

    started = time.perf_counter()
    if runs_dir.suffix == ".parquet":
        from polars.exceptions import PolarsError

        from wayside import vanet

        try:
            path = vanet.write_report(runs_dir, out)
        except (OSError, ValueError, PolarsError) as e:
            fail(f"{runs_dir}: cannot be reported on: {e}")
            return
        console.print(f"report: [bold]{escape(str(path))}[/] ({time.perf_counter() - started:.1f} s)", soft_wrap=True)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        with Progress(TextColumn("[bold]report[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=errors, transient=True, disable=not errors.is_terminal) as bar:
            task = bar.add_task("", total=None)
            path = rp.write(runs_dir, out, static_scenario=static, workers=workers,
                            progress=lambda what, done, total: bar.update(task, description=escape(what),
                                                                          completed=done, total=total))
    except (rp.ReportError, _native.ScenarioError) as e:
        fail(str(e))
        return
    except (OSError, ValueError) as e:
        fail(f"{runs_dir}: cannot be reported on: {e}")
        return
    _wrote("report", path, started)


@app.command()
def view(
    run_dir: Path = typer.Argument(..., help="A run directory written by `wayside run` or `wayside sweep`."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file to write (default: RUN_DIR/view.html)."),
) -> None:
    """Write one offline HTML page that replays a run: the road, APs and
    vehicles moving over time, frames coloured by outcome, association
    events and handovers, and a time slider (open it in any browser)."""
    from wayside import view as vw

    started = time.perf_counter()
    try:
        path = vw.write(run_dir, out)
    except vw.ViewError as e:
        fail(str(e))
        return
    _wrote("view", path, started)


def _wrote(what: str, path: Path, started: float) -> None:
    """Says which page was written, its size and how long it took."""
    size = path.stat().st_size / 1e6
    console.print(f"{what}: [bold]{escape(str(path))}[/] ({size:.1f} MB, {time.perf_counter() - started:.1f} s)",
                  soft_wrap=True)


@app.command()
def analyze(
    directory: Path = typer.Argument(..., help="A capture directory (with capture.toml), or directories of runs from `wayside run` / `wayside sweep`."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where a capture's runs are written as run directories (default: DIRECTORY/runs)."),
    static: str = typer.Option("static-lab", "--static", help="Scenario measured at each fixed rate for the theoretical potential and ACK costs."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1, help="Processes for the static-rate runs when not cached."),
) -> None:
    """The drive-by analysis of Hadaller et al. (2007) on simulated runs or
    on a measured drive-by: a capture directory (sniffer captures, pcap or
    pcapng with radiotap, Prism or AVS headers, and GPS logs, described by
    capture.toml) is merged, corrected for GPS error as the paper's Table 2
    does, and written as run directories that `wayside report` reads."""
    from wayside import capture, driveby

    runs_root = directory
    try:
        if (directory / capture.MANIFEST).is_file():
            runs_root = out or directory / "runs"
            converted = capture.convert(directory, runs_root)
            _print_corrections(converted)
        dirs = driveby.run_dirs(runs_root)
        if not dirs:
            fail(f"{directory}: neither a capture directory ({capture.MANIFEST}) nor a directory of runs (summary.json)")
            return
        a = driveby.analyze_dirs(dirs, static_scenario=static, workers=workers)
    except (capture.CaptureDirError, _native.ScenarioError) as e:
        fail(str(e))
        return
    except (OSError, ValueError) as e:
        fail(f"{directory}: cannot be analyzed: {e}")
        return
    _print_driveby(a)
    console.print(f"runs: {escape(str(runs_root))}; HTML report: wayside report {escape(str(runs_root))}", soft_wrap=True, highlight=False)


def _print_corrections(converted) -> None:
    c = converted.corrections
    how = "estimated from runs in opposite directions" if c.delay_estimated else "given in capture.toml"
    console.print(f"GPS measurement delay: {c.delay_s:.2f} s ({how})", highlight=False)
    table = Table(title="per run: clocks and AP position (Hadaller Table 2)")
    for col in ("run", "host clock offsets (ms, frames shared)", "AP fix spread (m)"):
        table.add_column(col, justify="left" if col != "AP fix spread (m)" else "right")
    for name, offsets in converted.offsets.items():
        clocks = ", ".join(f"{h} {v * 1e3:+.1f} ({offsets.shared[h]})" for h, v in sorted(offsets.seconds.items()))
        table.add_row(escape(name), escape(clocks), f"{c.ap_spread_m[name]:.1f}")
    console.print(table)


def _print_driveby(a) -> None:
    def m(v) -> str:
        return "—" if v is None or v != v else f"{v:.0f}"

    table = Table(title="drive-by runs")
    for col in ("run", "data (MB)", "usable at (m)", "ended at (m)", "setup delay (s)", "TCP timeouts"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in a.per_run.iter_rows(named=True):
        delay = r["setup_delay_s"]
        table.add_row(escape(str(r["run"])), f"{r['data_mb']:.2f}", m(r["usable_m"]), m(r["end_m"]),
                      "—" if delay != delay else f"{delay:.1f}", str(r["tcp_timeouts"]))
    console.print(table)
    console.print(f"supremum data {a.supremum_mb:.1f} MB, theoretical potential {a.potential_mb:.1f} MB", highlight=False)
    if a.phases is not None:
        p = a.phases
        console.print(f"phases (m from the AP): entry {p.entry_start_m:.0f}, production {p.production_start_m:.0f} "
                      f"to {p.production_end_m:.0f}, exit to {p.exit_end_m:.0f}", highlight=False)
    else:
        console.print("phases: the supremum goodput never reaches the production phase's 3 Mb/s", highlight=False)


@app.command()
def gps(
    run_dir: Path = typer.Argument(..., help="A run directory written by `wayside run` or `wayside sweep`."),
    out: Optional[Path] = typer.Option(None, "--out", help="Directory for the logs (default: RUN_DIR/gps)."),
    fmt: str = typer.Option("nmea", "--format", help="nmea, gpx or csv."),
    errors_: bool = typer.Option(False, "--errors", help="Inject Hadaller Table 2's systematic GPS errors."),
    delay: str = typer.Option("1.5 s", "--delay", help="With --errors: GPS measurement delay."),
    drift: float = typer.Option(1.36, "--drift", min=0, help="With --errors: slow drift, m per hour."),
    noise: float = typer.Option(1.13, "--noise", min=0, help="With --errors: short-term noise, σ per axis, m."),
    clock: str = typer.Option("500 ms", "--clock-offset", help="With --errors: largest clock offset of a host."),
    hours: float = typer.Option(0.0, "--hours", min=0, help="With --errors: hours into the day's drift at the run's start."),
    seed: int = typer.Option(1, "--seed", min=0, help="With --errors: seed of the errors."),
) -> None:
    """Write each radio node's GPS log of a run at 1 Hz (NMEA, GPX or CSV),
    with or without the GPS errors Hadaller et al. (2007) measured."""
    from wayside import gpslog, gpsout
    from wayside.result import RunResult
    from wayside.traces import seconds

    if fmt not in gpslog.FORMATS:
        fail(f"--format {fmt}: not allowed; allowed: {', '.join(gpslog.FORMATS)}")
        return
    try:
        injected = gpsout.GpsErrors(seconds(delay, "--delay"), drift, noise, seconds(clock, "--clock-offset"), hours, seed)
        errors_made = injected if errors_ else gpsout.NO_ERRORS
        result = RunResult.load(run_dir)
        paths = gpsout.write_gps(result, out or run_dir / "gps", fmt, errors_made)
    except FileNotFoundError as e:
        fail(f"{run_dir}: not a run directory ({e.filename} is missing)")
        return
    except (OSError, ValueError) as e:
        fail(f"{run_dir}: {e}")
        return
    for path in paths:
        console.print(f"wrote {escape(str(path))}", soft_wrap=True, highlight=False)


def _print_validation(lines: list[tuple[str, str]]) -> None:
    """Prints `wayside.validate.render` or `render_sets` output, the result
    column coloured by status."""
    style = {"PASS": "green", "MISS": "bold red", "ERROR": "bold magenta", "SOME": "yellow"}
    for line, status in lines:
        if status:
            head, tail = line[:8], line[8:]
            console.print(f"[{style[status]}]{escape(head)}[/]{escape(tail)}", highlight=False, soft_wrap=True)
        else:
            console.print(escape(line), highlight=False, soft_wrap=True)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        errors.print("interrupted")
        sys.exit(130)
