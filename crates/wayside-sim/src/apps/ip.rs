//! Applications over IP: a bulk TCP sender (iperf-like), a constant bit rate
//! UDP sender (rtpsend-like, with every arrival logged at the receiver as
//! rtpspy does) and a request-response exchange started by a multicast
//! trigger (tcpx-like, [`super::reqresp`]). When each starts is the experiment's
//! script ([`crate::script`]).
//!
//! A UDP sender can be `blocking`: when its node's MAC queue is full the
//! application waits until a frame leaves instead of losing the datagram —
//! the implicit flow control Ott & Kutscher (2004, §IV-A) saw from their
//! Orinoco card, which throttles a mobile sender to what DCF can carry.

use super::{AppOutput, Apps};
use crate::ids::NodeId;
use crate::packet::{Body, Packet, ALL_HOSTS};
use crate::sockets::Sockets;
use crate::trace::ConnEvent;
use crate::transport::udp::Datagram;
use crate::units::{Dbm, SimTime};

#[derive(Clone, Debug, PartialEq)]
pub enum AppKind {
    /// Send `bytes` (u64::MAX: without end) over one TCP connection.
    TcpBulk { bytes: u64 },
    /// One `payload`-byte datagram every `interval`.
    UdpCbr { payload: u32, interval: SimTime },
    /// tcpx: the sender (`from`, the server) multicasts a `trigger`-byte UDP
    /// datagram every `trigger_interval`; the receiver (`to`, the client)
    /// connects on hearing one and makes `exchanges` requests of `request`
    /// bytes, each answered with `response` bytes.
    RequestResponse { request: u64, response: u64, exchanges: u64, trigger: u32, trigger_interval: SimTime },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppStart {
    At(SimTime),
    /// When the sender and receiver become connected (association), plus a delay.
    OnAssociation { delay: SimTime },
    /// "Avoid the fringe" (Hadaller et al. 2007, §7.1): once the station
    /// end of the application is in the production phase — it heard at least
    /// `ratio` of the beacons its AP sent in the last `window` since it
    /// associated, and (if given) its filtered beacon RSSI reaches `rssi` —
    /// plus a delay. The station measures; the AP-side end is assumed to
    /// learn of it at once (as from a hint in the station's next frame).
    OnProduction { delay: SimTime, window: SimTime, ratio: f64, rssi: Option<Dbm> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct AppConfig {
    pub kind: AppKind,
    /// UDP: wait for room in the MAC queue rather than lose datagrams.
    pub blocking: bool,
    pub from: NodeId,
    pub to: NodeId,
    pub port: u16,
    pub start: AppStart,
    pub stop: SimTime,
}

/// One application's state at one of its ends.
pub(super) struct App {
    /// Its index in the scenario.
    pub(super) id: u32,
    pub(super) cfg: AppConfig,
    started: bool,
    /// Waiting for room in the MAC queue.
    blocked: bool,
    pub(super) seq: u64,
    /// Request-response: the client's connection of the current session.
    pub(super) session: Option<usize>,
    /// Request-response: exchanges the client has completed.
    pub(super) completed: u64,
}

impl App {
    pub(super) fn new(id: u32, cfg: AppConfig) -> App {
        App { id, cfg, started: false, blocked: false, seq: 0, session: None, completed: 0 }
    }
}

impl Apps {
    pub(super) fn app(&mut self, id: u32) -> &mut App {
        self.ip.iter_mut().find(|a| a.id == id).expect("an application of this node")
    }

    /// Opens the listening ports of the applications served here.
    pub fn listen(&self, sockets: &mut Sockets) {
        for a in &self.ip {
            let server = match a.cfg.kind {
                AppKind::TcpBulk { .. } => a.cfg.to,
                AppKind::RequestResponse { .. } => a.cfg.from,
                AppKind::UdpCbr { .. } => continue,
            };
            if server == self.me {
                sockets.listen(a.cfg.port, a.id);
            }
        }
    }

    /// Application `id` (whose sending end is here) acts: it starts, or
    /// sends its next datagram or trigger. `queue_full`: the MAC has no room.
    pub fn handle_app(&mut self, now: SimTime, id: u32, queue_full: bool, sockets: &mut Sockets) {
        let cfg = self.app(id).cfg.clone();
        if now >= cfg.stop {
            return;
        }
        let first = !self.app(id).started;
        match cfg.kind {
            AppKind::TcpBulk { bytes } => {
                if !first {
                    return;
                }
                self.app(id).started = true;
                self.conn(cfg.to, ConnEvent::AppStart, 0.0);
                sockets.connect(now, cfg.to, cfg.port, id, bytes);
            }
            AppKind::UdpCbr { payload, interval } => {
                if cfg.blocking && queue_full {
                    self.app(id).blocked = true;
                    return;
                }
                if first {
                    self.app(id).started = true;
                    self.conn(cfg.to, ConnEvent::AppStart, 0.0);
                }
                let app = self.app(id);
                let seq = app.seq;
                app.seq += 1;
                let datagram = Datagram::sized(cfg.port, cfg.port, payload);
                self.out.push_back(AppOutput::Packet(Packet::new(self.me, cfg.to, Body::Udp { datagram, app: id, seq, sent: now })));
                self.out.push_back(AppOutput::Wake { app: id, at: now + interval });
            }
            AppKind::RequestResponse { trigger, trigger_interval, .. } => {
                if first {
                    self.app(id).started = true;
                    self.conn(cfg.to, ConnEvent::AppStart, 0.0);
                }
                self.send_trigger(now, id, trigger);
                self.out.push_back(AppOutput::Wake { app: id, at: now + trigger_interval });
            }
        }
    }

    /// A UDP packet for this host: logged if it is unicast or for a group
    /// an application here has joined (the client of a request-response
    /// application), and a trigger starts its client.
    pub fn handle_datagram(&mut self, now: SimTime, p: Packet, sockets: &mut Sockets) {
        let Body::Udp { datagram, app, seq, sent } = p.body else { return };
        let group = p.dst == ALL_HOSTS;
        if group && !self.ip.iter().any(|a| a.id == app && a.cfg.to == self.me) {
            return;
        }
        self.out.push_back(AppOutput::Datagram { peer: p.src, app, seq, bytes: datagram.len, delay: now - sent });
        if group {
            self.trigger_heard(now, app, seq, sockets);
        }
    }

    /// Blocked senders here resume now.
    pub(super) fn resume_blocked(&mut self, now: SimTime) {
        for a in &mut self.ip {
            if a.blocked {
                a.blocked = false;
                self.out.push_back(AppOutput::Wake { app: a.id, at: now });
            }
        }
    }
}
