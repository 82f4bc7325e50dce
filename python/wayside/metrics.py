"""Metrics for `wayside validate`: each turns the trace tables of a run into
one number that can be compared with a published figure.

A per-run metric is a pure function `metric(result, **args) -> float` of one
`wayside.RunResult`; `wayside validate` computes it for every run of a target
and aggregates the values (median, mean, …). A metric marked `@across_runs`
takes the list of all of a target's runs instead and does its own
aggregating (`aggregate = "none"` in a validation file).

Node names are the scenario's. Durations in arguments are numbers of seconds
or unit strings (`"2 s"`, `"500 ms"`); MB are 10^6 bytes, Mb/s 10^6 bit/s.
Every function raises `ValueError` with a message naming the argument when a
node, protocol or application does not exist in the run.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Sequence

import polars as pl

from wayside import feup, traces, vanet, zahn
from wayside.result import RunResult
from wayside.traces import check_node, delivered, metres, table

__all__ = [
    "METRICS",
    "ack_rate_penalty",
    "across_digests",
    "across_runs",
    "association_lag_m",
    "connection_span_m",
    "cwnd_after_burst",
    "data_transferred_mb",
    "exit_loss",
    "feup_bin_throughput_mbps",
    "feup_data_share",
    "feup_drop_distance_m",
    "feup_rate_at_rssi_mbps",
    "feup_rssi_at_distance_dbm",
    "goodput_cv",
    "last_data_position_m",
    "mac_frame_loss",
    "max_dupack_burst",
    "min_srtt_at_loss_ms",
    "penalizing_losses",
    "phase_boundary_m",
    "production_gap",
    "quantile",
    "resume_delay_s",
    "rto_doublings",
    "setup_delay_s",
    "setup_loss",
    "supremum_connection_span_m",
    "supremum_data_mb",
    "supremum_over_median",
    "tcp_goodput_mbps",
    "tcp_loss_rate",
    "udp_loss",
    "udp_mb",
    "udp_throughput_mbps",
    "vanet_bin_throughput_kBps",
    "vanet_collisions",
    "vanet_latency_s",
    "vanet_routing_drops",
    "vanet_system_kBps",
    "vanet_throughput_kBps",
    "window_recovery_s",
    "zahn_ack_kb",
    "zahn_acks_kb",
    "zahn_connect_distance_m",
    "zahn_connection_s",
    "zahn_saturated_mb",
    "zahn_startup_delay_s",
    "zahn_startup_share",
    "zahn_throughput_mb",
]

# ---------------------------------------------------------------- registry

METRICS: dict[str, Callable[..., float]] = {}


def _metric(fn: Callable[..., float]) -> Callable[..., float]:
    METRICS[fn.__name__] = fn
    return fn


def across_runs(fn: Callable[..., float]) -> Callable[..., float]:
    """Marks a metric that takes every run of a target at once
    (`fn(results: list[RunResult], **args)`)."""
    fn.across_runs = True  # type: ignore[attr-defined]
    return _metric(fn)


def across_digests(fn: Callable[..., float]) -> Callable[..., float]:
    """Marks an across-runs metric of the drive-by analysis: it takes every
    run at once, each as a RunResult or as its `wayside.driveby` digest, so
    `wayside validate` digests runs where they ran and ships only digests."""
    fn.run_input = "digest"  # type: ignore[attr-defined]
    return across_runs(fn)


def is_across_runs(fn: Callable[..., float]) -> bool:
    return bool(getattr(fn, "across_runs", False))


def run_input(fn: Callable[..., float]) -> str:
    """What an across-runs metric takes of each run: "result" or "digest"."""
    return str(getattr(fn, "run_input", "result"))


# ---------------------------------------------------------------- transport


tcp_goodput_mbps = _metric(traces.tcp_goodput_mbps)


@_metric
def data_transferred_mb(
    result: RunResult,
    receiver: str,
    proto: str = "tcp",
    sender: str | None = None,
    app: int | None = None,
) -> float:
    """Payload delivered to applications at `receiver` over the whole run, MB
    (10^6 bytes): TCP in-order bytes and/or UDP datagram payloads
    (`proto` = "tcp", "udp" or "any"), optionally only from `sender` (the
    peer that originated the data) or one application (index of its [[app]])."""
    t = delivered(result, receiver, proto, sender, app)
    return float(t["bytes"].cast(pl.UInt64).sum()) / 1e6


@_metric
def udp_mb(result: RunResult, receiver: str, app: int | None = None, sender: str | None = None) -> float:
    """UDP payload received at `receiver`, MB (10^6 bytes) — the "total data
    volume" of Ott & Kutscher's rtpspy receiver. Same as
    `data_transferred_mb(proto="udp")`."""
    return data_transferred_mb(result, receiver, proto="udp", sender=sender, app=app)


@_metric
def udp_loss(result: RunResult, receiver: str, app: int | None = None, sender: str | None = None) -> float:
    """Fraction of a UDP flow's datagrams lost, as the receiver sees it (Ott &
    Kutscher 2004, Table IV: "from the first to the last packet that has been
    received"): over the sequence numbers from the first to the last datagram
    received, 1 − distinct datagrams received / (last − first + 1). Datagrams
    sent before the receiver came into range or after it left do not count.

    Needs one flow: give `app` (or `sender`) when several arrive at
    `receiver`. NaN if fewer than one datagram arrived (loss undefined)."""
    t = _udp_flow(result, receiver, app, sender)
    if t.is_empty():
        return math.nan
    seqs = t["seq"]
    span = int(seqs.max()) - int(seqs.min()) + 1
    return 1.0 - seqs.n_unique() / span


@_metric
def udp_throughput_mbps(
    result: RunResult, receiver: str, app: int | None = None, sender: str | None = None
) -> float:
    """A UDP flow's effective throughput, Mbit/s of payload, from the first
    to the last datagram received (Ott & Kutscher 2004, Tables II and IV:
    "effective throughput ... as observed by the rtpspy tool"). One flow, as
    for `udp_loss`; NaN if the datagrams received span no time."""
    t = _udp_flow(result, receiver, app, sender)
    if t.is_empty():
        return math.nan
    seconds = (int(t["time_ns"].max()) - int(t["time_ns"].min())) / 1e9
    if seconds <= 0:
        return math.nan
    return float(t["bytes"].cast(pl.UInt64).sum()) * 8 / seconds / 1e6


def _udp_flow(result: RunResult, receiver: str, app: int | None, sender: str | None) -> pl.DataFrame:
    """The datagrams of the one UDP flow arriving at `receiver` (from `app`
    or `sender` when several arrive)."""
    t = delivered(result, receiver, "udp", sender, app)
    flows = t.select("peer", "app").unique()
    if flows.height > 1:
        raise ValueError(
            f"app: {flows.height} UDP flows arrive at '{receiver}' (apps {sorted(flows['app'].to_list())}); give app = N"
        )
    return t


# ---------------------------------------------------------------- MAC


@_metric
def mac_frame_loss(result: RunResult, sender: str, receiver: str | None = None) -> float:
    """Fraction of `sender`'s unicast data-frame transmissions that were not
    acknowledged (Hadaller et al. 2007 §6.1: "18.5% of all transmitted MAC
    frames were lost"): 1 − acknowledged / transmitted, where transmitted
    counts every PHY transmission of a unicast data frame (first attempts and
    retries; `frames` rows tx/data) and acknowledged counts the MSDUs the MAC
    delivered (`mac` rows delivered: exactly one transmission of each was
    ACKed). Management frames are excluded; `receiver` restricts to one peer.
    NaN if nothing was transmitted."""
    check_node(result, sender, "sender")
    frames = table(result, "frames").filter(
        (pl.col("node") == sender) & (pl.col("event") == "tx") & (pl.col("kind") == "data") & (pl.col("peer") != "broadcast")
    )
    mac = table(result, "mac").filter(
        (pl.col("node") == sender) & (pl.col("event") == "delivered") & (pl.col("peer") != "broadcast")
    )
    if receiver is not None:
        check_node(result, receiver, "receiver")
        frames = frames.filter(pl.col("peer") == receiver)
        mac = mac.filter(pl.col("peer") == receiver)
    if frames.is_empty():
        return math.nan
    return 1.0 - mac.height / frames.height


@_metric
def tcp_loss_rate(result: RunResult, sender: str, receiver: str | None = None) -> float:
    """Loss visible to TCP at `sender` (Hadaller et al. 2007 §6.1: losses seen
    by TCP per TCP packet sent, < 0.13%), approximated at the MAC: the
    unicast MSDUs `sender`'s MAC gave up on (retry chain exhausted, `failed`)
    or dropped on arrival (`queue-drop`), divided by the unicast MSDUs handed
    to its MAC (delivered + failed + queue-drop). Each such MSDU is a packet
    the transport above must recover, so for a TCP sender it is the segments
    TCP had to retransmit because the link lost them (it misses losses on the
    wired side and spurious timeouts; ARP and other non-TCP MSDUs from
    `sender` are counted too, a handful per run). NaN if nothing was sent."""
    check_node(result, sender, "sender")
    mac = table(result, "mac").filter(
        (pl.col("node") == sender)
        & (pl.col("peer") != "broadcast")
        & pl.col("event").is_in(["delivered", "failed", "queue-drop"])
    )
    if receiver is not None:
        check_node(result, receiver, "receiver")
        mac = mac.filter(pl.col("peer") == receiver)
    if mac.is_empty():
        return math.nan
    lost = mac.filter(pl.col("event") != "delivered").height
    return lost / mac.height


@_metric
def connection_span_m(result: RunResult, a: str, b: str) -> float:
    """Length of road over which two-way communication between `a` and `b`
    happened, metres: of the data frames `a` sent to `b` that were
    acknowledged (`mac` rows delivered at `a` for peer `b`: `b` received the
    frame and `a` received its ACK), take the first and the last; the span is
    the distance between where the moving end was at those two instants. Both
    ends are considered (`a`'s position from the row itself, `b`'s from
    `b`'s nearest trace record in time, under a millisecond away) and the
    larger distance counts, so it does not matter which one moves. For a car
    on a straight road this is the stretch between first and last
    acknowledged frame. 0 with fewer than two acknowledged frames."""
    ends = _span_ends(result, a, b)
    if not ends:
        return 0.0
    return float(max(_extent(ends[:2]), _extent(ends[2:])))


def _span_ends(result: RunResult, a: str, b: str) -> list[tuple[float, float]]:
    """Positions of both ends at the first and last data frame `a` sent to
    `b` that was acknowledged: [a_first, a_last, b_first, b_last] (empty
    with fewer than two such frames)."""
    check_node(result, a, "a")
    check_node(result, b, "b")
    acked = (
        table(result, "mac")
        .filter((pl.col("node") == a) & (pl.col("peer") == b) & (pl.col("event") == "delivered"))
        .sort("time_ns")
    )
    if acked.height < 2:
        return []
    ends = pl.concat([acked.head(1), acked.tail(1)]).select("time_ns", "x", "y")
    b_pos = (
        table(result, "frames")
        .filter(pl.col("node") == b)
        .select("time_ns", pl.col("x").alias("bx"), pl.col("y").alias("by"))
        .unique("time_ns", keep="first", maintain_order=True)
        .sort("time_ns")
    )
    ends = ends.join_asof(b_pos, on="time_ns", strategy="nearest")
    (x0, y0, bx0, by0), (x1, y1, bx1, by1) = ends.select("x", "y", "bx", "by").rows()
    out = [(x0, y0), (x1, y1)]
    if None not in (bx0, bx1):
        out += [(bx0, by0), (bx1, by1)]
    return out


def _extent(points: Sequence[tuple[float, float]]) -> float:
    """Largest distance between any two of `points`."""
    return max((math.hypot(p[0] - q[0], p[1] - q[1]) for p in points for q in points), default=0.0)


@_metric
def last_data_position_m(result: RunResult, receiver: str, reference: str, proto: str = "tcp") -> float:
    """Where the last useful packet arrived (Hadaller et al. 2007 §6.4.2,
    Figure 22: the median connection ended 398 m past the AP): the
    receiver's x coordinate at its last delivery of application data
    (`proto` tcp/udp/any) minus the x coordinate of `reference` (the AP; its
    first radio trace record), metres — positive past the AP for a car driving towards +x.
    NaN if nothing was delivered."""
    check_node(result, reference, "reference")
    t = delivered(result, receiver, proto, None, None)
    if t.is_empty():
        return math.nan
    last = t.sort("time_ns").tail(1)["x"][0]
    ref = table(result, "frames").filter(pl.col("node") == reference).sort("time_ns").head(1)
    if ref.is_empty():
        raise ValueError(f"reference: node '{reference}' has no radio trace to take its position from")
    ref_x = float(ref["x"][0])
    return float(last) - ref_x


@_metric
def association_lag_m(result: RunResult, first: str, second: str) -> float:
    """Hadaller et al. (2007) §9: when two cars pass an AP one after the
    other, the first one's data delays the second one's connection setup.
    Where on the road station `second` completed association minus where
    station `first` did (the x coordinates of their first `associated`
    events), metres — positive when the second car associated further
    along the road. NaN if either never associated."""
    for name, arg in ((first, "first"), (second, "second")):
        check_node(result, name, arg)
    events = table(result, "events").filter(pl.col("event") == "associated").sort("time_ns")
    at = [events.filter(pl.col("node") == n)["x"] for n in (first, second)]
    if any(x.is_empty() for x in at):
        return math.nan
    return float(at[1][0]) - float(at[0][0])


# ---------------------------------------------------------------- across runs


@across_runs
def supremum_connection_span_m(results: Sequence[RunResult], a: str, b: str) -> float:
    """The "maximum potential connection" of Hadaller et al. (2007), Figure 5
    (1280 m): the length of road over which two-way communication happened
    in at least one run — as `connection_span_m`, but the first and last
    acknowledged data frames are taken over every run together (the largest
    distance between any two of the runs' end positions)."""
    a_ends: list[tuple[float, float]] = []
    b_ends: list[tuple[float, float]] = []
    for r in results:
        ends = _span_ends(r, a, b)
        a_ends += ends[:2]
        b_ends += ends[2:]
    return float(max(_extent(a_ends), _extent(b_ends)))


@across_runs
def supremum_data_mb(results: Sequence[RunResult], receiver: str, bin: float | str = 20.0, proto: str = "tcp") -> float:
    """Hadaller et al. (2007) §7 "supremum data transferred", MB: the road is
    cut into `bin`-metre sections by the receiver's x position; in each
    section take the most data any run delivered there; sum over sections.
    (At constant speed this equals their sum of supremum goodput × time per
    section.)"""
    width = metres(bin, "bin")
    if width <= 0:
        raise ValueError(f"bin: {bin!r} must be more than 0 m")
    per_run = []
    for i, r in enumerate(results):
        t = delivered(r, receiver, proto, None, None)
        per_run.append(
            t.select(((pl.col("x") / width).floor().cast(pl.Int64)).alias("section"), pl.col("bytes").cast(pl.UInt64))
            .group_by("section")
            .agg(pl.col("bytes").sum())
            .with_columns(pl.lit(i).alias("run"))
        )
    if not per_run:
        return 0.0
    sections = pl.concat(per_run).group_by("section").agg(pl.col("bytes").max())
    return float(sections["bytes"].sum() or 0) / 1e6


# ---------------------------------------------------------------- drive-by analysis (wayside.driveby)

_DIGESTS: "weakref.WeakKeyDictionary[RunResult, Any]" = weakref.WeakKeyDictionary()


def _drive_by(runs: Sequence[Any], static: str) -> Any:
    """The cross-run drive-by analysis of `runs` (RunResults, each digested
    once per process however many metrics ask, or digests)."""
    from wayside import driveby
    from wayside.staticlab import static_profile

    if not runs:
        raise ValueError("no runs to analyze")
    digests = []
    for i, r in enumerate(runs):
        if isinstance(r, RunResult):
            if r not in _DIGESTS:
                _DIGESTS[r] = driveby.digest(r, name=f"run{i}")
            r = _DIGESTS[r]
        digests.append(r)
    return driveby.analyze(digests, static_profile(static))


def quantile(values: Sequence[float | None], q: float) -> float:
    """The `q` quantile (0–1) of `values`, linear between order statistics;
    None and NaN (undefined) values are left out; NaN if none is left."""
    vs = sorted(v for v in values if v is not None and not math.isnan(v))
    if not vs:
        return math.nan
    pos = q * (len(vs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(vs) - 1)
    return vs[lo] + (vs[hi] - vs[lo]) * (pos - lo)


def _quantile(values: Sequence[float], q: float, name: str) -> float:
    if not 0 <= q <= 1:
        raise ValueError(f"{name}: {q!r} is not a quantile; give a number from 0 to 1")
    return quantile(values, q)


@across_digests
def supremum_over_median(results: Sequence[Any], static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §5: supremum data transferred (best run per
    20 m of road, summed) divided by the median run's data — about 2 in the
    paper ("current protocols only achieve 50%")."""
    a = _drive_by(results, static)
    median = _quantile(a.per_run["data_mb"].to_list(), 0.5, "data")
    return a.supremum_mb / median if median else math.nan


_BOUNDARIES = {
    "entry-start": "entry_start_m",
    "production-start": "production_start_m",
    "production-end": "production_end_m",
    "exit-end": "exit_end_m",
}


@across_digests
def phase_boundary_m(results: Sequence[Any], boundary: str, static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §6.1: a phase boundary, metres from the AP
    along the road (production where the supremum goodput exceeds 3 Mb/s;
    entry and exit out to where the supremum connection starts and ends).
    `boundary`: entry-start, production-start, production-end or exit-end.
    NaN if the supremum never reaches 3 Mb/s."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"boundary: '{boundary}' is not a phase boundary; allowed: {', '.join(_BOUNDARIES)}")
    a = _drive_by(results, static)
    return float(getattr(a.phases, _BOUNDARIES[boundary])) if a.phases else math.nan


@across_digests
def setup_delay_s(results: Sequence[Any], quantile: float | None = None, static: str = "static-lab") -> float:
    """Hadaller et al. (2007) Table 4: connection setup delay, from where
    the supremum connection starts to where the run's connection became
    usable (see wayside.driveby), s: the mean over runs (paper: 13.1 s), or
    the `quantile` (0–1) when given."""
    values = _drive_by(results, static).per_run["setup_delay_s"].to_list()
    if quantile is not None:
        return _quantile(values, quantile, "quantile")
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


@across_digests
def setup_loss(results: Sequence[Any], quantile: float = 0.5, static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §6.2.8: share of the supremum data lost
    because the connection became usable late (the supremum data on the road
    before the run's usable position), at `quantile` over runs (0.5: median,
    paper 7.5%; 0.85: the worst 15% of runs, paper 22.8%)."""
    return _quantile(_drive_by(results, static).per_run["setup_loss"].to_list(), quantile, "quantile")


@across_digests
def exit_loss(results: Sequence[Any], quantile: float = 0.5, static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §6.4.2: share of the supremum data lost
    because the connection ended early (the supremum data on the road after
    the run's last useful packet), at `quantile` over runs (0.5: median,
    paper 2.1%; 0.85: paper 3.0%)."""
    return _quantile(_drive_by(results, static).per_run["exit_loss"].to_list(), quantile, "quantile")


@across_digests
def production_gap(results: Sequence[Any], static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §6.3.2: share by which the mean goodput over
    runs falls below the supremum in the middle half of the production
    phase (see wayside.driveby; paper: 25%, read off Figure 5(c))."""
    return _drive_by(results, static).production_gap


@across_digests
def ack_rate_penalty(results: Sequence[Any], static: str = "static-lab") -> float:
    """Hadaller et al. (2007) §6.3.2: goodput lost in the production phase
    because the TCP receiver sends its ACKs at its own MAC rates rather than
    at the sender's, priced with the airtime TCP ACKs take per Mbit at each
    rate in our static runs (see wayside.driveby; paper: 16–23%)."""
    return _drive_by(results, static).ack_penalty


# ---------------------------------------------------------------- Chen et al. (wayside.vanet)


@_metric
def vanet_throughput_kBps(result: RunResult) -> float:
    """Chen et al. Fig. 2: mean over sources of TCP bytes at the AP per
    second each was active, KB/s."""
    return vanet.source_throughput_kBps(result)


@_metric
def vanet_system_kBps(result: RunResult) -> float:
    """Chen et al. Fig. 8: all sources' TCP bytes at the AP per second, KB/s."""
    return vanet.system_throughput_kBps(result)


@_metric
def vanet_collisions(result: RunResult) -> float:
    """Chen et al. Fig. 3: receptions lost to overlapping transmissions."""
    return float(vanet.collisions(result))


@_metric
def vanet_routing_drops(result: RunResult) -> float:
    """Chen et al. §IV.A: packets dropped for want of a route."""
    return float(vanet.routing_drops(result))


@_metric
def vanet_latency_s(result: RunResult) -> float:
    """Chen et al. Fig. 4: mean end-to-end latency of the data segments
    that reached the AP, s."""
    seg = vanet.segments(result)
    return float(seg["latency_s"].mean()) if seg.height else math.nan


@_metric
def vanet_bin_throughput_kBps(result: RunResult, bin: int) -> float:
    """Chen et al. Figs. 5, 10, 11: the sources' throughput while in road
    bin `bin` (150 m each from the road's start), KB/s."""
    v = vanet.by_bin(result)["throughput_kBps"][bin]
    return math.nan if v is None else float(v)


# ---------------------------------------------------------------- TCP loss events (Mukherjee et al. 2014)


def _loss_events(result: RunResult, sender: str, receiver: str, min_since_rto_s: float = 0.0) -> pl.DataFrame:
    """Loss events (wayside.tcploss), without those less than
    `min_since_rto_s` after an RTO (go-back-N after lost ACKs)."""
    from wayside import tcploss

    ev = tcploss.loss_events(result, sender, receiver)
    return ev.filter(~(pl.col("since_rto_s") < min_since_rto_s))


@_metric
def max_dupack_burst(result: RunResult, sender: str, receiver: str, min_since_rto_s: float = 0.0) -> float:
    """Most duplicate ACKs in one burst at `sender`'s TCP (0 if none),
    leaving out bursts less than `min_since_rto_s` after an RTO."""
    ev = _loss_events(result, sender, receiver, min_since_rto_s)
    return float(ev["dupacks"].max()) if ev.height else 0.0


@_metric
def cwnd_after_burst(result: RunResult, sender: str, receiver: str, min_dupacks: int = 30,
                     min_since_rto_s: float = 0.0) -> float:
    """Lowest cwnd (segments) after a DupAck burst of at least
    `min_dupacks` duplicates, leaving out bursts less than
    `min_since_rto_s` after an RTO (NaN if there is none)."""
    ev = _loss_events(result, sender, receiver, min_since_rto_s).filter(pl.col("dupacks") >= min_dupacks)
    return float(ev["cwnd_after"].min()) if ev.height else math.nan


@_metric
def window_recovery_s(result: RunResult, sender: str, receiver: str, srtt_ms: Sequence[float] = (0.0, math.inf),
                      min_dupacks: int = 3) -> float:
    """Median time (s) to rebuild cwnd to its value before the loss, over
    the loss events with at least `min_dupacks` duplicates whose SRTT at the
    loss lies in [srtt_ms[0], srtt_ms[1]) (NaN if there is none)."""
    lo, hi = srtt_ms
    ev = _loss_events(result, sender, receiver).filter(
        pl.col("dupacks") >= min_dupacks, pl.col("srtt_ms") >= lo, pl.col("srtt_ms") < hi, pl.col("recovery_s").is_not_nan())
    return float(ev["recovery_s"].median()) if ev.height else math.nan


@_metric
def min_srtt_at_loss_ms(result: RunResult, sender: str, receiver: str, min_dupacks: int = 3) -> float:
    """Lowest SRTT (ms) at a loss event with at least `min_dupacks`
    duplicates (NaN if there is none)."""
    ev = _loss_events(result, sender, receiver).filter(pl.col("dupacks") >= min_dupacks)
    return float(ev["srtt_ms"].min()) if ev.height else math.nan


@_metric
def penalizing_losses(result: RunResult, sender: str, receiver: str) -> float:
    """Loss events classed penalizing (see wayside.tcploss)."""
    ev = _loss_events(result, sender, receiver)
    return float(ev.filter(pl.col("kind") == "penalizing").height)


@_metric
def rto_doublings(result: RunResult, sender: str, start: float | str, end: float | str) -> float:
    """Consecutive TCP timeouts at `sender` between `start` and `end` (s)
    whose RTO doubles the one before (the backoff while a link is down)."""
    check_node(result, sender, "sender")
    lo, hi = traces.seconds(start, "start"), traces.seconds(end, "end")
    ev = table(result, "events").filter(pl.col("node") == sender, pl.col("event") == "tcp-timeout",
                                        pl.col("time_ns") >= lo * 1e9, pl.col("time_ns") < hi * 1e9)
    rto = ev["value"].to_list()
    return float(sum(1 for a, b in zip(rto, rto[1:]) if abs(b / a - 2.0) < 0.01))


@_metric
def resume_delay_s(result: RunResult, receiver: str, after: float | str) -> float:
    """Time from `after` (s) to the next TCP data delivered to `receiver`
    (NaN if none)."""
    t0 = traces.seconds(after, "after")
    t = delivered(result, receiver, "tcp", None, None).filter(pl.col("time_ns") > t0 * 1e9)
    return float(t["time_ns"].min()) / 1e9 - t0 if t.height else math.nan


@_metric
def goodput_cv(result: RunResult, receiver: str, skip: float | str = 0.0) -> float:
    """Coefficient of variation of `receiver`'s TCP goodput per second from
    `skip` on: how steady the throughput is."""
    from wayside import tcploss

    s = traces.seconds(skip, "skip")
    tp = tcploss.goodput_per_second(result, receiver).filter(pl.col("t") >= s)["mbps"]
    m = tp.mean()
    return float(tp.std() / m) if tp.len() > 1 and m else math.nan


# ---------------------------------------------------------------- Zahn 2009

# Zahn et al. (2009) §5's base metrics of a Broadside contact between two
# ad hoc nodes (see wayside.zahn for their definitions).
zahn_connection_s = zahn.connection_s
zahn_throughput_mb = zahn.broadside_mb
zahn_startup_delay_s = zahn.startup_delay_s
zahn_startup_share = zahn.startup_share
zahn_ack_kb = zahn.ack_kb
zahn_connect_distance_m = zahn.connect_distance_m
zahn_acks_kb = zahn.acks_kb
zahn_saturated_mb = zahn.saturated_mb
METRICS.update((name, fn) for name, fn in list(globals().items()) if name.startswith("zahn_"))


# ---------------------------------------------------------------- FEUP 2019 drive-by (wayside.feup)


@_metric
def feup_bin_throughput_mbps(result: RunResult, receiver: str, sender: str, lo_m: float, hi_m: float) -> float:
    """Mean Mbit/s from `sender` (the AP) to `receiver` over the seconds at
    `lo_m` <= distance < `hi_m` (wayside.feup)."""
    return feup.bin_throughput(feup.per_second(result, receiver, sender), lo_m, hi_m)


@_metric
def feup_rate_at_rssi_mbps(result: RunResult, receiver: str, sender: str, lo_dbm: float, hi_dbm: float) -> float:
    """Mean PHY rate of the data frames `receiver` got from `sender` over the
    seconds whose mean RSSI is in [`lo_dbm`, `hi_dbm`) (wayside.feup)."""
    return feup.rate_at_rssi(feup.per_second(result, receiver, sender), lo_dbm, hi_dbm)


@_metric
def feup_drop_distance_m(result: RunResult, receiver: str, sender: str) -> float:
    """Where the pair's throughput first drops under 1 Mbit/s: the lower
    edge of that 10 m distance bin (wayside.feup)."""
    return feup.drop_distance(feup.per_second(result, receiver, sender))


@_metric
def feup_data_share(result: RunResult, receiver: str, sender: str) -> float:
    """Share of the run's seconds in which `receiver` got data from `sender`."""
    return feup.data_share(feup.per_second(result, receiver, sender))


@_metric
def feup_rssi_at_distance_dbm(result: RunResult, receiver: str, sender: str, lo_m: float, hi_m: float) -> float:
    """Mean RSSI of the data frames `receiver` got from `sender` over the
    seconds at `lo_m` <= distance < `hi_m` (wayside.feup)."""
    return feup.rssi_at_distance(feup.per_second(result, receiver, sender), lo_m, hi_m)
