"""The FEUP 2019 drive-by (scenario `feup-2019`): one AP/client pair's
run reduced to the rows of the dataset's `per-second.csv`, so that the
simulation and the measurement are summarised the same way.

Per whole second of the run: the client's distance from the AP (its
recorded positions, linear in between), the bytes of the MSDUs it
received from the AP (the `mac` trace: an A-MPDU counts only the
subframes that arrived), and the mean PHY rate and RSSI of those
frames (NaN in a second without any). The summaries the validation file
`feup-2019.toml` compares:

- RSSI per distance bin (what the scenario was calibrated on);
- throughput per 10 m distance bin: mean Mbit/s over the seconds in the bin;
- PHY rate against RSSI: mean rate over the seconds whose RSSI is in a bin;
- drop distance: the lower edge of the first 10 m bin, going out from the
  AP, whose mean throughput is under 1 Mbit/s (the far edge of the last
  bin reached if none is);
- share of seconds with data.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from wayside.gpsout import recorded_positions
from wayside.result import RunResult
from wayside.traces import check_node, table

BIN_M = 10.0


def per_second(result: RunResult, client: str, ap: str) -> pl.DataFrame:
    """second, dist_m, mbit, rate_mbps, rssi_dbm of the pair (see module)."""
    check_node(result, client, "receiver")
    check_node(result, ap, "sender")
    seconds = np.arange(0, math.floor(result.duration_s))
    pos = recorded_positions(result, client)
    ap_pos = recorded_positions(result, ap).row(0)
    t = pos["time_s"].to_numpy()
    x = np.interp(seconds + 0.5, t, pos["x"].to_numpy())
    y = np.interp(seconds + 0.5, t, pos["y"].to_numpy())
    base = pl.DataFrame({"second": seconds, "dist_m": np.hypot(x - ap_pos[1], y - ap_pos[2])})
    second = (pl.col("time_ns") // 1_000_000_000).cast(pl.Int64).alias("second")
    # Bytes from the MAC's received MSDUs: a frames row of an A-MPDU is the
    # whole aggregate, of which some subframes may have been lost.
    data = (
        table(result, "mac")
        .filter((pl.col("node") == client) & (pl.col("peer") == ap) & (pl.col("event") == "received"))
        .with_columns(second)
        .group_by("second")
        .agg((pl.col("bytes").cast(pl.Float64).sum() * 8 / 1e6).alias("mbit"))
    )
    phy = (
        table(result, "frames")
        .filter((pl.col("node") == client) & (pl.col("peer") == ap) & (pl.col("event") == "rx")
                & (pl.col("kind") == "data"))
        .with_columns(second)
        .group_by("second")
        .agg(pl.col("rate_mbps").cast(pl.Float64).mean(), pl.col("rssi_dbm").cast(pl.Float64).mean())
    )
    rx = data.join(phy, on="second", how="full", coalesce=True)
    out = base.with_columns(pl.col("second").cast(pl.Int64)).join(rx, on="second", how="left")
    return out.with_columns(pl.col("mbit").fill_null(0.0))


def bin_throughput(rows: pl.DataFrame, lo_m: float, hi_m: float) -> float:
    """Mean Mbit/s over the seconds at lo_m <= distance < hi_m (NaN if none)."""
    v = rows.filter((pl.col("dist_m") >= lo_m) & (pl.col("dist_m") < hi_m))["mbit"]
    return float(v.mean()) if v.len() else math.nan


def rssi_at_distance(rows: pl.DataFrame, lo_m: float, hi_m: float) -> float:
    """Mean RSSI over the seconds with frames at lo_m <= distance < hi_m."""
    v = rows.filter((pl.col("dist_m") >= lo_m) & (pl.col("dist_m") < hi_m))["rssi_dbm"].drop_nulls()
    return float(v.mean()) if v.len() else math.nan


def rate_at_rssi(rows: pl.DataFrame, lo_dbm: float, hi_dbm: float) -> float:
    """Mean PHY rate over the seconds whose mean RSSI is in [lo, hi)."""
    v = rows.filter((pl.col("rssi_dbm") >= lo_dbm) & (pl.col("rssi_dbm") < hi_dbm))["rate_mbps"]
    return float(v.mean()) if v.len() else math.nan


def drop_distance(rows: pl.DataFrame, threshold_mbit: float = 1.0) -> float:
    """Lower edge of the first 10 m bin whose mean throughput is under
    `threshold_mbit`; the upper edge of the farthest bin reached if none is."""
    last = int(float(rows["dist_m"].max()) // BIN_M)
    for k in range(last + 1):
        v = bin_throughput(rows, k * BIN_M, (k + 1) * BIN_M)
        if not math.isnan(v) and v < threshold_mbit:
            return k * BIN_M
    return (last + 1) * BIN_M


def data_share(rows: pl.DataFrame) -> float:
    """Share of seconds with any data."""
    return float((rows["mbit"] > 0).mean())
