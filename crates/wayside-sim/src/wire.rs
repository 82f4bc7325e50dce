//! Wired point-to-point links (an AP's backhaul, a server's uplink): the
//! wired counterpart of the radio medium, owned by the world. Each link is
//! full duplex with a drop-tail queue per direction, a bandwidth and a
//! propagation delay; it carries IP packets and the layer-2 update frame an
//! AP sends when a station associates.

use crate::ids::NodeId;
use crate::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

/// LLC XID information in a layer-2 update frame (IEEE 802.11F; hostapd).
const L2_UPDATE_BYTES: u32 = 8;

/// What a wired link carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireFrame {
    Ip(Packet),
    /// An AP announces that `station` is now reachable through it.
    L2Update {
        station: NodeId,
    },
}

impl WireFrame {
    /// Bytes serialised on the link.
    pub fn bytes(&self) -> u32 {
        match self {
            WireFrame::Ip(p) => p.bytes(),
            WireFrame::L2Update { .. } => L2_UPDATE_BYTES,
        }
    }
}

/// One direction of a wired link.
#[derive(Clone, Debug, Default)]
struct Direction {
    /// When each queued frame finishes serialising, oldest first.
    departures: VecDeque<SimTime>,
}

/// A full-duplex point-to-point link with a drop-tail queue per direction.
#[derive(Clone, Debug)]
pub struct WiredLink {
    pub a: NodeId,
    pub b: NodeId,
    pub bandwidth_bps: f64,
    pub delay: SimTime,
    pub queue_limit: usize,
    dirs: [Direction; 2],
}

impl WiredLink {
    pub fn new(
        a: NodeId,
        b: NodeId,
        bandwidth_bps: f64,
        delay: SimTime,
        queue_limit: usize,
    ) -> Self {
        WiredLink {
            a,
            b,
            bandwidth_bps,
            delay,
            queue_limit,
            dirs: Default::default(),
        }
    }

    /// The end facing `node`'s other end.
    pub fn far_end(&self, node: NodeId) -> NodeId {
        if self.a == node {
            self.b
        } else {
            self.a
        }
    }

    /// `from` puts `bytes` on the link now: returns the far end and when the
    /// frame arrives there, or `None` if the queue is full (dropped).
    pub fn send(&mut self, now: SimTime, from: NodeId, bytes: u32) -> Option<(NodeId, SimTime)> {
        let (dir, to) = if self.a == from {
            (0, self.b)
        } else {
            (1, self.a)
        };
        let d = &mut self.dirs[dir];
        while d.departures.front().is_some_and(|&t| t <= now) {
            d.departures.pop_front();
        }
        if d.departures.len() >= self.queue_limit {
            return None;
        }
        let start = d.departures.back().copied().unwrap_or(now).max(now);
        let done = start + SimTime::from_secs_f64(bytes as f64 * 8.0 / self.bandwidth_bps);
        d.departures.push_back(done);
        Some((to, done + self.delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_serialise_one_after_another_then_propagate() {
        let mut l = WiredLink::new(NodeId(0), NodeId(1), 8e6, SimTime::from_ms(5), 10);
        // 1000 bytes at 8 Mbit/s take 1 ms.
        assert_eq!(
            l.send(SimTime::ZERO, NodeId(0), 1000),
            Some((NodeId(1), SimTime::from_ms(6)))
        );
        assert_eq!(
            l.send(SimTime::ZERO, NodeId(0), 1000),
            Some((NodeId(1), SimTime::from_ms(7)))
        );
        // The other direction has its own queue.
        assert_eq!(
            l.send(SimTime::ZERO, NodeId(1), 1000),
            Some((NodeId(0), SimTime::from_ms(6)))
        );
    }

    #[test]
    fn a_full_queue_drops_until_frames_leave() {
        let mut l = WiredLink::new(NodeId(0), NodeId(1), 8e6, SimTime::ZERO, 2);
        assert!(l.send(SimTime::ZERO, NodeId(0), 1000).is_some());
        assert!(l.send(SimTime::ZERO, NodeId(0), 1000).is_some());
        assert_eq!(l.send(SimTime::ZERO, NodeId(0), 1000), None);
        assert!(
            l.send(SimTime::from_ms(1), NodeId(0), 1000).is_some(),
            "the first has left"
        );
    }
}
