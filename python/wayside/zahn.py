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
answers inside the stream.
"""

from __future__ import annotations

import math
from typing import Sequence

import polars as pl

from wayside.result import RunResult
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


def ack_kb(result: RunResult, receiver: str, sender: str) -> float:
    """Bytes the receiver sent back to the sender, kB: the MSDUs its MAC
    was given for the sender (acknowledgements and discovery answers; for
    Broadside-IP, TCP's acknowledgements with their headers), each counted
    once whether or not it arrived."""
    check_node(result, receiver, "receiver")
    check_node(result, sender, "sender")
    m = table(result, "mac").filter((pl.col("node") == receiver) & (pl.col("peer") == sender) & pl.col("event").is_in(["delivered", "failed"]))
    return float(m["bytes"].cast(pl.UInt64).sum()) / 1e3


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


def measure(location: str, variant: str, seed: int) -> dict[str, float | str | int]:
    """One run of `location` in `variant` with `seed`, measured."""
    from wayside.runner import run

    s, r = ENDS[location]
    overrides = [o.format(s=s, r=r) for o in VARIANTS[variant]]
    res = run(location, seed=seed, overrides=overrides)
    return {
        "location": location.removeprefix("zahn-"),
        "variant": variant,
        "seed": seed,
        "throughput_mb": broadside_mb(res, r, s),
        "connection_s": connection_s(res, r, s),
        "startup_s": startup_delay_s(res, r, s),
        "ack_kb": ack_kb(res, r, s),
        "connect_m": connect_distance_m(res, s, r),
    }


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
    return pl.DataFrame(rows)


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
    return (
        agg.join(base, on="location", how="left")
        .with_columns((pl.col("mb") / pl.col("base_mb")).alias("mb_vs_base"), (pl.col("conn_s") / pl.col("base_s")).alias("conn_vs_base"))
        .drop("base_mb", "base_s")
        .sort("location", "variant")
    )


def format_summary(table: pl.DataFrame) -> str:
    """The summary as text within 80 columns: MB (mean, min-max), connection
    s, startup s (median), connection distance m, ack share %, and MB and
    connection relative to the base configuration."""
    head = f"{'location':<12}{'variant':<8}{'MB':>7}{'min-max':>13}{'conn s':>8}{'start s':>8}{'conn m':>7}{'ack %':>6}{'MB/b':>6}{'s/b':>5}"
    lines = [head, "-" * len(head)]
    for r in table.iter_rows(named=True):
        lines.append(
            f"{r['location']:<12}{r['variant']:<8}{r['mb']:>7.1f}{r['mb_min']:>6.1f}-{r['mb_max']:<6.1f}{r['conn_s']:>8.1f}"
            f"{r['startup_s']:>8.2f}{r['connect_m']:>7.0f}{100 * r['ack_share']:>6.1f}{r['mb_vs_base']:>6.2f}{r['conn_vs_base']:>5.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m wayside.zahn [--runs N] [--jobs J] [--variants a,b] [--out runs.csv]`"""
    import argparse

    p = argparse.ArgumentParser(prog="python -m wayside.zahn", description="Zahn et al. 2009 §5: sweep the three locations and print the paper's metrics.")
    p.add_argument("--runs", type=int, default=5, help="seeds per location and variant (paper: 5)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--out", help="also write every run's row to this CSV file")
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error(f"--runs: {a.runs} is not at least 1")
    try:
        runs = sweep(a.runs, [v for v in a.variants.split(",") if v], a.jobs)
    except ValueError as e:
        p.error(str(e))
    if a.out:
        runs.write_csv(a.out)
    print(format_summary(summary(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
