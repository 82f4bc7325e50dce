//! ARP as a sans-IO table (RFC 826), with per-OS behaviour.
//!
//! Addressing is static, one address per node, and the simulator names a
//! host by its node id at both layers, so ARP's role here is its delay and
//! its losses, not a mapping. The table owns only its entries: the network
//! layer ([`super::Net`]) asks it what to do with a packet for a neighbour
//! and turns the answers into frames, timers and trace events.
//!
//! Profiles ([`ArpProfile`]):
//! - `linux`: a request is retransmitted every second, three requests in all
//!   (`mcast_solicit` = 3, `retrans_time` = 1 s), up to three packets wait for
//!   the answer (`unres_qlen`); then the entry fails and its packets are
//!   dropped; the next packet starts a new resolution.
//! - `windows-xp`: one request, never retransmitted; the unresolved entry
//!   stays about 3.5 s, during which no new request is sent and one packet
//!   waits (Zahn et al. 2009, §5.1).
//!   When the host's first link comes up (media connect: its first ad hoc
//!   peer, or association), it broadcasts a gratuitous ARP for its own
//!   address (duplicate address detection) and sends nothing else for
//!   about 100 ms while it waits for an answer (Zahn et al. measured "about
//!   100ms"); every reconnection after all links went down does it again.
//!
//! A node's `arp_retransmit` replaces its profile's retransmission timeout
//! (for `windows-xp`: how long the failed entry is held) — Hadaller et al.
//! (2007) §7.3 (c), "reducing the ARP timeout". Resolved entries do not
//! expire within a run; an entry is forgotten when the link to its
//! neighbour goes down.

use crate::ids::NodeId;
use crate::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpProfile {
    Linux,
    WindowsXp,
}

impl ArpProfile {
    /// The profile's timers and limits.
    pub fn config(self) -> ArpConfig {
        match self {
            ArpProfile::Linux => ArpConfig {
                requests: 3,
                retransmit: SimTime::from_ms(1000),
                queue: 3,
                announce: None,
            },
            ArpProfile::WindowsXp => ArpConfig {
                requests: 1,
                retransmit: SimTime::from_ms(3500),
                queue: 1,
                announce: Some(SimTime::from_ms(100)),
            },
        }
    }
}

/// ARP behaviour of one node (see [`ArpProfile`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpConfig {
    /// Requests sent before the entry fails.
    pub requests: u32,
    /// Time between requests (and after the last, before the entry fails).
    pub retransmit: SimTime,
    /// Packets that wait for the answer; older ones are dropped.
    pub queue: usize,
    /// A gratuitous ARP when the first link comes up, then this long
    /// without sending.
    pub announce: Option<SimTime>,
}

#[derive(Clone, Debug)]
enum State {
    Resolved,
    /// `requests` sent so far (0: none yet), packets waiting for the answer.
    Pending {
        requests: u32,
        waiting: VecDeque<Packet>,
    },
}

#[derive(Clone, Debug)]
struct Entry {
    peer: NodeId,
    state: State,
    generation: u32,
}

/// What to do with a packet for a neighbour.
#[derive(Debug, PartialEq)]
pub enum Lookup {
    /// The neighbour is resolved: send the packet now.
    Send(Packet),
    /// The packet waits; `request` says whether a first request must go out.
    Queued { request: bool },
}

/// What a retransmission timer means now.
#[derive(Debug, PartialEq, Eq)]
pub enum Expiry {
    /// The timer is stale (answered, forgotten or re-armed): nothing to do.
    Stale,
    /// Send the next request.
    Retransmit,
    /// The entry failed and was removed; its waiting packets are dropped.
    Failed,
}

/// A node's ARP table.
#[derive(Clone, Debug)]
pub struct Arp {
    cfg: ArpConfig,
    entries: Vec<Entry>,
}

impl Arp {
    pub fn new(cfg: ArpConfig) -> Arp {
        Arp {
            cfg,
            entries: Vec::new(),
        }
    }

    pub fn config(&self) -> ArpConfig {
        self.cfg
    }

    fn index(&mut self, peer: NodeId, state: State) -> usize {
        match self.entries.iter().position(|e| e.peer == peer) {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    peer,
                    state,
                    generation: 0,
                });
                self.entries.len() - 1
            }
        }
    }

    /// A packet `p` must go to neighbour `peer`.
    pub fn lookup(&mut self, peer: NodeId, p: Packet) -> Lookup {
        let i = self.index(
            peer,
            State::Pending {
                requests: 0,
                waiting: VecDeque::new(),
            },
        );
        let limit = self.cfg.queue;
        match &mut self.entries[i].state {
            State::Resolved => Lookup::Send(p),
            State::Pending { requests, waiting } => {
                waiting.push_back(p);
                if waiting.len() > limit {
                    waiting.pop_front();
                }
                Lookup::Queued {
                    request: *requests == 0,
                }
            }
        }
    }

    /// A request for `peer` goes out now: returns its number (1 for the
    /// first) and the generation its retransmission timer must carry, or
    /// `None` if `peer` is not being resolved.
    pub fn request(&mut self, peer: NodeId) -> Option<(u32, u32)> {
        let e = self.entries.iter_mut().find(|e| e.peer == peer)?;
        let State::Pending { requests, .. } = &mut e.state else {
            return None;
        };
        *requests += 1;
        e.generation = e.generation.wrapping_add(1);
        Some((*requests, e.generation))
    }

    /// The retransmission timer of generation `generation` for `peer` fired.
    pub fn expire(&mut self, peer: NodeId, generation: u32) -> Expiry {
        let Some(i) = self
            .entries
            .iter()
            .position(|e| e.peer == peer && e.generation == generation)
        else {
            return Expiry::Stale;
        };
        let State::Pending { requests, .. } = &self.entries[i].state else {
            return Expiry::Stale;
        };
        if *requests < self.cfg.requests {
            return Expiry::Retransmit;
        }
        self.entries.swap_remove(i);
        Expiry::Failed
    }

    /// `peer`'s address is known now (a reply, or a request to us): returns
    /// the packets that waited for it, or `None` if it was not pending.
    pub fn resolved(&mut self, peer: NodeId) -> Option<VecDeque<Packet>> {
        let i = self.index(peer, State::Resolved);
        let e = &mut self.entries[i];
        match std::mem::replace(&mut e.state, State::Resolved) {
            State::Pending { waiting, .. } => {
                e.generation = e.generation.wrapping_add(1);
                Some(waiting)
            }
            State::Resolved => None,
        }
    }

    /// The link to `peer` went down.
    pub fn forget(&mut self, peer: NodeId) {
        self.entries.retain(|e| e.peer != peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Body;
    use crate::packet::Datagram;

    const ME: NodeId = NodeId(0);
    const PEER: NodeId = NodeId(1);

    fn packet(seq: u64) -> Packet {
        let datagram = Datagram::sized(1, 1, 10);
        Packet::new(
            ME,
            PEER,
            Body::Udp {
                datagram,
                app: 0,
                seq,
                sent: SimTime::ZERO,
            },
        )
    }

    #[test]
    fn unknown_peer_queues_and_asks_for_one_request() {
        let mut arp = Arp::new(ArpProfile::Linux.config());
        assert_eq!(
            arp.lookup(PEER, packet(0)),
            Lookup::Queued { request: true }
        );
        assert_eq!(arp.request(PEER), Some((1, 1)));
        assert_eq!(
            arp.lookup(PEER, packet(1)),
            Lookup::Queued { request: false }
        );
    }

    #[test]
    fn pending_queue_keeps_the_newest_packets() {
        let mut arp = Arp::new(ArpProfile::Linux.config());
        for seq in 0..5 {
            arp.lookup(PEER, packet(seq));
        }
        let waiting = arp.resolved(PEER).expect("was pending");
        assert_eq!(Vec::from(waiting), vec![packet(2), packet(3), packet(4)]);
    }

    #[test]
    fn resolved_peer_sends_at_once() {
        let mut arp = Arp::new(ArpProfile::Linux.config());
        assert_eq!(arp.resolved(PEER), None);
        assert_eq!(arp.lookup(PEER, packet(7)), Lookup::Send(packet(7)));
    }

    #[test]
    fn linux_retransmits_twice_then_fails() {
        let mut arp = Arp::new(ArpProfile::Linux.config());
        arp.lookup(PEER, packet(0));
        let (_, g1) = arp.request(PEER).unwrap();
        assert_eq!(arp.expire(PEER, g1), Expiry::Retransmit);
        let (n, g2) = arp.request(PEER).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            arp.expire(PEER, g1),
            Expiry::Stale,
            "an older timer is void"
        );
        assert_eq!(arp.expire(PEER, g2), Expiry::Retransmit);
        let (n, g3) = arp.request(PEER).unwrap();
        assert_eq!(n, 3);
        assert_eq!(arp.expire(PEER, g3), Expiry::Failed);
        assert_eq!(
            arp.lookup(PEER, packet(1)),
            Lookup::Queued { request: true },
            "the next packet starts again"
        );
    }

    #[test]
    fn windows_xp_sends_one_request_and_holds_the_entry() {
        let mut arp = Arp::new(ArpProfile::WindowsXp.config());
        arp.lookup(PEER, packet(0));
        let (_, g) = arp.request(PEER).unwrap();
        assert_eq!(
            arp.lookup(PEER, packet(1)),
            Lookup::Queued { request: false },
            "no new request while held"
        );
        assert_eq!(arp.expire(PEER, g), Expiry::Failed);
    }

    #[test]
    fn answer_voids_the_timer_and_forget_drops_the_entry() {
        let mut arp = Arp::new(ArpProfile::Linux.config());
        arp.lookup(PEER, packet(0));
        let (_, g) = arp.request(PEER).unwrap();
        assert_eq!(arp.resolved(PEER).map(|w| w.len()), Some(1));
        assert_eq!(arp.expire(PEER, g), Expiry::Stale);
        arp.forget(PEER);
        assert_eq!(
            arp.lookup(PEER, packet(1)),
            Lookup::Queued { request: true }
        );
        assert_eq!(
            arp.request(NodeId(9)),
            None,
            "nothing to ask for an unknown peer"
        );
    }
}
