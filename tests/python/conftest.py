"""Shared helpers for the wayside Python tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

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


@pytest.fixture
def dask_cluster(tmp_path):
    """A Dask scheduler and one worker on 127.0.0.1, as subprocesses of this
    test (the same interpreter, so the worker imports this wayside)."""
    pytest.importorskip("distributed")
    file = tmp_path / "scheduler.json"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    common = ["--no-dashboard"]
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--scheduler-file", str(file), *common],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)]
    try:
        deadline = time.monotonic() + 60
        while not file.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert file.is_file(), "the Dask scheduler did not start within 60 s"
        address = json.loads(file.read_text())["address"]
        procs.append(subprocess.Popen([sys.executable, "-m", "dask", "worker", "--scheduler-file", str(file),
                                       "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1", *common],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path))
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(1, timeout=60)
        yield address.removeprefix("tcp://")
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
