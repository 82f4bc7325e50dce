"""The parameter ledger (docs/ledger.md) stays complete: every key every
reference scenario sets is named by one of its rows, and every target a
scenario was calibrated on is named by a fitted row with its error out of
sample."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEDGER = ROOT / "docs" / "ledger.md"
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\*", "*") for c in line.strip().strip("|").split("|")]


def ledger_rows() -> list[tuple[list[str], list[str]]]:
    """The first table's rows: (scenario globs, key globs)."""
    text = LEDGER.read_text(encoding="utf-8")
    section = text.split("## Scenario parameters", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        scenario, keys, *_ = _cells(line)
        if scenario == "scenario":
            continue
        rows.append(([s.strip() for s in scenario.split(",")], [k.strip() for k in keys.split(",")]))
    return rows


def scenario_keys(doc: dict, prefix: str = "") -> list[str]:
    """Every key the file sets, dotted: tables of nodes and obstacles by
    name, other arrays of tables by index; lists of values are leaves."""
    out = []
    for key, value in doc.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out += scenario_keys(value, path)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                label = item.get("name", str(i)) if key in ("node", "obstacle") else str(i)
                out += scenario_keys(item, f"{path}.{label}")
        else:
            out.append(path)
    return out


def _generic(key: str) -> str:
    """A node's or obstacle's name, an app's index: `*` as the ledger writes it."""
    return re.sub(r"^(node|obstacle|app|link|traffic)\.[^.]+\.", r"\1.*.", key)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_key_of_every_scenario_is_in_the_ledger(path):
    rows = ledger_rows()
    missing = []
    for key in scenario_keys(tomllib.loads(path.read_text(encoding="utf-8"))):
        generic = _generic(key)
        if not any(
            any(fnmatch.fnmatchcase(path.stem, s) for s in scenarios)
            and any(fnmatch.fnmatchcase(generic, k) for k in keys)
            for scenarios, keys in rows
        ):
            missing.append(generic)
    assert not missing, f"{path.name}: keys with no row in docs/ledger.md: {sorted(set(missing))}"


def test_every_calibration_has_a_fitted_row_with_its_out_of_sample_error():
    text = LEDGER.read_text(encoding="utf-8")
    fitted = text.split("## Fitted parameters and their out-of-sample error", 1)[1].split("\n## ", 1)[0]
    rows = [_cells(line) for line in fitted.splitlines() if line.startswith("|") and not line.startswith("|---")][1:]
    assert rows and all(len(r) == 4 and r[3] for r in rows), "every fitted row gives its out-of-sample error"
    for path in SCENARIOS:
        for pattern in tomllib.loads(path.read_text(encoding="utf-8")).get("calibrated_on", []):
            assert any(path.stem.split("-")[0] in r[0] for r in rows), f"{path.stem}: {pattern} has no fitted row"


def test_the_ledger_check_notices_a_key_it_does_not_list():
    doc = {"environment": {"made_up_knob": 3}, "node": [{"name": "ap", "tx_power": "19 dBm"}]}
    keys = [_generic(k) for k in scenario_keys(doc)]
    assert keys == ["environment.made_up_knob", "node.*.name", "node.*.tx_power"]
    rows = ledger_rows()
    assert not any(fnmatch.fnmatchcase("environment.made_up_knob", k) for _, ks in rows for k in ks)
