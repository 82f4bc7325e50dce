"""Typed interface of the compiled extension (crates/wayside-py)."""

from typing import Any

class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the key, the value and what is allowed."""

def run(
    scenario: str, overrides: list[str] = ..., seed: int | None = ..., run: int = ..., pcap: str | None = ...
) -> dict[str, Any]:
    """Runs a scenario (TOML text) once. Keys: resolved, nodes, stats, tables
    (name -> list of (column, kind, little-endian bytes[, dictionary])),
    pcaps (the capture files written into the directory `pcap`, if given)."""

def resolve(scenario: str, overrides: list[str] = ...) -> str:
    """Validates a scenario and returns it resolved (TOML), overrides applied."""

def builtin_names() -> list[str]: ...
def builtin_text(name: str) -> str | None: ...
def rate_thresholds(
    standard: str, psdu_bytes: int, implementation_loss_db: float = ...
) -> list[tuple[float, float, float]]:
    """Per rate: (Mbps, SINR dB for 50% frame success, minimum sensitivity dBm)."""
