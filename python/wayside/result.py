"""A run's results: trace tables as Arrow (load straight into polars or
pandas), per-node summaries, per-second summaries, and saving to a run
directory as Parquet."""

from __future__ import annotations

import json
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

_PRIMITIVE = {
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
}

TABLES = ("frames", "mac", "events", "tcp", "transport")


def _column(kind: str, payload: bytes, extra: Any, n: int, node_names: pa.Array) -> pa.Array:
    if kind in _PRIMITIVE:
        return pa.Array.from_buffers(_PRIMITIVE[kind], n, [None, pa.py_buffer(payload)])
    if kind == "node":
        idx = pa.Array.from_buffers(pa.uint32(), n, [None, pa.py_buffer(payload)])
        return pa.DictionaryArray.from_arrays(idx, node_names)
    if kind == "category":
        idx = pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(payload)])
        return pa.DictionaryArray.from_arrays(idx, pa.array(extra, pa.string()))
    raise ValueError(f"unknown column kind {kind}")


def _table(columns: list[tuple], node_names: pa.Array) -> pa.Table:
    if not columns:
        return pa.table({})
    first = columns[0]
    width = pa.array([0], _PRIMITIVE.get(first[1], pa.uint32())).type.byte_width
    n = len(first[2]) // width
    arrays = [_column(c[1], c[2], c[3] if len(c) > 3 else None, n, node_names) for c in columns]
    return pa.table(arrays, names=[c[0] for c in columns])


class RunResult:
    """Results of one run, as `pyarrow.Table`s with time, node and position:
    `frames` (every PHY transmission, reception and drop), `mac` (every MSDU
    outcome), `events` (connection events: beacons, association, ARP, TCP
    milestones and timeouts), `tcp` (every ACK at a TCP sender: cwnd,
    ssthresh, srtt, rto, dupacks, in flight) and `transport` (data delivered
    to applications)."""

    def __init__(self, raw: dict[str, Any]):
        self.resolved: str = raw["resolved"]
        self.nodes: list[str] = list(raw["nodes"])
        self.stats: dict[str, Any] = dict(raw["stats"])
        names = pa.array(self.nodes + ["broadcast"], pa.string())
        tables = raw["tables"]
        self.frames: pa.Table = _table(tables["frames"], names)
        self.mac: pa.Table = _table(tables["mac"], names)
        self.events: pa.Table = _table(tables["events"], names)
        self.tcp: pa.Table = _table(tables["tcp"], names)
        self.transport: pa.Table = _table(tables["transport"], names)

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
        per_second.parquet and summary.json. Same scenario and
        seed give byte-identical files."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "scenario.toml").write_text(self.resolved, encoding="utf-8")
        for name in TABLES:
            pq.write_table(getattr(self, name), d / f"{name}.parquet")
        self.per_second().write_parquet(d / "per_second.parquet")
        summary = {
            "nodes": self.nodes,
            "stats": self.stats,
            "per_node": self.summary().to_dicts(),
        }
        (d / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return d
