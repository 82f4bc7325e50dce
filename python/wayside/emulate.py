"""Real programs through a simulated drive-by: `wayside emulate` runs a
scenario paced to the wall clock with chosen nodes replaced by real Linux
hosts, each in its own network namespace behind a TUN device;
`wayside emulate-setup` makes (and `--remove` removes) those namespaces and
devices. See docs/emulate.md."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence

import typer
from rich.markup import escape

from wayside import engine
from wayside.scenario import load_scenario, scenario_text
from wayside.terminal import console, errors, fail

if TYPE_CHECKING:  # polars and pyarrow load with it: imported where used
    from wayside.result import RunResult

DEVICE = "wsim0"  # the TUN device in each host's namespace
MTU = 1500        # Ethernet's: what the hosts' stacks size their segments for
PREFIX = 8        # every node's address is in 10.0.0.0/8


class SetupError(RuntimeError):
    """The namespaces or devices cannot be made (not root, no TUN/TAP, no `ip`)."""


def parse_hosts(pairs: Sequence[str]) -> dict[str, str]:
    """`NODE=NETNS` strings as a mapping; ValueError naming a bad one."""
    hosts: dict[str, str] = {}
    for p in pairs:
        node, sep, netns = p.partition("=")
        if not sep or not node or not netns:
            raise ValueError(f"--host {p!r}: expected NODE=NETNS, e.g. car=car")
        if node in hosts:
            raise ValueError(f"--host {p!r}: node {node!r} is given twice")
        if len(netns) > 64 or "/" in netns:
            raise ValueError(f"--host {p!r}: {netns!r} is not a namespace name (no '/', at most 64 characters)")
        hosts[node] = netns
    if len(set(hosts.values())) != len(hosts):
        raise ValueError("--host: each node needs a namespace of its own")
    return hosts


def can_set_up() -> Optional[str]:
    """Why namespaces and TUN devices cannot be made here, or None."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "making network namespaces and TUN devices needs root (run as root or with sudo)"
    if not Path("/dev/net/tun").exists():
        return "this kernel has no TUN/TAP support: /dev/net/tun is missing (try `modprobe tun`)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    return None


def _ip(*args: str) -> None:
    out = subprocess.run(["ip", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SetupError(f"ip {' '.join(args)}: {out.stderr.strip() or 'failed'}")


def addresses(scenario: str | Path | Mapping[str, Any], overrides: Sequence[str] = ()) -> dict[str, str]:
    """Each node's address, which a real host in its place takes."""
    return dict(engine.emulate_addresses(scenario_text(scenario), list(overrides)))


def set_up(scenario: str | Path | Mapping[str, Any], hosts: Mapping[str, str], overrides: Sequence[str] = (),
           device: str = DEVICE) -> dict[str, str]:
    """Makes, per `node: netns`, the namespace with loopback up, IPv6 off
    (a real host's router solicitations have no simulated router) and TUN
    device `device` carrying the node's address in 10.0.0.0/8. Returns
    `{node: address}`. Raises SetupError, or ScenarioError for a node the
    scenario lacks."""
    why = can_set_up()
    if why:
        raise SetupError(why)
    known = addresses(scenario, overrides)
    for node in hosts:
        if node not in known:
            raise engine.ScenarioError(f"--host {node}={hosts[node]}: no node {node!r} in the scenario; "
                                       f"allowed: {', '.join(known)}")
    existing = set(_namespaces())
    made = {}
    for node, ns in hosts.items():
        if ns in existing:
            tear_down([ns])
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                       capture_output=True)
        _ip("-n", ns, "tuntap", "add", "dev", device, "mode", "tun")
        _ip("-n", ns, "addr", "add", f"{known[node]}/{PREFIX}", "dev", device)
        _ip("-n", ns, "link", "set", device, "mtu", str(MTU), "up")
        made[node] = known[node]
    return made


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def tear_down(namespaces: Sequence[str]) -> list[str]:
    """Deletes the namespaces (and the devices in them) that exist; returns those."""
    why = can_set_up()
    if why:
        raise SetupError(why)
    existing = set(_namespaces())
    gone = [ns for ns in namespaces if ns in existing]
    for ns in gone:
        _ip("netns", "del", ns)
    return gone


def emulate(scenario: str | Path | Mapping[str, Any], hosts: Mapping[str, str], seed: int | None = None, *,
            overrides: Sequence[str] = (), pcap: str | Path | None = None, tolerance_s: float = 0.001,
            device: str = DEVICE, realtime_priority: bool = True) -> RunResult:
    """Runs `scenario` in real time with each `node: netns` of `hosts` a
    real host (made by `set_up`); returns the run's result, whose
    `stats["emulation"]` holds the lateness distribution and whether the
    run fell behind. Scenario applications with an end at a hosted node
    are disabled. With `realtime_priority` the simulation's thread runs
    under the kernel's real-time FIFO policy while it emulates (it sleeps
    between events, so it takes a core only when it falls behind), ahead
    of ordinary work on a busy machine. SIGINT or SIGTERM end the run
    early, keeping its trace. Raises ScenarioError, PermissionError (not
    root) or OSError (no namespace or device)."""
    if seed is not None and not (0 <= seed < 2**64):
        raise engine.ScenarioError(f"seed: {seed} is out of range; allowed: 0 to 2^64-1")
    with _priority(realtime_priority) as raised, _signals_to_engine():
        raw = engine.emulate(scenario_text(scenario), list(hosts.items()), list(overrides), seed, device,
                             tolerance_s, None if pcap is None else str(pcap))
    raw["stats"]["emulation"]["realtime_priority"] = raised
    from wayside.result import RunResult

    return RunResult(raw)


@contextlib.contextmanager
def _signals_to_engine():
    """While the engine emulates, SIGINT and SIGTERM are its alone (it ends
    the run early and keeps the trace): Python's own handlers, which would
    raise KeyboardInterrupt once the engine returns and lose the run, are
    set aside (only the main thread can)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


# The FIFO priority of the simulation's thread: above ordinary work, below
# the kernel's own real-time threads (which use 50 and up).
FIFO_PRIORITY = 10


@contextlib.contextmanager
def _priority(wanted: bool):
    """Runs the body under SCHED_FIFO if `wanted` and allowed; yields
    whether it does, and restores the policy after."""
    if not wanted or not hasattr(os, "sched_setscheduler"):
        yield False
        return
    before, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setscheduler(0, before, param)


def setup_command(
    scenario: str = typer.Argument(..., help="Built-in scenario name or path to a TOML scenario file."),
    host: List[str] = typer.Option(..., "--host", help="NODE=NETNS: a namespace for a real host in place of NODE (repeatable)."),
    remove: bool = typer.Option(False, "--remove", help="Delete the namespaces (and their devices) instead."),
    set_: List[str] = typer.Option([], "--set", help="Override a scenario key: KEY=VALUE (repeatable)."),
    device: str = typer.Option(DEVICE, "--device", help="TUN device name inside each namespace."),
) -> None:
    """Make (or with --remove delete) one network namespace per real host,
    with a TUN device carrying its node's address. Needs root."""
    try:
        hosts = parse_hosts(host)
        if remove:
            gone = tear_down(list(hosts.values()))
            console.print(f"removed: {', '.join(gone) or 'nothing (none of them existed)'}", highlight=False)
            return
        made = set_up(scenario, hosts, set_, device)
    except (ValueError, SetupError) as e:
        fail(str(e))
        return
    for node, addr in made.items():
        console.print(f"{escape(node)}: namespace {escape(hosts[node])}, {device} {addr}/{PREFIX}", highlight=False)
    console.print("run programs there with `ip netns exec NETNS ...`; remove with --remove", highlight=False)


def emulate_command(
    scenario: str = typer.Argument(..., help="Built-in scenario name or path to a TOML scenario file."),
    host: List[str] = typer.Option(..., "--host", help="NODE=NETNS: a real host in namespace NETNS takes NODE's place (repeatable)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**64 - 1, help="Run seed (default: the scenario's)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: `runs/SCENARIO-emulated`)."),
    set_: List[str] = typer.Option([], "--set", help="Override a scenario key: KEY=VALUE (repeatable)."),
    pcap: Optional[Path] = typer.Option(None, "--pcap", help="Write one pcap per radio into this directory."),
    tolerance: float = typer.Option(1.0, "--tolerance", min=0.0, help="Milliseconds an event may run late before the run counts as behind."),
    device: str = typer.Option(DEVICE, "--device", help="TUN device name inside each namespace."),
    realtime_priority: bool = typer.Option(True, "--realtime-priority/--no-realtime-priority",
                                           help="Run the simulation under the kernel's real-time FIFO policy."),
) -> None:
    """Run a scenario in real time with real hosts in place of nodes
    (namespaces from `wayside emulate-setup`); write a run directory as
    `wayside run` does and say how late events ran."""
    from wayside.cli import _print_summary

    try:
        hosts = parse_hosts(host)
        resolved = load_scenario(scenario, set_)
        name = resolved.get("name") or Path(scenario).stem
        directory = out or Path("runs") / f"{name}-emulated"
        errors.print(f"emulating {escape(name)} for {resolved.get('duration', '?')} of wall time "
                     "(Ctrl-C ends it early, keeping the trace)", highlight=False)
        started = time.perf_counter()
        result = emulate(scenario, hosts, seed, overrides=set_, pcap=pcap, tolerance_s=tolerance / 1e3,
                         device=device, realtime_priority=realtime_priority)
        wall = time.perf_counter() - started
    except (ValueError, OSError) as e:
        fail(str(e))
        return
    try:
        result.save(directory)
    except OSError as e:
        fail(f"run directory {directory}: cannot be written ({e.strerror or e})")
        return
    _print_summary(result, wall)
    print_lateness(result.stats["emulation"])
    console.print(f"run directory: [bold]{escape(str(directory))}[/]", soft_wrap=True)


def print_lateness(e: Mapping[str, Any]) -> None:
    """The emulation's honesty lines: lateness, whether it fell behind, packets."""
    console.print(
        f"lateness of {e['events']:,} events against the wall clock: p50 {e['lateness_p50_ms']:.3f} ms, "
        f"p99 {e['lateness_p99_ms']:.3f} ms, max {e['lateness_max_ms']:.3f} ms "
        f"(at {e['lateness_max_at_s']:.3f} s)", highlight=False)
    if e["behind"]:
        console.print(
            f"[bold red]FELL BEHIND:[/] {e['late_events']:,} events ran more than {e['tolerance_ms']:g} ms late; "
            "this run is not a faithful real-time emulation", highlight=False)
    else:
        console.print(f"kept up: no event ran more than {e['tolerance_ms']:g} ms late", highlight=False)
    if not e.get("realtime_priority"):
        console.print("(without real-time priority: other work on the machine delays events)", highlight=False)
    if e["stopped_at_s"] is not None:
        console.print(f"stopped early at {e['stopped_at_s']:.3f} s", highlight=False)
    console.print(
        f"packets: {e['packets_from_hosts']:,} from hosts, {e['packets_to_hosts']:,} to hosts, "
        f"{e['packets_refused']:,} refused, {e['packets_undelivered']:,} undelivered", highlight=False)
