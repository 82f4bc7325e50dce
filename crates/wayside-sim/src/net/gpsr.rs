//! Greedy geographic forwarding: GPSR's greedy mode (Karp & Kung, MobiCom
//! 2000) without its perimeter mode, as Chen et al. run it on a highway, as
//! a [`Router`].
//!
//! Every node broadcasts its position every [`BEACON_INTERVAL`] (from a
//! phase of its own, so that the beacons of nodes started together do not
//! all collide); a neighbour not heard for [`INFO_TIMEOUT`] is forgotten. A
//! packet goes to its destination if that is a neighbour, else to the
//! neighbour closest to the destination's position, provided it is closer
//! than this node. Without one the packet is held and tried again every
//! [`RETRANSMIT_DELAY`], up to [`MESSAGE_TTL`] times, then dropped (a
//! `route-drop` event). When the MAC gives up on a neighbour, the neighbour
//! is forgotten until its next beacon and the packet is routed again (GPSR's
//! use of 802.11 retransmission failure, Karp & Kung 2000): a beacon, short
//! and sent at the basic rate, reaches further than a full data frame, and
//! greedy forwarding picks exactly the neighbours at that edge. The source stamps a [`GeoHeader`] with its own
//! position and the destination's — known in advance for fixed nodes (the
//! AP), learned from the headers of packets received otherwise — so that a
//! destination can route its replies back. A node knows where it is at any
//! time (its GPS: its mobility model).

use super::route::{Hop, Router, RouterOutput, View};
use crate::geometry::Vec2;
use crate::ids::NodeId;
use crate::mobility::{Mobility, MobilityModel};
use crate::packet::{Body, GeoHeader, Packet, WirePos, ALL_HOSTS};
use crate::trace::ConnEvent;
use crate::units::SimTime;
use std::collections::VecDeque;

/// Delay between position beacons (Chen et al., Table I).
pub const BEACON_INTERVAL: SimTime = SimTime::from_ms(1000);
/// How long a neighbour's beacon stays valid.
pub const INFO_TIMEOUT: SimTime = SimTime::from_ms(5000);
/// Delay between attempts to route a held packet.
pub const RETRANSMIT_DELAY: SimTime = SimTime::from_ms(1000);
/// Attempts after the first before a held packet is dropped.
pub const MESSAGE_TTL: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Neighbour {
    id: NodeId,
    at: Vec2,
    heard: SimTime,
}

/// A packet waiting for a route.
#[derive(Clone, Debug)]
struct Held {
    packet: Packet,
    retries: u32,
    due: SimTime,
}

/// Greedy geographic forwarding at one node.
pub struct Greedy {
    me: NodeId,
    gps: MobilityModel,
    /// Nodes whose position is known in advance (fixed ones: the AP).
    known: Vec<(NodeId, Vec2)>,
    /// The last position each source stamped on a packet that reached us.
    learned: Vec<(NodeId, WirePos)>,
    neighbours: Vec<Neighbour>,
    held: VecDeque<Held>,
    /// The first beacon's delay after the start.
    phase: SimTime,
    /// The next beacon (`SimTime::MAX` until started).
    beacon: SimTime,
    /// The timer armed now, and its generation.
    armed: Option<SimTime>,
    generation: u32,
    out: VecDeque<RouterOutput>,
}

impl Greedy {
    /// The router of node `me`, moving as `gps` says, knowing where the
    /// `known` nodes are; its first beacon goes `phase` after it starts.
    pub fn new(
        me: NodeId,
        gps: MobilityModel,
        known: Vec<(NodeId, Vec2)>,
        phase: SimTime,
    ) -> Greedy {
        Greedy {
            me,
            gps,
            known,
            learned: Vec::new(),
            neighbours: Vec::new(),
            held: VecDeque::new(),
            phase,
            beacon: SimTime::MAX,
            armed: None,
            generation: 0,
            out: VecDeque::new(),
        }
    }

    /// Where `dst` is, as far as this node knows.
    fn locate(&self, dst: NodeId) -> Option<Vec2> {
        let known = self.known.iter().find(|k| k.0 == dst).map(|k| k.1);
        known.or_else(|| self.learned.iter().find(|l| l.0 == dst).map(|l| l.1.get()))
    }

    /// The greedy next hop for `p` at `now`: its destination if that is a
    /// neighbour, else the neighbour closest to its position if closer than
    /// this node (ties: the lower id). Stamps the header at the source.
    fn choose(&mut self, now: SimTime, p: &mut Packet) -> Option<NodeId> {
        let fresh = |n: &&Neighbour| now < n.heard + INFO_TIMEOUT;
        if self.neighbours.iter().filter(fresh).any(|n| n.id == p.dst) {
            self.stamp(now, p);
            return Some(p.dst);
        }
        let target = match p.geo {
            Some(h) => h.dst.get(),
            None => self.locate(p.dst)?,
        };
        self.stamp(now, p);
        let mine = self.gps.position(now).dist(target).0;
        let best = self
            .neighbours
            .iter()
            .filter(fresh)
            .map(|n| (n.at.dist(target).0, n.id))
            .filter(|&(d, _)| d < mine);
        best.min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, id)| id)
    }

    /// The source adds the routing header, once it knows the destination's
    /// position.
    fn stamp(&self, now: SimTime, p: &mut Packet) {
        if p.src == self.me && p.geo.is_none() {
            if let Some(dst) = self.locate(p.dst) {
                p.geo = Some(GeoHeader {
                    src: WirePos::new(self.gps.position(now)),
                    dst: WirePos::new(dst),
                    sent: now,
                });
            }
        }
    }

    /// Arms the timer for the earliest of the next beacon and the held
    /// packets' next attempts, if that changed.
    fn rearm(&mut self) {
        let next = self
            .held
            .iter()
            .map(|h| h.due)
            .chain([self.beacon])
            .min()
            .filter(|&t| t != SimTime::MAX);
        if next != self.armed {
            self.armed = next;
            if let Some(at) = next {
                self.generation = self.generation.wrapping_add(1);
                self.out.push_back(RouterOutput::Timer {
                    at,
                    generation: self.generation,
                });
            }
        }
    }
}

impl Router for Greedy {
    fn next_hop(&mut self, now: SimTime, p: &mut Packet, _view: &View) -> Option<Hop> {
        if let Some(hop) = self.choose(now, p) {
            return Some(Hop::Air(hop));
        }
        self.held.push_back(Held {
            packet: p.clone(),
            retries: 0,
            due: now + RETRANSMIT_DELAY,
        });
        self.rearm();
        None
    }

    fn start(&mut self, now: SimTime) {
        self.beacon = now + self.phase;
        self.rearm();
    }

    fn handle_packet(&mut self, now: SimTime, from: NodeId, p: &Packet) -> bool {
        if let Body::Beacon { position } = p.body {
            let at = position.get();
            match self.neighbours.iter_mut().find(|n| n.id == from) {
                Some(n) => {
                    *n = Neighbour {
                        id: from,
                        at,
                        heard: now,
                    }
                }
                None => self.neighbours.push(Neighbour {
                    id: from,
                    at,
                    heard: now,
                }),
            }
            return true;
        }
        if let (Some(h), true) = (p.geo, p.src != self.me) {
            match self.learned.iter_mut().find(|l| l.0 == p.src) {
                Some(l) => l.1 = h.src,
                None => self.learned.push((p.src, h.src)),
            }
        }
        false
    }

    fn handle_timeout(&mut self, now: SimTime, generation: u32) {
        if generation != self.generation || self.armed.is_none_or(|at| at > now) {
            return;
        }
        self.armed = None;
        if self.beacon <= now {
            self.neighbours.retain(|n| now < n.heard + INFO_TIMEOUT);
            let beacon = Packet::new(
                self.me,
                ALL_HOSTS,
                Body::Beacon {
                    position: WirePos::new(self.gps.position(now)),
                },
            );
            self.out.push_back(RouterOutput::Broadcast(beacon));
            self.beacon = now + BEACON_INTERVAL;
        }
        for _ in 0..self.held.len() {
            let mut h = self.held.pop_front().expect("counted");
            if h.due > now {
                self.held.push_back(h);
                continue;
            }
            if let Some(hop) = self.choose(now, &mut h.packet) {
                self.out.push_back(RouterOutput::Send {
                    hop,
                    packet: h.packet,
                });
            } else if h.retries + 1 >= MESSAGE_TTL {
                self.out.push_back(RouterOutput::Conn {
                    peer: h.packet.dst,
                    event: ConnEvent::RouteDrop,
                    value: (h.retries + 1) as f64,
                });
            } else {
                self.held.push_back(Held {
                    retries: h.retries + 1,
                    due: now + RETRANSMIT_DELAY,
                    ..h
                });
            }
        }
        self.rearm();
    }

    fn handle_link_failure(&mut self, now: SimTime, hop: NodeId, p: &Packet) {
        self.neighbours.retain(|n| n.id != hop);
        let mut p = p.clone();
        match self.choose(now, &mut p) {
            Some(hop) => self.out.push_back(RouterOutput::Send { hop, packet: p }),
            None => {
                self.held.push_back(Held {
                    packet: p,
                    retries: 0,
                    due: now + RETRANSMIT_DELAY,
                });
                self.rearm();
            }
        }
    }

    fn poll(&mut self) -> Option<RouterOutput> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::mgmt::Role;
    use crate::mobility::Trajectory;
    use crate::net::route::{AddressPlan, Bss};
    use crate::net::tests::tcp;

    const AP: NodeId = NodeId(0);
    const ME: NodeId = NodeId(1);
    const NEAR: NodeId = NodeId(2);
    const FAR: NodeId = NodeId(3);
    const BACK: NodeId = NodeId(4);

    struct NoBss;
    impl Bss for NoBss {
        fn associated_ap(&self) -> Option<NodeId> {
            None
        }
        fn has_station(&self, _: NodeId) -> bool {
            false
        }
    }

    fn s(x: f64) -> SimTime {
        SimTime::from_secs_f64(x)
    }

    /// The AP at x = 1000; this node at x = 0.
    fn router(me: NodeId, at: Vec2) -> Greedy {
        let gps = MobilityModel::Trajectory(Trajectory::fixed(at));
        Greedy::new(me, gps, vec![(AP, Vec2::new(1000.0, 0.0))], s(0.25))
    }

    fn hop(r: &mut Greedy, now: SimTime, p: &mut Packet) -> Option<Hop> {
        let plan = AddressPlan::default();
        let view = View {
            me: r.me,
            role: Role::Independent,
            radio: true,
            addressed: true,
            bss: &NoBss,
            plan: &plan,
            ports: &[],
            bridged: &[],
            leased: &[],
        };
        r.next_hop(now, p, &view)
    }

    fn drain(r: &mut Greedy) -> Vec<RouterOutput> {
        std::iter::from_fn(|| r.poll()).collect()
    }

    fn beacon(from: NodeId, x: f64) -> Packet {
        Packet::new(
            from,
            ALL_HOSTS,
            Body::Beacon {
                position: WirePos::new(Vec2::new(x, 0.0)),
            },
        )
    }

    /// Fires every timer the router armed, at its time.
    fn fire(r: &mut Greedy, out: &[RouterOutput]) {
        for o in out {
            if let RouterOutput::Timer { at, generation } = *o {
                r.handle_timeout(at, generation);
            }
        }
    }

    #[test]
    fn test_unstarted_start_arms_the_first_beacon_at_the_phase() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        assert!(drain(&mut r).is_empty());
        r.start(s(10.0));
        assert_eq!(
            drain(&mut r),
            vec![RouterOutput::Timer {
                at: s(10.25),
                generation: 1
            }]
        );
    }

    #[test]
    fn test_started_timeout_beacons_its_position_and_rearms_a_second_later() {
        let gps = MobilityModel::Trajectory(Trajectory::line(
            Vec2::new(0.0, 0.0),
            0.0,
            crate::units::Mps(20.0),
            SimTime::ZERO,
        ));
        let mut r = Greedy::new(ME, gps, vec![], s(0.5));
        r.start(SimTime::ZERO);
        let out = drain(&mut r);
        fire(&mut r, &out);
        let out = drain(&mut r);
        assert_eq!(out[0], RouterOutput::Broadcast(beacon(ME, 10.0)));
        assert_eq!(
            out[1],
            RouterOutput::Timer {
                at: s(1.5),
                generation: 2
            }
        );
        let RouterOutput::Broadcast(b) = &out[0] else {
            unreachable!()
        };
        assert_eq!(b.bytes(), 20 + 12);
    }

    #[test]
    fn test_started_stale_timer_is_void() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.start(SimTime::ZERO);
        drain(&mut r);
        r.handle_timeout(s(0.25), 7);
        assert!(drain(&mut r).is_empty());
    }

    #[test]
    fn test_beacon_heard_is_kept_and_packets_go_to_the_neighbour_closest_to_the_destination() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        assert!(r.handle_packet(s(1.0), NEAR, &beacon(NEAR, 150.0)));
        assert!(r.handle_packet(s(1.0), FAR, &beacon(FAR, 240.0)));
        assert!(r.handle_packet(s(1.0), BACK, &beacon(BACK, -100.0)));
        let mut p = tcp(ME, AP);
        assert_eq!(hop(&mut r, s(2.0), &mut p), Some(Hop::Air(FAR)));
        let h = p.geo.expect("the source stamps its header");
        assert_eq!(
            (h.src.get(), h.dst.get()),
            (Vec2::new(0.0, 0.0), Vec2::new(1000.0, 0.0))
        );
        assert_eq!(p.bytes(), tcp(ME, AP).bytes() + 16);
        assert!(drain(&mut r).is_empty());
    }

    #[test]
    fn test_equidistant_neighbours_the_lower_id_wins() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.handle_packet(s(0.0), FAR, &beacon(FAR, 200.0));
        r.handle_packet(s(0.0), NEAR, &beacon(NEAR, 200.0));
        assert_eq!(hop(&mut r, s(0.0), &mut tcp(ME, AP)), Some(Hop::Air(NEAR)));
    }

    #[test]
    fn test_destination_a_neighbour_goes_straight_to_it() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.handle_packet(s(0.0), NEAR, &beacon(NEAR, 500.0));
        r.handle_packet(s(0.0), BACK, &beacon(BACK, -10.0));
        // BACK's position is unknown to the header; it is a neighbour.
        assert_eq!(
            hop(&mut r, s(0.0), &mut tcp(ME, BACK)),
            Some(Hop::Air(BACK))
        );
    }

    #[test]
    fn test_neighbour_unheard_for_info_timeout_is_not_used() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.handle_packet(s(1.0), NEAR, &beacon(NEAR, 150.0));
        assert_eq!(
            hop(&mut r, s(5.999), &mut tcp(ME, AP)),
            Some(Hop::Air(NEAR))
        );
        assert_eq!(hop(&mut r, s(6.0), &mut tcp(ME, AP)), None);
    }

    #[test]
    fn test_no_closer_neighbour_holds_and_a_later_neighbour_takes_the_packet() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.handle_packet(s(0.0), BACK, &beacon(BACK, -100.0));
        assert_eq!(hop(&mut r, s(0.0), &mut tcp(ME, AP)), None);
        let out = drain(&mut r);
        assert_eq!(
            out,
            vec![RouterOutput::Timer {
                at: s(1.0),
                generation: 1
            }]
        );
        r.handle_packet(s(0.5), NEAR, &beacon(NEAR, 100.0));
        fire(&mut r, &out);
        let out = drain(&mut r);
        let RouterOutput::Send { hop, packet } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(*hop, NEAR);
        assert_eq!(
            packet.geo.map(|h| h.dst.get()),
            Some(Vec2::new(1000.0, 0.0))
        );
        assert_eq!(out.len(), 1, "nothing left to wait for: {out:?}");
    }

    #[test]
    fn test_held_packet_is_dropped_after_message_ttl_retries_a_second_apart() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        assert_eq!(hop(&mut r, s(3.0), &mut tcp(ME, AP)), None);
        let mut attempts = vec![];
        let mut out = drain(&mut r);
        while let Some(&RouterOutput::Timer { at, .. }) = out.last() {
            attempts.push(at);
            fire(&mut r, &out);
            out = drain(&mut r);
        }
        assert_eq!(
            attempts,
            (1..=5).map(|k| s(3.0 + k as f64)).collect::<Vec<_>>()
        );
        assert_eq!(
            out,
            vec![RouterOutput::Conn {
                peer: AP,
                event: ConnEvent::RouteDrop,
                value: 5.0
            }]
        );
    }

    #[test]
    fn test_link_failure_forgets_the_neighbour_and_routes_the_packet_again() {
        let mut r = router(ME, Vec2::new(0.0, 0.0));
        r.handle_packet(s(0.0), NEAR, &beacon(NEAR, 150.0));
        r.handle_packet(s(0.0), FAR, &beacon(FAR, 240.0));
        let mut p = tcp(ME, AP);
        assert_eq!(hop(&mut r, s(0.1), &mut p), Some(Hop::Air(FAR)));
        r.handle_link_failure(s(0.2), FAR, &p);
        assert_eq!(
            drain(&mut r),
            vec![RouterOutput::Send {
                hop: NEAR,
                packet: p.clone()
            }]
        );
        r.handle_link_failure(s(0.3), NEAR, &p);
        assert_eq!(
            drain(&mut r),
            vec![RouterOutput::Timer {
                at: s(1.3),
                generation: 1
            }],
            "nobody left: held"
        );
        r.handle_packet(s(1.0), FAR, &beacon(FAR, 250.0));
        assert_eq!(
            hop(&mut r, s(1.0), &mut tcp(ME, AP)),
            Some(Hop::Air(FAR)),
            "back with its next beacon"
        );
    }

    #[test]
    fn test_destination_learns_the_source_position_and_routes_the_reply_back() {
        let mut ap = router(AP, Vec2::new(1000.0, 0.0));
        assert_eq!(
            hop(&mut ap, s(0.0), &mut tcp(AP, ME)),
            None,
            "unknown destination: held"
        );
        let mut p = tcp(ME, AP);
        p.geo = Some(GeoHeader {
            src: WirePos::new(Vec2::new(300.0, 3.5)),
            dst: WirePos::new(Vec2::new(1000.0, 0.0)),
            sent: SimTime::ZERO,
        });
        assert!(
            !ap.handle_packet(s(1.0), FAR, &p),
            "data is not the router's"
        );
        ap.handle_packet(s(1.0), FAR, &beacon(FAR, 800.0));
        let mut reply = tcp(AP, ME);
        assert_eq!(hop(&mut ap, s(1.0), &mut reply), Some(Hop::Air(FAR)));
        assert_eq!(reply.geo.map(|h| h.dst.get()), Some(Vec2::new(300.0, 3.5)));
    }

    #[test]
    fn test_forwarder_heads_for_the_header_position_not_its_own_table() {
        let mut r = router(NEAR, Vec2::new(500.0, 0.0));
        r.handle_packet(s(0.0), FAR, &beacon(FAR, 700.0));
        r.handle_packet(s(0.0), BACK, &beacon(BACK, 300.0));
        // A packet for the AP whose header says its destination is behind.
        let mut p = tcp(ME, AP);
        p.geo = Some(GeoHeader {
            src: WirePos::new(Vec2::new(0.0, 0.0)),
            dst: WirePos::new(Vec2::new(0.0, 0.0)),
            sent: SimTime::ZERO,
        });
        assert_eq!(hop(&mut r, s(0.0), &mut p), Some(Hop::Air(BACK)));
        assert_eq!(
            p.geo.map(|h| h.src.get()),
            Some(Vec2::new(0.0, 0.0)),
            "forwarders leave the header alone"
        );
    }
}
