"""Chen et al.'s multi-hop TCP analysis of a highway run (scenario
chen-vanet): collisions, routing drops, hop count and latency per segment,
throughput and congestion window by road bin, and the sweep over range,
density and sources that reproduces the paper's Figures 2-11, with 95%
confidence intervals over runs.

Sources are the nodes named `car-source-N` (a highway section `car` with
`sources`); the AP is the node `ap`. Bins are 100 cells of 1.5 m (150 m)
from the road's start, as in the paper's Fig. 1."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wayside.result import RunResult
from wayside.stats import mean_ci

SOURCE_PREFIX = "car-source-"
AP = "ap"
BIN_M = 150.0
BINS = 10
#: Paper figures' ranges (m) and densities.
RANGES = (100, 200, 300, 400, 500, 700, 900)
DENSITIES = (0.1, 0.3)

# SNR (dB) at which a frame of each rate gets through half the time, the
# receiver's thresholds (docs/models.md, PHY): a frame clearing its rate's
# threshold over noise alone would have been received without interference.
_THRESHOLD_DB = {1.0: -0.84, 2.0: 3.86, 5.5: 5.70, 11.0: 8.71, 6.0: 2.96, 9.0: 5.59, 12.0: 5.97,
                 18.0: 8.60, 24.0: 12.40, 36.0: 15.27, 48.0: 19.89, 54.0: 21.21}
# Interference at least as strong as the noise: SINR 3 dB below SNR.
_INTERFERED_DB = 3.0


def _frames(result: RunResult) -> pl.DataFrame:
    return pl.DataFrame(result.frames).with_columns(pl.col("node", "peer", "event", "reason", "kind").cast(pl.Utf8))


def _events(result: RunResult) -> pl.DataFrame:
    return pl.DataFrame(result.events).with_columns(pl.col("node", "peer", "event").cast(pl.Utf8))


def collisions(result: RunResult) -> int:
    """Receptions lost to overlapping transmissions: frames that would have
    been received alone (SNR over noise clears the rate's threshold) but
    were dropped because the receiver was locked on another frame (`busy`),
    was taken over by a stronger one (`captured`), or failed with the
    interference at least as strong as the noise (`error` or
    `preamble-missed` with SINR 3 dB or more below SNR). Drops while
    transmitting (half duplex) are not collisions."""
    f = _frames(result).filter(pl.col("event") == "drop")
    if f.is_empty():
        return 0
    thr = pl.col("rate_mbps").cast(pl.Float64).replace_strict(_THRESHOLD_DB, default=None)
    alone = pl.col("snr_db") >= thr
    overlapped = pl.col("reason").is_in(["busy", "captured"]) | (
        pl.col("reason").is_in(["error", "preamble-missed"]) & (pl.col("sinr_db") <= pl.col("snr_db") - _INTERFERED_DB)
    )
    return int(f.filter(alone & overlapped).height)


def routing_drops(result: RunResult) -> int:
    """Packets dropped for want of a neighbour closer to the destination
    after their retries (`route-drop` events)."""
    e = _events(result)
    return int(e.filter(pl.col("event") == "route-drop").height) if not e.is_empty() else 0


def segments(result: RunResult, receiver: str = AP) -> pl.DataFrame:
    """One row per TCP data segment that reached `receiver` over greedy
    forwarding: time (s), source, hops, latency (s) from the source's send."""
    e = _events(result).filter(pl.col("node") == receiver)
    hops = e.filter(pl.col("event") == "geo-hops").sort("time_ns", maintain_order=True)
    lat = e.filter(pl.col("event") == "geo-latency").sort("time_ns", maintain_order=True)
    return pl.DataFrame({
        "time_s": hops["time_ns"].cast(pl.Float64) / 1e9,
        "source": hops["peer"],
        "hops": hops["value"],
        "latency_s": lat["value"],
    }, schema={"time_s": pl.Float64, "source": pl.Utf8, "hops": pl.Float64, "latency_s": pl.Float64})


def _active(result: RunResult) -> dict[str, tuple[float, float]]:
    """Each source's active span (s): its app start to its last frame."""
    e = _events(result)
    starts = e.filter((pl.col("event") == "app-start") & pl.col("node").str.starts_with(SOURCE_PREFIX))
    last = (_frames(result).filter(pl.col("node").str.starts_with(SOURCE_PREFIX) & (pl.col("event") == "tx"))
            .group_by("node").agg(pl.col("time_ns").max()))
    end = dict(zip(last["node"], last["time_ns"]))
    return {n: (t / 1e9, end.get(n, t) / 1e9) for n, t in zip(starts["node"], starts["time_ns"])}


def delivered_bytes(result: RunResult, receiver: str = AP) -> dict[str, int]:
    """TCP bytes delivered to `receiver`, per source."""
    t = pl.DataFrame(result.transport).with_columns(pl.col("node", "peer", "proto").cast(pl.Utf8))
    t = t.filter((pl.col("node") == receiver) & (pl.col("proto") == "tcp"))
    g = t.group_by("peer").agg(pl.col("bytes").cast(pl.Int64).sum())
    return dict(zip(g["peer"], g["bytes"]))


def system_throughput_kBps(result: RunResult) -> float:
    """All sources' TCP bytes at the AP per second from the first source's
    start to the last one's last frame (the paper's system throughput),
    in KB/s."""
    spans = _active(result).values()
    if not spans:
        return math.nan
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    return sum(delivered_bytes(result).values()) / span / 1e3 if span > 0 else math.nan


def source_throughput_kBps(result: RunResult) -> float:
    """Mean over sources of each one's bytes at the AP per second it was
    active (the paper's average throughput from source to destination)."""
    got, spans = delivered_bytes(result), _active(result)
    rates = [got.get(n, 0) / (b - a) / 1e3 for n, (a, b) in spans.items() if b - a >= 5.0]
    return statistics.fmean(rates) if rates else math.nan


def by_bin(result: RunResult) -> pl.DataFrame:
    """Per road bin (0..9, 150 m each): the sources' throughput (KB/s of
    bytes acknowledged at the sender while it was in the bin, over the time
    it spent there sending) and mean congestion window (segments)."""
    tcp = pl.DataFrame(result.tcp).with_columns(pl.col("node").cast(pl.Utf8)).filter(pl.col("node").str.starts_with(SOURCE_PREFIX))
    spans = _active(result)
    tx = _frames(result).filter(pl.col("node").str.starts_with(SOURCE_PREFIX) & (pl.col("event") == "tx"))
    # Time in each bin: gaps between a source's transmissions (beacons at
    # least every second) while its application ran.
    dwell = [0.0] * BINS
    for node, (a, b) in spans.items():
        rows = tx.filter((pl.col("node") == node) & (pl.col("time_ns") >= a * 1e9)).sort("time_ns")
        t, x = rows["time_ns"].to_list(), rows["x"].to_list()
        for i in range(len(t) - 1):
            k = int(x[i] // BIN_M)
            if 0 <= k < BINS:
                dwell[k] += min(t[i + 1] - t[i], 2e9) / 1e9
    binned = tcp.with_columns((pl.col("x") // BIN_M).cast(pl.Int64).alias("bin")).filter(pl.col("bin").is_between(0, BINS - 1))
    agg = binned.group_by("bin").agg(pl.col("acked").cast(pl.Int64).sum().alias("acked"), pl.col("cwnd").cast(pl.Float64).mean().alias("cwnd"))
    acked = dict(zip(agg["bin"], agg["acked"]))
    cwnd = dict(zip(agg["bin"], agg["cwnd"]))
    return pl.DataFrame({
        "bin": list(range(BINS)),
        "position_m": [k * BIN_M for k in range(BINS)],
        "throughput_kBps": [acked.get(k, 0) / dwell[k] / 1e3 if dwell[k] > 0 else None for k in range(BINS)],
        "cwnd": [cwnd.get(k) for k in range(BINS)],
    }, schema={"bin": pl.Int64, "position_m": pl.Float64, "throughput_kBps": pl.Float64, "cwnd": pl.Float64})


def summarize(result: RunResult) -> dict[str, Any]:
    """One run's figures: throughputs, collisions, routing drops, mean
    hops and latency, and throughput / cwnd per bin."""
    seg = segments(result)
    bins = by_bin(result)
    out: dict[str, Any] = {
        "throughput_kBps": source_throughput_kBps(result),
        "system_kBps": system_throughput_kBps(result),
        "collisions": collisions(result),
        "routing_drops": routing_drops(result),
        "hops": float(seg["hops"].mean()) if seg.height else math.nan,
        "latency_s": float(seg["latency_s"].mean()) if seg.height else math.nan,
    }
    for k in range(BINS):
        out[f"tput_bin{k}"] = bins["throughput_kBps"][k]
        out[f"cwnd_bin{k}"] = bins["cwnd"][k]
    return out


def cwnd_figure(result: RunResult, source: str | None = None, title: str = "") -> Any:
    """The paper's Fig. 9: `source`'s congestion window against time, with
    its position on the road (matplotlib figure of two panels). By default
    the source whose ACKs span the longest time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from wayside.tcploss import sender_acks

    if source is None:
        tcp = pl.DataFrame(result.tcp).with_columns(pl.col("node").cast(pl.Utf8))
        span = tcp.filter(pl.col("node").str.starts_with(SOURCE_PREFIX)).group_by("node").agg(
            (pl.col("time_ns").max() - pl.col("time_ns").min()).alias("span")).sort("span", "node", descending=[True, False])
        if span.is_empty():
            raise ValueError(f"no TCP ACKs at any source ({SOURCE_PREFIX}N) in this run")
        source = span["node"][0]
    acks = sender_acks(result, source)
    fig, ax = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    ax[0].step(acks["t"], acks["cwnd"], where="post", lw=0.8)
    ax[0].set_ylabel("cwnd (segments)")
    ax[1].plot(acks["t"], acks["x"], lw=0.8)
    ax[1].set_ylabel("position (m)")
    ax[1].set_xlabel("time (s)")
    ax[0].set_title(title or f"{source}: congestion window (Chen et al. Fig. 9)")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------ sweep

def overrides(range_m: float, density: float, sources: int, duration_s: float) -> list[str]:
    """The `--set` overrides of one sweep point of chen-vanet."""
    r = f'"{range_m:g} m"'
    return [f"node.ap.range={r}", f"node.car.range={r}", f"node.car.mobility.density={density:g}",
            f"node.car.mobility.sources={sources}", f'duration="{duration_s:g} s"']


def run_point(args: tuple[float, float, int, float, int]) -> dict[str, Any]:
    """Runs one (range, density, sources, duration, seed) point; returns its
    summary with the point's keys (a top-level function, for executors)."""
    from wayside.runner import run

    range_m, density, sources, duration_s, seed = args
    result = run("chen-vanet", seed=seed, overrides=overrides(range_m, density, sources, duration_s))
    return {"range_m": range_m, "density": density, "sources": sources, "seed": seed, **summarize(result)}


def sweep(points: Sequence[tuple[float, float, int]], runs: int, duration_s: float = 60.0, base_seed: int = 1,
          workers: int = 2) -> pl.DataFrame:
    """Every (range, density, sources) point `runs` times (seeds
    base_seed...), on `workers` local processes; one row per run."""
    from concurrent.futures import ProcessPoolExecutor

    jobs = [(r, d, s, duration_s, base_seed + i) for (r, d, s) in points for i in range(runs)]
    if workers <= 1:
        rows = [run_point(j) for j in jobs]
    else:
        with ProcessPoolExecutor(workers) as ex:
            rows = list(ex.map(run_point, jobs))
    return pl.DataFrame(rows)


def table(runs: pl.DataFrame, value: str, by: Sequence[str]) -> pl.DataFrame:
    """Mean and 95% CI half-width of `value` per group of `by`."""
    rows = []
    for key, g in runs.group_by(list(by), maintain_order=True):
        m, ci = mean_ci(g[value].to_list())
        rows.append({**dict(zip(by, key)), "mean": m, "ci95": ci, "n": g.height})
    return pl.DataFrame(rows).sort(list(by))


def report(runs: pl.DataFrame) -> str:
    """Markdown tables for Figures 2-11 from a sweep's runs (whatever
    points it holds)."""
    def fmt(v: float) -> str:
        return "-" if v is None or math.isnan(v) else f"{v:.1f}" if abs(v) < 1e4 else f"{v:.0f}"

    def grid(title: str, value: str, rows_key: str, cols_key: str, sub: pl.DataFrame) -> list[str]:
        if sub.is_empty():
            return []
        t = table(sub, value, [rows_key, cols_key])
        cols = sorted(set(t[cols_key].to_list()))
        lines = [f"### {title}", "", f"| {rows_key} | " + " | ".join(f"{cols_key} {c:g}" for c in cols) + " |",
                 "|---" * (len(cols) + 1) + "|"]
        for r in sorted(set(t[rows_key].to_list())):
            cells = []
            for c in cols:
                hit = t.filter((pl.col(rows_key) == r) & (pl.col(cols_key) == c))
                cells.append("-" if hit.is_empty() else f"{fmt(hit['mean'][0])} ± {fmt(hit['ci95'][0])}")
            lines.append(f"| {r:g} | " + " | ".join(cells) + " |")
        return lines + [""]

    def by_position(title: str, prefix: str, sub: pl.DataFrame) -> list[str]:
        if sub.is_empty():
            return []
        long = sub.unpivot(index=["range_m"], on=[f"{prefix}{k}" for k in range(BINS)], variable_name="bin", value_name="v")
        long = long.with_columns((pl.col("bin").str.extract(r"(\d+)$").cast(pl.Int64) * BIN_M).alias("position_m"))
        return grid(title, "v", "position_m", "range_m", long.with_columns(pl.col("v").cast(pl.Float64)))

    single = runs.filter(pl.col("sources") == 1)
    low = runs.filter(pl.col("density") == 0.1)
    out = ["## Chen et al. reproduction (chen-vanet)", "",
           "Mean ± 95% confidence half-width over runs; KB/s = 1000 bytes/s.", ""]
    out += grid("Fig. 2: source throughput (KB/s) vs range", "throughput_kBps", "range_m", "density", single)
    out += grid("Fig. 3: collisions per run vs range", "collisions", "range_m", "density", single)
    out += grid("Fig. 4: latency (s) vs range", "latency_s", "range_m", "density", single)
    out += grid("Hops vs range", "hops", "range_m", "density", single)
    out += grid("Routing drops per run vs range", "routing_drops", "range_m", "density", single)
    out += by_position("Fig. 5: throughput (KB/s) by position, 30% density", "tput_bin", single.filter(pl.col("density") == 0.3))
    out += by_position("Fig. 6: cwnd by position, 10% density", "cwnd_bin", single.filter(pl.col("density") == 0.1))
    out += by_position("Fig. 7: cwnd by position, 30% density", "cwnd_bin", single.filter(pl.col("density") == 0.3))
    out += grid("Fig. 8: system throughput (KB/s) vs range, 10% density", "system_kBps", "range_m", "sources", low)
    out += by_position("Fig. 10: 2-source throughput (KB/s) by position", "tput_bin", low.filter(pl.col("sources") == 2))
    out += by_position("Fig. 11: 3-source throughput (KB/s) by position", "tput_bin", low.filter(pl.col("sources") == 3))
    return "\n".join(out)


def write_report(runs_file: str | Path, out: str | Path | None = None) -> Path:
    """Writes `report(...)` of a sweep's runs saved as Parquet (by
    benches/chen_vanet.py --out) to `out` (default: the same name, .md)."""
    src = Path(runs_file)
    path = Path(out) if out is not None else src.with_suffix(".md")
    path.write_text(report(pl.read_parquet(src)) + "\n", encoding="utf-8")
    return path
