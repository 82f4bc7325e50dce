"""`wayside emulate`: real Linux hosts in network namespaces through
simulated drive-bys, in real time. Needs root, /dev/net/tun and `ip`; skips
with the reason elsewhere (the checks of bad input run everywhere). The passes are shortened: real time costs wall
time (the bench, benches/emulate.py, runs a whole pass).

Lateness is printed, not asserted (the machine may be busy); the
comparison with the simulated run prints it with the volumes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import wayside
from wayside import emulate as emu
from wayside.cli import app

WHY_NOT = emu.can_set_up()
needs_root = pytest.mark.skipif(WHY_NOT is not None, reason=f"skipped: {WHY_NOT}")

HOSTS_PY = str(Path(__file__).with_name("emulate_hosts.py"))
WAYSIDE = str(Path(sys.executable).with_name("wayside"))
REAL_APP = 2**32 - 1  # the transport rows' app for real flows
TAG = f"we{os.getpid() % 10000}"

# hadaller-highway, shortened: the car starts 700 m before the AP instead
# of 1500 m, and the run ends once it is 700 m past.
HIGHWAY = ['node.car.position=[-700, 0]', 'duration="63 s"']
# The simulated reference runs modern Linux TCP, as the real hosts do.
LINUX = ['node.ap.tcp="linux-modern"', 'node.car.tcp="linux-modern"']
# zahn-terraced, shortened: the moving car starts 100 m before the parked one.
TERRACED = ['node.moving.position=[-100, -1.5]', 'duration="30 s"']


def in_ns(ns: str, *cmd: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def lateness(result) -> str:
    e = result.stats["emulation"]
    return (f"lateness p50 {e['lateness_p50_ms']:.3f} ms, p99 {e['lateness_p99_ms']:.3f} ms, "
            f"max {e['lateness_max_ms']:.3f} ms; behind: {e['behind']}")


@pytest.fixture(scope="module")
def highway(tmp_path_factory):
    """One emulated hadaller-highway pass: a real TCP server at the AP
    sending a recognisable pattern, a real client in the car; and the
    simulated pass on the same road with the linux-modern profile."""
    tmp = tmp_path_factory.mktemp("highway")
    hosts = {"ap": f"{TAG}ap", "car": f"{TAG}car"}
    addrs = emu.set_up("hadaller-highway", hosts, HIGHWAY)
    try:
        server = in_ns(hosts["ap"], sys.executable, HOSTS_PY, "serve", addrs["ap"], "8000", "65")
        client = in_ns(hosts["car"], sys.executable, HOSTS_PY, "fetch", addrs["ap"], "8000", "64",
                       str(tmp / "fetched.json"))
        time.sleep(0.5)  # the server listens before the pass begins
        result = emu.emulate("hadaller-highway", hosts, overrides=HIGHWAY, pcap=tmp / "pcap")
        client.wait(timeout=30)
        server.kill()
        server.wait()
    finally:
        emu.tear_down(list(hosts.values()))
    fetched = json.loads((tmp / "fetched.json").read_text())
    simulated = wayside.run("hadaller-highway", overrides=HIGHWAY + LINUX)
    print(lateness(result), result.stats["emulation"])
    return result, fetched, simulated, tmp / "pcap"


def first_data(result) -> float:
    t = pl.DataFrame(result.transport).with_columns(pl.col("node").cast(pl.Utf8)).filter(pl.col("node") == "car")
    return t["time_ns"].min() / 1e9


def delivered(result, proto_real: bool) -> int:
    t = pl.DataFrame(result.transport).with_columns(pl.col("node").cast(pl.Utf8))
    t = t.filter(pl.col("node") == "car")
    if proto_real:
        t = t.filter(pl.col("app") == REAL_APP)
    return int(t["bytes"].cast(pl.Int64).sum())


@needs_root
def test_real_tcp_crosses_the_highway_pass_with_the_simulated_setup(highway):
    result, fetched, _, _ = highway
    events = pl.DataFrame(result.events).with_columns(pl.col("event").cast(pl.Utf8), pl.col("node").cast(pl.Utf8))
    seen = set(events["event"])
    # The simulator's entry phase, then the real connection's milestones.
    for e in ("associated", "arp-resolved", "syn", "established", "first-data", "last-data"):
        assert e in seen, f"no {e} event in {sorted(seen)}"
    assoc = events.filter(pl.col("event") == "associated")["time_ns"].min()
    first = events.filter(pl.col("event") == "first-data")["time_ns"].min()
    assert first > assoc, "data before association: the real hosts bypassed the simulated link"
    # What the car's stack acknowledged is what its program read, give or
    # take the last delayed acknowledgement and what the program had not
    # read when it stopped.
    got = delivered(result, True)
    assert fetched["bytes"] > 1_000_000, fetched
    assert 0.9 * got <= fetched["bytes"] <= got + 64 * 1024, (fetched, got)
    # The real data crossed the simulated MAC as TCP data MSDUs.
    mac = pl.DataFrame(result.mac).with_columns(pl.col("content").cast(pl.Utf8), pl.col("event").cast(pl.Utf8))
    assert mac.filter((pl.col("content") == "tcp-data") & (pl.col("event") == "delivered")).height > 1000


@needs_root
def test_real_linux_tcp_delivers_within_a_quarter_of_the_simulated_linux_modern(highway):
    result, _, simulated, _ = highway
    real, sim = delivered(result, True), delivered(simulated, False)
    first = [first_data(r) for r in (result, simulated)]
    print(f"delivered to the car: real Linux TCP {real / 1e6:.2f} MB from {first[0]:.2f} s, simulated "
          f"linux-modern {sim / 1e6:.2f} MB from {first[1]:.2f} s: ratio {real / sim:.3f}; {lateness(result)}")
    assert 0.75 <= real / sim <= 1.25, (real, sim, lateness(result))


@needs_root
def test_the_emulated_capture_has_the_real_tcp_options_and_payload(highway):
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed")
    _, _, _, pcap = highway
    out = subprocess.run([tshark, "-r", str(pcap / "car.pcap"), "-Y", "tcp.len >= 60", "-T", "fields",
                          "-e", "tcp.options.timestamp.tsval", "-e", "tcp.payload"],
                         capture_output=True, text=True, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert len(rows) > 1000, out.stdout[:500]
    # Every data segment carries the real Linux timestamps option and the
    # server's bytes (60 bytes of the pattern hold a whole 30-byte unit).
    unit = b"wayside-emulate real payload. ".hex()
    assert all(tsval.isdigit() for tsval, _ in rows)
    assert all(unit in payload for _, payload in rows)
    syn = subprocess.run([tshark, "-r", str(pcap / "car.pcap"), "-Y", "tcp.flags.syn == 1", "-T", "fields",
                          "-e", "tcp.options.sack_perm", "-e", "tcp.options.wscale.shift", "-e", "tcp.options.mss_val"],
                         capture_output=True, text=True, check=True)
    options = [line.split("\t") for line in syn.stdout.splitlines()]
    assert options and all(sack and shift and mss for sack, shift, mss in options), syn.stdout


@needs_root
def test_a_real_broadside_pair_syncs_a_file_through_a_terraced_pass(tmp_path):
    hosts = {"moving": f"{TAG}mv", "parked": f"{TAG}pk"}
    addrs = emu.set_up("zahn-terraced", hosts, TERRACED)
    key = tmp_path / "provider.key"
    public = subprocess.run([WAYSIDE, "broadside", "keygen", "--out", str(key)], capture_output=True, text=True,
                            check=True).stdout.split()[-1]
    content = os.urandom(300_000)
    (tmp_path / "clip.bin").write_bytes(content)
    parked, moving = tmp_path / "parked", tmp_path / "moving"
    subprocess.run([WAYSIDE, "broadside", "publish", str(tmp_path / "clip.bin"), "--store", str(parked), "--key",
                    str(key), "--block-size", "1024"], check=True, capture_output=True)
    nodes = []
    try:
        for name, store, peer in (("parked", parked, "moving"), ("moving", moving, "parked")):
            nodes.append(in_ns(hosts[name], WAYSIDE, "broadside", "serve", str(store), "--create",
                               "--bind", f"{addrs[name]}:47474", "--beacon-to", f"{addrs[peer]}:47474",
                               "--trust", public, "--subscribe", public, "--packet-size", "1400",
                               "--duration", "31"))
        time.sleep(0.5)
        result = emu.emulate("zahn-terraced", hosts, overrides=TERRACED)
        for n in nodes:
            n.wait(timeout=30)
    finally:
        for n in nodes:
            n.kill()
        emu.tear_down(list(hosts.values()))
    print(lateness(result), result.stats["emulation"])
    copies = [p for p in moving.rglob("*") if p.is_file() and p.stat().st_size == len(content)]
    assert any(p.read_bytes() == content for p in copies), sorted(str(p) for p in moving.rglob("*"))
    events = pl.DataFrame(result.events).with_columns(pl.col("event").cast(pl.Utf8))
    assert "link-up" in set(events["event"])
    mac = pl.DataFrame(result.mac).with_columns(pl.col("content").cast(pl.Utf8))
    assert mac.filter(pl.col("content") == "bs-data").height > 200  # 300 kB in 1 kB blocks crossed the air


@needs_root
def test_setup_names_a_node_the_scenario_lacks():
    with pytest.raises(wayside.ScenarioError, match="no node 'bus'.*allowed: ap, car"):
        emu.set_up("hadaller-highway", {"bus": f"{TAG}bus"})


@needs_root
def test_emulate_without_setup_says_what_is_missing():
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["emulate", "hadaller-highway", "--host", f"car={TAG}none"])
    assert r.exit_code == 2
    assert "does not exist" in r.output and "emulate-setup" in r.output


@pytest.mark.parametrize("bad, message", [
    (["car"], "expected NODE=NETNS"),
    (["car=a", "car=b"], "given twice"),
    (["car=x", "ap=x"], "a namespace of its own"),
    (["car=a/b"], "not a namespace name"),
])
def test_bad_host_arguments_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        emu.parse_hosts(bad)


@pytest.mark.skipif(WHY_NOT is None or "root" not in WHY_NOT, reason="runs only where emulation lacks root")
def test_setup_without_root_says_so():
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["emulate-setup", "hadaller-highway", "--host", "car=car"])
    assert r.exit_code == 2 and "needs root" in r.output
