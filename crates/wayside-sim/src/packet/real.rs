//! A real host's IPv4 packet as the simulator sees it ([`super::Body::Real`]):
//! the few header fields the emulator reads to route it and trace it,
//! parsed from its bytes without trusting them.

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

/// What the emulator reads of a real packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealView {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub ttl: u8,
    pub transport: RealTransport,
}

/// The transport header of a real packet, as far as it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealTransport {
    Tcp(RealTcp),
    /// UDP: the payload's offset and length in the packet.
    Udp {
        offset: usize,
        len: usize,
    },
    Other,
}

/// A real TCP segment's ports, sequence numbers, flags and payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealTcp {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub syn: bool,
    pub has_ack: bool,
    pub fin: bool,
    pub rst: bool,
    pub len: u32,
}

impl RealView {
    /// Reads an IPv4 packet; `None` for anything else (IPv6, ARP, a
    /// truncated or malformed header).
    pub fn parse(bytes: &[u8]) -> Option<RealView> {
        let sliced = SlicedPacket::from_ip(bytes).ok()?;
        let Some(NetSlice::Ipv4(ip)) = &sliced.net else {
            return None;
        };
        let h = ip.header();
        let transport = match &sliced.transport {
            Some(TransportSlice::Tcp(t)) => RealTransport::Tcp(RealTcp {
                src_port: t.source_port(),
                dst_port: t.destination_port(),
                seq: t.sequence_number(),
                ack: t.acknowledgment_number(),
                syn: t.syn(),
                has_ack: t.ack(),
                fin: t.fin(),
                rst: t.rst(),
                len: t.payload().len() as u32,
            }),
            Some(TransportSlice::Udp(u)) => {
                let payload = u.payload();
                let offset = payload.as_ptr() as usize - bytes.as_ptr() as usize;
                RealTransport::Udp {
                    offset,
                    len: payload.len(),
                }
            }
            _ => RealTransport::Other,
        };
        Some(RealView {
            src: h.source(),
            dst: h.destination(),
            ttl: h.ttl(),
            transport,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    #[test]
    fn test_tcp_fields_and_payload_length() {
        let b = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 3], 61)
            .tcp(40000, 80, 1000, 512)
            .syn()
            .ack(77);
        let mut bytes = Vec::new();
        b.write(&mut bytes, b"hello").unwrap();
        let v = RealView::parse(&bytes).unwrap();
        assert_eq!((v.src, v.dst, v.ttl), ([10, 0, 0, 1], [10, 0, 0, 3], 61));
        let RealTransport::Tcp(t) = v.transport else {
            panic!("not TCP: {v:?}")
        };
        assert_eq!(
            (t.src_port, t.dst_port, t.seq, t.ack),
            (40000, 80, 1000, 77)
        );
        assert!(t.syn && t.has_ack && !t.fin && !t.rst);
        assert_eq!(t.len, 5);
    }

    #[test]
    fn test_udp_payload_is_located() {
        let b = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 6000);
        let mut bytes = Vec::new();
        b.write(&mut bytes, b"abc").unwrap();
        let v = RealView::parse(&bytes).unwrap();
        let RealTransport::Udp { offset, len } = v.transport else {
            panic!("not UDP: {v:?}")
        };
        assert_eq!(&bytes[offset..offset + len], b"abc");
    }

    #[test]
    fn test_garbage_and_ipv6_are_refused() {
        assert_eq!(RealView::parse(&[0x45, 0, 0]), None);
        assert_eq!(RealView::parse(&[0x60; 40]), None);
        assert_eq!(RealView::parse(&[]), None);
    }
}
