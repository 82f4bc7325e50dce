//! DHCP (RFC 2131), off by default: a station with `dhcp = true` has no
//! address after association until it has been through DISCOVER, OFFER,
//! REQUEST and ACK with a server — here the access point itself. The client
//! An AP serves DHCP unless its `dhcp_server` is off. The client
//! retransmits per RFC 2131 §4.1: 4 s, doubling to 64 s, each randomised by
//! ±1 s, then starts over. Until bound, the station sends and receives no IP
//! traffic, and applications waiting for the connection do not start. A lease
//! is kept across re-associations (no INIT-REBOOT exchange is modelled).

use crate::event::Event;
use crate::ids::NodeId;
use crate::mac::{Dst, Msdu, Payload};
use crate::net::{Body, Packet, IP_HEADER, LLC_SNAP};
use crate::rng::Stream;
use crate::world::World;
use crate::trace::ConnEvent;
use crate::units::SimTime;

/// BOOTP message bytes (the minimum size RFC 2131 clients send).
pub const DHCP_BYTES: u32 = 300;
/// UDP header in front of a DHCP message.
const UDP_HEADER: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DhcpOp {
    Discover,
    Offer,
    Request,
    Ack,
}

impl DhcpOp {
    pub fn bytes() -> u32 {
        IP_HEADER + UDP_HEADER + DHCP_BYTES
    }
}

/// A client's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DhcpState {
    /// Static address, or a lease already held.
    Bound,
    /// Waiting for an offer (after DISCOVER) or an ack (after REQUEST).
    Selecting { server: NodeId, attempt: u32 },
    Requesting { server: NodeId, attempt: u32 },
    /// No exchange under way (not associated yet).
    Init,
}

/// A client's DHCP state and its retransmission timer.
#[derive(Clone, Debug)]
pub struct DhcpClient {
    pub state: DhcpState,
    generation: u32,
    rng: Stream,
}

impl DhcpClient {
    pub fn new(rng: Stream) -> Self {
        DhcpClient { state: DhcpState::Init, generation: 0, rng }
    }
}

/// RFC 2131 §4.1: 4 s before the first retransmission, doubling up to 64 s.
fn backoff(attempt: u32) -> f64 {
    4.0 * 2f64.powi(attempt.min(4) as i32)
}

impl World {
    /// Whether `node` has an address (static, or a DHCP lease).
    pub(crate) fn addressed(&self, node: NodeId) -> bool {
        self.nodes[node.index()].net.dhcp.as_ref().is_none_or(|c| c.state == DhcpState::Bound)
    }

    fn dhcp_send(&mut self, now: SimTime, node: NodeId, dst: Dst, to: NodeId, op: DhcpOp) {
        let p = Packet::new(node, to, Body::Dhcp { op });
        let msdu = Msdu { dst, bytes: DhcpOp::bytes() + LLC_SNAP, enqueued: now, fixed: None, source: None, payload: Payload::Packet(p) };
        self.mac_enqueue(now, node, msdu);
    }

    fn dhcp_client_send(&mut self, now: SimTime, node: NodeId) {
        let c = self.nodes[node.index()].net.dhcp.as_mut().expect("dhcp client");
        let (op, server, attempt) = match c.state {
            DhcpState::Selecting { server, attempt } => (DhcpOp::Discover, server, attempt),
            DhcpState::Requesting { server, attempt } => (DhcpOp::Request, server, attempt),
            DhcpState::Bound | DhcpState::Init => return,
        };
        let jitter = c.rng.uniform() * 2.0 - 1.0;
        c.generation = c.generation.wrapping_add(1);
        let generation = c.generation;
        let wait = SimTime::from_secs_f64(backoff(attempt) + jitter);
        let event = if op == DhcpOp::Discover { ConnEvent::DhcpDiscover } else { ConnEvent::DhcpRequest };
        self.conn_event(now, node, server.0, event, attempt as f64);
        self.dhcp_send(now, node, Dst::Broadcast, server, op);
        self.queue.schedule(now + wait, node.0, Event::Dhcp { node, generation });
    }

    /// Association came up: a DHCP client without a lease starts DISCOVER.
    pub(crate) fn dhcp_start(&mut self, now: SimTime, node: NodeId, ap: NodeId) -> bool {
        match self.nodes[node.index()].net.dhcp.as_mut() {
            Some(c) if c.state != DhcpState::Bound => {
                c.state = DhcpState::Selecting { server: ap, attempt: 0 };
                self.dhcp_client_send(now, node);
                true
            }
            _ => false,
        }
    }

    /// Association was lost during an exchange: stop retransmitting.
    pub(crate) fn dhcp_stop(&mut self, node: NodeId) {
        if let Some(c) = self.nodes[node.index()].net.dhcp.as_mut() {
            if c.state != DhcpState::Bound {
                c.state = DhcpState::Init;
                c.generation = c.generation.wrapping_add(1);
            }
        }
    }

    pub(crate) fn on_dhcp_timer(&mut self, now: SimTime, node: NodeId, generation: u32) {
        let Some(c) = self.nodes[node.index()].net.dhcp.as_mut() else { return };
        if c.generation != generation {
            return;
        }
        c.state = match c.state {
            DhcpState::Selecting { server, attempt } => DhcpState::Selecting { server, attempt: (attempt + 1) % 5 },
            // RFC 2131: no answer to REQUEST sends the client back to INIT.
            DhcpState::Requesting { server, .. } => DhcpState::Selecting { server, attempt: 0 },
            s => s,
        };
        self.dhcp_client_send(now, node);
    }

    /// A DHCP message arrived at `node` from `from` over the air.
    pub(crate) fn dhcp_rx(&mut self, now: SimTime, node: NodeId, from: NodeId, op: DhcpOp) {
        match op {
            DhcpOp::Discover | DhcpOp::Request => {
                if !self.nodes[node.index()].cfg.dhcp_server || !self.nodes[node.index()].mgmt.has_station(from) {
                    return;
                }
                let reply = if op == DhcpOp::Discover { DhcpOp::Offer } else { DhcpOp::Ack };
                self.dhcp_send(now, node, Dst::Node(from), from, reply);
                if reply == DhcpOp::Ack {
                    self.apps_link_up(now, node, from);
                }
            }
            DhcpOp::Offer | DhcpOp::Ack => {
                let Some(c) = self.nodes[node.index()].net.dhcp.as_mut() else { return };
                match (c.state, op) {
                    (DhcpState::Selecting { server, .. }, DhcpOp::Offer) if server == from => {
                        c.state = DhcpState::Requesting { server, attempt: 0 };
                        self.dhcp_client_send(now, node);
                    }
                    (DhcpState::Requesting { server, .. }, DhcpOp::Ack) if server == from => {
                        c.state = DhcpState::Bound;
                        c.generation = c.generation.wrapping_add(1);
                        self.conn_event(now, node, from.0, ConnEvent::DhcpBound, 0.0);
                        self.apps_link_up(now, node, from);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Whether `node` is a station whose AP should treat it as reachable.
    pub(crate) fn station_reachable(&self, ap: NodeId, sta: NodeId) -> bool {
        self.nodes[ap.index()].mgmt.has_station(sta) && self.addressed(sta)
    }
}
