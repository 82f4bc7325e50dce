"""Roaming on the corridor of tests/python/data (3 APs 400 m apart on
channels 1, 6 and 11, eight cars): with wpa_supplicant's bgscan every car
is served by each AP it passes and gets at least twice the data it gets
with madwifi's behaviour (no roaming); the handovers table; the
reassociation, deauthentication and disassociation frames in the trace and,
dissected by tshark, in the captures."""

from __future__ import annotations

import math
import shutil
import subprocess
import tomllib
from pathlib import Path

import polars as pl
import pytest

import wayside
from wayside import breakdown
from wayside.traces import table

CORRIDOR = Path(__file__).parent / "data" / "corridor.toml"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (scripts/test.sh installs Debian's)")
SUBTYPE = {"reassoc-req": 0x02, "reassoc-resp": 0x03, "disassoc": 0x0A, "deauth": 0x0C}


def corridor(roaming: str | dict | None = None, car7: dict | None = None, pcap: list[str] | None = None) -> dict:
    s = tomllib.loads(CORRIDOR.read_text(encoding="utf-8"))
    if roaming is not None:
        s["management"]["roaming"] = roaming
    if car7 is not None:
        next(n for n in s["node"] if n["name"] == "car7")["roaming"] = car7
    if pcap is not None:
        s["pcap"] = {"nodes": pcap}
    return s


@pytest.fixture(scope="module")
def madwifi():
    return wayside.run(corridor(), seed=1)


@pytest.fixture(scope="module")
def bgscan(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap")
    return wayside.run(corridor("bgscan-simple", pcap=["car7"]), seed=1, pcap=d), d


def final_x(result, car: str) -> float:
    t = breakdown.tracks(result)[car]
    return float(t["x"][-1])


def test_bgscan_serves_every_car_by_each_ap_it_passes_and_doubles_the_data(madwifi, bgscan):
    r, _ = bgscan
    b, base = breakdown.breakdown(r), breakdown.breakdown(madwifi)
    aps = dict(zip(b.aps["ap"], b.aps["x"]))
    for row in b.cars.iter_rows(named=True):
        passed = {ap for ap, x in aps.items() if final_x(r, row["car"]) > x + 50}
        served = set(row["served_by"].split(", "))
        assert passed <= served, f"{row['car']} passed {sorted(passed)} but was served by {sorted(served)}"
    # madwifi's cars never roam: they leave an AP only when its beacons are gone.
    assert "roamed" not in set(base.handovers["how"])
    assert "roamed" in set(b.handovers["how"])
    assert b.data_mb >= 2 * base.data_mb, f"bgscan {b.data_mb:.1f} MB, madwifi {base.data_mb:.1f} MB"


def test_with_the_driver_defaults_bgscan_gets_over_twice_the_issues_39_mb():
    # The corridor as the issue's user wrote it, without a rate: SampleRate
    # at the APs (madwifi 0.9's), Minstrel at bgscan's cars (mac80211's).
    runs = {}
    for roaming in ("madwifi", "bgscan-simple"):
        s = corridor(roaming)
        del s["mac"]
        runs[roaming] = breakdown.breakdown(wayside.run(s, seed=1))
    b, base = runs["bgscan-simple"], runs["madwifi"]
    assert "roamed" in set(b.handovers["how"])
    assert b.data_mb >= 2 * 39.0, f"bgscan {b.data_mb:.1f} MB"
    assert b.data_mb > base.data_mb, f"bgscan {b.data_mb:.1f} MB, madwifi {base.data_mb:.1f} MB"


def test_handovers_table_gives_when_where_and_the_gaps(bgscan):
    r, _ = bgscan
    h = r.handovers
    assert h.height >= 8
    roamed = h.filter(pl.col("how") == "roamed")
    assert roamed.height >= 8
    ev = table(r, "events")
    for row in roamed.iter_rows(named=True):
        # A roam: the station's decision, then its reassociation with the new AP.
        mine = ev.filter((pl.col("node") == row["car"]) & (pl.col("time_ns") / 1e9 >= row["time_s"] - 1e-9))
        first = mine.filter(pl.col("event").is_in(["roam", "reassoc-request", "associated"]))
        assert first["event"].to_list()[:3] == ["roam", "reassoc-request", "associated"]
        assert first["peer"].to_list()[:3] == [row["to"]] * 3
        # Authentication and reassociation take milliseconds when the new AP hears the car.
        assert 0 < row["gap_s"] < 1.0
        assert row["lost_mb"] >= 0
        assert math.isnan(row["data_gap_s"]) or row["data_gap_s"] >= row["gap_s"]
    # The table is saved with the run.
    assert set(h.columns) >= {"car", "time_s", "x", "from", "to", "gap_s", "data_gap_s", "lost_mb"}


def test_background_scans_leave_the_channel_for_mac80211s_dwells(bgscan):
    r, _ = bgscan
    f = table(r, "frames").filter((pl.col("node") == "car7") & (pl.col("event") == "tx")
                                  & (pl.col("kind") == "probe-req"))
    ev = table(r, "events").filter((pl.col("node") == "car7") & (pl.col("event") == "background-scan"))
    assert ev.height >= 1
    t0 = ev["time_ns"][0]
    probes = f.filter((pl.col("time_ns") >= t0) & (pl.col("time_ns") < t0 + 1_000_000_000))
    # One probe per scan channel (1, 6, 11), 30 ms after tuning to it, with
    # 30 ms listening and 200 ms at home in between: 260 ms apart, give or
    # take the few ms a probe waits for the medium.
    assert probes.height == 3
    gaps = probes["time_ns"].diff().drop_nulls() / 1e6
    assert all(255 <= g <= 265 for g in gaps), gaps.to_list()


@needs_tshark
def test_tshark_decodes_the_reassociation(bgscan):
    r, d = bgscan
    kinds = set(table(r, "frames").filter(pl.col("node") == "car7")["kind"])
    assert {"reassoc-req", "reassoc-resp"} <= kinds
    rows = dissect(d / "car7.pcap", "wlan.fc.type_subtype == 2 || wlan.fc.type_subtype == 3", "wlan.fixed.current_ap")
    assert {int(x[0], 16) for x in rows} == {SUBTYPE["reassoc-req"], SUBTYPE["reassoc-resp"]}
    assert all(x[-1] == "" for x in rows), "malformed frames"
    # The reassociation request names the AP the car left: ap1 or ap2.
    left = {x[1] for x in rows if int(x[0], 16) == SUBTYPE["reassoc-req"]}
    assert left and left <= {mac(0), mac(1)}


def mac(i: int) -> str:
    return "02:00:" + ":".join(f"{b:02x}" for b in (i + 1).to_bytes(4, "big"))


def dissect(path: Path, where: str, *fields: str) -> list[list[str]]:
    """tshark's subtype, `fields` and malformed flag for the frames `where` selects."""
    args = [TSHARK, "-r", str(path), "-Y", where, "-T", "fields", "-e", "wlan.fc.type_subtype"]
    for f in (*fields, "_ws.malformed"):
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


@needs_tshark
def test_threshold_roaming_on_one_car_disassociates_and_deauthenticates(tmp_path):
    s = corridor(car7={"kind": "threshold", "threshold": "-70 dBm"}, pcap=["car7"])
    s["duration"] = "80 s"  # car7 ends 1.1 km past ap3, where its beacons stop
    r = wayside.run(s, seed=1, pcap=tmp_path)
    moves = table(r, "events").filter(pl.col("event") == "roam")
    assert set(moves["node"]) == {"car7"}, "only car7 roams; the others keep madwifi's behaviour"
    sent = table(r, "frames").filter((pl.col("node") == "car7") & (pl.col("event") == "tx"))
    assert {"disassoc", "deauth"} <= set(sent["kind"])
    rows = dissect(tmp_path / "car7.pcap", "wlan.fc.type_subtype == 10 || wlan.fc.type_subtype == 12", "wlan.fixed.reason_code")
    assert all(x[-1] == "" for x in rows), "malformed frames"
    # Disassociation before a roam: 8, leaving the BSS; deauthentication
    # when the beacons stopped: 4, inactivity.
    reasons = {(int(x[0], 16), x[1]) for x in rows}
    assert reasons == {(SUBTYPE["disassoc"], "0x0008"), (SUBTYPE["deauth"], "0x0004")}


def test_unknown_roaming_profile_is_an_error():
    with pytest.raises(wayside.ScenarioError, match="unknown roaming profile \"fast\".*bgscan-simple"):
        wayside.run(corridor("fast"), seed=1)
    with pytest.raises(wayside.ScenarioError, match="long_interval"):
        wayside.run(corridor({"kind": "bgscan-simple", "short_interval": "60 s", "long_interval": "10 s"}), seed=1)


def test_an_ap_channel_no_station_scans_is_warned_about():
    from wayside.scenario import warnings

    s = corridor()
    assert warnings(s) == []
    s["node"][2]["channel"] = 13
    (w,) = warnings(s)
    assert "'ap3'" in w and "channel 13" in w and "[1, 6, 11]" in w
    del s["management"]["scan_channels"]
    (w,) = warnings(s)
    assert "default scan list for 802.11g" in w


@needs_tshark
def test_a_beacon_interval_in_time_units_is_whole_in_the_capture(tmp_path):
    s = {"name": "tu", "duration": "1 s", "radio": {"standard": "802.11g", "channel": 6},
         "management": {"beacon_interval": "100 TU"},
         "node": [{"name": "ap", "role": "ap", "channel": 6}, {"name": "sta", "role": "sta", "position": [20, 0]}]}
    r = wayside.run(s, seed=1, pcap=tmp_path)
    beacons = table(r, "frames").filter((pl.col("node") == "ap") & (pl.col("kind") == "beacon")
                                        & (pl.col("event") == "tx"))
    assert (beacons["time_ns"].diff().drop_nulls() == 102_400_000).all()
    out = subprocess.run([TSHARK, "-r", str(tmp_path / "ap.pcap"), "-Y", "wlan.fc.type_subtype == 8", "-T", "fields",
                          "-e", "wlan.fixed.beacon"], capture_output=True, text=True, check=True).stdout
    assert out.split() and set(out.split()) == {"100"}
