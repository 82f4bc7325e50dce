//! What an MSDU carries, as the `mac` trace's `content` column records it
//! ([`MsduContent`]): TCP segments by their role (a pure acknowledgement,
//! connection control, data) and Broadside datagrams — raw or over UDP —
//! by the class the `broadside` crate's own counters give them. This is
//! what splits the bytes a Broadside receiver sends back into TCP's
//! acknowledgements and Broadside's own (Zahn et al. 2009, §5.2).

use super::Payload;
use crate::packet::real::{RealTransport, RealView};
use crate::packet::{Body, Packet};
use crate::trace::MsduContent;
use broadside::counters::PacketKind;

impl Payload {
    /// What this MSDU carries; a fast frame by its first packet, an A-MPDU
    /// by its first MPDU.
    pub fn content(&self) -> MsduContent {
        match self {
            Payload::Packet(p) => packet_content(p),
            Payload::FastFrame(pair) => packet_content(&pair[0]),
            Payload::Datagram { data, .. } => broadside_content(data),
            Payload::Aggregate(mpdus) => mpdus
                .first()
                .map_or(MsduContent::Other, |m| m.payload.content()),
            Payload::Raw
            | Payload::Mgmt(_)
            | Payload::BlockAck { .. }
            | Payload::BlockAckReq { .. } => MsduContent::Other,
        }
    }
}

fn packet_content(p: &Packet) -> MsduContent {
    match &p.body {
        Body::Tcp(s) if s.len > 0 => MsduContent::TcpData,
        Body::Tcp(s) if s.flags.syn || s.flags.fin || s.flags.rst => MsduContent::TcpControl,
        Body::Tcp(_) => MsduContent::TcpAck,
        Body::Udp { datagram, .. } => datagram
            .data
            .as_deref()
            .map_or(MsduContent::Other, broadside_content),
        Body::Real(bytes) => real_content(bytes),
        Body::Arp { .. } | Body::Dhcp { .. } | Body::Beacon { .. } => MsduContent::Other,
    }
}

/// A real host's packet by the same roles: its TCP segment's, or its UDP
/// payload's if that is a Broadside datagram.
fn real_content(bytes: &[u8]) -> MsduContent {
    match RealView::parse(bytes).map(|v| v.transport) {
        Some(RealTransport::Tcp(t)) if t.len > 0 => MsduContent::TcpData,
        Some(RealTransport::Tcp(t)) if t.syn || t.fin || t.rst => MsduContent::TcpControl,
        Some(RealTransport::Tcp(_)) => MsduContent::TcpAck,
        Some(RealTransport::Udp { offset, len }) => broadside_content(&bytes[offset..offset + len]),
        _ => MsduContent::Other,
    }
}

/// A Broadside datagram's class; `Other` for bytes that are not one.
fn broadside_content(data: &[u8]) -> MsduContent {
    let Ok(packet) = broadside::wire::Packet::new_checked(data) else {
        return MsduContent::Other;
    };
    match packet.kind().class() {
        PacketKind::Beacon => MsduContent::BroadsideBeacon,
        PacketKind::Discovery => MsduContent::BroadsideDiscovery,
        PacketKind::Control => MsduContent::BroadsideControl,
        PacketKind::Data => MsduContent::BroadsideData,
        PacketKind::Ack => MsduContent::BroadsideAck,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;
    use crate::packet::Datagram;
    use crate::packet::{Flags, Segment};
    use crate::units::SimTime;
    use broadside::bitvec::BitVec;
    use broadside::id::Id160;
    use broadside::wire::Message;
    use std::sync::Arc;

    fn tcp(len: u32, flags: Flags) -> Payload {
        Payload::Packet(Packet::new(
            NodeId(0),
            NodeId(1),
            Body::Tcp(Segment {
                len,
                flags,
                ..Segment::default()
            }),
        ))
    }

    #[test]
    fn tcp_segments_by_role() {
        let ack = Flags {
            ack: true,
            ..Flags::default()
        };
        assert_eq!(tcp(0, ack).content(), MsduContent::TcpAck);
        assert_eq!(tcp(1, ack).content(), MsduContent::TcpData);
        assert_eq!(
            tcp(0, Flags { syn: true, ..ack }).content(),
            MsduContent::TcpControl
        );
        assert_eq!(
            tcp(0, Flags { fin: true, ..ack }).content(),
            MsduContent::TcpControl
        );
        assert_eq!(
            tcp(
                0,
                Flags {
                    rst: true,
                    ..Flags::default()
                }
            )
            .content(),
            MsduContent::TcpControl
        );
    }

    #[test]
    fn broadside_datagrams_by_class_raw_or_over_udp() {
        let beacon: Arc<[u8]> = Message::Beacon {
            node: 7,
            file_count: 50,
            content_hash: Id160([1; 20]),
        }
        .to_vec()
        .into();
        let raw = Payload::Datagram {
            app: 0,
            data: beacon.clone(),
            sent: SimTime::ZERO,
        };
        assert_eq!(raw.content(), MsduContent::BroadsideBeacon);
        let ack: Arc<[u8]> = Message::Ack {
            transfer: 3,
            vector: BitVec::new(100),
        }
        .to_vec()
        .into();
        assert_eq!(
            Payload::Datagram {
                app: 0,
                data: ack,
                sent: SimTime::ZERO
            }
            .content(),
            MsduContent::BroadsideAck
        );
        let udp = Body::Udp {
            datagram: Datagram::with_data(5001, 5001, beacon),
            app: 0,
            seq: 0,
            sent: SimTime::ZERO,
        };
        assert_eq!(
            Payload::Packet(Packet::new(NodeId(0), NodeId(1), udp)).content(),
            MsduContent::BroadsideBeacon
        );
        let junk = Payload::Datagram {
            app: 0,
            data: Arc::from(&b"not broadside"[..]),
            sent: SimTime::ZERO,
        };
        assert_eq!(junk.content(), MsduContent::Other);
        assert_eq!(Payload::Raw.content(), MsduContent::Other);
    }
}
