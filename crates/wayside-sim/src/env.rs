//! What surrounds every node's stack: the event queue, the nodes' bodies
//! (where they are, their antennas, their radios' channel and power), the
//! radio medium, the wired links, the experiment's script and the trace. A
//! node acts on the world only through its [`Env`]; nodes never reach into
//! each other.

use crate::channel::{Endpoint, Fades};
use crate::config::RadioConfig;
use crate::event::{Event, EventQueue};
use crate::geometry::Vec2;
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::medium::{Antenna, Medium};
use crate::mobility::{Mobility, MobilityModel};
use crate::phy::mode::{ModClass, Mode};
use crate::phy::state::Signal;
use crate::script::{Script, Start};
use crate::trace::{ConnEvent, DropReason, EventRow, FrameRow, PhyEvent, Trace, TxOutcome};
use crate::units::{Db, Dbm, Meters, SimTime};
use crate::wire::WiredLink;

/// A node's physical self: how it moves and what its antenna is.
#[derive(Clone, Debug)]
pub struct Body {
    pub mobility: MobilityModel,
    pub antenna_height: Meters,
    pub antenna_gain: Db,
    pub tx_power: Dbm,
    /// Whether it has a radio (a wired-only server has none).
    pub radio: bool,
    /// The channel its radio is tuned to now.
    pub channel: u32,
    /// Its radio is switched on: between its appearance and its
    /// disappearance ([`crate::config::NodeConfig::appear`]).
    pub on: bool,
}

impl Body {
    pub fn position(&self, t: SimTime) -> Vec2 {
        self.mobility.position(t)
    }

    pub fn endpoint(&self, t: SimTime) -> Endpoint {
        Endpoint {
            position: self.mobility.position(t),
            height: self.antenna_height,
            antenna_gain: self.antenna_gain,
            odometer: self.mobility.odometer(t),
        }
    }

    /// Its radio as the medium sees it for a frame on the air from `t` to
    /// `end`: where its antenna is at `t`, its channel, and how far it
    /// moves until `end`.
    pub fn antenna(&self, t: SimTime, end: SimTime) -> Antenna {
        let travel = Meters(self.mobility.odometer(end).0 - self.mobility.odometer(t).0);
        Antenna {
            endpoint: self.endpoint(t),
            channel: self.channel,
            travel,
        }
    }
}

pub struct Env {
    pub queue: EventQueue,
    pub bodies: Vec<Body>,
    pub medium: Medium,
    pub radio: RadioConfig,
    pub trace: Trace,
    pub wires: Vec<WiredLink>,
    pub script: Script,
    /// The pcap files the frame rows also go to, if any.
    pub capture: Option<crate::pcap::Capture>,
    /// The node that records every frame it hears, if any.
    pub sniffer: Option<NodeId>,
    /// Scratch: the radios a transmission reaches, with their delays.
    reached: Vec<(NodeId, SimTime)>,
}

impl Env {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        queue: EventQueue,
        bodies: Vec<Body>,
        medium: Medium,
        radio: RadioConfig,
        wires: Vec<WiredLink>,
        script: Script,
        sniffer: Option<NodeId>,
    ) -> Env {
        Env {
            queue,
            bodies,
            medium,
            radio,
            trace: Trace::default(),
            wires,
            script,
            capture: None,
            sniffer,
            reached: Vec::new(),
        }
    }

    pub fn position(&self, n: NodeId, t: SimTime) -> Vec2 {
        self.bodies[n.index()].position(t)
    }

    /// The mode the PLCP header is sent with: the lowest rate of the class.
    fn header_mode(&self, mode: &Mode) -> Mode {
        let modes = self.radio.standard.modes();
        *modes
            .iter()
            .find(|m| m.class == mode.class)
            .unwrap_or(&modes[0])
    }

    /// The airtime of `frame` at `mode`.
    pub fn airtime(&self, frame: &Frame, mode: &Mode) -> SimTime {
        mode.airtime(frame.psdu_bytes, self.radio.preamble, self.radio.standard)
    }

    /// Puts `frame` from `src` on the air at `mode` from `now` to `end`:
    /// schedules its arrival at every radio it reaches and its end at `src`.
    pub fn transmit(&mut self, now: SimTime, end: SimTime, src: NodeId, frame: Frame, mode: Mode) {
        let tx = self.bodies[src.index()].antenna(now, end);
        let bodies = &self.bodies;
        let radios = bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| b.radio)
            .map(|(i, b)| (NodeId(i as u32), b.position(now)));
        self.medium.rebin(now, radios);
        let tx_power = bodies[src.index()].tx_power;
        let antenna = |j: NodeId| {
            bodies[j.index()]
                .on
                .then(|| bodies[j.index()].antenna(now, end))
        };
        let mut reached = std::mem::take(&mut self.reached);
        let id = self.medium.transmit(
            now,
            end,
            src,
            tx,
            tx_power,
            frame,
            mode,
            antenna,
            &mut reached,
        );
        for &(rx, delay) in &reached {
            self.queue
                .schedule(now + delay, rx.0, Event::RxStart { node: rx, tx: id });
            self.queue
                .schedule(end + delay, rx.0, Event::RxEnd { node: rx, tx: id });
        }
        self.reached = reached;
        self.queue
            .schedule(end, src.0, Event::TxEnd { node: src, tx: id });
    }

    /// Transmission `id` as it reaches radio `rx`, from `now`.
    pub fn signal(&self, id: TxId, rx: NodeId, now: SimTime) -> Signal {
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
            header_bits: if t.mode.class == ModClass::Dsss {
                48
            } else {
                24
            },
            header_end: now + header_time,
            mode: t.mode,
            payload_bits: 8 * t.frame.psdu_bytes as u64,
            fades: Fades::FLAT,
        }
    }

    /// How the fading changes transmission `id` at `rx` over the frame
    /// (for the frame `rx` has locked on: its [`Signal`] starts flat).
    pub fn fades(&mut self, id: TxId, rx: NodeId) -> Fades {
        let t = self.medium.tx(id);
        let (src, start, end) = (t.src, t.start, t.end);
        let (ta, tb) = (
            self.bodies[src.index()].antenna(start, end),
            self.bodies[rx.index()].antenna(start, end),
        );
        self.medium
            .fades(src, &ta, rx, &tb, self.radio.ofdm_preamble_estimate)
    }

    /// Whether `node` should record what happens to frame `id` (addressed to
    /// it, or broadcast); overheard unicast is not traced, except by the sniffer.
    pub fn traced_at(&self, node: NodeId, id: TxId) -> bool {
        self.medium.tx(id).frame.dst.is_for(node) || self.sniffer == Some(node)
    }

    /// Schedules an application's start at its end.
    pub fn schedule_start(&mut self, s: Start) {
        let event = Event::App {
            node: s.from,
            app: s.app,
        };
        self.queue.schedule(s.at, s.from.0, event);
    }

    /// Records a connection event at `node` concerning `peer`.
    pub fn conn_event(
        &mut self,
        now: SimTime,
        node: NodeId,
        peer: u32,
        event: ConnEvent,
        value: f64,
    ) {
        let p = self.position(node, now);
        self.trace.events.push(EventRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer,
            event,
            x: p.x as f32,
            y: p.y as f32,
            value,
        });
    }

    /// Records that `node` lost frame `id` for `reason` (if it traces it).
    pub fn trace_drop(&mut self, now: SimTime, node: NodeId, id: TxId, reason: DropReason) {
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
    pub fn trace_frame(
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
        let peer = if event == PhyEvent::Tx {
            frame.dst.trace_id()
        } else {
            frame.src.0
        };
        let peer_pos = if peer == u32::MAX {
            Vec2::new(f64::NAN, f64::NAN)
        } else {
            self.position(NodeId(peer), now)
        };
        let (rssi, snr, sinr) = signal.map_or((f32::NAN, f32::NAN, f32::NAN), |(r, s, i)| {
            (r.0 as f32, s.0 as f32, i.0 as f32)
        });
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
            c.record(
                now,
                node,
                frame,
                mode,
                self.bodies[node.index()].channel,
                event,
                reason,
                signal.map(|s| s.0),
            );
        }
        self.trace.frames.len() - 1
    }

    /// The mean SNR (path loss and shadowing, no fast fading) of frames
    /// from `a` at `b` at `now`: the oracle some rate controllers are given.
    pub fn mean_snr(&mut self, a: NodeId, b: NodeId, now: SimTime) -> Db {
        let (ta, tb) = (
            self.bodies[a.index()].endpoint(now),
            self.bodies[b.index()].endpoint(now),
        );
        let power = self.bodies[a.index()].tx_power;
        let noise = self.medium.channel().noise_floor;
        self.medium.mean_rx_power(a, &ta, b, &tb, power) - noise
    }
}
