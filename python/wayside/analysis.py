"""Link-level analysis of a run: frame delivery ratio against distance per
rate (from sounder probes), mean SNR against distance, and where each rate's
delivery curve crosses 50% compared with where the mean SNR meets the rate's
threshold."""

from __future__ import annotations

import re

import polars as pl

from wayside import engine as _native
from wayside.result import RunResult

MAC_OVERHEAD_BYTES = 28

# Unit strings as the scenario parser accepts them ("1500 B", "1.5 kB", "3dB").
_QUANTITY = re.compile(r"\s*([+-]?[0-9.]*(?:[eE][+-]?[0-9]+)?)\s*(.*?)\s*$")
_SIZE_UNITS = {"B": 1.0, "KB": 1e3, "kB": 1e3, "KiB": 1024.0, "MB": 1e6, "MiB": 1048576.0, "GB": 1e9, "GiB": 1073741824.0}
_RATIO_UNITS = {"dB": 1.0, "dBi": 1.0}


def _quantity(text: str, units: dict[str, float]) -> float:
    """Value of a validated scenario quantity such as "1.5 kB", in the base unit."""
    number, unit = _QUANTITY.match(str(text)).groups()
    return float(number) * units[unit]


def _receivers(result: RunResult, sender: str, receiver: str | None) -> list[str]:
    """`receiver`, or with None every node but the sender."""
    return [receiver] if receiver is not None else [n for n in result.nodes if n != sender]


def _positions(frames: pl.DataFrame, nodes: list[str]) -> pl.DataFrame:
    """Where each of `nodes` was over time, from the rows it recorded."""
    return (
        frames.filter(pl.col("node").is_in(nodes))
        .select("time_ns", pl.col("node").alias("receiver"), pl.col("x").alias("rx_x"), pl.col("y").alias("rx_y"))
        .unique(["receiver", "time_ns"], keep="first")
        .sort("time_ns")
    )


def delivery_vs_distance(result: RunResult, sender: str, receiver: str | None, bin_m: float = 20.0) -> pl.DataFrame:
    """Delivery ratio of `sender`'s broadcast probes at `receiver` (None:
    at every other node, each probe counted once per receiver), per rate
    and distance bin: columns rate_mbps, distance_m (bin centre), sent,
    received, ratio."""
    frames = pl.DataFrame(result.frames).with_columns(
        pl.col("node").cast(pl.Utf8), pl.col("peer").cast(pl.Utf8), pl.col("event").cast(pl.Utf8)
    )
    receivers = _receivers(result, sender, receiver)
    tx = frames.filter((pl.col("node") == sender) & (pl.col("event") == "tx") & (pl.col("peer") == "broadcast"))
    rx = frames.filter(pl.col("node").is_in(receivers) & (pl.col("peer") == sender) & (pl.col("event") == "rx"))
    pos = _positions(frames, receivers)
    if tx.is_empty() or pos.is_empty():
        return pl.DataFrame(schema={"rate_mbps": pl.Float32, "distance_m": pl.Float64, "sent": pl.UInt32, "received": pl.UInt32, "ratio": pl.Float64})
    heard = pos["receiver"].unique().sort()
    tx = tx.select("time_ns", "seq", "rate_mbps", "x", "y").join(pl.DataFrame({"receiver": heard}), how="cross")
    tx = tx.sort("time_ns").join_asof(pos, on="time_ns", by="receiver", strategy="nearest", check_sortedness=False)
    tx = tx.with_columns(
        (((pl.col("x") - pl.col("rx_x")) ** 2 + (pl.col("y") - pl.col("rx_y")) ** 2).sqrt()).alias("distance")
    )
    # A probe is delivered if the receiver logged an rx of the same sequence
    # number from the sender within the probe's lifetime (seq wraps at 4096).
    delivered = rx.select(pl.col("node").alias("receiver"), "seq", "rate_mbps", pl.col("time_ns").alias("rx_time"))
    tx = tx.join_asof(
        delivered.sort("rx_time").rename({"rx_time": "time_ns", "seq": "rx_seq", "rate_mbps": "rx_rate"}),
        on="time_ns",
        by="receiver",
        strategy="forward",
        tolerance=50_000_000,
        check_sortedness=False,
    ).with_columns(
        ((pl.col("rx_seq") == pl.col("seq")) & (pl.col("rx_rate") == pl.col("rate_mbps"))).fill_null(False).alias("ok")
    )
    binned = tx.with_columns(((pl.col("distance") / bin_m).floor() * bin_m + bin_m / 2).alias("distance_m"))
    return (
        binned.group_by("rate_mbps", "distance_m")
        .agg(pl.len().alias("sent"), pl.col("ok").sum().alias("received"))
        .with_columns((pl.col("received") / pl.col("sent")).alias("ratio"))
        .sort("rate_mbps", "distance_m")
    )


def snr_vs_distance(result: RunResult, sender: str, receiver: str | None, bin_m: float = 20.0) -> pl.DataFrame:
    """Mean SNR (dB, averaged in dB) of `sender`'s frames at `receiver`
    (None: at every other node) per distance bin."""
    frames = pl.DataFrame(result.frames).with_columns(pl.col("node").cast(pl.Utf8), pl.col("peer").cast(pl.Utf8))
    receivers = _receivers(result, sender, receiver)
    rows = frames.filter(pl.col("node").is_in(receivers) & (pl.col("peer") == sender) & pl.col("snr_db").is_not_nan())
    tx = (
        frames.filter((pl.col("node") == sender))
        .select("time_ns", pl.col("x").alias("tx_x"), pl.col("y").alias("tx_y"))
        .unique("time_ns", keep="first")
        .sort("time_ns")
    )
    rows = rows.sort("time_ns").join_asof(tx, on="time_ns", strategy="backward")
    rows = rows.with_columns(
        (((pl.col("x") - pl.col("tx_x")) ** 2 + (pl.col("y") - pl.col("tx_y")) ** 2).sqrt()).alias("distance")
    ).with_columns(((pl.col("distance") / bin_m).floor() * bin_m + bin_m / 2).alias("distance_m"))
    return rows.group_by("distance_m").agg(pl.col("snr_db").mean().alias("mean_snr_db"), pl.len().alias("frames")).sort("distance_m")


def _first_crossing(xs: list[float], ys: list[float], level: float) -> float | None:
    """Smallest x at which ys falls from >= level to < level (linear interpolation)."""
    for i in range(1, len(xs)):
        if ys[i - 1] >= level > ys[i]:
            return xs[i - 1] + (ys[i - 1] - level) * (xs[i] - xs[i - 1]) / (ys[i - 1] - ys[i])
    return None


def rate_crossings(result: RunResult, sender: str, receiver: str | None, bin_m: float = 20.0) -> pl.DataFrame:
    """Per rate: the distance where delivery falls through 50%, the distance
    where the mean SNR falls through the rate's 50% threshold, and both."""
    scenario = result.scenario
    standard = scenario["radio"]["standard"]
    payload = next(
        int(_quantity(t.get("payload", "1500 B"), _SIZE_UNITS))
        for t in scenario.get("traffic", [])
        if t["from"] == sender
    )
    loss = _quantity(scenario["radio"].get("implementation_loss", "0 dB"), _RATIO_UNITS)
    thresholds = {round(m, 3): th for m, th, _ in _native.rate_thresholds(standard, payload + MAC_OVERHEAD_BYTES, loss)}
    dv = delivery_vs_distance(result, sender, receiver, bin_m)
    snr = snr_vs_distance(result, sender, receiver, bin_m)
    rows = []
    for rate in sorted(dv["rate_mbps"].unique().to_list()):
        curve = dv.filter(pl.col("rate_mbps") == rate)
        threshold = thresholds[round(float(rate), 3)]
        rows.append(
            {
                "rate_mbps": float(rate),
                "threshold_db": threshold,
                "d50_delivery_m": _first_crossing(curve["distance_m"].to_list(), curve["ratio"].to_list(), 0.5),
                "d_threshold_m": _first_crossing(snr["distance_m"].to_list(), snr["mean_snr_db"].to_list(), threshold),
            }
        )
    return pl.DataFrame(rows)
