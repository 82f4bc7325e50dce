//! Routing: where a packet leaves a node. [`Router`] is the hook a routing
//! protocol plugs into; [`Infrastructure`] is the default, the routing of a
//! WLAN behind access points with static addresses (the papers' set-ups):
//! a station sends everything through the AP it is associated with; an AP
//! delivers to its stations over the air and to other hosts over its wired
//! links; a wired host picks the link whose far end is the destination or
//! behind which the destination was last announced (the AP's layer-2 update,
//! [`crate::wire::WireFrame::L2Update`]), else its first link (the default route);
//! nodes without a role (ad hoc) send directly to radio hosts.
//!
//! A router may also speak a protocol of its own ([`super::gpsr`]): it is
//! started when its node appears, sees every packet that arrives over the
//! air before the network layer does (and keeps its control packets), has
//! one timer, hears of the MAC giving up on a neighbour, and hands the
//! network layer packets to broadcast, to send to a neighbour or that it
//! dropped ([`RouterOutput`]).

use super::Packet;
use crate::ids::NodeId;
use crate::mac::mgmt::Role;
use crate::trace::ConnEvent;
use crate::units::SimTime;

/// Which router a node runs (`routing = "…"` in a scenario's node).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Routing {
    /// [`Infrastructure`].
    #[default]
    Infrastructure,
    /// Greedy geographic forwarding ([`super::gpsr`]).
    Greedy,
}

/// Where a packet leaves a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Over the air to this neighbour.
    Air(NodeId),
    /// Over this wired link (an index into the world's wired links).
    Wire(usize),
}

/// What the link layer below knows about this node's BSS.
pub trait Bss {
    /// The AP a station is associated with.
    fn associated_ap(&self) -> Option<NodeId>;
    /// Whether this is an AP with `sta` associated.
    fn has_station(&self, sta: NodeId) -> bool;
}

/// Static facts about the addresses every host is configured with (as a
/// netmask is): which belong to radio hosts, and which are handed out by
/// DHCP and so are routable only once leased.
#[derive(Clone, Debug, Default)]
pub struct AddressPlan {
    radio: Vec<bool>,
    dynamic: Vec<bool>,
}

impl AddressPlan {
    pub fn new(radio: Vec<bool>, dynamic: Vec<bool>) -> AddressPlan {
        AddressPlan { radio, dynamic }
    }
    pub fn radio(&self, n: NodeId) -> bool {
        self.radio.get(n.index()).copied().unwrap_or(false)
    }
    pub fn dynamic(&self, n: NodeId) -> bool {
        self.dynamic.get(n.index()).copied().unwrap_or(false)
    }
}

/// One of a node's wired links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub link: usize,
    /// The host at the other end.
    pub far: NodeId,
}

/// What a router may consult at its node.
pub struct View<'a> {
    pub me: NodeId,
    pub role: Role,
    pub radio: bool,
    /// This node has an address (static, or a DHCP lease).
    pub addressed: bool,
    pub bss: &'a dyn Bss,
    pub plan: &'a AddressPlan,
    pub ports: &'a [Port],
    /// Stations announced behind each wired link (layer-2 updates).
    pub bridged: &'a [(NodeId, usize)],
    /// An AP's stations holding a lease from it.
    pub leased: &'a [NodeId],
}

impl View<'_> {
    /// Whether an AP's associated station `sta` can take IP traffic.
    pub fn station_reachable(&self, sta: NodeId) -> bool {
        self.bss.has_station(sta) && (!self.plan.dynamic(sta) || self.leased.contains(&sta))
    }

    /// The wired link that leads towards `dst`.
    fn wired(&self, dst: NodeId) -> Option<Hop> {
        let behind = self.bridged.iter().find(|b| b.0 == dst).map(|b| b.1);
        self.ports
            .iter()
            .find(|p| p.far == dst || behind == Some(p.link))
            .or(self.ports.first())
            .map(|p| Hop::Wire(p.link))
    }
}

/// What a router with a protocol of its own asks of the network layer.
#[derive(Clone, Debug, PartialEq)]
pub enum RouterOutput {
    /// Broadcast this control packet (a beacon) over the air.
    Broadcast(Packet),
    /// Send this packet over the air to neighbour `hop` (one it held).
    Send { hop: NodeId, packet: Packet },
    /// A routing event for the trace (a packet dropped) concerning `peer`.
    Conn {
        peer: NodeId,
        event: ConnEvent,
        value: f64,
    },
    /// Arm the routing timer for `at`; an expiry with another generation is
    /// void.
    Timer { at: SimTime, generation: u32 },
}

/// The routing hook: decides the next hop of every packet a node sends or
/// forwards (not of packets for itself, multicast, ARP or DHCP). Only
/// `next_hop` is required; the rest is for routers with a protocol.
pub trait Router: Send {
    /// Where `p` leaves this node now. `None`: the network layer sends
    /// nothing now — there is no route and the packet is dropped, or the
    /// router kept it and will send it through its outputs. A router may
    /// add a header of its own to `p`.
    fn next_hop(&mut self, now: SimTime, p: &mut Packet, view: &View) -> Option<Hop>;

    /// The node appeared.
    fn start(&mut self, _now: SimTime) {}

    /// `p` arrived over the air from neighbour `from`; `true`: it is this
    /// router's control packet and goes no further.
    fn handle_packet(&mut self, _now: SimTime, _from: NodeId, _p: &Packet) -> bool {
        false
    }

    /// The routing timer armed with `generation` fired.
    fn handle_timeout(&mut self, _now: SimTime, _generation: u32) {}

    /// The MAC gave up sending `p` to neighbour `hop` (its retries ran out).
    fn handle_link_failure(&mut self, _now: SimTime, _hop: NodeId, _p: &Packet) {}

    /// The next output, oldest first.
    fn poll(&mut self) -> Option<RouterOutput> {
        None
    }
}

/// The default routing (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Infrastructure;

impl Router for Infrastructure {
    fn next_hop(&mut self, _now: SimTime, p: &mut Packet, v: &View) -> Option<Hop> {
        let dst = p.dst;
        if !v.radio {
            return v.wired(dst);
        }
        match v.role {
            Role::Sta => v.bss.associated_ap().filter(|_| v.addressed).map(Hop::Air),
            Role::Ap => {
                if v.station_reachable(dst) {
                    Some(Hop::Air(dst))
                } else if v.plan.radio(dst) {
                    None // a radio host not associated here: no route
                } else {
                    v.wired(dst)
                }
            }
            Role::Independent => {
                if v.plan.radio(dst) {
                    Some(Hop::Air(dst))
                } else {
                    v.wired(dst)
                }
            }
        }
    }
}
