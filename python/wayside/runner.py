"""Running one simulation: a single Rust call that releases the GIL; or a
run whose trace is written to Parquet while it goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow.parquet as pq

from wayside import engine
from wayside.result import RunResult, from_stream
from wayside.scenario import scenario_text


def run(
    scenario: str | Path | Mapping[str, Any],
    seed: int | None = None,
    *,
    run: int = 0,
    overrides: Sequence[str] = (),
    pcap: str | Path | None = None,
) -> RunResult:
    """Runs `scenario` once.

    `scenario` is a built-in name (see `wayside.builtin_scenarios()`), a path to
    a TOML file, or a dict of the same structure. `seed` is the run seed (the
    scenario's own when omitted); `overrides` are `key=value` strings as on the
    command line (`"mac.rate=\\"11 Mbps\\""`, `"node.car.tx_power=\\"15 dBm\\""`).
    `pcap` is a directory to write one capture per radio into, as
    NODE.pcap (see docs/captures.md).
    Raises `wayside.ScenarioError` for an unusable scenario or a capture
    directory that cannot be written.
    """
    _check(seed, run)
    raw = engine.run(scenario_text(scenario), list(overrides), seed, run, None if pcap is None else str(pcap))
    return RunResult(raw)


def _check(seed: int | None, run: int) -> None:
    if seed is not None and not (0 <= seed < 2**64):
        raise engine.ScenarioError(f"seed: {seed} is out of range; allowed: 0 to 2^64-1")
    if not (0 <= run < 2**64):
        raise engine.ScenarioError(f"run: {run} is out of range; allowed: 0 to 2^64-1")


def run_to_directory(
    scenario: str | Path | Mapping[str, Any],
    directory: str | Path,
    seed: int | None = None,
    *,
    run: int = 0,
    overrides: Sequence[str] = (),
    rows: int = 262_144,
    pcap: str | Path | None = None,
) -> Path:
    """Runs `scenario` once (as `run` takes it) and writes its trace to
    `directory` while it runs: each table as Parquet, a row group per batch
    of rows (most of `rows` rows), so that memory holds a batch or two, not
    the run. Also writes scenario.toml (as run) and summary.json (nodes and
    counters; no per-node summary, which would read the whole trace). Open
    the tables lazily with `wayside.result.scan`, or whole with
    `RunResult.load`; `pcap` as for `run`. Raises `wayside.ScenarioError`
    for an unusable scenario."""
    _check(seed, run)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    stream = engine.run_streaming(scenario_text(scenario), list(overrides), seed, run, None if pcap is None else str(pcap), rows)
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        for name, table in stream:
            batch = from_stream(table)
            if name not in writers:
                writers[name] = pq.ParquetWriter(d / f"{name}.parquet", batch.schema)
            writers[name].write_table(batch)
    finally:
        for w in writers.values():
            w.close()
    raw = stream.finish()
    (d / "scenario.toml").write_text(raw["resolved"], encoding="utf-8")
    summary = {"nodes": list(raw["nodes"]), "stats": dict(raw["stats"])}
    (d / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return d
