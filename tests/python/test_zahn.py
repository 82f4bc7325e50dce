"""wayside.zahn: Zahn et al. (2009)'s contact metrics on a short ad hoc
drive-by with Broadside-Raw (a car passes a parked car)."""

import math

import polars as pl
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


# ------------------------------------------- acknowledgement bytes, Figure 7


@pytest.fixture(scope="module")
def ip_result():
    xp = [{**n, "tcp": "windows-xp", "arp": "windows-xp"} for n in PASS["node"]]
    return run({**PASS, "node": xp, "app": [{**PASS["app"][0], "transport": "tcp"}]}, seed=1)


def test_raw_sends_back_bit_vectors_and_answers_only(result):
    split = zahn.ack_split_kb(result, "parked", "moving")
    assert sum(split.values()) == pytest.approx(zahn.ack_kb(result, "parked", "moving"))
    assert split["vectors"] > 0 and split["answers"] > 0, split
    assert split["tcp_acks"] == split["stream"] == split["tcp_control"] == 0, split
    assert zahn.acks_kb(result, "parked", "moving") == split["vectors"]


def test_ip_acks_are_pure_tcp_ack_segments(ip_result):
    split = zahn.ack_split_kb(ip_result, "parked", "moving")
    assert sum(split.values()) == pytest.approx(zahn.ack_kb(ip_result, "parked", "moving"))
    assert split["tcp_acks"] > 0 and split["stream"] > 0 and split["tcp_control"] > 0, split
    assert split["vectors"] == split["answers"] == 0, "Broadside's own messages ride in the stream"
    assert zahn.acks_kb(ip_result, "parked", "moving") == split["tcp_acks"]
    # A pure ACK is LLC/SNAP, IP and TCP headers (with SACK blocks at most).
    from wayside.traces import table
    import polars as pl

    acks = table(ip_result, "mac").filter((pl.col("node") == "parked") & (pl.col("content") == "tcp-ack") & (pl.col("event") == "delivered"))
    assert acks["bytes"].min() == 8 + 20 + 20 and acks["bytes"].max() <= 8 + 20 + 60


def test_the_saturating_sender_replaces_broadside():
    sat = {**PASS, "app": [{**PASS["app"][0], "enabled": False}],
           "traffic": [{"kind": "saturate", "from": "moving", "to": "parked", "payload": "1000 B"}]}
    r = run(sat, seed=1)
    mb = zahn.saturated_mb(r, "parked", "moving")
    assert mb > 5.0, "a saturated 802.11g link for tens of seconds"
    assert round(mb * 1e6) % 1000 == 0, "whole 1000-byte MSDUs"
    assert zahn.broadside_mb(r, "parked", "moving") == 0
    assert zahn.ack_kb(r, "parked", "moving") == 0, "the receiver sends no data back"
    rates = zahn.rate_mb(r, "parked", "moving")
    assert rates and max(rates) <= 54 and sum(rates.values()) >= mb


def test_rssi_falls_with_distance(result):
    d = zahn.rssi_by_distance(result, "parked", "moving")
    near, far = d.filter(pl.col("distance_m") < 30)["rssi_dbm"].mean(), d.filter(pl.col("distance_m") > 80)["rssi_dbm"].mean()
    assert near > far + 10, d


def _runs():
    """A sweep's rows, made up: two seeds of each variant at each location."""
    rows = []
    for loc in ("terraced", "residential", "motorway"):
        for v, mb in (("base", 30.0), ("ip", 20.0), ("500B", 10.0), ("2304B", 25.0)):
            for seed in (1, 2, 3):
                raw, ip = v == "base", v == "ip"
                rows.append({
                    "location": loc, "variant": v, "seed": seed, "throughput_mb": mb + seed, "connection_s": 30.0 + seed,
                    "startup_s": 0.5 * seed, "ack_kb": 900.0 if raw else 1800.0 if ip else 0.0, "connect_m": 150.0,
                    "acks_kb": 80.0 if raw else 400.0 if ip else 0.0, "ack_tcp_acks_kb": 400.0 if ip else 0.0,
                    "ack_tcp_control_kb": 0.1 if ip else 0.0, "ack_stream_kb": 1399.9 if ip else 0.0,
                    "ack_vectors_kb": 80.0 if raw else 0.0, "ack_answers_kb": 820.0 if raw else 0.0, "ack_other_kb": 0.0,
                    "mb_at_24": 5.0, "mb_at_54": mb,
                })
    return pl.DataFrame(rows)


def test_intervals_bracket_the_mean_and_pair_by_seed():
    s = zahn.summary(_runs())
    ip = s.filter((pl.col("location") == "terraced") & (pl.col("variant") == "ip")).row(0, named=True)
    # 21, 22, 23 MB: mean 22, stdev 1, t(0.975, 2 df) = 4.303.
    half = 4.303 / math.sqrt(3)
    assert (ip["mb_lo"], ip["mb"], ip["mb_hi"]) == pytest.approx((22.0 - half, 22.0, 22.0 + half), rel=1e-4)
    assert ip["mb_vs_base"] == pytest.approx(22.0 / 32.0)
    assert ip["mb_vs_base_lo"] <= ip["mb_vs_base"] <= ip["mb_vs_base_hi"]
    assert ip["acks_share"] == pytest.approx(400.0 / 22_000.0)
    g = zahn.gain(_runs(), "terraced", "base", "ip", "acks_kb")
    assert g.value == pytest.approx(0.2) and g.lo == g.hi == pytest.approx(0.2), "the same ratio in every pair"


def test_ack_and_size_tables_fit_80_columns():
    runs = _runs()
    acks = zahn.format_acks(zahn.ack_table(runs))
    sizes = zahn.size_table(runs)
    text = "\n".join([acks, zahn.format_intervals(zahn.summary(runs)), zahn.format_sizes(sizes)])
    assert all(len(line) <= 80 for line in text.splitlines()), text
    ip = zahn.ack_table(runs).filter((pl.col("location") == "motorway") & (pl.col("variant") == "ip")).row(0, named=True)
    assert ip["acks_share"] == pytest.approx(400.0 / 22_000.0), "mean acks over mean MB"
    best = sizes.filter(pl.col("location") == "motorway").sort("median_mb")["size"].to_list()[-1]
    assert best == 2304
    assert "2304/best" in text and "27.0*" in text


def test_the_report_draws_what_the_sweep_ran(tmp_path):
    from wayside.zahn.report import write_report

    report = write_report(_runs(), tmp_path)
    text = report.read_text()
    drawn = ("fig2-throughput.png", "fig3-connection.png", "fig4-rate-cdf-residential.png", "fig6-startup.png", "fig7-packet-size.png", "acks.png")
    for png in drawn:
        assert (tmp_path / png).stat().st_size > 5_000 and f"]({png})" in text
    assert not (tmp_path / "fig8-band.png").exists() and not (tmp_path / "fig11-rssi-antenna.png").exists()
    assert "Not drawn: it needs the variants base, 11a." in text and "Not drawn: it needs the variants base, roof." in text
    assert "terraced: Raw/IP throughput 1.45×" in text
    assert "terraced: Raw's first file data within 1 s of the link in 1 of 3 runs" in text
    assert "motorway: best packet size 2304 B, 2304 B at 1.00 of it" in text


def test_the_command_line_rejects_bad_runs(capsys):
    from wayside.zahn.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["--runs", "0"])
    assert e.value.code == 2 and "--runs: 0 is not at least 1" in capsys.readouterr().err


def test_the_command_line_names_an_unknown_variant_within_80_columns(capsys):
    from wayside.zahn.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["--variants", "base,wings"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "wings unknown; allowed: base" in err and "2304B" in err
    assert max(map(len, err.splitlines())) <= 80, err
