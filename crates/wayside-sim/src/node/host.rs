//! The pumps of a node's upper layers: the network layer, sockets and
//! applications. Each drains its layer's outputs, oldest first, into the
//! layer next to it, the MAC, the wired links, the event queue or the trace.

use crate::event::Event;
use crate::ids::NodeId;
use crate::net::{Body, NetOutput, NetTimer, Packet};
use crate::sockets::SocketOutput;
use crate::apps::AppOutput;
use crate::trace::{ConnEvent, Proto, TcpRow, TransportRow};
use crate::transport::tcp::TcpEvent;
use crate::units::SimTime;
use crate::wire::WireFrame;
use crate::world::World;

impl World {
    /// Drains `node`'s network layer.
    pub(crate) fn pump_net(&mut self, now: SimTime, node: NodeId) {
        while let Some(out) = self.nodes[node.index()].net.poll() {
            match out {
                NetOutput::Air(msdu) => {
                    self.mac_enqueue(now, node, msdu);
                }
                NetOutput::Wire { link, frame } => self.wire_send(now, node, link, frame),
                NetOutput::Deliver(p) => self.host_rx(now, node, p),
                NetOutput::Intercept(p) => {
                    let n = &mut self.nodes[node.index()];
                    if n.sockets.intercept(now, &p) {
                        self.pump_sockets(now, node);
                    } else {
                        n.net.send(now, p, &n.mgmt);
                    }
                }
                NetOutput::Conn { peer, event, value } => self.conn_event(now, node, peer.0, event, value),
                NetOutput::Ready(peer) => {
                    for s in self.script.link_up(now, node, peer) {
                        self.queue.schedule(s.at, s.from.0, Event::App { node: s.from, app: s.app });
                    }
                }
                NetOutput::Timer { timer, at, generation } => self.queue.schedule(at, node.0, Event::Net { node, timer, generation }),
            }
        }
    }

    /// A packet arrived over the air at `node` from `from`.
    pub(crate) fn net_rx_air(&mut self, now: SimTime, node: NodeId, from: NodeId, p: Packet) {
        let n = &mut self.nodes[node.index()];
        n.net.handle_air(now, from, p, &n.mgmt);
        self.pump_net(now, node);
    }

    pub(crate) fn on_net_timer(&mut self, now: SimTime, node: NodeId, timer: NetTimer, generation: u32) {
        self.nodes[node.index()].net.handle_timeout(now, timer, generation);
        self.pump_net(now, node);
    }

    /// `node` puts `frame` on wired link `link`; a full queue drops it.
    fn wire_send(&mut self, now: SimTime, node: NodeId, link: usize, frame: WireFrame) {
        if let Some((to, at)) = self.wires[link].send(now, node, frame.bytes()) {
            self.queue.schedule(at, node.0, Event::WireArrive { node: to, link: link as u32, frame: Box::new(frame) });
        }
    }

    pub(crate) fn on_wire_arrive(&mut self, now: SimTime, node: NodeId, link: usize, frame: WireFrame) {
        let n = &mut self.nodes[node.index()];
        n.net.handle_wire(now, link, frame, &n.mgmt);
        self.pump_net(now, node);
    }

    /// A packet for `node` itself.
    fn host_rx(&mut self, now: SimTime, node: NodeId, p: Packet) {
        let n = &mut self.nodes[node.index()];
        match p.body {
            Body::Tcp(_) => {
                n.sockets.handle_packet(now, p);
                self.pump_sockets(now, node);
            }
            Body::Udp { .. } => {
                n.apps.handle_datagram(now, p, &mut n.sockets);
                self.pump_apps(now, node);
                self.pump_sockets(now, node);
            }
            Body::Arp { .. } | Body::Dhcp { .. } => {}
        }
    }

    /// Drains `node`'s sockets.
    pub(crate) fn pump_sockets(&mut self, now: SimTime, node: NodeId) {
        while let Some(out) = self.nodes[node.index()].sockets.poll() {
            match out {
                SocketOutput::Send(p) => {
                    let n = &mut self.nodes[node.index()];
                    n.net.send(now, p, &n.mgmt);
                    self.pump_net(now, node);
                }
                SocketOutput::Conn { peer, event, value } => self.conn_event(now, node, peer.0, event, value),
                SocketOutput::Sample { peer, sample } => self.trace_sample(now, node, peer, sample),
                SocketOutput::Data { peer, app, total, new } => {
                    let bytes = new.min(u32::MAX as u64) as u32;
                    self.transport_row(now, node, peer, Proto::Tcp, app, total, bytes, SimTime::ZERO);
                }
                SocketOutput::Readable { socket, app } => {
                    let n = &mut self.nodes[node.index()];
                    if n.apps.handle_readable(now, app, socket, &mut n.sockets) {
                        self.pump_apps(now, node);
                        self.nodes[node.index()].sockets.flush(now, socket);
                    }
                }
                SocketOutput::Timer { socket, at, generation } => self.queue.schedule(at, node.0, Event::Tcp { node, socket, generation }),
            }
        }
    }

    pub(crate) fn on_tcp_timer(&mut self, now: SimTime, node: NodeId, socket: u32, generation: u32) {
        self.nodes[node.index()].sockets.handle_timeout(now, socket as usize, generation);
        self.pump_sockets(now, node);
    }

    /// Drains `node`'s applications.
    pub(crate) fn pump_apps(&mut self, now: SimTime, node: NodeId) {
        while let Some(out) = self.nodes[node.index()].apps.poll() {
            match out {
                AppOutput::Packet(p) => {
                    let n = &mut self.nodes[node.index()];
                    n.net.send(now, p, &n.mgmt);
                    self.pump_net(now, node);
                }
                AppOutput::Frame(msdu) => {
                    self.mac_enqueue(now, node, msdu);
                }
                AppOutput::Conn { peer, event, value } => self.conn_event(now, node, peer.0, event, value),
                AppOutput::Datagram { peer, app, seq, bytes, delay } => self.transport_row(now, node, peer, Proto::Udp, app, seq, bytes, delay),
                AppOutput::Wake { app, at } => self.queue.schedule(at, node.0, Event::App { node, app }),
                AppOutput::Emit { source, at } => {
                    let key = self.nodes.len() as u32 + source;
                    self.queue.schedule(at, key, Event::Traffic { node, source });
                }
            }
        }
    }

    pub(crate) fn on_app(&mut self, now: SimTime, node: NodeId, app: u32) {
        let n = &mut self.nodes[node.index()];
        let full = n.dcf.queue_full();
        n.apps.handle_app(now, app, full, &mut n.sockets);
        self.pump_apps(now, node);
        self.pump_sockets(now, node);
    }

    pub(crate) fn on_emit(&mut self, now: SimTime, node: NodeId, source: u32) {
        self.nodes[node.index()].apps.handle_emit(now, source);
        self.pump_apps(now, node);
    }

    /// Station `node` heard a beacon from its AP `ap`: applications waiting
    /// for its production phase may start.
    pub(crate) fn script_beacon(&mut self, now: SimTime, node: NodeId, ap: NodeId) {
        let n = &self.nodes[node.index()];
        if !n.net.addressed() {
            return;
        }
        for (s, measured) in self.script.beacon(now, node, ap, &n.mgmt) {
            self.conn_event(now, node, ap.0, ConnEvent::Production, measured);
            self.queue.schedule(s.at, s.from.0, Event::App { node: s.from, app: s.app });
        }
    }

    /// At the end of a run: each receiving socket's last data byte, in time
    /// order.
    pub(crate) fn sockets_finish(&mut self) {
        let mut last: Vec<(SimTime, NodeId, NodeId, u64)> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            last.extend(n.sockets.last_data().map(|(t, peer, bytes)| (t, NodeId(i as u32), peer, bytes)));
        }
        last.sort_by_key(|&(t, node, peer, _)| (t, node.0, peer.0));
        for (t, node, peer, bytes) in last {
            self.conn_event(t, node, peer.0, ConnEvent::LastData, bytes as f64);
        }
    }

    fn trace_sample(&mut self, now: SimTime, node: NodeId, peer: NodeId, sample: TcpEvent) {
        let TcpEvent::AckSample { cwnd, ssthresh, srtt, rto, dupacks, in_flight, acked } = sample else { return };
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

    #[allow(clippy::too_many_arguments)]
    fn transport_row(&mut self, now: SimTime, node: NodeId, peer: NodeId, proto: Proto, app: u32, seq: u64, bytes: u32, delay: SimTime) {
        let pos = self.position(node, now);
        self.trace.transport.push(TransportRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer: peer.0,
            proto,
            app,
            seq,
            bytes,
            delay_ns: delay.as_ns(),
            x: pos.x as f32,
            y: pos.y as f32,
        });
    }
}
