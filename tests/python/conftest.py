"""Shared helpers for the wayside Python tests."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import wayside

# The drive-by scenario cut down to the interesting part: the car starts 200 m
# before the AP and drives 20 s at 80 km/h (to x ≈ +244 m).
DRIVE_BY_SHORT = ('duration="20 s"', "node.car.position=[-200, 0]")


def run_cli(*args: object, cwd: object = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs the `wayside` command line in a fresh interpreter (the same one
    that runs the tests, so it works wherever the package is installed)."""
    env = dict(os.environ)
    # No colour codes and no wrapping of messages: the tests read the text.
    env.update({"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "250"})
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-c", "from wayside.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def cli():
    return run_cli


@pytest.fixture(scope="session")
def drive_by_overrides():
    return list(DRIVE_BY_SHORT)


@pytest.fixture(scope="session")
def saturation():
    """The built-in saturation scenario, seed 1 (10 s simulated)."""
    return wayside.run("saturation", seed=1)


@pytest.fixture(scope="session")
def drive_by_short():
    """The drive-by scenario shortened to 20 s, seed 1."""
    return wayside.run("drive-by", seed=1, overrides=DRIVE_BY_SHORT)
