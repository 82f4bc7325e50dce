"""A drive-by capture not made by wayside: frames built and written by
scapy (radiotap + 802.11 beacons, authentication, association, ARP, TCP
over LLC/SNAP, 802.11 ACKs; one sniffer as pcap, one as pcapng), GPS logs
written as plain text (NMEA with our own checksums, GPX), and the
capture.toml that describes them. The car passes the AP at 80 km/h, 10 m
from it, heading east; the GPS on the car reports positions `GPS_DELAY_S`
late and the car's host clock runs `CAR_CLOCK_S` ahead of the AP's."""

from __future__ import annotations

import datetime as dt
import functools
import math
from pathlib import Path

AP_MAC, CAR_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
AP_IP, CAR_IP = "10.0.0.1", "10.0.0.2"
START = dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=dt.timezone.utc).timestamp()
AP_LATLON = (48.0, 11.0)
SPEED = 80 / 3.6
LATERAL_M = 10.0
PASS_S = 15.0  # when the car is abeam of the AP
DURATION_S = 30.0
GPS_DELAY_S = 1.0
CAR_CLOCK_S = 0.25
SEGMENT = 1448
SEGMENTS = 100
DATA_START_S, DATA_STEP_S = 5.0, 0.2
LOST_SEGMENT = 7  # its first airing gets no ACK; the retry does

MANIFEST = f"""
[[node]]
name = "ap"
role = "ap"
mac = "{AP_MAC}"
ip = "{AP_IP}"
gps = "ap.nmea"

[[node]]
name = "car"
role = "sta"
mac = "{CAR_MAC}"
ip = "{CAR_IP}"
gps = "car.gpx"

[[sniffer]]
file = "ap-side.pcap"
host = "ap"

[[sniffer]]
file = "car-side.pcapng"
host = "car"

[app]
from = "ap"
to = "car"

[gps]
delay = "{GPS_DELAY_S} s"
"""


def car_x(t: float) -> float:
    """The car's true position along the road (east of the AP), m."""
    return (t - PASS_S) * SPEED


def _rssi(t: float, at_car: bool) -> int:
    d = math.hypot(car_x(t), LATERAL_M)
    return round((-12 if at_car else -8) - 30 * math.log10(d))


@functools.cache
def _scapy():
    from scapy import all as s

    return s


def _frame(t: float, dot11, at_car: bool, rate: float, seen: bool = True):
    s = _scapy()
    rt = s.RadioTap(present="Flags+Rate+Channel+dBm_AntSignal+dBm_AntNoise", Flags=0, Rate=rate,
                    ChannelFrequency=2437, ChannelFlags="OFDM+2GHz", dBm_AntSignal=_rssi(t, at_car), dBm_AntNoise=-95)
    p = rt / dot11
    p.time = START + t + (CAR_CLOCK_S if at_car else 0.0)
    return p


def _airings() -> list[tuple[float, object, float]]:
    """Every frame on the air: (true time, 802.11 frame, rate Mb/s)."""
    s = _scapy()
    out = []
    seq = {"ap": 0, "car": 0}

    def sc(who: str) -> int:
        seq[who] = (seq[who] + 1) % 4096
        return seq[who] << 4

    def mgmt(t, who, body, subtype):
        a1, a2 = (CAR_MAC, AP_MAC) if who == "ap" else (AP_MAC, CAR_MAC)
        out.append((t, s.Dot11(type=0, subtype=subtype, addr1=a1, addr2=a2, addr3=AP_MAC, SC=sc(who)) / body, 6.0))
        out.append((t + 0.0003, s.Dot11(type=1, subtype=13, addr1=a2), 6.0))

    def data(t, who, payload, acked=True, retry=False, number=None):
        a1, a2 = (CAR_MAC, AP_MAC) if who == "ap" else (AP_MAC, CAR_MAC)
        fc = ("from_DS" if who == "ap" else "to_DS") + ("+retry" if retry else "")
        number = sc(who) if number is None else number
        out.append((t, s.Dot11(type=2, subtype=0, FCfield=fc, addr1=a1, addr2=a2, addr3=AP_MAC, SC=number)
                    / s.LLC() / s.SNAP() / payload, 24.0))
        if acked:
            out.append((t + 0.0008, s.Dot11(type=1, subtype=13, addr1=a2), 24.0))
        return number

    t = 0.05  # beacons between the data frames, not on top of them
    while t < DURATION_S:
        out.append((t, s.Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=AP_MAC, addr3=AP_MAC, SC=sc("ap"))
                    / s.Dot11Beacon() / s.Dot11Elt(ID=0, info=b"roadside"), 1.0))
        t = round(t + 0.2, 6)
    mgmt(3.0, "car", s.Dot11Auth(algo=0, seqnum=1, status=0), 11)
    mgmt(3.01, "ap", s.Dot11Auth(algo=0, seqnum=2, status=0), 11)
    mgmt(3.02, "car", s.Dot11AssoReq() / s.Dot11Elt(ID=0, info=b"roadside"), 0)
    mgmt(3.03, "ap", s.Dot11AssoResp(status=0, AID=1), 1)
    out.append((4.0, s.Dot11(type=2, subtype=0, FCfield="from_DS", addr1="ff:ff:ff:ff:ff:ff", addr2=AP_MAC, addr3=AP_MAC,
                             SC=sc("ap")) / s.LLC() / s.SNAP() / s.ARP(op=1, psrc=AP_IP, pdst=CAR_IP, hwsrc=AP_MAC), 1.0))
    data(4.01, "car", s.ARP(op=2, psrc=CAR_IP, pdst=AP_IP, hwsrc=CAR_MAC, hwdst=AP_MAC))
    isn_ap, isn_car = 1000, 5000
    data(4.5, "ap", s.IP(src=AP_IP, dst=CAR_IP) / s.TCP(sport=40000, dport=5001, seq=isn_ap, flags="S"))
    data(4.51, "car", s.IP(src=CAR_IP, dst=AP_IP) / s.TCP(sport=5001, dport=40000, seq=isn_car, ack=isn_ap + 1, flags="SA"))
    data(4.52, "ap", s.IP(src=AP_IP, dst=CAR_IP) / s.TCP(sport=40000, dport=5001, seq=isn_ap + 1, ack=isn_car + 1, flags="A"))
    for i in range(SEGMENTS):
        t = DATA_START_S + i * DATA_STEP_S
        seg = (s.IP(src=AP_IP, dst=CAR_IP) / s.TCP(sport=40000, dport=5001, seq=isn_ap + 1 + i * SEGMENT,
                                                  ack=isn_car + 1, flags="A") / s.Raw(b"\x00" * SEGMENT))
        if i == LOST_SEGMENT:
            number = data(t, "ap", seg, acked=False)
            data(t + 0.004, "ap", seg, retry=True, number=number)
        else:
            data(t, "ap", seg)
        if i % 2 == 1:
            data(t + 0.05, "car", s.IP(src=CAR_IP, dst=AP_IP) / s.TCP(
                sport=5001, dport=40000, seq=isn_car + 1, ack=isn_ap + 1 + (i + 1) * SEGMENT, flags="A"))
    return sorted(out, key=lambda a: a[0])


def _nmea(body: str) -> str:
    checksum = 0
    for ch in body:
        checksum ^= ord(ch)
    return f"${body}*{checksum:02X}"


def _angle(v: float, digits: int) -> str:
    d = int(abs(v))
    return f"{d:0{digits}d}{(abs(v) - d) * 60:07.4f}"


def _latlon(x: float, y: float) -> tuple[float, float]:
    lat0, lon0 = AP_LATLON
    return lat0 + y / 111_195.0, lon0 + x / (111_195.0 * math.cos(math.radians(lat0)))


def write(directory: Path) -> Path:
    """Writes the capture directory (one run, in DIR/run-1) and returns DIR."""
    s = _scapy()
    run = directory / "run-1"
    run.mkdir(parents=True)
    (directory / "capture.toml").write_text(MANIFEST, encoding="utf-8")
    airings = _airings()
    ap_side = [_frame(t, f, False, r) for t, f, r in airings]
    car_side = [_frame(t, f, True, r) for t, f, r in airings if abs(car_x(t)) < 400]
    s.wrpcap(str(run / "ap-side.pcap"), ap_side, linktype=127)
    s.wrpcapng(str(run / "car-side.pcapng"), car_side)
    lines = []
    for k in range(int(DURATION_S) + 1):
        when = dt.datetime.fromtimestamp(START + k, dt.timezone.utc)
        lat, lon = _latlon(0.0, LATERAL_M)
        lines.append(_nmea(f"GPRMC,{when:%H%M%S}.00,A,{_angle(lat, 2)},N,{_angle(lon, 3)},E,0.0,0.0,{when:%d%m%y},,"))
    (run / "ap.nmea").write_text("\r\n".join(lines) + "\r\n", encoding="ascii")
    points = []
    for k in range(int(DURATION_S) + 1):
        lat, lon = _latlon(car_x(k - GPS_DELAY_S), 0.0)
        when = dt.datetime.fromtimestamp(START + k + CAR_CLOCK_S, dt.timezone.utc)
        points.append(f'<trkpt lat="{lat:.7f}" lon="{lon:.7f}"><time>{when:%Y-%m-%dT%H:%M:%S.%f}Z</time></trkpt>')
    (run / "car.gpx").write_text(
        '<?xml version="1.0"?>\n<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">'
        f"<trk><trkseg>{''.join(points)}</trkseg></trk></gpx>\n", encoding="utf-8")
    return directory
