//! The 802.11 MAC of one station: DCF channel access (DIFS/EIFS, slotted
//! binary-exponential backoff that freezes while the medium is busy), ACK with
//! timeout, retries along the multi-rate retry chain that rate control fills,
//! optional RTS/CTS with the NAV, sequence numbers and duplicate filtering,
//! and a drop-tail transmit queue.
//!
//! The state lives in [`Mac`]; the transitions are `impl World` methods below
//! because each one may put a frame on the air. Management (beacons,
//! scanning, authentication, association) is in [`mgmt`].

pub mod mgmt;

use crate::event::{Event, MacTimer, NodeId};
use crate::net::Packet;
use crate::units::Dbm;
use mgmt::Mgmt;
use crate::phy::mode::{Mode, Timing};
use crate::mobility::Vec2;
use crate::ratectl::{RateControl, RateControlKind, RateControlSpec, RetryChain, RxObservation, SnrMap, Stage, TxRequest, TxStatus};
use crate::rng::Stream;
use crate::sim::World;
use crate::trace::{FrameKind, MacEvent, MacRow, TxOutcome};
use crate::units::SimTime;
use std::collections::VecDeque;

/// MAC header (24) and FCS (4) around a data frame body.
pub const DATA_OVERHEAD: u32 = 28;
pub const ACK_BYTES: u32 = 14;
pub const CTS_BYTES: u32 = 14;
pub const RTS_BYTES: u32 = 20;

/// Where a frame is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    Node(NodeId),
    Broadcast,
}

impl Dst {
    /// Whether a radio at `n` should take this frame as its own.
    pub fn is_for(self, n: NodeId) -> bool {
        match self {
            Dst::Node(d) => d == n,
            Dst::Broadcast => true,
        }
    }
    /// The node index recorded in traces; `u32::MAX` stands for broadcast.
    pub fn trace_id(self) -> u32 {
        match self {
            Dst::Node(d) => d.0,
            Dst::Broadcast => u32::MAX,
        }
    }
}

/// What an MSDU carries up the stack at the receiver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// Filler from a frame source; nothing above the MAC.
    Raw,
    /// A management frame body.
    Mgmt(Mgmt),
    /// An IP or ARP packet.
    Packet(Packet),
    /// Two packets to the same receiver in one Atheros fast frame.
    FastFrame(Packet, Packet),
}

impl Payload {
    fn kind(self) -> FrameKind {
        match self {
            Payload::Mgmt(m) => m.kind(),
            Payload::Raw | Payload::Packet(_) | Payload::FastFrame(..) => FrameKind::Data,
        }
    }
}

/// An 802.11 frame as far as the simulator needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub kind: FrameKind,
    pub src: NodeId,
    pub dst: Dst,
    pub seq: u16,
    pub retry: bool,
    /// 0-based transmission attempt of this MSDU.
    pub attempt: u8,
    pub psdu_bytes: u32,
    /// Duration field: how long others must defer after this frame.
    pub duration: SimTime,
    pub payload: Payload,
}

/// A unit of data handed to the MAC.
#[derive(Clone, Copy, Debug)]
pub struct Msdu {
    pub dst: Dst,
    pub bytes: u32,
    pub enqueued: SimTime,
    /// Send at this mode instead of asking rate control (sounders, broadcast).
    pub mode: Option<Mode>,
    /// Traffic source to tell when the MSDU is finished with.
    pub source: Option<u32>,
    pub payload: Payload,
}

#[derive(Clone, Debug)]
pub struct MacConfig {
    pub queue_limit: usize,
    pub short_retry_limit: u8,
    pub long_retry_limit: u8,
    /// Frames (PSDU) longer than this use RTS/CTS and the long retry limit.
    pub rts_threshold: u32,
    /// The rate-control algorithm every link of this MAC runs.
    pub rate: RateControlSpec,
    /// The standard's modes, ascending (rate control chooses among them).
    pub modes: &'static [Mode],
    /// Atheros fast frames: two queued packets to the same receiver go out
    /// as one frame when that frame's airtime at the chosen rate stays within
    /// this limit; `None` disables aggregation.
    pub fast_frames: Option<SimTime>,
}

/// Bytes an Atheros fast frame adds around its two subframes (the
/// fast-frame header and an 802.3 header per subframe, with padding).
pub const FAST_FRAME_OVERHEAD: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    None,
    Ack,
    Cts,
}

#[derive(Clone, Debug)]
struct Current {
    msdu: Msdu,
    chain: RetryChain,
    /// PSDU size the chain was asked for (before any fast-frame join): the
    /// outcome is reported at the same size, so that size-binned rate
    /// control updates the statistics it chose from.
    chain_bytes: u32,
    seq: u16,
    attempt: u32,
    rts: bool,
}

/// One station's MAC state.
pub struct Mac {
    cfg: MacConfig,
    timing: Timing,
    queue: VecDeque<Msdu>,
    current: Option<Current>,
    cw: u32,
    backoff: u32,
    backoff_pending: bool,
    medium_busy: bool,
    idle_since: SimTime,
    nav_until: SimTime,
    use_eifs: bool,
    generation: [u32; 4],
    grant_armed: bool,
    grant_start: SimTime,
    waiting: Waiting,
    timeout_deferred: bool,
    response: Option<(Frame, Mode)>,
    next_seq: u16,
    last_seq: Vec<(NodeId, u16)>,
    /// RSSI of the last frame received intact from each peer, and the
    /// position the peer was at (carried in the frame; kept only when the
    /// rate control learns per position).
    last_heard: Vec<(NodeId, Dbm, Option<Vec2>)>,
    /// Row of the `frames` trace recording the transmission now awaiting
    /// its ACK or CTS, to fill in its outcome.
    awaiting_row: Option<usize>,
    rate_controls: Vec<(NodeId, RateControlKind)>,
    rng: Stream,
    /// Seeds each link's rate-control stream: (seed, run, this node's name).
    rc_seed: (u64, u64, String),
}

fn timer_slot(t: MacTimer) -> usize {
    match t {
        MacTimer::AccessGrant => 0,
        MacTimer::ResponseTimeout => 1,
        MacTimer::SifsResponse => 2,
        MacTimer::NavEnd => 3,
    }
}

impl Mac {
    pub fn new(cfg: &MacConfig, timing: &Timing, rng: Stream, rc_seed: (u64, u64, String)) -> Mac {
        Mac {
            cfg: cfg.clone(),
            timing: *timing,
            queue: VecDeque::new(),
            current: None,
            cw: timing.cw_min,
            backoff: 0,
            backoff_pending: false,
            medium_busy: false,
            idle_since: SimTime::ZERO,
            nav_until: SimTime::ZERO,
            use_eifs: false,
            generation: [0; 4],
            grant_armed: false,
            grant_start: SimTime::ZERO,
            waiting: Waiting::None,
            timeout_deferred: false,
            response: None,
            next_seq: 0,
            last_seq: Vec::new(),
            last_heard: Vec::new(),
            awaiting_row: None,
            rate_controls: Vec::new(),
            rng,
            rc_seed,
        }
    }

    fn has_work(&self) -> bool {
        self.current.is_some() || !self.queue.is_empty()
    }

    fn ifs(&self) -> SimTime {
        if self.use_eifs {
            self.timing.eifs
        } else {
            self.timing.difs
        }
    }

    fn draw_backoff(&mut self) {
        self.backoff = self.rng.integer_inclusive(self.cw);
        self.backoff_pending = true;
    }

    /// The rate controller for frames to `dst`, created on first use.
    fn rate_control(&mut self, dst: NodeId) -> &mut RateControlKind {
        let i = match self.rate_controls.iter().position(|(d, _)| *d == dst) {
            Some(i) => i,
            None => {
                let (seed, run, name) = &self.rc_seed;
                let rng = Stream::new("run", *seed, *run, &format!("ratectl/{name}/{}", dst.0));
                self.rate_controls.push((dst, self.cfg.rate.build(self.cfg.modes, rng)));
                self.rate_controls.len() - 1
            }
        };
        &mut self.rate_controls[i].1
    }

    /// What an environment-aware MAC knows after this pass: the map it
    /// started from merged with what each of its links observed (`None`
    /// for other algorithms).
    pub(crate) fn learned_map(&self) -> Option<SnrMap> {
        let mut map = SnrMap::clone(self.cfg.rate.prior_map()?);
        for seen in self.rate_controls.iter().filter_map(|(_, rc)| rc.observed_map()) {
            map.merge(seen);
        }
        Some(map)
    }

    fn arm(&mut self, timer: MacTimer) -> u32 {
        let s = timer_slot(timer);
        self.generation[s] = self.generation[s].wrapping_add(1);
        self.generation[s]
    }

    fn cancel(&mut self, timer: MacTimer) {
        self.arm(timer);
    }
}

impl World {
    fn schedule_mac(&mut self, at: SimTime, node: NodeId, timer: MacTimer) {
        let generation = self.nodes[node.index()].mac.arm(timer);
        self.queue.schedule(at, node.0, Event::Mac { node, timer, generation });
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

    /// Hands an MSDU to `node`'s MAC; false if the queue was full (the drop is traced).
    pub(crate) fn mac_enqueue(&mut self, now: SimTime, node: NodeId, msdu: Msdu) -> bool {
        let mac = &mut self.nodes[node.index()].mac;
        if mac.queue.len() >= mac.cfg.queue_limit {
            self.mac_trace(now, node, msdu.dst.trace_id(), MacEvent::QueueDrop, 0, msdu.bytes, 0, SimTime::ZERO);
            return false;
        }
        mac.queue.push_back(msdu);
        self.mac_request_access(now, node);
        true
    }

    /// Whether `node`'s transmit queue is at its limit.
    pub(crate) fn mac_queue_full(&self, node: NodeId) -> bool {
        let mac = &self.nodes[node.index()].mac;
        mac.queue.len() >= mac.cfg.queue_limit
    }

    /// Hands a management MSDU to the MAC, bypassing the queue limit; `front`
    /// puts it ahead of queued data (beacons, probe requests).
    pub(crate) fn mac_enqueue_mgmt(&mut self, now: SimTime, node: NodeId, msdu: Msdu, front: bool) {
        let mac = &mut self.nodes[node.index()].mac;
        if front {
            mac.queue.push_front(msdu);
        } else {
            mac.queue.push_back(msdu);
        }
        self.mac_request_access(now, node);
    }

    /// Drops everything queued or in progress (the radio is changing channel).
    pub(crate) fn mac_flush(&mut self, now: SimTime, node: NodeId) {
        self.mac_answer(node, TxOutcome::Unacked);
        let mac = &mut self.nodes[node.index()].mac;
        let dropped: Vec<Msdu> = mac.queue.drain(..).chain(mac.current.take().map(|c| c.msdu)).collect();
        mac.waiting = Waiting::None;
        mac.timeout_deferred = false;
        mac.response = None;
        mac.grant_armed = false;
        mac.nav_until = SimTime::ZERO;
        for t in [MacTimer::AccessGrant, MacTimer::ResponseTimeout, MacTimer::SifsResponse, MacTimer::NavEnd] {
            mac.cancel(t);
        }
        for m in dropped {
            if !matches!(m.payload, Payload::Mgmt(_)) {
                self.mac_trace(now, node, m.dst.trace_id(), MacEvent::QueueDrop, 0, m.bytes, 0, SimTime::ZERO);
            }
        }
    }

    /// Starts or resumes contention if the MAC has something to send.
    fn mac_request_access(&mut self, now: SimTime, node: NodeId) {
        let mac = &mut self.nodes[node.index()].mac;
        if !mac.has_work() || mac.waiting != Waiting::None || mac.response.is_some() || mac.grant_armed {
            return;
        }
        if mac.medium_busy {
            if !mac.backoff_pending {
                mac.draw_backoff();
            }
            return;
        }
        let start = mac.idle_since + mac.ifs();
        let at = if mac.backoff_pending { start + mac.timing.slot * mac.backoff as u64 } else { start };
        mac.grant_armed = true;
        mac.grant_start = start;
        self.schedule_mac(at.max(now), node, MacTimer::AccessGrant);
    }

    /// Re-evaluates physical and virtual carrier sense after anything that may
    /// have changed them, freezing or resuming backoff.
    pub(crate) fn medium_update(&mut self, now: SimTime, node: NodeId) {
        let n = &mut self.nodes[node.index()];
        let busy = n.phy.busy() || n.mac.nav_until > now;
        let mac = &mut n.mac;
        if busy == mac.medium_busy {
            return;
        }
        mac.medium_busy = busy;
        if busy {
            if mac.grant_armed {
                if now > mac.grant_start && mac.backoff_pending {
                    let elapsed = ((now - mac.grant_start).as_ns() / mac.timing.slot.as_ns()) as u32;
                    mac.backoff -= elapsed.min(mac.backoff);
                }
                mac.grant_armed = false;
                mac.cancel(MacTimer::AccessGrant);
                if !mac.backoff_pending {
                    mac.draw_backoff();
                }
            }
        } else {
            mac.idle_since = now;
            self.mac_request_access(now, node);
        }
    }

    pub(crate) fn on_mac_timer(&mut self, now: SimTime, node: NodeId, timer: MacTimer, generation: u32) {
        if self.nodes[node.index()].mac.generation[timer_slot(timer)] != generation {
            return;
        }
        match timer {
            MacTimer::AccessGrant => self.mac_access_granted(now, node),
            MacTimer::ResponseTimeout => {
                let n = &mut self.nodes[node.index()];
                if n.phy.receiving().is_some() {
                    n.mac.timeout_deferred = true;
                } else {
                    self.mac_attempt_failed(now, node);
                }
            }
            MacTimer::SifsResponse => {
                if let Some((frame, mode)) = self.nodes[node.index()].mac.response.take() {
                    self.transmit(now, node, frame, mode);
                }
            }
            MacTimer::NavEnd => self.medium_update(now, node),
        }
    }

    fn mac_access_granted(&mut self, now: SimTime, node: NodeId) {
        let mac = &mut self.nodes[node.index()].mac;
        mac.grant_armed = false;
        mac.backoff_pending = false;
        mac.backoff = 0;
        if mac.current.is_none() && !self.mac_next_msdu(now, node) {
            return;
        }
        let rts = self.nodes[node.index()].mac.current.as_ref().expect("current frame").rts;
        if rts {
            let (frame, mode) = self.rts_frame(node);
            self.nodes[node.index()].mac.waiting = Waiting::Cts;
            self.transmit(now, node, frame, mode);
        } else {
            let (frame, mode) = self.data_frame(node);
            self.transmit(now, node, frame, mode);
        }
    }

    /// Takes the next MSDU off the queue (joining two into a fast frame where
    /// enabled) with its retry chain; false if the queue is empty.
    fn mac_next_msdu(&mut self, now: SimTime, node: NodeId) -> bool {
        let Some(msdu) = self.nodes[node.index()].mac.queue.pop_front() else { return false };
        let chain_bytes = msdu.bytes + DATA_OVERHEAD;
        let chain = match (msdu.mode, msdu.dst) {
            (Some(mode), _) => RetryChain { stages: vec![Stage { mode, tries: 1 }] },
            (None, Dst::Broadcast) => {
                let mode = self.radio.standard.basic_rates()[0];
                RetryChain { stages: vec![Stage { mode, tries: 1 }] }
            }
            (None, Dst::Node(d)) => {
                let mean_snr = self.mean_snr(node, d, now);
                let position = self.position(node, now);
                let n = &mut self.nodes[node.index()];
                let tx_power = n.cfg.tx_power;
                let heard = n.mac.last_heard.iter().find(|(p, ..)| *p == d);
                let (rssi, peer_position) = (heard.map(|h| h.1), heard.and_then(|h| h.2));
                n.mac.rate_control(d).retry_chain(&TxRequest { now, bytes: chain_bytes, rssi, mean_snr, tx_power, position, peer_position })
            }
        };
        let mac = &mut self.nodes[node.index()].mac;
        let msdu = match (mac.cfg.fast_frames, msdu.payload, mac.queue.front()) {
            (Some(limit), Payload::Packet(a), Some(&Msdu { payload: Payload::Packet(b), dst, mode: None, bytes, .. }))
                if dst == msdu.dst && msdu.mode.is_none() && matches!(dst, Dst::Node(_)) =>
            {
                let joined = msdu.bytes + bytes + FAST_FRAME_OVERHEAD;
                let airtime = chain.stages[0].mode.airtime(joined + DATA_OVERHEAD, self.radio.preamble, self.radio.standard);
                if airtime <= limit {
                    mac.queue.pop_front();
                    Msdu { bytes: joined, payload: Payload::FastFrame(a, b), ..msdu }
                } else {
                    msdu
                }
            }
            _ => msdu,
        };
        let psdu = msdu.bytes + DATA_OVERHEAD;
        let seq = mac.next_seq;
        mac.next_seq = (mac.next_seq + 1) % 4096;
        let rts = matches!(msdu.dst, Dst::Node(_)) && psdu > mac.cfg.rts_threshold;
        mac.current = Some(Current { msdu, chain, chain_bytes, seq, attempt: 0, rts });
        true
    }

    /// Airtime of a control response (ACK or CTS) to a frame sent at `mode`.
    fn response_airtime(&self, mode: &Mode, bytes: u32) -> SimTime {
        let ctl = self.radio.standard.control_rate(*mode);
        ctl.airtime(bytes, self.radio.preamble, self.radio.standard)
    }

    fn current_mode(&self, node: NodeId) -> Mode {
        let cur = self.nodes[node.index()].mac.current.as_ref().expect("current frame");
        let stage = cur.chain.stage_of(cur.attempt).unwrap_or(cur.chain.stages.len() - 1);
        cur.chain.stages[stage].mode
    }

    /// A frame of `kind` for the current MSDU's attempt.
    fn current_frame(&self, node: NodeId, kind: Option<FrameKind>, psdu_bytes: u32, duration: SimTime) -> Frame {
        let cur = self.nodes[node.index()].mac.current.as_ref().expect("current frame");
        Frame {
            kind: kind.unwrap_or(cur.msdu.payload.kind()),
            src: node,
            dst: cur.msdu.dst,
            seq: cur.seq,
            retry: cur.attempt > 0,
            attempt: cur.attempt.min(255) as u8,
            psdu_bytes,
            duration,
            payload: cur.msdu.payload,
        }
    }

    fn current_psdu(&self, node: NodeId) -> u32 {
        self.nodes[node.index()].mac.current.as_ref().expect("current frame").msdu.bytes + DATA_OVERHEAD
    }

    fn data_frame(&self, node: NodeId) -> (Frame, Mode) {
        let mode = self.current_mode(node);
        let unicast = matches!(self.nodes[node.index()].mac.current.as_ref().expect("current frame").msdu.dst, Dst::Node(_));
        let duration = if unicast { self.timing.sifs + self.response_airtime(&mode, ACK_BYTES) } else { SimTime::ZERO };
        (self.current_frame(node, None, self.current_psdu(node), duration), mode)
    }

    fn rts_frame(&self, node: NodeId) -> (Frame, Mode) {
        let mode = self.current_mode(node);
        let data = mode.airtime(self.current_psdu(node), self.radio.preamble, self.radio.standard);
        let duration = self.timing.sifs * 3 + self.response_airtime(&mode, CTS_BYTES) + data + self.response_airtime(&mode, ACK_BYTES);
        (self.current_frame(node, Some(FrameKind::Rts), RTS_BYTES, duration), self.radio.standard.control_rate(mode))
    }

    pub(crate) fn mac_tx_end(&mut self, now: SimTime, node: NodeId, frame: Frame) {
        let timeout = self.timing.ack_timeout;
        let control = matches!(frame.kind, FrameKind::Ack | FrameKind::Cts);
        if !control && self.nodes[node.index()].mac.current.is_none() {
            // The radio changed channel while this frame was on the air and
            // the MAC dropped it: nothing to wait for.
            return;
        }
        match (frame.kind, frame.dst) {
            (FrameKind::Ack | FrameKind::Cts, _) => self.mac_request_access(now, node),
            (FrameKind::Rts, _) => self.schedule_mac(now + timeout, node, MacTimer::ResponseTimeout),
            (_, Dst::Node(_)) => {
                self.nodes[node.index()].mac.waiting = Waiting::Ack;
                self.schedule_mac(now + timeout, node, MacTimer::ResponseTimeout);
            }
            (_, Dst::Broadcast) => self.mac_finish(now, node, true),
        }
    }

    pub(crate) fn mac_rx_end(&mut self, now: SimTime, node: NodeId, frame: Frame, mode: Mode, ok: bool, rssi: Dbm) {
        let mac = &mut self.nodes[node.index()].mac;
        mac.use_eifs = !ok;
        let awaited = ok
            && frame.dst.is_for(node)
            && matches!((frame.kind, mac.waiting), (FrameKind::Ack, Waiting::Ack) | (FrameKind::Cts, Waiting::Cts));
        // The response timeout fired while this frame was arriving: unless it
        // is the awaited response, the attempt has failed.
        if mac.timeout_deferred && !awaited {
            self.mac_attempt_failed(now, node);
        }
        if !ok {
            return;
        }
        // Only a controller that learns per position needs where the peer was.
        let learns = self.nodes[node.index()].mac.cfg.rate.prior_map().is_some();
        let peer_position = learns.then(|| self.position(frame.src, now));
        let n = &mut self.nodes[node.index()];
        match n.mac.last_heard.iter_mut().find(|(p, ..)| *p == frame.src) {
            Some(e) => *e = (frame.src, rssi, peer_position),
            None => n.mac.last_heard.push((frame.src, rssi, peer_position)),
        }
        if let (Some(peer_position), Dst::Node(to)) = (peer_position, frame.dst) {
            if to == node {
                let peer_tx_power = self.nodes[frame.src.index()].cfg.tx_power;
                let obs = RxObservation { now, snr: rssi - self.channel.noise_floor, peer_tx_power, peer_position };
                self.nodes[node.index()].mac.rate_control(frame.src).observe(&obs);
            }
        }
        if awaited {
            self.mac_answer(node, TxOutcome::Acked);
        }
        let mac = &mut self.nodes[node.index()].mac;
        if !frame.dst.is_for(node) {
            if frame.duration > SimTime::ZERO {
                let until = now + frame.duration;
                if until > mac.nav_until {
                    mac.nav_until = until;
                    self.schedule_mac(until, node, MacTimer::NavEnd);
                }
            }
            return;
        }
        match frame.kind {
            FrameKind::Ack if awaited => self.mac_finish(now, node, true),
            FrameKind::Cts if awaited => {
                let mac = &mut self.nodes[node.index()].mac;
                mac.waiting = Waiting::None;
                mac.timeout_deferred = false;
                mac.cancel(MacTimer::ResponseTimeout);
                let (data, mode) = self.data_frame(node);
                self.nodes[node.index()].mac.response = Some((data, mode));
                self.schedule_mac(now + self.timing.sifs, node, MacTimer::SifsResponse);
            }
            FrameKind::Rts => {
                if mac.nav_until <= now {
                    let cts_time = self.response_airtime(&mode, CTS_BYTES);
                    let duration = frame.duration.saturating_sub(self.timing.sifs + cts_time);
                    let cts = Frame {
                        kind: FrameKind::Cts,
                        src: node,
                        dst: Dst::Node(frame.src),
                        seq: 0,
                        retry: false,
                        attempt: 0,
                        psdu_bytes: CTS_BYTES,
                        duration,
                        payload: Payload::Raw,
                    };
                    let ctl = self.radio.standard.control_rate(mode);
                    self.nodes[node.index()].mac.response = Some((cts, ctl));
                    self.schedule_mac(now + self.timing.sifs, node, MacTimer::SifsResponse);
                }
            }
            FrameKind::Ack | FrameKind::Cts => {}
            _ => self.mac_receive_msdu(now, node, frame, mode, rssi),
        }
    }

    /// A data or management frame for this node (or broadcast) arrived intact.
    fn mac_receive_msdu(&mut self, now: SimTime, node: NodeId, frame: Frame, mode: Mode, rssi: Dbm) {
        let body = frame.psdu_bytes - DATA_OVERHEAD;
        self.mgmt_heard(now, node, frame.src);
        let Dst::Node(_) = frame.dst else {
            if frame.kind == FrameKind::Data {
                self.mac_trace(now, node, frame.src.0, MacEvent::Received, frame.seq, body, 0, SimTime::ZERO);
            }
            self.mac_deliver(now, node, frame, rssi);
            return;
        };
        let ack = Frame {
            kind: FrameKind::Ack,
            src: node,
            dst: Dst::Node(frame.src),
            seq: 0,
            retry: false,
            attempt: 0,
            psdu_bytes: ACK_BYTES,
            duration: SimTime::ZERO,
            payload: Payload::Raw,
        };
        let ctl = self.radio.standard.control_rate(mode);
        let mac = &mut self.nodes[node.index()].mac;
        mac.response = Some((ack, ctl));
        let duplicate = match mac.last_seq.iter_mut().find(|(s, _)| *s == frame.src) {
            Some((_, last)) => {
                let dup = frame.retry && *last == frame.seq;
                *last = frame.seq;
                dup
            }
            None => {
                mac.last_seq.push((frame.src, frame.seq));
                false
            }
        };
        self.schedule_mac(now + self.timing.sifs, node, MacTimer::SifsResponse);
        let event = if duplicate { MacEvent::Duplicate } else { MacEvent::Received };
        if frame.kind == FrameKind::Data {
            self.mac_trace(now, node, frame.src.0, event, frame.seq, body, frame.attempt as u32 + 1, SimTime::ZERO);
        }
        if !duplicate {
            self.mac_deliver(now, node, frame, rssi);
        }
    }

    /// Hands a received MSDU to management or the network layer.
    fn mac_deliver(&mut self, now: SimTime, node: NodeId, frame: Frame, rssi: Dbm) {
        match frame.payload {
            Payload::Mgmt(m) => self.mgmt_rx(now, node, frame.src, m, rssi),
            Payload::Packet(p) => self.net_rx_wireless(now, node, frame.src, p),
            Payload::FastFrame(a, b) => {
                self.net_rx_wireless(now, node, frame.src, a);
                self.net_rx_wireless(now, node, frame.src, b);
            }
            Payload::Raw => {}
        }
    }

    /// Records in the `frames` trace whether the transmission awaiting a
    /// response got it.
    fn mac_answer(&mut self, node: NodeId, outcome: TxOutcome) {
        if let Some(row) = self.nodes[node.index()].mac.awaiting_row.take() {
            self.trace.frames.set_outcome(row, outcome);
        }
    }

    /// Notes the `frames` row of a unicast data, management or RTS frame
    /// just sent, whose outcome the ACK or CTS (or its absence) decides.
    pub(crate) fn mac_sent(&mut self, node: NodeId, frame: &Frame, row: usize) {
        if matches!(frame.dst, Dst::Node(_)) && !matches!(frame.kind, FrameKind::Ack | FrameKind::Cts) {
            self.nodes[node.index()].mac.awaiting_row = Some(row);
        }
    }

    /// Station `node` heard a beacon from `ap`: an environment-aware AP's
    /// beacon carries its map, which the station's controller for the AP
    /// takes as a hint if it is set to.
    pub(crate) fn mac_beacon_hint(&mut self, node: NodeId, ap: NodeId) {
        let Some(map) = self.nodes[ap.index()].mac.cfg.rate.advertised_map().cloned() else { return };
        let mac = &mut self.nodes[node.index()].mac;
        if matches!(&mac.cfg.rate, RateControlSpec::EnvAware(p) if p.beacon_hints) {
            mac.rate_control(ap).beacon_hint(&map);
        }
    }

    /// The current attempt got no response.
    fn mac_attempt_failed(&mut self, now: SimTime, node: NodeId) {
        self.mac_answer(node, TxOutcome::Unacked);
        let mac = &mut self.nodes[node.index()].mac;
        mac.waiting = Waiting::None;
        mac.timeout_deferred = false;
        mac.cancel(MacTimer::ResponseTimeout);
        let cur = mac.current.as_mut().expect("failed attempt of a current frame");
        cur.attempt += 1;
        if cur.attempt >= cur.chain.total_tries() {
            self.mac_finish(now, node, false);
            return;
        }
        mac.cw = (2 * mac.cw + 1).min(mac.timing.cw_max);
        mac.draw_backoff();
        self.mac_request_access(now, node);
    }

    /// The current MSDU is done: acknowledged (or broadcast), or given up.
    fn mac_finish(&mut self, now: SimTime, node: NodeId, delivered: bool) {
        let mac = &mut self.nodes[node.index()].mac;
        mac.waiting = Waiting::None;
        mac.timeout_deferred = false;
        mac.cancel(MacTimer::ResponseTimeout);
        let mut cur = mac.current.take().expect("finished frame");
        let attempts = if delivered { cur.attempt + 1 } else { cur.attempt };
        if let Dst::Node(d) = cur.msdu.dst {
            if cur.msdu.mode.is_none() {
                let status = TxStatus { now, bytes: cur.chain_bytes, chain: std::mem::take(&mut cur.chain), attempts, acked: delivered };
                mac.rate_control(d).report(&status);
            }
        }
        mac.cw = mac.timing.cw_min;
        mac.draw_backoff();
        let event = if delivered { MacEvent::Delivered } else { MacEvent::Failed };
        let delay = now - cur.msdu.enqueued;
        if !matches!(cur.msdu.payload, Payload::Mgmt(_)) {
            self.mac_trace(now, node, cur.msdu.dst.trace_id(), event, cur.seq, cur.msdu.bytes, attempts, delay);
        }
        if let Some(source) = cur.msdu.source {
            self.on_msdu_done(now, source);
        }
        self.apps_mac_ready(now, node);
        self.mac_request_access(now, node);
    }
}
