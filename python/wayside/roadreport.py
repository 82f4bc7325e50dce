"""The part of `wayside report` that fits any scenario: data per run in
all and per flow, per car and per AP, the associations and handovers, and
a fixed few figures whatever the number of nodes — goodput against position
per car with the theoretical potential of the scenario's own road, data
per car, and the time-space plot of the first run.

The theoretical potential follows Hadaller et al. (2007) §5 on the user's
road: per 20 m of road, the strongest AP's mean RSSI at the cars (over
every frame of that AP they received) gives the fastest rate whose
sensitivity it meets (noise floor `driveby.NOISE_FLOOR_DBM`), and that
rate its static TCP goodput, measured (`wayside.staticlab`) on a static
twin of the scenario: its own radio, MAC and first AP and station, 5 m
apart at a fixed rate. An AP is heard only where some car listened on its
channel, so where no car heard any AP the potential is unknown (a gap).
"""

from __future__ import annotations

import copy
import html
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from wayside import breakdown, plots  # noqa: E402
from wayside import engine as _native  # noqa: E402
from wayside.driveby import NOISE_FLOOR_DBM, PRODUCTION_MBPS, potential_rate  # noqa: E402
from wayside.htmlparts import figure, fmt, table  # noqa: E402
from wayside.result import RunResult  # noqa: E402
from wayside.stats import describe, paired_gain  # noqa: E402
from wayside.traces import table as trace  # noqa: E402

BIN_M = 20.0
MOST_ROWS = 40  # longer tables show this many rows and say how many more there are
MOST_FLOWS = 10  # columns of the per-run table

Step = Callable[[str], None]


@dataclass
class RoadRuns:
    """The runs of one sweep point, digested."""

    names: list[str]
    runs: list[breakdown.Breakdown]
    first: RunResult
    rssi: pl.DataFrame  # per bin and AP: sum and count of the AP's RSSI at the cars, over all runs


def _ap_rssi(result: RunResult) -> pl.DataFrame:
    """Per 20 m and AP: the RSSI of every frame of the AP a car received."""
    cars, aps = breakdown.stations(result), breakdown.access_points(result)
    f = trace(result, "frames").filter(
        pl.col("node").is_in(cars) & pl.col("peer").is_in(aps) & (pl.col("event") == "rx") & pl.col("rssi_dbm").is_not_nan())
    return f.group_by(((pl.col("x") // BIN_M) * BIN_M).cast(pl.Float64).alias("start_m"), pl.col("peer").alias("ap")).agg(
        pl.col("rssi_dbm").cast(pl.Float64).sum().alias("rssi_sum"), pl.len().alias("n"))


def load(dirs: Sequence[Path], step: Step) -> RoadRuns:
    runs, rssi, first = [], [], None
    for d in dirs:
        step(f"run {d.name}")
        r = RunResult.load(d)
        first = first or r
        runs.append(breakdown.breakdown(r, d.name, BIN_M))
        rssi.append(_ap_rssi(r))
    summed = pl.concat(rssi).group_by("start_m", "ap").agg(pl.col("rssi_sum").sum(), pl.col("n").sum())
    return RoadRuns([d.name for d in dirs], runs, first, summed)


# ---------------------------------------------------------------- potential


def static_twin(scenario: dict[str, Any]) -> dict[str, Any] | None:
    """The scenario's radio, MAC and first AP and station, 5 m apart in
    free space, the AP sending bulk TCP (as static-lab does); None without
    an AP and a station."""
    nodes = scenario.get("node", [])
    ap = next((n for n in nodes if n.get("role") == "ap"), None)
    sta = next((n for n in nodes if n.get("role") == "sta"), None)
    if ap is None or sta is None:
        return None
    keep = ("tx_power", "antenna_gain", "antenna_height")

    def node(n: dict[str, Any], name: str, x: float) -> dict[str, Any]:
        return {"name": name, "role": n["role"], "position": [x, 0], **{k: n[k] for k in keep if k in n}}

    radio = dict(scenario.get("radio", {}))
    if "channel" in ap:
        radio["channel"] = ap["channel"]
    mac = {k: v for k, v in scenario.get("mac", {}).items() if k not in ("rate_control", "rate")}
    management = {k: v for k, v in scenario.get("management", {}).items() if k != "scan_channels"}
    management["scan_channels"] = [radio.get("channel", 1)]
    return {
        "name": f"{scenario.get('name', 'scenario')}-static", "duration": "12 s",
        "environment": {"path_loss": "free-space"}, "radio": radio, "mac": {**mac, "rate": "54 Mbps"},
        "management": management, "node": [node(ap, "ap", 0.0), node(sta, "client", 5.0)],
        "app": [{"kind": "tcp-bulk", "from": "ap", "to": "client", "start": "on-association", "start_delay": "1 s"}],
    }


def potential(rr: RoadRuns, workers: int | None, step: Step) -> tuple[pl.DataFrame | None, str]:
    """Per 20 m of road: start_m, rssi_dbm (the strongest AP's mean beacon
    RSSI), rate_mbps and potential_mbps; with a note on how it was made,
    or None and why not."""
    from wayside.staticlab import static_profile

    twin = static_twin(copy.deepcopy(rr.first.scenario))
    if twin is None:
        return None, "no theoretical potential: the scenario has no AP and station to measure a static link between"
    if rr.rssi.is_empty():
        return None, "no theoretical potential: no car heard an AP"
    step("static goodput per rate")
    try:
        profile = static_profile(twin, workers=workers)
    except _native.ScenarioError as e:
        return None, f"no theoretical potential: the static twin of the scenario does not run ({e})"
    standard = str(twin["radio"].get("standard", "802.11g"))
    sens = [(m, s) for m, _, s in _native.rate_thresholds(standard, 1500)]
    static = {round(p.rate_mbps, 3): p.goodput_mbps for p in profile}
    best = rr.rssi.with_columns((pl.col("rssi_sum") / pl.col("n")).alias("rssi_dbm")).group_by("start_m").agg(
        pl.col("rssi_dbm").max()).sort("start_m")
    rates = [potential_rate(x, sens, NOISE_FLOOR_DBM) for x in best["rssi_dbm"].to_list()]
    out = best.with_columns(pl.Series("rate_mbps", rates, dtype=pl.Float64),
                            pl.Series("potential_mbps", [static.get(round(r, 3), 0.0) if r else 0.0 for r in rates]))
    # Bins no car heard any AP in: unknown, kept as NaN so that plots break there.
    every = pl.DataFrame({"start_m": np.arange(out["start_m"].min(), out["start_m"].max() + BIN_M, BIN_M)})
    out = every.join(out, on="start_m", how="left").fill_null(math.nan)
    top = max(profile, key=lambda p: p.goodput_mbps)
    note = (f"Theoretical potential: per 20 m, the strongest AP's mean RSSI at the cars gives the fastest "
            f"{standard} rate whose sensitivity it meets (noise floor {NOISE_FLOOR_DBM:g} dBm), and that rate its static "
            f"TCP goodput on a twin of this scenario (its radio and first AP and station, 5 m apart; "
            f"{top.goodput_mbps:.1f} Mb/s at {top.rate_mbps:g} Mb/s). One car alone on the road could at most get this. "
            "An AP is heard only where a car listened on its channel: a car that stays with one AP hears no other "
            "between scans, so the potential there is that AP's; where no car heard any AP it is unknown (a gap, "
            "counted as 0 in the potential MB).")
    return out, note


def _potential_mb(along: pl.DataFrame, pot: pl.DataFrame | None) -> dict[str, float]:
    """Per car: the potential over the road it drove, MB (mean over runs)."""
    if pot is None:
        return {}
    j = along.join(pot.select("start_m", "potential_mbps"), on="start_m", how="left").fill_null(0.0).fill_nan(0.0)
    return {c: float(v) for c, v in j.group_by("car").agg((pl.col("potential_mbps") * pl.col("time_s")).sum() / 8).iter_rows()}


# ---------------------------------------------------------------- tables


def _more(rows: list, shown: int = MOST_ROWS) -> tuple[list, str]:
    if len(rows) <= shown:
        return rows, ""
    return rows[:shown], f"<p>… and {len(rows) - shown} more rows (all of them: <code>wayside.breakdown</code>).</p>"


def _data_tables(rr: RoadRuns) -> str:
    flows = rr.runs[0].flows
    labels = [breakdown.flow_label(f) for f in flows.iter_rows(named=True)]
    per_flow = {lab: [float(b.flows["data_mb"][i]) for b in rr.runs] for i, lab in enumerate(labels)}
    totals = [b.data_mb for b in rr.runs]
    rows = [("<b>all flows</b>", html.escape(describe(totals)), fmt(min(totals), "{:.2f}"), fmt(max(totals), "{:.2f}"))]
    for lab, v in per_flow.items():
        rows.append((html.escape(lab), html.escape(describe(v)), fmt(min(v), "{:.2f}"), fmt(max(v), "{:.2f}")))
    shown, more = _more(rows)
    out = ("<h3>Data per run</h3><p>Data: application payload delivered (UDP datagrams received, TCP bytes delivered "
           f"in order), over every flow of the scenario ({len(labels)}), and per flow. Mean ± half-width of the 95% "
           "t interval over runs; with fewer than 3 runs no interval, only the range.</p>"
           + table(["flow", "MB per run", "least", "most"], shown) + more)
    heads = ["run", "all flows (MB)"] + [f"{lab} (MB)" for lab in labels[:MOST_FLOWS]]
    run_rows = [[html.escape(name), fmt(b.data_mb, "{:.2f}")] + [fmt(v, "{:.2f}") for v in b.flows["data_mb"].to_list()[:MOST_FLOWS]]
                for name, b in zip(rr.names, rr.runs)]
    shown, more = _more(run_rows)
    return out + "<h3>Per run</h3>" + table(heads, shown, "runs") + more


def _car_table(rr: RoadRuns, pot_mb: dict[str, float]) -> str:
    cars = pl.concat([b.cars.with_columns(pl.lit(i).alias("run")) for i, b in enumerate(rr.runs)])
    if cars.is_empty():
        return ""
    rows = []
    for car, g in cars.group_by("car", maintain_order=True):
        data = (g["received_mb"] + g["sent_mb"]).to_list()
        served = ", ".join(dict.fromkeys(a for s in g["served_by"].to_list() for a in s.split(", ") if a))
        rows.append((html.escape(car[0]), html.escape(describe(data, 2)), fmt(pot_mb.get(car[0]), "{:.1f}"),
                     fmt(g["first_data_x"].median(), "{:.0f}"), fmt(g["last_data_x"].median(), "{:.0f}"),
                     fmt(g["associations"].mean(), "{:.1f}"), str(int(g["handovers"].sum())), html.escape(served or "—")))
    shown, more = _more(rows)
    return ("<h3>Per car</h3><p>Data received and sent by each car per run; where the data started and stopped (x, median "
            "over runs); associations per run; handovers (association changes to another AP) in all runs.</p>"
            + table(["car", "MB per run", "potential MB", "first data x (m)", "last data x (m)", "associations",
                     "handovers", "served by"], shown) + more)


def _ap_table(rr: RoadRuns) -> str:
    aps = pl.concat([b.aps for b in rr.runs])
    if aps.is_empty():
        return ""
    rows = []
    for ap, g in aps.group_by("ap", maintain_order=True):
        served = ", ".join(dict.fromkeys(a for s in g["served"].to_list() for a in s.split(", ") if a))
        rows.append((html.escape(ap[0]), fmt(g["x"][0], "{:.0f}"), fmt(g["channel"][0], "{}"),
                     html.escape(describe(g["to_cars_mb"].to_list(), 2)), html.escape(describe(g["from_cars_mb"].to_list(), 2)),
                     html.escape(served or "none")))
    return ("<h3>Per AP</h3><p>MAC payload each AP delivered to cars and received from them, per run.</p>"
            + table(["AP", "x (m)", "channel", "to cars, MB per run", "from cars, MB per run", "cars associated"], rows))


def _association_tables(rr: RoadRuns) -> str:
    a = rr.runs[0].associations

    def phases(r: dict[str, Any]) -> str:
        if r["production_mb"] != r["production_mb"]:  # NaN: never reached production
            return "—"
        return f"{r['production_start_x']:.0f} to {r['production_end_x']:.0f}"

    rows = [(html.escape(r["car"]), html.escape(r["ap"]), f"{r['start_s']:.1f} ({r['start_x']:.0f})",
             f"{r['end_s']:.1f} ({r['end_x']:.0f})", html.escape(r["ended"]), fmt(r["data_mb"], "{:.2f}"), phases(r),
             " / ".join(fmt(r[k], "{:.2f}") for k in ("entry_mb", "production_mb", "exit_mb")))
            for r in a.iter_rows(named=True)]
    shown, more = _more(rows)
    out = (f"<h3>Associations ({html.escape(rr.names[0])})</h3><p>Each car's associations in the first run: from and to "
           "(time in s, x in m), how each ended, the data moved while it lasted, and its phases: production from the "
           f"first delivery after which the car got {PRODUCTION_MBPS:g} Mb/s "
           "over the next second to the last before which it got that over the second before; entry before it, exit "
           "after it (— : never reached production).</p>"
           + table(["car", "AP", "from s (x m)", "to s (x m)", "ended", "MB", "production x (m)",
                    "MB entry / production / exit"], shown) + more)
    moves = pl.concat([b.handovers.with_columns(pl.lit(n).alias("run")) for n, b in zip(rr.names, rr.runs)])
    if moves.is_empty():
        return out + "<p>No car changed AP in any run: there are no handovers.</p>"
    rows = [(html.escape(r["run"]), html.escape(r["car"]), f"{r['time_s']:.2f}", f"{r['x']:.0f}", html.escape(r["from"]),
             html.escape(r["to"]), html.escape(r["how"]), f"{r['gap_s']:.2f}", fmt(r["data_gap_s"], "{:.2f}"),
             fmt(r["lost_mb"], "{:.3f}")) for r in moves.iter_rows(named=True)]
    shown, more = _more(rows)
    return out + ("<h3>Handovers</h3><p>When and where each car left an AP (how: roamed after a background scan, "
                  "or disassociated when beacons stopped); the gap from leaving to associating with the next AP; "
                  "the data gap from the last MAC payload received from the old AP to the first from the new one; "
                  "and the MB the old AP failed to deliver to the car after that.</p>"
                  + table(["run", "car", "time (s)", "x (m)", "from", "to", "how", "gap (s)", "data gap (s)",
                           "lost (MB)"], shown) + more)


# ---------------------------------------------------------------- figures


def _ap_lines(ax: Any, rr: RoadRuns) -> None:
    aps = rr.runs[0].aps
    colours = plots.ap_colours(aps["ap"].to_list())
    for r in aps.iter_rows(named=True):
        ax.axvline(r["x"], color=colours[r["ap"]], ls=":", lw=1)
        ax.text(r["x"], 1.0, f" {r['ap']}", color=colours[r["ap"]], fontsize=8, transform=ax.get_xaxis_transform(), va="top")


def fig_goodput(rr: RoadRuns, pot: pl.DataFrame | None) -> Any:
    along = pl.concat([b.along_road for b in rr.runs])
    fig, ax = plt.subplots(figsize=(10, 4.6))
    if along.is_empty():
        ax.text(0.5, 0.5, "no car moved", transform=ax.transAxes, ha="center")
        return fig
    mean = along.group_by("car", "start_m").agg((pl.col("bytes").sum() * 8 / 1e6 / pl.col("time_s").sum()).alias("mbps"))
    cars = along["car"].unique(maintain_order=True).to_list()
    cmap = plt.get_cmap("viridis", max(len(cars), 2))
    for i, car in enumerate(cars):
        g = mean.filter(pl.col("car") == car).sort("start_m")
        ax.plot(g["start_m"] + BIN_M / 2, g["mbps"], color=cmap(i), lw=1.1, label=car if len(cars) <= 12 else None)
    if pot is not None:
        ax.step(pot["start_m"] + BIN_M / 2, pot["potential_mbps"], where="mid", color="black", ls="--", lw=1,
                label="theoretical potential")
    _ap_lines(ax, rr)
    ax.set_xlabel("position along the road, x (m)")
    ax.set_ylabel("goodput (Mb/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    return fig


def fig_data_per_car(rr: RoadRuns) -> Any:
    cars = pl.concat([b.cars.with_columns(pl.lit(i).alias("run")) for i, b in enumerate(rr.runs)])
    fig, ax = plt.subplots(figsize=(10, 3.8))
    names = cars["car"].unique(maintain_order=True).to_list()
    data = cars.with_columns((pl.col("received_mb") + pl.col("sent_mb")).alias("mb"))
    means = [float(data.filter(pl.col("car") == c)["mb"].mean()) for c in names]
    x = np.arange(len(names))
    ax.bar(x, means, color="tab:blue", alpha=0.6, label="mean over runs")
    for i, c in enumerate(names):
        v = data.filter(pl.col("car") == c)["mb"].to_numpy()
        ax.scatter(np.full(len(v), i), v, s=10, color="black", zorder=3, label="each run" if i == 0 else None)
    ax.set_xticks(x, names if len(names) <= 40 else [""] * len(names), rotation=60 if len(names) > 12 else 0, fontsize=8)
    ax.set_ylabel("data per run (MB)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def section(rr: RoadRuns, workers: int | None, step: Step) -> str:
    """The road section of one sweep point (tables and figures)."""
    pot, note = potential(rr, workers, step)
    pot_mb = _potential_mb(pl.concat([b.along_road for b in rr.runs]).group_by("car", "start_m").agg(
        pl.col("time_s").mean()), pot)
    parts = [_data_tables(rr), _car_table(rr, pot_mb), _ap_table(rr), _association_tables(rr),
             f"<p class='note'>{html.escape(note)}</p>"]
    step("figures")
    parts.append(figure("goodput", fig_goodput(rr, pot),
                        "Goodput against position per car (mean over runs, per 20 m of road; dotted: the APs; dashed: "
                        "the theoretical potential of this road)."))
    if not rr.runs[0].cars.is_empty():
        parts.append(figure("data-per-car", fig_data_per_car(rr), "Data per run of each car: the mean, and each run."))
    ts = plots.time_space(rr.first, rr.runs[0], f"{rr.names[0]}: vehicles over time")
    if ts is not None:
        parts.append(figure("time-space", ts, f"Time-space plot of {rr.names[0]}: each vehicle's position coloured by the "
                            "AP serving it (grey: none), frames between cars and APs dropped, by reason; below, those "
                            "drops per 20 m of road."))
    return "\n".join(parts)


def points_table(points: Sequence[tuple[str, RoadRuns]]) -> str:
    """The sweep's points side by side: data per run over all flows, and the
    gain over the first point, runs paired by seed."""
    def by_run(rr: RoadRuns) -> dict[str, float]:
        return {n: b.data_mb for n, b in zip(rr.names, rr.runs)}

    base = by_run(points[0][1])
    rows = []
    for label, rr in points:
        data = [b.data_mb for b in rr.runs]
        rows.append((html.escape(label), str(len(data)), html.escape(describe(data)), fmt(statistics.median(data), "{:.1f}"),
                     html.escape(str(paired_gain(base, by_run(rr))))))
    return ("<h2>Points compared</h2><p>Data per run over all flows; the gain is the ratio of mean data to the first "
            "point's, runs paired by seed, with its 95% bootstrap interval.</p><div id='points'>"
            + table(["point", "runs", "MB per run", "median MB", "mean vs first"], rows) + "</div>")

