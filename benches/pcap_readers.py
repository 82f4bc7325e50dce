"""Which library reads 802.11 captures fastest: wayside's reader (dpkt)
against scapy, per frame, on the same radiotap pcap.

Writes a capture of `--frames` frames (beacons, TCP data over LLC/SNAP and
802.11 ACKs in the proportions of a bulk transfer: 1 : 5 : 4), built once
by scapy as templates and repeated, then measures in one sitting:

1. `wayside.pcapread.read_capture` (dpkt: container, radiotap, 802.11,
   LLC, IP, TCP; every record field) over the whole file;
2. scapy (`RawPcapReader` + `RadioTap` dissection, reading the same
   fields) over the first `--scapy-frames` frames, since it is far slower;

and prints frames per second of each and their ratio.

    python benches/pcap_readers.py [--frames 300000] [--scapy-frames 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

AP, CAR = "02:00:00:00:00:01", "02:00:00:00:00:02"


def templates() -> list[bytes]:
    from scapy.all import LLC, SNAP, TCP, Dot11, Dot11Beacon, Dot11Elt, IP, RadioTap, Raw

    def radio(rate: float):
        return RadioTap(present="TSFT+Flags+Rate+Channel+dBm_AntSignal+dBm_AntNoise", Rate=rate,
                        ChannelFrequency=2437, ChannelFlags="OFDM+2GHz", dBm_AntSignal=-60, dBm_AntNoise=-95)

    out = []
    for i in range(10):
        if i == 0:
            p = radio(1) / Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=AP, addr3=AP, SC=i << 4) \
                / Dot11Beacon() / Dot11Elt(ID=0, info=b"roadside")
        elif i % 2:
            p = radio(54) / Dot11(type=2, subtype=0, FCfield="from_DS", addr1=CAR, addr2=AP, addr3=AP, SC=i << 4) \
                / LLC() / SNAP() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=5001, dport=40000, seq=i * 1448, flags="A") \
                / Raw(b"\0" * 1448)
        else:
            p = radio(24) / Dot11(type=1, subtype=13, addr1=AP)
        out.append(bytes(p))
    return out


def scapy_read(path: Path, limit: int) -> int:
    from scapy.all import TCP, Dot11, RadioTap, RawPcapReader

    n = 0
    for buf, _ in RawPcapReader(str(path)):
        p = RadioTap(buf)
        d = p[Dot11]
        fields = (p.Rate, p.dBm_AntSignal, p.dBm_AntNoise, d.type, d.subtype, d.addr1, d.addr2, d.SC, d.FCfield)
        t = p.getlayer(TCP)
        if t is not None:
            fields += (t.seq, t.ack, t.flags, len(t.payload))
        n += 1
        if n >= limit:
            break
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300_000)
    ap.add_argument("--scapy-frames", type=int, default=20_000)
    args = ap.parse_args()

    from scapy.all import RawPcapWriter

    from wayside.pcapread import read_capture

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bulk.pcap"
        frames = templates()
        writer = RawPcapWriter(str(path), linktype=127, sync=False)
        writer.write_header(None)
        for i in range(args.frames):
            writer.write_packet(frames[i % len(frames)], sec=1_000_000 + i // 2000, usec=(i % 2000) * 500)
        writer.close()

        started = time.perf_counter()
        n_dpkt = read_capture(path, "bench").height
        dpkt_s = time.perf_counter() - started

        started = time.perf_counter()
        n_scapy = scapy_read(path, args.scapy_frames)
        scapy_s = time.perf_counter() - started

    dpkt_rate, scapy_rate = n_dpkt / dpkt_s, n_scapy / scapy_s
    print(f"radiotap pcap, {args.frames:,} frames ({path.name})")
    print(f"  wayside.pcapread (dpkt): {n_dpkt:9,} frames in {dpkt_s:7.1f} s: {dpkt_rate:9,.0f} frames/s")
    print(f"  scapy:                   {n_scapy:9,} frames in {scapy_s:7.1f} s: {scapy_rate:9,.0f} frames/s")
    print(f"  dpkt / scapy: {dpkt_rate / scapy_rate:.1f}x")


if __name__ == "__main__":
    main()
