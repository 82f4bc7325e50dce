//! The pumps of a node's upper layers: the network layer, sockets and
//! applications. Each drains its layer's outputs, oldest first, into the
//! layer next to it, the MAC, the wired links, the event queue or the trace.

use super::Node;
use crate::apps::{AppOutput, Arrival};
use crate::env::Env;
use crate::event::Event;
use crate::ids::NodeId;
use crate::net::{NetOutput, NetTimer};
use crate::packet::{Body, Packet, DEFAULT_TTL};
use crate::sockets::SocketOutput;
use crate::trace::{ConnEvent, Proto, TcpRow, TransportRow};
use crate::transport::tcp::TcpEvent;
use crate::units::SimTime;
use crate::wire::WireFrame;

impl Node {
    /// Drains the network layer.
    pub fn pump_net(&mut self, env: &mut Env, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.net.poll() {
            match out {
                NetOutput::Air(msdu) => {
                    self.mac_enqueue(env, now, msdu);
                }
                NetOutput::Wire { link, frame } => self.wire_send(env, now, link, frame),
                NetOutput::Deliver(p) => self.host_rx(env, now, p),
                NetOutput::Intercept(p) => {
                    if self.sockets.intercept(now, &p) {
                        self.pump_sockets(env, now);
                    } else {
                        self.net.send(now, p, &self.mgmt);
                    }
                }
                NetOutput::Conn { peer, event, value } => {
                    env.conn_event(now, node, peer.0, event, value)
                }
                NetOutput::Ready(peer) => {
                    let station = if self.mgmt.is_station() {
                        Some(node)
                    } else {
                        self.mgmt.is_ap().then_some(peer)
                    };
                    for s in env.script.link_up(now, node, peer, station) {
                        env.schedule_start(s);
                    }
                }
                NetOutput::Timer {
                    timer,
                    at,
                    generation,
                } => env.queue.schedule(
                    at,
                    node.0,
                    Event::Net {
                        node,
                        timer,
                        generation,
                    },
                ),
            }
        }
    }

    /// A packet arrived over the air from `from`.
    pub fn net_rx_air(&mut self, env: &mut Env, now: SimTime, from: NodeId, p: Packet) {
        self.net.handle_air(now, from, p, &self.mgmt);
        self.pump_net(env, now);
    }

    pub fn on_net_timer(&mut self, env: &mut Env, now: SimTime, timer: NetTimer, generation: u32) {
        self.net.handle_timeout(now, timer, generation, &self.mgmt);
        self.pump_net(env, now);
    }

    /// Puts `frame` on wired link `link`; a full queue drops it (traced as
    /// `wire-drop`).
    fn wire_send(&mut self, env: &mut Env, now: SimTime, link: usize, frame: WireFrame) {
        let node = self.id;
        let Some((to, at)) = env.wires[link].send(now, node, frame.bytes()) else {
            let wire = &env.wires[link];
            let peer = match &frame {
                WireFrame::Ip(p) => p.dst,
                WireFrame::L2Update { .. } => wire.far_end(node),
            };
            let limit = wire.queue_limit as f64;
            env.conn_event(now, node, peer.0, ConnEvent::WireDrop, limit);
            return;
        };
        env.queue.schedule(
            at,
            node.0,
            Event::WireArrive {
                node: to,
                link: link as u32,
                frame: Box::new(frame),
            },
        );
    }

    pub fn on_wire_arrive(&mut self, env: &mut Env, now: SimTime, link: usize, frame: WireFrame) {
        self.net.handle_wire(now, link, frame, &self.mgmt);
        self.pump_net(env, now);
    }

    /// A packet for this host itself.
    fn host_rx(&mut self, env: &mut Env, now: SimTime, p: Packet) {
        match p.body {
            Body::Tcp(ref seg) => {
                if let (Some(geo), true) = (p.geo, seg.len > 0) {
                    let hops = f64::from(DEFAULT_TTL - p.ttl) + 1.0;
                    env.conn_event(now, self.id, p.src.0, ConnEvent::GeoHops, hops);
                    env.conn_event(
                        now,
                        self.id,
                        p.src.0,
                        ConnEvent::GeoLatency,
                        (now - geo.sent).as_secs_f64(),
                    );
                }
                self.sockets.handle_packet(now, p);
                self.pump_sockets(env, now);
            }
            Body::Udp { .. } => {
                let room = self.dcf.queue_room();
                self.apps.handle_datagram(now, p, room, &mut self.sockets);
                self.pump_apps(env, now);
                self.pump_sockets(env, now);
            }
            Body::Arp { .. } | Body::Dhcp { .. } | Body::Beacon { .. } => {}
        }
    }

    /// Drains the sockets.
    pub fn pump_sockets(&mut self, env: &mut Env, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.sockets.poll() {
            match out {
                SocketOutput::Send(p) => {
                    self.net.send(now, p, &self.mgmt);
                    self.pump_net(env, now);
                }
                SocketOutput::Conn { peer, event, value } => {
                    env.conn_event(now, node, peer.0, event, value)
                }
                SocketOutput::Sample { peer, sample } => self.trace_sample(env, now, peer, sample),
                SocketOutput::Data {
                    peer,
                    app,
                    total,
                    new,
                } => {
                    let arrival = Arrival {
                        peer,
                        proto: Proto::Tcp,
                        app,
                        seq: total,
                        bytes: new.min(u32::MAX as u64) as u32,
                        delay: SimTime::ZERO,
                    };
                    self.transport_row(env, now, arrival);
                }
                SocketOutput::Readable { socket, app } => {
                    let room = self.dcf.queue_room();
                    let queued =
                        self.apps
                            .handle_readable(now, app, socket, room, &mut self.sockets);
                    self.pump_apps(env, now);
                    if queued {
                        self.sockets.flush(now, socket);
                    }
                }
                SocketOutput::Timer {
                    socket,
                    at,
                    generation,
                } => env.queue.schedule(
                    at,
                    node.0,
                    Event::Tcp {
                        node,
                        socket,
                        generation,
                    },
                ),
            }
        }
    }

    pub fn on_tcp_timer(&mut self, env: &mut Env, now: SimTime, socket: u32, generation: u32) {
        self.sockets
            .handle_timeout(now, socket as usize, generation);
        self.pump_sockets(env, now);
    }

    /// Drains the applications.
    pub fn pump_apps(&mut self, env: &mut Env, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.apps.poll() {
            match out {
                AppOutput::Packet(p) => {
                    self.net.send(now, p, &self.mgmt);
                    self.pump_net(env, now);
                }
                AppOutput::Frame(msdu) => {
                    self.mac_enqueue(env, now, msdu);
                }
                AppOutput::Conn { peer, event, value } => {
                    env.conn_event(now, node, peer.0, event, value)
                }
                AppOutput::Datagram(arrival) => self.transport_row(env, now, arrival),
                AppOutput::Wake { app, at } => {
                    env.queue.schedule(at, node.0, Event::App { node, app })
                }
                AppOutput::Emit { source, at } => {
                    let key = env.bodies.len() as u32 + source;
                    env.queue.schedule(at, key, Event::Traffic { node, source });
                }
            }
        }
    }

    pub fn on_app(&mut self, env: &mut Env, now: SimTime, app: u32) {
        let room = self.dcf.queue_room();
        self.apps.handle_app(now, app, room, &mut self.sockets);
        self.pump_apps(env, now);
        self.pump_sockets(env, now);
    }

    pub fn on_emit(&mut self, env: &mut Env, now: SimTime, source: u32) {
        self.apps.handle_emit(now, source);
        self.pump_apps(env, now);
    }

    /// This station heard a beacon from its AP `ap`: applications waiting
    /// for its production phase may start.
    pub fn script_beacon(&mut self, env: &mut Env, now: SimTime, ap: NodeId) {
        let node = self.id;
        if !self.net.addressed() {
            return;
        }
        let mut logged = None;
        for (s, measured) in env.script.beacon(now, node, ap, &self.mgmt) {
            if logged != Some(s.app) {
                logged = Some(s.app); // once per application, not per end
                env.conn_event(now, node, ap.0, ConnEvent::Production, measured);
            }
            env.schedule_start(s);
        }
    }

    fn trace_sample(&mut self, env: &mut Env, now: SimTime, peer: NodeId, sample: TcpEvent) {
        let node = self.id;
        let TcpEvent::AckSample {
            cwnd,
            ssthresh,
            srtt,
            rto,
            dupacks,
            in_flight,
            acked,
        } = sample
        else {
            return;
        };
        let pos = env.position(node, now);
        env.trace.tcp.push(TcpRow {
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

    fn transport_row(&mut self, env: &mut Env, now: SimTime, a: Arrival) {
        let node = self.id;
        let pos = env.position(node, now);
        env.trace.transport.push(TransportRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer: a.peer.0,
            proto: a.proto,
            app: a.app,
            seq: a.seq,
            bytes: a.bytes,
            delay_ns: a.delay.as_ns(),
            x: pos.x as f32,
            y: pos.y as f32,
        });
    }
}
