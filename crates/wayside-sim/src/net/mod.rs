//! The network layer of a node as a sans-IO state machine ([`Net`]): IP
//! sending and forwarding through a routing hook ([`route`]), ARP on
//! wireless interfaces ([`arp`]; a wired link is treated as always
//! resolved), DHCP ([`dhcp`]), multicast, and the packets themselves.
//!
//! Inputs are `send` (from the transport above, or a packet to forward),
//! `handle_air`/`handle_wire` (from the MAC and wired links below),
//! `handle_timeout`, and `handle_link_up`/`handle_link_down` (association
//! from management); every output — a frame for the MAC, a packet for a
//! wired link, a packet for this host's transport, a trace event, a timer —
//! comes out of [`Net::poll`], in the order it was produced. What the node
//! knows of its BSS is passed in with each input ([`route::Bss`]).
//!
//! Addresses are static, one per node (the papers' choice): node *i* is
//! 10.0.0.*i+1*, the simulator names a host by its node id at every layer,
//! and a station with `dhcp = true` has no address until it holds a lease.
//!
//! Multicast: a packet to [`ALL_HOSTS`] (a group every host has joined, as
//! tcpx's trigger group; Ott & Kutscher 2004, §III-A) goes out as an 802.11
//! broadcast frame (basic rate, no ACK, no retry, no ARP) from a node with a
//! radio, and over every wired link from the host that sent it. It is
//! handed to this host's transport, which keeps it only if an application
//! here is a member; an AP passes group packets from its wired side on to
//! the air, but not from the air to the wire, and a station takes them only
//! from the AP it is associated with.
//!
//! An AP with `split_tcp` offers every TCP segment it would forward to its
//! transport first ([`NetOutput::Intercept`], [`crate::sockets::split`]).
//! An AP with a forwarding engine ([`forwarding`]) passes what arrives from
//! its wired side through it first.
//!
//! When a station associates, its AP announces it on every wired link with
//! a layer-2 update frame (IEEE 802.11F; hostapd sends one on association)
//! so that wired hosts learn which link leads to it.

pub mod arp;
pub mod dhcp;
pub mod forwarding;
pub mod gpsr;
pub mod route;

use crate::geometry::Vec2;
use crate::ids::{Dst, NodeId};
use crate::mac::mgmt::Role;
use crate::mac::{Msdu, Payload};
use crate::mobility::{Mobility, MobilityModel};
use crate::packet::{ArpOp, Body, DhcpOp, Packet, ALL_HOSTS, LLC_SNAP};
use crate::rng::Stream;
use crate::trace::ConnEvent;
use crate::units::SimTime;
use crate::wire::WireFrame;
use arp::{Arp, ArpConfig, Expiry, Lookup};
use dhcp::{ClientSend, ClientStep, DhcpClient};
use forwarding::{Arrival, Forwarding, ForwardingConfig};
use route::{AddressPlan, Bss, Hop, Port, Router, RouterOutput, Routing, View};
use std::collections::VecDeque;
use std::sync::Arc;

/// A timer of the network layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetTimer {
    /// ARP retransmission or expiry for a neighbour.
    Arp(NodeId),
    /// DHCP client retransmission.
    Dhcp,
    /// The router's timer (beacons, held packets).
    Route,
    /// The silence after a gratuitous ARP ends.
    Announced,
    /// The forwarding engine is done with its packet.
    Forwarded,
}

/// What the network layer asks of the node around it.
#[derive(Debug)]
pub enum NetOutput {
    /// A frame for the MAC.
    Air(Msdu),
    /// A frame for wired link `link`.
    Wire { link: usize, frame: WireFrame },
    /// A packet for this host's transport.
    Deliver(Packet),
    /// A TCP segment this node would forward: its transport may take it
    /// (split TCP); if not, it goes back to [`Net::send`].
    Intercept(Packet),
    /// A connection event for the trace.
    Conn {
        peer: NodeId,
        event: ConnEvent,
        value: f64,
    },
    /// IP traffic with `peer` can start (association, and a lease if DHCP).
    Ready(NodeId),
    /// Arm `timer` for `at`; an expiry with another generation is void.
    Timer {
        timer: NetTimer,
        at: SimTime,
        generation: u32,
    },
}

/// A node's network layer.
pub struct Net {
    me: NodeId,
    role: Role,
    radio: bool,
    split_tcp: bool,
    dhcp_server: bool,
    arp: Arp,
    dhcp: Option<DhcpClient>,
    ports: Vec<Port>,
    /// Stations announced behind each wired link (layer-2 updates).
    bridged: Vec<(NodeId, usize)>,
    /// An AP's stations holding a lease from it.
    leased: Vec<NodeId>,
    plan: Arc<AddressPlan>,
    router: Box<dyn Router>,
    /// Peers whose link is up (ad hoc peers, or the AP).
    links: usize,
    /// Until when this host is silent after a gratuitous ARP, and the
    /// packets it held meanwhile.
    announcing: Option<SimTime>,
    held: Vec<Packet>,
    /// An AP's forwarding engine for packets from its wired side.
    forwarding: Option<Forwarding>,
    out: VecDeque<NetOutput>,
}

/// How a node's network layer is set up.
pub struct NetSetup {
    pub role: Role,
    pub radio: bool,
    pub split_tcp: bool,
    pub dhcp_server: bool,
    pub arp: ArpConfig,
    pub dhcp: Option<DhcpClient>,
    pub ports: Vec<Port>,
    pub plan: Arc<AddressPlan>,
    pub router: Box<dyn Router>,
    pub forwarding: Option<ForwardingConfig>,
}

/// The router of node `me`, moving as `gps` says, among `nodes` (id,
/// mobility, has a radio): a greedy router knows where the radio nodes
/// that never move are (the AP), and sends its first beacon at a phase
/// drawn from `stream` within the beacon interval.
pub fn router<'a>(
    routing: Routing,
    me: NodeId,
    gps: &MobilityModel,
    nodes: impl Iterator<Item = (NodeId, &'a MobilityModel, bool)>,
    mut stream: Stream,
) -> Box<dyn Router> {
    match routing {
        Routing::Infrastructure => Box::new(route::Infrastructure),
        Routing::Greedy => {
            let fixed = nodes
                .filter(|&(id, m, radio)| radio && id != me && m.max_speed() == 0.0)
                .map(|(id, m, _)| (id, m.position(SimTime::ZERO)));
            let known: Vec<(NodeId, Vec2)> = fixed.collect();
            let phase =
                SimTime::from_secs_f64(stream.uniform() * gpsr::BEACON_INTERVAL.as_secs_f64());
            Box::new(gpsr::Greedy::new(me, gps.clone(), known, phase))
        }
    }
}

/// Whether a node with this DHCP client (`None`: a static address) has an
/// address.
fn has_address(dhcp: &Option<DhcpClient>) -> bool {
    dhcp.as_ref().is_none_or(DhcpClient::bound)
}

/// An MSDU carrying `p` to `dst`.
fn msdu(now: SimTime, dst: Dst, p: Packet) -> Msdu {
    Msdu {
        dst,
        bytes: p.bytes() + LLC_SNAP,
        enqueued: now,
        fixed: None,
        source: None,
        payload: Payload::Packet(p),
    }
}

impl Net {
    pub fn new(me: NodeId, s: NetSetup) -> Net {
        Net {
            me,
            role: s.role,
            radio: s.radio,
            split_tcp: s.split_tcp,
            dhcp_server: s.dhcp_server,
            arp: Arp::new(s.arp),
            dhcp: s.dhcp,
            ports: s.ports,
            bridged: Vec::new(),
            leased: Vec::new(),
            plan: s.plan,
            router: s.router,
            links: 0,
            announcing: None,
            held: Vec::new(),
            forwarding: s.forwarding.map(Forwarding::new),
            out: VecDeque::new(),
        }
    }

    /// The next output, oldest first.
    pub fn poll(&mut self) -> Option<NetOutput> {
        self.out.pop_front()
    }

    /// Whether this node has an address (static, or a DHCP lease).
    pub fn addressed(&self) -> bool {
        has_address(&self.dhcp)
    }

    fn conn(&mut self, peer: NodeId, event: ConnEvent, value: f64) {
        self.out.push_back(NetOutput::Conn { peer, event, value });
    }

    /// Sends (or forwards) `p` towards its destination; packets without a
    /// route, or whose TTL runs out here, are dropped.
    pub fn send(&mut self, now: SimTime, mut p: Packet, bss: &dyn Bss) {
        if self.announcing.is_some() && p.src == self.me {
            self.held.push(p);
            return;
        }
        if p.dst == ALL_HOSTS {
            let local = p.src == self.me;
            self.multicast_send(now, p, local, bss);
            return;
        }
        if p.dst == self.me {
            self.out.push_back(NetOutput::Deliver(p));
            return;
        }
        if p.src != self.me {
            if p.ttl <= 1 {
                return;
            }
            p.ttl -= 1;
        }
        let view = View {
            me: self.me,
            role: self.role,
            radio: self.radio,
            addressed: has_address(&self.dhcp),
            bss,
            plan: &self.plan,
            ports: &self.ports,
            bridged: &self.bridged,
            leased: &self.leased,
        };
        let hop = self.router.next_hop(now, &mut p, &view);
        self.pump_router(now);
        match hop {
            Some(Hop::Wire(link)) => self.out.push_back(NetOutput::Wire {
                link,
                frame: WireFrame::Ip(p),
            }),
            Some(Hop::Air(hop)) => self.arp_send(now, hop, p),
            None => {}
        }
    }

    /// The node appeared: starts the router.
    pub fn handle_start(&mut self, now: SimTime) {
        self.router.start(now);
        self.pump_router(now);
    }

    /// The MAC gave up sending `p` to neighbour `hop`: the router may route
    /// it again.
    pub fn handle_tx_failed(&mut self, now: SimTime, hop: NodeId, p: &Packet) {
        self.router.handle_link_failure(now, hop, p);
        self.pump_router(now);
    }

    /// Drains the router's outputs into this layer's.
    fn pump_router(&mut self, now: SimTime) {
        while let Some(o) = self.router.poll() {
            match o {
                RouterOutput::Broadcast(p) => {
                    if self.radio {
                        self.out
                            .push_back(NetOutput::Air(msdu(now, Dst::Broadcast, p)));
                    }
                }
                RouterOutput::Send { hop, packet } => self.arp_send(now, hop, packet),
                RouterOutput::Conn { peer, event, value } => self.conn(peer, event, value),
                RouterOutput::Timer { at, generation } => self.out.push_back(NetOutput::Timer {
                    timer: NetTimer::Route,
                    at,
                    generation,
                }),
            }
        }
    }

    /// A packet not for this node, arrived from below: to the proxy first
    /// if this node splits TCP, else forwarded.
    fn forward(&mut self, now: SimTime, p: Packet, bss: &dyn Bss) {
        if p.dst != self.me && self.split_tcp && matches!(p.body, Body::Tcp(_)) {
            self.out.push_back(NetOutput::Intercept(p));
        } else {
            self.send(now, p, bss);
        }
    }

    /// Arms the forwarding engine's timer for `at`.
    fn forwarded_at(&mut self, at: SimTime) {
        self.out.push_back(NetOutput::Timer {
            timer: NetTimer::Forwarded,
            at,
            generation: 0,
        });
    }

    /// A group packet sent here (`local`) or arrived over a wire: out on
    /// the air as a broadcast frame, and, if sent here, over every wired link.
    fn multicast_send(&mut self, now: SimTime, p: Packet, local: bool, bss: &dyn Bss) {
        let on_air = self.radio
            && self.addressed()
            && (self.role != Role::Sta || bss.associated_ap().is_some());
        if on_air {
            self.out
                .push_back(NetOutput::Air(msdu(now, Dst::Broadcast, p.clone())));
        }
        if local {
            for i in 0..self.ports.len() {
                self.out.push_back(NetOutput::Wire {
                    link: self.ports[i].link,
                    frame: WireFrame::Ip(p.clone()),
                });
            }
        }
    }

    /// A group packet arrived (over the air if `from_air`).
    fn multicast_rx(&mut self, now: SimTime, p: Packet, from_air: bool, bss: &dyn Bss) {
        if !from_air && p.ttl > 1 {
            self.out.push_back(NetOutput::Deliver(p.clone()));
            self.multicast_send(
                now,
                Packet {
                    ttl: p.ttl - 1,
                    ..p
                },
                false,
                bss,
            );
        } else {
            self.out.push_back(NetOutput::Deliver(p));
        }
    }

    /// A frame arrived over wired link `link`.
    pub fn handle_wire(&mut self, now: SimTime, link: usize, frame: WireFrame, bss: &dyn Bss) {
        match frame {
            WireFrame::L2Update { station } => {
                self.bridged.retain(|b| b.0 != station);
                self.bridged.push((station, link));
            }
            WireFrame::Ip(p) if p.dst == ALL_HOSTS => self.multicast_rx(now, p, false, bss),
            WireFrame::Ip(p) if p.dst == self.me => self.forward(now, p, bss),
            WireFrame::Ip(p) => {
                let Some(engine) = self.forwarding.as_mut() else {
                    return self.forward(now, p, bss);
                };
                let dst = p.dst;
                match engine.arrive(now, p) {
                    Arrival::Started(at) => self.forwarded_at(at),
                    Arrival::Queued => {}
                    Arrival::Dropped(queued) => {
                        self.conn(dst, ConnEvent::ForwardDrop, queued as f64)
                    }
                }
            }
        }
    }

    /// Sends over the air to `hop` once ARP has resolved it.
    fn arp_send(&mut self, now: SimTime, hop: NodeId, p: Packet) {
        match self.arp.lookup(hop, p) {
            Lookup::Send(p) => self
                .out
                .push_back(NetOutput::Air(msdu(now, Dst::Node(hop), p))),
            Lookup::Queued { request: true } => self.arp_request(now, hop),
            Lookup::Queued { request: false } => {}
        }
    }

    fn arp_request(&mut self, now: SimTime, hop: NodeId) {
        let Some((attempt, generation)) = self.arp.request(hop) else {
            return;
        };
        self.conn(hop, ConnEvent::ArpRequest, attempt as f64);
        let p = Packet::new(self.me, hop, Body::Arp { op: ArpOp::Request });
        self.out
            .push_back(NetOutput::Air(msdu(now, Dst::Broadcast, p)));
        let at = now + self.arp.config().retransmit;
        self.out.push_back(NetOutput::Timer {
            timer: NetTimer::Arp(hop),
            at,
            generation,
        });
    }

    /// The first link came up: a gratuitous ARP for our own address, then
    /// `quiet` without sending (packets meanwhile are held, not lost).
    fn announce(&mut self, now: SimTime, quiet: SimTime) {
        self.conn(self.me, ConnEvent::ArpAnnounce, quiet.as_secs_f64());
        let p = Packet::new(self.me, self.me, Body::Arp { op: ArpOp::Request });
        self.out
            .push_back(NetOutput::Air(msdu(now, Dst::Broadcast, p)));
        if self.announcing.is_none() {
            self.out.push_back(NetOutput::Timer {
                timer: NetTimer::Announced,
                at: now + quiet,
                generation: 0,
            });
        }
        self.announcing = Some(now + quiet);
    }

    fn arp_resolved(&mut self, now: SimTime, peer: NodeId) {
        if let Some(waiting) = self.arp.resolved(peer) {
            self.conn(peer, ConnEvent::ArpResolved, 0.0);
            for p in waiting {
                self.out
                    .push_back(NetOutput::Air(msdu(now, Dst::Node(peer), p)));
            }
        }
    }

    /// A timer armed by [`NetOutput::Timer`] fired.
    pub fn handle_timeout(
        &mut self,
        now: SimTime,
        timer: NetTimer,
        generation: u32,
        bss: &dyn Bss,
    ) {
        match timer {
            NetTimer::Arp(peer) => match self.arp.expire(peer, generation) {
                Expiry::Stale => {}
                Expiry::Retransmit => self.arp_request(now, peer),
                Expiry::Failed => self.conn(peer, ConnEvent::ArpFailed, 0.0),
            },
            NetTimer::Dhcp => {
                if let Some(s) = self.dhcp.as_mut().and_then(|c| c.expire(generation)) {
                    self.dhcp_client_send(now, s);
                }
            }
            NetTimer::Route => {
                self.router.handle_timeout(now, generation);
                self.pump_router(now);
            }
            NetTimer::Forwarded => {
                let engine = self.forwarding.as_mut().expect("a forwarding engine");
                let (p, next) = engine.done(now);
                if let Some(at) = next {
                    self.forwarded_at(at);
                }
                if let Some(p) = p {
                    self.forward(now, p, bss);
                }
            }
            NetTimer::Announced => {
                self.announcing = None;
                for p in std::mem::take(&mut self.held) {
                    self.send(now, p, bss);
                }
            }
        }
    }

    fn dhcp_client_send(&mut self, now: SimTime, s: ClientSend) {
        let event = if s.op == DhcpOp::Discover {
            ConnEvent::DhcpDiscover
        } else {
            ConnEvent::DhcpRequest
        };
        self.conn(s.server, event, s.attempt as f64);
        let p = Packet::new(self.me, s.server, Body::Dhcp { op: s.op });
        self.out
            .push_back(NetOutput::Air(msdu(now, Dst::Broadcast, p)));
        self.out.push_back(NetOutput::Timer {
            timer: NetTimer::Dhcp,
            at: now + s.wait,
            generation: s.generation,
        });
    }

    /// A DHCP message arrived over the air from `from`.
    fn dhcp_rx(&mut self, now: SimTime, from: NodeId, op: DhcpOp, bss: &dyn Bss) {
        match op {
            DhcpOp::Discover | DhcpOp::Request => {
                if !self.dhcp_server || !bss.has_station(from) {
                    return;
                }
                let reply = if op == DhcpOp::Discover {
                    DhcpOp::Offer
                } else {
                    DhcpOp::Ack
                };
                let p = Packet::new(self.me, from, Body::Dhcp { op: reply });
                self.out
                    .push_back(NetOutput::Air(msdu(now, Dst::Node(from), p)));
                if reply == DhcpOp::Ack {
                    if !self.leased.contains(&from) {
                        self.leased.push(from);
                    }
                    self.out.push_back(NetOutput::Ready(from));
                }
            }
            DhcpOp::Offer | DhcpOp::Ack => {
                let Some(c) = self.dhcp.as_mut() else { return };
                match c.handle(from, op) {
                    ClientStep::Ignored => {}
                    ClientStep::Send(s) => self.dhcp_client_send(now, s),
                    ClientStep::Bound => {
                        self.conn(from, ConnEvent::DhcpBound, 0.0);
                        self.out.push_back(NetOutput::Ready(from));
                    }
                }
            }
        }
    }

    /// A packet arrived over the air from `from`.
    pub fn handle_air(&mut self, now: SimTime, from: NodeId, p: Packet, bss: &dyn Bss) {
        if let Body::Dhcp { op } = p.body {
            self.dhcp_rx(now, from, op, bss);
            return;
        }
        if !self.addressed() {
            return; // no address yet: IP traffic is not ours
        }
        let control = self.router.handle_packet(now, from, &p);
        self.pump_router(now);
        if control {
            return;
        }
        if let Body::Arp { op } = p.body {
            // Requests teach the receiver the sender's address too.
            if p.dst == self.me || op == ArpOp::Reply {
                self.arp_resolved(now, from);
            }
            if op == ArpOp::Request && p.dst == self.me {
                let reply = Packet::new(self.me, from, Body::Arp { op: ArpOp::Reply });
                self.out
                    .push_back(NetOutput::Air(msdu(now, Dst::Node(from), reply)));
            }
            return;
        }
        if p.dst == ALL_HOSTS {
            let from_bss = match self.role {
                Role::Sta => bss.associated_ap() == Some(from),
                Role::Ap => bss.has_station(from),
                Role::Independent => true,
            };
            if from_bss {
                self.multicast_rx(now, p, true, bss);
            }
            return;
        }
        self.forward(now, p, bss);
    }

    /// Association with `peer` came up. An AP announces the station on its
    /// wired links; IP traffic is ready at once, unless a DHCP exchange
    /// must come first (this station has no lease, or this AP has not
    /// leased the station its dynamic address yet).
    pub fn handle_link_up(&mut self, now: SimTime, peer: NodeId) {
        self.links += 1;
        if let (1, Some(quiet)) = (self.links, self.arp.config().announce) {
            self.announce(now, quiet);
        }
        if self.role == Role::Ap {
            for i in 0..self.ports.len() {
                self.out.push_back(NetOutput::Wire {
                    link: self.ports[i].link,
                    frame: WireFrame::L2Update { station: peer },
                });
            }
        }
        if let Some(s) = self.dhcp.as_mut().and_then(|c| c.start(peer)) {
            self.dhcp_client_send(now, s);
            return;
        }
        if self.plan.dynamic(peer) && !self.leased.contains(&peer) {
            return;
        }
        self.out.push_back(NetOutput::Ready(peer));
    }

    /// Association with `peer` was lost: forget its ARP entry and stop a
    /// DHCP exchange under way.
    pub fn handle_link_down(&mut self, peer: NodeId) {
        self.links = self.links.saturating_sub(1);
        self.arp.forget(peer);
        if let Some(c) = self.dhcp.as_mut() {
            c.stop();
        }
    }
}

#[cfg(test)]
mod tests;
