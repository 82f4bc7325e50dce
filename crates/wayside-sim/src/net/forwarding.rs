//! An access point's forwarding engine from its wired side: a drop-tail
//! queue of `queue_limit` packets in front of a processor that takes
//! `per_packet` for each, one at a time, before the packet goes on to
//! routing, ARP and the MAC. It runs beside the radio, so its cost and the
//! air's overlap: a stream from the wire goes at the slower of the two.
//! Packets from the air, group packets and packets for the AP itself do not
//! pass through it.
//!
//! Ott & Kutscher's Cisco Aironet 340 needs one (§IV-A): from the wired side
//! it delivered at most about 380 packets/s, whatever their size, while its
//! radio took 500 packets/s from the mobile side (`drivethru-lab`).

use crate::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

/// The engine's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForwardingConfig {
    pub per_packet: SimTime,
    pub queue_limit: usize,
}

/// What arriving at the engine did to a packet.
#[derive(Debug, PartialEq)]
pub enum Arrival {
    /// The processor was idle and took it: done at this time.
    Started(SimTime),
    /// Queued behind others.
    Queued,
    /// The queue was full: dropped (with the queue's length).
    Dropped(usize),
}

/// The engine's state.
#[derive(Debug)]
pub struct Forwarding {
    cfg: ForwardingConfig,
    /// The packet being processed first, then those waiting.
    queue: VecDeque<Packet>,
}

impl Forwarding {
    pub fn new(cfg: ForwardingConfig) -> Forwarding {
        Forwarding {
            cfg,
            queue: VecDeque::new(),
        }
    }

    /// A packet arrived from the wire at `now`.
    pub fn arrive(&mut self, now: SimTime, p: Packet) -> Arrival {
        // The one in process does not count against the queue.
        if self.queue.len() > self.cfg.queue_limit {
            return Arrival::Dropped(self.queue.len() - 1);
        }
        self.queue.push_back(p);
        if self.queue.len() == 1 {
            Arrival::Started(now + self.cfg.per_packet)
        } else {
            Arrival::Queued
        }
    }

    /// The packet in process is done at `now`: returns it, and when the
    /// next one will be, if any waits.
    pub fn done(&mut self, now: SimTime) -> (Option<Packet>, Option<SimTime>) {
        let p = self.queue.pop_front();
        let next = (!self.queue.is_empty()).then(|| now + self.cfg.per_packet);
        (p, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;
    use crate::packet::Body;
    use crate::packet::Datagram;

    fn packet(seq: u64) -> Packet {
        Packet::new(
            NodeId(0),
            NodeId(1),
            Body::Udp {
                datagram: Datagram::sized(1, 1, 100),
                app: 0,
                seq,
                sent: SimTime::ZERO,
            },
        )
    }

    fn seq(p: &Packet) -> u64 {
        match p.body {
            Body::Udp { seq, .. } => seq,
            _ => unreachable!(),
        }
    }

    #[test]
    fn one_packet_at_a_time_in_order_and_a_full_queue_drops() {
        let ms = SimTime::from_ms;
        let mut f = Forwarding::new(ForwardingConfig {
            per_packet: ms(2),
            queue_limit: 2,
        });
        // A burst of five at t = 0: one in process, two waiting, two dropped.
        assert_eq!(f.arrive(ms(0), packet(0)), Arrival::Started(ms(2)));
        assert_eq!(f.arrive(ms(0), packet(1)), Arrival::Queued);
        assert_eq!(f.arrive(ms(0), packet(2)), Arrival::Queued);
        assert_eq!(f.arrive(ms(0), packet(3)), Arrival::Dropped(2));
        assert_eq!(f.arrive(ms(0), packet(4)), Arrival::Dropped(2));
        let mut out = Vec::new();
        let mut at = Some(ms(2));
        while let Some(t) = at {
            let (p, next) = f.done(t);
            out.push((t, seq(&p.unwrap())));
            at = next;
        }
        assert_eq!(out, vec![(ms(2), 0), (ms(4), 1), (ms(6), 2)]);
        // Idle again: the next arrival starts at once.
        assert_eq!(f.arrive(ms(10), packet(5)), Arrival::Started(ms(12)));
    }
}
