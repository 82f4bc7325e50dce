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


# The channels a station scans when `management.scan_channels` is not given,
# by standard (as the simulator lowers it: madwifi 0.9's station scan table).
_DEFAULT_SCAN = {"802.11b": [1, 6, 11, 7, 2, 3, 4, 5, 8, 9, 10], "802.11g": [1, 6, 11, 7, 2, 3, 4, 5, 8, 9, 10],
                 "802.11a": [36, 40, 44, 48], "802.11p": [178]}


def warnings(resolved: Mapping[str, Any]) -> list[str]:
    """What a resolved scenario allows but probably does not mean: an AP on
    a channel that no station scans, which no station can ever join."""
    nodes = resolved.get("node", [])
    if not any(n.get("role") == "sta" for n in nodes):
        return []
    radio = resolved.get("radio", {})
    scanned = resolved.get("management", {}).get("scan_channels")
    given = scanned is not None
    if scanned is None:
        scanned = _DEFAULT_SCAN.get(str(radio.get("standard", "802.11g")))
        if scanned is None:  # an HT/VHT radio's default list depends on its band: not checked here
            return []
    out = []
    for n in nodes:
        channel = n.get("channel", radio.get("channel"))
        if n.get("role") == "ap" and channel is not None and channel not in scanned:
            where = (f"management.scan_channels = {list(scanned)}" if given
                     else f"the default scan list for {radio.get('standard', '802.11g')}: {list(scanned)}")
            out.append(f"node '{n.get('name')}' (an AP) is on channel {channel}, which no station scans "
                       f"({where}); no station can join it")
    return out
