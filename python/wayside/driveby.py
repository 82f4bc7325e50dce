"""Where a drive-by's data goes: the analysis of Hadaller et al. (2007) §5–§6
for any set of runs of a car passing an AP while one end sends bulk TCP.

Per run (`digest`, small enough to keep beside the run as driveby.json):
goodput, time, mean RSSI and MAC rates per 20 m of road (position along the
road relative to the AP, negative before it; the road runs along x), the
connection milestones, where the connection became usable and where it
ended, and the labelled intervals that make up its setup delay.

Across runs (`analyze`): the supremum goodput per bin and supremum data
(§5), the theoretical potential (mean RSSI → SNR over the noise floor →
highest rate whose sensitivity is met → that rate's static goodput from our
own static scenario, `wayside.staticlab`), the phases (§6.1: production
where the supremum exceeds 3 Mb/s, entry and exit out to where the supremum
connection starts and ends), per run the setup-delay breakdown (§6.2,
Figure 14) and the data lost to setup delay and to an early end against the
supremum (§6.2.8, §6.4.2), the gap between the mean and the supremum
goodput in the middle of the production phase and the receiver's ACK-rate
penalty (§6.3.2).

Definitions (ours where the paper leaves room):
- usable: the first delivery from which the receiver gets at least the
  production goodput (3 Mb/s) over the next second;
- end: the last delivery of TCP data (Figure 22: "last useful TCP packet");
- setup delay: from when the car passes the start of the supremum connection
  (the entry phase) to usable. Each instant of it is labelled by the
  highest-priority interval covering it — early TCP timeouts (the expired
  RTO before each timeout or SYN retransmission), MAC management timeouts
  (request to timeout), ARP (request to resolution), application start (the
  sender's association to its application starting), initial-rate
  overestimation (the sender's first data frame to the first one acknowledged
  at its first attempt), AP selection (before the first selection, and from a
  failed attempt to the next selection) — and "other" when none covers it
  (successful exchanges, TCP handshake, slow start);
- production gap: 1 − (mean goodput over runs) / (supremum goodput), summed
  over the bins of the middle half of the production phase (between a
  quarter and three quarters of its length); the paper reads 25% off
  Figure 5(c) for "the middle of the production phase";
- ACK-rate penalty: from the static profile, the TCP ACKs' airtime per Mbit
  at each rate A(r) and the static goodput G(r); with the sender's data-rate
  shares p and the receiver's ACK-rate shares q over the production phase,
  penalty = 1 − Σ p(d) q(a) G'(d, a) / Σ p(d) G(d), where
  1/G'(d, a) = 1/G(d) + A(a) − A(d): the goodput lost because the ACKs take
  the airtime of the receiver's rates instead of the sender's.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from wayside import engine as _native
from wayside.traces import table
from wayside.result import RunResult
from wayside.staticlab import RateProfile
from wayside.stats import mean_ci

BIN_M = 20.0
PRODUCTION_MBPS = 3.0
NOISE_FLOOR_DBM = -95.0
USABLE_WINDOW_S = 1.0
DIGEST_FILE = "driveby.json"
DIGEST_VERSION = 1  # bump when the digest's content changes: older files are recomputed

SETUP_LABELS = (
    "AP selection",
    "MAC management timeouts",
    "application start",
    "ARP",
    "initial-rate overestimation",
    "early TCP timeouts",
    "other",
)
# Which label an instant covered by several intervals takes (first wins).
_PRIORITY = (
    "early TCP timeouts",
    "MAC management timeouts",
    "ARP",
    "application start",
    "initial-rate overestimation",
    "AP selection",
)


# ---------------------------------------------------------------- roles


@dataclass(frozen=True)
class Roles:
    ap: str
    station: str  # the AP's peer
    sender: str  # of the bulk TCP flow
    receiver: str
    air_tx: str  # who sends the flow's data over the air (the sender, or the AP for a host behind it)
    air_rx: str  # who receives it over the air (the receiver, or the AP for a host behind it)


def single_pass(scenario: dict) -> bool:
    """One AP and one station: the drive-by this analysis is made for (on
    a road of several APs or cars it would see only the first pair)."""
    kinds = [n.get("role") for n in scenario.get("node", [])]
    return kinds.count("ap") == 1 and kinds.count("sta") == 1


def roles(result: RunResult) -> Roles:
    """The AP, the station and the bulk TCP flow's ends, from the scenario:
    the first tcp-bulk application between a station and its AP or a host
    behind the AP (a node without a radio, reached over a wired link)."""
    scenario = result.scenario
    nodes = scenario.get("node", [])
    kinds = {n["name"]: ("host" if n.get("radio") is False else n.get("role")) for n in nodes}
    aps = [n["name"] for n in nodes if n.get("role") == "ap"]
    for app in scenario.get("app", []):
        ends = (app.get("from"), app.get("to"))
        roles_of = sorted(kinds.get(e) or "" for e in ends)
        if app.get("kind") != "tcp-bulk" or roles_of not in (["ap", "sta"], ["host", "sta"]) or not aps:
            continue
        station = ends[0] if kinds[ends[0]] == "sta" else ends[1]
        other = ends[1] if station == ends[0] else ends[0]
        ap = other if kinds[other] == "ap" else aps[0]
        air = {station: station, other: ap}
        return Roles(ap, station, ends[0], ends[1], air[ends[0]], air[ends[1]])
    raise ValueError(
        f"scenario {scenario.get('name', '?')}: no tcp-bulk application between a station and its AP "
        "(or a host behind it); the drive-by analysis needs one"
    )


# ---------------------------------------------------------------- per run


@dataclass
class RunDigest:
    """What the cross-run analysis needs of one run (times in s, positions
    in m along the road from the AP)."""

    name: str
    data_mb: float
    bins: pl.DataFrame  # bin, start_m, time_s, bytes, rssi_sum, rssi_n
    rates: pl.DataFrame  # bin, who (sender|receiver), rate_mbps, frames
    track: pl.DataFrame  # time_s, pos_m
    milestones: dict[str, float | None]
    intervals: list[tuple[float, float, str]]
    timeouts: list[float]  # times of the sender's TCP timeouts
    usable_s: float | None
    end_s: float | None
    standard: str  # the radio standard, whose rates the theoretical potential uses

    def pos(self, t: float | None) -> float | None:
        if t is None:
            return None
        return float(np.interp(t, self.track["time_s"].to_numpy(), self.track["pos_m"].to_numpy()))

    def time_at(self, pos_m: float) -> float:
        return float(np.interp(pos_m, self.track["pos_m"].to_numpy(), self.track["time_s"].to_numpy()))

    @property
    def usable_m(self) -> float | None:
        return self.pos(self.usable_s)

    @property
    def end_m(self) -> float | None:
        return self.pos(self.end_s)

    def to_json(self) -> str:
        doc = {
            "version": DIGEST_VERSION, "name": self.name, "data_mb": self.data_mb, "milestones": self.milestones,
            "intervals": self.intervals, "timeouts": self.timeouts, "usable_s": self.usable_s, "end_s": self.end_s,
            "standard": self.standard,
            "bins": self.bins.to_dict(as_series=False), "rates": self.rates.to_dict(as_series=False),
            "track": self.track.to_dict(as_series=False),
        }
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RunDigest":
        d = json.loads(text)
        if d.get("version") != DIGEST_VERSION:
            raise ValueError(f"digest version {d.get('version')!r}, not {DIGEST_VERSION}")
        return cls(
            name=d["name"], data_mb=d["data_mb"], milestones=d["milestones"],
            intervals=[tuple(i) for i in d["intervals"]], timeouts=d["timeouts"], usable_s=d["usable_s"],
            end_s=d["end_s"], standard=d["standard"], bins=pl.DataFrame(d["bins"], schema=_BIN_SCHEMA),
            rates=pl.DataFrame(d["rates"], schema=_RATE_SCHEMA), track=pl.DataFrame(d["track"], schema=_TRACK_SCHEMA),
        )


_BIN_SCHEMA = pl.Schema({"bin": pl.Int64, "start_m": pl.Float64, "time_s": pl.Float64, "bytes": pl.Int64, "rssi_sum": pl.Float64, "rssi_n": pl.Int64})
_RATE_SCHEMA = pl.Schema({"bin": pl.Int64, "who": pl.Utf8, "rate_mbps": pl.Float64, "frames": pl.Int64})
_TRACK_SCHEMA = pl.Schema({"time_s": pl.Float64, "pos_m": pl.Float64})


def _track(frames: pl.DataFrame, events: pl.DataFrame, node: str, ap_x: float) -> pl.DataFrame:
    """Where `node` was (along the road from the AP): its first record in
    every 100 ms it recorded anything, and its last."""
    rows = pl.concat([
        frames.filter(pl.col("node") == node).select("time_ns", "x"),
        events.filter(pl.col("node") == node).select("time_ns", "x"),
    ])
    if rows.is_empty():
        raise ValueError(f"node '{node}' recorded nothing: no track to place the run on the road")
    rows = rows.sort("time_ns")
    sampled = rows.with_columns((pl.col("time_ns") // 100_000_000).alias("slot")).group_by("slot").agg(
        pl.col("time_ns").first(), pl.col("x").first()
    ).drop("slot")
    # The last record too, so that nothing the node did lies beyond the track.
    rows = pl.concat([sampled, rows.tail(1)]).unique("time_ns", keep="first").sort("time_ns")
    x = rows["x"].to_numpy().astype(float)
    direction = 1.0 if x[-1] >= x[0] else -1.0
    return pl.DataFrame({"time_s": rows["time_ns"].to_numpy() / 1e9, "pos_m": (x - ap_x) * direction}, schema=_TRACK_SCHEMA)


def _between(events: pl.DataFrame, r: Roles) -> pl.DataFrame:
    """The events of this pass: the station's about the AP, and the flow's
    ends' about each other."""
    pairs = ((r.station, r.ap), (r.ap, r.station), (r.sender, r.receiver), (r.receiver, r.sender),
             (r.air_tx, r.air_rx), (r.air_rx, r.air_tx))
    return events.filter(pl.any_horizontal([(pl.col("node") == a) & (pl.col("peer") == b) for a, b in pairs]))


def _first(events: pl.DataFrame, node: str, event: str, after: float = -math.inf) -> float | None:
    t = events.filter((pl.col("node") == node) & (pl.col("event") == event) & (pl.col("t") >= after))["t"]
    return float(t.min()) if len(t) else None


def _times(events: pl.DataFrame, node: str, *names: str) -> list[float]:
    return sorted(events.filter((pl.col("node") == node) & pl.col("event").is_in(names))["t"].to_list())


def usable_time(times_s: np.ndarray, sizes: np.ndarray, mbps: float = PRODUCTION_MBPS,
                window_s: float = USABLE_WINDOW_S) -> float | None:
    """The first delivery time from which at least `mbps` arrive over the
    next `window_s` (deliveries sorted by time; sizes in bytes)."""
    if len(times_s) == 0:
        return None
    cum = np.concatenate([[0.0], np.cumsum(sizes, dtype=float)])
    ends = np.searchsorted(times_s, times_s + window_s, side="left")
    got = cum[ends] - cum[np.arange(len(times_s))]
    ok = np.nonzero(got * 8 / 1e6 / window_s >= mbps)[0]
    return float(times_s[ok[0]]) if len(ok) else None


def setup_intervals(events: pl.DataFrame, frames: pl.DataFrame, mac: pl.DataFrame, r: Roles) -> list[tuple[float, float, str]]:
    """The labelled intervals of connection setup (see the module doc);
    `events` has a column t in seconds."""
    out: list[tuple[float, float, str]] = []
    sta = r.station
    events = _between(events, r)
    selected = _times(events, sta, "ap-selected")
    failures = _times(events, sta, "auth-timeout", "assoc-timeout", "disassociated")
    if selected:
        out.append((0.0, selected[0], "AP selection"))
        for prev, nxt in zip(selected, selected[1:]):
            failed = [f for f in failures if prev < f <= nxt]
            if failed:
                out.append((failed[-1], nxt, "AP selection"))
    requests = _times(events, sta, "auth-request", "assoc-request")
    for t in _times(events, sta, "auth-timeout", "assoc-timeout"):
        before = [q for q in requests if q <= t]
        if before:
            out.append((before[-1], t, "MAC management timeouts"))
    assoc = _first(events, r.ap, "associated")
    start = _first(events, r.sender, "app-start", assoc if assoc is not None else -math.inf)
    if assoc is not None and start is not None:
        out.append((assoc, start, "application start"))
    arp = _first(events, r.air_tx, "arp-request", start if start is not None else -math.inf)
    if arp is not None:
        resolved = _first(events, r.air_tx, "arp-resolved", arp)
        if resolved is not None:
            out.append((arp, resolved, "ARP"))
    tcp_ends = (pl.col("node") == r.sender) | (pl.col("node") == r.air_tx)  # the AP's own half when it splits TCP
    for row in events.filter(tcp_ends & (pl.col("event") == "tcp-timeout")).iter_rows(named=True):
        out.append((row["t"] - row["value"] / 2, row["t"], "early TCP timeouts"))  # value: the doubled RTO
    for node in sorted({r.sender, r.air_tx}):
        syns = _times(events, node, "syn", "syn-retransmit")
        for prev, nxt in zip(syns, syns[1:]):
            out.append((prev, nxt, "early TCP timeouts"))
    data = frames.filter(
        (pl.col("node") == r.air_tx) & (pl.col("peer") == r.air_rx) & (pl.col("event") == "tx") & (pl.col("kind") == "data")
    )
    if assoc is not None:
        data = data.filter(pl.col("time_ns") >= int(assoc * 1e9))
    if not data.is_empty():
        first_tx = float(data["time_ns"].min()) / 1e9
        clean = mac.filter(
            (pl.col("node") == r.air_tx) & (pl.col("peer") == r.air_rx) & (pl.col("event") == "delivered")
            & (pl.col("attempts") == 1) & (pl.col("time_ns") >= int(first_tx * 1e9))
        )
        if not clean.is_empty():
            out.append((first_tx, float(clean["time_ns"].min()) / 1e9, "initial-rate overestimation"))
    return out


def digest(result: RunResult, name: str = "run", bin_m: float = BIN_M, usable_mbps: float = PRODUCTION_MBPS) -> RunDigest:
    """Digests one run for the cross-run analysis."""
    r = roles(result)
    frames, events, mac = table(result, "frames"), table(result, "events"), table(result, "mac")
    ap_rows = frames.filter(pl.col("node") == r.ap).sort("time_ns")
    if ap_rows.is_empty():
        raise ValueError(f"node '{r.ap}' has no radio trace to take its position from")
    ap_x = float(ap_rows["x"][0])
    track = _track(frames, events, r.station, ap_x)
    tt, tp = track["time_s"].to_numpy(), track["pos_m"].to_numpy()

    def binned(df: pl.DataFrame) -> pl.DataFrame:
        pos = np.interp(df["time_ns"].to_numpy() / 1e9, tt, tp)
        return df.with_columns(pl.Series("bin", np.floor(pos / bin_m).astype(np.int64)))

    lo, hi = int(math.floor(tp.min() / bin_m)), int(math.floor(tp.max() / bin_m))
    edges = np.arange(lo, hi + 2) * bin_m
    t_edges = np.interp(edges, tp, tt)
    bins = pl.DataFrame({"bin": np.arange(lo, hi + 1), "start_m": edges[:-1], "time_s": np.diff(t_edges)})

    delivered = table(result, "transport").filter(
        (pl.col("node") == r.receiver) & (pl.col("peer") == r.sender) & (pl.col("proto") == "tcp")
    ).sort("time_ns")
    by_bin = binned(delivered).group_by("bin").agg(pl.col("bytes").cast(pl.Int64).sum())
    heard = frames.filter((pl.col("node") == r.station) & (pl.col("peer") == r.ap) & (pl.col("event") == "rx") & pl.col("rssi_dbm").is_not_nan())
    rssi = binned(heard).group_by("bin").agg(pl.col("rssi_dbm").cast(pl.Float64).sum().alias("rssi_sum"), pl.len().cast(pl.Int64).alias("rssi_n"))
    bins = bins.join(by_bin, on="bin", how="left").join(rssi, on="bin", how="left").fill_null(0).select(list(_BIN_SCHEMA)).cast(_BIN_SCHEMA)

    rate_rows = []
    for who, src, dst in (("sender", r.air_tx, r.air_rx), ("receiver", r.air_rx, r.air_tx)):
        tx = frames.filter((pl.col("node") == src) & (pl.col("peer") == dst) & (pl.col("event") == "tx") & (pl.col("kind") == "data"))
        rate_rows.append(binned(tx).group_by("bin", "rate_mbps").agg(pl.len().alias("frames")).with_columns(pl.lit(who).alias("who")))
    rates = pl.concat(rate_rows).select(list(_RATE_SCHEMA)).cast(_RATE_SCHEMA).sort("who", "bin", "rate_mbps")

    ev = _between(events.with_columns((pl.col("time_ns") / 1e9).alias("t")), r)
    times = delivered["time_ns"].to_numpy() / 1e9
    usable = usable_time(times, delivered["bytes"].to_numpy(), usable_mbps)
    milestones = {
        "first-beacon": _first(ev, r.station, "first-beacon"),
        "ap-selected": _first(ev, r.station, "ap-selected"),
        "associated": _first(ev, r.station, "associated"),
        "app-start": _first(ev, r.sender, "app-start"),
        "arp-resolved": _first(ev, r.air_tx, "arp-resolved"),
        "established": _first(ev, r.sender, "established"),
        "first-data": float(times[0]) if len(times) else None,
    }
    return RunDigest(
        name=name,
        data_mb=float(delivered["bytes"].cast(pl.Int64).sum()) / 1e6,
        bins=bins, rates=rates, track=track, milestones=milestones,
        intervals=setup_intervals(ev, frames, mac, r),
        timeouts=_times(ev, r.sender, "tcp-timeout"),
        usable_s=usable, end_s=float(times[-1]) if len(times) else None,
        standard=str(result.scenario.get("radio", {}).get("standard", "802.11g")),
    )


def load_digest(run_dir: str | Path) -> RunDigest:
    """A run directory's digest: its driveby.json, else (missing, or from
    another version) computed from its traces."""
    d = Path(run_dir)
    f = d / DIGEST_FILE
    if f.is_file():
        try:
            return RunDigest.from_json(f.read_text(encoding="utf-8"))
        except (ValueError, KeyError, TypeError):
            pass
    return digest(RunResult.load(d), name=d.name)


def setup_breakdown(intervals: Sequence[tuple[float, float, str]], t0: float, t1: float) -> dict[str, float]:
    """Seconds of [t0, t1] under each label of SETUP_LABELS (see the module
    doc); the values sum to max(t1 - t0, 0)."""
    out = dict.fromkeys(SETUP_LABELS, 0.0)
    if t1 <= t0:
        return out
    cuts = sorted({t0, t1, *(min(max(x, t0), t1) for a, b, _ in intervals for x in (a, b))})
    for a, b in zip(cuts, cuts[1:]):
        mid = (a + b) / 2
        covering = [label for s, e, label in intervals if s <= mid < e]
        label = min(covering, key=_PRIORITY.index) if covering else "other"
        out[label] += b - a
    return out


# ---------------------------------------------------------------- across runs

def potential_rate(rssi_dbm: float, sensitivities: Sequence[tuple[float, float]],
                   noise_floor_dbm: float = NOISE_FLOOR_DBM) -> float | None:
    """The highest rate whose minimum sensitivity, as an SNR over the noise
    floor, the mean RSSI meets (Hadaller §5); None below every rate."""
    if rssi_dbm is None or math.isnan(rssi_dbm):
        return None
    snr = rssi_dbm - noise_floor_dbm
    ok = [rate for rate, sens in sensitivities if snr >= sens - noise_floor_dbm]
    return max(ok) if ok else None


@dataclass
class Phases:
    entry_start_m: float
    production_start_m: float
    production_end_m: float
    exit_end_m: float
    share: dict[str, float] = field(default_factory=dict)  # of supremum data, per phase


@dataclass
class Analysis:
    bins: pl.DataFrame  # per bin: start_m, centre_m, time_s, runs, mean/ci/sup goodput, rssi, potential
    per_run: pl.DataFrame  # per run: data, milestone positions, setup delay and breakdown, losses
    rates: pl.DataFrame  # per bin, who, rate: frames over all runs
    run_goodput: pl.DataFrame  # per run and bin: goodput, mean sender rate
    supremum_mb: float
    potential_mb: float
    phases: Phases | None
    production_gap: float
    ack_penalty: float
    profile: list[RateProfile]


def _phases(bins: pl.DataFrame, bin_m: float, production_mbps: float) -> Phases | None:
    up = bins.filter(pl.col("sup_mbps") > 0)
    prod = bins.filter(pl.col("sup_mbps") > production_mbps)
    if up.is_empty() or prod.is_empty():
        return None
    p = Phases(float(up["start_m"].min()), float(prod["start_m"].min()), float(prod["start_m"].max()) + bin_m,
               float(up["start_m"].max()) + bin_m)
    p.share = phase_shares(bins, p)
    return p


def phase_shares(bins: pl.DataFrame, p: Phases) -> dict[str, float]:
    """Share of the supremum data in `bins` that falls in each of the
    phases `p` bounds (entry, production, exit)."""
    mb = bins.with_columns((pl.col("sup_mbps") * pl.col("time_s") / 8).alias("mb"))
    total = float(mb["mb"].sum()) or 1.0
    return {name: float(mb.filter((pl.col("start_m") >= lo) & (pl.col("start_m") < hi))["mb"].sum()) / total
            for name, lo, hi in (("entry", -math.inf, p.production_start_m),
                                 ("production", p.production_start_m, p.production_end_m),
                                 ("exit", p.production_end_m, math.inf))}


def _lost_fraction(bins: pl.DataFrame, bin_m: float, cut_m: float | None, before: bool) -> float:
    """Share of supremum data in the road before (or after) `cut_m`."""
    sup = bins["sup_mbps"].to_numpy() * bins["time_s"].to_numpy()
    total = sup.sum()
    if total <= 0:
        return math.nan
    if cut_m is None:
        return 1.0
    start = bins["start_m"].to_numpy()
    frac = np.clip((cut_m - start) / bin_m, 0, 1) if before else np.clip((start + bin_m - cut_m) / bin_m, 0, 1)
    return float((sup * frac).sum() / total)


def production_gap(bins: pl.DataFrame, p: Phases, bin_m: float = BIN_M) -> float:
    """§6.3.2: how far the mean goodput over runs falls below the supremum
    in the middle half of the production phase `p` (bins whose centre lies
    between a quarter and three quarters of its length), as a share of the
    supremum. NaN if no bin lies there."""
    span = p.production_end_m - p.production_start_m
    lo, hi = p.production_start_m + span / 4, p.production_end_m - span / 4
    centre = pl.col("start_m") + bin_m / 2
    mid = bins.filter((centre >= lo) & (centre <= hi))
    sup = float(mid["sup_mbps"].sum())
    return 1 - float(mid["mean_mbps"].sum()) / sup if sup > 0 else math.nan


def ack_rate_penalty(rates: pl.DataFrame, profile: Sequence[RateProfile], lo_m: float, hi_m: float, bin_m: float = BIN_M) -> float:
    """§6.3.2: the goodput lost because the receiver's TCP ACKs go at its own
    rates rather than the sender's, over bins starting in [lo_m, hi_m) (see
    the module doc for the formula). NaN without frames of both ends."""
    by_rate = {round(p.rate_mbps, 3): p for p in profile if not math.isnan(p.ack_us_per_mbit) and p.goodput_mbps > 0}
    inside = rates.filter((pl.col("bin") * bin_m >= lo_m) & (pl.col("bin") * bin_m < hi_m))

    def shares(who: str) -> dict[float, float]:
        w = inside.filter(pl.col("who") == who).group_by("rate_mbps").agg(pl.col("frames").sum())
        counts = {round(r, 3): float(n) for r, n in w.iter_rows() if round(r, 3) in by_rate}
        total = sum(counts.values())
        return {r: n / total for r, n in counts.items()} if total else {}

    p, q = shares("sender"), shares("receiver")
    if not p or not q:
        return math.nan
    base = sum(pd * by_rate[d].goodput_mbps for d, pd in p.items())
    with_acks = 0.0
    for d, pd in p.items():
        g, a_d = by_rate[d].goodput_mbps, by_rate[d].ack_us_per_mbit
        for a, qa in q.items():
            seconds_per_mbit = 1 / g + (by_rate[a].ack_us_per_mbit - a_d) * 1e-6
            with_acks += pd * qa / seconds_per_mbit
    return 1 - with_acks / base


def analyze(digests: Sequence[RunDigest], profile: Sequence[RateProfile], bin_m: float = BIN_M, production_mbps: float = PRODUCTION_MBPS,
            noise_floor_dbm: float = NOISE_FLOOR_DBM) -> Analysis:
    """The cross-run analysis of digested runs (same scenario, same road;
    the first run's radio standard gives the rates of the potential)."""
    if not digests:
        raise ValueError("no runs to analyze")
    standard = digests[0].standard
    run_bins = pl.concat([d.bins.with_columns(pl.lit(i).alias("run")) for i, d in enumerate(digests)]).with_columns(
        (pl.col("bytes") * 8 / 1e6 / pl.col("time_s")).fill_nan(0.0).alias("goodput_mbps")
    )
    n = len(digests)

    def ci(values: list[float]) -> float:
        half = mean_ci(values)[1]
        return half if math.isfinite(half) else math.nan

    grouped = run_bins.group_by("bin").agg(
        pl.col("start_m").first(), pl.col("time_s").median(), pl.len().alias("runs"),
        pl.col("goodput_mbps").mean().alias("mean_mbps"), pl.col("goodput_mbps").max().alias("sup_mbps"),
        pl.col("goodput_mbps"), pl.col("rssi_sum").sum(), pl.col("rssi_n").sum(),
    ).sort("bin")
    # A run that never reached a bin delivered nothing there: count it as 0.
    gp = [list(v) + [0.0] * (n - len(v)) for v in grouped["goodput_mbps"].to_list()]
    sens = [(m, s) for m, _, s in _native.rate_thresholds(standard, 1500)]
    static = {round(p.rate_mbps, 3): p.goodput_mbps for p in profile}
    rssi = [s / k if k else math.nan for s, k in zip(grouped["rssi_sum"], grouped["rssi_n"])]
    prates = [potential_rate(x, sens, noise_floor_dbm) for x in rssi]
    bins = grouped.drop("goodput_mbps", "rssi_sum", "rssi_n").with_columns(
        (pl.col("start_m") + bin_m / 2).alias("centre_m"),
        pl.Series("mean_mbps", [statistics.fmean(v) for v in gp]),
        pl.Series("ci95_mbps", [ci(v) for v in gp]),
        pl.Series("rssi_dbm", rssi),
        pl.Series("potential_rate_mbps", prates, dtype=pl.Float64),
        pl.Series("potential_mbps", [static.get(round(r, 3), 0.0) if r is not None else 0.0 for r in prates]),
    )
    supremum_mb = float((bins["sup_mbps"] * bins["time_s"]).sum()) / 8
    potential_mb = float((bins["potential_mbps"] * bins["time_s"]).sum()) / 8
    phases = _phases(bins, bin_m, production_mbps)

    rows = []
    for d in digests:
        t0 = d.time_at(phases.entry_start_m) if phases else (d.milestones.get("first-beacon") or 0.0)
        usable, end = d.usable_m, d.end_m
        delay = d.usable_s - t0 if d.usable_s is not None else math.nan
        parts = setup_breakdown(d.intervals, t0, d.usable_s if d.usable_s is not None else t0)
        rows.append({
            "run": d.name, "data_mb": d.data_mb, "first_beacon_m": d.pos(d.milestones.get("first-beacon")),
            "selected_m": d.pos(d.milestones.get("ap-selected")), "usable_m": usable, "end_m": end, "setup_delay_s": delay,
            **{f"setup:{k}": v for k, v in parts.items()},
            "setup_loss": _lost_fraction(bins, bin_m, usable, before=True),
            "exit_loss": _lost_fraction(bins, bin_m, end, before=False) if end is not None else math.nan,
            "tcp_timeouts": len(d.timeouts),
        })
    per_run = pl.DataFrame(rows)
    rates = pl.concat([d.rates for d in digests]).group_by("bin", "who", "rate_mbps").agg(pl.col("frames").sum()).sort("who", "bin", "rate_mbps")
    sender_rate = pl.concat([
        d.rates.filter(pl.col("who") == "sender").group_by("bin").agg(
            ((pl.col("rate_mbps") * pl.col("frames")).sum() / pl.col("frames").sum()).alias("mean_rate_mbps")
        ).with_columns(pl.lit(i).alias("run")) for i, d in enumerate(digests)
    ])
    run_goodput = run_bins.select("run", "bin", "start_m", "goodput_mbps").join(sender_rate, on=["run", "bin"], how="left").sort("run", "bin")
    penalty = ack_rate_penalty(rates, profile, phases.production_start_m, phases.production_end_m, bin_m) if phases else math.nan
    gap = production_gap(bins, phases, bin_m) if phases else math.nan
    return Analysis(bins, per_run, rates, run_goodput, supremum_mb, potential_mb, phases, gap, penalty, list(profile))


def run_dirs(root: str | Path) -> list[Path]:
    """Run directories under `root` (each with a summary.json), sorted."""
    root = Path(root)
    return sorted(p.parent for p in root.rglob("summary.json"))


def analyze_dirs(dirs: Sequence[str | Path], static_scenario: str = "static-lab", workers: int | None = None) -> Analysis:
    """Analyzes saved run directories (from `wayside run` or `wayside sweep`)."""
    from wayside.staticlab import static_profile

    if not dirs:
        raise ValueError("no run directories to analyze")
    digests = [load_digest(d) for d in dirs]
    return analyze(digests, static_profile(static_scenario, workers=workers))
