"""Store-carry-forward routing of many messages on a vehicle trace, as The
ONE models it (wayside-contact's `dtn` module: its routers, messages,
generator, buffers), and the reports its users expect: The ONE's
`MessageStatsReport` per run, and the same counts per host and per
message, as Parquet and as a table.

Layout of a run's output directory::

    summary.parquet           one row: the run's settings and MessageStatsReport figures
    messages.parquet          one row per message: from, to, size, created, also_at (further hosts
                              creating it), delivered_at, hops, relayed
    hosts.parquet             one row per host: created, sent, received, delivered_to, aborted, dropped,
                              first_received (s)
    MessageStatsReport.txt    the summary in The ONE's own format
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from wayside import engine as _native, movement

ROUTERS = ("epidemic", "spray-and-wait", "prophet", "direct-delivery", "first-contact")
QUEUES = ("random", "fifo")
# The ONE's default_settings.txt: Group.bufferSize 5M, Group.msgTtl 300 (min),
# btInterface.transmitSpeed 250k (B/s), SprayAndWaitRouter.nrofCopies 6,
# ProphetRouter.secondsInTimeUnit 30, Events1.interval 25,35 and size 500k,1M.
BUFFER = 5_000_000
TTL_MIN = 300
SPEED = 250_000.0
COPIES = 6
# ProphetRouter's constants: P_init 0.75, beta 0.25, gamma 0.98.
PROPHET = (0.75, 0.25, 0.98, 30.0)

_MULTIPLIERS = {"k": 1_000, "M": 1_000_000, "G": 1_000_000_000, "kiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
_NUMBER = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(kiB|MiB|GiB|k|M|G)?\s*")


class DtnError(ValueError):
    """A run that cannot be made; the message names the setting."""


def amount(text: str | float | int, name: str) -> float:
    """A number with The ONE's suffixes: k, M, G (powers of 1000) and kiB,
    MiB, GiB (powers of 1024)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = _NUMBER.fullmatch(str(text))
    if not m:
        raise DtnError(f"{name} {text!r}: give a number, optionally with k, M, G, kiB, MiB or GiB")
    return float(m.group(1)) * _MULTIPLIERS.get(m.group(2) or "", 1)


def pair(text: str | Sequence[Any], name: str, integer: bool = True) -> tuple[float, float]:
    """`LO,HI` or a single value (a range of one), with The ONE's suffixes."""
    parts = [p for p in (text.split(",") if isinstance(text, str) else list(text))]
    if len(parts) not in (1, 2):
        raise DtnError(f"{name} {text!r}: give LO,HI or one value")
    lo, hi = (amount(p, name) for p in (parts * 2)[:2])
    if hi < lo or (integer and (lo != int(lo) or hi != int(hi))):
        raise DtnError(f"{name} {text!r}: give whole numbers LO,HI with LO <= HI")
    return lo, hi


@dataclass(frozen=True)
class Generator:
    """The ONE's `MessageEventGenerator` settings: interval (s) and size
    (B) ranges, drawn from [LO, HI); source hosts [LO, HI); optional
    destination hosts and time window."""
    interval: str = "25,35"
    size: str = "500k,1M"
    hosts: str = "0,2"
    to_hosts: str | None = None
    time: str | None = None
    prefix: str = "M"

    def native(self) -> tuple:
        iv = tuple(int(v) for v in pair(self.interval, "interval"))
        size = tuple(int(v) for v in pair(self.size, "size"))
        hosts = tuple(int(v) for v in pair(self.hosts, "hosts"))
        to = tuple(int(v) for v in pair(self.to_hosts, "tohosts")) if self.to_hosts else None
        time = pair(self.time, "time", integer=False) if self.time else None
        return iv, size, hosts, to, time, self.prefix


@dataclass(frozen=True)
class Settings:
    """One run's settings, The ONE's names in the comments."""
    router: str = "epidemic"                 # Group.router
    generators: tuple[Generator, ...] = field(default_factory=lambda: (Generator(),))  # EventsN.*
    # Given: from, to, size (B), created (s), further hosts creating it then.
    messages: tuple[tuple[int, int, int, float, tuple[int, ...]], ...] = ()
    ttl_min: int | None = TTL_MIN             # Group.msgTtl (minutes)
    copies: int = COPIES                      # SprayAndWaitRouter.nrofCopies (binary mode)
    prophet: tuple[float, float, float, float] = PROPHET  # P_init, beta, gamma, secondsInTimeUnit
    range_m: float = 150.0                    # interface transmitRange (§5.6; The ONE's Bluetooth: 10)
    speed: float = SPEED                      # interface transmitSpeed (B/s)
    buffer: int = BUFFER                      # Group.bufferSize (B)
    queue: str = "random"                     # Group.sendQueue
    seed: int = 1
    run: int = 0

    def check(self) -> None:
        if self.router not in ROUTERS:
            raise DtnError(f"router '{self.router}': allowed: {', '.join(ROUTERS)}")
        if self.queue not in QUEUES:
            raise DtnError(f"queue '{self.queue}': allowed: {', '.join(QUEUES)}")
        if self.copies < 1 or self.buffer < 1:
            raise DtnError(f"copies {self.copies} and buffer {self.buffer} B must be at least 1")


@dataclass(frozen=True)
class Result:
    settings: Settings
    summary: dict[str, Any]
    messages: pl.DataFrame
    hosts: pl.DataFrame


def run(trace: movement.Trace, s: Settings) -> Result:
    """One run (the GIL is released while it runs)."""
    s.check()
    try:
        d = _native.dtn_run(trace, s.router, [g.native() for g in s.generators], s.ttl_min, [(*m[:4], list(m[4])) for m in s.messages],
                            s.copies, s.prophet,
                            s.range_m, s.speed, s.buffer, s.queue, s.seed, s.run)
    except ValueError as e:
        raise DtnError(str(e)) from None
    messages = pl.DataFrame(d.pop("messages"), schema_overrides={"hops": pl.UInt32, "delivered_at": pl.Float64,
                                                                 "also_at": pl.List(pl.UInt32)})
    hosts = pl.DataFrame(d.pop("hosts"), schema_overrides={"first_received": pl.Float64}).with_row_index("number")
    return Result(s, d, messages, hosts)


_REPORT_LINES = ("created", "started", "relayed", "aborted", "dropped", "removed", "delivered", "delivery_prob",
                 "overhead_ratio", "latency_avg", "latency_med", "hopcount_avg", "hopcount_med", "buffertime_avg",
                 "buffertime_med")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def report_text(r: Result, scenario: str, sim_time: float) -> str:
    """The summary as The ONE's MessageStatsReport writes it."""
    lines = [f"Message stats for scenario {scenario}", f"sim_time: {sim_time:.4f}"]
    lines += [f"{k}: {_fmt(r.summary[k])}" for k in _REPORT_LINES]
    return "\n".join(lines) + "\n"


def write(r: Result, out: Path, scenario: str, sim_time: float) -> None:
    """Writes the run's Parquet tables and report (see the module doc)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DtnError(f"--out {out}: cannot be created ({e.strerror or e})") from None
    settings = asdict(r.settings)
    settings["generators"] = [str(g) for g in r.settings.generators]
    settings["messages"] = len(r.settings.messages)
    settings["prophet"] = list(r.settings.prophet)
    row = {**{k: v for k, v in settings.items()}, **r.summary}
    pl.DataFrame([row]).write_parquet(out / "summary.parquet")
    r.messages.write_parquet(out / "messages.parquet")
    r.hosts.write_parquet(out / "hosts.parquet")
    (out / "MessageStatsReport.txt").write_text(report_text(r, scenario, sim_time), encoding="utf-8")
