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

use super::broadside::{Host, Link};
use super::{AppOutput, Apps, Arrival};
use crate::ids::NodeId;
use crate::packet::Datagram;
use crate::packet::{Body, Packet, ALL_HOSTS};
use crate::sockets::Sockets;
use crate::trace::{ConnEvent, Proto};
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
    RequestResponse {
        request: u64,
        response: u64,
        exchanges: u64,
        trigger: u32,
        trigger_interval: SimTime,
    },
    /// Broadside at both ends ([`super::broadside`]); the sending end
    /// holds `files`; `link`: over UDP/IP, straight over 802.11 frames
    /// (Broadside-Raw) or over TCP/IP (Broadside-IP).
    Broadside {
        files: super::broadside::Files,
        link: super::broadside::Link,
        /// The node's congestion control on (UDP and raw only).
        congestion: bool,
    },
}

impl AppKind {
    /// Whether both ends act on their own from the start (peers), rather
    /// than a sender and a receiver that answers.
    pub fn peer_to_peer(&self) -> bool {
        matches!(self, AppKind::Broadside { .. })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppStart {
    At(SimTime),
    /// When the sender and receiver become connected (association), plus a
    /// delay drawn uniformly from `delay` to `delay + spread` in each run
    /// (a launching script polling for new stations: Hadaller et al. 2007,
    /// §6.2.3, saw 1–2 s).
    OnAssociation {
        delay: SimTime,
        spread: SimTime,
    },
    /// "Avoid the fringe" (Hadaller et al. 2007, §7.1): once the station
    /// end of the application is in the production phase — it heard at least
    /// `ratio` of the beacons its AP sent in the last `window` since it
    /// associated, and (if given) its filtered beacon RSSI reaches `rssi` —
    /// plus a delay. The station measures; the AP-side end is assumed to
    /// learn of it at once (as from a hint in the station's next frame).
    /// The delay is drawn as for `OnAssociation`.
    OnProduction {
        delay: SimTime,
        spread: SimTime,
        window: SimTime,
        ratio: f64,
        rssi: Option<Dbm>,
    },
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
    pub(super) blocked: bool,
    pub(super) seq: u64,
    /// Request-response: the client's connection of the current session.
    pub(super) session: Option<usize>,
    /// Request-response: exchanges the client has completed.
    pub(super) completed: u64,
    /// Broadside: this end's endpoint.
    pub(super) broadside: Option<Host>,
}

impl App {
    /// Application `id`'s end at `me`; `seed`: the run's (seed, run).
    pub(super) fn new(me: NodeId, id: u32, cfg: AppConfig, seed: (u64, u64)) -> App {
        let broadside = match cfg.kind {
            AppKind::Broadside {
                files,
                link,
                congestion,
            } => Some(Host::new(
                me,
                me == cfg.from,
                id,
                (cfg.port, link),
                files,
                congestion,
                seed,
            )),
            _ => None,
        };
        App {
            id,
            cfg,
            started: false,
            blocked: false,
            seq: 0,
            session: None,
            completed: 0,
            broadside,
        }
    }
}

impl Apps {
    pub(super) fn app(&mut self, id: u32) -> &mut App {
        self.ip
            .iter_mut()
            .find(|a| a.id == id)
            .expect("an application of this node")
    }

    /// Opens the listening ports of the applications served here.
    pub fn listen(&self, sockets: &mut Sockets) {
        for a in &self.ip {
            let server = match a.cfg.kind {
                AppKind::TcpBulk { .. } => a.cfg.to,
                AppKind::RequestResponse { .. } => a.cfg.from,
                AppKind::Broadside {
                    link: Link::Tcp, ..
                } => {
                    sockets.listen_stream(a.cfg.port, a.id); // either end may connect
                    continue;
                }
                AppKind::UdpCbr { .. } | AppKind::Broadside { .. } => continue,
            };
            if server == self.me {
                sockets.listen(a.cfg.port, a.id);
            }
        }
    }

    /// Application `id`'s end here acts: it starts, or sends its next
    /// datagram or trigger; `room`: MSDUs the MAC queue takes now.
    pub fn handle_app(&mut self, now: SimTime, id: u32, room: usize, sockets: &mut Sockets) {
        let cfg = self.app(id).cfg.clone();
        if now >= cfg.stop {
            return;
        }
        let first = !self.app(id).started;
        let queue_full = room == 0;
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
                self.out.push_back(AppOutput::Packet(Packet::new(
                    self.me,
                    cfg.to,
                    Body::Udp {
                        datagram,
                        app: id,
                        seq,
                        sent: now,
                    },
                )));
                self.out.push_back(AppOutput::Wake {
                    app: id,
                    at: now + interval,
                });
            }
            AppKind::RequestResponse {
                trigger,
                trigger_interval,
                ..
            } => {
                if first {
                    self.app(id).started = true;
                    self.conn(cfg.to, ConnEvent::AppStart, 0.0);
                }
                self.send_trigger(now, id, trigger);
                self.out.push_back(AppOutput::Wake {
                    app: id,
                    at: now + trigger_interval,
                });
            }
            AppKind::Broadside { .. } => {
                if first {
                    self.app(id).started = true;
                    let peer = if cfg.from == self.me {
                        cfg.to
                    } else {
                        cfg.from
                    };
                    self.conn(peer, ConnEvent::AppStart, 0.0);
                    self.broadside_start(now, id);
                } else {
                    self.broadside_wake(now, id, room, sockets);
                }
            }
        }
    }

    /// A UDP packet for this host: logged if it is unicast or for a group
    /// an application here has joined (the client of a request-response
    /// application, either end of a Broadside one); a trigger starts its
    /// client, and a Broadside end takes its datagrams. `room`: MSDUs the
    /// MAC queue takes now.
    pub fn handle_datagram(&mut self, now: SimTime, p: Packet, room: usize, sockets: &mut Sockets) {
        let Body::Udp {
            datagram,
            app,
            seq,
            sent,
        } = p.body
        else {
            return;
        };
        let me = self.me;
        let local = self.ip.iter().find(|a| a.id == app);
        let group = p.dst == ALL_HOSTS;
        if group && !local.is_some_and(|a| a.cfg.to == me || a.cfg.kind.peer_to_peer()) {
            return;
        }
        let hosted = local.is_some_and(|a| a.broadside.is_some());
        let seq = if hosted {
            self.broadside_received(app)
        } else {
            seq
        };
        self.out.push_back(AppOutput::Datagram(Arrival {
            peer: p.src,
            proto: Proto::Udp,
            app,
            seq,
            bytes: datagram.len,
            delay: now - sent,
        }));
        match datagram.data {
            Some(data) if hosted => self.broadside_rx(now, app, p.src, &data, room, sockets),
            _ if group => self.trigger_heard(now, app, seq, sockets),
            _ => {}
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
