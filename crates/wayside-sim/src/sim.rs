//! The world: nodes in an arena, transmissions in flight, the event loop, and
//! the glue that carries a transmission through the channel to every radio.
//! The MAC's and the applications' logic live in their own modules as
//! `impl World` blocks over the same state.

use crate::apps::ip::{App, AppConfig};
use crate::apps::Source;
use crate::mac::mgmt::{MgmtConfig, MgmtTimers, Role};
use crate::net::dhcp::DhcpClient;
use crate::net::{NetStack, WiredLink};
use crate::sockets::{Listener, Socket};
use crate::trace::{ConnEvent, EventRow};
use crate::transport::tcp::TcpConfig;
use crate::channel::{propagation_delay, ChannelConfig, Endpoint, Link};
use crate::event::{Event, EventQueue, NodeId, TxId};
use crate::mac::{Frame, Mac, MacConfig};
use crate::mobility::{Mobility, MobilityModel, Vec2};
use crate::phy::error::ErrorModelKind;
use crate::phy::mode::{ModClass, Mode, Preamble, Standard, Timing};
use crate::phy::state::{Phy, RxStart, Signal};
use crate::ratectl::RateControlSpec;
use crate::rng::Stream;
use std::sync::Arc;
use crate::trace::{DropReason, FrameRow, PhyEvent, Trace, TxOutcome};
use crate::units::{Db, Dbm, Meters, MilliWatt, SimTime};

/// Signals weaker than the noise floor by more than this are not delivered
/// to a radio at all (they would add under 0.1% to the noise).
const RECEPTION_FLOOR_BELOW_NOISE: Db = Db(30.0);

/// Radio settings shared by every node.
#[derive(Clone, Debug)]
pub struct RadioConfig {
    pub standard: Standard,
    /// 802.11g only: long slot and CWmin 31 for coexistence with 802.11b.
    pub b_compatible: bool,
    pub preamble: Preamble,
    pub cca_threshold: Dbm,
    pub capture_margin: Option<Db>,
    pub error_model: ErrorModelKind,
}

/// One node's fixed description.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub name: String,
    pub mobility: MobilityModel,
    pub tx_power: Dbm,
    pub antenna_gain: Db,
    pub antenna_height: Meters,
    /// Whether the node has a radio (a wired-only server has none).
    pub radio: bool,
    pub role: NodeRole,
    /// Operating channel (an AP's; a station's until it scans).
    pub channel: u32,
    pub tcp: TcpConfig,
    pub arp: crate::net::ArpConfig,
    /// Transmit queue limit, frames.
    pub queue_limit: usize,
    /// Get an address by DHCP after association (stations only).
    pub dhcp: bool,
    /// Answer DHCP requests from associated stations (APs only).
    pub dhcp_server: bool,
    /// This node's rate control (default: the MAC's).
    pub rate_control: Option<crate::ratectl::RateControlSpec>,
    /// An AP that splits the TCP connections it forwards (I-TCP).
    pub split_tcp: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    Independent,
    Ap,
    Sta,
}

/// Everything needed to build a world.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub duration: SimTime,
    pub seed: u64,
    pub run: u64,
    pub channel: ChannelConfig,
    pub radio: RadioConfig,
    pub mac: MacConfig,
    pub nodes: Vec<NodeConfig>,
    pub sources: Vec<crate::apps::SourceConfig>,
    pub mgmt: MgmtConfig,
    pub wires: Vec<WiredLink>,
    pub apps: Vec<AppConfig>,
}

pub struct Node {
    pub cfg: NodeConfig,
    pub phy: Phy,
    pub mac: Mac,
    /// Stream for PHY draws (preamble detection, bit errors).
    phy_rng: Stream,
    pub role: Role,
    /// Channel the radio is tuned to now.
    pub channel: u32,
    pub mgmt_timers: MgmtTimers,
    pub net: NetStack,
    pub tcp: TcpConfig,
}

/// A frame on the air.
pub struct Transmission {
    pub src: NodeId,
    pub channel: u32,
    pub frame: Frame,
    pub mode: Mode,
    pub start: SimTime,
    pub end: SimTime,
    /// Received power at each radio it reaches, in arrival order.
    arrivals: Vec<(NodeId, MilliWatt)>,
    /// Events still to come that refer to it.
    pending: u32,
}

/// Counters a run reports besides its trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    pub transmissions: u64,
    pub simulated: SimTime,
}

pub struct World {
    pub(crate) queue: EventQueue,
    pub(crate) nodes: Vec<Node>,
    radio_links: Vec<Link>,
    txs: Vec<Option<Transmission>>,
    free_txs: Vec<u32>,
    pub(crate) channel: ChannelConfig,
    pub(crate) radio: RadioConfig,
    pub(crate) timing: Timing,
    pub(crate) sources: Vec<Source>,
    pub(crate) trace: Trace,
    stats: RunStats,
    duration: SimTime,
    pub(crate) mgmt: MgmtConfig,
    pub(crate) wires: Vec<WiredLink>,
    pub(crate) sockets: Vec<Socket>,
    pub(crate) listeners: Vec<Listener>,
    pub(crate) apps: Vec<App>,
    pub(crate) seed: u64,
    pub(crate) run_index: u64,
}

impl World {
    pub fn new(cfg: &SimConfig) -> World {
        let timing = cfg.radio.standard.timing(cfg.radio.b_compatible);
        let noise = cfg.channel.noise_floor.to_mw();
        let nodes: Vec<Node> = cfg
            .nodes
            .iter()
            .map(|n| Node {
                cfg: n.clone(),
                phy: Phy::new(noise, cfg.radio.cca_threshold.to_mw(), cfg.radio.capture_margin),
                mac: Mac::new(
                    &MacConfig { queue_limit: n.queue_limit, rate: n.rate_control.clone().unwrap_or_else(|| cfg.mac.rate.clone()), ..cfg.mac.clone() },
                    &timing,
                    Stream::new("run", cfg.seed, cfg.run, &format!("mac/{}", n.name)),
                    (cfg.seed, cfg.run, n.name.clone()),
                ),
                phy_rng: Stream::new("run", cfg.seed, cfg.run, &format!("phy/{}", n.name)),
                role: match n.role {
                    NodeRole::Independent => Role::Independent,
                    NodeRole::Ap => Role::access_point(),
                    NodeRole::Sta => Role::station(),
                },
                channel: n.channel,
                mgmt_timers: MgmtTimers::default(),
                net: NetStack::new(
                    n.arp,
                    n.radio,
                    n.dhcp.then(|| DhcpClient::new(Stream::new("run", cfg.seed, cfg.run, &format!("dhcp/{}", n.name)))),
                ),
                tcp: n.tcp.clone(),
            })
            .collect();
        let mut radio_links = Vec::with_capacity(nodes.len() * nodes.len().saturating_sub(1) / 2);
        for j in 0..nodes.len() {
            for i in 0..j {
                radio_links.push(Link::new(&cfg.channel, &nodes[i].cfg.name, &nodes[j].cfg.name, cfg.seed, cfg.run));
            }
        }
        let mut w = World {
            queue: EventQueue::new(),
            nodes,
            radio_links,
            txs: Vec::new(),
            free_txs: Vec::new(),
            channel: cfg.channel.clone(),
            radio: cfg.radio.clone(),
            timing,
            sources: Vec::new(),
            trace: Trace::default(),
            stats: RunStats::default(),
            duration: cfg.duration,
            mgmt: cfg.mgmt.clone(),
            wires: cfg.wires.clone(),
            sockets: Vec::new(),
            listeners: Vec::new(),
            apps: Vec::new(),
            seed: cfg.seed,
            run_index: cfg.run,
        };
        for (i, l) in cfg.wires.iter().enumerate() {
            w.nodes[l.a.index()].net.wired.push(i);
            w.nodes[l.b.index()].net.wired.push(i);
        }
        for (i, s) in cfg.sources.iter().enumerate() {
            w.add_source(i as u32, s);
        }
        for (i, a) in cfg.apps.iter().enumerate() {
            w.add_app(i as u32, a);
        }
        for i in 0..w.nodes.len() {
            w.mgmt_start(NodeId(i as u32));
        }
        w
    }

    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.cfg.name.clone()).collect()
    }

    /// Runs to the configured duration and returns the trace.
    pub fn run(mut self) -> (Trace, RunStats) {
        self.run_events();
        self.sockets_finish();
        self.stats.events = self.queue.processed();
        self.stats.simulated = self.duration;
        (self.trace, self.stats)
    }

    /// Processes events up to the configured duration.
    fn run_events(&mut self) {
        while let Some(t) = self.queue.peek_time() {
            if t > self.duration {
                break;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            self.dispatch(now, ev);
        }
    }

    fn dispatch(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::RxStart { node, tx } => self.on_rx_start(now, node, tx),
            Event::RxEnd { node, tx } => self.on_rx_end(now, node, tx),
            Event::TxEnd { node, tx } => self.on_tx_end(now, node, tx),
            Event::Mac { node, timer, generation } => self.on_mac_timer(now, node, timer, generation),
            Event::Traffic { source } => self.on_source(now, source),
            Event::Mgmt { node, timer, generation } => self.on_mgmt_timer(now, node, timer, generation),
            Event::Arp { node, peer, generation } => self.on_arp_timer(now, node, peer, generation),
            Event::WireArrive { node, packet } => self.net_rx_wired(now, node, packet),
            Event::Dhcp { node, generation } => self.on_dhcp_timer(now, node, generation),
            Event::Tcp { socket, generation } => self.on_tcp_timer(now, socket as usize, generation),
            Event::App { app } => self.on_app(now, app),
        }
    }

    pub(crate) fn position(&self, n: NodeId, t: SimTime) -> Vec2 {
        self.nodes[n.index()].cfg.mobility.position(t)
    }

    fn endpoint(&self, n: NodeId, t: SimTime) -> Endpoint {
        let c = &self.nodes[n.index()].cfg;
        Endpoint {
            position: c.mobility.position(t),
            height: c.antenna_height,
            antenna_gain: c.antenna_gain,
            odometer: c.mobility.odometer(t),
        }
    }

    fn link_index(a: NodeId, b: NodeId) -> usize {
        let (i, j) = if a < b { (a.index(), b.index()) } else { (b.index(), a.index()) };
        j * (j - 1) / 2 + i
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
        let id = match self.free_txs.pop() {
            Some(i) => TxId(i),
            None => {
                self.txs.push(None);
                TxId(self.txs.len() as u32 - 1)
            }
        };
        if let Some(lost) = self.nodes[src.index()].phy.start_tx(end) {
            self.trace_drop(now, src, lost, DropReason::Transmitting);
        }
        let row = self.trace_frame(now, src, &frame, &mode, PhyEvent::Tx, DropReason::None, None);
        self.mac_sent(src, &frame, row);
        let tx_ep = self.endpoint(src, now);
        let tx_power = self.nodes[src.index()].cfg.tx_power;
        let floor = self.channel.noise_floor - RECEPTION_FLOOR_BELOW_NOISE;
        let mut arrivals = Vec::new();
        let channel = self.nodes[src.index()].channel;
        for j in 0..self.nodes.len() {
            let rx = NodeId(j as u32);
            if rx == src || !self.nodes[j].net.radio || self.nodes[j].channel != channel {
                continue;
            }
            let rx_ep = self.endpoint(rx, now);
            let budget = self.radio_links[Self::link_index(src, rx)].budget(&self.channel, tx_power, &tx_ep, &rx_ep);
            if budget.rx_power.0 < floor.0 {
                continue;
            }
            let delay = propagation_delay(budget.distance);
            arrivals.push((rx, budget.rx_power.to_mw()));
            self.queue.schedule(now + delay, rx.0, Event::RxStart { node: rx, tx: id });
            self.queue.schedule(end + delay, rx.0, Event::RxEnd { node: rx, tx: id });
        }
        self.queue.schedule(end, src.0, Event::TxEnd { node: src, tx: id });
        let pending = 1 + 2 * arrivals.len() as u32;
        self.txs[id.0 as usize] = Some(Transmission { src, channel, frame, mode, start: now, end, arrivals, pending });
        self.stats.transmissions += 1;
        self.medium_update(now, src);
    }

    fn release(&mut self, id: TxId) {
        let t = self.txs[id.0 as usize].as_mut().expect("live transmission");
        t.pending -= 1;
        if t.pending == 0 {
            self.txs[id.0 as usize] = None;
            self.free_txs.push(id.0);
        }
    }

    fn tx(&self, id: TxId) -> &Transmission {
        self.txs[id.0 as usize].as_ref().expect("live transmission")
    }

    fn signal(&self, id: TxId, rx: NodeId, now: SimTime) -> Signal {
        let t = self.tx(id);
        let power = t.arrivals.iter().find(|a| a.0 == rx).expect("scheduled arrival").1;
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
    /// it, or broadcast); overheard unicast is not traced.
    fn traced_at(&self, node: NodeId, id: TxId) -> bool {
        self.tx(id).frame.dst.is_for(node)
    }

    fn on_rx_start(&mut self, now: SimTime, node: NodeId, id: TxId) {
        if self.tx(id).channel != self.nodes[node.index()].channel {
            self.release(id); // the radio retuned while the signal was in flight
            return;
        }
        let s = self.signal(id, node, now);
        let n = &mut self.nodes[node.index()];
        let outcome = n.phy.rx_start(now, s, &self.radio.error_model, &mut n.phy_rng);
        match outcome {
            RxStart::Locked => {}
            RxStart::Captured { lost } => self.trace_drop(now, node, lost, DropReason::Captured),
            RxStart::Ignored(reason) => self.trace_drop(now, node, id, reason),
        }
        self.medium_update(now, node);
        self.release(id);
    }

    fn on_rx_end(&mut self, now: SimTime, node: NodeId, id: TxId) {
        let n = &mut self.nodes[node.index()];
        let end = n.phy.rx_end(now, id, &self.radio.error_model, &mut n.phy_rng);
        if let Some(end) = end {
            let power = self.tx(id).arrivals.iter().find(|a| a.0 == node).expect("arrival").1;
            let frame = self.tx(id).frame;
            let mode = self.tx(id).mode;
            if self.traced_at(node, id) {
                let (event, reason) = if end.ok { (PhyEvent::Rx, DropReason::None) } else { (PhyEvent::Drop, DropReason::Error) };
                self.trace_frame(now, node, &frame, &mode, event, reason, Some((power.to_dbm(), end.snr, end.min_sinr)));
            }
            self.mac_rx_end(now, node, frame, mode, end.ok, power.to_dbm());
        }
        self.medium_update(now, node);
        self.release(id);
    }

    fn on_tx_end(&mut self, now: SimTime, node: NodeId, id: TxId) {
        self.nodes[node.index()].phy.end_tx();
        let frame = self.tx(id).frame;
        self.mac_tx_end(now, node, frame);
        self.medium_update(now, node);
        self.release(id);
    }

    /// The mean SNR (no fast fading) of frames from `a` at `b` now.
    pub(crate) fn mean_snr(&mut self, a: NodeId, b: NodeId, now: SimTime) -> Db {
        let (ta, tb) = (self.endpoint(a, now), self.endpoint(b, now));
        let power = self.nodes[a.index()].cfg.tx_power;
        let p = self.radio_links[Self::link_index(a, b)].mean_rx_power(&self.channel, power, &ta, &tb);
        p - self.channel.noise_floor
    }

    /// Tunes `node`'s radio to `channel`: what it was receiving is lost and
    /// its MAC starts afresh there.
    pub(crate) fn retune(&mut self, now: SimTime, node: NodeId, channel: u32) {
        if self.nodes[node.index()].channel == channel {
            return;
        }
        self.nodes[node.index()].channel = channel;
        self.nodes[node.index()].phy.retune();
        self.mac_flush(now, node);
        self.medium_update(now, node);
    }

    /// Records a connection event at `node` concerning `peer`.
    pub(crate) fn conn_event(&mut self, now: SimTime, node: NodeId, peer: u32, event: ConnEvent, value: f64) {
        let p = self.position(node, now);
        self.trace.events.push(EventRow { time_ns: now.as_ns(), node: node.0, peer, event, x: p.x as f32, y: p.y as f32, value });
    }

    fn trace_drop(&mut self, now: SimTime, node: NodeId, id: TxId, reason: DropReason) {
        if self.traced_at(node, id) {
            let (frame, mode) = (self.tx(id).frame, self.tx(id).mode);
            let power = self.tx(id).arrivals.iter().find(|a| a.0 == node).map(|a| a.1);
            let noise = self.channel.noise_floor;
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
        self.trace.frames.len() - 1
    }
}

/// What one run produces.
pub struct RunOutput {
    /// The scenario as run, after overrides (TOML).
    pub resolved: String,
    pub node_names: Vec<String>,
    pub trace: Trace,
    pub stats: RunStats,
}

/// Loads `scenario` (TOML text), applies `overrides`, and runs it once.
pub fn run_scenario(scenario: &str, overrides: &[String], seed: Option<u64>, run: u64) -> Result<RunOutput, crate::scenario::ScenarioError> {
    let (resolved, s) = crate::scenario::load(scenario, overrides)?;
    let mut cfg = s.to_sim_config(seed, run);
    train_rate_maps(&mut cfg);
    let world = World::new(&cfg);
    let node_names = world.node_names();
    let (trace, stats) = world.run();
    Ok(RunOutput { resolved, node_names, trace, stats })
}

/// Simulates the earlier passes environment-aware rate control asks for
/// (`training_passes`, the most any node asks) and installs what they
/// learned as each such node's map. Pass k runs the same scenario with the
/// same environment seed (same shadowing) and a run seed drawn from
/// (seed, run, k), so fading, backoff and traffic differ from the measured
/// run's and from each other; each pass starts from the map learned so far.
fn train_rate_maps(cfg: &mut SimConfig) {
    let spec = |c: &SimConfig, i: usize| c.nodes[i].rate_control.clone().unwrap_or_else(|| c.mac.rate.clone());
    let passes = (0..cfg.nodes.len())
        .filter_map(|i| match spec(cfg, i) {
            RateControlSpec::EnvAware(p) => Some(p.training_passes),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    for k in 0..passes {
        let mut draw = Stream::new("run", cfg.seed, cfg.run, &format!("ratectl/training/{k}"));
        let pass_run = (u64::from(draw.integer_inclusive(u32::MAX)) << 32) | u64::from(draw.integer_inclusive(u32::MAX));
        let mut world = World::new(&SimConfig { run: pass_run, ..cfg.clone() });
        world.run_events();
        for i in 0..cfg.nodes.len() {
            if let (RateControlSpec::EnvAware(mut p), Some(map)) = (spec(cfg, i), world.nodes[i].mac.learned_map()) {
                p.map = Arc::new(map);
                cfg.nodes[i].rate_control = Some(RateControlSpec::EnvAware(p));
            }
        }
    }
}
