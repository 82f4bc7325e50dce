//! The world: the event loop, the nodes' bodies (where they are, their
//! antennas) and stacks in an arena, the radio medium, the wired links, the
//! experiment's script and the trace. It carries a transmission through
//! the medium to every radio it reaches and hands each event to that
//! node's stack ([`crate::node`]).

use crate::channel::Endpoint;
use crate::config::SimConfig;
use crate::event::{Event, EventQueue};
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::medium::{Antenna, Medium, RadioLimits};
use crate::mobility::{Mobility, MobilityModel, Vec2};
use crate::net::route::AddressPlan;
use crate::node::Node;
use crate::phy::mode::{ModClass, Mode};
use crate::phy::state::{RxStart, Signal};
use crate::ratectl::SnrMap;
use crate::script::Script;
use crate::trace::{ConnEvent, DropReason, EventRow, FrameRow, PhyEvent, Trace, TxOutcome};
use crate::units::{Db, Dbm, Meters, SimTime};
use crate::wire::WiredLink;
use std::sync::Arc;

/// Counters a run reports besides its trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    pub transmissions: u64,
    pub simulated: SimTime,
}

/// A node's physical self: how it moves and what its antenna is.
#[derive(Clone, Debug)]
pub struct Body {
    pub mobility: MobilityModel,
    pub antenna_height: Meters,
    pub antenna_gain: Db,
    pub tx_power: Dbm,
}

impl Body {
    pub fn position(&self, t: SimTime) -> Vec2 {
        self.mobility.position(t)
    }

    pub fn endpoint(&self, t: SimTime) -> Endpoint {
        Endpoint { position: self.mobility.position(t), height: self.antenna_height, antenna_gain: self.antenna_gain, odometer: self.mobility.odometer(t) }
    }
}

pub struct World {
    pub(crate) queue: EventQueue,
    pub(crate) bodies: Vec<Body>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) medium: Medium,
    pub(crate) radio: crate::config::RadioConfig,
    pub(crate) trace: Trace,
    duration: SimTime,
    pub(crate) wires: Vec<WiredLink>,
    pub(crate) script: Script,
    /// The pcap files the frame rows also go to, if any.
    pub(crate) capture: Option<crate::pcap::Capture>,
    /// Scratch: the radios a transmission reaches, with their delays.
    reached: Vec<(NodeId, SimTime)>,
    pub(crate) sniffer: Option<NodeId>,
}

impl World {
    pub fn new(cfg: &SimConfig) -> World {
        let timing = cfg.radio.standard.timing(cfg.radio.b_compatible);
        let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        let bodies = cfg
            .nodes
            .iter()
            .map(|n| Body { mobility: n.mobility.clone(), antenna_height: n.antenna_height, antenna_gain: n.antenna_gain, tx_power: n.tx_power })
            .collect();
        let plan = Arc::new(AddressPlan::new(cfg.nodes.iter().map(|n| n.radio).collect(), cfg.nodes.iter().map(|n| n.dhcp).collect()));
        let nodes = cfg.nodes.iter().enumerate().map(|(i, n)| Node::new(NodeId(i as u32), n, cfg, &timing, &plan)).collect();
        let radios = || cfg.nodes.iter().filter(|n| n.radio);
        let limits = RadioLimits {
            eirp: Dbm(radios().map(|n| n.tx_power.0 + n.antenna_gain.0).fold(f64::NEG_INFINITY, f64::max)),
            gain: Db(radios().map(|n| n.antenna_gain.0).fold(f64::NEG_INFINITY, f64::max)),
            height: Meters(radios().map(|n| n.antenna_height.0).fold(0.0, f64::max)),
            speed: radios().map(|n| n.mobility.max_speed()).fold(0.0, f64::max),
        };
        let mut w = World {
            queue: EventQueue::new(),
            bodies,
            nodes,
            medium: Medium::new(&cfg.channel, &names, cfg.seed, cfg.run, limits),
            radio: cfg.radio.clone(),
            trace: Trace::default(),
            duration: cfg.duration,
            wires: cfg.wires.clone(),
            script: Script::new(&cfg.apps, cfg.mgmt.beacon_interval),
            capture: None,
            reached: Vec::new(),
            sniffer: cfg.pcap.sniffer,
        };
        for i in 0..w.nodes.len() {
            let n = &mut w.nodes[i];
            n.apps.listen(&mut n.sockets);
            n.apps.start_sources();
            w.pump_apps(SimTime::ZERO, NodeId(i as u32));
        }
        for s in w.script.timed() {
            w.queue.schedule(s.at, s.from.0, Event::App { node: s.from, app: s.app });
        }
        for i in 0..w.nodes.len() {
            w.power_schedule(NodeId(i as u32));
        }
        w
    }

    /// Starts each node whose rate control learns from the map given for
    /// it (what earlier passes learned).
    pub(crate) fn set_priors(&mut self, maps: &[Option<Arc<SnrMap>>]) {
        for (n, map) in self.nodes.iter_mut().zip(maps) {
            if let Some(map) = map {
                n.dcf.links_mut().set_prior(Arc::clone(map));
            }
        }
    }

    /// What each node's rate control knows after this pass (`None` where it
    /// does not learn).
    pub(crate) fn learned(&self) -> Vec<Option<Arc<SnrMap>>> {
        self.nodes.iter().map(|n| n.dcf.links().learned().map(Arc::new)).collect()
    }

    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.cfg.name.clone()).collect()
    }

    /// Runs to the configured duration and returns the trace (and the capture).
    pub fn run(mut self) -> (Trace, RunStats, Option<crate::pcap::Capture>) {
        self.run_events();
        self.sockets_finish();
        let stats = RunStats { events: self.queue.processed(), transmissions: self.medium.transmissions(), simulated: self.duration };
        (self.trace, stats, self.capture)
    }

    /// Processes events up to the configured duration.
    pub(crate) fn run_events(&mut self) {
        while let Some(t) = self.queue.peek_time() {
            if t > self.duration {
                break;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            self.dispatch(now, ev);
        }
    }

    fn dispatch(&mut self, now: SimTime, ev: Event) {
        // A radio that is off hears nothing and its timers are void.
        let off = |n: NodeId| !self.nodes[n.index()].on;
        match ev {
            Event::RxStart { node, tx } | Event::RxEnd { node, tx } | Event::TxEnd { node, tx } if off(node) => self.medium.release(tx),
            Event::Mac { node, .. } | Event::Mgmt { node, .. } | Event::Net { node, .. } | Event::WireArrive { node, .. } if off(node) => {}
            Event::RxStart { node, tx } => self.on_rx_start(now, node, tx),
            Event::RxEnd { node, tx } => self.on_rx_end(now, node, tx),
            Event::TxEnd { node, tx } => self.on_tx_end(now, node, tx),
            Event::Mac { node, timer, generation } => self.on_mac_timer(now, node, timer, generation),
            Event::Traffic { node, source } => self.on_emit(now, node, source),
            Event::Mgmt { node, timer, generation } => self.on_mgmt_timer(now, node, timer, generation),
            Event::Net { node, timer, generation } => self.on_net_timer(now, node, timer, generation),
            Event::WireArrive { node, link, frame } => self.on_wire_arrive(now, node, link as usize, *frame),
            Event::Tcp { node, socket, generation } => self.on_tcp_timer(now, node, socket, generation),
            Event::App { node, app } => self.on_app(now, node, app),
            Event::Power { node, on } => self.on_power(now, node, on),
        }
    }

    pub(crate) fn position(&self, n: NodeId, t: SimTime) -> Vec2 {
        self.bodies[n.index()].position(t)
    }

    fn antenna(&self, n: NodeId, t: SimTime) -> Antenna {
        antenna_of(&self.bodies, &self.nodes, n, t)
    }

    /// The mode the PLCP header is sent with: the lowest rate of the class.
    fn header_mode(&self, mode: &Mode) -> Mode {
        let modes = self.radio.standard.modes();
        *modes.iter().find(|m| m.class == mode.class).unwrap_or(&modes[0])
    }

    /// Puts `frame` on the air from `src` at `mode`, now.
    pub(crate) fn transmit(&mut self, now: SimTime, src: NodeId, frame: Frame, mode: Mode) {
        let airtime = mode.airtime(frame.psdu_bytes, self.radio.preamble, self.radio.standard);
        let end = now + airtime;
        if let Some(lost) = self.nodes[src.index()].phy.start_tx(end) {
            self.trace_drop(now, src, lost, DropReason::Transmitting);
        }
        let row = self.trace_frame(now, src, &frame, &mode, PhyEvent::Tx, DropReason::None, None);
        self.nodes[src.index()].sent(&frame, row);
        let tx = self.antenna(src, now);
        let (bodies, nodes) = (&self.bodies, &self.nodes);
        let radios = nodes.iter().enumerate().filter(|(_, n)| n.net.has_radio()).map(|(i, _)| (NodeId(i as u32), bodies[i].position(now)));
        self.medium.rebin(now, radios);
        let tx_power = self.bodies[src.index()].tx_power;
        let antenna = |j: NodeId| nodes[j.index()].on.then(|| antenna_of(bodies, nodes, j, now));
        let mut reached = std::mem::take(&mut self.reached);
        let id = self.medium.transmit(now, end, src, tx, tx_power, frame, mode, antenna, &mut reached);
        for &(rx, delay) in &reached {
            self.queue.schedule(now + delay, rx.0, Event::RxStart { node: rx, tx: id });
            self.queue.schedule(end + delay, rx.0, Event::RxEnd { node: rx, tx: id });
        }
        self.reached = reached;
        self.queue.schedule(end, src.0, Event::TxEnd { node: src, tx: id });
        self.medium_update(now, src);
    }

    fn signal(&self, id: TxId, rx: NodeId, now: SimTime) -> Signal {
        let t = self.medium.tx(id);
        let power = t.power_at(rx).expect("scheduled arrival");
        let header_mode = self.header_mode(&t.mode);
        let header_time = t.mode.header_airtime(self.radio.preamble);
        let duration = t.end - t.start;
        Signal {
            tx: id,
            power,
            start: now,
            end: now + duration,
            header_mode,
            header_bits: if t.mode.class == ModClass::Dsss { 48 } else { 24 },
            header_end: now + header_time,
            mode: t.mode,
            payload_bits: 8 * t.frame.psdu_bytes as u64,
        }
    }

    /// Whether `node` should record what happens to frame `id` (addressed to
    /// it, or broadcast); overheard unicast is not traced, except by the sniffer.
    fn traced_at(&self, node: NodeId, id: TxId) -> bool {
        self.medium.tx(id).frame.dst.is_for(node) || self.sniffer == Some(node)
    }

    fn on_rx_start(&mut self, now: SimTime, node: NodeId, id: TxId) {
        if self.medium.tx(id).channel != self.nodes[node.index()].channel {
            self.medium.release(id); // the radio retuned while the signal was in flight
            return;
        }
        let s = self.signal(id, node, now);
        let outcome = self.nodes[node.index()].rx_start(now, s, &self.radio.error_model);
        match outcome {
            RxStart::Locked => {}
            RxStart::Captured { lost } => self.trace_drop(now, node, lost, DropReason::Captured),
            RxStart::Ignored(reason) => self.trace_drop(now, node, id, reason),
        }
        self.medium_update(now, node);
        self.medium.release(id);
    }

    fn on_rx_end(&mut self, now: SimTime, node: NodeId, id: TxId) {
        if let Some(end) = self.nodes[node.index()].rx_end(now, id, &self.radio.error_model) {
            let t = self.medium.tx(id);
            let power = t.power_at(node).expect("arrival");
            let mode = t.mode;
            let noise = self.medium.channel().noise_floor;
            self.nodes[node.index()].dcf.handle_rx_end(now, &self.medium.tx(id).frame, mode, end.ok, power.to_dbm(), noise);
            if self.traced_at(node, id) {
                let frame = self.medium.tx(id).frame.clone();
                let (event, reason) = if end.ok { (PhyEvent::Rx, DropReason::None) } else { (PhyEvent::Drop, DropReason::Error) };
                self.trace_frame(now, node, &frame, &mode, event, reason, Some((power.to_dbm(), end.snr, end.min_sinr)));
            }
            self.pump_mac(now, node);
        }
        self.medium_update(now, node);
        self.medium.release(id);
    }

    fn on_tx_end(&mut self, now: SimTime, node: NodeId, id: TxId) {
        self.nodes[node.index()].phy.end_tx();
        let frame = self.medium.tx(id).frame.clone();
        self.nodes[node.index()].dcf.handle_tx_end(now, &frame);
        self.pump_mac(now, node);
        self.medium_update(now, node);
        self.medium.release(id);
    }

    /// Records a connection event at `node` concerning `peer`.
    pub(crate) fn conn_event(&mut self, now: SimTime, node: NodeId, peer: u32, event: ConnEvent, value: f64) {
        let p = self.position(node, now);
        self.trace.events.push(EventRow { time_ns: now.as_ns(), node: node.0, peer, event, x: p.x as f32, y: p.y as f32, value });
    }

    fn trace_drop(&mut self, now: SimTime, node: NodeId, id: TxId, reason: DropReason) {
        if self.traced_at(node, id) {
            let t = self.medium.tx(id);
            let (frame, mode) = (t.frame.clone(), t.mode);
            let power = t.power_at(node);
            let noise = self.medium.channel().noise_floor;
            let extra = power.map(|p| (p.to_dbm(), p.to_dbm() - noise, Db(f64::NAN)));
            self.trace_frame(now, node, &frame, &mode, PhyEvent::Drop, reason, extra);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn trace_frame(
        &mut self,
        now: SimTime,
        node: NodeId,
        frame: &Frame,
        mode: &Mode,
        event: PhyEvent,
        reason: DropReason,
        signal: Option<(Dbm, Db, Db)>,
    ) -> usize {
        let pos = self.position(node, now);
        let peer = if event == PhyEvent::Tx { frame.dst.trace_id() } else { frame.src.0 };
        let peer_pos = if peer == u32::MAX { Vec2::new(f64::NAN, f64::NAN) } else { self.position(NodeId(peer), now) };
        let (rssi, snr, sinr) = signal.map_or((f32::NAN, f32::NAN, f32::NAN), |(r, s, i)| (r.0 as f32, s.0 as f32, i.0 as f32));
        self.trace.frames.push(FrameRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer,
            event,
            reason,
            kind: frame.kind,
            rate_mbps: mode.rate.mbps() as f32,
            bytes: frame.psdu_bytes,
            seq: frame.seq,
            attempt: frame.attempt,
            x: pos.x as f32,
            y: pos.y as f32,
            peer_x: peer_pos.x as f32,
            peer_y: peer_pos.y as f32,
            rssi_dbm: rssi,
            snr_db: snr,
            sinr_db: sinr,
            outcome: TxOutcome::None,
        });
        if let Some(c) = &mut self.capture {
            c.record(now, node, frame, mode, self.nodes[node.index()].channel, event, reason, signal.map(|s| s.0));
        }
        self.trace.frames.len() - 1
    }
}

/// The mean SNR (path loss and shadowing, no fast fading) of frames from
/// `a` at `b` at `now`: the oracle some rate controllers are given.
/// Radio `n` as the medium sees it at `t`: where its antenna is, and its channel.
fn antenna_of(bodies: &[Body], nodes: &[Node], n: NodeId, t: SimTime) -> Antenna {
    Antenna { endpoint: bodies[n.index()].endpoint(t), channel: nodes[n.index()].channel }
}

pub(crate) fn mean_snr(bodies: &[Body], medium: &mut Medium, a: NodeId, b: NodeId, now: SimTime) -> Db {
    let (ta, tb) = (bodies[a.index()].endpoint(now), bodies[b.index()].endpoint(now));
    let power = bodies[a.index()].tx_power;
    let noise = medium.channel().noise_floor;
    medium.mean_rx_power(a, &ta, b, &tb, power) - noise
}
