"""Chen et al. analysis (wayside.vanet) on short chen-vanet runs."""

import copy

import pytest

from wayside import vanet
from wayside.runner import run


@pytest.fixture(scope="module")
def sparse():
    return run("chen-vanet", seed=1, overrides=vanet.overrides(300, 0.1, 1, 20))


@pytest.fixture(scope="module")
def dense():
    return run("chen-vanet", seed=1, overrides=vanet.overrides(300, 0.3, 1, 20))


def test_segments_carry_hops_and_latency(sparse):
    seg = vanet.segments(sparse)
    assert seg.height > 100
    assert set(seg["source"].unique()) <= {n for n in sparse.nodes if n.startswith("car-source-")}
    assert seg["hops"].min() >= 1 and (seg["hops"] % 1 == 0).all()
    assert (seg["latency_s"] > 0).all()
    # The source enters 750 m from the AP: at a 300 m range it needs relays.
    assert seg["hops"].max() >= 2 and (seg["hops"] == 1).any()


def test_collisions_are_a_subset_of_drops_and_grow_with_density(sparse, dense):
    drops = sum(1 for e in sparse.frames.column("event").to_pylist() if e == "drop")
    c10, c30 = vanet.collisions(sparse), vanet.collisions(dense)
    assert 0 < c10 < drops
    # Three times the beaconing vehicles: more collisions (the paper's
    # tenfold is a validation target, wayside/validation/chen-vanet.toml).
    assert c30 > c10, (c10, c30)


def test_bins_and_throughputs(sparse):
    b = vanet.by_bin(sparse)
    assert b.height == vanet.BINS and b["position_m"].to_list()[:2] == [0.0, 150.0]
    tput = [v for v in b["throughput_kBps"].to_list() if v is not None]
    assert tput and max(tput) > 50
    s = vanet.summarize(sparse)
    assert s["system_kBps"] > 0 and s["routing_drops"] >= 0
    assert s["throughput_kBps"] >= s["system_kBps"] * 0.9


def test_report_has_the_figures(sparse):
    import polars as pl

    rows = [{"range_m": 300.0, "density": 0.1, "sources": 1, "seed": 1, **vanet.summarize(sparse)}]
    text = vanet.report(pl.DataFrame(rows))
    assert "Fig. 2" in text and "Fig. 6" in text and "Fig. 8" in text


def test_wayside_report_writes_the_figures_of_a_sweep_file(sparse, tmp_path):
    import polars as pl
    from typer.testing import CliRunner

    from wayside.cli import app

    rows = [{"range_m": 300.0, "density": 0.1, "sources": 1, "seed": s, **vanet.summarize(sparse)} for s in (1, 2)]
    pl.DataFrame(rows).write_parquet(tmp_path / "chen.parquet")
    res = CliRunner().invoke(app, ["report", str(tmp_path / "chen.parquet")])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "chen.md").read_text()
    assert "Fig. 2" in text and "± 0.0" in text  # two identical runs: a zero interval
    (tmp_path / "bad.parquet").write_text("not parquet")
    res = CliRunner().invoke(app, ["report", str(tmp_path / "bad.parquet")])
    assert res.exit_code != 0 and "cannot be reported on" in res.output


def test_cwnd_figure_plots_the_sources_window_and_position(sparse):
    from wayside.tcploss import sender_acks

    fig = vanet.cwnd_figure(sparse)
    acks = sender_acks(sparse, fig.axes[0].get_title().split(":")[0])
    (cwnd,), (pos,) = fig.axes[0].get_lines(), fig.axes[1].get_lines()
    assert list(cwnd.get_ydata()) == acks["cwnd"].to_list() and len(acks) > 100
    assert list(pos.get_xdata()) == acks["t"].to_list()
    # The source drives on: its position grows with time.
    x = list(pos.get_ydata())
    assert x[-1] > x[0] + 100
    no_acks = copy.copy(sparse)
    no_acks.tcp = sparse.tcp.slice(0, 0)
    with pytest.raises(ValueError, match="no TCP ACKs"):
        vanet.cwnd_figure(no_acks)
