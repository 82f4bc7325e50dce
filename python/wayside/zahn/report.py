"""Figures 2–11 of Zahn et al. (2009) from a `wayside.zahn` sweep, as PNGs
and a markdown report (`python -m wayside.zahn --plots DIR`).

Every figure is drawn from the sweep's table of runs (one row per run),
except the RSSI-against-distance figures (9 and 11): the paper plots them
for "the mean runs", so the report runs again, per configuration, the seed
whose throughput is closest to that configuration's mean, and bins its
received frames by distance. Bars are means with 95% Student t intervals
(`wayside.stats`); ratios between configurations are paired by seed, with
bootstrap intervals. A
figure whose variants the sweep did not run is left out, and the report
says so. Figure 7 is drawn from whichever packet sizes the sweep ran.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from wayside import zahn  # noqa: E402
from wayside.stats import mean_interval  # noqa: E402

LOCATIONS = [loc.removeprefix("zahn-") for loc in zahn.LOCATIONS]
LABELS = {"base": "Broadside-Raw", "ip": "Broadside-IP", "11a": "802.11a", "roof": "roof antenna"}
# The base configuration as the band and antenna figures compare it.
RADIO_LABELS = {"base": "802.11g, dashboard (base)", "11a": "802.11a", "roof": "802.11g, roof"}


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def _has(runs: pl.DataFrame, *variants: str) -> bool:
    return all(not runs.filter(pl.col("variant") == v).is_empty() for v in variants)


def _values(runs: pl.DataFrame, location: str, variant: str, column: str) -> list[float]:
    return runs.filter((pl.col("location") == location) & (pl.col("variant") == variant))[column].to_list()


def bars(runs: pl.DataFrame, variants: Sequence[str], column: str, ylabel: str, title: str, path: Path) -> Path:
    """Mean of `column` per location, one bar per variant, with 95%
    Student t intervals and every run as a dot (Figures 2 and 3)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    width = 0.8 / len(variants)
    for j, v in enumerate(variants):
        for i, loc in enumerate(LOCATIONS):
            vals = _values(runs, loc, v, column)
            m = mean_interval(vals)
            x = i + (j - (len(variants) - 1) / 2) * width
            err = None if math.isnan(m.lo) else [[m.value - m.lo], [m.hi - m.value]]
            ax.bar(x, m.value, width * 0.9, color=f"C{j}", label=LABELS.get(v, v) if i == 0 else None, yerr=err, capsize=3)
            ax.plot([x] * len(vals), vals, "k.", ms=3, alpha=0.5)
    ax.set_xticks(range(len(LOCATIONS)), LOCATIONS)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def rate_cdf(runs: pl.DataFrame, location: str, path: Path) -> Path:
    """Figures 4 and 5: the cumulative share of the throughput delivered
    at or below each data rate, Raw and IP, over all runs at `location`."""
    fig, ax = plt.subplots(figsize=(6, 4))
    cols = sorted((c for c in runs.columns if c.startswith("mb_at_")), key=lambda c: float(c.removeprefix("mb_at_")))
    rates = [float(c.removeprefix("mb_at_")) for c in cols]
    for j, v in enumerate(("base", "ip")):
        r = runs.filter((pl.col("location") == location) & (pl.col("variant") == v))
        mb = [float(r[c].sum()) for c in cols]
        total = sum(mb)
        if total <= 0:
            continue
        cum, acc = [], 0.0
        for x in mb:
            acc += x
            cum.append(acc / total)
        ax.step(rates, cum, where="post", color=f"C{j}", label=LABELS[v], marker="o", ms=3)
    ax.set_xlabel("802.11 data rate (Mb/s)")
    ax.set_ylabel("share of throughput at or below the rate")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"CDF of throughput by data rate ({location})", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def startup(runs: pl.DataFrame, path: Path) -> Path:
    """Figure 6: every run's startup delay, Raw and IP, by location, the
    median marked."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for j, v in enumerate(("base", "ip")):
        for i, loc in enumerate(LOCATIONS):
            vals = [x for x in _values(runs, loc, v, "startup_s") if math.isfinite(x)]
            x = i + (j - 0.5) * 0.3
            ax.plot([x] * len(vals), vals, ".", color=f"C{j}", alpha=0.6, label=LABELS[v] if i == 0 else None)
            if vals:
                ax.hlines(sorted(vals)[len(vals) // 2], x - 0.1, x + 0.1, color="k")
    ax.axhline(1.0, color="grey", ls="--", lw=0.8)
    ax.set_xticks(range(len(LOCATIONS)), LOCATIONS)
    ax.set_ylabel("startup delay (s)")
    ax.set_title("Startup delay (dash: 1 s; bar: median)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def sizes(table: pl.DataFrame, path: Path) -> Path:
    """Figure 7: median throughput of the saturating sender against packet
    size, min to max as bars, per location."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, loc in enumerate(LOCATIONS):
        g = table.filter(pl.col("location") == loc).sort("size")
        if g.is_empty():
            continue
        med = g["median_mb"].to_numpy()
        err = [med - g["min_mb"].to_numpy(), g["max_mb"].to_numpy() - med]
        ax.errorbar(g["size"].to_numpy() + (j - 1) * 15, med, yerr=err, marker="o", capsize=3, color=f"C{j}", label=loc)
    ax.set_xlabel("packet size (bytes)")
    ax.set_ylabel("throughput (MB, median run)")
    ax.set_title("Packet size with a saturating sender (bars: min to max)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def ratios(runs: pl.DataFrame, variant: str, title: str, path: Path) -> Path:
    """Figures 8 and 10: throughput and connection duration of `variant`
    over the base configuration per location, runs paired by seed, with
    95% bootstrap intervals."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for j, (column, label) in enumerate((("throughput_mb", "throughput"), ("connection_s", "connection duration"))):
        for i, loc in enumerate(LOCATIONS):
            g = zahn.gain(runs, loc, variant, "base", column)
            x = i + (j - 0.5) * 0.38
            err = None if math.isnan(g.lo) else [[g.value - g.lo], [g.hi - g.value]]
            ax.bar(x, g.value, 0.34, color=f"C{j}", yerr=err, capsize=3, label=label if i == 0 else None)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(LOCATIONS)), LOCATIONS)
    ax.set_ylabel("ratio to the base configuration")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def mean_run(runs: pl.DataFrame, location: str, variant: str) -> int:
    """The seed whose throughput is closest to the configuration's mean
    (the paper's "mean run")."""
    r = runs.filter((pl.col("location") == location) & (pl.col("variant") == variant))
    mean = r["throughput_mb"].mean()
    return int(r.with_columns((pl.col("throughput_mb") - mean).abs().alias("d")).sort("d", "seed")["seed"][0])


def rssi(runs: pl.DataFrame, location: str, variants: Sequence[str], title: str, path: Path) -> Path:
    """Figures 9 and 11: mean RSSI against distance of `location`'s mean
    run in each of `variants`, re-run from its seed."""
    from wayside.runner import run

    s, r = zahn.ENDS[f"zahn-{location}"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, v in enumerate(variants):
        seed = mean_run(runs, location, v)
        res = run(f"zahn-{location}", seed=seed, overrides=[o.format(s=s, r=r) for o in zahn.VARIANTS[v]])
        d = zahn.rssi_by_distance(res, r, s)
        ax.plot(d["distance_m"], d["rssi_dbm"], color=f"C{j}", marker=".", label=f"{RADIO_LABELS[v]} (seed {seed})")
    ax.set_xlabel("distance between the cars (m)")
    ax.set_ylabel("mean RSSI of received frames (dBm)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def acks(table: pl.DataFrame, path: Path) -> Path:
    """Bytes the receiver sent back per run, Raw and IP by location,
    stacked: the acknowledgements alone, Broadside's answers (raw, or
    inside the TCP stream), and the rest; the acknowledgements' share of
    the throughput written above each bar."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    parts = (("acks_kb", "acknowledgements (bit vectors / TCP ACKs)"), ("answers", "Broadside answers"), ("rest", "TCP set-up, other"))
    t = table.with_columns((pl.col("ack_answers_kb") + pl.col("ack_stream_kb")).alias("answers"), (pl.col("ack_tcp_control_kb") + pl.col("ack_other_kb")).alias("rest"))
    for j, v in enumerate(("base", "ip")):
        for i, loc in enumerate(LOCATIONS):
            row = t.filter((pl.col("location") == loc) & (pl.col("variant") == v))
            if row.is_empty():
                continue
            x, bottom = i + (j - 0.5) * 0.38, 0.0
            for k, (col, label) in enumerate(parts):
                h = row[col][0]
                ax.bar(x, h, 0.34, bottom=bottom, color=f"C{k}", hatch="//" if v == "ip" else None, label=label if (i, j) == (0, 0) else None)
                bottom += h
            ax.text(x, bottom, f"{LABELS[v].split('-')[1]}\n{100 * row['acks_share'][0]:.2f}%", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(LOCATIONS)), LOCATIONS)
    ax.set_ylabel("kB sent back per run")
    ax.set_title("Bytes the receiver sent back (label: acks as % of throughput)", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.15)
    return _save(fig, path)


# What the paper reports (§5.1-5.4), for the findings.
PAPER_RAW_OVER_IP = {"terraced": "1.40", "residential": "1.44", "motorway": "about 1"}
PAPER_ROOF = {"terraced": "above 1", "residential": "about 1", "motorway": "above 1"}


def findings(runs: pl.DataFrame) -> list[str]:
    """The paper's claims, each with what the sweep measured."""
    out = []
    for loc in LOCATIONS:
        if _has(runs, "base", "ip"):
            g, c = zahn.gain(runs, loc, "base", "ip"), zahn.gain(runs, loc, "base", "ip", "connection_s")
            a = zahn.gain(runs, loc, "base", "ip", "acks_kb")
            out.append(f"- {loc}: Raw/IP throughput {g} (paper {PAPER_RAW_OVER_IP[loc]}), connection {c} (paper 1), acknowledgement bytes {a} (paper: far lower)")
            quick = [x for x in _values(runs, loc, "base", "startup_s") if math.isfinite(x)]
            out.append(f"- {loc}: Raw's first file data within 1 s of the link in {sum(x < 1 for x in quick)} of {len(quick)} runs (paper: most)")
        if _has(runs, "11a"):
            out.append(f"- {loc}: 802.11a/802.11g throughput {zahn.gain(runs, loc, '11a', 'base')} (paper: below 1)")
        if _has(runs, "roof"):
            out.append(f"- {loc}: roof/dashboard throughput {zahn.gain(runs, loc, 'roof', 'base')} (paper: {PAPER_ROOF[loc]})")
    if _has(runs, "base"):
        mw = mean_interval(_values(runs, "motorway", "base", "throughput_mb"))
        out.append(f"- motorway Raw mean {mw.value:.1f} MB (95% {mw.lo:.1f}-{mw.hi:.1f}; paper 7.1 MB)")
    sizes = zahn.size_table(runs)
    for (loc,), g in sizes.group_by("location", maintain_order=True):
        best = g.sort("median_mb")[-1]
        at_2304 = g.filter(pl.col("size") == 2304)["median_mb"]
        share = f", 2304 B at {at_2304[0] / best['median_mb'][0]:.2f} of it" if len(at_2304) else ""
        out.append(f"- {loc}: best packet size {best['size'][0]} B{share} (paper: a different best size per location)")
    return out


def write_report(runs: pl.DataFrame, directory: str | Path) -> Path:
    """Writes every figure the sweep's variants allow and `report.md` into
    `directory` (created); returns the report's path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    table = zahn.summary(zahn.broadside_runs(runs))
    every_size = tuple(f"{n}B" for n in zahn.SIZES)
    sizes_ran = tuple(v for v in every_size if _has(runs, v)) or every_size
    figures: list[tuple[str, str, tuple[str, ...], Callable[[Path], Path]]] = [
        ("fig2-throughput.png", "Figure 2: throughput, Raw vs IP", ("base", "ip"),
         lambda p: bars(runs, ("base", "ip"), "throughput_mb", "throughput (MB)", "Throughput, base configuration (95% intervals)", p)),
        ("fig3-connection.png", "Figure 3: connection duration", ("base", "ip"),
         lambda p: bars(runs, ("base", "ip"), "connection_s", "connection duration (s)", "Connection duration (95% intervals)", p)),
        ("fig4-rate-cdf-residential.png", "Figure 4: CDF of throughput by data rate (residential)", ("base", "ip"),
         lambda p: rate_cdf(runs, "residential", p)),
        ("fig5-rate-cdf-motorway.png", "Figure 5: CDF of throughput by data rate (motorway)", ("base", "ip"),
         lambda p: rate_cdf(runs, "motorway", p)),
        ("fig6-startup.png", "Figure 6: startup delay", ("base", "ip"), lambda p: startup(runs, p)),
        ("fig7-packet-size.png", "Figure 7: packet size with a saturating sender", sizes_ran,
         lambda p: sizes(zahn.size_table(runs), p)),
        ("fig8-band.png", "Figure 8: 802.11a normalised to 802.11g", ("base", "11a"),
         lambda p: ratios(runs, "11a", "802.11a (ch. 40) over 802.11g (ch. 1), paired by seed", p)),
        ("fig9-rssi-band.png", "Figure 9: RSSI against distance, 802.11a and 802.11g (terraced)", ("base", "11a"),
         lambda p: rssi(runs, "terraced", ("base", "11a"), "RSSI against distance (terraced, mean runs)", p)),
        ("fig10-antenna.png", "Figure 10: roof normalised to dashboard", ("base", "roof"),
         lambda p: ratios(runs, "roof", "Roof over dashboard antenna, paired by seed", p)),
        ("fig11-rssi-antenna.png", "Figure 11: RSSI against distance, roof and dashboard (motorway)", ("base", "roof"),
         lambda p: rssi(runs, "motorway", ("base", "roof"), "RSSI against distance (motorway, mean runs)", p)),
        ("acks.png", "Acknowledgement bytes and their share of throughput", ("base", "ip"), lambda p: acks(zahn.ack_table(runs), p)),
    ]
    seeds = sorted(runs["seed"].unique().to_list())
    lines = [
        "# Zahn et al. (2009) §5 in the simulator",
        "",
        f"{len(seeds)} runs per configuration (seeds {seeds[0]}-{seeds[-1]}), variants: {', '.join(runs['variant'].unique(maintain_order=True).to_list())}.",
        "Means have 95% Student t intervals; ratios pair runs by seed, with 95% bootstrap intervals.",
        "",
        "## Findings",
        "",
        *findings(runs),
        "",
        "## Tables",
        "",
        "```",
        zahn.format_summary(table),
        "",
        zahn.format_intervals(table),
        "",
        zahn.format_acks(zahn.ack_table(runs)),
    ]
    size_t = zahn.size_table(runs)
    if not size_t.is_empty():
        lines += ["", zahn.format_sizes(size_t)]
    lines += ["```", "", "## Figures", ""]
    for name, caption, needs, draw in figures:
        if _has(runs, *needs):
            draw(d / name)
            lines += [f"### {caption}", "", f"![{caption}]({name})", ""]
        else:
            lines += [f"### {caption}", "", f"Not drawn: it needs the variants {', '.join(needs)}.", ""]
    report = d / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
