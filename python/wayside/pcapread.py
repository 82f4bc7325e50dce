"""Reading 802.11 monitor-mode captures: pcap or pcapng files whose link
type is 802.11 with a radiotap header (127), with a Prism header (119, as
madwifi wrote them for Hadaller et al. 2007 §3.3), with an AVS header (163),
or bare 802.11 (105). One row per captured frame: when the sniffer's host
saw it, the radio's view (rate, signal and noise in dBm, bad FCS), the
802.11 header (kind, transmitter and receiver addresses, sequence number,
retry, management status) and, in data frames, LLC/SNAP with IPv4 and TCP,
UDP or ARP.

The container, radiotap, 802.11, LLC, IP, TCP, UDP and ARP are dissected
by dpkt (measured 25× faster per frame than scapy on the same file:
benches/pcap_readers.py). dpkt has no dissector for the Prism and AVS
headers (scapy has one for Prism, none for AVS, at its per-frame cost),
so their fixed layouts are unpacked here with `struct`: Prism from madwifi's `wlan_ng_prism2_header` (ten
did/status/len/data items after the device name), AVS from the
AVS WLAN capture header version 1 (64 bytes, big-endian). Frames under
either header are taken to end without their FCS, as Wireshark assumes
by default."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Iterator

import dpkt
import polars as pl
from dpkt import ieee80211 as w80211

LINKTYPE_80211 = 105
LINKTYPE_PRISM = 119
LINKTYPE_RADIOTAP = 127
LINKTYPE_AVS = 163
LINKTYPES = {LINKTYPE_80211: "802.11", LINKTYPE_PRISM: "prism", LINKTYPE_RADIOTAP: "radiotap", LINKTYPE_AVS: "avs"}

BROADCAST = "ff:ff:ff:ff:ff:ff"
NAN = float("nan")

RECORD_SCHEMA = pl.Schema({
    "sniffer": pl.Utf8, "time_s": pl.Float64, "kind": pl.Utf8, "ta": pl.Utf8, "ra": pl.Utf8,
    "seq": pl.Int32, "retry": pl.Boolean, "bad_fcs": pl.Boolean, "rate_mbps": pl.Float32,
    "rssi_dbm": pl.Float32, "noise_dbm": pl.Float32, "bytes": pl.UInt32, "status": pl.Int32,
    "ip_src": pl.Utf8, "ip_dst": pl.Utf8, "proto": pl.Utf8, "sport": pl.Int32, "dport": pl.Int32,
    "tcp_seq": pl.Int64, "tcp_ack": pl.Int64, "tcp_flags": pl.Int32, "payload": pl.Int32,
    "arp_op": pl.Int32, "arp_spa": pl.Utf8, "arp_tpa": pl.Utf8,
})

_MGMT_KINDS = {
    w80211.M_ASSOC_REQ: "assoc-req", w80211.M_ASSOC_RESP: "assoc-resp", w80211.M_REASSOC_REQ: "assoc-req",
    w80211.M_REASSOC_RESP: "assoc-resp", w80211.M_PROBE_REQ: "probe-req", w80211.M_PROBE_RESP: "probe-resp",
    w80211.M_BEACON: "beacon", w80211.M_DISASSOC: "disassoc", w80211.M_AUTH: "auth", w80211.M_DEAUTH: "deauth",
    w80211.M_ACTION: "action", w80211.M_ATIM: "atim",
}
_CTL_KINDS = {w80211.C_ACK: "ack", w80211.C_RTS: "rts", w80211.C_CTS: "cts"}
_RADIOTAP_BAD_FCS = 0x40  # radiotap Flags bit 6: "frame failed FCS check"
_RADIOTAP_FCS_AT_END = 0x10  # radiotap Flags bit 4: the frame includes its FCS
_FCS_BYTES = 4


class CaptureError(ValueError):
    """A capture file that cannot be read."""


def _mac(raw: bytes) -> str:
    return raw.hex(":")


def _radio_view(linktype: int, buf: bytes) -> tuple[bytes, float, float, float, bool, bool]:
    """The 802.11 frame and the radio's view of it: (frame, rate Mb/s,
    signal dBm, noise dBm, bad FCS, FCS included)."""
    if linktype == LINKTYPE_RADIOTAP:
        rt = dpkt.radiotap.Radiotap(buf)
        flags = rt.flags.val if rt.flags_present else 0
        rate = rt.rate.val / 2 if rt.rate_present else NAN  # radiotap Rate: 500 kb/s units
        signal = float(rt.ant_sig.db) if rt.ant_sig_present else NAN
        noise = float(rt.ant_noise.db) if rt.ant_noise_present else NAN
        return buf[rt.length:], rate, signal, noise, bool(flags & _RADIOTAP_BAD_FCS), bool(flags & _RADIOTAP_FCS_AT_END)
    if linktype == LINKTYPE_PRISM:
        # wlan_ng_prism2_header: msgcode, msglen, devname[16], then items of
        # (did u32, status u16, len u16, data u32): hosttime, mactime, channel,
        # rssi, sq, signal, noise, rate, istx, frmlen. madwifi puts signal and
        # noise in dBm and the rate in 500 kb/s units.
        if len(buf) < 144:
            raise dpkt.NeedData("Prism header shorter than 144 bytes")
        msglen = struct.unpack_from("<I", buf, 4)[0]
        items = struct.unpack_from("<" + "IHHI" * 10, buf, 24)
        data = items[3::4]
        signal, noise, rate = data[5], data[6], data[7]
        signed = lambda v: v - (1 << 32) if v >= 1 << 31 else v  # noqa: E731
        return buf[msglen:], rate / 2 if rate else NAN, float(signed(signal)), float(signed(noise)), False, False
    if linktype == LINKTYPE_AVS:
        # AVS capture header v1, big-endian: version, length, mactime,
        # hosttime, phytype, channel, datarate (100 kb/s), antenna, priority,
        # ssi_type (2: dBm), ssi_signal, ssi_noise, preamble, encoding.
        if len(buf) < 64:
            raise dpkt.NeedData("AVS header shorter than 64 bytes")
        (_, length, _, _, _, _, datarate, _, _, ssi_type, signal, noise, _, _) = struct.unpack_from(">IIQQIIIIIIiiII", buf, 0)
        dbm = ssi_type == 2
        return buf[length:], datarate / 10 if datarate else NAN, float(signal) if dbm else NAN, float(noise) if dbm else NAN, False, False
    return buf, NAN, NAN, NAN, False, False


def _addresses(w: Any) -> tuple[str, str, int]:
    """Transmitter, receiver and sequence number (-1 where the frame has none)."""
    if w.type == w80211.MGMT_TYPE:
        return _mac(w.mgmt.src), _mac(w.mgmt.dst), w.mgmt.sequence_number
    if w.type == w80211.CTL_TYPE:
        if w.subtype == w80211.C_RTS:
            return _mac(w.rts.src), _mac(w.rts.dst), -1
        if w.subtype == w80211.C_CTS:
            return "", _mac(w.cts.dst), -1
        if w.subtype == w80211.C_ACK:
            return "", _mac(w.ack.dst), -1
        return "", "", -1
    f = w.data_frame
    # addr1 is the receiver, addr2 the transmitter, whatever the DS bits.
    first, second = {
        w80211.IEEE80211.Data: ("dst", "src"), w80211.IEEE80211.DataFromDS: ("dst", "bssid"),
        w80211.IEEE80211.DataToDS: ("bssid", "src"), w80211.IEEE80211.DataInterDS: ("dst", "src"),
    }[type(f)]
    return _mac(getattr(f, second)), _mac(getattr(f, first)), f.sequence_number


def _payload(row: dict[str, Any], body: bytes) -> None:
    """Fills the row's upper-layer columns from an LLC/SNAP payload."""
    try:
        llc = dpkt.llc.LLC(body)
    except _MALFORMED:
        return  # the frame stands, without its upper layers
    upper = llc.data
    if isinstance(upper, dpkt.arp.ARP):
        row.update(proto="arp", arp_op=upper.op, arp_spa=dpkt.utils.inet_to_str(upper.spa) if len(upper.spa) == 4 else "",
                   arp_tpa=dpkt.utils.inet_to_str(upper.tpa) if len(upper.tpa) == 4 else "")
        return
    if not isinstance(upper, dpkt.ip.IP):
        return
    row.update(ip_src=dpkt.utils.inet_to_str(upper.src), ip_dst=dpkt.utils.inet_to_str(upper.dst))
    seg = upper.data
    if isinstance(seg, dpkt.tcp.TCP):
        row.update(proto="tcp", sport=seg.sport, dport=seg.dport, tcp_seq=seg.seq, tcp_ack=seg.ack,
                   tcp_flags=seg.flags, payload=len(upper) - upper.hl * 4 - seg.off * 4)
    elif isinstance(seg, dpkt.udp.UDP):
        row.update(proto="udp", sport=seg.sport, dport=seg.dport, payload=max(seg.ulen - 8, 0))


def _empty_row(sniffer: str) -> dict[str, Any]:
    return {"sniffer": sniffer, "seq": -1, "status": -1, "ta": "", "ra": "", "ip_src": "", "ip_dst": "", "proto": "",
            "sport": -1, "dport": -1, "tcp_seq": -1, "tcp_ack": -1, "tcp_flags": -1, "payload": -1, "arp_op": -1,
            "arp_spa": "", "arp_tpa": ""}


def decode(linktype: int, ts: float, buf: bytes, sniffer: str) -> dict[str, Any] | None:
    """One captured frame as a record row; None for a malformed frame
    (truncated, or fields dpkt cannot unpack) or one of a kind that says
    nothing about the exchange (reserved subtypes). Never raises on bytes:
    they come from the air."""
    try:
        return _decode(linktype, ts, buf, sniffer)
    except _MALFORMED:
        return None


# What dpkt raises on bytes it cannot make sense of: its own errors, and
# index, key and attribute errors from fields that point past the buffer.
_MALFORMED = (dpkt.UnpackError, struct.error, IndexError, KeyError, AttributeError, ValueError, TypeError)


def _decode(linktype: int, ts: float, buf: bytes, sniffer: str) -> dict[str, Any] | None:
    frame, rate, signal, noise, bad_fcs, fcs_included = _radio_view(linktype, buf)
    row = _empty_row(sniffer)
    row.update(time_s=ts, rate_mbps=rate, rssi_dbm=signal, noise_dbm=noise, bad_fcs=bad_fcs,
               bytes=len(frame) + (0 if fcs_included else _FCS_BYTES))
    w = w80211.IEEE80211(frame, fcs=fcs_included)
    row["retry"] = bool(w.retry)
    if w.type == w80211.MGMT_TYPE:
        kind = _MGMT_KINDS.get(w.subtype)
        if kind == "auth" and len(w.auth.data) >= 2:
            # dpkt's Auth stops after the algorithm and transaction number;
            # the status code is the next little-endian 16-bit field.
            row["status"] = int.from_bytes(w.auth.data[:2], "little")
        elif kind == "assoc-resp":
            body = getattr(w, "assoc_resp", None) or getattr(w, "reassoc_resp", None)
            if body is not None:
                row["status"] = body.status
    elif w.type == w80211.CTL_TYPE:
        kind = _CTL_KINDS.get(w.subtype)
    else:
        kind = "data" if w.subtype in (w80211.D_DATA, w80211.D_QOS_DATA) else "null"
    if kind is None:
        return None
    row["kind"] = kind
    row["ta"], row["ra"], row["seq"] = _addresses(w)
    if kind == "data" and not bad_fcs:
        _payload(row, w.data_frame.data if hasattr(w.data_frame, "data") else b"")
    return row


def _packets(path: Path) -> Iterator[tuple[int, float, bytes]]:
    with path.open("rb") as f:
        try:
            reader = dpkt.pcap.UniversalReader(f)
        except (ValueError, dpkt.UnpackError, struct.error):
            raise CaptureError(f"{path}: neither a pcap nor a pcapng file") from None
        linktype = reader.datalink()
        if linktype not in LINKTYPES:
            raise CaptureError(f"{path}: link type {linktype} is not 802.11; allowed: "
                               + ", ".join(f"{k} ({v})" for k, v in LINKTYPES.items()))
        try:
            for ts, buf in reader:
                yield linktype, float(ts), bytes(buf)
        except (dpkt.NeedData, struct.error, ValueError) as e:
            raise CaptureError(f"{path}: the capture is cut short or damaged ({e})") from None


def read_capture(path: str | Path, sniffer: str) -> pl.DataFrame:
    """Every decodable frame of one capture file, as record rows (see
    RECORD_SCHEMA), tagged with the sniffer's name."""
    p = Path(path)
    if not p.is_file():
        raise CaptureError(f"{p}: no such capture file")
    rows = []
    for linktype, ts, buf in _packets(p):
        row = decode(linktype, ts, buf, sniffer)
        if row is not None:
            rows.append(row)
    return pl.DataFrame(rows, schema=RECORD_SCHEMA) if rows else pl.DataFrame(schema=RECORD_SCHEMA)
