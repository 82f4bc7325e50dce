//! The packets the layers above the MAC exchange: IP packets with TCP, UDP
//! or DHCP inside ([`tcp`], [`udp`]), and ARP packets. They carry headers
//! and lengths, the fields the models act on; the MAC carries them in
//! frames and the wired links as they are. A neutral floor: it imports no
//! layer, so the MAC can carry what transport sends without importing it.

pub mod real;
mod tcp;
mod udp;

pub use tcp::{Flags, Segment, MAX_SACK_BLOCKS};
pub use udp::Datagram;

use crate::geometry::Vec2;
use crate::ids::NodeId;
use crate::units::SimTime;
use std::sync::Arc;

/// IPv4 header bytes.
pub const IP_HEADER: u32 = 20;
/// LLC/SNAP header in front of an IP packet in an 802.11 frame.
pub const LLC_SNAP: u32 = 8;
/// An ARP packet (Ethernet/IPv4).
pub const ARP_BYTES: u32 = 28;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpOp {
    Request,
    Reply,
}

/// BOOTP message bytes (the minimum size RFC 2131 clients send).
pub const DHCP_BYTES: u32 = 300;
/// UDP header in front of a DHCP message.
const UDP_HEADER: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DhcpOp {
    Discover,
    Offer,
    Request,
    Ack,
}

impl DhcpOp {
    pub fn bytes() -> u32 {
        IP_HEADER + UDP_HEADER + DHCP_BYTES
    }
}

/// A position as GPSR puts it on the wire: x and y as IEEE-754
/// single-precision floats (Karp & Kung, MobiCom 2000), kept as their
/// bits so that packets compare exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WirePos {
    x: u32,
    y: u32,
}

impl WirePos {
    /// Bytes on the wire: two 4-byte floats.
    pub const BYTES: u32 = 8;

    pub fn new(p: Vec2) -> WirePos {
        WirePos {
            x: (p.x as f32).to_bits(),
            y: (p.y as f32).to_bits(),
        }
    }

    pub fn get(self) -> Vec2 {
        Vec2::new(f32::from_bits(self.x) as f64, f32::from_bits(self.y) as f64)
    }
}

/// A position beacon's payload: the sender's address (4 bytes, IPv4) and
/// its position — what GPSR's beacons carry (Karp & Kung 2000).
pub const BEACON_BYTES: u32 = 4 + WirePos::BYTES;

/// The routing header greedy geographic forwarding adds to a packet: where
/// its source was when it sent it (so that replies route back; Chen et al.)
/// and where its destination is (what every hop forwards towards; GPSR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeoHeader {
    pub src: WirePos,
    pub dst: WirePos,
    /// When the source sent the packet: trace metadata for end-to-end
    /// latency, not on the air (not in [`GeoHeader::BYTES`]).
    pub sent: SimTime,
}

impl GeoHeader {
    pub const BYTES: u32 = 2 * WirePos::BYTES;
}

/// What a packet carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Arp {
        op: ArpOp,
    },
    Dhcp {
        op: DhcpOp,
    },
    /// A position beacon, sent straight over IP to every neighbour.
    Beacon {
        position: WirePos,
    },
    Udp {
        datagram: Datagram,
        app: u32,
        seq: u64,
        sent: SimTime,
    },
    Tcp(Segment),
    /// A real host's IPv4 packet, as its bytes ([`crate::emulate`]): the
    /// simulated layers carry it, none reads it.
    Real(Arc<[u8]>),
}

/// An IP (or ARP) packet. Carried by value in frames and events: packets
/// are small (headers and lengths; payload bytes, where carried, are shared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: NodeId,
    pub dst: NodeId,
    /// Hops left; a packet is dropped when it would be forwarded at zero.
    pub ttl: u8,
    pub body: Body,
    /// The geographic routing header, if a geographic router added one.
    pub geo: Option<GeoHeader>,
    /// A TCP segment's payload bytes, when its connection carries an
    /// application's bytes ([`crate::sockets::stream`]); else only the
    /// segment's length is modelled.
    pub stream: Option<Arc<[u8]>>,
}

/// The multicast group every application trigger is sent to (stands for an
/// IPv4 group address; traces show it as peer `u32::MAX`, like broadcast).
pub const ALL_HOSTS: NodeId = NodeId(u32::MAX);

/// The initial TTL of every packet (Linux and Windows XP default).
pub const DEFAULT_TTL: u8 = 64;

impl Packet {
    pub fn new(src: NodeId, dst: NodeId, body: Body) -> Packet {
        Packet {
            src,
            dst,
            ttl: DEFAULT_TTL,
            body,
            geo: None,
            stream: None,
        }
    }
}

impl Packet {
    /// Bytes on the wire above the link layer.
    pub fn bytes(&self) -> u32 {
        self.geo.map_or(0, |_| GeoHeader::BYTES) + self.body_bytes()
    }

    fn body_bytes(&self) -> u32 {
        match self.body {
            Body::Beacon { .. } => IP_HEADER + BEACON_BYTES,
            Body::Arp { .. } => ARP_BYTES,
            Body::Dhcp { .. } => DhcpOp::bytes(),
            Body::Udp { ref datagram, .. } => IP_HEADER + datagram.header_bytes() + datagram.len,
            Body::Tcp(ref seg) => IP_HEADER + seg.header_bytes() + seg.len,
            Body::Real(ref bytes) => bytes.len() as u32,
        }
    }
}
