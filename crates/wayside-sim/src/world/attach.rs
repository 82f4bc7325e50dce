//! Real hosts attached to nodes (emulation). A real host's IPv4 packet
//! enters its node's network layer as if the node's own transport had
//! sent it ([`World::inject`]); one that reaches a node leaves the
//! simulation for the host attached there ([`World::take_for_hosts`]).
//! ARP, DHCP, association and forwarding stay the simulator's. No
//! simulated socket sees a real flow, so its `transport` rows and
//! connection events are read here from its headers: a TCP receiver's
//! cumulative acknowledgements say what its stack took in order. Pacing against the
//! wall clock is the driver's (the `wayside-emulate` crate); the world
//! runs one event at a time ([`World::step`]) and never reads a clock.

use super::World;
use crate::apps::Arrival;
use crate::ids::NodeId;
use crate::packet::real::{RealTcp, RealTransport, RealView};
use crate::packet::{Body, Packet};
use crate::pcap::frame::{ip_of, node_of};
use crate::trace::{ConnEvent, Proto};
use crate::units::SimTime;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The `app` column of `transport` rows of real flows: no scenario
/// application carries them.
pub const REAL_APP: u32 = u32::MAX;

/// Why a real host's packet was not taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not an IPv4 packet (IPv6, or malformed).
    NotIpv4,
    /// Sent from an address other than its node's.
    WrongSource([u8; 4]),
    /// To an address that is no node's of the scenario (or a broadcast
    /// or multicast group: real hosts reach nodes by unicast only).
    NoSuchNode([u8; 4]),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip = |a: &[u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        match self {
            Refused::NotIpv4 => write!(f, "not an IPv4 packet"),
            Refused::WrongSource(a) => write!(f, "source {} is not its node's address", ip(a)),
            Refused::NoSuchNode(a) => write!(f, "destination {} is no node of the scenario", ip(a)),
        }
    }
}

/// One direction of a real TCP connection, as its receiver acknowledged it.
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    /// The receiver's highest cumulative acknowledgement so far.
    acked: Option<u32>,
    /// The sequence number of the sender's FIN, once it passed: its
    /// acknowledgement acknowledges no byte.
    fin: Option<u32>,
    /// Payload bytes acknowledged.
    bytes: u64,
    last: SimTime,
}

/// (source, source port, destination, destination port).
type FlowKey = (NodeId, u16, NodeId, u16);

/// What the attachment of real hosts keeps between events.
#[derive(Debug, Default)]
pub struct Attachment {
    /// Packets for real hosts, oldest first.
    out: Vec<(NodeId, Arc<[u8]>)>,
    flows: BTreeMap<FlowKey, Flow>,
    /// UDP datagrams delivered so far (the rows' sequence numbers).
    datagrams: u64,
}

impl World {
    /// The time of the next event within the run's duration, if any.
    pub fn next_time(&self) -> Option<SimTime> {
        self.queue.peek_time().filter(|&t| t <= self.duration)
    }

    /// The time of the last event run.
    pub fn now(&self) -> SimTime {
        self.queue.now()
    }

    pub fn duration(&self) -> SimTime {
        self.duration
    }

    /// Runs the next event within the run's duration; returns its time, or
    /// `None` at the end of the run.
    pub fn step(&mut self) -> Option<SimTime> {
        self.next_time()?;
        let (now, ev) = self.queue.pop().expect("peeked");
        self.run_undetectable(ev.node(), self.queue.current());
        let (node, tx) = self.dispatch(now, ev);
        self.apply(node, now);
        if let Some(tx) = tx {
            self.air.medium.release(tx);
        }
        self.stream_batches(false);
        Some(now)
    }

    /// Hands the real host's packet `bytes` to `node`'s network layer at
    /// `now`, which must not be before the last event run nor after the
    /// next one ([`World::now`], [`World::next_time`]).
    pub fn inject(&mut self, now: SimTime, node: NodeId, bytes: Arc<[u8]>) -> Result<(), Refused> {
        let view = RealView::parse(&bytes).ok_or(Refused::NotIpv4)?;
        if view.src != ip_of(node.0) {
            return Err(Refused::WrongSource(view.src));
        }
        let dst = node_of(view.dst)
            .filter(|&n| (n as usize) < self.nodes.len())
            .ok_or(Refused::NoSuchNode(view.dst))?;
        if let RealTransport::Tcp(t) = view.transport {
            if t.syn && !t.has_ack {
                self.conn_event(now, node, dst, ConnEvent::Syn, 0.0);
            } else if t.has_ack {
                self.acknowledged(now, node, NodeId(dst), t);
            }
        }
        let mut p = Packet::new(node, NodeId(dst), Body::Real(bytes));
        p.ttl = view.ttl;
        let n = &mut self.nodes[node.index()];
        n.net.send(now, p, &n.mgmt);
        n.pump_net(&mut self.effects, now);
        self.apply(node, now);
        Ok(())
    }

    /// The packets that reached nodes for their real hosts since the last
    /// call, oldest first.
    pub fn take_for_hosts(&mut self) -> Vec<(NodeId, Arc<[u8]>)> {
        std::mem::take(&mut self.attachment.out)
    }

    /// A real host's packet reached `node`: out to its host, with the
    /// trace rows a socket would have written.
    pub(super) fn to_host(&mut self, now: SimTime, node: NodeId, p: Packet) {
        let Body::Real(bytes) = p.body else {
            return;
        };
        match RealView::parse(&bytes).map(|v| v.transport) {
            Some(RealTransport::Tcp(t)) => {
                if t.syn && t.has_ack {
                    self.conn_event(now, node, p.src.0, ConnEvent::Established, 0.0);
                }
                if t.fin {
                    let key = (p.src, t.src_port, node, t.dst_port);
                    let flow = self.attachment.flows.entry(key).or_default();
                    flow.fin = Some(t.seq.wrapping_add(t.len));
                }
            }
            Some(RealTransport::Udp { len, .. }) => {
                self.attachment.datagrams += 1;
                let seq = self.attachment.datagrams;
                self.real_arrival(now, node, p.src, Proto::Udp, seq, len as u32);
            }
            _ => {}
        }
        self.attachment.out.push((node, bytes));
    }

    /// Host `node` acknowledged `peer`'s data up to `t.ack`: the payload
    /// newly acknowledged is what its stack took in order, a `transport`
    /// row at `node`.
    fn acknowledged(&mut self, now: SimTime, node: NodeId, peer: NodeId, t: RealTcp) {
        let key = (peer, t.dst_port, node, t.src_port);
        let flow = self.attachment.flows.entry(key).or_default();
        let new = newly_acked(flow, t.ack);
        if new == 0 {
            return;
        }
        let first = flow.bytes == 0;
        flow.bytes += u64::from(new);
        flow.last = now;
        let total = flow.bytes;
        if first {
            self.conn_event(now, node, peer.0, ConnEvent::FirstData, 0.0);
        }
        self.real_arrival(now, node, peer, Proto::Tcp, total, new);
    }

    fn real_arrival(
        &mut self,
        now: SimTime,
        node: NodeId,
        peer: NodeId,
        proto: Proto,
        seq: u64,
        bytes: u32,
    ) {
        let arrival = Arrival {
            peer,
            proto,
            app: REAL_APP,
            seq,
            bytes,
            delay: SimTime::ZERO,
        };
        self.transport_row(now, node, arrival);
    }

    /// At the end of a run: each real TCP flow's last new data.
    pub(super) fn hosts_finish(&mut self) {
        let mut last: Vec<(SimTime, NodeId, NodeId, u64)> = (self.attachment.flows.iter())
            .filter(|(_, f)| f.bytes > 0)
            .map(|(&(src, _, dst, _), f)| (f.last, dst, src, f.bytes))
            .collect();
        last.sort_by_key(|&(t, node, peer, _)| (t, node.0, peer.0));
        for (t, node, peer, bytes) in last {
            self.conn_event(t, node, peer.0, ConnEvent::LastData, bytes as f64);
        }
    }
}

/// The payload bytes a cumulative acknowledgement `ack` acknowledges
/// beyond `flow`'s last (sequence numbers wrap; the first acknowledgement
/// seen, the handshake's, is the baseline); moves the flow on.
fn newly_acked(flow: &mut Flow, ack: u32) -> u32 {
    let Some(last) = flow.acked else {
        flow.acked = Some(ack);
        return 0;
    };
    let ahead = ack.wrapping_sub(last) as i32;
    if ahead <= 0 {
        return 0;
    }
    flow.acked = Some(ack);
    // The FIN takes a sequence number but carries no byte.
    let fin = flow
        .fin
        .is_some_and(|f| f.wrapping_sub(last) as i32 >= 0 && ack.wrapping_sub(f) as i32 > 0);
    ahead as u32 - u32::from(fin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_acknowledgements_count_bytes_once_from_the_handshake_on() {
        let mut f = Flow::default();
        assert_eq!(newly_acked(&mut f, 1001), 0); // the handshake's
        assert_eq!(newly_acked(&mut f, 2449), 1448);
        assert_eq!(newly_acked(&mut f, 2449), 0); // a duplicate
        assert_eq!(newly_acked(&mut f, 2000), 0); // reordered, behind
        assert_eq!(newly_acked(&mut f, 5345), 2896); // a hole filled
    }

    #[test]
    fn test_acknowledgements_across_the_wrap_and_of_the_fin() {
        let mut f = Flow::default();
        newly_acked(&mut f, u32::MAX - 49);
        assert_eq!(newly_acked(&mut f, 20), 70);
        f.fin = Some(120);
        assert_eq!(newly_acked(&mut f, 121), 100);
    }
}

#[cfg(test)]
mod world_tests {
    use super::*;
    use crate::run::{finish, prepare};
    use etherparse::PacketBuilder;

    /// hadaller-highway with the car parked 50 m from the AP.
    fn parked() -> World {
        let text = crate::scenario::builtin("hadaller-highway").unwrap();
        let overrides = [
            "node.car.position=[-50, 0]".to_string(),
            "node.car.mobility={model=\"static\"}".to_string(),
            "duration=\"20 s\"".to_string(),
        ];
        prepare(text, &overrides, None, 0, None, |cfg| {
            cfg.apps.clear();
            Ok(())
        })
        .unwrap()
        .1
    }

    /// A TCP segment between ports 40000 (at the car) and 80 (at the AP).
    fn tcp(from: u32, to: u32, seq: u32, ack: Option<u32>, syn: bool, payload: &[u8]) -> Arc<[u8]> {
        let ports = if from == 1 { (40000, 80) } else { (80, 40000) };
        let mut b =
            PacketBuilder::ipv4(ip_of(from), ip_of(to), 64).tcp(ports.0, ports.1, seq, 1000);
        if syn {
            b = b.syn();
        }
        if let Some(ack) = ack {
            b = b.ack(ack);
        }
        let mut bytes = Vec::new();
        b.write(&mut bytes, payload).unwrap();
        bytes.into()
    }

    fn run_until(w: &mut World, t: SimTime) -> Vec<(NodeId, Arc<[u8]>)> {
        let mut out = Vec::new();
        while w.next_time().is_some_and(|n| n <= t) {
            w.step();
            out.extend(w.take_for_hosts());
        }
        out
    }

    /// Injects `p` from `node` and runs 200 ms: what reached hosts.
    fn send(w: &mut World, node: NodeId, p: Arc<[u8]>) -> Vec<(NodeId, Arc<[u8]>)> {
        let now = w.now();
        w.inject(now, node, p).unwrap();
        run_until(w, now + SimTime::from_ms(200))
    }

    #[test]
    fn test_real_packets_cross_the_air_unchanged_once_associated() {
        let (ap, car) = (NodeId(0), NodeId(1));
        let mut w = parked();
        // Before association the car has no route: the packet is lost.
        assert!(send(&mut w, car, tcp(1, 0, 999, None, true, b"")).is_empty());
        run_until(&mut w, SimTime::from_secs_f64(10.0));
        let syn = tcp(1, 0, 999, None, true, b"");
        assert_eq!(send(&mut w, car, Arc::clone(&syn)), vec![(ap, syn)]);
        let syn_ack = tcp(0, 1, 5000, Some(1000), true, b"");
        assert_eq!(send(&mut w, ap, Arc::clone(&syn_ack)), vec![(car, syn_ack)]);
        let data = tcp(1, 0, 1000, Some(5001), false, b"hello from a real host");
        assert_eq!(send(&mut w, car, Arc::clone(&data)), vec![(ap, data)]);
        // The AP's host acknowledges the 22 bytes, then again.
        for _ in 0..2 {
            assert_eq!(
                send(&mut w, ap, tcp(0, 1, 5001, Some(1022), false, b"")).len(),
                1
            );
        }
        let out = finish(String::new(), w).unwrap();
        assert_eq!(out.trace.transport.bytes, vec![22]);
        assert_eq!(out.trace.transport.node, vec![ap.0]);
        let events = &out.trace.events.event;
        for e in [
            ConnEvent::Syn,
            ConnEvent::Established,
            ConnEvent::FirstData,
            ConnEvent::LastData,
        ] {
            assert!(events.contains(&(e as u8)), "no {e:?} in {events:?}");
        }
    }

    #[test]
    fn test_packets_that_are_no_nodes_are_refused() {
        let mut w = parked();
        let car = NodeId(1);
        let to_nowhere = tcp(1, 40, 1, None, true, b"");
        assert_eq!(
            w.inject(SimTime::ZERO, car, to_nowhere),
            Err(Refused::NoSuchNode([10, 0, 0, 41]))
        );
        let forged = tcp(0, 1, 1, None, true, b"");
        assert_eq!(
            w.inject(SimTime::ZERO, car, forged),
            Err(Refused::WrongSource([10, 0, 0, 1]))
        );
        assert_eq!(
            w.inject(SimTime::ZERO, car, Arc::from(&[0x60u8; 40][..])),
            Err(Refused::NotIpv4)
        );
    }
}
