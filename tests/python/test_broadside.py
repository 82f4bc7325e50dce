"""`wayside broadside …`: the typer sub-app that forwards to the Rust node's
command line. The end-to-end tests need `wayside._native.broadside_cli` and
skip without it; the forwarding tests use a stand-in and always run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from wayside import _native
from wayside import broadside

HAS_NATIVE = hasattr(_native, "broadside_cli")


def bs(*args: object, cwd: object = None) -> subprocess.CompletedProcess:
    """Runs the sub-app in a fresh interpreter: the Rust side writes to the
    process's own stdout and stderr, which only a subprocess can capture."""
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", COLUMNS="250")
    return subprocess.run(
        [sys.executable, "-m", "wayside.broadside", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        cwd=cwd,
        env=env,
        timeout=60,
    )


@pytest.fixture
def fake_native(monkeypatch):
    calls = []

    def fake(args):
        calls.append(list(args))
        return 3 if "fail" in args else 0

    monkeypatch.setattr(broadside.engine, "broadside_cli", fake, raising=False)
    return calls


@pytest.mark.parametrize("command", ["keygen", "publish", "serve", "status", "relay"])
def test_every_command_forwards_its_arguments_and_exit_code(fake_native, command):
    runner = CliRunner()
    args = [command, "x y", "--opt", "1", "--help"]
    result = runner.invoke(broadside.app, args)
    assert result.exit_code == 0, result.output
    assert fake_native == [args]
    result = runner.invoke(broadside.app, [command, "fail"])
    assert result.exit_code == 3


def test_missing_native_cli_is_a_clear_error(monkeypatch):
    monkeypatch.delattr(broadside.engine, "broadside_cli", raising=False)
    assert broadside.run(["status", "."]) == 2


needs_native = pytest.mark.skipif(not HAS_NATIVE, reason="wayside._native has no broadside_cli yet")


@needs_native
def test_keygen_publish_status(tmp_path):
    key = tmp_path / "provider.key"
    r = bs("keygen", "--out", key)
    assert r.returncode == 0, r.stderr
    public = r.stdout.strip()
    assert len(public) == 64 and int(public, 16) >= 0
    assert key.exists()

    src = tmp_path / "map.bin"
    src.write_bytes(os.urandom(5000))
    store = tmp_path / "store"
    for version in (1, 2):
        r = bs("publish", src, "--store", store, "--key", key)
        assert r.returncode == 0, r.stderr
        assert f"published map.bin version {version} (5000 bytes)" in r.stdout

    r = bs("status", store)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [(f["name"], f["version"], f["size"]) for f in report["files"]] == [("map.bin", 2, 5000)]
    assert report["files"][0]["provider"] == public
    assert report["partials"] == []


@needs_native
def test_errors_exit_with_the_nodes_codes(tmp_path):
    key = tmp_path / "k"
    assert bs("keygen", "--out", key).returncode == 0
    # Never overwrites a key: a runtime or usage failure, one clear line, no traceback.
    r = bs("keygen", "--out", key)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and r.stderr.strip()
    r = bs("publish", tmp_path / "missing", "--store", tmp_path / "s", "--key", key)
    assert r.returncode == 2 and "missing" in r.stderr
    r = bs("status")
    assert r.returncode == 2
    r = bs("keygen", "--help")
    assert r.returncode == 0 and "--out" in r.stdout


@needs_native
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_cleanly_on_a_signal_and_status_says_not_running(tmp_path, sig):
    key = tmp_path / "k"
    public = bs("keygen", "--out", key).stdout.strip()
    store = tmp_path / "store"
    r = bs("serve", store, "--trust", public, "--bind", "127.0.0.1:0", "--duration", "1")
    assert r.returncode == 2 and "--create" in r.stderr and "Traceback" not in r.stderr
    node = subprocess.Popen(
        [sys.executable, "-m", "wayside.broadside", "serve", str(store), "--create",
         "--trust", public, "--bind", "127.0.0.1:0", "--beacon-to", "127.0.0.1:9",
         "--status-interval", "50 ms"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        status_file = store / ".broadside" / "status.json"
        deadline = time.monotonic() + 30
        while not status_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert json.loads(bs("status", store).stdout)["running"] is True
        node.send_signal(sig)
        _, err = node.communicate(timeout=20)
    finally:
        node.kill()
    assert node.returncode == 0, err
    assert "Traceback" not in err and "panicked" not in err
    assert json.loads(bs("status", store).stdout)["running"] is False
