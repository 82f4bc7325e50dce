"""wayside.tcploss and its metrics: loss events per DupAck burst, the
penalizing/moderate rule, ARQ retries; on hand-made traces and on the
mukherjee scenarios."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wayside
from wayside import metrics, tcploss


def fake_run(acks: list[tuple[float, int, int, float]], delivered: list[tuple[float, int]], duration: float = 20.0):
    """A stand-in RunResult: the server's ACK rows (t, cwnd, dupacks, srtt)
    and the car's in-order deliveries (t, bytes)."""
    n = len(acks)
    tcp = pa.table({
        "time_ns": [int(t * 1e9) for t, *_ in acks], "node": ["server"] * n, "peer": ["car"] * n,
        "cwnd": [c for _, c, _, _ in acks], "ssthresh": [0] * n, "srtt_ms": [s for *_, s in acks],
        "rto_ms": [200.0] * n, "dupacks": [d for _, _, d, _ in acks], "in_flight": [0] * n, "acked": [0] * n,
    })
    m = len(delivered)
    transport = pa.table({
        "time_ns": [int(t * 1e9) for t, _ in delivered], "node": ["car"] * m, "peer": ["server"] * m,
        "proto": ["tcp"] * m, "bytes": [b for _, b in delivered], "app": [0] * m,
    })
    empty = pa.table({"time_ns": pa.array([], pa.uint64()), "node": pa.array([], pa.string()),
                      "peer": pa.array([], pa.string()), "event": pa.array([], pa.string())})
    return SimpleNamespace(nodes=["server", "car", "ap"], tcp=tcp, transport=transport, events=empty, mac=empty,
                           duration_s=duration, scenario={"app": [{}]})


def steady(rate_bytes_per_s: int, lo: float, hi: float) -> list[tuple[float, int]]:
    """One delivery every 10 ms from lo to hi at the given rate."""
    return [(lo + i * 0.01, rate_bytes_per_s // 100) for i in range(int((hi - lo) * 100))]


def test_a_burst_is_measured_and_a_goodput_collapse_is_penalizing():
    # cwnd 40, then 45 duplicates at 5 s with cwnd falling to 1, then back to 40 by 7 s.
    acks = [(4.0 + i * 0.01, 40, 0, 20.0) for i in range(100)]
    acks += [(5.0 + i * 0.001, max(40 - i, 1), i + 1, 25.0) for i in range(45)]
    acks += [(5.1 + i * 0.05, min(1 + 2 * i, 40), 0, 2.0) for i in range(40)]
    run = fake_run(acks, steady(2_500_000, 0.0, 5.0) + steady(500_000, 5.05, 20.0))
    ev = tcploss.loss_events(run, "server", "car")
    assert ev.height == 1
    e = ev.row(0, named=True)
    assert (e["dupacks"], e["cwnd_before"], e["cwnd_after"], e["srtt_ms"]) == (45, 40, 1, 25.0)
    # The first new ACK at 5.1 s, cwnd 40 again at 5.1 + 20 * 0.05 = 6.1 s (1 + 2*20 >= 40 at i = 20).
    assert e["recovery_s"] == pytest.approx(1.0)
    assert e["goodput_before_mbps"] == pytest.approx(20.0, rel=0.01)
    assert e["goodput_after_mbps"] == pytest.approx(4.0, rel=0.05)
    assert e["kind"] == "penalizing"
    assert math.isnan(e["since_rto_s"])
    assert metrics.max_dupack_burst(run, "server", "car") == 45
    assert metrics.cwnd_after_burst(run, "server", "car") == 1
    assert metrics.window_recovery_s(run, "server", "car", srtt_ms=[15, 40]) == pytest.approx(1.0)
    assert math.isnan(metrics.window_recovery_s(run, "server", "car", srtt_ms=[0, 10]))


def test_a_loss_that_keeps_the_goodput_is_moderate():
    acks = [(4.0, 40, 0, 20.0)] + [(5.0 + i * 0.001, 40 - i, i + 1, 2.0) for i in range(10)] + [(5.2, 20, 0, 2.0)]
    run = fake_run(acks, steady(2_500_000, 0.0, 20.0))
    ev = tcploss.loss_events(run, "server", "car")
    assert ev["kind"].to_list() == ["moderate"]
    # Never back to 40 before the end: no recovery time.
    assert math.isnan(ev["recovery_s"][0])
    assert metrics.penalizing_losses(run, "server", "car") == 0


def test_fewer_duplicates_than_the_threshold_are_no_loss_event():
    acks = [(1.0, 10, 0, 5.0), (1.1, 10, 1, 5.0), (1.2, 10, 2, 5.0), (1.3, 11, 0, 5.0)]
    assert tcploss.loss_events(fake_run(acks, []), "server", "car").height == 0
    assert tcploss.loss_events(fake_run(acks, []), "server", "car", dupthresh=2).height == 1


def test_bad_arguments_name_themselves():
    run = fake_run([(1.0, 10, 0, 5.0)], [])
    with pytest.raises(ValueError, match="drop"):
        tcploss.loss_events(run, "server", "car", drop=1.5)
    with pytest.raises(ValueError, match="window"):
        tcploss.loss_events(run, "server", "car", window="-1 s")
    with pytest.raises(ValueError, match="sender: no node named 'nobody'"):
        tcploss.loss_events(run, "nobody", "car")


@given(st.lists(st.integers(min_value=0, max_value=6), max_size=60), st.integers(min_value=1, max_value=5))
def test_bursts_are_the_runs_of_duplicates_that_reach_the_threshold(dup, thresh):
    import polars as pl

    got = tcploss._bursts(pl.DataFrame({"dupacks": dup}, schema={"dupacks": pl.Int64}), thresh)
    # Rebuild the maximal runs of non-zero values by hand.
    runs, start = [], None
    for i, d in enumerate(dup + [0]):
        if d and start is None:
            start = i
        if not d and start is not None:
            runs.append((start, i - 1))
            start = None
    assert got == [r for r in runs if max(dup[r[0]:r[1] + 1]) >= thresh]
    for a, b in got:
        assert all(dup[a:b + 1]) and (a == 0 or dup[a - 1] == 0) and (b + 1 == len(dup) or dup[b + 1] == 0)


def test_the_walk_shows_a_dupack_burst_with_cwnd_at_one_and_arq_retries():
    # Seed 2's walk: a residual loss 38.6 s in, behind a full window.
    r = wayside.run("mukherjee-pedestrian", seed=2, overrides=['duration="45 s"'])
    ev = tcploss.loss_events(r, "server", "car")
    # Lost data, not go-back-N after lost ACKs: no RTO in the second before.
    big = ev.filter(ev["dupacks"] >= 30, ~(ev["since_rto_s"] < 1.0))
    assert big.height >= 1, ev
    assert big["cwnd_after"].max() <= 2
    # The burst is the tcp table's own duplicate count.
    assert ev["dupacks"].max() == tcploss.sender_acks(r, "server")["dupacks"].max()
    arq = tcploss.arq_retries(r, "car", sender="ap")
    assert arq.height > 1000 and arq["retries"].max() == 9 and "failed" in arq["outcome"].to_list()
    fig = tcploss.figure(r, "server", "car")
    assert len(fig.axes) == 6
