//! The pumps of a node's upper layers: the network layer, sockets and
//! applications. Each drains its layer's outputs, oldest first, into the
//! layer next to it, the MAC, or the node's effects (wired frames, timers,
//! trace rows).

use super::effects::{Effect, Effects};
use super::Node;
use crate::apps::{AppOutput, Arrival};
use crate::event::Event;
use crate::ids::NodeId;
use crate::net::{NetOutput, NetTimer};
use crate::packet::{Body, Packet, DEFAULT_TTL};
use crate::sockets::SocketOutput;
use crate::trace::{ConnEvent, Proto};
use crate::units::SimTime;
use crate::wire::WireFrame;

impl Node {
    /// Drains the network layer.
    pub fn pump_net(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.net.poll() {
            match out {
                NetOutput::Air(msdu) => {
                    self.mac_enqueue(fx, now, msdu);
                }
                NetOutput::Wire { link, frame } => fx.push(Effect::Wire { link, frame }),
                NetOutput::Deliver(p) => self.host_rx(fx, now, p),
                NetOutput::Intercept(p) => {
                    if self.sockets.intercept(now, &p) {
                        self.pump_sockets(fx, now);
                    } else {
                        self.net.send(now, p, &self.mgmt);
                    }
                }
                NetOutput::Conn { peer, event, value } => fx.conn(peer.0, event, value),
                NetOutput::Ready(peer) => {
                    let station = if self.mgmt.is_station() {
                        Some(node)
                    } else {
                        self.mgmt.is_ap().then_some(peer)
                    };
                    fx.push(Effect::Ready { peer, station });
                }
                NetOutput::Timer {
                    timer,
                    at,
                    generation,
                } => fx.schedule(
                    at,
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
    pub fn net_rx_air(&mut self, fx: &mut Effects, now: SimTime, from: NodeId, p: Packet) {
        self.net.handle_air(now, from, p, &self.mgmt);
        self.pump_net(fx, now);
    }

    pub fn on_net_timer(
        &mut self,
        fx: &mut Effects,
        now: SimTime,
        timer: NetTimer,
        generation: u32,
    ) {
        self.net.handle_timeout(now, timer, generation, &self.mgmt);
        self.pump_net(fx, now);
    }

    pub fn on_wire_arrive(
        &mut self,
        fx: &mut Effects,
        now: SimTime,
        link: usize,
        frame: WireFrame,
    ) {
        self.net.handle_wire(now, link, frame, &self.mgmt);
        self.pump_net(fx, now);
    }

    /// A packet for this host itself.
    fn host_rx(&mut self, fx: &mut Effects, now: SimTime, p: Packet) {
        match p.body {
            Body::Tcp(ref seg) => {
                if let (Some(geo), true) = (p.geo, seg.len > 0) {
                    let hops = f64::from(DEFAULT_TTL - p.ttl) + 1.0;
                    fx.conn(p.src.0, ConnEvent::GeoHops, hops);
                    fx.conn(
                        p.src.0,
                        ConnEvent::GeoLatency,
                        (now - geo.sent).as_secs_f64(),
                    );
                }
                self.sockets.handle_packet(now, p);
                self.pump_sockets(fx, now);
            }
            Body::Udp { .. } => {
                let room = self.dcf.queue_room();
                self.apps.handle_datagram(now, p, room, &mut self.sockets);
                self.pump_apps(fx, now);
                self.pump_sockets(fx, now);
            }
            Body::Real(_) => fx.push(Effect::ToHost(p)),
            Body::Arp { .. } | Body::Dhcp { .. } | Body::Beacon { .. } => {}
        }
    }

    /// Drains the sockets.
    pub fn pump_sockets(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.sockets.poll() {
            match out {
                SocketOutput::Send(p) => {
                    self.net.send(now, p, &self.mgmt);
                    self.pump_net(fx, now);
                }
                SocketOutput::Conn { peer, event, value } => fx.conn(peer.0, event, value),
                SocketOutput::Sample { peer, sample } => fx.push(Effect::Tcp { peer, sample }),
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
                    fx.push(Effect::Transport(arrival));
                }
                SocketOutput::Readable { socket, app } => {
                    let room = self.dcf.queue_room();
                    let queued =
                        self.apps
                            .handle_readable(now, app, socket, room, &mut self.sockets);
                    self.pump_apps(fx, now);
                    if queued {
                        self.sockets.flush(now, socket);
                    }
                }
                SocketOutput::Timer {
                    socket,
                    at,
                    generation,
                } => fx.schedule(
                    at,
                    Event::Tcp {
                        node,
                        socket,
                        generation,
                    },
                ),
            }
        }
    }

    pub fn on_tcp_timer(&mut self, fx: &mut Effects, now: SimTime, socket: u32, generation: u32) {
        self.sockets
            .handle_timeout(now, socket as usize, generation);
        self.pump_sockets(fx, now);
    }

    /// Drains the applications.
    pub fn pump_apps(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        while let Some(out) = self.apps.poll() {
            match out {
                AppOutput::Packet(p) => {
                    self.net.send(now, p, &self.mgmt);
                    self.pump_net(fx, now);
                }
                AppOutput::Frame(msdu) => {
                    self.mac_enqueue(fx, now, msdu);
                }
                AppOutput::Conn { peer, event, value } => fx.conn(peer.0, event, value),
                AppOutput::Datagram(arrival) => fx.push(Effect::Transport(arrival)),
                AppOutput::Wake { app, at } => fx.schedule(at, Event::App { node, app }),
                AppOutput::Emit { source, at } => fx.push(Effect::Emit { source, at }),
            }
        }
    }

    pub fn on_app(&mut self, fx: &mut Effects, now: SimTime, app: u32) {
        let room = self.dcf.queue_room();
        self.apps.handle_app(now, app, room, &mut self.sockets);
        self.pump_apps(fx, now);
        self.pump_sockets(fx, now);
    }

    pub fn on_emit(&mut self, fx: &mut Effects, now: SimTime, source: u32) {
        self.apps.handle_emit(now, source);
        self.pump_apps(fx, now);
    }

    /// This station heard a beacon from its AP `ap`: once it has an
    /// address, applications waiting for its production phase may start.
    pub fn script_beacon(&mut self, fx: &mut Effects, ap: NodeId) {
        if self.net.addressed() {
            fx.push(Effect::Beacon { ap });
        }
    }
}
