//! Sockets: the glue between the transport state machines (sans-IO TCP, UDP),
//! the network layer and the applications. Each TCP connection is one
//! [`Tcp`](crate::transport::tcp::Tcp) driven by the world: every input is
//! followed by draining `poll_transmit` and `poll_event`, and its next timer
//! is scheduled from `poll_timeout`. ACK samples go to the `tcp` trace table,
//! connection milestones to `events`, in-order data deliveries to `transport`.
//!
//! A socket belongs to an application or is one half of a split-TCP proxy
//! ([`crate::apps::split`]); a proxy half speaks with the address of the
//! host it stands in for, and its data is relayed, not delivered (no
//! `transport` rows, no first/last-data events).

use crate::event::Event;
use crate::ids::NodeId;
use crate::net::{Body, Packet};
use crate::rng::Stream;
use crate::world::World;
use crate::trace::{ConnEvent, Proto, TcpRow, TransportRow};
use crate::transport::tcp::{Segment, Tcp, TcpConfig, TcpEvent};
use crate::units::SimTime;

/// Who a socket's data is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// An application (index into the world's apps).
    App(u32),
    /// A split-TCP proxy half; `twin` is the socket of the other half.
    Proxy { twin: usize },
}

/// One TCP connection endpoint.
pub struct Socket {
    /// The node that runs it.
    pub node: NodeId,
    /// The address it sends from and answers to: `node`, except for a proxy
    /// half, which stands in for the far host.
    pub addr: NodeId,
    pub peer: NodeId,
    pub local_port: u16,
    pub remote_port: u16,
    pub tcp: Tcp,
    pub owner: Owner,
    /// Application messages completed on this connection (request-response).
    pub exchanges: u64,
    /// When the message now awaited was requested (request-response client).
    pub exchange_start: SimTime,
    /// Generation of the scheduled timer; stale timer events are ignored.
    generation: u32,
    armed: Option<SimTime>,
    received: u64,
    last_data: Option<SimTime>,
}

impl Socket {
    pub(crate) fn new(node: NodeId, addr: NodeId, peer: NodeId, ports: (u16, u16), tcp: Tcp, owner: Owner, now: SimTime) -> Socket {
        Socket {
            node,
            addr,
            peer,
            local_port: ports.0,
            remote_port: ports.1,
            tcp,
            owner,
            exchanges: 0,
            exchange_start: now,
            generation: 0,
            armed: None,
            received: 0,
            last_data: None,
        }
    }
}

/// A listening port: a new connection is accepted for every SYN.
pub struct Listener {
    pub node: NodeId,
    pub port: u16,
    pub cfg: TcpConfig,
    pub app: u32,
}

impl World {
    /// The initial sequence number of socket number `socket` at `node`.
    pub(crate) fn iss(&mut self, node: NodeId, socket: usize) -> u32 {
        let name = format!("tcp-iss/{}", self.nodes[node.index()].cfg.name);
        let mut s = Stream::new("run", self.seed, self.run_index, &format!("{name}/{socket}"));
        (s.uniform() * u32::MAX as f64) as u32
    }

    /// Opens a connection from `node` to `peer:port` and queues `bytes` to send.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tcp_connect(&mut self, now: SimTime, node: NodeId, peer: NodeId, port: u16, cfg: TcpConfig, app: u32, bytes: u64) -> usize {
        let local_port = 40_000 + (self.sockets.len() % 20_000) as u16;
        let iss = self.iss(node, self.sockets.len());
        let mut tcp = Tcp::connect(now, cfg, local_port, port, iss);
        tcp.send(bytes);
        self.sockets.push(Socket::new(node, node, peer, (local_port, port), tcp, Owner::App(app), now));
        let i = self.sockets.len() - 1;
        self.conn_event(now, node, peer.0, ConnEvent::Syn, 0.0);
        self.tcp_drive(now, i);
        i
    }

    pub(crate) fn tcp_listen(&mut self, node: NodeId, port: u16, cfg: TcpConfig, app: u32) {
        self.listeners.push(Listener { node, port, cfg, app });
    }

    /// A packet for `node` itself.
    pub(crate) fn transport_rx(&mut self, now: SimTime, node: NodeId, p: Packet) {
        match p.body {
            Body::Tcp(seg) => {
                let found = self.tcp_find(node, p.dst, p.src, &seg);
                self.tcp_rx(now, node, found, p.src, seg)
            }
            Body::Udp { datagram, app, seq, sent } => {
                let pos = self.position(node, now);
                self.trace.transport.push(TransportRow {
                    time_ns: now.as_ns(),
                    node: node.0,
                    peer: p.src.0,
                    proto: Proto::Udp,
                    app,
                    seq,
                    bytes: datagram.len,
                    delay_ns: (now - sent).as_ns(),
                    x: pos.x as f32,
                    y: pos.y as f32,
                });
                if p.dst == crate::net::ALL_HOSTS {
                    self.app_trigger(now, node, app, seq);
                }
            }
            Body::Arp { .. } | Body::Dhcp { .. } => {}
        }
    }

    /// The socket at `node` for a segment from `from` to address `addr`.
    pub(crate) fn tcp_find(&self, node: NodeId, addr: NodeId, from: NodeId, seg: &Segment) -> Option<usize> {
        self.sockets
            .iter()
            .position(|s| s.node == node && s.addr == addr && s.peer == from && s.local_port == seg.dst_port && s.remote_port == seg.src_port)
    }

    /// A segment for `node` itself: to its socket `found`, or to a listener.
    fn tcp_rx(&mut self, now: SimTime, node: NodeId, found: Option<usize>, from: NodeId, seg: Segment) {
        let i = match found {
            Some(i) => i,
            None => {
                let Some(l) = self.listeners.iter().find(|l| l.node == node && l.port == seg.dst_port) else { return };
                if !seg.flags.syn || seg.flags.ack {
                    return;
                }
                let (cfg, app) = (l.cfg.clone(), l.app);
                let iss = self.iss(node, self.sockets.len());
                let tcp = Tcp::listen(cfg, seg.dst_port, iss);
                self.sockets.push(Socket::new(node, node, from, (seg.dst_port, seg.src_port), tcp, Owner::App(app), now));
                self.sockets.len() - 1
            }
        };
        self.tcp_segment(now, i, seg);
    }

    /// Feeds `seg` to socket `i`.
    pub(crate) fn tcp_segment(&mut self, now: SimTime, i: usize, seg: Segment) {
        self.sockets[i].tcp.handle_segment(now, &seg);
        self.tcp_drive(now, i);
    }

    pub(crate) fn on_tcp_timer(&mut self, now: SimTime, socket: usize, generation: u32) {
        let s = &mut self.sockets[socket];
        if s.generation != generation {
            return;
        }
        s.armed = None;
        s.tcp.handle_timeout(now);
        self.tcp_drive(now, socket);
    }

    /// After an input to socket `i`: drains its output, lets its owner act on
    /// what arrived (an application's next message, a proxy's relay), and
    /// drains again whatever that queued.
    pub(crate) fn tcp_drive(&mut self, now: SimTime, i: usize) {
        self.tcp_output(now, i);
        match self.sockets[i].owner {
            Owner::App(app) => {
                if self.app_tcp_progress(now, app, i) {
                    self.tcp_output(now, i);
                }
            }
            Owner::Proxy { twin } => {
                if self.split_relay(i, twin) | self.split_relay(twin, i) {
                    self.tcp_output(now, i);
                    self.tcp_output(now, twin);
                }
            }
        }
    }

    /// Drains a socket's transmissions and events and re-arms its timer.
    pub(crate) fn tcp_output(&mut self, now: SimTime, i: usize) {
        while let Some(seg) = self.sockets[i].tcp.poll_transmit(now) {
            let (node, addr, peer) = (self.sockets[i].node, self.sockets[i].addr, self.sockets[i].peer);
            self.net_send(now, node, Packet::new(addr, peer, Body::Tcp(seg)));
        }
        let (node, peer) = (self.sockets[i].node, self.sockets[i].peer);
        while let Some(ev) = self.sockets[i].tcp.poll_event() {
            match ev {
                TcpEvent::Established => self.conn_event(now, node, peer.0, ConnEvent::Established, 0.0),
                TcpEvent::SynRetransmit { attempt } => self.conn_event(now, node, peer.0, ConnEvent::SynRetransmit, attempt as f64),
                TcpEvent::Timeout { rto, .. } => self.conn_event(now, node, peer.0, ConnEvent::TcpTimeout, rto.as_secs_f64()),
                TcpEvent::GaveUp => self.conn_event(now, node, peer.0, ConnEvent::TcpGaveUp, 0.0),
                TcpEvent::AckSample { cwnd, ssthresh, srtt, rto, dupacks, in_flight, acked } => {
                    let pos = self.position(node, now);
                    self.trace.tcp.push(TcpRow {
                        time_ns: now.as_ns(),
                        node: node.0,
                        peer: peer.0,
                        cwnd,
                        ssthresh,
                        srtt_ms: srtt.map_or(f32::NAN, |t| (t.as_secs_f64() * 1e3) as f32),
                        rto_ms: (rto.as_secs_f64() * 1e3) as f32,
                        dupacks,
                        in_flight,
                        acked,
                        x: pos.x as f32,
                        y: pos.y as f32,
                    });
                }
                TcpEvent::FastRetransmit | TcpEvent::Closed | TcpEvent::Reset => {}
            }
        }
        let received = self.sockets[i].tcp.bytes_received();
        if let (Owner::App(app), true) = (self.sockets[i].owner, received > self.sockets[i].received) {
            let new = received - self.sockets[i].received;
            if self.sockets[i].received == 0 {
                self.conn_event(now, node, peer.0, ConnEvent::FirstData, 0.0);
            }
            self.sockets[i].received = received;
            self.sockets[i].last_data = Some(now);
            let pos = self.position(node, now);
            self.trace.transport.push(TransportRow {
                time_ns: now.as_ns(),
                node: node.0,
                peer: peer.0,
                proto: Proto::Tcp,
                app,
                seq: received,
                bytes: new.min(u32::MAX as u64) as u32,
                delay_ns: 0,
                x: pos.x as f32,
                y: pos.y as f32,
            });
        }
        let next = self.sockets[i].tcp.poll_timeout();
        let s = &mut self.sockets[i];
        if next != s.armed {
            s.generation = s.generation.wrapping_add(1);
            s.armed = next;
            if let Some(t) = next {
                let generation = s.generation;
                self.queue.schedule(t.max(now), node.0, Event::Tcp { socket: i as u32, generation });
            }
        }
    }

    /// At the end of a run: the last data byte each receiving socket got.
    pub(crate) fn sockets_finish(&mut self) {
        for i in 0..self.sockets.len() {
            if let Some(t) = self.sockets[i].last_data {
                let (node, peer) = (self.sockets[i].node, self.sockets[i].peer);
                self.conn_event(t, node, peer.0, ConnEvent::LastData, self.sockets[i].received as f64);
            }
        }
    }
}
