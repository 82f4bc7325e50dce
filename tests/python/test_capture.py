"""Captured drive-bys in: an independent capture (written by scapy) read end
to end, GPS logs in every format, Hadaller Table 2's errors injected into
simulated runs' logs and recovered by the corrections, and clear errors for
bad capture directories."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import independent_capture as ic
import wayside
from wayside import capture, driveby, gpscorrect, gpslog, gpsout, roundtrip, sniffers
from wayside.result import RunResult
from wayside.traces import table


@pytest.fixture(scope="module")
def independent(tmp_path_factory):
    root = ic.write(tmp_path_factory.mktemp("capture"))
    converted = capture.convert(root, root / "runs")
    return root, converted, RunResult.load(converted.runs[0])


def test_independent_capture_clocks_and_frames(independent):
    _, converted, r = independent
    offsets = converted.offsets["run-1"]
    assert offsets.seconds["car"] == pytest.approx(ic.CAR_CLOCK_S, abs=1e-4)
    assert offsets.shared["car"] >= sniffers.MIN_SHARED
    frames = table(r, "frames")
    beacons = ic.DURATION_S / 0.2
    assert frames.filter((pl.col("node") == "ap") & (pl.col("event") == "tx") & (pl.col("kind") == "beacon")).height == beacons
    heard = frames.filter((pl.col("node") == "car") & (pl.col("event") == "rx") & (pl.col("kind") == "beacon"))
    assert heard.height == beacons and heard["rssi_dbm"].max() == ic._rssi(ic.PASS_S, True)
    # Both sniffers caught every frame: each transmission is in the table once.
    data = frames.filter((pl.col("node") == "ap") & (pl.col("peer") == "car") & (pl.col("event") == "tx")
                         & (pl.col("kind") == "data"))
    assert data.height == ic.SEGMENTS + 1 + 2  # segments, one retry, SYN and the handshake's ACK
    assert data["rate_mbps"].unique().to_list() == [24.0]
    acks = frames.filter((pl.col("node") == "car") & (pl.col("event") == "tx") & (pl.col("kind") == "ack"))
    # Every data airing but the lost one got an ACK, and so did the AP's
    # authentication and association responses.
    assert acks.height == data.height - 1 + 2
    assert data.filter(pl.col("outcome") == "unacked").height == 1


def test_independent_capture_mac_transport_and_events(independent):
    _, _, r = independent
    mac = table(r, "mac").filter((pl.col("node") == "ap") & (pl.col("peer") == "car") & (pl.col("event") != "received"))
    assert set(mac["event"].to_list()) == {"delivered"}
    assert sorted(mac["attempts"].to_list())[-2:] == [1, 2]
    transport = table(r, "transport")
    assert transport["bytes"].sum() == ic.SEGMENTS * ic.SEGMENT
    assert transport["seq"].max() == ic.SEGMENTS * ic.SEGMENT
    events = table(r, "events")
    order = events.filter(pl.col("node") == "car")["event"].to_list()
    assert order[:6] == ["first-beacon", "ap-selected", "auth-request", "auth-ok", "assoc-request", "associated"]
    assert events.filter(pl.col("node") == "ap")["event"].to_list() == [
        "associated", "app-start", "arp-request", "arp-resolved", "syn", "established"]
    # Positions: the GPS delay and the car's clock corrected, the car is
    # where it was (the test's spherical earth differs from WGS 84 by ~0.3%).
    at = events.filter((pl.col("node") == "car") & (pl.col("event") == "auth-request"))
    assert at["x"][0] == pytest.approx(ic.car_x(3.0), abs=2.0)
    assert at["y"][0] == pytest.approx(-ic.LATERAL_M, abs=0.5)


def test_independent_capture_runs_through_the_driveby_digest(independent):
    _, _, r = independent
    d = driveby.digest(r, "run-1")
    assert d.data_mb == pytest.approx(ic.SEGMENTS * ic.SEGMENT / 1e6)
    last = ic.DATA_START_S + (ic.SEGMENTS - 1) * ic.DATA_STEP_S + 0.05  # the receiver's last ACK
    assert d.end_m == pytest.approx(ic.car_x(last), abs=3.0)
    labels = {label for _, _, label in d.intervals}
    assert {"AP selection", "application start", "ARP"} <= labels
    assert d.bins["rssi_n"].sum() > 0


def test_cli_analyze_reads_a_capture_directory(independent, cli, tmp_path):
    root, _, _ = independent
    done = cli("analyze", root, "--out", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    assert "car +250.0" in done.stdout and "given in capture.toml" in done.stdout
    assert "run-1" in done.stdout and "0.14" in done.stdout
    assert (tmp_path / "runs" / "run-1" / "frames.parquet").is_file()


def test_cli_analyze_bad_capture_directories(cli, tmp_path):
    done = cli("analyze", tmp_path)
    assert done.returncode == 2 and "neither a capture directory" in done.stderr
    (tmp_path / "capture.toml").write_text('[[node]]\nname = "ap"\nrole = "ap"\nmac = "02:00:00:00:00:01"\n')
    done = cli("analyze", tmp_path)
    assert done.returncode == 2 and "node with role = \"sta\"" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("fmt", gpslog.FORMATS)
def test_gps_logs_write_and_read_back(tmp_path, fmt):
    t = 1_160_000_000.0 + np.arange(5) * 1.0 + 0.25
    log = pl.DataFrame({"time_s": t, "lat": 43.47 + np.arange(5) * 1e-4, "lon": -80.54 - np.arange(5) * 2e-4},
                       schema=gpslog.LOG_SCHEMA)
    back = gpslog.read_log(gpslog.write_log(log, tmp_path / f"log.{fmt}"))
    assert back.height == 5
    assert np.abs(back["time_s"].to_numpy() - t).max() < 0.006  # NMEA keeps 10 ms
    plane = gpslog.LocalPlane(43.47, -80.54)
    x0, y0 = plane.to_xy(log["lat"].to_numpy(), log["lon"].to_numpy())
    x1, y1 = plane.to_xy(back["lat"].to_numpy(), back["lon"].to_numpy())
    assert np.hypot(x1 - x0, y1 - y0).max() < 0.05


def test_gps_log_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.nmea"
    bad.write_text("$GPRMC,120000.00,A,4328.2,N,08032.4,W,0,0,150806,,*00\r\n")
    with pytest.raises(gpslog.GpsLogError, match="bad.nmea:1: not an NMEA"):
        gpslog.read_log(bad)
    with pytest.raises(gpslog.GpsLogError, match="allowed: .nmea"):
        gpslog.read_log(tmp_path / "log.kml")


# ---------------------------------------------------------------- Table 2's errors in, corrections out


@pytest.fixture(scope="module")
def both_ways():
    """Four passes of hadaller-highway, two each way."""
    west = ["node.car.position=[1500, 0]", "node.car.mobility.heading=180"]
    return [wayside.run("hadaller-highway", seed=20 + i, overrides=west if i % 2 else []) for i in range(4)]


def test_table2_corrections_recover_injected_gps_errors(both_ways, tmp_path):
    measured = []
    for i, r in enumerate(both_ways):
        errors = gpsout.GpsErrors(seed=7 + i, day_hours=0.5 * i)  # Table 2's figures, drift half an hour per run
        measured.append(roundtrip.measure(r, f"run{i}", errors, tmp_path / f"run{i}", "nmea" if i % 2 else "gpx"))
    # The clock offset between the hosts, from the frames both caught.
    assert max(abs(m.clock_error_s) for m in measured) < 1e-3
    c = gpscorrect.correct([m.logs for m in measured])
    assert c.delay_estimated and abs(c.delay_s - 1.5) <= 0.2
    assert c.axis[0] == pytest.approx(1.0, abs=1e-3)  # the road runs east
    errors = roundtrip.position_errors(c, [m.truth for m in measured])
    assert len(errors) > 1000 and errors.max() <= 10.0


def test_gps_out_is_deterministic_and_delays_the_car(both_ways):
    r = both_ways[0]
    late = gpsout.GpsErrors(delay_s=1.5, drift_m_per_h=0, noise_m=0, clock_offset_s=0)
    assert gpsout.node_log(r, "car", late).equals(gpsout.node_log(r, "car", late))
    exact, delayed = gpsout.node_log(r, "car"), gpsout.node_log(r, "car", late)
    plane = gpslog.LocalPlane(*gpsout.ORIGIN)
    common = exact.join(delayed, on="time_s", suffix="_late")
    x0, _ = plane.to_xy(common["lat"].to_numpy(), common["lon"].to_numpy())
    x1, _ = plane.to_xy(common["lat_late"].to_numpy(), common["lon_late"].to_numpy())
    assert np.median(x0 - x1) == pytest.approx(80 / 3.6 * 1.5, abs=0.1)
    noisy = gpsout.GpsErrors(seed=3)
    ap = gpsout.node_log(r, "ap", noisy)
    ax, ay = plane.to_xy(ap["lat"].to_numpy(), ap["lon"].to_numpy())
    pairs = np.hypot(ax[:, None] - ax[None, :], ay[:, None] - ay[None, :])
    mean_pair = pairs[np.triu_indices(len(ax), 1)].mean()
    assert 1.5 < mean_pair < 2.6  # Table 2: 2 m between two fixes of a still receiver
    assert math.isclose(gpsout.clock_offset("ap", noisy), gpsout.clock_offset("ap", noisy))


def test_cli_gps_writes_a_runs_logs(both_ways, cli, tmp_path):
    run_dir = both_ways[0].save(tmp_path / "run")
    done = cli("gps", run_dir, "--format", "csv", "--errors", "--seed", "4")
    assert done.returncode == 0, done.stderr
    logs = {p.name for p in (run_dir / "gps").iterdir()}
    assert {"ap.csv", "car.csv", "gps.json"} <= logs
    car = gpslog.read_log(run_dir / "gps" / "car.csv")
    assert np.all(np.diff(car["time_s"].to_numpy()) == 1.0)  # 1 Hz on the host's clock
    bad = cli("gps", run_dir, "--delay", "soon")
    assert bad.returncode == 2 and "--delay" in bad.stderr and "Traceback" not in bad.stderr


def test_prism_and_avs_headers_give_rate_and_signal(tmp_path):
    import struct

    from scapy import all as s

    from wayside.pcapread import read_capture

    frame = (s.Dot11(type=2, subtype=0, FCfield="from_DS", addr1=ic.CAR_MAC, addr2=ic.AP_MAC, addr3=ic.AP_MAC, SC=5 << 4)
             / s.LLC() / s.SNAP() / s.IP(src=ic.AP_IP, dst=ic.CAR_IP) / s.TCP(seq=77, flags="A") / s.Raw(b"\x00" * 100))
    # madwifi's Prism header, as scapy writes it: rate in 500 kb/s, signal and noise in dBm.
    prism = s.PrismHeader(dev=b"ath0", rate=108, signal=-57, noise=(1 << 32) - 95) / frame
    s.wrpcap(str(tmp_path / "prism.pcap"), [prism], linktype=119)
    # AVS capture header v1 (big-endian): datarate in 100 kb/s, ssi_type 2 = dBm.
    avs = struct.pack(">IIQQIIIIIIiiII", 0x80211001, 64, 0, 0, 6, 6, 110, 0, 0, 2, -61, -96, 0, 0) + bytes(frame)
    s.wrpcap(str(tmp_path / "avs.pcap"), [avs], linktype=163)
    for name, rate, signal, noise in (("prism", 54.0, -57.0, -95.0), ("avs", 11.0, -61.0, -96.0)):
        row = read_capture(tmp_path / f"{name}.pcap", name).row(0, named=True)
        assert (row["rate_mbps"], row["rssi_dbm"], row["noise_dbm"]) == (rate, signal, noise), name
        assert (row["kind"], row["ta"], row["ra"], row["seq"]) == ("data", ic.AP_MAC, ic.CAR_MAC, 5), name
        assert (row["proto"], row["tcp_seq"], row["payload"]) == ("tcp", 77, 100), name


def test_unreadable_captures_are_clear_errors(tmp_path):
    from wayside.pcapread import CaptureError, read_capture

    (tmp_path / "junk.pcap").write_bytes(b"not a capture at all")
    with pytest.raises(CaptureError, match="neither a pcap nor a pcapng"):
        read_capture(tmp_path / "junk.pcap", "s")
    from scapy import all as s

    s.wrpcap(str(tmp_path / "eth.pcap"), [s.Ether() / s.IP()])
    with pytest.raises(CaptureError, match="link type 1 is not 802.11"):
        read_capture(tmp_path / "eth.pcap", "s")


def test_capture_conversion_is_deterministic(independent, tmp_path):
    root, converted, _ = independent
    again = capture.convert(root, tmp_path / "again")
    for name in ("frames", "mac", "events", "transport"):
        assert (again.runs[0] / f"{name}.parquet").read_bytes() == (converted.runs[0] / f"{name}.parquet").read_bytes()
    assert (again.runs[0] / "scenario.toml").read_text() == (converted.runs[0] / "scenario.toml").read_text()


def test_cli_analyze_reads_simulated_runs(both_ways, cli, tmp_path):
    for i, r in enumerate(both_ways):
        r.save(tmp_path / f"seed{i}")
    done = cli("analyze", tmp_path)
    assert done.returncode == 0, done.stderr
    assert all(f"seed{i}" in done.stdout for i in range(4))
    assert "phases (m from the AP): entry" in done.stdout


@settings(max_examples=300, deadline=None)
@given(linktype=st.sampled_from([105, 119, 127, 163]), data=st.binary(max_size=300))
def test_decoding_arbitrary_bytes_never_raises(linktype, data):
    from wayside.pcapread import decode

    row = decode(linktype, 0.0, data, "fuzz")
    assert row is None or set(row) >= {"kind", "ta", "ra", "seq"}


def test_gps_delay_needs_runs_both_ways(independent, tmp_path):
    root, _, _ = independent
    manifest = (root / "capture.toml").read_text().replace(f'delay = "{ic.GPS_DELAY_S} s"', 'delay = "auto"')
    auto = tmp_path / "auto"
    auto.mkdir()
    (auto / "capture.toml").write_text(manifest)
    (auto / "run-1").symlink_to(root / "run-1")
    with pytest.raises(capture.CaptureDirError, match="runs in opposite directions"):
        capture.convert(auto, tmp_path / "out")


def test_report_renders_captured_runs(independent):
    from wayside import report

    root, _, _ = independent
    page = report.render(root / "runs")
    assert "run-1" in page and "<img" in page
