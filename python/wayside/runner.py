"""Running one simulation: a single Rust call that releases the GIL."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from wayside import engine
from wayside.result import RunResult
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
    if seed is not None and not (0 <= seed < 2**64):
        raise engine.ScenarioError(f"seed: {seed} is out of range; allowed: 0 to 2^64-1")
    if not (0 <= run < 2**64):
        raise engine.ScenarioError(f"run: {run} is out of range; allowed: 0 to 2^64-1")
    raw = engine.run(scenario_text(scenario), list(overrides), seed, run, None if pcap is None else str(pcap))
    return RunResult(raw)
