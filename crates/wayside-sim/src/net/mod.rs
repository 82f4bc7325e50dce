//! The network layer: packets, ARP with per-OS behaviour, forwarding at the
//! access point, and wired point-to-point links (the AP's backhaul).
//!
//! Addressing is static, one address per node (the papers' choice): node *i*
//! is 10.0.0.*i+1*, and the simulator identifies a host by its node id at
//! both layers, so ARP's role here is its delay and its losses, not a mapping.
//! Routing is implicit: a station sends everything through the AP it is
//! associated with; an AP delivers to its stations over the air and to other
//! hosts over its wired links; a wired host picks the link whose far end is
//! the destination or an AP the destination is associated with, else its
//! first link; nodes without a role (ad hoc) send directly. ARP runs on wireless
//! interfaces only (a wired link is treated as always resolved).
//!
//! ARP profiles (`ArpProfile`):
//! - `linux`: a request is retransmitted every second, three requests in all
//!   (`mcast_solicit` = 3, `retrans_time` = 1 s), up to three packets wait for
//!   the answer (`unres_qlen`); then the entry fails and its packets are
//!   dropped; the next packet starts a new resolution.
//! - `windows-xp`: one request, never retransmitted; the unresolved entry
//!   stays about 3.5 s, during which no new request is sent and one packet
//!   waits (Zahn et al. 2009, §5.1).
//!
//! A node's `arp_retransmit` replaces its profile's retransmission timeout
//! (for `windows-xp`: how long the failed entry is held) — Hadaller et al.
//! (2007) §7.3 (c), "reducing the ARP timeout".
//!
//! Resolved entries do not expire within a run.
//!
//! Addresses are static unless a station has `dhcp = true` ([`dhcp`]).
//!
//! Multicast: a packet to [`ALL_HOSTS`] (a group every host has joined, as
//! tcpx's trigger group; Ott & Kutscher 2004, §III-A) goes out as an 802.11
//! broadcast frame (basic rate, no ACK, no retry, no ARP) from a node with a
//! radio, and over every wired link from the host that sent it. A receiver
//! takes it if it runs an application of that group (see
//! [`World::multicast_member`]); an AP passes group packets from its wired
//! side on to the air, but not from the air to the wire, and a station takes
//! them only from the AP it is associated with.
//!
//! An AP with `split_tcp` terminates TCP connections it forwards
//! ([`crate::apps::split`]).

pub mod dhcp;

use crate::event::Event;
use crate::ids::NodeId;
use dhcp::{DhcpClient, DhcpOp};
use crate::config::Role;
use crate::mac::{Dst, Msdu, Payload};
use crate::world::World;
use crate::trace::ConnEvent;
use crate::transport::tcp::Segment;
use crate::transport::udp::Datagram;
use crate::units::SimTime;
use std::collections::VecDeque;

/// IPv4 header bytes.
pub const IP_HEADER: u32 = 20;
/// LLC/SNAP header in front of an IP packet in an 802.11 frame.
pub const LLC_SNAP: u32 = 8;
/// An ARP packet (Ethernet/IPv4).
pub const ARP_BYTES: u32 = 28;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpOp {
    Request,
    Reply,
}

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Arp { op: ArpOp },
    Dhcp { op: DhcpOp },
    Udp { datagram: Datagram, app: u32, seq: u64, sent: SimTime },
    Tcp(Segment),
}

/// An IP (or ARP) packet. Carried by value in frames and events: packets
/// are small (headers and lengths, no payload bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: NodeId,
    pub dst: NodeId,
    /// Hops left; a packet is dropped when it would be forwarded at zero.
    pub ttl: u8,
    pub body: Body,
}

/// The multicast group every application trigger is sent to (stands for an
/// IPv4 group address; traces show it as peer `u32::MAX`, like broadcast).
pub const ALL_HOSTS: NodeId = NodeId(u32::MAX);

/// The initial TTL of every packet (Linux and Windows XP default).
pub const DEFAULT_TTL: u8 = 64;

impl Packet {
    pub fn new(src: NodeId, dst: NodeId, body: Body) -> Packet {
        Packet { src, dst, ttl: DEFAULT_TTL, body }
    }
}

impl Packet {
    /// Bytes on the wire above the link layer.
    pub fn bytes(&self) -> u32 {
        match self.body {
            Body::Arp { .. } => ARP_BYTES,
            Body::Dhcp { .. } => DhcpOp::bytes(),
            Body::Udp { datagram, .. } => IP_HEADER + datagram.header_bytes() + datagram.len,
            Body::Tcp(seg) => IP_HEADER + seg.header_bytes() + seg.len,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpProfile {
    Linux,
    WindowsXp,
}

impl ArpProfile {
    /// The profile's timers and limits.
    pub fn config(self) -> ArpConfig {
        match self {
            ArpProfile::Linux => ArpConfig { requests: 3, retransmit: SimTime::from_ms(1000), queue: 3 },
            ArpProfile::WindowsXp => ArpConfig { requests: 1, retransmit: SimTime::from_ms(3500), queue: 1 },
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
}

#[derive(Clone, Debug)]
enum ArpState {
    Resolved,
    Pending { requests: u32, waiting: VecDeque<Packet> },
}

#[derive(Clone, Debug)]
struct ArpEntry {
    peer: NodeId,
    state: ArpState,
    generation: u32,
}

/// One direction of a wired link.
#[derive(Clone, Debug, Default)]
struct WireDir {
    /// When each queued packet finishes serialising, oldest first.
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
    dirs: [WireDir; 2],
}

impl WiredLink {
    pub fn new(a: NodeId, b: NodeId, bandwidth_bps: f64, delay: SimTime, queue_limit: usize) -> Self {
        WiredLink { a, b, bandwidth_bps, delay, queue_limit, dirs: Default::default() }
    }
}

/// A node's network layer.
#[derive(Clone, Debug)]
pub struct NetStack {
    pub arp_cfg: ArpConfig,
    arp: Vec<ArpEntry>,
    /// Indices of this node's wired links.
    pub wired: Vec<usize>,
    /// Whether the node has a radio.
    pub radio: bool,
    /// The DHCP client, for a station that gets its address by DHCP.
    pub dhcp: Option<DhcpClient>,
}

impl NetStack {
    pub fn new(arp_cfg: ArpConfig, radio: bool, dhcp: Option<DhcpClient>) -> Self {
        NetStack { arp_cfg, arp: Vec::new(), wired: Vec::new(), radio, dhcp }
    }
}

/// Where a packet leaves a node.
enum Route {
    Wireless(NodeId),
    Wired(usize),
}

impl World {
    /// The wired link of `node` that leads towards `dst`.
    fn wired_route(&self, node: NodeId, dst: NodeId) -> Option<Route> {
        let links = &self.nodes[node.index()].net.wired;
        let far = |l: usize| {
            let w = &self.wires[l];
            if w.a == node {
                w.b
            } else {
                w.a
            }
        };
        links
            .iter()
            .copied()
            .find(|&l| far(l) == dst || self.nodes[far(l).index()].mgmt.has_station(dst))
            .or_else(|| links.first().copied())
            .map(Route::Wired)
    }

    fn route(&self, node: NodeId, dst: NodeId) -> Option<Route> {
        let n = &self.nodes[node.index()];
        if !n.net.radio {
            return self.wired_route(node, dst);
        }
        match n.cfg.role {
            Role::Sta => n.mgmt.associated_ap().filter(|_| self.addressed(node)).map(Route::Wireless),
            Role::Ap => {
                if self.station_reachable(node, dst) {
                    Some(Route::Wireless(dst))
                } else if self.nodes[dst.index()].net.radio {
                    None // a radio host not associated here: no route
                } else {
                    self.wired_route(node, dst)
                }
            }
            Role::Independent => {
                if self.nodes[dst.index()].net.radio {
                    Some(Route::Wireless(dst))
                } else {
                    self.wired_route(node, dst)
                }
            }
        }
    }

    /// Sends (or forwards) packet `id` from `node` towards its destination.
    /// Packets without a route are dropped.
    pub(crate) fn net_send(&mut self, now: SimTime, node: NodeId, mut p: Packet) {
        if p.dst == ALL_HOSTS {
            self.multicast_send(now, node, p, p.src == node);
            return;
        }
        if p.dst == node {
            self.transport_rx(now, node, p);
            return;
        }
        if p.src != node {
            if p.ttl <= 1 {
                return;
            }
            p.ttl -= 1;
        }
        match self.route(node, p.dst) {
            Some(Route::Wired(link)) => self.wire_send(now, node, link, p),
            Some(Route::Wireless(hop)) => self.arp_send(now, node, hop, p),
            None => {}
        }
    }

    /// A group packet at `node`, sent here (`local`) or arrived over a wire:
    /// out on the air as a broadcast frame, and, if sent here, over every wired link.
    fn multicast_send(&mut self, now: SimTime, node: NodeId, p: Packet, local: bool) {
        let n = &self.nodes[node.index()];
        let on_air = n.net.radio && self.addressed(node) && (n.cfg.role != Role::Sta || n.mgmt.associated_ap().is_some());
        if on_air {
            let msdu = Msdu { dst: Dst::Broadcast, bytes: p.bytes() + LLC_SNAP, enqueued: now, fixed: None, source: None, payload: Payload::Packet(p) };
            self.mac_enqueue(now, node, msdu);
        }
        if local {
            for link in self.nodes[node.index()].net.wired.clone() {
                self.wire_send(now, node, link, p);
            }
        }
    }

    /// A group packet arrived at `node` (over the air if `from_air`).
    fn multicast_rx(&mut self, now: SimTime, node: NodeId, p: Packet, from_air: bool) {
        if self.multicast_member(node, &p) {
            self.transport_rx(now, node, p);
        }
        if !from_air && p.ttl > 1 {
            self.multicast_send(now, node, Packet { ttl: p.ttl - 1, ..p }, false);
        }
    }

    /// A packet arrived at `node` over a wired link.
    pub(crate) fn net_rx_wired(&mut self, now: SimTime, node: NodeId, p: Packet) {
        if p.dst == ALL_HOSTS {
            self.multicast_rx(now, node, p, false);
        } else if p.dst == node || !self.split_intercept(now, node, &p) {
            self.net_send(now, node, p);
        }
    }

    fn wireless_send(&mut self, now: SimTime, node: NodeId, hop: NodeId, p: Packet) {
        let msdu = Msdu { dst: Dst::Node(hop), bytes: p.bytes() + LLC_SNAP, enqueued: now, fixed: None, source: None, payload: Payload::Packet(p) };
        self.mac_enqueue(now, node, msdu);
    }

    /// Sends over the air to `hop` once ARP has resolved it.
    fn arp_send(&mut self, now: SimTime, node: NodeId, hop: NodeId, p: Packet) {
        let profile = self.nodes[node.index()].net.arp_cfg;
        let arp = &mut self.nodes[node.index()].net.arp;
        let i = match arp.iter().position(|e| e.peer == hop) {
            Some(i) => i,
            None => {
                arp.push(ArpEntry { peer: hop, state: ArpState::Pending { requests: 0, waiting: VecDeque::new() }, generation: 0 });
                arp.len() - 1
            }
        };
        match &mut arp[i].state {
            ArpState::Resolved => self.wireless_send(now, node, hop, p),
            ArpState::Pending { requests, waiting } => {
                let first = *requests == 0;
                waiting.push_back(p);
                if waiting.len() > profile.queue {
                    waiting.pop_front();
                }
                if first {
                    self.arp_request(now, node, hop);
                }
            }
        }
    }

    fn arp_request(&mut self, now: SimTime, node: NodeId, hop: NodeId) {
        let profile = self.nodes[node.index()].net.arp_cfg;
        let entry = self.nodes[node.index()].net.arp.iter_mut().find(|e| e.peer == hop).expect("arp entry");
        let ArpState::Pending { requests, .. } = &mut entry.state else { return };
        *requests += 1;
        let attempt = *requests;
        entry.generation = entry.generation.wrapping_add(1);
        let generation = entry.generation;
        self.conn_event(now, node, hop.0, ConnEvent::ArpRequest, attempt as f64);
        let p = Packet::new(node, hop, Body::Arp { op: ArpOp::Request });
        let msdu = Msdu { dst: Dst::Broadcast, bytes: ARP_BYTES + LLC_SNAP, enqueued: now, fixed: None, source: None, payload: Payload::Packet(p) };
        self.mac_enqueue(now, node, msdu);
        self.queue.schedule(now + profile.retransmit, node.0, Event::Arp { node, peer: hop, generation });
    }

    /// ARP retransmission timer for `peer`.
    pub(crate) fn on_arp_timer(&mut self, now: SimTime, node: NodeId, peer: NodeId, generation: u32) {
        let profile = self.nodes[node.index()].net.arp_cfg;
        let arp = &mut self.nodes[node.index()].net.arp;
        let Some(i) = arp.iter().position(|e| e.peer == peer && e.generation == generation) else { return };
        let ArpState::Pending { requests, .. } = &arp[i].state else { return };
        if *requests < profile.requests {
            self.arp_request(now, node, peer);
            return;
        }
        arp.swap_remove(i);
        self.conn_event(now, node, peer.0, ConnEvent::ArpFailed, 0.0);
    }

    fn arp_resolved(&mut self, now: SimTime, node: NodeId, peer: NodeId) {
        let arp = &mut self.nodes[node.index()].net.arp;
        let waiting = match arp.iter_mut().find(|e| e.peer == peer) {
            Some(e) => match std::mem::replace(&mut e.state, ArpState::Resolved) {
                ArpState::Pending { waiting, .. } => {
                    e.generation = e.generation.wrapping_add(1);
                    Some(waiting)
                }
                ArpState::Resolved => None,
            },
            None => {
                arp.push(ArpEntry { peer, state: ArpState::Resolved, generation: 0 });
                None
            }
        };
        if let Some(waiting) = waiting {
            self.conn_event(now, node, peer.0, ConnEvent::ArpResolved, 0.0);
            for p in waiting {
                self.wireless_send(now, node, peer, p);
            }
        }
    }

    /// A packet arrived over the air at `node` from `from`.
    pub(crate) fn net_rx_wireless(&mut self, now: SimTime, node: NodeId, from: NodeId, p: Packet) {
        if let Body::Dhcp { op } = p.body {
            self.dhcp_rx(now, node, from, op);
            return;
        }
        if !self.addressed(node) {
            return; // no address yet: IP traffic is not ours
        }
        if let Body::Arp { op } = p.body {
            // Requests teach the receiver the sender's address too.
            if p.dst == node || op == ArpOp::Reply {
                self.arp_resolved(now, node, from);
            }
            if op == ArpOp::Request && p.dst == node {
                let reply = Packet::new(node, from, Body::Arp { op: ArpOp::Reply });
                self.wireless_send(now, node, from, reply);
            }
            return;
        }
        if p.dst == ALL_HOSTS {
            let n = &self.nodes[node.index()];
            let from_bss = match n.cfg.role {
                Role::Sta => n.mgmt.associated_ap() == Some(from),
                Role::Ap => n.mgmt.has_station(from),
                Role::Independent => true,
            };
            if from_bss {
                self.multicast_rx(now, node, p, true);
            }
            return;
        }
        if p.dst == node || !self.split_intercept(now, node, &p) {
            self.net_send(now, node, p);
        }
    }

    fn wire_send(&mut self, now: SimTime, node: NodeId, link: usize, p: Packet) {
        let l = &mut self.wires[link];
        let (dir, to) = if l.a == node { (0, l.b) } else { (1, l.a) };
        let d = &mut l.dirs[dir];
        while d.departures.front().is_some_and(|&t| t <= now) {
            d.departures.pop_front();
        }
        if d.departures.len() >= l.queue_limit {
            return;
        }
        let bytes = p.bytes();
        let start = d.departures.back().copied().unwrap_or(now).max(now);
        let done = start + SimTime::from_secs_f64(bytes as f64 * 8.0 / l.bandwidth_bps);
        d.departures.push_back(done);
        let arrive = done + l.delay;
        self.queue.schedule(arrive, node.0, Event::WireArrive { node: to, packet: Box::new(p) });
    }

    /// Association came up between `node` and `peer`: applications waiting
    /// for the connection start, unless a DHCP exchange must come first.
    pub(crate) fn net_link_up(&mut self, now: SimTime, node: NodeId, peer: NodeId) {
        let station_needs_lease = matches!(self.nodes[peer.index()].net.dhcp, Some(ref c) if c.state != dhcp::DhcpState::Bound);
        if self.dhcp_start(now, node, peer) || station_needs_lease {
            return;
        }
        self.apps_link_up(now, node, peer);
    }

    /// Association with `peer` was lost: forget its ARP entry.
    pub(crate) fn net_link_down(&mut self, node: NodeId, peer: NodeId) {
        self.nodes[node.index()].net.arp.retain(|e| e.peer != peer);
        self.dhcp_stop(node);
    }
}
