"""wayside.zahn: Zahn et al. (2009)'s contact metrics on a short ad hoc
drive-by with Broadside-Raw (a car passes a parked car)."""

import math

import pytest

from wayside.metrics import METRICS
from wayside.runner import run
from wayside import zahn

PASS = {
    "duration": "60 s",
    "environment": {"path_loss": "log-distance", "path_loss_exponent": 3.5},
    "radio": {"standard": "802.11g", "channel": 1},
    "mac": {"rate_control": {"algorithm": "minstrel"}},
    "node": [
        {"name": "parked", "position": [0, 5], "adhoc": {}},
        {"name": "moving", "position": [-300, 0], "adhoc": {},
         "mobility": {"model": "line", "speed": "25 mph", "heading": 0}},
    ],
    "app": [{"kind": "broadside", "transport": "raw", "from": "moving", "to": "parked",
             "files": 3, "bytes": "500 kB", "common": True, "start": "0 s"}],
}


@pytest.fixture(scope="module")
def result():
    return run(PASS, seed=1)


def test_connection_is_the_overlap_of_both_links(result):
    both = zahn.connected(result, "parked", "moving")
    assert both, "the cars never had a link"
    mine, theirs = zahn.link_intervals(result, "parked", "moving"), zahn.link_intervals(result, "moving", "parked")
    for s, e in both:
        assert any(a <= s and e <= b for a, b in mine) and any(a <= s and e <= b for a, b in theirs)
    d = zahn.connection_s(result, "parked", "moving")
    assert 0 < d <= min(sum(e - s for s, e in mine), sum(e - s for s, e in theirs))
    assert d == zahn.connection_s(result, "moving", "parked"), "symmetric"


def test_throughput_startup_and_acks(result):
    mb = zahn.broadside_mb(result, "parked", "moving")
    assert mb >= 1.5, "three 500 kB files, with headers"
    startup = zahn.startup_delay_s(result, "parked", "moving")
    assert 0 <= startup < zahn.connection_s(result, "parked", "moving")
    assert zahn.startup_share(result, "parked", "moving") == pytest.approx(startup / zahn.connection_s(result, "parked", "moving"))
    acks = zahn.ack_kb(result, "parked", "moving")
    assert 0 < acks < mb * 1e3 * 0.1, "the return direction is a small share"


def test_broadside_ip_moves_the_files_over_tcp():
    xp = [{**n, "tcp": "windows-xp", "arp": "windows-xp"} for n in PASS["node"]]
    r = run({**PASS, "node": xp, "app": [{**PASS["app"][0], "transport": "tcp"}]}, seed=1)
    from wayside.traces import table
    import polars as pl

    got = table(r, "transport").filter(pl.col("node") == "parked")
    tcp = got.filter(pl.col("proto") == "tcp")["bytes"].sum()
    assert tcp >= 1_500_000, "three 500 kB files in the stream"
    assert zahn.broadside_mb(r, "parked", "moving") * 1e6 >= tcp
    assert got.filter(pl.col("proto") == "raw").is_empty()
    # The parked car's TCP acknowledgements are MSDUs to the moving car.
    assert zahn.ack_kb(r, "parked", "moving") > 0
    assert 0 <= zahn.startup_delay_s(r, "parked", "moving") < zahn.connection_s(r, "parked", "moving")


def test_connect_distance_is_where_both_had_the_link(result):
    d = zahn.connect_distance_m(result, "moving", "parked")
    start = zahn.connected(result, "moving", "parked")[0][0]
    expected = math.hypot(-300 + 11.176 * start, 5)
    assert d == pytest.approx(expected, abs=2.0)


def test_without_a_link_the_metrics_are_nan_or_zero():
    far = {**PASS, "node": [PASS["node"][0], {**PASS["node"][1], "position": [-9000, 0]}]}
    r = run(far, seed=1)
    assert zahn.connection_s(r, "parked", "moving") == 0
    assert math.isnan(zahn.startup_delay_s(r, "parked", "moving"))
    assert math.isnan(zahn.connect_distance_m(r, "parked", "moving"))


def test_bad_node_names_are_named(result):
    with pytest.raises(ValueError, match="receiver: no node named 'nobody'"):
        zahn.broadside_mb(result, "nobody", "moving")
    with pytest.raises(ValueError, match="peer: no node named 'x'"):
        zahn.connection_s(result, "parked", "x")


def test_the_metrics_are_registered():
    for name in ("zahn_connection_s", "zahn_throughput_mb", "zahn_startup_delay_s", "zahn_ack_kb", "zahn_connect_distance_m"):
        assert name in METRICS


def test_summary_normalises_by_the_base_configuration():
    import polars as pl

    rows = pl.DataFrame({
        "location": ["terraced"] * 4,
        "variant": ["base", "base", "roof", "roof"],
        "seed": [1, 2, 1, 2],
        "throughput_mb": [10.0, 20.0, 30.0, 30.0],
        "connection_s": [10.0, 10.0, 15.0, 15.0],
        "startup_s": [0.5, 0.7, 0.4, 0.6],
        "ack_kb": [100.0, 200.0, 300.0, 300.0],
        "connect_m": [100.0, 120.0, 150.0, 150.0],
    })
    s = zahn.summary(rows)
    roof = s.filter(pl.col("variant") == "roof").row(0, named=True)
    assert roof["mb"] == 30.0 and roof["mb_vs_base"] == pytest.approx(2.0)
    assert roof["conn_vs_base"] == pytest.approx(1.5)
    base = s.filter(pl.col("variant") == "base").row(0, named=True)
    assert (base["mb_min"], base["mb_max"]) == (10.0, 20.0)
    assert base["ack_share"] == pytest.approx(300.0 / 30_000.0)


def test_sweep_rejects_an_unknown_variant():
    with pytest.raises(ValueError, match="variants: wings unknown; allowed: base, ip, 11a, roof, preamble"):
        zahn.sweep(1, ["wings"])


def test_the_printed_summary_fits_80_columns():
    import polars as pl

    rows = pl.DataFrame({
        "location": ["residential", "residential"], "variant": ["base", "roof"], "seed": [1, 1],
        "throughput_mb": [38.4, 68.3], "connection_s": [36.3, 40.8], "startup_s": [0.57, 18.3],
        "ack_kb": [700.0, 800.0], "connect_m": [180.6, 282.7],
    })
    text = zahn.format_summary(zahn.summary(rows))
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "residential roof" in " ".join(text.split()) and "1.78" in text
