//! A node's stack and the pumps between its layers: the PHY, channel
//! access ([`crate::mac::dcf`]) with its link adaptation, management, the
//! network layer, sockets and applications (`host`). Each layer is a
//! sans-IO state machine; every input to a layer is followed by draining
//! that layer's outputs into the next one, or into the world around the
//! node ([`Env`]: the medium, the event queue, the wired links, the trace).
//! The pumps are here for the PHY, MAC and management, and in `host`
//! for the network layer, sockets and applications.

mod adhoc;
mod host;

use crate::apps::broadside::RawDatagram;
use crate::apps::Apps;
use crate::config::{NodeConfig, SimConfig};
use crate::env::Env;
use crate::event::Event;
use crate::geometry::Vec2;
use crate::ids::{Dst, NodeId, TxId};
use crate::mac::adhoc::Adhoc;
use crate::mac::dcf::{Air, Dcf, DcfEvent, MacTimer};
use crate::mac::links::{Links, TxContext};
use crate::mac::mgmt::{Mgmt, MgmtBody, MgmtEvent, MgmtFrame, MgmtTimer, MGMT_TRIES};
use crate::mac::{Frame, MacConfig, Msdu, Payload, SenderReport};
use crate::net::dhcp::DhcpClient;
use crate::net::route::{AddressPlan, Bss, Port};
use crate::net::{Net, NetSetup};
use crate::phy::mode::Mode;
use crate::phy::mode::Timing;
use crate::phy::state::{Phy, RxStart};
use crate::ratectl::Stage;
use crate::rng::Stream;
use crate::sockets::Sockets;
use crate::trace::{DropReason, FrameKind, MacEvent, MacRow, MsduContent, PhyEvent};
use crate::units::{Db, Dbm, SimTime};
use std::sync::Arc;

/// One node's stack.
pub struct Node {
    pub id: NodeId,
    pub cfg: NodeConfig,
    pub phy: Phy,
    pub dcf: Dcf,
    /// Stream for PHY draws (preamble detection, bit errors).
    phy_rng: Stream,
    pub mgmt: Mgmt,
    /// Ad hoc membership, if the node joins an IBSS.
    pub adhoc: Option<Adhoc>,
    pub net: Net,
    pub sockets: Sockets,
    pub apps: Apps,
    /// Row of the `frames` trace recording the transmission now awaiting
    /// its ACK or CTS, to fill in its outcome.
    awaiting_row: Option<usize>,
}

impl Node {
    pub fn new(
        id: NodeId,
        n: &NodeConfig,
        cfg: &SimConfig,
        timing: &Timing,
        plan: &Arc<AddressPlan>,
    ) -> Node {
        let rate = n
            .rate_control
            .clone()
            .unwrap_or_else(|| cfg.mac.rate.clone());
        let links = Links::new(
            rate.clone(),
            cfg.mac.modes,
            (cfg.seed, cfg.run, n.name.clone()),
        );
        let mac = MacConfig {
            queue_limit: n.queue_limit,
            rate,
            ..cfg.mac.clone()
        };
        let air = Air {
            standard: cfg.radio.standard,
            preamble: cfg.radio.preamble,
            basic: cfg.radio.basic_rate,
        };
        let mac_rng = Stream::new("run", cfg.seed, cfg.run, &format!("mac/{}", n.name));
        let dcf = Dcf::new(id, mac, *timing, air, links, mac_rng, n.tx_power);
        Node {
            id,
            cfg: n.clone(),
            phy: Phy::new(
                cfg.channel.noise_floor.to_mw(),
                cfg.radio.cca_threshold.to_mw(),
                cfg.radio.capture_margin,
            )
            .estimating_from_preamble(cfg.radio.ofdm_preamble_estimate),
            dcf,
            phy_rng: Stream::new("run", cfg.seed, cfg.run, &format!("phy/{}", n.name)),
            mgmt: Mgmt::new(
                n.role,
                cfg.mgmt.clone(),
                n.channel,
                Stream::new("run", cfg.seed, cfg.run, &format!("beacon/{}", n.name)),
            ),
            adhoc: n.adhoc.clone().map(|a| {
                Adhoc::new(
                    a,
                    Stream::new("run", cfg.seed, cfg.run, &format!("adhoc/{}", n.name)),
                )
            }),
            net: Net::new(id, net_setup(id, n, cfg, plan)),
            sockets: Sockets::new(id, n.tcp.clone(), cfg.seed, cfg.run, &n.name),
            apps: Apps::new(
                id,
                &cfg.apps,
                &cfg.sources,
                (cfg.seed, cfg.run),
                n.adhoc.is_some(),
            ),
            awaiting_row: None,
        }
    }

    /// Notes the `frames` row of a frame just sent: a unicast data,
    /// management or RTS frame's outcome is decided by its response.
    fn sent(&mut self, frame: &Frame, row: usize) {
        if matches!(frame.dst, Dst::Node(_))
            && !matches!(frame.kind, FrameKind::Ack | FrameKind::Cts)
        {
            self.awaiting_row = Some(row);
        }
    }
}

/// What management tells the network layer about the BSS.
impl Bss for Mgmt {
    fn associated_ap(&self) -> Option<NodeId> {
        Mgmt::associated_ap(self)
    }
    fn has_station(&self, sta: NodeId) -> bool {
        Mgmt::has_station(self, sta)
    }
}

/// How node `id`'s network layer is set up.
fn net_setup(id: NodeId, n: &NodeConfig, cfg: &SimConfig, plan: &Arc<AddressPlan>) -> NetSetup {
    let ports = cfg
        .wires
        .iter()
        .enumerate()
        .filter(|(_, l)| l.a == id || l.b == id)
        .map(|(link, l)| Port {
            link,
            far: l.far_end(id),
        })
        .collect();
    NetSetup {
        role: n.role,
        radio: n.radio,
        split_tcp: n.split_tcp,
        dhcp_server: n.dhcp_server,
        arp: n.arp,
        dhcp: n.dhcp.then(|| {
            DhcpClient::new(Stream::new(
                "run",
                cfg.seed,
                cfg.run,
                &format!("dhcp/{}", n.name),
            ))
        }),
        ports,
        plan: Arc::clone(plan),
        forwarding: n.forwarding,
        router: crate::net::router(
            n.routing,
            id,
            &n.mobility,
            cfg.nodes
                .iter()
                .enumerate()
                .map(|(i, m)| (NodeId(i as u32), &m.mobility, m.radio)),
            Stream::new("run", cfg.seed, cfg.run, &format!("route/{}", n.name)),
        ),
    }
}

/// What the DCF asks of the world when it builds a retry chain.
struct Context<'a> {
    me: NodeId,
    now: SimTime,
    env: &'a mut Env,
}

impl TxContext for Context<'_> {
    fn position(&self) -> Vec2 {
        self.env.position(self.me, self.now)
    }
    fn mean_snr(&mut self, peer: NodeId) -> Db {
        self.env.mean_snr(self.me, peer, self.now)
    }
}

impl Node {
    /// Whether this node's radio is on.
    fn on(&self, env: &Env) -> bool {
        env.bodies[self.id.index()].on
    }

    /// Puts `frame` on the air at `mode`, now.
    fn transmit(&mut self, env: &mut Env, now: SimTime, frame: Frame, mode: Mode) {
        let end = now + env.airtime(&frame, &mode);
        if let Some(lost) = self.phy.start_tx(end) {
            env.trace_drop(now, self.id, lost, DropReason::Transmitting);
        }
        let row = env.trace_frame(
            now,
            self.id,
            &frame,
            &mode,
            PhyEvent::Tx,
            DropReason::None,
            None,
        );
        self.sent(&frame, row);
        env.transmit(now, end, self.id, frame, mode);
        self.medium_update(env, now);
    }

    /// The first energy of transmission `id` reaches this radio.
    pub fn on_rx_start(&mut self, env: &mut Env, now: SimTime, id: TxId) {
        if env.medium.tx(id).channel != env.bodies[self.id.index()].channel {
            env.medium.release(id); // the radio retuned while the signal was in flight
            return;
        }
        let s = env.signal(id, self.id, now);
        match self
            .phy
            .rx_start(now, s, &env.radio.error_model, &mut self.phy_rng)
        {
            RxStart::Locked => self.phy.fade_reception(env.fades(id, self.id)),
            RxStart::Captured { lost } => {
                self.phy.fade_reception(env.fades(id, self.id));
                env.trace_drop(now, self.id, lost, DropReason::Captured)
            }
            RxStart::Ignored(reason) => env.trace_drop(now, self.id, id, reason),
        }
        self.medium_update(env, now);
        env.medium.release(id);
    }

    /// The last energy of transmission `id` leaves this radio.
    pub fn on_rx_end(&mut self, env: &mut Env, now: SimTime, id: TxId) {
        if let Some(end) = self
            .phy
            .rx_end(now, id, &env.radio.error_model, &mut self.phy_rng)
        {
            let t = env.medium.tx(id);
            let power = t.power_at(self.id).expect("arrival");
            let mode = t.mode;
            let noise = env.medium.channel().noise_floor;
            self.dcf
                .handle_rx_end(now, &t.frame, mode, end.ok, power.to_dbm(), noise);
            if env.traced_at(self.id, id) {
                let frame = env.medium.tx(id).frame.clone();
                let (event, reason) = if end.ok {
                    (PhyEvent::Rx, DropReason::None)
                } else {
                    (PhyEvent::Drop, DropReason::Error)
                };
                env.trace_frame(
                    now,
                    self.id,
                    &frame,
                    &mode,
                    event,
                    reason,
                    Some((power.to_dbm(), end.snr, end.min_sinr)),
                );
            }
            self.pump_mac(env, now);
        }
        self.medium_update(env, now);
        env.medium.release(id);
    }

    /// This radio finished sending transmission `id`.
    pub fn on_tx_end(&mut self, env: &mut Env, now: SimTime, id: TxId) {
        self.phy.end_tx();
        self.dcf.handle_tx_end(now, &env.medium.tx(id).frame);
        self.pump_mac(env, now);
        self.medium_update(env, now);
        env.medium.release(id);
    }

    /// Drains the DCF: timers to the event queue, events to the trace and
    /// the layers above, frames to the medium.
    fn pump_mac(&mut self, env: &mut Env, now: SimTime) {
        let node = self.id;
        loop {
            if let Some((timer, at, generation)) = self.dcf.poll_timer() {
                env.queue.schedule(
                    at,
                    node.0,
                    Event::Mac {
                        node,
                        timer,
                        generation,
                    },
                );
            } else if let Some(ev) = self.dcf.poll_event() {
                self.mac_event(env, now, ev);
            } else if let Some((mut frame, mode)) = self.dcf.poll_transmit() {
                if self.cfg.reports_position {
                    let b = &env.bodies[node.index()];
                    frame.report = Some(SenderReport {
                        position: b.position(now),
                        tx_power: b.tx_power,
                    });
                }
                self.transmit(env, now, frame, mode);
            } else {
                return;
            }
        }
    }

    fn mac_event(&mut self, env: &mut Env, now: SimTime, ev: DcfEvent) {
        match ev {
            DcfEvent::QueueDrop { msdu } => {
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    let event = if self.on(env) {
                        MacEvent::QueueDrop
                    } else {
                        MacEvent::RadioOff
                    };
                    self.mac_trace(
                        env,
                        now,
                        msdu.dst.trace_id(),
                        event,
                        0,
                        (msdu.bytes, msdu.payload.content()),
                        0,
                        SimTime::ZERO,
                    );
                }
            }
            DcfEvent::Response(outcome) => {
                if let Some(row) = self.awaiting_row.take() {
                    env.trace.frames.set_outcome(row, outcome);
                }
            }
            DcfEvent::Done {
                msdu,
                seq,
                delivered,
                attempts,
                delay,
            } => {
                let event = if delivered {
                    MacEvent::Delivered
                } else {
                    MacEvent::Failed
                };
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    self.mac_trace(
                        env,
                        now,
                        msdu.dst.trace_id(),
                        event,
                        seq,
                        (msdu.bytes, msdu.payload.content()),
                        attempts,
                        delay,
                    );
                }
                self.apps.handle_mac_done(now, msdu.source);
                self.pump_apps(env, now);
                if let (false, Dst::Node(hop), Payload::Packet(p)) =
                    (delivered, msdu.dst, &msdu.payload)
                {
                    self.net.handle_tx_failed(now, hop, p);
                    self.pump_net(env, now);
                }
            }
            DcfEvent::Received {
                frame,
                rssi,
                duplicate,
            } => {
                self.mgmt.handle_heard(now, frame.src);
                if !self.adhoc_admits_rx(now, &frame) {
                    return;
                }
                if frame.kind == FrameKind::Data {
                    let body = frame.psdu_bytes - crate::mac::DATA_OVERHEAD;
                    let event = if duplicate {
                        MacEvent::Duplicate
                    } else {
                        MacEvent::Received
                    };
                    let attempts = if frame.dst == Dst::Broadcast {
                        0
                    } else {
                        u32::from(frame.attempt) + 1
                    };
                    self.mac_trace(
                        env,
                        now,
                        frame.src.0,
                        event,
                        frame.seq,
                        (body, frame.payload.content()),
                        attempts,
                        SimTime::ZERO,
                    );
                }
                if !duplicate {
                    self.mac_deliver(env, now, frame, rssi);
                }
            }
        }
    }

    /// Hands a received MSDU to management or the network layer.
    fn mac_deliver(&mut self, env: &mut Env, now: SimTime, frame: Frame, rssi: Dbm) {
        match frame.payload {
            Payload::Mgmt(m) => self.mgmt_rx(env, now, frame.src, m, rssi),
            Payload::Packet(p) => self.net_rx_air(env, now, frame.src, p),
            Payload::FastFrame(pair) => {
                let [a, b] = *pair;
                self.net_rx_air(env, now, frame.src, a);
                self.net_rx_air(env, now, frame.src, b);
            }
            Payload::Datagram { app, data, sent } => {
                let room = self.dcf.queue_room();
                let datagram = RawDatagram {
                    app,
                    data: &data,
                    sent,
                };
                self.apps
                    .handle_frame(now, frame.src, datagram, room, &mut self.sockets);
                self.pump_apps(env, now);
                self.pump_sockets(env, now);
            }
            Payload::Raw => {}
        }
    }

    /// A `mac` row; `msdu`: its bytes and what it carries.
    #[allow(clippy::too_many_arguments)]
    fn mac_trace(
        &self,
        env: &mut Env,
        now: SimTime,
        peer: u32,
        event: MacEvent,
        seq: u16,
        msdu: (u32, MsduContent),
        attempts: u32,
        delay: SimTime,
    ) {
        let (bytes, content) = msdu;
        let p = env.position(self.id, now);
        env.trace.mac.push(MacRow {
            time_ns: now.as_ns(),
            node: self.id.0,
            peer,
            event,
            seq,
            bytes,
            attempts: attempts.min(255) as u8,
            delay_ns: delay.as_ns(),
            x: p.x as f32,
            y: p.y as f32,
            content,
        });
    }

    /// A MAC timer of `generation` fired.
    pub fn on_mac_timer(&mut self, env: &mut Env, now: SimTime, timer: MacTimer, generation: u32) {
        if !self.dcf.is_current(timer, generation) {
            return;
        }
        let (receiving, busy) = (self.phy.receiving().is_some(), self.phy.busy());
        let mut ctx = Context {
            me: self.id,
            now,
            env,
        };
        self.dcf
            .handle_timeout(now, timer, receiving, busy, &mut ctx);
        self.pump_mac(env, now);
    }

    /// Re-evaluates carrier sense after anything that may have changed it.
    fn medium_update(&mut self, env: &mut Env, now: SimTime) {
        let busy = self.phy.busy();
        self.dcf.handle_medium(now, busy);
        self.pump_mac(env, now);
    }

    /// Hands an MSDU to the MAC; false if the queue was full or the radio
    /// is off (the drop is traced).
    fn mac_enqueue(&mut self, env: &mut Env, now: SimTime, msdu: Msdu) -> bool {
        if !self.on(env) {
            self.mac_trace(
                env,
                now,
                msdu.dst.trace_id(),
                MacEvent::RadioOff,
                0,
                (msdu.bytes, msdu.payload.content()),
                0,
                SimTime::ZERO,
            );
            return false;
        }
        if self.adhoc.as_ref().is_some_and(|a| !a.admits(msdu.dst)) {
            self.mac_trace(
                env,
                now,
                msdu.dst.trace_id(),
                MacEvent::NoLink,
                0,
                (msdu.bytes, msdu.payload.content()),
                0,
                SimTime::ZERO,
            );
            return false;
        }
        let ok = self.dcf.enqueue(now, msdu);
        self.pump_mac(env, now);
        ok
    }

    /// Tunes the radio to `channel`: what it was receiving is lost and its
    /// MAC starts afresh there.
    fn retune(&mut self, env: &mut Env, now: SimTime, channel: u32) {
        let body = &mut env.bodies[self.id.index()];
        if body.channel == channel {
            return;
        }
        body.channel = channel;
        self.phy.retune();
        self.dcf.flush();
        self.pump_mac(env, now);
        self.medium_update(env, now);
    }

    /// Starts management and the router.
    fn mgmt_start(&mut self, env: &mut Env, now: SimTime) {
        self.mgmt.start(now);
        self.pump_mgmt(env, now);
        self.adhoc_start(env, now);
        self.net.handle_start(now);
        self.pump_net(env, now);
    }

    /// Switches the radio on now, or at the node's appearance; schedules
    /// its disappearance.
    pub fn power_schedule(&mut self, env: &mut Env) {
        let (node, appear, disappear) = (self.id, self.cfg.appear, self.cfg.disappear);
        if appear == SimTime::ZERO {
            self.mgmt_start(env, SimTime::ZERO);
        } else {
            env.queue
                .schedule(appear, node.0, Event::Power { node, on: true });
        }
        if disappear != SimTime::MAX {
            env.queue
                .schedule(disappear, node.0, Event::Power { node, on: false });
        }
    }

    /// The node appears (its radio comes on and management starts) or
    /// disappears (its radio goes off for good, dropping what it queued).
    pub fn on_power(&mut self, env: &mut Env, now: SimTime, on: bool) {
        env.bodies[self.id.index()].on = on;
        if on {
            self.mgmt_start(env, now);
        } else {
            self.dcf.flush();
            self.pump_mac(env, now);
        }
    }

    /// A management timer of `generation` fired.
    pub fn on_mgmt_timer(
        &mut self,
        env: &mut Env,
        now: SimTime,
        timer: MgmtTimer,
        generation: u32,
    ) {
        if !self.mgmt.is_current(timer, generation) {
            return;
        }
        let map = self.dcf.links().advertised().cloned();
        self.mgmt.handle_timeout(now, timer, map);
        self.pump_mgmt(env, now);
    }

    /// A management frame from `from` arrived intact.
    fn mgmt_rx(&mut self, env: &mut Env, now: SimTime, from: NodeId, body: MgmtBody, rssi: Dbm) {
        if let MgmtBody::Adhoc(f) = body {
            return self.adhoc_rx(env, now, from, f, rssi);
        }
        let channel = env.bodies[self.id.index()].channel;
        self.mgmt.handle_frame(now, from, body, rssi, channel);
        self.pump_mgmt(env, now);
    }

    /// Hands a management frame to the MAC at the radio's basic rate. It
    /// bypasses the queue limit; `front` puts it ahead of queued data
    /// (beacons, probe requests).
    fn send_mgmt(&mut self, env: &mut Env, now: SimTime, dst: Dst, body: MgmtBody, front: bool) {
        let mode = env.radio.basic_rate;
        let tries = if dst == Dst::Broadcast { 1 } else { MGMT_TRIES };
        let fixed = Some(Stage { mode, tries });
        let msdu = Msdu {
            dst,
            bytes: body.body_bytes(),
            enqueued: now,
            fixed,
            source: None,
            payload: Payload::Mgmt(body),
        };
        self.dcf.enqueue_mgmt(now, msdu, front);
        self.pump_mac(env, now);
    }

    /// Drains management: the radio to the channel it wants, frames to the
    /// MAC, events to the trace and the network layer, timers to the event
    /// queue.
    fn pump_mgmt(&mut self, env: &mut Env, now: SimTime) {
        let node = self.id;
        loop {
            let channel = self.mgmt.channel();
            if channel != env.bodies[node.index()].channel {
                self.retune(env, now, channel);
            } else if let Some(MgmtFrame { dst, body, front }) = self.mgmt.poll_transmit() {
                self.send_mgmt(env, now, dst, body, front);
            } else if let Some(ev) = self.mgmt.poll_event() {
                match ev {
                    MgmtEvent::Conn { peer, event, value } => {
                        env.conn_event(now, node, peer.0, event, value)
                    }
                    MgmtEvent::LinkUp(peer) => {
                        self.net.handle_link_up(now, peer);
                        self.pump_net(env, now);
                    }
                    MgmtEvent::LinkDown(peer) => self.net.handle_link_down(peer),
                    MgmtEvent::Beacon { ap, map } => {
                        if let Some(map) = map {
                            self.dcf.links_mut().beacon_hint(ap, &map);
                        }
                        self.script_beacon(env, now, ap);
                    }
                }
            } else if let Some((timer, at, generation)) = self.mgmt.poll_timer() {
                env.queue.schedule(
                    at,
                    node.0,
                    Event::Mgmt {
                        node,
                        timer,
                        generation,
                    },
                );
            } else {
                return;
            }
        }
    }
}
