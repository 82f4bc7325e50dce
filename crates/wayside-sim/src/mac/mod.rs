//! The 802.11 MAC: frames and MSDUs as the layers above and the medium see
//! them, the MAC's configuration, channel access ([`dcf`]), per-peer link
//! adaptation ([`links`]), the data queue ([`queue`]), A-MPDU aggregation
//! with Block Ack ([`ampdu`], the recipient's reordering: [`reorder`]) and
//! management ([`mgmt`]; ad hoc: [`adhoc`]).

pub mod adhoc;
pub mod ampdu;
mod content;
pub mod dcf;
pub mod links;
pub mod mgmt;
pub mod queue;
pub mod reorder;

use crate::geometry::Vec2;
use crate::ids::{Dst, NodeId};
use crate::packet::Packet;
use crate::phy::mode::Mode;
use crate::ratectl::{RateControlSpec, Stage};
use crate::trace::FrameKind;
use crate::units::{Dbm, SimTime};
use mgmt::MgmtBody;
use std::sync::Arc;

/// MAC header (24) and FCS (4) around a data frame body.
pub const DATA_OVERHEAD: u32 = 28;
pub const ACK_BYTES: u32 = 14;
pub const CTS_BYTES: u32 = 14;
pub const RTS_BYTES: u32 = 20;

/// What an MSDU carries up the stack at the receiver.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    /// Filler from a frame source; nothing above the MAC.
    Raw,
    /// A management frame body.
    Mgmt(MgmtBody),
    /// An IP or ARP packet.
    Packet(Packet),
    /// Two packets to the same receiver in one Atheros fast frame.
    /// (Boxed: it is rare, and would double the size of every frame.)
    FastFrame(Box<[Packet; 2]>),
    /// An application's own bytes straight over the link, no IP (a raw
    /// protocol such as Broadside-Raw), for application `app`.
    Datagram {
        app: u32,
        data: Arc<[u8]>,
        sent: SimTime,
    },
    /// An A-MPDU: its MPDUs in sequence order. (Boxed, as fast frames.)
    Aggregate(Box<[ampdu::Mpdu]>),
    /// A Block Ack from `ssn`: bit i acknowledges `ssn + i`.
    BlockAck { ssn: u16, bitmap: u64 },
    /// A Block Ack Request: the recipient's window is to start at `ssn`.
    BlockAckReq { ssn: u16 },
}

impl Payload {
    fn kind(&self) -> FrameKind {
        match self {
            Payload::Mgmt(m) => m.kind(),
            Payload::BlockAck { .. } => FrameKind::BlockAck,
            Payload::BlockAckReq { .. } => FrameKind::BlockAckReq,
            Payload::Raw
            | Payload::Aggregate(..)
            | Payload::Packet(_)
            | Payload::FastFrame(..)
            | Payload::Datagram { .. } => FrameKind::Data,
        }
    }
}

/// What a sender states about itself in a vendor element of its frames:
/// its GPS position and transmit power (environment-aware rate selection
/// assumes cooperating clients send them; 802.11h's TPC report carries the
/// power). Only nodes configured to report send it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderReport {
    pub position: Vec2,
    pub tx_power: Dbm,
}

/// An 802.11 frame as far as the simulator needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub kind: FrameKind,
    pub src: NodeId,
    pub dst: Dst,
    pub seq: u16,
    pub retry: bool,
    /// 0-based transmission attempt of this MSDU.
    pub attempt: u8,
    pub psdu_bytes: u32,
    /// Duration field: how long others must defer after this frame.
    pub duration: SimTime,
    pub payload: Payload,
    /// The sender's report of itself, if it sends one.
    pub report: Option<SenderReport>,
}

/// A unit of data handed to the MAC.
#[derive(Clone, Debug, PartialEq)]
pub struct Msdu {
    pub dst: Dst,
    pub bytes: u32,
    pub enqueued: SimTime,
    /// Send at this mode, this many tries, instead of asking rate control
    /// (sounders, management frames).
    pub fixed: Option<Stage>,
    /// Traffic source to tell when the MSDU is finished with.
    pub source: Option<u32>,
    pub payload: Payload,
}

#[derive(Clone, Debug)]
pub struct MacConfig {
    pub queue_limit: usize,
    /// The data queue's kind ([`queue`]).
    pub queue: queue::QueueKind,
    pub short_retry_limit: u8,
    pub long_retry_limit: u8,
    /// Frames (PSDU) longer than this use RTS/CTS and the long retry limit.
    pub rts_threshold: u32,
    /// The rate-control algorithm every link of this MAC runs.
    pub rate: RateControlSpec,
    /// The standard's modes, ascending (rate control chooses among them).
    pub modes: &'static [Mode],
    /// Atheros fast frames: two queued packets to the same receiver go out
    /// as one frame when madwifi's estimate of that frame's airtime at the
    /// chosen rate stays within this limit (the best-effort TXOP); `None`
    /// disables aggregation.
    pub fast_frames: Option<SimTime>,
    /// A-MPDU aggregation with Block Ack to peers (HT and VHT radios);
    /// `None`: every data frame goes alone.
    pub ampdu: Option<ampdu::AmpduConfig>,
    /// TXOP bursting: after winning the channel the station sends further
    /// unicast data frames a SIFS apart while each exchange ends within
    /// this time from the grant; `None`: one frame per channel access.
    pub txop_bursting: Option<SimTime>,
}

/// Bytes an Atheros fast frame adds around its two subframes (the
/// fast-frame header and an 802.3 header per subframe, with padding).
pub const FAST_FRAME_OVERHEAD: u32 = 32;
