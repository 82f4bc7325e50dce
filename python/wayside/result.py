"""A run's results: trace tables as Arrow (taken from the engine through the
Arrow C stream interface without a copy; load straight into polars or
pandas), per-node summaries, per-second summaries, and saving to a run
directory as Parquet."""

from __future__ import annotations

import json
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ("frames", "mac", "events", "tcp", "transport")


def from_stream(table: Any) -> pa.Table:
    """A trace table from the engine as a `pyarrow.Table`, imported through
    the Arrow C stream interface (`__arrow_c_stream__`): the table keeps the
    engine's buffers, nothing is copied."""
    return pa.RecordBatchReader.from_stream(table).read_all()


def scan(directory: str | Path) -> dict[str, pl.LazyFrame]:
    """The trace tables of a run directory as polars LazyFrames
    (`polars.scan_parquet`): nothing is read until a query is collected,
    and then only the columns and row groups it needs."""
    d = Path(directory)
    return {name: pl.scan_parquet(d / f"{name}.parquet") for name in TABLES}


class RunResult:
    """Results of one run, as `pyarrow.Table`s with time, node and position:
    `frames` (every PHY transmission, reception and drop), `mac` (every MSDU
    outcome), `events` (connection events: beacons, association, ARP, TCP
    milestones and timeouts), `tcp` (every ACK at a TCP sender: cwnd,
    ssthresh, srtt, rto, dupacks, in flight) and `transport` (data delivered
    to applications)."""

    def __init__(self, raw: Mapping[str, Any]):
        self.resolved: str = raw["resolved"]
        self.nodes: list[str] = list(raw["nodes"])
        self.stats: dict[str, Any] = dict(raw["stats"])
        tables = raw["tables"]
        self.frames: pa.Table = from_stream(tables["frames"])
        self.mac: pa.Table = from_stream(tables["mac"])
        self.events: pa.Table = from_stream(tables["events"])
        self.tcp: pa.Table = from_stream(tables["tcp"])
        self.transport: pa.Table = from_stream(tables["transport"])

    @classmethod
    def load(cls, directory: str | Path) -> "RunResult":
        """Reads a run directory written by `save` back into a RunResult."""
        d = Path(directory)
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        self = cls.__new__(cls)
        self.resolved = (d / "scenario.toml").read_text(encoding="utf-8")
        self.nodes = list(summary["nodes"])
        self.stats = dict(summary["stats"])
        for name in TABLES:
            setattr(self, name, pq.read_table(d / f"{name}.parquet"))
        return self

    @cached_property
    def scenario(self) -> dict[str, Any]:
        """The scenario as run, overrides applied."""
        return tomllib.loads(self.resolved)

    @cached_property
    def handovers(self) -> pl.DataFrame:
        """One row per change of AP of a station: car, time_s and x (when
        and where it left the old AP), from, to, how, gap_s (leaving to
        associating), data_gap_s (last data from the old AP to the first
        from the new one) and lost_mb (what the old AP failed to deliver to
        it); see `wayside.breakdown.handovers`."""
        from wayside import breakdown

        if not breakdown.stations(self):
            return pl.DataFrame(schema=breakdown.HANDOVER_SCHEMA)
        return breakdown.handovers(breakdown.associations(self), self)

    @property
    def duration_s(self) -> float:
        return float(self.stats["simulated_s"])

    def summary(self) -> pl.DataFrame:
        """One row per node: frames sent and received, drops by reason, MSDUs
        delivered and lost, goodput."""
        frames = pl.DataFrame(self.frames).with_columns(pl.col("node").cast(pl.Utf8))
        mac = pl.DataFrame(self.mac).with_columns(pl.col("node").cast(pl.Utf8))
        nodes = pl.DataFrame({"node": self.nodes})
        tx = frames.filter(pl.col("event") == "tx").group_by("node").agg(
            pl.len().alias("frames_tx"), pl.col("bytes").cast(pl.UInt64).sum().alias("bytes_tx")
        )
        rx = frames.filter(pl.col("event") == "rx").group_by("node").agg(pl.len().alias("frames_rx"))
        drops = (
            frames.filter(pl.col("event") == "drop")
            .with_columns(pl.col("reason").cast(pl.Utf8))
            .group_by("node")
            .agg(pl.len().alias("frames_dropped"))
        )
        sent = mac.with_columns(pl.col("event").cast(pl.Utf8)).group_by("node").agg(
            (pl.col("event") == "delivered").sum().alias("msdu_delivered"),
            (pl.col("event") == "failed").sum().alias("msdu_failed"),
            (pl.col("event") == "queue-drop").sum().alias("msdu_queue_drops"),
            pl.when(pl.col("event") == "delivered").then(pl.col("attempts")).mean().alias("mean_attempts"),
            pl.when(pl.col("event") == "received").then(pl.col("bytes").cast(pl.UInt64)).sum().alias("bytes_received"),
        )
        out = nodes
        for t in (tx, rx, drops, sent):
            out = out.join(t, on="node", how="left")
        out = out.fill_null(0)
        return out.with_columns(
            (pl.col("bytes_received") * 8 / self.duration_s / 1e6).alias("goodput_in_mbps")
        )

    def per_second(self) -> pl.DataFrame:
        """Per node and simulated second: frames sent, received and dropped,
        MAC payload received (Mb/s), mean RSSI of received frames, position."""
        frames = pl.DataFrame(self.frames).with_columns(
            (pl.col("time_ns") // 1_000_000_000).alias("second"),
            pl.col("node").cast(pl.Utf8),
            pl.col("event").cast(pl.Utf8),
        )
        mac = pl.DataFrame(self.mac).with_columns(
            (pl.col("time_ns") // 1_000_000_000).alias("second"),
            pl.col("node").cast(pl.Utf8),
            pl.col("event").cast(pl.Utf8),
        )
        f = frames.group_by("node", "second").agg(
            (pl.col("event") == "tx").sum().alias("frames_tx"),
            (pl.col("event") == "rx").sum().alias("frames_rx"),
            (pl.col("event") == "drop").sum().alias("frames_dropped"),
            pl.when(pl.col("event") == "rx").then(pl.col("rssi_dbm")).mean().alias("mean_rssi_dbm"),
            pl.col("x").mean().alias("x"),
            pl.col("y").mean().alias("y"),
        )
        m = mac.group_by("node", "second").agg(
            (pl.when(pl.col("event") == "received").then(pl.col("bytes").cast(pl.UInt64)).sum() * 8 / 1e6).alias("goodput_in_mbps"),
            (pl.col("event") == "delivered").sum().alias("msdu_delivered"),
            (pl.col("event") == "failed").sum().alias("msdu_failed"),
        )
        return f.join(m, on=["node", "second"], how="full", coalesce=True).fill_null(0).sort("node", "second")

    def save(self, directory: str | Path) -> Path:
        """Writes the run directory: scenario.toml (as run), frames.parquet,
        mac.parquet, events.parquet, tcp.parquet, transport.parquet,
        per_second.parquet, handovers.parquet and summary.json. Same scenario and
        seed give byte-identical files."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "scenario.toml").write_text(self.resolved, encoding="utf-8")
        for name in TABLES:
            pq.write_table(getattr(self, name), d / f"{name}.parquet")
        return self.save_summaries(d)

    def save_summaries(self, directory: str | Path) -> Path:
        """Writes the summaries of the run directory (`save` writes them
        with the rest): per_second.parquet, handovers.parquet and
        summary.json."""
        d = Path(directory)
        self.per_second().write_parquet(d / "per_second.parquet")
        self.handovers.write_parquet(d / "handovers.parquet")
        summary = {
            "nodes": self.nodes,
            "stats": self.stats,
            "per_node": self.summary().to_dicts(),
        }
        (d / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return d
