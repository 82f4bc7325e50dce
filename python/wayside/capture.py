"""Measured drive-bys in: a capture directory (sniffer captures and GPS
logs of one or more runs past an AP, described by its capture.toml) turned
into run directories like the ones `wayside run` writes, so that the
drive-by analysis and report of simulated runs run on it unchanged.

Per run: the sniffers' captures are read (`wayside.pcapread`), put on one
clock and merged (`wayside.sniffers`); the GPS logs are corrected as
Hadaller et al. (2007) Table 2 did (`wayside.gpscorrect`, over all runs at
once, since the measurement delay comes from runs in opposite directions);
then the trace tables are rebuilt from what was on the air:

- frames: a `tx` row per transmission at its transmitter (ACK and CTS,
  which carry no transmitter address, at the receiver of the frame they
  answer), an `rx` row at a node for every copy a sniffer standing for that
  node's radio caught (`near`), with that sniffer's signal strength.
  Frames of other networks, action and null frames and frames with a bad
  FCS are left out (their addresses cannot be trusted or they take no part
  in the exchange);
- mac: per unicast MSDU (transmitter, receiver, sequence number) the
  number of airings and whether an ACK followed one; `received` at the
  receiver when one did;
- transport: the TCP receiver's in-order data, advanced by every data
  segment the MAC acknowledged and every cumulative TCP ACK the receiver
  sent;
- events: from the frames: first beacon heard near the station, AP
  selection (a capture sees only its outcome, the first authentication
  request, and each one after a failure), authentication and association
  requests, responses and inferred timeouts (a new request with no
  response to the previous one), disassociation, ARP request and reply,
  application start (inferred: the sender's first ARP request or SYN
  after association), SYN and its retransmissions, establishment (the
  SYN-ACK), TCP timeouts (inferred: a segment sent again at least
  `TCP_RETRANSMIT_GAP_S` after its previous transmission);
- tcp: empty. A capture does not show a sender's congestion window,
  slow-start threshold or RTO.

Captures do not record what only the hosts know: frames the sniffers all
missed, which rate-control state chose a rate, why a frame was lost, MAC
queue drops and the time an application really started."""

from __future__ import annotations

import heapq
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import tomli_w

from wayside import gpscorrect, sniffers
from wayside.analysis import MAC_OVERHEAD_BYTES
from wayside.gpslog import read_log
from wayside.pcapread import BROADCAST, RECORD_SCHEMA, read_capture
from wayside.result import RunResult
from wayside.traces import seconds

MANIFEST = "capture.toml"
# A TCP segment seen again this long after its previous transmission was
# sent again by TCP, not by the MAC: Linux's minimum RTO is 200 ms
# (RFC 6298 allows 1 s), while a MAC retry chain lasts tens of ms.
TCP_RETRANSMIT_GAP_S = 0.2
# An ACK (or CTS) answers a frame when it follows it within the frame's
# airtime at its rate plus this (SIFS and preambles, whether a sniffer
# stamps a frame's start or its end).
ACK_SLACK_S = 1e-3
ROLES = ("ap", "sta", "host")
_TABLE_KINDS = {"data", "ack", "rts", "cts", "beacon", "probe-req", "probe-resp", "auth", "assoc-req", "assoc-resp",
                "disassoc", "deauth"}


class CaptureDirError(ValueError):
    """A capture directory that cannot be analysed."""


@dataclass(frozen=True)
class Node:
    name: str
    role: str
    mac: str
    ip: str
    gps: str


@dataclass(frozen=True)
class Sniffer:
    file: str
    host: str
    near: str

    @property
    def name(self) -> str:
        return Path(self.file).stem


@dataclass
class Manifest:
    nodes: list[Node]
    sniffers: list[Sniffer]
    sender: str
    receiver: str
    delay_s: float | None
    reference: str
    clock: dict[str, float] = field(default_factory=dict)

    def node(self, role: str) -> Node:
        return next(n for n in self.nodes if n.role == role)


def _need(table: dict[str, Any], key: str, where: str, what: str) -> Any:
    if key not in table:
        raise CaptureDirError(f"{MANIFEST}: {where} lacks `{key}` ({what})")
    return table[key]


def read_manifest(root: Path) -> Manifest:
    """Reads and checks ROOT/capture.toml (see docs/captures.md)."""
    path = root / MANIFEST
    if not path.is_file():
        raise CaptureDirError(f"{root}: no {MANIFEST}; a capture directory describes its nodes, sniffers and "
                              "application in one (see docs/captures.md)")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CaptureDirError(f"{path}: not TOML ({e})") from None
    nodes = []
    for i, n in enumerate(doc.get("node", [])):
        where = f"[[node]] {i}"
        role = _need(n, "role", where, "ap, sta or host")
        if role not in ROLES:
            raise CaptureDirError(f"{MANIFEST}: {where}: role '{role}' is not allowed; allowed: {', '.join(ROLES)}")
        mac = str(n.get("mac", "")).lower()
        if role != "host" and len(mac.split(":")) != 6:
            raise CaptureDirError(f"{MANIFEST}: {where}: mac '{mac}' is not a MAC address like 00:11:22:33:44:55")
        nodes.append(Node(_need(n, "name", where, "the node's name"), role, mac, str(n.get("ip", "")), str(n.get("gps", ""))))
    names = {n.name for n in nodes}
    for role in ("ap", "sta"):
        count = sum(n.role == role for n in nodes)
        if count != 1:
            raise CaptureDirError(f"{MANIFEST}: needs exactly one node with role = \"{role}\", has {count}")
    for n in nodes:
        if n.role != "host" and not n.gps:
            raise CaptureDirError(f"{MANIFEST}: node '{n.name}' lacks `gps` (its GPS log's file name in each run directory)")
    sniffer_list = []
    for i, s in enumerate(doc.get("sniffer", [])):
        where = f"[[sniffer]] {i}"
        host = str(_need(s, "host", where, "the host whose clock stamps it"))
        near = str(s.get("near", host))
        if near not in names:
            raise CaptureDirError(f"{MANIFEST}: {where}: near = '{near}' is not a node; nodes: {', '.join(sorted(names))}")
        sniffer_list.append(Sniffer(str(_need(s, "file", where, "the capture's file name")), host, near))
    if not sniffer_list:
        raise CaptureDirError(f"{MANIFEST}: no [[sniffer]]; give at least one capture file")
    app = _need(doc, "app", "the top level", "the bulk TCP flow: from, to")
    sender, receiver = _need(app, "from", "[app]", "the sending node"), _need(app, "to", "[app]", "the receiving node")
    for end in (sender, receiver):
        if end not in names:
            raise CaptureDirError(f"{MANIFEST}: [app]: '{end}' is not a node; nodes: {', '.join(sorted(names))}")
        if not next(n for n in nodes if n.name == end).ip:
            raise CaptureDirError(f"{MANIFEST}: node '{end}' ends the TCP flow but has no `ip`")
    gps = doc.get("gps", {})
    delay = gps.get("delay", "auto")
    try:
        delay_s = None if delay == "auto" else seconds(delay, "gps.delay")
        clock = {str(h): seconds(v, f"clock.{h}") for h, v in doc.get("clock", {}).items()}
    except ValueError as e:
        raise CaptureDirError(f"{MANIFEST}: {e}") from None
    ap = next(n for n in nodes if n.role == "ap").name
    return Manifest(nodes, sniffer_list, sender, receiver, delay_s, str(gps.get("reference", ap)), clock)


def run_dirs(root: Path, manifest: Manifest) -> list[Path]:
    """The runs: every subdirectory holding a sniffer's file, else ROOT."""
    files = {s.file for s in manifest.sniffers}
    found = sorted(d for d in root.iterdir() if d.is_dir() and any((d / f).is_file() for f in files))
    if found:
        return found
    if any((root / f).is_file() for f in files):
        return [root]
    raise CaptureDirError(f"{root}: no run directory holds any of {', '.join(sorted(files))}")


# ---------------------------------------------------------------- one run, on the reference clock


@dataclass
class RunCapture:
    name: str
    records: pl.DataFrame  # every sniffer's records, on the reference clock
    air: pl.DataFrame  # merged transmissions
    offsets: sniffers.Offsets
    logs: dict[str, pl.DataFrame]  # per radio node, on the reference clock


def read_run(directory: Path, m: Manifest) -> RunCapture:
    parts = []
    for s in m.sniffers:
        f = directory / s.file
        if f.is_file():
            parts.append(read_capture(f, s.name))
    records = pl.concat(parts) if parts else pl.DataFrame(schema=RECORD_SCHEMA)
    hosts = {s.name: s.host for s in m.sniffers if (directory / s.file).is_file()}
    try:
        offsets = sniffers.clock_offsets(records.filter(~pl.col("bad_fcs")), hosts, m.reference, m.clock)
    except sniffers.MergeError as e:
        raise CaptureDirError(f"{directory.name}: {e}") from None
    air = sniffers.merge(records.filter(~pl.col("bad_fcs")), hosts, offsets)
    shift = pl.DataFrame({"sniffer": list(hosts), "offset": [offsets.seconds[h] for h in hosts.values()]})
    on_ref = records.join(shift, on="sniffer", how="left").with_columns(pl.col("time_s") - pl.col("offset")).drop("offset")
    logs = {}
    for n in m.nodes:
        if n.role == "host":
            continue
        if n.name not in offsets.seconds:
            raise CaptureDirError(f"{directory.name}: the GPS log of '{n.name}' is stamped by its own clock, but no "
                                  f"sniffer runs on host '{n.name}' to place it; give [clock] {n.name} = \"N ms\"")
        log = read_log(directory / n.gps)
        logs[n.name] = log.with_columns(pl.col("time_s") - offsets.seconds[n.name])
    return RunCapture(directory.name, on_ref, air, offsets, logs)


def _rssi_at(run: RunCapture, m: Manifest, node: str, from_mac: str) -> pl.DataFrame:
    near = [s.name for s in m.sniffers if s.near == node]
    heard = pl.col("sniffer").is_in(near) & (pl.col("ta") == from_mac) & ~pl.col("bad_fcs")
    return run.records.filter(heard).select("time_s", "rssi_dbm")


# ---------------------------------------------------------------- tables


def _airtime_s() -> pl.Expr:
    return (pl.col("bytes").cast(pl.Float64) * 8 / pl.col("rate_mbps").fill_nan(1.0).cast(pl.Float64) / 1e6)


def _standard(air: pl.DataFrame) -> str:
    rates = set(air["rate_mbps"].drop_nans().round(1).to_list())
    return "802.11g" if rates - {1.0, 2.0, 5.5, 11.0} else "802.11b"


class _Positions:
    """Where each node was at a time (road metres from the AP)."""

    def __init__(self, m: Manifest, run: gpscorrect.CorrectedRun):
        self.sta = m.node("sta").name
        self.run = run

    def at(self, node: pl.Series, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The station where its GPS put it, every other node at the AP's
        position (0, 0), and NaN for "broadcast" (as the simulator does)."""
        x, y = self.run.position(t)
        moving = (node == self.sta).to_numpy()
        nowhere = (node == "broadcast").to_numpy()
        return (np.where(nowhere, np.nan, np.where(moving, x, 0.0)),
                np.where(nowhere, np.nan, np.where(moving, y, 0.0)))


def _with_xy(df: pl.DataFrame, pos: _Positions, node: str = "node", prefix: str = "") -> pl.DataFrame:
    if df.is_empty():
        return df.with_columns(pl.lit(0.0, pl.Float32).alias(prefix + "x"), pl.lit(0.0, pl.Float32).alias(prefix + "y"))
    x, y = pos.at(df[node], df["time_s"].to_numpy())
    return df.with_columns(pl.Series(prefix + "x", x, pl.Float32), pl.Series(prefix + "y", y, pl.Float32))


def _ns(t0: float) -> pl.Expr:
    return ((pl.col("time_s") - t0) * 1e9).round().cast(pl.UInt64).alias("time_ns")


def _frames(air: pl.DataFrame, names: dict[str, str]) -> pl.DataFrame:
    """Transmissions between the manifest's nodes, with node, peer and
    outcome. An ACK or CTS is sent by the receiver of the last unicast frame
    before it from the station it answers; a unicast frame is acked when
    such an answer follows it within its airtime and ACK_SLACK_S."""
    air = air.filter(pl.col("kind").is_in(list(_TABLE_KINDS))).with_row_index("row")
    answer = pl.col("kind").is_in(["ack", "cts"])
    solicits = air.filter(~answer & (pl.col("ra") != BROADCAST)).sort("time_s")
    answers = air.filter(answer).sort("time_s")
    window = 0.02  # longer than any frame's airtime at 1 Mb/s (2346 B: 19 ms)
    sent_by = answers.join_asof(
        solicits.select(pl.col("time_s").alias("sol_t"), pl.col("time_s"), pl.col("ta").alias("ra"), pl.col("ra").alias("answerer")),
        on="time_s", by="ra", strategy="backward", tolerance=window, check_sortedness=False)
    got = solicits.join_asof(
        answers.select(pl.col("time_s"), pl.col("time_s").alias("answer_t"), pl.col("ra").alias("ta"), pl.col("kind").alias("answer")),
        on="time_s", by="ta", strategy="forward", tolerance=window, check_sortedness=False)
    wants = pl.when(pl.col("kind") == "rts").then(pl.lit("cts")).otherwise(pl.lit("ack"))
    acked = got.filter((pl.col("answer") == wants)
                       & (pl.col("answer_t") - pl.col("time_s") <= _airtime_s() + ACK_SLACK_S))["row"].to_list()
    air = air.join(sent_by.select("row", "answerer"), on="row", how="left").with_columns(
        pl.when(answer).then(pl.col("answerer")).otherwise(pl.col("ta")).alias("ta"))
    mapping = pl.DataFrame({"mac": list(names), "name": list(names.values())})
    air = air.join(mapping.rename({"mac": "ta", "name": "node"}), on="ta", how="inner")
    air = air.join(mapping.rename({"mac": "ra", "name": "peer"}), on="ra", how="left").with_columns(
        pl.when(pl.col("ra") == BROADCAST).then(pl.lit("broadcast")).otherwise(pl.col("peer")).alias("peer"))
    unicast = (pl.col("peer") != "broadcast") & ~answer
    return air.filter(pl.col("peer").is_not_null()).with_columns(
        pl.when(~unicast).then(pl.lit("")).when(pl.col("row").is_in(acked)).then(pl.lit("acked"))
        .otherwise(pl.lit("unacked")).alias("outcome"),
        pl.col("kind").replace({"deauth": "disassoc"}),
    ).drop("row", "answerer").pipe(_attempts).sort("time_s", "node", "seq", "kind")


def _attempts(tx: pl.DataFrame) -> pl.DataFrame:
    """The 0-based attempt of each airing within its MSDU: the airings of
    one (node, peer, sequence number) from a first transmission through
    the retries that follow it."""
    d = tx.sort("node", "peer", "seq", "time_s")
    new = ((pl.col("node") != pl.col("node").shift(1)) | (pl.col("peer") != pl.col("peer").shift(1))
           | (pl.col("seq") != pl.col("seq").shift(1)) | ~pl.col("retry")).fill_null(True)
    d = d.with_columns(new.cum_sum().alias("msdu"))
    return d.with_columns(pl.int_range(pl.len()).over("msdu").cast(pl.UInt8).alias("attempt"))


def _msdus(tx: pl.DataFrame) -> pl.DataFrame:
    """Unicast data MSDUs (see `_attempts`): airings, and whether one was acked."""
    d = tx.filter((pl.col("kind") == "data") & (pl.col("peer") != "broadcast"))
    return d.group_by("msdu").agg(
        pl.col("node").first(), pl.col("peer").first(), pl.col("seq").first(), pl.col("bytes").first(),
        pl.len().alias("attempts"), (pl.col("outcome") == "acked").any().alias("ok"),
        pl.col("time_s").filter(pl.col("outcome") == "acked").first().alias("acked_s"), pl.col("time_s").last().alias("last_s"),
    ).sort("last_s", "node", "seq")


def _deliveries(tx: pl.DataFrame, sender_ip: str, receiver_ip: str) -> pl.DataFrame:
    """In-order TCP data at the receiver, from the transmissions: time_s,
    bytes of each advance and the total so far. Data segments count when
    the MAC acknowledged them, the receiver's cumulative ACKs when sent."""
    tcp = tx.filter(pl.col("proto") == "tcp")
    flow = tcp.filter((pl.col("ip_src") == sender_ip) & (pl.col("ip_dst") == receiver_ip))
    acks = tcp.filter((pl.col("ip_src") == receiver_ip) & (pl.col("ip_dst") == sender_ip) & ((pl.col("tcp_flags") & 0x10) != 0))
    empty = pl.DataFrame(schema={"time_s": pl.Float64, "bytes": pl.Int64, "total": pl.Int64})
    data = flow.filter(pl.col("payload") > 0)
    if data.is_empty():
        return empty
    syn = flow.filter((pl.col("tcp_flags") & 0x02) != 0)
    isn = int(syn["tcp_seq"][0]) + 1 if not syn.is_empty() else int(data["tcp_seq"].min())
    wrap = 1 << 32
    events = [(t, (q - isn) % wrap, (q - isn) % wrap + n)
              for t, q, n in data.filter(pl.col("outcome") == "acked").select("time_s", "tcp_seq", "payload").iter_rows()]
    # An ACK number before the flow's start (wrapped past half the space) says nothing.
    events += [(t, -1, (a - isn) % wrap) for t, a in acks.select("time_s", "tcp_ack").iter_rows() if (a - isn) % wrap < wrap // 2]
    events.sort()
    nxt, pending, out = 0, [], []
    for t, start, end in events:
        before = nxt
        if start <= nxt:
            nxt = max(nxt, end)
        else:
            heapq.heappush(pending, (start, end))
        while pending and pending[0][0] <= nxt:
            nxt = max(nxt, heapq.heappop(pending)[1])
        if nxt > before:
            out.append((t, nxt - before, nxt))
    return pl.DataFrame(out, schema=empty.schema, orient="row") if out else empty


def _events(frames: pl.DataFrame, air: pl.DataFrame, m: Manifest) -> pl.DataFrame:
    ap, sta = m.node("ap"), m.node("sta")
    sender = next(n for n in m.nodes if n.name == m.sender)
    receiver = next(n for n in m.nodes if n.name == m.receiver)
    air_tx = sender.name if sender.role != "host" else ap.name
    rows: list[tuple[float, str, str, str, float]] = []
    tx = frames.filter(pl.col("event") == "tx")

    def sent(node: str, peer: str, kind: str) -> pl.DataFrame:
        return tx.filter((pl.col("node") == node) & (pl.col("peer") == peer) & (pl.col("kind") == kind) & ~pl.col("retry"))

    heard = frames.filter((pl.col("event") == "rx") & (pl.col("node") == sta.name) & (pl.col("peer") == ap.name)
                          & pl.col("kind").is_in(["beacon", "probe-resp"]))
    if not heard.is_empty():
        rows.append((float(heard["time_s"][0]), sta.name, ap.name, "first-beacon", float(heard["rssi_dbm"][0])))
    requests = []
    for kind, req, ok, timeout in (("auth", "auth-request", "auth-ok", "auth-timeout"),
                                   ("assoc-req", "assoc-request", None, "assoc-timeout")):
        asked = sent(sta.name, ap.name, kind)["time_s"].to_list()
        answered = (sent(ap.name, sta.name, "auth" if kind == "auth" else "assoc-resp")
                    .filter(pl.col("status") == 0)["time_s"].to_list())
        for i, t in enumerate(asked):
            rows.append((t, sta.name, ap.name, req, float(i + 1)))
            requests.append((t, kind))
            if i + 1 < len(asked) and not any(t < a < asked[i + 1] for a in answered):
                rows.append((asked[i + 1], sta.name, ap.name, timeout, math.nan))
        if ok:
            rows += [(t, sta.name, ap.name, ok, math.nan) for t in answered]
        else:
            for t in answered:
                rows += [(t, sta.name, ap.name, "associated", math.nan), (t, ap.name, sta.name, "associated", math.nan)]
    for t in tx.filter(pl.col("kind") == "disassoc")["time_s"].to_list():
        rows += [(t, sta.name, ap.name, "disassociated", math.nan), (t, ap.name, sta.name, "disassociated", math.nan)]
    # AP selection shows only in its outcome: the first authentication
    # request, and the first after each failure.
    failures = sorted(r[0] for r in rows if r[3] in ("auth-timeout", "assoc-timeout", "disassociated"))
    selected = -math.inf
    for t in sorted(t for t, k in requests if k == "auth"):
        if selected == -math.inf or any(selected < f <= t for f in failures):
            rows.append((t, sta.name, ap.name, "ap-selected", math.nan))
            selected = t
    assoc = min((r[0] for r in rows if r[3] == "associated"), default=-math.inf)
    arp = air.filter((pl.col("proto") == "arp") & (pl.col("time_s") >= assoc))
    who_has = arp.filter((pl.col("arp_op") == 1) & (pl.col("ta") == next(n.mac for n in m.nodes if n.name == air_tx)))
    replies = arp.filter(pl.col("arp_op") == 2)
    for t in who_has["time_s"].to_list()[:1]:
        rows.append((t, air_tx, m.receiver, "arp-request", math.nan))
        got = replies.filter(pl.col("time_s") > t)
        if not got.is_empty():
            rows.append((float(got["time_s"][0]), air_tx, m.receiver, "arp-resolved", math.nan))
    tcp = air.filter((pl.col("proto") == "tcp") & (pl.col("time_s") >= assoc))
    syns = tcp.filter((pl.col("ip_src") == sender.ip) & (pl.col("ip_dst") == receiver.ip) & ((pl.col("tcp_flags") & 0x12) == 0x02))
    syns = _tcp_sends(syns)
    starts = [*who_has["time_s"].to_list()[:1], *syns["time_s"].to_list()[:1]]
    if starts:
        rows.append((min(starts), m.sender, m.receiver, "app-start", math.nan))
    for i, t in enumerate(syns["time_s"].to_list()):
        rows.append((t, m.sender, m.receiver, "syn" if i == 0 else "syn-retransmit", math.nan))
    synack = tcp.filter((pl.col("ip_src") == receiver.ip) & ((pl.col("tcp_flags") & 0x12) == 0x12))
    if not synack.is_empty():
        rows.append((float(synack["time_s"][0]), m.sender, m.receiver, "established", math.nan))
    data = tcp.filter((pl.col("ip_src") == sender.ip) & (pl.col("ip_dst") == receiver.ip) & (pl.col("payload") > 0))
    again = _tcp_sends(data).filter(pl.col("gap").is_not_null())
    rows += [(t, m.sender, m.receiver, "tcp-timeout", 2 * g) for t, g in again.select("time_s", "gap").iter_rows()]
    return pl.DataFrame(rows, schema={"time_s": pl.Float64, "node": pl.Utf8, "peer": pl.Utf8, "event": pl.Utf8,
                                      "value": pl.Float64}, orient="row").sort("time_s", "node", "event")


def _tcp_sends(segments: pl.DataFrame) -> pl.DataFrame:
    """TCP's own transmissions among airings of segments: the first airing
    of each sequence number and every one at least TCP_RETRANSMIT_GAP_S
    after the previous airing of it (gap: that time, null for the first)."""
    s = segments.sort("tcp_seq", "time_s").with_columns(
        (pl.col("time_s") - pl.col("time_s").shift(1).over("tcp_seq")).alias("since"))
    keep = s.filter(pl.col("since").is_null() | (pl.col("since") >= TCP_RETRANSMIT_GAP_S))
    return keep.with_columns(pl.col("since").alias("gap")).sort("time_s")


def run_result(run: RunCapture, m: Manifest, corrected: gpscorrect.CorrectedRun, c: gpscorrect.Corrections) -> RunResult:
    """The run's trace tables and scenario (see the module doc)."""
    names = {n.mac: n.name for n in m.nodes if n.mac}
    pos = _Positions(m, corrected)
    starts = [run.records["time_s"].min(), corrected.fix_s[0]]
    t0 = float(min(s for s in starts if s is not None))
    frames = _frames(run.air, names)
    near = {s.name: s.near for s in m.sniffers}
    rx = (frames.select("time_s", "node", "peer", "kind", "rate_mbps", "bytes", "seq", "attempt", "retry", "status",
                        "heard_by", "rssi_by", "noise_dbm")
          .explode("heard_by", "rssi_by")
          .with_columns(pl.col("heard_by").replace_strict(near, default=None).alias("at"))
          .filter(pl.col("at").is_not_null() & (pl.col("at") != pl.col("node")))
          .unique(["time_s", "node", "seq", "kind", "at"], keep="first", maintain_order=True)
          .select("time_s", pl.col("at").alias("node"), pl.col("node").alias("peer"), "kind", "rate_mbps", "bytes", "seq",
                  "attempt", "retry", "status", pl.col("rssi_by").alias("rssi_dbm"), "noise_dbm")
          .with_columns(pl.lit("rx").alias("event"), pl.lit("").alias("outcome")))
    tx = frames.with_columns(pl.lit("tx").alias("event"), pl.lit(float("nan"), pl.Float32).alias("rssi_dbm"))
    cols = ["time_s", "node", "peer", "event", "kind", "rate_mbps", "bytes", "seq", "attempt", "retry", "status",
            "rssi_dbm", "noise_dbm", "outcome"]
    both = pl.concat([tx.select(cols), rx.select(cols)]).sort("time_s", "event", "node")
    both = _with_xy(_with_xy(both, pos), pos, node="peer", prefix="peer_")
    frames_t = both.select(
        _ns(t0), "node", "peer", "event", pl.lit("").alias("reason"), "kind", pl.col("rate_mbps").cast(pl.Float32),
        pl.col("bytes").cast(pl.UInt32), pl.col("seq").clip(0).cast(pl.UInt16), pl.col("attempt").cast(pl.UInt8), "x", "y",
        "peer_x", "peer_y", pl.col("rssi_dbm").cast(pl.Float32),
        (pl.col("rssi_dbm") - pl.col("noise_dbm")).cast(pl.Float32).alias("snr_db"),
        pl.lit(float("nan"), pl.Float32).alias("sinr_db"), "outcome")

    msdus = _msdus(tx.filter(pl.col("event") == "tx"))
    payload = (pl.col("bytes").cast(pl.Int64) - MAC_OVERHEAD_BYTES).clip(0).cast(pl.UInt32)
    sent = msdus.select(pl.col("last_s").alias("time_s"), "node", "peer",
                        pl.when(pl.col("ok")).then(pl.lit("delivered")).otherwise(pl.lit("failed")).alias("event"),
                        "seq", payload.alias("bytes"), pl.col("attempts").cast(pl.UInt8))
    got = msdus.filter(pl.col("ok")).select(pl.col("acked_s").alias("time_s"), pl.col("peer").alias("node"),
                                            pl.col("node").alias("peer"), pl.lit("received").alias("event"), "seq",
                                            payload.alias("bytes"), pl.lit(0, pl.UInt8).alias("attempts"))
    mac = _with_xy(pl.concat([sent, got]).sort("time_s", "node"), pos).select(
        _ns(t0), "node", "peer", "event", pl.col("seq").cast(pl.UInt16), "bytes", "attempts",
        pl.lit(0, pl.UInt64).alias("delay_ns"), "x", "y")

    sender = next(n for n in m.nodes if n.name == m.sender)
    receiver = next(n for n in m.nodes if n.name == m.receiver)
    delivered = _deliveries(frames, sender.ip, receiver.ip).with_columns(
        pl.lit(m.receiver).alias("node"), pl.lit(m.sender).alias("peer"))
    transport = _with_xy(delivered, pos).select(
        _ns(t0), "node", "peer", pl.lit("tcp").alias("proto"), pl.lit(0, pl.UInt32).alias("app"),
        pl.col("total").cast(pl.UInt64).alias("seq"), pl.col("bytes").cast(pl.UInt32), pl.lit(0, pl.UInt64).alias("delay_ns"),
        "x", "y")

    ev = _events(both, run.air, m)
    events = _with_xy(ev, pos).select(_ns(t0), "node", "peer", "event", "x", "y", "value")
    tcp = pl.DataFrame(schema={"time_ns": pl.UInt64, "node": pl.Utf8, "peer": pl.Utf8, "cwnd": pl.UInt32,
                               "ssthresh": pl.UInt32, "srtt_ms": pl.Float32, "rto_ms": pl.Float32, "dupacks": pl.UInt32,
                               "in_flight": pl.UInt32, "acked": pl.UInt32, "x": pl.Float32, "y": pl.Float32})
    end = max(float(run.records["time_s"].max() or t0), float(corrected.fix_s[-1]))
    scenario = {
        "name": f"capture-{run.name}",
        "description": "A measured drive-by, read from its captures and GPS logs by `wayside analyze`",
        "duration": f"{end - t0:.3f} s",
        "radio": {"standard": _standard(run.air)},
        "node": [{"name": n.name, **({"radio": False} if n.role == "host" else {"role": n.role})} for n in m.nodes],
        "app": [{"kind": "tcp-bulk", "from": m.sender, "to": m.receiver}],
        "capture": {
            "gps_delay_s": c.delay_s, "gps_delay_estimated": c.delay_estimated,
            "road_axis": list(c.axis), "ap_lat": corrected.ap_lat, "ap_lon": corrected.ap_lon,
            "ap_fix_spread_m": c.ap_spread_m[run.name],
            "clock_offsets_s": dict(sorted(run.offsets.seconds.items())),
            "clock_shared_frames": dict(sorted(run.offsets.shared.items())),
            "start_epoch_s": t0, "frames_captured": run.records.height, "transmissions": run.air.height,
            "bad_fcs": int(run.records["bad_fcs"].sum()),
        },
    }
    result = RunResult.__new__(RunResult)
    result.resolved = tomli_w.dumps(scenario)
    result.nodes = [n.name for n in m.nodes]
    result.stats = {"simulated_s": end - t0, "events": 0, "transmissions": int(tx.height)}
    names_enum = pl.Enum([*result.nodes, "broadcast"])

    def arrow(df: pl.DataFrame) -> pa.Table:
        return df.with_columns(pl.col("node", "peer").cast(names_enum)).to_arrow()

    result.frames, result.mac, result.events = arrow(frames_t), arrow(mac), arrow(events)
    result.tcp, result.transport = arrow(tcp), arrow(transport)
    return result


# ---------------------------------------------------------------- the directory


@dataclass
class Converted:
    runs: list[Path]
    corrections: gpscorrect.Corrections
    offsets: dict[str, sniffers.Offsets]


def convert(root: str | Path, out: str | Path) -> Converted:
    """Reads every run of the capture directory ROOT, corrects the GPS logs
    and writes one run directory per run under OUT."""
    root, out = Path(root), Path(out)
    if not root.is_dir():
        raise CaptureDirError(f"{root}: no such directory")
    m = read_manifest(root)
    runs = [read_run(d, m) for d in run_dirs(root, m)]
    ap, sta = m.node("ap"), m.node("sta")
    logs = [gpscorrect.RunLogs(r.name, r.logs[sta.name], r.logs[ap.name], _rssi_at(r, m, sta.name, ap.mac)) for r in runs]
    try:
        c = gpscorrect.correct(logs, m.delay_s)
    except gpscorrect.CorrectionError as e:
        raise CaptureDirError(f"{root}: {e}") from None
    written = []
    for r in runs:
        result = run_result(r, m, c.runs[r.name], c)
        written.append(result.save(out / r.name))
    return Converted(written, c, {r.name: r.offsets for r in runs})
