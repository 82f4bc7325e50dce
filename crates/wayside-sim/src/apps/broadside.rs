//! Broadside hosted in the simulator: the `broadside` crate's sans-IO
//! [`Endpoint`], unchanged, as an application with real payload bytes in
//! every datagram — over UDP/IP, or straight over 802.11 frames
//! (Broadside-Raw, Zahn et al. 2009 §4: 2304-byte frames, no IP, no ARP).
//! The same code runs on real hosts in `broadside-node`; here the node's
//! stack is its socket and the simulated clock its clock.
//!
//! An application of kind `broadside` runs an endpoint at both of its ends.
//! The sending end (`from`) holds `files` files of `bytes` bytes each,
//! published by a provider both ends trust; their content and the
//! provider's key are drawn from the run's seed ([`super::files`]), so a run
//! is reproducible byte for byte. The other end holds older versions of
//! the same files (`common = true`, the paper's set-up) or none, and then
//! subscribes to the provider. Both ends beacon and discover each other as
//! Broadside does; files move to the other end as discovery finds them.
//!
//! Each end boots at the application's start plus a phase drawn uniformly
//! within one beacon interval: two hosts started by one script at the same
//! instant would otherwise beacon in lockstep, and on an idle medium the
//! DCF sends both at once (no backoff), so every beacon would collide —
//! real hosts are never that synchronised.
//!
//! As on a real host, an endpoint's datagrams go to its socket only while
//! the MAC queue has room (a full queue blocks the sender, like a full
//! socket buffer); they leave again when a frame is done. Broadcast goes to
//! the all-hosts group at the UDP port of the application; datagrams are
//! limited to 1472 bytes (a 1500-byte IP MTU), so none is fragmented.
//! Raw, a datagram is the body of one frame behind an LLC/SNAP header
//! (local experimental ethertype 0x88B6), at most the 2304-byte MSDU: 2296
//! bytes of Broadside; broadcast is the 802.11 broadcast address.
//! Over TCP (Broadside-IP, [`super::broadside_ip`]), beacons are UDP
//! broadcasts and everything else goes over a TCP connection to the peer.
//!
//! Every datagram received is logged in the `transport` trace (its bytes
//! and one-way delay); sync and transfer milestones go to `events`.

use super::broadside_ip::{Conns, TCP_DATAGRAM};
use super::files::FileSet;
use super::{AppOutput, Apps, Arrival};
use crate::ids::{Dst, NodeId};
use crate::mac::{Msdu, Payload};
use crate::packet::Datagram;
use crate::packet::{Body, Packet, ALL_HOSTS, LLC_SNAP};
use crate::rng::Stream;
use crate::sockets::Sockets;
use crate::trace::{ConnEvent, Proto};
use crate::units::SimTime;
use broadside::{
    Config, Destination, Endpoint, Event, Instant, PeerAddr, ProviderKey, TrustedKeys,
};
use std::sync::Arc;

/// A Broadside datagram carried straight in a MAC frame (no IP).
#[derive(Clone, Copy, Debug)]
pub struct RawDatagram<'a> {
    /// The application it is for.
    pub app: u32,
    pub data: &'a [u8],
    /// When its sender handed it to the MAC.
    pub sent: SimTime,
}

/// The largest datagram an endpoint sends over UDP: a 1500-byte IP MTU
/// less the IP and UDP headers.
pub const DATAGRAM: usize = 1500 - 28;
/// The largest datagram an endpoint sends raw: the 2304-byte MSDU less the
/// LLC/SNAP header.
pub const RAW_DATAGRAM: usize = 2304 - LLC_SNAP as usize;

/// What a Broadside application runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// UDP/IP datagrams.
    Udp,
    /// Straight over 802.11 frames (Broadside-Raw).
    Raw,
    /// Beacons over UDP, the rest over TCP (Broadside-IP).
    Tcp,
}

impl Link {
    /// The largest datagram an endpoint sends over this link.
    pub fn datagram(self) -> usize {
        match self {
            Link::Udp => DATAGRAM,
            Link::Raw => RAW_DATAGRAM,
            Link::Tcp => TCP_DATAGRAM,
        }
    }
}

/// A simulated host's address as Broadside's address validation sees it:
/// node *i* is 10.0.0.*i+1*, and the /24 is its prefix.
impl PeerAddr for NodeId {
    fn addr_bytes(&self) -> [u8; 19] {
        let mut b = [0u8; 19];
        b[..4].copy_from_slice(&self.0.to_be_bytes());
        b
    }

    fn prefix(&self) -> [u8; 9] {
        let mut b = [0u8; 9];
        b[..3].copy_from_slice(&self.0.to_be_bytes()[..3]);
        b
    }
}

fn instant(t: SimTime) -> Instant {
    Instant::from_micros(t.as_ns() / 1_000)
}

/// What the ends of a Broadside application hold: `count` files of
/// `bytes` each, published by one provider. The sending end holds version 2
/// of each; with `common`, the other end holds version 1 of each (the
/// paper's set-up: common files, one side newer), else none, and subscribes
/// to the provider. With `both_ways` (and `common`), each end holds the
/// newer version of every other file (the sending end of the even ones),
/// so that files move both ways.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Files {
    pub bytes: u64,
    pub count: u32,
    pub common: bool,
    pub both_ways: bool,
}

/// Version 1 of a common file is one block: its content is never read (the
/// other end's version 2 replaces it), so generating and hashing it in full
/// would cost time and change nothing.
const OLD_VERSION_BYTES: u64 = 1;

/// The file set of one end of application `app` at the start of run
/// (seed, run) `seed`: the sending end's, or the other's, in blocks that
/// fill `packet`-byte datagrams. Public so that a real node can be given
/// the same files.
pub fn file_set(
    seed: (u64, u64),
    app: u32,
    sender: bool,
    files: Files,
    packet: usize,
) -> (ProviderKey, FileSet) {
    let mut s = Stream::new("run", seed.0, seed.1, &format!("broadside/{app}"));
    let mut key = [0u8; 32];
    key.iter_mut()
        .for_each(|b| *b = s.integer_inclusive(255) as u8);
    let key = ProviderKey::from_seed(key);
    let block = (packet - broadside::wire::DATA_HEADER_LEN) as u32;
    let mut set = FileSet::default();
    for f in 0..files.count {
        // Content keys are drawn for every file in turn, so both ends agree.
        let content = (u64::from(s.integer_inclusive(u32::MAX)) << 32)
            | u64::from(s.integer_inclusive(u32::MAX));
        let name = if files.count == 1 {
            format!("app-{app}")
        } else {
            format!("app-{app}-{f}")
        };
        let newer = if files.both_ways {
            (f % 2 == 0) == sender
        } else {
            sender
        };
        if newer {
            set.publish(&key, &name, 2, files.bytes, content, block);
        } else if files.common {
            set.publish(&key, &name, 1, OLD_VERSION_BYTES, content ^ 1, block);
        }
    }
    (key, set)
}

/// A Broadside end as the run left it: what its endpoint counted, the
/// files it holds (their certificates) and its store.
pub struct BroadsideEnd {
    pub node: NodeId,
    pub app: u32,
    pub counters: broadside::Counters,
    pub files: Vec<broadside::Certificate>,
    pub store: FileSet,
}

/// One end of a Broadside application.
pub(super) struct Host {
    endpoint: Endpoint<NodeId>,
    store: FileSet,
    port: u16,
    link: Link,
    /// Broadside-IP's connections.
    conns: Conns,
    /// When the endpoint's timer is scheduled.
    armed: Option<SimTime>,
    /// How long after the application's start this end boots.
    phase: SimTime,
    /// When the endpoint last handled its timeout.
    handled: Option<SimTime>,
    /// Datagrams received (the `transport` trace's sequence numbers).
    received: u64,
}

impl Host {
    /// The end of application `app` at `me`; the sending end holds the
    /// newest versions. `link`: the port (UDP and TCP), and what it runs over;
    /// `congestion`: whether the node's congestion control runs.
    pub(super) fn new(
        me: NodeId,
        sender: bool,
        app: u32,
        link: (u16, Link),
        files: Files,
        congestion: bool,
        seed: (u64, u64),
    ) -> Host {
        let (port, link) = link;
        let packet_size = link.datagram();
        let (key, store) = file_set(seed, app, sender, files, packet_size);
        let mut s = Stream::new("run", seed.0, seed.1, &format!("broadside/{app}/{}", me.0));
        let secret = (u64::from(s.integer_inclusive(u32::MAX)) << 32)
            | u64::from(s.integer_inclusive(u32::MAX));
        let cfg = Config {
            packet_size,
            seed: secret,
            congestion,
            ..Config::default()
        };
        let phase = SimTime::from_secs_f64(s.uniform() * cfg.beacon_interval.as_secs_f64());
        let trusted = TrustedKeys::new([key.public()]);
        let mut endpoint = Endpoint::new(cfg, trusted, store.certificates(), Instant::ZERO)
            .expect("a valid endpoint configuration");
        if !sender && !files.common {
            endpoint.subscribe(key.public()); // it holds no version to update yet
        }
        Host {
            endpoint,
            store,
            port,
            link,
            conns: Conns::default(),
            armed: None,
            phase,
            handled: None,
            received: 0,
        }
    }
}

impl Apps {
    fn host(&mut self, id: u32) -> &mut Host {
        self.app(id).broadside.as_mut().expect("a Broadside end")
    }

    /// Broadside end `id` starts: it boots after its phase.
    pub(super) fn broadside_start(&mut self, now: SimTime, id: u32) {
        let h = self.host(id);
        let at = now + h.phase;
        h.armed = Some(at);
        self.out.push_back(AppOutput::Wake { app: id, at });
    }

    /// Broadside end `id`: its timer fired, or the MAC has room again.
    pub(super) fn broadside_wake(
        &mut self,
        now: SimTime,
        id: u32,
        room: usize,
        sockets: &mut Sockets,
    ) {
        let h = self.host(id);
        if h.armed.is_some_and(|t| t <= now) {
            h.armed = None;
            h.handled = Some(now);
            h.endpoint.handle_timeout(instant(now), &mut h.store);
        }
        self.broadside_flush(now, id, room, sockets);
    }

    /// A datagram for Broadside end `id` from `from`.
    pub(super) fn broadside_rx(
        &mut self,
        now: SimTime,
        id: u32,
        from: NodeId,
        data: &[u8],
        room: usize,
        sockets: &mut Sockets,
    ) {
        let h = self.host(id);
        h.endpoint
            .handle_datagram(instant(now), from, data, &mut h.store);
        self.broadside_flush(now, id, room, sockets);
    }

    /// Socket `i` of Broadside-IP end `id` had input: the datagrams it
    /// completes go to the endpoint.
    pub(super) fn broadside_readable(
        &mut self,
        now: SimTime,
        id: u32,
        i: usize,
        room: usize,
        sockets: &mut Sockets,
    ) {
        let me = self.me;
        let data = sockets.take(i);
        let from = sockets.get(i).peer;
        let h = self.host(id);
        h.conns.adopt(now, me, i, sockets);
        for frame in h.conns.frames(i, data) {
            h.endpoint
                .handle_datagram(instant(now), from, &frame, &mut h.store);
        }
        self.broadside_flush(now, id, room, sockets);
    }

    /// Sends what the endpoint has while the MAC has room, logs its events
    /// and re-arms its timer.
    fn broadside_flush(&mut self, now: SimTime, id: u32, mut room: usize, sockets: &mut Sockets) {
        let me = self.me;
        // Borrows the applications only, so that outputs can be queued.
        let app = self
            .ip
            .iter_mut()
            .find(|a| a.id == id)
            .expect("an application of this node");
        let h = app.broadside.as_mut().expect("a Broadside end");
        let mut stream_full = false;
        loop {
            if room == 0 {
                app.blocked = true; // resumes when the MAC finishes a frame
                break;
            }
            if h.link == Link::Tcp && !h.conns.room(sockets) {
                stream_full = true;
                break; // resumes when the peer acknowledges (the socket is readable)
            }
            let Some(t) = h.endpoint.poll_transmit(instant(now), &mut h.store) else {
                break;
            };
            if let (Link::Tcp, Destination::Peer(p)) = (h.link, &t.destination) {
                h.conns.queue(*p, &t.payload);
                continue;
            }
            let data: Arc<[u8]> = Arc::from(t.payload);
            if h.link == Link::Raw {
                let dst = match t.destination {
                    Destination::Broadcast => Dst::Broadcast,
                    Destination::Peer(p) => Dst::Node(p),
                };
                let bytes = data.len() as u32 + LLC_SNAP;
                let payload = Payload::Datagram {
                    app: id,
                    data,
                    sent: now,
                };
                self.out.push_back(AppOutput::Frame(Msdu {
                    dst,
                    bytes,
                    enqueued: now,
                    fixed: None,
                    source: None,
                    payload,
                }));
            } else {
                let dst = match t.destination {
                    Destination::Broadcast => ALL_HOSTS,
                    Destination::Peer(p) => p,
                };
                let datagram = Datagram::with_data(h.port, h.port, data);
                self.out.push_back(AppOutput::Packet(Packet::new(
                    me,
                    dst,
                    Body::Udp {
                        datagram,
                        app: id,
                        seq: 0,
                        sent: now,
                    },
                )));
            }
            room -= 1;
        }
        if h.link == Link::Tcp {
            if let Some(at) = h.conns.service(now, id, h.port, sockets) {
                self.out.push_back(AppOutput::Wake { app: id, at });
            }
        }
        while let Some(ev) = h.endpoint.poll_event() {
            let (peer, event, value) = match ev {
                Event::SyncStarted { peer, .. } => (peer, ConnEvent::SyncStarted, 0.0),
                Event::TransferStarted {
                    peer,
                    resumed_blocks,
                    ..
                } => (peer, ConnEvent::TransferStarted, f64::from(resumed_blocks)),
                Event::TransferStalled {
                    peer,
                    received_blocks,
                    ..
                } => (peer, ConnEvent::TransferStalled, f64::from(received_blocks)),
                Event::FileUpdated { peer, .. } => (peer, ConnEvent::FileUpdated, 0.0),
                _ => continue,
            };
            self.out.push_back(AppOutput::Conn { peer, event, value });
        }
        let blocked = self.app(id).blocked || stream_full;
        let h = self.host(id);
        // The endpoint's clock counts microseconds: a deadline in the
        // microsecond just handled falls later within it, so at the next.
        let next_us = SimTime::from_ns((now.as_ns() / 1_000 + 1) * 1_000);
        let floor = if h.handled == Some(now) { next_us } else { now };
        let next = h
            .endpoint
            .poll_timeout()
            .map(|t| SimTime::from_ns(t.as_micros() * 1_000).max(floor));
        // Blocked on the MAC (or on a full TCP send buffer), an endpoint
        // that wants to send now (or within this microsecond) waits for the
        // MAC to finish a frame (the peer to acknowledge), not for a timer:
        // re-arming at the next microsecond would poll it once a
        // microsecond for as long as the queue stays full.
        let next = next.filter(|&t| !(blocked && t <= next_us));
        if next.is_some_and(|t| h.armed.is_none_or(|a| t < a)) {
            h.armed = next;
            self.out.push_back(AppOutput::Wake {
                app: id,
                at: next.expect("checked"),
            });
        }
    }

    /// A datagram straight over the link, from `from`.
    pub fn handle_frame(
        &mut self,
        now: SimTime,
        from: NodeId,
        datagram: RawDatagram<'_>,
        room: usize,
        sockets: &mut Sockets,
    ) {
        let RawDatagram { app, data, sent } = datagram;
        if !self
            .ip
            .iter()
            .any(|a| a.id == app && a.broadside.as_ref().is_some_and(|h| h.link == Link::Raw))
        {
            return; // no raw end of that application here
        }
        let seq = self.broadside_received(app);
        self.out.push_back(AppOutput::Datagram(Arrival {
            peer: from,
            proto: Proto::Raw,
            app,
            seq,
            bytes: data.len() as u32,
            delay: now - sent,
        }));
        self.broadside_rx(now, app, from, data, room, sockets);
    }

    /// The Broadside ends here as the run left them (taken out: call at
    /// the end of the run).
    pub fn finish_broadside(&mut self) -> Vec<BroadsideEnd> {
        let me = self.me;
        let ends = self
            .ip
            .iter_mut()
            .filter_map(|a| a.broadside.take().map(|h| (a.id, h)));
        ends.map(|(app, h)| BroadsideEnd {
            node: me,
            app,
            counters: *h.endpoint.counters(),
            files: h.endpoint.files().cloned().collect(),
            store: h.store,
        })
        .collect()
    }

    /// Counts a datagram received by Broadside end `id`: its sequence number
    /// in the `transport` trace.
    pub(super) fn broadside_received(&mut self, id: u32) -> u64 {
        let h = self.host(id);
        h.received += 1;
        h.received
    }
}
