//! A node's stack and the pumps between its layers: the PHY, channel
//! access ([`crate::mac::dcf`]) with its link adaptation, management, the
//! network layer, sockets and applications ([`host`]). Each layer is a
//! sans-IO state machine; every input to a layer is followed by draining
//! that layer's outputs into the next one, the medium, the event queue or
//! the trace ([`World::pump_mac`], [`World::pump_mgmt`] and the pumps in
//! [`host`]).

mod host;

use crate::config::{NodeConfig, SimConfig};
use crate::event::Event;
use crate::ids::{NodeId, TxId};
use crate::mac::dcf::{Air, Dcf, DcfEvent, MacTimer};
use crate::mac::links::{Links, TxContext};
use crate::mac::mgmt::{Mgmt, MgmtBody, MgmtEvent, MgmtFrame, MgmtTimer, MGMT_TRIES};
use crate::mac::{Dst, Frame, MacConfig, Msdu, Payload, SenderReport};
use crate::medium::Medium;
use crate::mobility::Vec2;
use crate::apps::Apps;
use crate::net::dhcp::DhcpClient;
use crate::net::route::{AddressPlan, Bss, Infrastructure, Port};
use crate::net::{Net, NetSetup};
use crate::sockets::Sockets;
use crate::phy::error::ErrorModelKind;
use crate::phy::mode::Timing;
use crate::phy::state::{Phy, RxEnd, RxStart, Signal};
use crate::ratectl::Stage;
use crate::rng::Stream;
use crate::trace::{FrameKind, MacEvent, MacRow};
use crate::units::{Db, Dbm, SimTime};
use crate::world::{mean_snr, Body, World};
use std::sync::Arc;

/// One node's stack.
pub struct Node {
    pub cfg: NodeConfig,
    pub phy: Phy,
    pub dcf: Dcf,
    /// Stream for PHY draws (preamble detection, bit errors).
    phy_rng: Stream,
    pub mgmt: Mgmt,
    /// Channel the radio is tuned to now.
    pub channel: u32,
    pub net: Net,
    pub sockets: Sockets,
    pub apps: Apps,
    /// Row of the `frames` trace recording the transmission now awaiting
    /// its ACK or CTS, to fill in its outcome.
    awaiting_row: Option<usize>,
    /// The radio is switched on: between the node's appearance and its
    /// disappearance ([`NodeConfig::appear`]).
    pub on: bool,
}

impl Node {
    pub fn new(id: NodeId, n: &NodeConfig, cfg: &SimConfig, timing: &Timing, plan: &Arc<AddressPlan>) -> Node {
        let rate = n.rate_control.clone().unwrap_or_else(|| cfg.mac.rate.clone());
        let links = Links::new(rate.clone(), cfg.mac.modes, (cfg.seed, cfg.run, n.name.clone()));
        let mac = MacConfig { queue_limit: n.queue_limit, rate, ..cfg.mac.clone() };
        let air = Air { standard: cfg.radio.standard, preamble: cfg.radio.preamble };
        let mac_rng = Stream::new("run", cfg.seed, cfg.run, &format!("mac/{}", n.name));
        let dcf = Dcf::new(id, mac, *timing, air, links, mac_rng, n.tx_power);
        Node {
            cfg: n.clone(),
            phy: Phy::new(cfg.channel.noise_floor.to_mw(), cfg.radio.cca_threshold.to_mw(), cfg.radio.capture_margin),
            dcf,
            phy_rng: Stream::new("run", cfg.seed, cfg.run, &format!("phy/{}", n.name)),
            mgmt: Mgmt::new(n.role, cfg.mgmt.clone(), n.channel, Stream::new("run", cfg.seed, cfg.run, &format!("beacon/{}", n.name))),
            channel: n.channel,
            net: Net::new(id, net_setup(id, n, cfg, plan)),
            sockets: Sockets::new(id, n.tcp.clone(), cfg.seed, cfg.run, &n.name),
            apps: Apps::new(id, &cfg.apps, &cfg.sources),
            awaiting_row: None,
            on: n.appear == SimTime::ZERO,
        }
    }

    pub fn rx_start(&mut self, now: SimTime, s: Signal, model: &ErrorModelKind) -> RxStart {
        self.phy.rx_start(now, s, model, &mut self.phy_rng)
    }

    pub fn rx_end(&mut self, now: SimTime, tx: TxId, model: &ErrorModelKind) -> Option<RxEnd> {
        self.phy.rx_end(now, tx, model, &mut self.phy_rng)
    }

    /// Notes the `frames` row of a frame just sent: a unicast data,
    /// management or RTS frame's outcome is decided by its response.
    pub fn sent(&mut self, frame: &Frame, row: usize) {
        if matches!(frame.dst, Dst::Node(_)) && !matches!(frame.kind, FrameKind::Ack | FrameKind::Cts) {
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
        .map(|(link, l)| Port { link, far: l.far_end(id) })
        .collect();
    NetSetup {
        role: n.role,
        radio: n.radio,
        split_tcp: n.split_tcp,
        dhcp_server: n.dhcp_server,
        arp: n.arp,
        dhcp: n.dhcp.then(|| DhcpClient::new(Stream::new("run", cfg.seed, cfg.run, &format!("dhcp/{}", n.name)))),
        ports,
        plan: Arc::clone(plan),
        router: Box::new(Infrastructure),
    }
}

/// What the DCF asks of the world when it builds a retry chain.
struct Context<'a> {
    me: NodeId,
    now: SimTime,
    bodies: &'a [Body],
    medium: &'a mut Medium,
}

impl TxContext for Context<'_> {
    fn position(&self) -> Vec2 {
        self.bodies[self.me.index()].position(self.now)
    }
    fn mean_snr(&mut self, peer: NodeId) -> Db {
        mean_snr(self.bodies, self.medium, self.me, peer, self.now)
    }
}

impl World {
    /// Drains `node`'s DCF: timers to the event queue, events to the trace
    /// and the layers above, frames to the medium.
    pub(crate) fn pump_mac(&mut self, now: SimTime, node: NodeId) {
        loop {
            let dcf = &mut self.nodes[node.index()].dcf;
            if let Some((timer, at, generation)) = dcf.poll_timer() {
                self.queue.schedule(at, node.0, Event::Mac { node, timer, generation });
            } else if let Some(ev) = dcf.poll_event() {
                self.mac_event(now, node, ev);
            } else if let Some((mut frame, mode)) = dcf.poll_transmit() {
                if self.nodes[node.index()].cfg.reports_position {
                    let b = &self.bodies[node.index()];
                    frame.report = Some(SenderReport { position: b.position(now), tx_power: b.tx_power });
                }
                self.transmit(now, node, frame, mode);
            } else {
                return;
            }
        }
    }

    fn mac_event(&mut self, now: SimTime, node: NodeId, ev: DcfEvent) {
        match ev {
            DcfEvent::QueueDrop { msdu } => {
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    let event = if self.nodes[node.index()].on { MacEvent::QueueDrop } else { MacEvent::RadioOff };
                    self.mac_trace(now, node, msdu.dst.trace_id(), event, 0, msdu.bytes, 0, SimTime::ZERO);
                }
            }
            DcfEvent::Response(outcome) => {
                if let Some(row) = self.nodes[node.index()].awaiting_row.take() {
                    self.trace.frames.set_outcome(row, outcome);
                }
            }
            DcfEvent::Done { msdu, seq, delivered, attempts, delay } => {
                let event = if delivered { MacEvent::Delivered } else { MacEvent::Failed };
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    self.mac_trace(now, node, msdu.dst.trace_id(), event, seq, msdu.bytes, attempts, delay);
                }
                self.nodes[node.index()].apps.handle_mac_done(now, msdu.source);
                self.pump_apps(now, node);
            }
            DcfEvent::Received { frame, rssi, duplicate } => {
                self.nodes[node.index()].mgmt.handle_heard(now, frame.src);
                if frame.kind == FrameKind::Data {
                    let body = frame.psdu_bytes - crate::mac::DATA_OVERHEAD;
                    let event = if duplicate { MacEvent::Duplicate } else { MacEvent::Received };
                    let attempts = if frame.dst == Dst::Broadcast { 0 } else { u32::from(frame.attempt) + 1 };
                    self.mac_trace(now, node, frame.src.0, event, frame.seq, body, attempts, SimTime::ZERO);
                }
                if !duplicate {
                    self.mac_deliver(now, node, frame, rssi);
                }
            }
        }
    }

    /// Hands a received MSDU to management or the network layer.
    fn mac_deliver(&mut self, now: SimTime, node: NodeId, frame: Frame, rssi: Dbm) {
        match frame.payload {
            Payload::Mgmt(m) => self.mgmt_rx(now, node, frame.src, m, rssi),
            Payload::Packet(p) => self.net_rx_air(now, node, frame.src, p),
            Payload::FastFrame(pair) => {
                let [a, b] = *pair;
                self.net_rx_air(now, node, frame.src, a);
                self.net_rx_air(now, node, frame.src, b);
            }
            Payload::Raw => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn mac_trace(&mut self, now: SimTime, node: NodeId, peer: u32, event: MacEvent, seq: u16, bytes: u32, attempts: u32, delay: SimTime) {
        let p = self.position(node, now);
        self.trace.mac.push(MacRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer,
            event,
            seq,
            bytes,
            attempts: attempts.min(255) as u8,
            delay_ns: delay.as_ns(),
            x: p.x as f32,
            y: p.y as f32,
        });
    }

    pub(crate) fn on_mac_timer(&mut self, now: SimTime, node: NodeId, timer: MacTimer, generation: u32) {
        let n = &mut self.nodes[node.index()];
        if !n.dcf.is_current(timer, generation) {
            return;
        }
        let (receiving, busy) = (n.phy.receiving().is_some(), n.phy.busy());
        let mut ctx = Context { me: node, now, bodies: &self.bodies, medium: &mut self.medium };
        self.nodes[node.index()].dcf.handle_timeout(now, timer, receiving, busy, &mut ctx);
        self.pump_mac(now, node);
    }

    /// Re-evaluates `node`'s carrier sense after anything that may have
    /// changed it.
    pub(crate) fn medium_update(&mut self, now: SimTime, node: NodeId) {
        let n = &mut self.nodes[node.index()];
        let busy = n.phy.busy();
        n.dcf.handle_medium(now, busy);
        self.pump_mac(now, node);
    }

    /// Hands an MSDU to `node`'s MAC; false if the queue was full or the
    /// radio is off (the drop is traced).
    pub(crate) fn mac_enqueue(&mut self, now: SimTime, node: NodeId, msdu: Msdu) -> bool {
        if !self.nodes[node.index()].on {
            self.mac_trace(now, node, msdu.dst.trace_id(), MacEvent::RadioOff, 0, msdu.bytes, 0, SimTime::ZERO);
            return false;
        }
        let ok = self.nodes[node.index()].dcf.enqueue(now, msdu);
        self.pump_mac(now, node);
        ok
    }

    /// Hands a management MSDU to the MAC, bypassing the queue limit; `front`
    /// puts it ahead of queued data (beacons, probe requests).
    pub(crate) fn mac_enqueue_mgmt(&mut self, now: SimTime, node: NodeId, msdu: Msdu, front: bool) {
        self.nodes[node.index()].dcf.enqueue_mgmt(now, msdu, front);
        self.pump_mac(now, node);
    }

    /// Tunes `node`'s radio to `channel`: what it was receiving is lost and
    /// its MAC starts afresh there.
    pub(crate) fn retune(&mut self, now: SimTime, node: NodeId, channel: u32) {
        let n = &mut self.nodes[node.index()];
        if n.channel == channel {
            return;
        }
        n.channel = channel;
        n.phy.retune();
        n.dcf.flush();
        self.pump_mac(now, node);
        self.medium_update(now, node);
    }
}

impl World {
    /// Starts `node`'s management.
    fn mgmt_start(&mut self, now: SimTime, node: NodeId) {
        self.nodes[node.index()].mgmt.start(now);
        self.pump_mgmt(now, node);
    }

    /// Switches `node`'s radio on now, or at its appearance; schedules its
    /// disappearance.
    pub(crate) fn power_schedule(&mut self, node: NodeId) {
        let (appear, disappear) = (self.nodes[node.index()].cfg.appear, self.nodes[node.index()].cfg.disappear);
        if appear == SimTime::ZERO {
            self.mgmt_start(SimTime::ZERO, node);
        } else {
            self.queue.schedule(appear, node.0, Event::Power { node, on: true });
        }
        if disappear != SimTime::MAX {
            self.queue.schedule(disappear, node.0, Event::Power { node, on: false });
        }
    }

    /// `node` appears (its radio comes on and management starts) or
    /// disappears (its radio goes off for good, dropping what it queued).
    pub(crate) fn on_power(&mut self, now: SimTime, node: NodeId, on: bool) {
        self.nodes[node.index()].on = on;
        if on {
            self.mgmt_start(now, node);
        } else {
            self.nodes[node.index()].dcf.flush();
            self.pump_mac(now, node);
        }
    }

    pub(crate) fn on_mgmt_timer(&mut self, now: SimTime, node: NodeId, timer: MgmtTimer, generation: u32) {
        let n = &mut self.nodes[node.index()];
        if !n.mgmt.is_current(timer, generation) {
            return;
        }
        let map = n.dcf.links().advertised().cloned();
        n.mgmt.handle_timeout(now, timer, map);
        self.pump_mgmt(now, node);
    }

    /// A management frame from `from` arrived intact at `node`.
    fn mgmt_rx(&mut self, now: SimTime, node: NodeId, from: NodeId, body: MgmtBody, rssi: Dbm) {
        let n = &mut self.nodes[node.index()];
        let channel = n.channel;
        n.mgmt.handle_frame(now, from, body, rssi, channel);
        self.pump_mgmt(now, node);
    }

    /// Drains `node`'s management: the radio to the channel it wants,
    /// frames to the MAC, events to the trace and the network layer,
    /// timers to the event queue.
    fn pump_mgmt(&mut self, now: SimTime, node: NodeId) {
        loop {
            let n = &mut self.nodes[node.index()];
            let channel = n.mgmt.channel();
            if channel != n.channel {
                self.retune(now, node, channel);
            } else if let Some(MgmtFrame { dst, body, front }) = n.mgmt.poll_transmit() {
                let mode = self.radio.standard.basic_rates()[0];
                let tries = if dst == Dst::Broadcast { 1 } else { MGMT_TRIES };
                let fixed = Some(Stage { mode, tries });
                let msdu = Msdu { dst, bytes: body.body_bytes(), enqueued: now, fixed, source: None, payload: Payload::Mgmt(body) };
                self.mac_enqueue_mgmt(now, node, msdu, front);
            } else if let Some(ev) = n.mgmt.poll_event() {
                match ev {
                    MgmtEvent::Conn { peer, event, value } => self.conn_event(now, node, peer.0, event, value),
                    MgmtEvent::LinkUp(peer) => {
                        n.net.handle_link_up(now, peer);
                        self.pump_net(now, node);
                    }
                    MgmtEvent::LinkDown(peer) => n.net.handle_link_down(peer),
                    MgmtEvent::Beacon { ap, map } => {
                        if let Some(map) = map {
                            n.dcf.links_mut().beacon_hint(ap, &map);
                        }
                        self.script_beacon(now, node, ap);
                    }
                }
            } else if let Some((timer, at, generation)) = n.mgmt.poll_timer() {
                self.queue.schedule(at, node.0, Event::Mgmt { node, timer, generation });
            } else {
                return;
            }
        }
    }
}
