"""Typed interface of the compiled extension (crates/wayside-py). Only
`wayside.engine` imports it; the rest of wayside goes through that module."""

from os import PathLike
from typing import TypedDict, final

from typing_extensions import CapsuleType

__all__ = [
    "ScenarioError",
    "StreamedRun",
    "Table",
    "Trace",
    "TraceError",
    "TraceStream",
    "broadside_cli",
    "builtin_names",
    "builtin_text",
    "dtn_run",
    "emulate",
    "emulate_addresses",
    "epidemic_run",
    "rate_thresholds",
    "read_fcd",
    "read_one",
    "resolve",
    "resolve_defaults",
    "run",
    "run_streaming",
]

_Path = str | PathLike[str]

class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the key, the value and what is allowed."""

class TraceError(ValueError):
    """A trace that cannot be read or used; the message names the place and what is allowed."""

# ---------------------------------------------------------------- scenarios

@final
class Table:
    """One trace table as a single Arrow record batch; `pyarrow`, `polars`
    and `pandas` import it without a copy through the PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> CapsuleType:
        """An "arrow_array_stream" PyCapsule of the table's one batch (each
        call exports the same buffers again). `requested_schema` is not
        applied: the table keeps its own schema."""

class _RunStats(TypedDict):
    events: int
    transmissions: int
    simulated_s: float
    undetectable_arrivals: int
    undetectable_drops: list[list[int]]

class _RunTables(TypedDict):
    frames: Table
    mac: Table
    events: Table
    tcp: Table
    transport: Table

class _RunOutput(TypedDict):
    resolved: str
    nodes: list[str]
    stats: _RunStats
    tables: _RunTables
    pcaps: list[str]

def run(
    scenario: str,
    overrides: list[str] = ...,
    seed: int | None = ...,
    run: int = ...,
    pcap: _Path | None = ...,
) -> _RunOutput:
    """Runs a scenario (TOML text) once: the resolved scenario, node names,
    counters, the trace tables and the capture files written into the
    directory `pcap`, if given. Raises ScenarioError."""

@final
class StreamedRun:
    """A run in progress whose trace comes out in batches while it goes on."""

    def __iter__(self) -> StreamedRun: ...
    def __next__(self) -> tuple[str, Table]:
        """The next batch of rows: the table's name and the rows, in the
        order each table's rows were made; every table sends a last batch
        (maybe empty) at the end."""
    def finish(self) -> _RunOutput:
        """Waits for the end of the run: what `run` returns, with empty
        tables. Raises ScenarioError."""

def run_streaming(
    scenario: str,
    overrides: list[str] = ...,
    seed: int | None = ...,
    run: int = ...,
    pcap: _Path | None = ...,
    rows: int = ...,
) -> StreamedRun:
    """Starts a run of a scenario (TOML text) whose trace comes out in
    batches of at most `rows` rows (most of them) while it goes on.
    Raises ScenarioError."""

def resolve(scenario: str, overrides: list[str] = ...) -> str:
    """Validates a scenario and returns it resolved (TOML), overrides applied."""

def resolve_defaults(scenario: str, overrides: list[str] = ...) -> str:
    """The scenario as it would run, overrides applied and every default
    written out (TOML that reads back to the same scenario)."""

def builtin_names() -> list[str]:
    """Names of the built-in scenarios."""

def builtin_text(name: str) -> str | None:
    """Text of a built-in scenario, or None."""

# ---------------------------------------------------------------- PHY

def rate_thresholds(
    standard: str, psdu_bytes: int, implementation_loss_db: float = ...
) -> list[tuple[float, float, float]]:
    """Per rate: (Mbps, SINR dB for 50% frame success, minimum sensitivity dBm).
    Raises ValueError for an unknown standard."""

# ---------------------------------------------------------------- Broadside

def broadside_cli(args: list[str]) -> int:
    """Runs the Broadside node's command line (without the program name);
    returns its exit code."""

# ---------------------------------------------------------------- traces and the epidemic

class _TraceStats(TypedDict, total=False):
    vehicles: int
    steps: int
    samples: int
    start: float
    end: float
    peak_present: int
    mean_moving_speed: float
    mean_presence: float
    heap_bytes: int
    bounds: tuple[float, float, float, float]  # min x, min y, max x, max y; absent when empty

class _DistrictStay(TypedDict):
    name: str
    appear: float
    disappear: float
    depart: float
    start: tuple[float, float]
    waypoints: list[tuple[float, float, float, float]]  # x, y, speed, pause

@final
class Trace:
    """A vehicle trace held in Rust (compact columns)."""

    @property
    def vehicles(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def samples(self) -> int: ...
    def names(self) -> list[str]: ...
    def stats(self) -> _TraceStats:
        """Summary figures (speed in m/s, presence in s)."""
    def columns(self) -> tuple[bytes, bytes, bytes, bytes]:
        """Sample columns as little-endian buffers: time f64, vehicle u32, x f32, y f32."""
    def write_one(self, path: _Path, park: bool = ...) -> None:
        """Writes the trace in The ONE's external movement format."""
    def district(
        self, area: tuple[float, float, float, float], start: float, end: float
    ) -> list[_DistrictStay]:
        """A district cut: one entry per stay of a vehicle in the area
        (min x, min y, max x, max y) and window."""

def read_fcd(path: _Path, window: tuple[float, float] | None = ...) -> Trace:
    """Reads SUMO FCD XML (plain or gzip), keeping `window` = (from, to) if
    given (times shifted so that `from` is 0). Raises TraceError."""

def read_one(
    path: _Path,
    window: tuple[float, float] | None = ...,
    as_the_one: bool = ...,
) -> Trace:
    """Reads The ONE's external movement format (plain or gzip); with
    `as_the_one`, host `i` is The ONE's host `i`. Raises TraceError."""

@final
class TraceStream:
    """A trace built from column batches in time order (e.g. a Parquet
    file's row groups), holding at most one batch outside the trace."""

    def __init__(
        self, label: str, window: tuple[float, float] | None = ..., samples: int = ...
    ) -> None:
        """`samples`, when known, reserves the columns at once."""
    def push(
        self,
        time: bytes,
        vehicle: bytes,
        x: bytes,
        y: bytes,
        names: list[str] | None = ...,
    ) -> None:
        """Adds a batch as little-endian buffers: time f64, vehicle u32
        (codes into `names`, or the previous batch's when None), x and y
        f64. Raises TraceError or ValueError."""
    def push_arrow(self, stream: object) -> None:
        """Adds every batch of an Arrow C stream (an object with
        `__arrow_c_stream__`): time float64, vehicle a dictionary of
        strings (uint32 or int32 indices, no nulls), x and y float32 or
        float64. Raises TraceError."""
    def finish(self) -> Trace:
        """The trace; the stream cannot be used afterwards."""

class _EpidemicOutput(TypedDict):
    vehicles: int
    devices: int
    device_ids: list[str]
    seeds: list[str]
    rules: str
    complete: int
    fraction: float
    broken: int
    receiving_steps: int
    times: bytes  # little-endian f64
    complete_over_time: bytes  # little-endian u32

def epidemic_run(
    trace: Trace,
    penetration: float,
    seeds: int,
    seed: int,
    run: int,
    range_m: float = ...,
    transfer_s: float = ...,
    rules: str = ...,
    roles: tuple[list[str], list[str]] | None = ...,
) -> _EpidemicOutput:
    """One epidemic run (Zahn et al. 2009 §5.6) under `rules` (`paper`,
    `the-one`, or `SENDERS,PROGRESS,COMPLETION`), with the roles drawn or
    given as (device ids, seed ids). Raises ValueError."""

_DtnMessages = TypedDict(
    "_DtnMessages",
    {
        "from": list[int],
        "to": list[int],
        "size": list[int],
        "created": list[float],
        "also_at": list[list[int]],
        "delivered_at": list[float | None],
        "hops": list[int | None],
        "relayed": list[int],
    },
)

class _DtnHosts(TypedDict):
    host: list[str]
    created: list[int]
    sent: list[int]
    received: list[int]
    delivered_to: list[int]
    aborted: list[int]
    dropped: list[int]
    first_received: list[float | None]

class _DtnOutput(TypedDict):
    created: int
    started: int
    relayed: int
    aborted: int
    dropped: int
    removed: int
    delivered: int
    delivery_prob: float
    overhead_ratio: float
    latency_avg: float
    latency_med: float
    hopcount_avg: float
    hopcount_med: float
    buffertime_avg: float
    buffertime_med: float
    messages: _DtnMessages
    hosts: _DtnHosts

_Generator = tuple[
    tuple[int, int],
    tuple[int, int],
    tuple[int, int],
    tuple[int, int] | None,
    tuple[float, float] | None,
    str,
]

def dtn_run(
    trace: Trace,
    router: str,
    generators: list[_Generator],
    ttl_min: int | None = ...,
    messages: list[tuple[int, int, int, float, list[int]]] = ...,
    copies: int = ...,
    prophet: tuple[float, float, float, float] = ...,
    range_m: float = ...,
    speed: float = ...,
    buffer: int = ...,
    queue: str = ...,
    seed: int = ...,
    run: int = ...,
) -> _DtnOutput:
    """One run of The ONE's routing and message model on a trace: `router`
    is epidemic, spray-and-wait, prophet, direct-delivery or first-contact;
    `generators` are MessageEventGenerator ranges ((interval s), (size B),
    (hosts), (to hosts) or None, (time window s) or None, prefix);
    `messages` adds (from, to, size, created, further hosts creating it
    at the same time); `prophet` is (P_init, beta,
    gamma, seconds per time unit). Raises ValueError."""



# ---------------------------------------------------------------- emulation

class _EmulationStats(TypedDict):
    events: int
    lateness_p50_ms: float
    lateness_p99_ms: float
    lateness_max_ms: float
    lateness_max_at_s: float
    late_events: int
    tolerance_ms: float
    behind: bool
    packets_from_hosts: int
    packets_refused: int
    packets_to_hosts: int
    packets_undelivered: int
    max_entry_lag_ms: float
    stopped_at_s: float | None
    hosts: list[tuple[str, str, str]]

def emulate(
    scenario: str,
    hosts: list[tuple[str, str]],
    overrides: list[str] = ...,
    seed: int | None = ...,
    device: str | None = ...,
    tolerance_s: float = ...,
    pcap: _Path | None = ...,
) -> _RunOutput:
    """Runs a scenario paced to the wall clock with real hosts, as
    (node, netns) pairs, behind TUN devices; a run's output whose
    stats["emulation"] is an _EmulationStats. Raises ScenarioError,
    PermissionError (not root) or OSError (no namespace or device)."""

def emulate_addresses(scenario: str, overrides: list[str] = ...) -> list[tuple[str, str]]:
    """Each node's name and the IPv4 address a real host in its place takes."""
