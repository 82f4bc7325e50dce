//! Tests per (state, event) of the network layer: routing through the
//! hook, ARP in front of the air, DHCP gating, multicast and forwarding.

use super::*;
use crate::net::arp::ArpProfile;
use crate::packet::Segment;
use crate::packet::DEFAULT_TTL;

const AP: NodeId = NodeId(0);
const STA: NodeId = NodeId(1);
const SERVER: NodeId = NodeId(2);
const AP2: NodeId = NodeId(3);

/// The BSS as management would report it.
#[derive(Default)]
struct Fake {
    ap: Option<NodeId>,
    stations: Vec<NodeId>,
}

impl Bss for Fake {
    fn associated_ap(&self) -> Option<NodeId> {
        self.ap
    }
    fn has_station(&self, sta: NodeId) -> bool {
        self.stations.contains(&sta)
    }
}

fn plan(dhcp_sta: bool) -> Arc<AddressPlan> {
    Arc::new(AddressPlan::new(
        vec![true, true, false, true],
        vec![false, dhcp_sta, false, false],
    ))
}

fn net(
    me: NodeId,
    role: Role,
    radio: bool,
    ports: Vec<Port>,
    dhcp: Option<DhcpClient>,
    plan: Arc<AddressPlan>,
) -> Net {
    Net::new(
        me,
        NetSetup {
            role,
            radio,
            split_tcp: false,
            dhcp_server: true,
            arp: ArpProfile::Linux.config(),
            dhcp,
            ports,
            plan,
            router: Box::new(route::Infrastructure),
            forwarding: None,
        },
    )
}

/// An AP with a radio and one wired port, on `link`, to the server.
fn wired_ap(link: usize) -> Net {
    let port = Port { link, far: SERVER };
    net(AP, Role::Ap, true, vec![port], None, plan(false))
}

fn drain(n: &mut Net) -> Vec<NetOutput> {
    std::iter::from_fn(|| n.poll()).collect()
}

/// A 100-byte TCP segment from `src` to `dst` (the GPSR tests use it too).
pub(super) fn tcp(src: NodeId, dst: NodeId) -> Packet {
    Packet::new(
        src,
        dst,
        Body::Tcp(Segment {
            len: 100,
            ..Default::default()
        }),
    )
}

fn air(out: &[NetOutput]) -> Vec<(Dst, Body)> {
    out.iter()
        .filter_map(|o| match o {
            NetOutput::Air(m) => match &m.payload {
                Payload::Packet(p) => Some((m.dst, p.body.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

const NOW: SimTime = SimTime::ZERO;

#[test]
fn station_unassociated_has_no_route() {
    let mut n = net(STA, Role::Sta, true, vec![], None, plan(false));
    n.send(NOW, tcp(STA, SERVER), &Fake::default());
    assert!(drain(&mut n).is_empty());
}

#[test]
fn station_associated_resolves_its_ap_then_sends_what_waited() {
    let mut n = net(STA, Role::Sta, true, vec![], None, plan(false));
    let bss = Fake {
        ap: Some(AP),
        ..Default::default()
    };
    n.send(NOW, tcp(STA, SERVER), &bss);
    let out = drain(&mut n);
    assert!(matches!(
        out[0],
        NetOutput::Conn {
            peer: AP,
            event: ConnEvent::ArpRequest,
            ..
        }
    ));
    assert_eq!(
        air(&out),
        vec![(Dst::Broadcast, Body::Arp { op: ArpOp::Request })]
    );
    assert!(matches!(
        out[2],
        NetOutput::Timer {
            timer: NetTimer::Arp(AP),
            ..
        }
    ));
    n.handle_air(
        NOW,
        AP,
        Packet::new(AP, STA, Body::Arp { op: ArpOp::Reply }),
        &bss,
    );
    let out = drain(&mut n);
    assert!(matches!(
        out[0],
        NetOutput::Conn {
            peer: AP,
            event: ConnEvent::ArpResolved,
            ..
        }
    ));
    assert_eq!(air(&out), vec![(Dst::Node(AP), tcp(STA, SERVER).body)]);
    n.send(NOW, tcp(STA, SERVER), &bss);
    assert_eq!(
        air(&drain(&mut n)).len(),
        1,
        "resolved: straight to the MAC"
    );
}

#[test]
fn arp_request_for_me_is_answered_and_teaches_the_sender() {
    let mut n = net(AP, Role::Ap, true, vec![], None, plan(false));
    let bss = Fake {
        stations: vec![STA],
        ..Default::default()
    };
    n.handle_air(
        NOW,
        STA,
        Packet::new(STA, AP, Body::Arp { op: ArpOp::Request }),
        &bss,
    );
    assert_eq!(
        air(&drain(&mut n)),
        vec![(Dst::Node(STA), Body::Arp { op: ArpOp::Reply })]
    );
    n.send(NOW, tcp(AP, STA), &bss);
    assert_eq!(
        air(&drain(&mut n)),
        vec![(Dst::Node(STA), tcp(AP, STA).body)],
        "no request needed"
    );
    n.handle_air(
        NOW,
        STA,
        Packet::new(STA, AP2, Body::Arp { op: ArpOp::Request }),
        &bss,
    );
    assert!(
        drain(&mut n).is_empty(),
        "a request for another host is not answered"
    );
}

#[test]
fn arp_failure_after_the_profile_requests() {
    let mut n = net(STA, Role::Sta, true, vec![], None, plan(false));
    let bss = Fake {
        ap: Some(AP),
        ..Default::default()
    };
    n.send(NOW, tcp(STA, SERVER), &bss);
    let mut events = vec![];
    for _ in 0..4 {
        for o in drain(&mut n) {
            match o {
                NetOutput::Conn { event, .. } => events.push(event),
                NetOutput::Timer {
                    timer,
                    at,
                    generation,
                } => n.handle_timeout(at, timer, generation, &bss),
                _ => {}
            }
        }
    }
    assert_eq!(
        events,
        vec![
            ConnEvent::ArpRequest,
            ConnEvent::ArpRequest,
            ConnEvent::ArpRequest,
            ConnEvent::ArpFailed
        ]
    );
}

#[test]
fn ap_forwards_between_wire_and_air_and_drops_for_strangers() {
    let mut n = wired_ap(4);
    let bss = Fake {
        stations: vec![STA],
        ..Default::default()
    };
    n.handle_air(
        NOW,
        STA,
        Packet::new(STA, AP, Body::Arp { op: ArpOp::Request }),
        &bss,
    );
    drain(&mut n);
    n.handle_wire(NOW, 4, WireFrame::Ip(tcp(SERVER, STA)), &bss);
    let out = drain(&mut n);
    assert_eq!(air(&out).len(), 1);
    let NetOutput::Air(m) = &out[0] else { panic!() };
    let Payload::Packet(p) = &m.payload else {
        panic!()
    };
    assert_eq!(p.ttl, DEFAULT_TTL - 1, "forwarding takes one off the TTL");
    n.handle_air(NOW, STA, tcp(STA, SERVER), &bss);
    assert!(matches!(
        drain(&mut n)[..],
        [NetOutput::Wire {
            link: 4,
            frame: WireFrame::Ip(_)
        }]
    ));
    n.handle_wire(NOW, 4, WireFrame::Ip(tcp(SERVER, AP2)), &bss);
    assert!(
        drain(&mut n).is_empty(),
        "a radio host not associated here has no route"
    );
    n.handle_wire(
        NOW,
        4,
        WireFrame::Ip(Packet {
            ttl: 1,
            ..tcp(SERVER, STA)
        }),
        &bss,
    );
    assert!(drain(&mut n).is_empty(), "TTL runs out");
}

#[test]
fn wired_host_follows_layer_2_updates_else_its_first_link() {
    let ports = vec![Port { link: 0, far: AP }, Port { link: 1, far: AP2 }];
    let mut n = net(SERVER, Role::Independent, false, ports, None, plan(false));
    let bss = Fake::default();
    n.send(NOW, tcp(SERVER, STA), &bss);
    assert!(
        matches!(drain(&mut n)[..], [NetOutput::Wire { link: 0, .. }]),
        "default route"
    );
    n.handle_wire(NOW, 1, WireFrame::L2Update { station: STA }, &bss);
    assert!(drain(&mut n).is_empty());
    n.send(NOW, tcp(SERVER, STA), &bss);
    assert!(
        matches!(drain(&mut n)[..], [NetOutput::Wire { link: 1, .. }]),
        "behind AP2 now"
    );
    n.send(NOW, tcp(SERVER, AP2), &bss);
    assert!(
        matches!(drain(&mut n)[..], [NetOutput::Wire { link: 1, .. }]),
        "the far end itself"
    );
    n.send(NOW, tcp(SERVER, SERVER), &bss);
    assert!(matches!(drain(&mut n)[..], [NetOutput::Deliver(_)]));
}

#[test]
fn ap_link_up_announces_the_station_and_is_ready() {
    let mut n = wired_ap(7);
    n.handle_link_up(NOW, STA);
    let out = drain(&mut n);
    assert!(matches!(
        out[0],
        NetOutput::Wire {
            link: 7,
            frame: WireFrame::L2Update { station: STA }
        }
    ));
    assert!(matches!(out[1], NetOutput::Ready(STA)));
}

#[test]
fn dhcp_station_is_not_ready_until_bound_and_the_ap_waits_for_its_lease() {
    let client = DhcpClient::new(crate::rng::Stream::new("test", 1, 0, "dhcp"));
    let mut sta = net(STA, Role::Sta, true, vec![], Some(client), plan(true));
    let mut ap = net(AP, Role::Ap, true, vec![], None, plan(true));
    let (sta_bss, ap_bss) = (
        Fake {
            ap: Some(AP),
            ..Default::default()
        },
        Fake {
            stations: vec![STA],
            ..Default::default()
        },
    );
    ap.handle_link_up(NOW, STA);
    assert!(drain(&mut ap).is_empty(), "no lease yet");
    ap.send(NOW, tcp(AP, STA), &ap_bss);
    assert!(
        drain(&mut ap).is_empty(),
        "no route to an unleased dynamic address"
    );
    sta.handle_link_up(NOW, AP);
    assert!(!sta.addressed());
    // Run the exchange: each side's broadcasts and unicasts go to the other.
    let mut ready = (false, false);
    for _ in 0..4 {
        for o in drain(&mut sta) {
            ready.0 |= matches!(o, NetOutput::Ready(AP));
            if let NetOutput::Air(m) = o {
                let Payload::Packet(p) = m.payload else {
                    continue;
                };
                ap.handle_air(NOW, STA, p, &ap_bss);
            }
        }
        for o in drain(&mut ap) {
            ready.1 |= matches!(o, NetOutput::Ready(STA));
            if let NetOutput::Air(m) = o {
                let Payload::Packet(p) = m.payload else {
                    continue;
                };
                sta.handle_air(NOW, AP, p, &sta_bss);
            }
        }
    }
    assert!(sta.addressed());
    assert!(
        ready.0 && ready.1,
        "both ends are ready once bound and leased"
    );
    ap.send(NOW, tcp(AP, STA), &ap_bss);
    assert!(!drain(&mut ap).is_empty());
}

#[test]
fn multicast_from_the_wire_is_delivered_and_relayed_to_the_air_not_back() {
    let mut n = wired_ap(0);
    let bss = Fake {
        stations: vec![STA],
        ..Default::default()
    };
    let group = Packet::new(SERVER, ALL_HOSTS, Body::Tcp(Segment::default()));
    n.handle_wire(NOW, 0, WireFrame::Ip(group.clone()), &bss);
    let out = drain(&mut n);
    assert!(matches!(out[0], NetOutput::Deliver(_)));
    assert_eq!(air(&out).len(), 1);
    assert_eq!(out.len(), 2, "not back onto the wire");
    n.handle_air(NOW, AP2, group, &bss);
    assert!(drain(&mut n).is_empty(), "not from outside the BSS");
}

#[test]
fn split_ap_offers_forwarded_tcp_to_its_transport() {
    let mut n = wired_ap(0);
    n.split_tcp = true;
    let bss = Fake {
        stations: vec![STA],
        ..Default::default()
    };
    n.handle_air(NOW, STA, tcp(STA, SERVER), &bss);
    assert!(matches!(drain(&mut n)[..], [NetOutput::Intercept(_)]));
    n.handle_air(NOW, STA, tcp(STA, AP), &bss);
    assert!(
        matches!(drain(&mut n)[..], [NetOutput::Deliver(_)]),
        "its own traffic is delivered"
    );
}

/// An ad hoc node at `x` on the road routing greedily towards the AP at
/// x = 1000, its first beacon at its start.
fn greedy(me: NodeId, x: f64) -> Net {
    use crate::geometry::Vec2;
    use crate::mobility::{MobilityModel, Trajectory};
    let gps = MobilityModel::Trajectory(Trajectory::fixed(Vec2::new(x, 0.0)));
    let router =
        crate::net::gpsr::Greedy::new(me, gps, vec![(AP, Vec2::new(1000.0, 0.0))], SimTime::ZERO);
    let plan = Arc::new(AddressPlan::new(vec![true; 4], vec![false; 4]));
    let mut n = net(me, Role::Independent, true, vec![], None, plan);
    n.router = Box::new(router);
    n
}

fn beacon_of(n: &mut Net, at: SimTime) -> Packet {
    n.handle_start(at);
    let out = drain(n);
    let [NetOutput::Timer {
        timer: NetTimer::Route,
        at,
        generation,
    }] = out[..]
    else {
        panic!("{out:?}")
    };
    n.handle_timeout(at, NetTimer::Route, generation, &Fake::default());
    let out = drain(n);
    let NetOutput::Air(m) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!((m.dst, m.bytes), (Dst::Broadcast, 20 + 12 + LLC_SNAP));
    let Payload::Packet(p) = &m.payload else {
        panic!()
    };
    p.clone()
}

#[test]
fn greedy_started_beacons_and_a_heard_beacon_goes_no_further() {
    let mut sta = greedy(STA, 0.0);
    let b = beacon_of(&mut sta, NOW);
    let mut relay = greedy(AP2, 400.0);
    relay.handle_air(NOW, STA, b, &Fake::default());
    assert!(drain(&mut relay).is_empty(), "the router keeps its beacons");
}

#[test]
fn greedy_forwards_towards_the_ap_through_arp_with_its_header() {
    let mut relay = greedy(AP2, 400.0);
    let b = beacon_of(&mut relay, NOW);
    let mut sta = greedy(STA, 0.0);
    sta.handle_air(NOW, AP2, b, &Fake::default());
    sta.send(NOW, tcp(STA, AP), &Fake::default());
    let out = drain(&mut sta);
    assert!(
        matches!(
            out[0],
            NetOutput::Conn {
                peer: AP2,
                event: ConnEvent::ArpRequest,
                ..
            }
        ),
        "{out:?}"
    );
    sta.handle_air(
        NOW,
        AP2,
        Packet::new(AP2, STA, Body::Arp { op: ArpOp::Reply }),
        &Fake::default(),
    );
    let out = drain(&mut sta);
    let NetOutput::Air(m) = &out[1] else {
        panic!("{out:?}")
    };
    let Payload::Packet(p) = &m.payload else {
        panic!()
    };
    assert_eq!(m.dst, Dst::Node(AP2));
    assert!(p.geo.is_some());
    assert_eq!(m.bytes, tcp(STA, AP).bytes() + 16 + LLC_SNAP);
}

#[test]
fn greedy_without_a_route_holds_then_drops_and_traces_it() {
    let mut sta = greedy(STA, 0.0);
    sta.send(NOW, tcp(STA, AP), &Fake::default());
    let mut drops = vec![];
    let mut out = drain(&mut sta);
    while !out.is_empty() {
        let mut next = vec![];
        for o in out {
            match o {
                NetOutput::Timer {
                    timer,
                    at,
                    generation,
                } => {
                    sta.handle_timeout(at, timer, generation, &Fake::default());
                    next.extend(drain(&mut sta));
                }
                NetOutput::Conn { peer, event, value } => drops.push((peer, event, value)),
                o => panic!("{o:?}"),
            }
        }
        out = next;
    }
    assert_eq!(drops, vec![(AP, ConnEvent::RouteDrop, 5.0)]);
}
