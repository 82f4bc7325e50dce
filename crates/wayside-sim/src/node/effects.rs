//! What a node wants done in the world around it, as values. A node and
//! its layers never act on the world themselves: each input to a node
//! appends its effects to a buffer the world owns and reuses, in the order
//! the node decided them, and the world applies them once the node returns
//! ([`crate::world`]): it puts frames on the air, sets timers, writes trace
//! rows (with the positions mobility gives), sends on the wires and lets
//! the experiment's script start applications.

use crate::apps::Arrival;
use crate::event::Event;
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::packet::Packet;
use crate::phy::mode::Mode;
use crate::trace::{ConnEvent, DropReason, MacEvent, MsduContent, PhyEvent, TxOutcome};
use crate::transport::tcp::TcpEvent;
use crate::units::{Db, Dbm, SimTime};
use crate::wire::WireFrame;

/// One thing a node wants done, at the time of the input it handles.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Put `frame` on the air at `mode` until `end`, on `channel`, sent at
    /// `tx_power`. Its `frames` row waits for the outcome of a response
    /// ([`Effect::Outcome`]) if `awaits`.
    Transmit {
        frame: Frame,
        mode: Mode,
        end: SimTime,
        channel: u32,
        tx_power: Dbm,
        awaits: bool,
    },
    /// Deliver `event` (one of this node's timers) at `at`.
    Schedule { at: SimTime, event: Event },
    /// Wake this node's frame source `source` at `at`.
    Emit { source: u32, at: SimTime },
    /// Transmission `id` ended at this radio, tuned to `channel`: a
    /// `frames` row (if the node traces the frame) with the (RSSI, SNR,
    /// minimum SINR) it was received at.
    Heard {
        id: TxId,
        event: PhyEvent,
        reason: DropReason,
        signal: (Dbm, Db, Db),
        channel: u32,
    },
    /// This radio, tuned to `channel`, lost transmission `id` for `reason`:
    /// a `frames` row if the node traces the frame.
    Lost {
        id: TxId,
        reason: DropReason,
        channel: u32,
    },
    /// The response to the frame that awaits one decided its outcome.
    Outcome(TxOutcome),
    /// An `events` row concerning `peer`.
    Conn {
        peer: u32,
        event: ConnEvent,
        value: f64,
    },
    /// A `mac` row.
    Mac(MacRecord),
    /// A `tcp` row: a socket's sample concerning `peer`.
    Tcp { peer: NodeId, sample: TcpEvent },
    /// A `transport` row.
    Transport(Arrival),
    /// Send `frame` on wired link `link`.
    Wire { link: usize, frame: WireFrame },
    /// The network layer reaches `peer` (`station`: the station of the
    /// pair, if one is): the script may start applications.
    Ready {
        peer: NodeId,
        station: Option<NodeId>,
    },
    /// A real host's packet reached this node, for the real host attached
    /// to it ([`crate::world::Attachment`]).
    ToHost(Packet),
    /// This station, addressed, heard a beacon from its AP `ap`: the script
    /// may start applications waiting for its production phase.
    Beacon { ap: NodeId },
}

/// What a `mac` row says of an MSDU: the peer, what happened, and the
/// MSDU's sequence number, bytes, content, tries and queueing delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MacRecord {
    pub peer: u32,
    pub event: MacEvent,
    pub seq: u16,
    pub bytes: u32,
    pub content: MsduContent,
    pub attempts: u32,
    pub delay: SimTime,
}

/// The effects of one input, oldest first. The world keeps one and empties
/// it after each input, so that no input allocates once it has grown.
#[derive(Debug, Default)]
pub struct Effects {
    list: Vec<Effect>,
}

impl Effects {
    pub fn push(&mut self, effect: Effect) {
        self.list.push(effect);
    }

    /// A timer of this node: `event` at `at`.
    pub fn schedule(&mut self, at: SimTime, event: Event) {
        self.list.push(Effect::Schedule { at, event });
    }

    /// An `events` row concerning `peer`.
    pub fn conn(&mut self, peer: u32, event: ConnEvent, value: f64) {
        self.list.push(Effect::Conn { peer, event, value });
    }

    /// The effects so far, oldest first, leaving the buffer empty (and its
    /// memory kept).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Effect> {
        self.list.drain(..)
    }

    pub fn as_slice(&self) -> &[Effect] {
        &self.list
    }
}
