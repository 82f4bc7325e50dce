//! Applications over IP: a bulk TCP sender (iperf-like), a constant bit rate
//! UDP sender (rtpsend-like, with every arrival logged at the receiver as
//! rtpspy does) and a request-response exchange started by a multicast
//! trigger (tcpx-like, [`super::reqresp`]). Each starts at a fixed time or
//! when its endpoints associate, after an application start delay (Hadaller
//! et al. §6.2.3: the AP's script launched iperf 1–2 s after association).
//!
//! A UDP sender can be `blocking`: when its node's MAC queue is full the
//! application waits until a frame leaves instead of losing the datagram —
//! the implicit flow control Ott & Kutscher (2004, §IV-A) saw from their
//! Orinoco card, which throttles a mobile sender to what DCF can carry.

use crate::event::Event;
use crate::ids::NodeId;
use crate::net::{Body, Packet};
use crate::world::World;
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

pub struct App {
    pub cfg: AppConfig,
    /// Its start is scheduled (or it has started).
    scheduled: bool,
    started: bool,
    /// Waiting for room in the MAC queue.
    blocked: bool,
    pub(crate) seq: u64,
    /// Request-response: the client's connection of the current session.
    pub(crate) session: Option<usize>,
    /// Request-response: exchanges the client has completed.
    pub(crate) completed: u64,
}

impl World {
    pub(crate) fn add_app(&mut self, index: u32, cfg: &AppConfig) {
        let at_time = matches!(cfg.start, AppStart::At(_));
        self.apps.push(App { cfg: cfg.clone(), scheduled: at_time, started: false, blocked: false, seq: 0, session: None, completed: 0 });
        match cfg.kind {
            AppKind::TcpBulk { .. } => {
                let tcp = self.nodes[cfg.to.index()].tcp.clone();
                self.tcp_listen(cfg.to, cfg.port, tcp, index);
            }
            AppKind::RequestResponse { .. } => {
                let tcp = self.nodes[cfg.from.index()].tcp.clone();
                self.tcp_listen(cfg.from, cfg.port, tcp, index);
            }
            AppKind::UdpCbr { .. } => {}
        }
        if let AppStart::At(t) = cfg.start {
            self.queue.schedule(t, cfg.from.0, Event::App { app: index });
        }
    }

    /// Association between `node` and `peer` came up: start the apps waiting for it.
    pub(crate) fn apps_link_up(&mut self, now: SimTime, node: NodeId, peer: NodeId) {
        for i in 0..self.apps.len() {
            let a = &mut self.apps[i];
            let AppStart::OnAssociation { delay } = a.cfg.start else { continue };
            let involved = [a.cfg.from, a.cfg.to].iter().any(|&n| n == node || n == peer);
            if involved && !a.scheduled {
                a.scheduled = true;
                let from = a.cfg.from;
                self.queue.schedule(now + delay, from.0, Event::App { app: i as u32 });
            }
        }
    }

    pub(crate) fn on_app(&mut self, now: SimTime, index: u32) {
        let cfg = self.apps[index as usize].cfg.clone();
        if now >= cfg.stop {
            return;
        }
        match cfg.kind {
            AppKind::TcpBulk { bytes } => {
                if self.apps[index as usize].started {
                    return;
                }
                self.apps[index as usize].started = true;
                self.conn_event(now, cfg.from, cfg.to.0, ConnEvent::AppStart, 0.0);
                let tcp = self.nodes[cfg.from.index()].tcp.clone();
                self.tcp_connect(now, cfg.from, cfg.to, cfg.port, tcp, index, bytes);
            }
            AppKind::UdpCbr { payload, interval } => {
                if cfg.blocking && self.mac_queue_full(cfg.from) {
                    self.apps[index as usize].blocked = true;
                    return;
                }
                let app = &mut self.apps[index as usize];
                if !app.started {
                    app.started = true;
                    self.conn_event(now, cfg.from, cfg.to.0, ConnEvent::AppStart, 0.0);
                }
                let app = &mut self.apps[index as usize];
                let seq = app.seq;
                app.seq += 1;
                let datagram = Datagram { src_port: cfg.port, dst_port: cfg.port, len: payload };
                let p = Packet::new(cfg.from, cfg.to, Body::Udp { datagram, app: index, seq, sent: now });
                self.net_send(now, cfg.from, p);
                self.queue.schedule(now + interval, cfg.from.0, Event::App { app: index });
            }
            AppKind::RequestResponse { trigger, trigger_interval, .. } => {
                let app = &mut self.apps[index as usize];
                if !app.started {
                    app.started = true;
                    self.conn_event(now, cfg.from, cfg.to.0, ConnEvent::AppStart, 0.0);
                }
                self.send_trigger(now, index, trigger);
                self.queue.schedule(now + trigger_interval, cfg.from.0, Event::App { app: index });
            }
        }
    }

    /// Station `sta` heard a beacon from its AP `ap`: start the applications
    /// waiting for the production phase whose condition now holds.
    pub(crate) fn apps_beacon(&mut self, now: SimTime, sta: NodeId, ap: NodeId) {
        if !self.addressed(sta) {
            return;
        }
        let station = &self.nodes[sta.index()].mgmt;
        if !station.is_station() {
            return;
        }
        let interval = self.mgmt.beacon_interval;
        let mut start = Vec::new();
        for (i, a) in self.apps.iter().enumerate() {
            let AppStart::OnProduction { delay, window, ratio, rssi } = a.cfg.start else { continue };
            if a.scheduled || (a.cfg.from != sta && a.cfg.to != sta) {
                continue;
            }
            let expected = (window.as_ns() / interval.as_ns()).max(1);
            let heard = station.beacons_after(now.saturating_sub(window)) as u64;
            let strong = rssi.is_none_or(|r| station.filtered_rssi(ap).is_some_and(|f| f.0 >= r.0));
            if heard as f64 >= ratio * expected as f64 && strong {
                start.push((i, delay, heard as f64 / expected as f64));
            }
        }
        for (i, delay, measured) in start {
            self.apps[i].scheduled = true;
            self.conn_event(now, sta, ap.0, ConnEvent::Production, measured);
            let from = self.apps[i].cfg.from;
            self.queue.schedule(now + delay, from.0, Event::App { app: i as u32 });
        }
    }

    /// A frame left `node`'s MAC queue: blocked senders there resume.
    pub(crate) fn apps_mac_ready(&mut self, now: SimTime, node: NodeId) {
        for i in 0..self.apps.len() {
            let a = &mut self.apps[i];
            if a.blocked && a.cfg.from == node {
                a.blocked = false;
                self.queue.schedule(now, node.0, Event::App { app: i as u32 });
            }
        }
    }
}
