"""Finding and resolving scenarios: a built-in name, a TOML file, or a dict
built in Python (the same structure as the file)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Mapping, Sequence

import tomli_w

from wayside import engine


def builtin_scenarios() -> list[str]:
    """Names of the scenarios compiled into wayside."""
    return list(engine.builtin_names())


def scenario_text(scenario: str | Path | Mapping[str, Any]) -> str:
    """TOML text for a built-in name, a file path, or a mapping."""
    if isinstance(scenario, Mapping):
        return tomli_w.dumps(dict(scenario))
    name = str(scenario)
    text = engine.builtin_text(name)
    if text is not None:
        return text
    path = Path(name)
    try:
        if path.is_file():
            return _paths_from(path.read_text(encoding="utf-8"), path.parent)
    except UnicodeDecodeError as e:
        raise engine.ScenarioError(f"scenario file {name}: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise engine.ScenarioError(f"scenario file {name}: cannot be read ({e.strerror or e})") from None
    raise engine.ScenarioError(
        f"scenario '{name}': no such built-in scenario or file; built-in: {', '.join(builtin_scenarios())}"
    )


def _paths_from(text: str, base: Path) -> str:
    """`text` with the files it names (an obstacle's `sumo` polygon file)
    taken relative to `base`, the scenario file's directory, as a reader
    of the file expects; text without such paths is returned unchanged."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return text  # the simulator names the error
    obstacles = doc.get("obstacle")
    if not isinstance(obstacles, list):
        return text
    changed = False
    for o in obstacles:
        if isinstance(o, dict) and isinstance(o.get("sumo"), str) and not Path(o["sumo"]).is_absolute():
            o["sumo"] = str((base / o["sumo"]).resolve())
            changed = True
    return tomli_w.dumps(doc) if changed else text


def load_scenario(
    scenario: str | Path | Mapping[str, Any], overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """Validates a scenario with `overrides` applied and returns it as a dict."""
    resolved = engine.resolve(scenario_text(scenario), list(overrides))
    return tomllib.loads(resolved)
