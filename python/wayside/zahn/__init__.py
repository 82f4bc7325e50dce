"""Zahn et al. (2009), "Feasibility of content dissemination between devices
in moving vehicles", §5 in the simulator: the paper's base metrics of a
Broadside contact, measured from a run's trace, and a sweep over its three
locations (scenarios zahn-terraced, zahn-residential, zahn-motorway) printed
as a table.

The paper's definitions (§5): *connection duration* is the time for which
both nodes consider an active link to exist (here: the overlap of both
nodes' link-up/link-down intervals in the `events` table); *throughput* is
the file content moved during a connection (here: the Broadside bytes the
receiver got from the sender — file blocks with their headers, and the
discovery messages, which are a few packets); *startup delay* is the time
from the link's establishment to the first file data (here: to the
receiver's first `transfer-started` event, when the first block of a file
arrives). Acknowledgement bytes are what the receiver sends back to the
sender (the MSDUs it sends it, each once): for Broadside-Raw its
bit-vector acks and discovery answers, for Broadside-IP (transport "tcp")
its TCP acknowledgements with their IP and TCP headers besides the same
answers inside the stream. `ack_split_kb` splits them by what each MSDU
carries (the `mac` table's `content`), and `acks_kb` keeps the
acknowledgements alone — Raw's bit vectors, IP's pure TCP ACK segments with
their IP and TCP headers — the like-with-like comparison of §5.2.

Figure 7 (§5.2) is a separate experiment: no Broadside, a sender that
keeps a raw frame of one size queued whenever the link is up (each
location's disabled `[[traffic]]` source); its throughput is what the
receiver's MAC handed up (`saturated_mb`). The sweep runs it as variants
named by the size ("500B" … "2304B").
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import polars as pl

from wayside.result import RunResult
from wayside.stats import Gain, mean_interval, paired_gain
from wayside.traces import check_node, table

LOCATIONS = ("zahn-terraced", "zahn-residential", "zahn-motorway")
# Sender and receiver in each location's scenario (the moving car holds
# the newer versions, as in the paper).
ENDS = {
    "zahn-terraced": ("moving", "parked"),
    "zahn-residential": ("moving", "parked"),
    "zahn-motorway": ("east", "west"),
}


def _events(result: RunResult, node: str, peer: str, names: Sequence[str]) -> pl.DataFrame:
    check_node(result, node, "node")
    check_node(result, peer, "peer")
    e = table(result, "events")
    return e.filter((pl.col("node") == node) & (pl.col("peer") == peer) & pl.col("event").is_in(list(names))).sort("time_ns")


def link_intervals(result: RunResult, node: str, peer: str) -> list[tuple[float, float]]:
    """(up, down) times in s of `node`'s ad hoc link to `peer`; a link up
    at the end of the run closes at the run's end."""
    spans: list[tuple[float, float]] = []
    up = None
    for t, ev in _events(result, node, peer, ["link-up", "link-down"]).select("time_ns", "event").iter_rows():
        if ev == "link-up" and up is None:
            up = t / 1e9
        elif ev == "link-down" and up is not None:
            spans.append((up, t / 1e9))
            up = None
    if up is not None:
        spans.append((up, result.duration_s))
    return spans


def connected(result: RunResult, a: str, b: str) -> list[tuple[float, float]]:
    """The intervals in which both `a` and `b` consider the link up."""
    out = []
    for s1, e1 in link_intervals(result, a, b):
        for s2, e2 in link_intervals(result, b, a):
            s, e = max(s1, s2), min(e1, e2)
            if e > s:
                out.append((s, e))
    return sorted(out)


def connection_s(result: RunResult, a: str, b: str) -> float:
    """Connection duration (§5): seconds both nodes consider the link up."""
    return sum(e - s for s, e in connected(result, a, b))


def broadside_mb(result: RunResult, receiver: str, sender: str) -> float:
    """Throughput (§5) of a run: Broadside bytes `receiver` got from
    `sender`, raw, over UDP or in a TCP stream, MB (10^6 bytes)."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    t = table(result, "transport").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & pl.col("proto").is_in(["raw", "udp", "tcp"]))
    return float(t["bytes"].cast(pl.UInt64).sum()) / 1e6


def startup_delay_s(result: RunResult, receiver: str, sender: str) -> float:
    """Startup delay (§5): from the first instant both ends have the link to
    the receiver's first file transfer; NaN without either."""
    spans = connected(result, receiver, sender)
    started = _events(result, receiver, sender, ["transfer-started"])
    if not spans or started.is_empty():
        return math.nan
    return started["time_ns"][0] / 1e9 - spans[0][0]


def startup_share(result: RunResult, receiver: str, sender: str) -> float:
    """Startup delay as a share of the connection duration (Figure 6's
    comparison between Raw and IP)."""
    d = connection_s(result, receiver, sender)
    return startup_delay_s(result, receiver, sender) / d if d > 0 else math.nan


def _sent_back(result: RunResult, receiver: str, sender: str) -> pl.DataFrame:
    """The MSDUs the receiver's MAC was given for the sender, each once
    (its `mac` rows delivered or failed)."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    return table(result, "mac").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & pl.col("event").is_in(["delivered", "failed"]))


def ack_kb(result: RunResult, receiver: str, sender: str) -> float:
    """Bytes the receiver sent back to the sender, kB: the MSDUs its MAC
    was given for the sender (acknowledgements and discovery answers; for
    Broadside-IP, TCP's acknowledgements with their headers), each counted
    once whether or not it arrived."""
    return float(_sent_back(result, receiver, sender)["bytes"].cast(pl.UInt64).sum()) / 1e3


# What the receiver sends back, by the `mac` table's `content`: TCP's pure
# acknowledgements, its connection set-up and teardown, and segments with
# data (Broadside-IP's vectors and discovery answers inside the stream);
# Broadside's own bit-vector acks, and its discovery answers (filters,
# records, plans; offers, wants, closes), raw or over UDP.
ACK_PARTS: dict[str, tuple[str, ...]] = {
    "tcp_acks": ("tcp-ack",),
    "tcp_control": ("tcp-control",),
    "stream": ("tcp-data",),
    "vectors": ("bs-ack",),
    "answers": ("bs-discovery", "bs-control"),
}


def ack_split_kb(result: RunResult, receiver: str, sender: str) -> dict[str, float]:
    """`ack_kb` split into ACK_PARTS, plus "other" (anything else): kB
    each, summing to `ack_kb`."""
    m = _sent_back(result, receiver, sender)
    by = dict(m.group_by("content").agg(pl.col("bytes").cast(pl.UInt64).sum()).iter_rows())
    out = {part: sum(by.pop(c, 0) for c in contents) / 1e3 for part, contents in ACK_PARTS.items()}
    out["other"] = sum(by.values()) / 1e3
    return out


def acks_kb(result: RunResult, receiver: str, sender: str) -> float:
    """Acknowledgement bytes alone, kB: Broadside's bit-vector acks
    (Broadside-Raw) and TCP's pure ACK segments with their IP and TCP
    headers (Broadside-IP) — what §5.2 compares."""
    split = ack_split_kb(result, receiver, sender)
    return split["tcp_acks"] + split["vectors"]


def saturated_mb(result: RunResult, receiver: str, sender: str) -> float:
    """Figure 7's throughput of a run: the MSDU bytes the receiver's MAC
    handed up from `sender` (frames of the saturating source while the
    receiver had the link; a retransmission once), MB."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    m = table(result, "mac").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & (pl.col("event") == "received"))
    return float(m["bytes"].cast(pl.UInt64).sum()) / 1e6


def rate_mb(result: RunResult, receiver: str, sender: str) -> dict[float, float]:
    """Figures 4 and 5: MB of data frames the receiver got intact from
    `sender`, by the rate they were sent at (Mb/s)."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    f = table(result, "frames").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & (pl.col("event") == "rx") & (pl.col("kind") == "data"))
    return {float(r): float(b) / 1e6 for r, b in f.group_by("rate_mbps").agg(pl.col("bytes").cast(pl.UInt64).sum()).sort("rate_mbps").iter_rows()}


def rssi_by_distance(result: RunResult, receiver: str, sender: str, bin_m: float = 10.0) -> pl.DataFrame:
    """Figures 9 and 11: mean RSSI (dBm) of the frames the receiver got
    from `sender`, by distance between them in `bin_m` bins (the bin's
    centre, m)."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    f = table(result, "frames").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & (pl.col("event") == "rx"))
    d = ((pl.col("x") - pl.col("peer_x")) ** 2 + (pl.col("y") - pl.col("peer_y")) ** 2).sqrt()
    return (
        f.with_columns(((d / bin_m).floor() * bin_m + bin_m / 2).alias("distance_m"))
        .group_by("distance_m")
        .agg(pl.col("rssi_dbm").mean())
        .sort("distance_m")
    )


def connect_distance_m(result: RunResult, a: str, b: str) -> float:
    """Distance between `a` and `b` when both first had the link (§5.3:
    "forming a connection at 121 and 35 meters"); NaN without a link."""
    spans = connected(result, a, b)
    if not spans:
        return math.nan
    t0 = spans[0][0] * 1e9
    e = table(result, "events").filter(pl.col("event").is_in(["link-up"]) & (pl.col("node").is_in([a, b])))
    row = e.filter(pl.col("time_ns") <= t0 + 1).sort("time_ns").tail(1)
    at = row.select("time_ns").item()
    pos = {}
    for n in (a, b):
        f = table(result, "frames").filter(pl.col("node") == n)
        f = f.with_columns((pl.col("time_ns") - at).abs().alias("dt")).sort("dt").head(1)
        pos[n] = (f["x"][0], f["y"][0])
    return math.dist(pos[a], pos[b])


# ---------------------------------------------------------------- sweep

# The paper's configurations as overrides of each location's scenario: the
# base (Broadside-Raw, 802.11g channel 1, dashboard antennas), Broadside-IP,
# 802.11a on channel 40
# (§5.3), and roof antennas (§5.4: 5 dBi without the car body's 6 dB,
# 0.5 m higher).
VARIANTS: dict[str, tuple[str, ...]] = {
    "base": (),
    # Broadside-IP (§4): discovery and files over Windows XP's TCP.
    "ip": ('app[0].transport="tcp"',),
    "11a": ('radio.standard="802.11a"', "radio.channel=40"),
    "roof": ('node.{s}.antenna_gain="5 dBi"', 'node.{r}.antenna_gain="5 dBi"', 'node.{s}.antenna_height="1.6 m"', 'node.{r}.antenna_height="1.6 m"'),
    # The base with OFDM receivers that equalise with the preamble's
    # channel estimate (docs/models.md, "Channel-estimate aging"): what
    # the Doppler of the motorway's closing speed costs 2304- and
    # 1500-byte frames.
    "preamble": ('radio.ofdm_channel_estimate="preamble"',),
}
# Figure 7 (§5.2): the saturating sender instead of Broadside, at the
# paper's packet sizes.
SIZES = (500, 1000, 1500, 2000, 2304)
VARIANTS.update({f"{n}B": ("app[0].enabled=false", "traffic[0].enabled=true", f'traffic[0].payload="{n} B"') for n in SIZES})


def measure(location: str, variant: str, seed: int) -> dict[str, float | str | int]:
    """One run of `location` in `variant` with `seed`, measured."""
    from wayside.runner import run

    s, r = ENDS[location]
    overrides = [o.format(s=s, r=r) for o in VARIANTS[variant]]
    res = run(location, seed=seed, overrides=overrides)
    saturated = variant.removesuffix("B").isdigit()
    row: dict[str, float | str | int] = {
        "location": location.removeprefix("zahn-"),
        "variant": variant,
        "seed": seed,
        "throughput_mb": saturated_mb(res, r, s) if saturated else broadside_mb(res, r, s),
        "connection_s": connection_s(res, r, s),
        "startup_s": startup_delay_s(res, r, s),
        "ack_kb": ack_kb(res, r, s),
        "connect_m": connect_distance_m(res, s, r),
        "acks_kb": acks_kb(res, r, s),
    }
    row.update({f"ack_{part}_kb": kb for part, kb in ack_split_kb(res, r, s).items()})
    row.update({f"mb_at_{rate:g}": mb for rate, mb in rate_mb(res, r, s).items()})
    return row


def sweep(runs: int = 5, variants: Sequence[str] = tuple(VARIANTS), jobs: int = 1, base_seed: int = 1) -> pl.DataFrame:
    """Every location in every variant, `runs` seeds each, as one table
    (one row per run); `jobs` worker processes."""
    from concurrent.futures import ProcessPoolExecutor

    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"variants: {', '.join(unknown)} unknown; allowed: {', '.join(VARIANTS)}")
    tasks = [(loc, v, base_seed + i) for loc in LOCATIONS for v in variants for i in range(runs)]
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        rows = list(ex.map(measure, *zip(*tasks)))
    # Runs differ in the rates they used: a rate a run never used is 0 MB.
    frame = pl.concat([pl.DataFrame([r]) for r in rows], how="diagonal_relaxed")
    return frame.with_columns(pl.col(c).fill_null(0.0) for c in frame.columns if c.startswith("mb_at_"))


def summary(runs: pl.DataFrame) -> pl.DataFrame:
    """Mean, min and max per location and variant (the paper's bars and
    error bars), with each variant's throughput and connection normalised
    by the base configuration's (Figures 8 and 10) and the
    acknowledgement bytes as a share of the throughput."""
    agg = runs.group_by("location", "variant").agg(
        pl.col("throughput_mb").mean().alias("mb"),
        pl.col("throughput_mb").min().alias("mb_min"),
        pl.col("throughput_mb").max().alias("mb_max"),
        pl.col("connection_s").mean().alias("conn_s"),
        pl.col("startup_s").median().alias("startup_s"),
        pl.col("connect_m").mean().alias("connect_m"),
        (pl.col("ack_kb").sum() / (pl.col("throughput_mb").sum() * 1e3)).alias("ack_share"),
    )
    base = agg.filter(pl.col("variant") == "base").select("location", pl.col("mb").alias("base_mb"), pl.col("conn_s").alias("base_s"))
    out = (
        agg.join(base, on="location", how="left")
        .with_columns((pl.col("mb") / pl.col("base_mb")).alias("mb_vs_base"), (pl.col("conn_s") / pl.col("base_s")).alias("conn_vs_base"))
        .drop("base_mb", "base_s")
        .sort("location", "variant")
    )
    return out.join(intervals(runs), on=["location", "variant"], how="left")


def _by_seed(runs: pl.DataFrame, location: str, variant: str, column: str) -> dict[int, float]:
    r = runs.filter((pl.col("location") == location) & (pl.col("variant") == variant))
    return dict(zip(r["seed"].to_list(), r[column].to_list()))


def gain(runs: pl.DataFrame, location: str, of: str, to: str, column: str = "throughput_mb") -> Gain:
    """`column`'s mean in variant `of` over variant `to` at `location`,
    runs paired by seed, with a 95% bootstrap interval."""
    return paired_gain(_by_seed(runs, location, to, column), _by_seed(runs, location, of, column))


def intervals(runs: pl.DataFrame) -> pl.DataFrame:
    """Per location and variant, 95% intervals: Student t of the mean
    throughput and connection duration (`mb_lo`, `mb_hi`, `conn_lo`,
    `conn_hi`), and bootstrap of the throughput and connection relative to
    the base configuration, runs paired by seed (`mb_vs_base_lo`, … `conn_vs_base_hi`);
    and the acknowledgements alone (`acks_kb`) as a share of the
    throughput (`acks_share`)."""
    rows = []
    for (loc, var), g in runs.group_by("location", "variant", maintain_order=True):
        mb, conn = mean_interval(g["throughput_mb"].to_list()), mean_interval(g["connection_s"].to_list())
        gm, gc = gain(runs, loc, var, "base"), gain(runs, loc, var, "base", "connection_s")
        acks = g["acks_kb"].sum() / (g["throughput_mb"].sum() * 1e3) if "acks_kb" in g.columns else math.nan
        rows.append({
            "location": loc, "variant": var, "mb_lo": mb.lo, "mb_hi": mb.hi, "conn_lo": conn.lo, "conn_hi": conn.hi,
            "mb_vs_base_lo": gm.lo, "mb_vs_base_hi": gm.hi, "conn_vs_base_lo": gc.lo, "conn_vs_base_hi": gc.hi, "acks_share": acks,
        })
    return pl.DataFrame(rows, schema_overrides={k: pl.Float64 for k in rows[0] if k not in ("location", "variant")})


def _text_table(head: str, rows: Iterable[str]) -> str:
    """A text table: its header, ruled underneath, then `rows`."""
    return "\n".join([head, "-" * len(head), *rows])


def format_summary(table: pl.DataFrame) -> str:
    """The summary as text within 80 columns: MB (mean, min-max), connection
    s, startup s (median), connection distance m, ack share %, and MB and
    connection relative to the base configuration."""
    head = f"{'location':<12}{'variant':<8}{'MB':>7}{'min-max':>13}{'conn s':>8}{'start s':>8}{'conn m':>7}{'ack %':>6}{'MB/b':>6}{'s/b':>5}"
    return _text_table(head, (
        f"{r['location']:<12}{r['variant']:<8}{r['mb']:>7.1f}{r['mb_min']:>6.1f}-{r['mb_max']:<6.1f}{r['conn_s']:>8.1f}"
        f"{r['startup_s']:>8.2f}{r['connect_m']:>7.0f}{100 * r['ack_share']:>6.1f}{r['mb_vs_base']:>6.2f}{r['conn_vs_base']:>5.2f}"
        for r in table.iter_rows(named=True)
    ))


def _ci(lo: float, hi: float, width: int, digits: int = 1) -> str:
    text = "" if math.isnan(lo) else f"{lo:.{digits}f}-{hi:.{digits}f}"
    return f"{text:>{width}}"


def format_intervals(table: pl.DataFrame) -> str:
    """The summary's 95% intervals within 80 columns: mean MB and
    connection s, each with its interval, and MB relative to the base
    configuration with its paired interval."""
    head = f"{'location':<12}{'variant':<8}{'MB':>7}{'95% CI':>13}{'conn s':>8}{'95% CI':>13}{'MB/b':>6}{'95% CI':>12}"
    return _text_table(head, (
        f"{r['location']:<12}{r['variant']:<8}{r['mb']:>7.1f}{_ci(r['mb_lo'], r['mb_hi'], 13)}{r['conn_s']:>8.1f}"
        f"{_ci(r['conn_lo'], r['conn_hi'], 13)}{r['mb_vs_base']:>6.2f}{_ci(r['mb_vs_base_lo'], r['mb_vs_base_hi'], 12, 2)}"
        for r in table.iter_rows(named=True)
    ))


def broadside_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs of Broadside configurations (not Figure 7's saturating
    sender)."""
    return runs.filter(~pl.col("variant").is_in([f"{n}B" for n in SIZES]))


def ack_table(runs: pl.DataFrame) -> pl.DataFrame:
    """Per location and Broadside variant, the mean kB a receiver sent
    back by ACK_PARTS (and other), the acknowledgements alone, and each as
    a share of the mean throughput."""
    parts = [f"ack_{p}_kb" for p in (*ACK_PARTS, "other")]
    return (
        broadside_runs(runs)
        .group_by("location", "variant")
        .agg(pl.col("throughput_mb").mean().alias("mb"), pl.col("ack_kb").mean(), pl.col("acks_kb").mean(), *[pl.col(c).mean() for c in parts])
        .with_columns((pl.col("ack_kb") / (pl.col("mb") * 1e3)).alias("ack_share"), (pl.col("acks_kb") / (pl.col("mb") * 1e3)).alias("acks_share"))
        .sort("location", "variant")
    )


def format_acks(table: pl.DataFrame) -> str:
    """The acknowledgement bytes within 80 columns (kB per run): all sent
    back, the acknowledgements alone (Raw: bit vectors; IP: pure TCP ACKs),
    Broadside's answers (Raw: discovery messages; IP: the stream's
    segments), TCP set-up and teardown, other; and the two shares of the
    throughput."""
    head = f"{'location':<12}{'variant':<8}{'all kB':>8}{'acks kB':>9}{'answers':>9}{'TCP ctl':>8}{'other':>7}{'all %':>7}{'acks %':>8}"
    return _text_table(head, (
        f"{r['location']:<12}{r['variant']:<8}{r['ack_kb']:>8.1f}{r['acks_kb']:>9.1f}{r['ack_answers_kb'] + r['ack_stream_kb']:>9.1f}"
        f"{r['ack_tcp_control_kb']:>8.1f}{r['ack_other_kb']:>7.1f}{100 * r['ack_share']:>7.2f}{100 * r['acks_share']:>8.3f}"
        for r in table.iter_rows(named=True)
    ))


def size_table(runs: pl.DataFrame) -> pl.DataFrame:
    """Figure 7: per location and packet size, the median, min and max
    throughput of the saturating sender's runs (the paper plots the
    median run), MB."""
    sized = runs.filter(pl.col("variant").is_in([f"{n}B" for n in SIZES]))
    return (
        sized.with_columns(pl.col("variant").str.strip_suffix("B").cast(pl.Int64).alias("size"))
        .group_by("location", "size")
        .agg(pl.col("throughput_mb").median().alias("median_mb"), pl.col("throughput_mb").min().alias("min_mb"), pl.col("throughput_mb").max().alias("max_mb"))
        .sort("location", "size")
    )


def format_sizes(table: pl.DataFrame) -> str:
    """Figure 7 as text: median MB per location and size, the best size
    marked *, and 2304 B's share of the best."""
    sizes = sorted(table["size"].unique().to_list())
    head = f"{'location':<12}" + "".join(f"{f'{n} B':>10}" for n in sizes) + f"{'2304/best':>10}"
    rows = []
    for (loc,), g in table.group_by("location", maintain_order=True):
        med = dict(zip(g["size"].to_list(), g["median_mb"].to_list()))
        best = max(med, key=lambda n: med[n])
        cells = "".join(f"{med[n]:>9.1f}{'*' if n == best else ' '}" if n in med else f"{'':>10}" for n in sizes)
        share = med.get(2304, math.nan) / med[best] if med[best] > 0 else math.nan
        rows.append(f"{loc:<12}{cells}{share:>10.2f}")
    return _text_table(head, rows)
