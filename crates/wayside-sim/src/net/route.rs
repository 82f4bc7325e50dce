//! Routing: where a packet leaves a node. [`Router`] is the hook a routing
//! protocol plugs into; [`Infrastructure`] is the default, the routing of a
//! WLAN behind access points with static addresses (the papers' set-ups):
//! a station sends everything through the AP it is associated with; an AP
//! delivers to its stations over the air and to other hosts over its wired
//! links; a wired host picks the link whose far end is the destination or
//! behind which the destination was last announced (the AP's layer-2 update,
//! [`super::Body::L2Update`]), else its first link (the default route);
//! nodes without a role (ad hoc) send directly to radio hosts.

use super::Packet;
use crate::mac::mgmt::Role;
use crate::ids::NodeId;
use crate::units::SimTime;

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
        self.ports.iter().find(|p| p.far == dst || behind == Some(p.link)).or(self.ports.first()).map(|p| Hop::Wire(p.link))
    }
}

/// The routing hook: decides the next hop of every packet a node sends or
/// forwards (not of packets for itself, multicast, ARP or DHCP).
pub trait Router: Send {
    /// Where `p` leaves this node now; `None`: no route, the packet is dropped.
    fn next_hop(&mut self, now: SimTime, p: &Packet, view: &View) -> Option<Hop>;
}

/// The default routing (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Infrastructure;

impl Router for Infrastructure {
    fn next_hop(&mut self, _now: SimTime, p: &Packet, v: &View) -> Option<Hop> {
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
