//! A simulated frame as the bytes a radio would have put on the air: the
//! 802.11 MAC header (frame control, duration, addresses, sequence
//! control), the body — management fixed fields and elements, or LLC/SNAP
//! and the IPv4/TCP/UDP/ARP/DHCP packet built from the fields the
//! simulator's packet carries, its payload the application's bytes where
//! the simulator carries them (UDP datagrams, TCP streams of real bytes)
//! and zeros elsewhere — and the FCS. The MPDU is
//! exactly the frame's simulated PSDU length.
//!
//! Addressing: node *i* has MAC 02:00:*i+1* (32-bit, big-endian) and IPv4
//! 10.*i+1* (24-bit) — the 10.0.0.*i+1* of [`crate::net`] for the first 254
//! nodes; the multicast group [`crate::packet::ALL_HOSTS`] is 224.0.0.1.

use crate::ids::Dst;
use crate::mac::adhoc::{AdhocFrame, AdhocKind};
use crate::mac::mgmt::MgmtBody;
use crate::mac::mgmt::Role;
use crate::mac::{Frame, Payload};
use crate::packet::Segment;
use crate::packet::{ArpOp, DhcpOp};
use crate::packet::{Body, Packet, ALL_HOSTS};
use crate::phy::mode::Mode;
use crate::trace::FrameKind;
use etherparse::{ArpEthIpv4Packet, ArpOperation, ArpPacket, PacketBuilder, TcpOptionElement};
use std::collections::BTreeMap;

pub type MacAddr = [u8; 6];

pub const BROADCAST: MacAddr = [0xff; 6];
/// The BSSID of frames between independent (ad hoc) nodes.
pub const IBSS: MacAddr = [0x02, 0, 0, 0, 0, 0];
/// The SSID every AP advertises.
pub const SSID: &[u8] = b"wayside";
/// The shift written in the window-scale option of SYNs, and applied to
/// the window field of a connection that negotiated scaling.
pub const WINDOW_SHIFT: u8 = 7;

/// The MAC address of node `n`.
pub fn mac_of(n: u32) -> MacAddr {
    if n == ALL_HOSTS.0 {
        return [0x01, 0x00, 0x5e, 0, 0, 1];
    }
    let b = (n + 1).to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The IPv4 address of node `n`.
pub fn ip_of(n: u32) -> [u8; 4] {
    if n == ALL_HOSTS.0 {
        return [224, 0, 0, 1];
    }
    let b = (n + 1).to_be_bytes();
    [10, b[1], b[2], b[3]]
}

/// The node whose address is `ip` ([`ip_of`]'s inverse), if any.
pub fn node_of(ip: [u8; 4]) -> Option<u32> {
    let n = u32::from_be_bytes([0, ip[1], ip[2], ip[3]]);
    (ip[0] == 10 && n > 0).then(|| n - 1)
}

/// Frame control, first byte: subtype, type, version 0.
fn frame_control(kind: FrameKind) -> u8 {
    let (ty, subtype) = match kind {
        FrameKind::AssocReq => (0, 0),
        FrameKind::AssocResp => (0, 1),
        FrameKind::ReassocReq => (0, 2),
        FrameKind::ReassocResp => (0, 3),
        FrameKind::ProbeReq => (0, 4),
        FrameKind::ProbeResp => (0, 5),
        FrameKind::Beacon => (0, 8),
        FrameKind::Disassoc => (0, 10),
        FrameKind::Auth => (0, 11),
        FrameKind::Deauth => (0, 12),
        FrameKind::Rts => (1, 11),
        FrameKind::Cts => (1, 12),
        FrameKind::Ack => (1, 13),
        FrameKind::BlockAckReq => (1, 8),
        FrameKind::BlockAck => (1, 9),
        FrameKind::Data => (2, 0),
    };
    (subtype << 4) | (ty << 2)
}

const TO_DS: u8 = 0x01;
const FROM_DS: u8 = 0x02;
const RETRY: u8 = 0x08;

/// Element IDs.
const IE_SSID: u8 = 0;
const IE_RATES: u8 = 1;
const IE_DS_PARAMS: u8 = 3;
const IE_VENDOR: u8 = 221;

/// Capability information: ESS, short preamble, short slot time.
const CAP_ESS: u16 = 0x0001;
const CAP_SHORT_PREAMBLE: u16 = 0x0020;

/// What the encoder knows of the network besides the frame.
pub struct Network {
    pub roles: Vec<Role>,
    /// The standard's modes and the basic ones, for the rates element.
    pub modes: &'static [Mode],
    pub basic: &'static [Mode],
    pub beacon_interval_tu: u16,
    pub short_preamble: bool,
}

/// Builds frames; remembers which TCP connections offered window scaling.
pub struct Encoder {
    net: Network,
    /// (src, src port, dst, dst port) → whether that side's SYN offered scaling.
    scaling: BTreeMap<(u32, u16, u32, u16), bool>,
    zeros: Vec<u8>,
}

impl Encoder {
    pub fn new(net: Network) -> Encoder {
        Encoder {
            net,
            scaling: BTreeMap::new(),
            zeros: Vec::new(),
        }
    }

    fn role(&self, n: u32) -> Role {
        self.net
            .roles
            .get(n as usize)
            .copied()
            .unwrap_or(Role::Independent)
    }

    /// Notes what `frame` tells of the connections it carries (a SYN's
    /// window-scale offer); every transmitted frame goes through here.
    pub fn observe(&mut self, frame: &Frame) {
        for p in packets(&frame.payload) {
            if let Body::Tcp(s) = p.body {
                if s.flags.syn {
                    self.scaling
                        .insert((p.src.0, s.src_port, p.dst.0, s.dst_port), s.window_scale);
                }
            }
        }
    }

    /// Appends `frame` (MPDU with FCS; `channel` for the DS parameter
    /// element; `tsft_us` for the beacon timestamp) to `out`, with a correct
    /// FCS or, if `bad_fcs`, its complement.
    pub fn write(
        &mut self,
        frame: &Frame,
        channel: u32,
        tsft_us: u64,
        bad_fcs: bool,
        out: &mut Vec<u8>,
    ) {
        let start = out.len();
        let src = frame.src.0;
        let dst = frame.dst.trace_id();
        let ra = match frame.dst {
            Dst::Node(d) => mac_of(d.0),
            Dst::Broadcast => BROADCAST,
        };
        let retry = if frame.retry { RETRY } else { 0 };
        let duration = (frame.duration.as_ns().div_ceil(1000)).min(32767) as u16;
        let header = |out: &mut Vec<u8>, flags: u8| {
            out.push(frame_control(frame.kind));
            out.push(flags | retry);
            out.extend_from_slice(&duration.to_le_bytes());
            out.extend_from_slice(&ra);
        };
        let seq_ctl = (frame.seq << 4).to_le_bytes();
        match frame.kind {
            FrameKind::Ack | FrameKind::Cts => header(out, 0),
            FrameKind::Rts => {
                header(out, 0);
                out.extend_from_slice(&mac_of(src));
            }
            FrameKind::BlockAck | FrameKind::BlockAckReq => {
                header(out, 0);
                out.extend_from_slice(&mac_of(src));
                // BA control: compressed bitmap, TID 0; then the starting
                // sequence control and, in a Block Ack, the bitmap.
                out.extend_from_slice(&0x0004u16.to_le_bytes());
                match frame.payload {
                    Payload::BlockAck { ssn, bitmap } => {
                        out.extend_from_slice(&(ssn << 4).to_le_bytes());
                        out.extend_from_slice(&bitmap.to_le_bytes());
                    }
                    Payload::BlockAckReq { ssn } => {
                        out.extend_from_slice(&(ssn << 4).to_le_bytes());
                    }
                    _ => {}
                }
            }
            FrameKind::Data => {
                let (flags, addr3) = self.data_addressing(frame, src, dst);
                header(out, flags);
                out.extend_from_slice(&mac_of(src));
                out.extend_from_slice(&addr3);
                out.extend_from_slice(&seq_ctl);
                self.data_body(&frame.payload, out);
            }
            _ => {
                header(out, 0);
                out.extend_from_slice(&mac_of(src));
                let bssid = match (self.role(src), frame.dst) {
                    (Role::Ap, _) => mac_of(src),
                    (_, Dst::Node(d)) if self.role(d.0) == Role::Ap => mac_of(d.0),
                    (_, Dst::Node(_)) => IBSS,
                    (_, Dst::Broadcast) => BROADCAST,
                };
                out.extend_from_slice(&bssid);
                out.extend_from_slice(&seq_ctl);
                if let Payload::Mgmt(body) = &frame.payload {
                    self.mgmt_body(body, dst, channel, tsft_us, out);
                }
            }
        }
        // The MPDU is the simulated PSDU: body padded with zeros (or cut) to it.
        let mpdu = frame.psdu_bytes.saturating_sub(4) as usize;
        out.resize(start + mpdu, 0);
        let fcs = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&(if bad_fcs { !fcs } else { fcs }).to_le_bytes());
    }

    /// DS bits and the third address of a data frame from `src` to `dst`.
    fn data_addressing(&self, frame: &Frame, src: u32, dst: u32) -> (u8, MacAddr) {
        let first = packets(&frame.payload).next();
        let (src_role, dst_role) = (
            self.role(src),
            if dst == u32::MAX {
                None
            } else {
                Some(self.role(dst))
            },
        );
        match (src_role, dst_role) {
            // To the AP: the third address is the packet's final destination.
            (Role::Sta, Some(Role::Ap)) => (TO_DS, first.map_or(mac_of(dst), final_mac)),
            // From the AP: the third address is the packet's original source.
            (Role::Ap, _) => (FROM_DS, first.map_or(mac_of(src), |p| mac_of(p.src.0))),
            (Role::Sta, None) => (0, BROADCAST),
            _ => (0, IBSS),
        }
    }

    /// LLC/SNAP and the packet (the first of a fast frame's two).
    fn data_body(&mut self, payload: &Payload, out: &mut Vec<u8>) {
        let Some(p) = packets(payload).next() else {
            if let Payload::Datagram { data, .. } = payload {
                // An application's own protocol: local experimental ethertype 2.
                out.extend_from_slice(&llc_snap(0x88b6));
                out.extend_from_slice(data);
                return;
            }
            // Filler from a frame source: local experimental ethertype 1.
            out.extend_from_slice(&llc_snap(0x88b5));
            return;
        };
        match &p.body {
            Body::Arp { op } => {
                out.extend_from_slice(&llc_snap(0x0806));
                let (operation, target_mac) = match op {
                    ArpOp::Request => (ArpOperation::REQUEST, [0; 6]),
                    ArpOp::Reply => (ArpOperation::REPLY, mac_of(p.dst.0)),
                };
                let arp = ArpEthIpv4Packet {
                    operation,
                    sender_mac: mac_of(p.src.0),
                    sender_ipv4: ip_of(p.src.0),
                    target_mac,
                    target_ipv4: ip_of(p.dst.0),
                };
                ArpPacket::from(arp).write(out).expect("writing to a Vec");
            }
            Body::Tcp(s) => {
                out.extend_from_slice(&llc_snap(0x0800));
                self.tcp(p, s, out);
            }
            Body::Real(bytes) => {
                // A real host's packet: its own bytes, options and payload.
                out.extend_from_slice(&llc_snap(0x0800));
                out.extend_from_slice(bytes);
            }
            Body::Udp { datagram, .. } => {
                out.extend_from_slice(&llc_snap(0x0800));
                let payload = match &datagram.data {
                    Some(data) => data,
                    None => self.zeros(datagram.len as usize),
                };
                let b = PacketBuilder::ipv4(ip_of(p.src.0), ip_of(p.dst.0), p.ttl)
                    .udp(datagram.src_port, datagram.dst_port);
                b.write(out, payload)
                    .expect("a UDP packet within IPv4's length");
            }
            Body::Beacon { position } => {
                // Not an IP protocol with a dissector: the local
                // experimental ethertype, then the beacon's bytes.
                out.extend_from_slice(&llc_snap(0x88b5));
                out.extend_from_slice(&ip_of(p.src.0));
                let at = position.get();
                out.extend_from_slice(&(at.x as f32).to_be_bytes());
                out.extend_from_slice(&(at.y as f32).to_be_bytes());
            }
            Body::Dhcp { op } => {
                out.extend_from_slice(&llc_snap(0x0800));
                let from_client = matches!(op, DhcpOp::Discover | DhcpOp::Request);
                let (client, server) = if from_client {
                    (p.src.0, p.dst.0)
                } else {
                    (p.dst.0, p.src.0)
                };
                let (ip_src, ports) = if from_client {
                    ([0; 4], (68, 67))
                } else {
                    (ip_of(server), (67, 68))
                };
                let bootp = dhcp_message(*op, client, server);
                let b = PacketBuilder::ipv4(ip_src, [255; 4], p.ttl).udp(ports.0, ports.1);
                b.write(out, &bootp)
                    .expect("a DHCP packet within IPv4's length");
            }
        }
    }

    fn tcp(&mut self, p: &Packet, s: &Segment, out: &mut Vec<u8>) {
        let (a, b) = (p.src.0, p.dst.0);
        let scaled = !s.flags.syn
            && self
                .scaling
                .get(&(a, s.src_port, b, s.dst_port))
                .copied()
                .unwrap_or(false)
            && self
                .scaling
                .get(&(b, s.dst_port, a, s.src_port))
                .copied()
                .unwrap_or(false);
        let window = if scaled {
            s.window >> WINDOW_SHIFT
        } else {
            s.window
        }
        .min(65535) as u16;
        let mut options = Vec::new();
        if let Some(mss) = s.mss {
            options.push(TcpOptionElement::MaximumSegmentSize(mss));
        }
        if s.sack_permitted {
            options.push(TcpOptionElement::SelectiveAcknowledgementPermitted);
        }
        if s.window_scale {
            options.push(TcpOptionElement::WindowScale(WINDOW_SHIFT));
        }
        let blocks: Vec<(u32, u32)> = s.sack.iter().flatten().copied().collect();
        if let Some((&first, rest)) = blocks.split_first() {
            let mut more = [None; 3];
            for (m, b) in more.iter_mut().zip(rest) {
                *m = Some(*b);
            }
            options.push(TcpOptionElement::SelectiveAcknowledgement(first, more));
        }
        // A connection that carries an application's bytes shows them; any
        // other segment is its length of zeros.
        let payload = match &p.stream {
            Some(bytes) if bytes.len() == s.len as usize => &bytes[..],
            _ => self.zeros(s.len as usize),
        };
        let mut b = PacketBuilder::ipv4(ip_of(a), ip_of(b), p.ttl)
            .tcp(s.src_port, s.dst_port, s.seq, window);
        if s.flags.syn {
            b = b.syn();
        }
        if s.flags.ack {
            b = b.ack(s.ack);
        }
        if s.flags.fin {
            b = b.fin();
        }
        if s.flags.rst {
            b = b.rst();
        }
        let b = b.options(&options).expect("TCP options within 40 bytes");
        b.write(out, payload)
            .expect("a TCP packet within IPv4's length");
    }

    fn zeros(&mut self, n: usize) -> &[u8] {
        if self.zeros.len() < n {
            self.zeros.resize(n, 0);
        }
        &self.zeros[..n]
    }

    /// Fixed fields and elements of a management frame body.
    fn mgmt_body(&self, body: &MgmtBody, dst: u32, channel: u32, tsft_us: u64, out: &mut Vec<u8>) {
        let capability = CAP_ESS
            | if self.net.short_preamble {
                CAP_SHORT_PREAMBLE
            } else {
                0
            };
        let start = out.len();
        match body {
            MgmtBody::Beacon { .. }
            | MgmtBody::ProbeResp
            | MgmtBody::Adhoc(AdhocFrame {
                kind: AdhocKind::Beacon | AdhocKind::ProbeResp,
                ..
            }) => {
                out.extend_from_slice(&tsft_us.to_le_bytes());
                out.extend_from_slice(&self.net.beacon_interval_tu.to_le_bytes());
                out.extend_from_slice(&capability.to_le_bytes());
                self.common_elements(out);
                out.extend_from_slice(&[IE_DS_PARAMS, 1, channel.min(255) as u8]);
            }
            MgmtBody::ProbeReq
            | MgmtBody::Adhoc(AdhocFrame {
                kind: AdhocKind::ProbeReq,
                ..
            }) => self.common_elements(out),
            MgmtBody::Auth { seq } => {
                out.extend_from_slice(&0u16.to_le_bytes()); // open system
                out.extend_from_slice(&u16::from(*seq).to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes()); // success
            }
            MgmtBody::AssocReq | MgmtBody::ReassocReq { .. } => {
                out.extend_from_slice(&capability.to_le_bytes());
                out.extend_from_slice(&10u16.to_le_bytes()); // listen interval, beacons
                if let MgmtBody::ReassocReq { current } = body {
                    out.extend_from_slice(&mac_of(current.0));
                }
                self.common_elements(out);
            }
            MgmtBody::AssocResp | MgmtBody::ReassocResp => {
                out.extend_from_slice(&capability.to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes()); // success
                let aid = 0xc000 | ((dst.wrapping_add(1)) & 0x3fff) as u16;
                out.extend_from_slice(&aid.to_le_bytes());
                self.rates_element(out);
            }
            MgmtBody::Disassoc { reason } | MgmtBody::Deauth { reason } => {
                out.extend_from_slice(&reason.to_le_bytes());
            }
        }
        // The rest of the simulated body length is one vendor element
        // (for beacons, where the SNR map an environment-aware AP sends goes).
        let room = (body.body_bytes() as usize).saturating_sub(out.len() - start);
        if room >= 2 {
            out.extend_from_slice(&[IE_VENDOR, (room - 2).min(255) as u8]);
        }
    }

    fn common_elements(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[IE_SSID, SSID.len() as u8]);
        out.extend_from_slice(SSID);
        self.rates_element(out);
    }

    /// Supported rates: up to eight of the standard's, basic ones flagged.
    fn rates_element(&self, out: &mut Vec<u8>) {
        let rates: Vec<u8> = self
            .net
            .modes
            .iter()
            .take(8)
            .map(|m| {
                let units = (m.rate.mbps() * 2.0).round() as u8;
                if self.net.basic.iter().any(|b| b.rate == m.rate) {
                    units | 0x80
                } else {
                    units
                }
            })
            .collect();
        out.extend_from_slice(&[IE_RATES, rates.len() as u8]);
        out.extend_from_slice(&rates);
    }
}

/// The packets a frame carries (an A-MPDU: its MPDUs').
fn packets(payload: &Payload) -> Box<dyn Iterator<Item = &Packet> + '_> {
    let (a, b) = match payload {
        Payload::Packet(p) => (Some(p), None),
        Payload::FastFrame(pair) => (Some(&pair[0]), Some(&pair[1])),
        Payload::Aggregate(mpdus) => {
            return Box::new(mpdus.iter().flat_map(|m| packets(&m.payload)));
        }
        Payload::Raw
        | Payload::Mgmt(_)
        | Payload::Datagram { .. }
        | Payload::BlockAck { .. }
        | Payload::BlockAckReq { .. } => (None, None),
    };
    Box::new(a.into_iter().chain(b))
}

/// Where a packet is finally going, at layer 2.
fn final_mac(p: &Packet) -> MacAddr {
    match p.body {
        Body::Dhcp { .. } => BROADCAST,
        Body::Arp { op: ArpOp::Request } => BROADCAST,
        _ => mac_of(p.dst.0),
    }
}

fn llc_snap(ethertype: u16) -> [u8; 8] {
    let t = ethertype.to_be_bytes();
    [0xaa, 0xaa, 0x03, 0, 0, 0, t[0], t[1]]
}

/// A BOOTP/DHCP message: the fixed BOOTP fields, the magic cookie, the
/// message type option and the end option.
fn dhcp_message(op: DhcpOp, client: u32, server: u32) -> Vec<u8> {
    let (bootp_op, msg_type) = match op {
        DhcpOp::Discover => (1, 1),
        DhcpOp::Offer => (2, 2),
        DhcpOp::Request => (1, 3),
        DhcpOp::Ack => (2, 5),
    };
    let mut m = vec![0u8; crate::packet::DHCP_BYTES as usize];
    m[0] = bootp_op;
    m[1] = 1; // Ethernet
    m[2] = 6;
    m[4..8].copy_from_slice(&(client + 1).to_be_bytes()); // transaction id
    m[10] = 0x80; // broadcast replies
    if bootp_op == 2 {
        m[16..20].copy_from_slice(&ip_of(client)); // yiaddr
        m[20..24].copy_from_slice(&ip_of(server)); // siaddr
    }
    m[28..34].copy_from_slice(&mac_of(client));
    m[236..240].copy_from_slice(&[99, 130, 83, 99]);
    m[240..244].copy_from_slice(&[53, 1, msg_type, 255]);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;
    use crate::packet::Flags;
    use crate::phy::mode::Standard;
    use crate::units::SimTime;
    use std::sync::Arc;

    const AP: u32 = 0;
    const CAR: u32 = 1;
    const SERVER: u32 = 2;

    fn encoder() -> Encoder {
        Encoder::new(Network {
            roles: vec![Role::Ap, Role::Sta, Role::Independent],
            modes: Standard::G.modes(),
            basic: Standard::G.basic_rates(),
            beacon_interval_tu: 100,
            short_preamble: true,
        })
    }

    fn data(src: u32, dst: Dst, p: Packet, retry: bool) -> Frame {
        let psdu_bytes = crate::mac::DATA_OVERHEAD + crate::packet::LLC_SNAP + p.bytes();
        Frame {
            kind: FrameKind::Data,
            src: NodeId(src),
            dst,
            seq: 0x123,
            retry,
            attempt: u8::from(retry),
            psdu_bytes,
            duration: SimTime::from_us(44),
            payload: Payload::Packet(p),
            report: None,
        }
    }

    fn segment(flags: Flags, window: u32, window_scale: bool) -> Segment {
        Segment {
            src_port: 5001,
            dst_port: 40000,
            seq: 7,
            ack: 9,
            flags,
            window,
            len: 0,
            window_scale,
            ..Default::default()
        }
    }

    fn encode(e: &mut Encoder, f: &Frame) -> Vec<u8> {
        let mut out = Vec::new();
        e.write(f, 6, 0, false, &mut out);
        assert_eq!(out.len() as u32, f.psdu_bytes);
        out
    }

    #[test]
    fn test_station_to_ap_is_to_ds_with_the_final_destination() {
        let p = Packet::new(
            NodeId(CAR),
            NodeId(SERVER),
            Body::Tcp(segment(
                Flags {
                    ack: true,
                    ..Flags::default()
                },
                1000,
                false,
            )),
        );
        let b = encode(&mut encoder(), &data(CAR, Dst::Node(NodeId(AP)), p, true));
        assert_eq!((b[0], b[1]), (0x08, TO_DS | RETRY));
        assert_eq!(u16::from_le_bytes([b[2], b[3]]), 44);
        assert_eq!(
            (&b[4..10], &b[10..16], &b[16..22]),
            (&mac_of(AP)[..], &mac_of(CAR)[..], &mac_of(SERVER)[..])
        );
        assert_eq!(u16::from_le_bytes([b[22], b[23]]), 0x123 << 4);
        assert_eq!(&b[24..32], &llc_snap(0x0800));
        assert_eq!(
            (&b[44..48], &b[48..52]),
            (&ip_of(CAR)[..], &ip_of(SERVER)[..])
        );
    }

    #[test]
    fn test_ap_to_station_is_from_ds_with_the_original_source() {
        let p = Packet::new(NodeId(SERVER), NodeId(CAR), Body::Arp { op: ArpOp::Reply });
        let b = encode(&mut encoder(), &data(AP, Dst::Node(NodeId(CAR)), p, false));
        assert_eq!((b[1], &b[16..22]), (FROM_DS, &mac_of(SERVER)[..]));
        let arp = &b[32..];
        assert_eq!(u16::from_be_bytes([arp[6], arp[7]]), 2);
        assert_eq!(
            (&arp[8..14], &arp[14..18], &arp[18..24]),
            (&mac_of(SERVER)[..], &ip_of(SERVER)[..], &mac_of(CAR)[..])
        );
    }

    #[test]
    fn test_window_is_shifted_only_where_both_syns_offered_scaling() {
        let mut e = encoder();
        let syn = |from: u32, to: u32, scale: bool| {
            let mut s = segment(
                Flags {
                    syn: true,
                    ..Flags::default()
                },
                65535,
                scale,
            );
            if from == CAR {
                (s.src_port, s.dst_port) = (40000, 5001);
            }
            data(
                from,
                Dst::Node(NodeId(to)),
                Packet::new(NodeId(from), NodeId(to), Body::Tcp(s)),
                false,
            )
        };
        let big = data(
            AP,
            Dst::Node(NodeId(CAR)),
            Packet::new(
                NodeId(AP),
                NodeId(CAR),
                Body::Tcp(segment(Flags::default(), 1 << 20, false)),
            ),
            false,
        );
        let window = |b: &[u8]| u16::from_be_bytes([b[32 + 20 + 14], b[32 + 20 + 15]]);
        e.observe(&syn(AP, CAR, true));
        assert_eq!(
            window(&encode(&mut e, &big)),
            65535,
            "only one side offered"
        );
        e.observe(&syn(CAR, AP, true));
        assert_eq!(
            window(&encode(&mut e, &big)),
            (1 << 20 >> WINDOW_SHIFT) as u16
        );
        let s = encode(&mut e, &syn(AP, CAR, true));
        assert_eq!(window(&s), 65535, "a SYN's window is never scaled");
        assert!(
            s.windows(3).any(|w| w == [3, 3, WINDOW_SHIFT]),
            "window-scale option"
        );
    }

    #[test]
    fn test_a_segment_of_a_byte_stream_carries_its_bytes_and_others_zeros() {
        let mut seg = segment(
            Flags {
                ack: true,
                ..Flags::default()
            },
            1000,
            false,
        );
        seg.len = 5;
        let tail = |p: Packet| {
            let b = encode(
                &mut encoder(),
                &data(SERVER, Dst::Node(NodeId(CAR)), p, false),
            );
            b[b.len() - 4 - 5..b.len() - 4].to_vec()
        };
        let bytes: Arc<[u8]> = Arc::from(&b"hello"[..]);
        let real = Packet {
            stream: Some(bytes),
            ..Packet::new(NodeId(SERVER), NodeId(CAR), Body::Tcp(seg))
        };
        assert_eq!(tail(real), b"hello");
        assert_eq!(
            tail(Packet::new(NodeId(SERVER), NodeId(CAR), Body::Tcp(seg))),
            [0; 5]
        );
    }

    #[test]
    fn test_beacon_body_and_bad_fcs() {
        let f = Frame {
            kind: FrameKind::Beacon,
            src: NodeId(AP),
            dst: Dst::Broadcast,
            seq: 5,
            retry: false,
            attempt: 0,
            psdu_bytes: 80 + 28,
            duration: SimTime::ZERO,
            payload: Payload::Mgmt(MgmtBody::Beacon { map: None }),
            report: None,
        };
        let mut e = encoder();
        let mut good = Vec::new();
        e.write(&f, 11, 0x0102, false, &mut good);
        assert_eq!(
            (good[0], &good[4..10], &good[16..22]),
            (0x80, &BROADCAST[..], &mac_of(AP)[..])
        );
        let body = &good[24..];
        assert_eq!(u64::from_le_bytes(body[..8].try_into().unwrap()), 0x0102);
        assert_eq!(u16::from_le_bytes([body[8], body[9]]), 100);
        assert_eq!(
            u16::from_le_bytes([body[10], body[11]]),
            CAP_ESS | CAP_SHORT_PREAMBLE
        );
        assert_eq!(
            &body[12..14 + SSID.len()],
            &[&[IE_SSID, SSID.len() as u8][..], SSID].concat()[..]
        );
        let ds = body
            .windows(2)
            .position(|w| w == [IE_DS_PARAMS, 1])
            .unwrap();
        assert_eq!(body[ds + 2], 11);
        let mut bad = Vec::new();
        e.write(&f, 11, 0x0102, true, &mut bad);
        let n = good.len() - 4;
        assert_eq!(good[..n], bad[..n]);
        assert_eq!(
            u32::from_le_bytes(good[n..].try_into().unwrap()),
            crc32fast::hash(&good[..n])
        );
        assert_eq!(
            u32::from_le_bytes(bad[n..].try_into().unwrap()),
            !crc32fast::hash(&good[..n])
        );
    }
}
