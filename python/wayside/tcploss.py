"""TCP loss events at a sender, dissected the way Mukherjee et al. (2014)
do: each DupAck burst with its size, cwnd before and after, the SRTT at the
loss, the time to rebuild the window and its class (penalizing or
moderate); the ARQ retries of every frame; and their Figures 3-5 (goodput,
cwnd, ARQ retransmissions, TCP retransmissions, DupAcks, SRTT against
time).

The class rule (ours; the paper names the classes by their effect on
throughput): a loss is *penalizing* when the receiver's goodput over the
`window` after the burst falls below `1 - drop` of the goodput over the
`window` before it, else *moderate*.

Recovery time: from the first new ACK after the burst until cwnd is back
at its value before the loss (NaN if it never gets there before the next
loss event or the end of the trace).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from wayside.result import RunResult
from wayside.traces import check_node, delivered, seconds, table

def sender_acks(result: RunResult, sender: str) -> pl.DataFrame:
    """The `tcp` rows of `sender` (one per ACK it received), with `t` in s."""
    check_node(result, sender, "sender")
    return table(result, "tcp").filter(pl.col("node") == sender).with_columns(
        (pl.col("time_ns") / 1e9).alias("t")).sort("time_ns", maintain_order=True)


def _bursts(acks: pl.DataFrame, dupthresh: int) -> list[tuple[int, int]]:
    """(first row, last row) of each run of ACKs with dupacks > 0 that
    reached `dupthresh`."""
    dup = acks["dupacks"].to_list()
    out, start = [], None
    for i, d in enumerate(dup + [0]):
        if d > 0 and start is None:
            start = i
        elif d == 0 and start is not None:
            if max(dup[start:i]) >= dupthresh:
                out.append((start, i - 1))
            start = None
    return out


def _goodput(times: list[float], sizes: list[int], lo: float, hi: float) -> float:
    if hi <= lo:
        return math.nan
    return sum(b for t, b in zip(times, sizes) if lo <= t < hi) * 8e-6 / (hi - lo)


def loss_events(result: RunResult, sender: str, receiver: str, *, window: float | str = "2 s",
                drop: float = 0.25, dupthresh: int = 3) -> pl.DataFrame:
    """One row per DupAck burst (at least `dupthresh` duplicates in a row)
    at `sender`'s TCP for data to `receiver`: the time of its first
    duplicate, the most duplicates in the burst, cwnd before it and its
    lowest value from the burst to the first new ACK, the SRTT at the
    burst, the recovery time, the goodput at `receiver` in the `window`
    before and after, the class (see the module doc), and the time since
    the sender's last RTO (`since_rto_s`, NaN if none): a burst soon after
    an RTO is the receiver acknowledging go-back-N retransmissions of data
    it already had (lost ACKs, not lost data)."""
    if not 0.0 < drop < 1.0:
        raise ValueError(f"drop: {drop} is not a fraction; allowed: between 0 and 1")
    w = seconds(window, "window")
    if w <= 0:
        raise ValueError(f"window: {window!r} is not a positive duration")
    acks = sender_acks(result, sender).filter(pl.col("peer") == receiver)
    got = delivered(result, receiver, "tcp", sender, None)
    dt = (got["time_ns"] / 1e9).to_list()
    db = got["bytes"].cast(pl.Int64).to_list()
    t, cwnd, srtt = acks["t"].to_list(), acks["cwnd"].to_list(), acks["srtt_ms"].to_list()
    bursts = _bursts(acks, dupthresh)
    rtos = (table(result, "events").filter(pl.col("node") == sender, pl.col("peer") == receiver,
                                           pl.col("event") == "tcp-timeout")["time_ns"] / 1e9).to_list()
    rows: list[dict[str, Any]] = []
    for k, (a, b) in enumerate(bursts):
        before = cwnd[a - 1] if a > 0 else cwnd[a]
        after_row = min(b + 1, len(cwnd) - 1)
        after = min(cwnd[a:after_row + 1])
        end = bursts[k + 1][0] if k + 1 < len(bursts) else len(cwnd)
        back = next((t[i] for i in range(after_row, end) if i > b and cwnd[i] >= before), math.nan)
        recovery = back - t[after_row] if after_row > b else math.nan
        g0 = _goodput(dt, db, max(t[a] - w, 0.0), t[a])
        g1 = _goodput(dt, db, t[b], min(t[b] + w, result.duration_s))
        kind = "penalizing" if g1 < (1.0 - drop) * g0 else "moderate"
        rows.append(dict(time_s=t[a], dupacks=max(acks["dupacks"][a:b + 1].to_list()), cwnd_before=before,
                         cwnd_after=after, srtt_ms=srtt[a], recovery_s=recovery,
                         goodput_before_mbps=g0, goodput_after_mbps=g1, kind=kind,
                         since_rto_s=min((t[a] - x for x in rtos if x <= t[a]), default=math.nan)))
    schema = {"time_s": pl.Float64, "dupacks": pl.Int64, "cwnd_before": pl.Int64, "cwnd_after": pl.Int64,
              "srtt_ms": pl.Float64, "recovery_s": pl.Float64, "goodput_before_mbps": pl.Float64,
              "goodput_after_mbps": pl.Float64, "kind": pl.Utf8, "since_rto_s": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def arq_retries(result: RunResult, receiver: str, sender: str | None = None) -> pl.DataFrame:
    """One row per unicast MSDU to `receiver` that a MAC finished
    (delivered or failed), optionally only `sender`'s (the AP for the WiFi
    hop): `t` in s, `retries` (tries beyond the first) and `outcome`."""
    check_node(result, receiver, "receiver")
    m = table(result, "mac").filter(pl.col("peer") == receiver, pl.col("event").is_in(["delivered", "failed"]))
    if sender is not None:
        check_node(result, sender, "sender")
        m = m.filter(pl.col("node") == sender)
    return m.select((pl.col("time_ns") / 1e9).alias("t"), (pl.col("attempts").cast(pl.Int64) - 1).alias("retries"),
                    pl.col("event").alias("outcome"))


def tcp_retransmissions(result: RunResult, sender: str, receiver: str, dupthresh: int = 3) -> pl.DataFrame:
    """`sender`'s TCP retransmissions to `receiver` as far as the traces
    show them: a fast retransmit at each DupAck burst that reached
    `dupthresh`, and a retransmission at every RTO (`tcp-timeout` event).
    Columns `t` (s) and `cause` ("fast" or "timeout")."""
    acks = sender_acks(result, sender).filter(pl.col("peer") == receiver)
    t = acks["t"].to_list()
    fast = [t[a] for a, _ in _bursts(acks, dupthresh)]
    ev = table(result, "events").filter(pl.col("node") == sender, pl.col("peer") == receiver,
                                        pl.col("event") == "tcp-timeout")
    rows = [(x, "fast") for x in fast] + [(x / 1e9, "timeout") for x in ev["time_ns"].to_list()]
    return pl.DataFrame(sorted(rows), schema={"t": pl.Float64, "cause": pl.Utf8}, orient="row")


def goodput_per_second(result: RunResult, receiver: str, sender: str | None = None) -> pl.DataFrame:
    """Mb/s of in-order TCP data delivered to `receiver` in each whole
    second of the run (`t`: the second's start)."""
    got = delivered(result, receiver, "tcp", sender, None)
    n = max(int(result.duration_s), 1)
    per = got.group_by((pl.col("time_ns") // 1_000_000_000).alias("s")).agg(pl.col("bytes").cast(pl.Int64).sum())
    full = pl.DataFrame({"s": list(range(n))}, schema={"s": pl.Int64})
    return full.join(per.with_columns(pl.col("s").cast(pl.Int64)), on="s", how="left").select(
        pl.col("s").cast(pl.Float64).alias("t"), (pl.col("bytes").fill_null(0) * 8e-6).alias("mbps"))


def figure(result: RunResult, sender: str, receiver: str, title: str = "") -> Any:
    """The paper's Figures 3-5 for one run as one matplotlib figure of six
    panels against time: goodput, cwnd, ARQ retries per retried frame,
    TCP retransmissions, DupAcks per burst and SRTT."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acks = sender_acks(result, sender).filter(pl.col("peer") == receiver)
    events = loss_events(result, sender, receiver)
    arq = arq_retries(result, receiver).filter(pl.col("retries") > 0)
    rtx = tcp_retransmissions(result, sender, receiver)
    tp = goodput_per_second(result, receiver, sender)
    fig, ax = plt.subplots(6, 1, figsize=(8, 11), sharex=True)
    ax[0].plot(tp["t"], tp["mbps"], lw=1)
    ax[0].set_ylabel("goodput (Mb/s)")
    ax[1].plot(acks["t"], acks["cwnd"], lw=0.8)
    ax[1].set_ylabel("cwnd (segments)")
    ax[2].scatter(arq["t"], arq["retries"], s=3, c=["C3" if o == "failed" else "C0" for o in arq["outcome"]])
    ax[2].set_ylabel("ARQ retries\nper frame")
    for cause, color in (("fast", "C1"), ("timeout", "C3")):
        r = rtx.filter(pl.col("cause") == cause)
        ax[3].scatter(r["t"], [1 if cause == "fast" else 2] * r.height, s=12, c=color, label=cause)
    ax[3].set_yticks([1, 2], ["fast", "RTO"])
    ax[3].set_ylabel("TCP retx")
    ax[4].vlines(events["time_s"], 0, events["dupacks"])
    ax[4].scatter(events["time_s"], events["dupacks"], s=10)
    ax[4].set_ylabel("DupAcks\nper burst")
    ax[5].plot(acks["t"], acks["srtt_ms"], lw=0.8)
    ax[5].set_ylabel("SRTT (ms)")
    ax[5].set_xlabel("time (s)")
    if title:
        ax[0].set_title(title)
    fig.tight_layout()
    return fig


def tcp_senders(result: RunResult) -> list[tuple[str, str]]:
    """(sender, receiver) of every TCP connection with ACKs in the trace."""
    t = table(result, "tcp")
    return sorted({(s, r) for s, r in t.select("node", "peer").unique().iter_rows()})
