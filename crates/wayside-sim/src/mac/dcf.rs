//! Channel access of one station: 802.11's DCF as a sans-IO state machine.
//!
//! DIFS/EIFS, slotted binary-exponential backoff that freezes while the
//! medium is busy (physical carrier sense from the PHY, virtual from the
//! NAV), ACK with timeout, retries along the multi-rate retry chain that
//! link adaptation fills ([`super::links`]), optional RTS/CTS, sequence
//! numbers and duplicate filtering, a data queue of the node's kind
//! ([`super::queue`]) and a management queue served ahead of it (as madwifi
//! and mac80211 send management frames on a higher-priority hardware
//! queue). With aggregation on, data to a peer goes in A-MPDUs with Block
//! Ack (`agg`).
//!
//! Inputs: [`Dcf::enqueue`], [`Dcf::handle_medium`] (carrier sense changed),
//! [`Dcf::handle_timeout`], [`Dcf::handle_tx_end`], [`Dcf::handle_rx_end`],
//! [`Dcf::flush`]. Outputs, drained after every input:
//! [`Dcf::poll_transmit`] (a frame to put on the air now),
//! [`Dcf::poll_timer`] (a timer to arm; a re-armed or cancelled timer makes
//! its earlier expiry stale, recognised by its generation) and
//! [`Dcf::poll_event`] (what the layers above and the trace need to know).

mod agg;
mod fast_frames;

use super::ampdu::{Originator, Pending, BAR_BYTES, BA_BYTES};
use super::links::{Links, Whereabouts};
use super::queue::{DropCause, Queued, TxQueue};
use super::reorder::Reorder;
use super::{Frame, MacConfig, Msdu, Payload, ACK_BYTES, CTS_BYTES, DATA_OVERHEAD, RTS_BYTES};
use crate::ids::{Dst, NodeId};
use crate::phy::mode::{Mode, Preamble, Standard, Timing};
use crate::ratectl::{RetryChain, Stage, TxStatus};
use crate::rng::Stream;
use crate::trace::{FrameKind, TxOutcome};
use crate::units::{Dbm, SimTime};
use std::collections::VecDeque;

/// The DCF's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MacTimer {
    /// Backoff has counted down: the station may transmit.
    AccessGrant,
    /// No ACK (or CTS) arrived in time.
    ResponseTimeout,
    /// SIFS has elapsed: send the pending ACK, CTS or the data after a CTS.
    SifsResponse,
    /// The network allocation vector has expired.
    NavEnd,
    /// SIFS after an acknowledged frame inside a TXOP: the next frame may
    /// follow without contending.
    TxopNext,
    /// An MPDU in a reorder buffer has waited long enough behind a gap.
    ReorderTimeout,
}

impl MacTimer {
    const ALL: [MacTimer; 6] = [
        MacTimer::AccessGrant,
        MacTimer::ResponseTimeout,
        MacTimer::SifsResponse,
        MacTimer::NavEnd,
        MacTimer::TxopNext,
        MacTimer::ReorderTimeout,
    ];
    fn slot(self) -> usize {
        self as usize
    }
}

/// Where channel access stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcfState {
    /// Not counting down: nothing to send, or the medium is busy (a pending
    /// backoff is frozen), or our own frame is on the air.
    Idle,
    /// The medium is idle and the station counts down from `since` (the
    /// end of the last busy period plus DIFS or EIFS); `AccessGrant` is armed.
    Contending { since: SimTime },
    /// Waiting for the CTS to our RTS.
    AwaitingCts { timed_out: bool },
    /// Waiting for the ACK to our unicast frame. `timed_out`: the response
    /// timeout fired while a frame was arriving, which decides the attempt
    /// when it ends.
    AwaitingAck { timed_out: bool },
}

/// What the DCF tells the layers above and the trace.
#[derive(Clone, Debug, PartialEq)]
pub enum DcfEvent {
    /// An MSDU was given up by the queue: full, dropped by CoDel, or
    /// flushed (retune).
    QueueDrop { msdu: Msdu, cause: DropCause },
    /// An MSDU is done: acknowledged (broadcast: sent) or its chain exhausted.
    Done {
        msdu: Msdu,
        seq: u16,
        delivered: bool,
        attempts: u32,
        delay: SimTime,
    },
    /// A data or management frame for this node arrived intact at `rssi`;
    /// a retransmission already received is flagged `duplicate` (and not
    /// to be handed up).
    Received {
        frame: Frame,
        rssi: Dbm,
        duplicate: bool,
    },
    /// The transmission awaiting a response got it, or did not (also
    /// reported when nothing awaits one: a flush, a failed attempt).
    Response(TxOutcome),
}

#[derive(Clone, Debug)]
struct Current {
    msdu: Msdu,
    chain: RetryChain,
    /// PSDU size the chain was asked for (before any fast-frame join): the
    /// outcome is reported at the same size, so that size-binned rate
    /// control updates the statistics it chose from.
    chain_bytes: u32,
    /// The PSDU's length on the air.
    psdu: u32,
    seq: u16,
    attempt: u32,
    rts: bool,
    /// An aggregate's MSDUs (`msdu` then only sums them up), each
    /// starting at `starts` in the PSDU; empty for a single frame.
    mpdus: Vec<Pending>,
    starts: Vec<u32>,
}

/// madwifi's `ATH_FF_TXQMIN` (`net80211/if_athproto.h`, 3 "due to
/// interaction with HW compression"; FreeBSD's driver uses 2): the
/// transmit queue depth from which a packet is held back to be joined with
/// the next one (`athff_can_aggregate`); an MSDU that found a shorter queue
/// goes out alone. When a transmission completes and the queue is down to
/// `FF_TXQ_MIN − 1` frames, a packet still waiting for a partner goes
/// alone too (`ath_tx_processq` flushes the staging queue).
const FF_TXQ_MIN: usize = 3;

/// The radio settings airtime computations need.
#[derive(Clone, Copy, Debug)]
pub struct Air {
    pub standard: Standard,
    pub preamble: Preamble,
    /// The lowest basic rate: broadcasts go at it, control responses at a
    /// basic rate from it up ([`Standard::control_rate_from`]).
    pub basic: Mode,
}

/// One station's channel access.
pub struct Dcf {
    cfg: MacConfig,
    timing: Timing,
    air: Air,
    me: NodeId,
    state: DcfState,
    data: TxQueue,
    mgmt: VecDeque<Msdu>,
    current: Option<Current>,
    cw: u32,
    /// Backoff slots still to count, if a backoff is pending.
    backoff: Option<u32>,
    medium_busy: bool,
    idle_since: SimTime,
    nav_until: SimTime,
    /// The last frame heard was corrupted: defer EIFS instead of DIFS.
    use_eifs: bool,
    /// An ACK, CTS, or the data after a CTS, due SIFS after a reception.
    response: Option<(Frame, Mode)>,
    next_seq: u16,
    last_seq: Vec<(NodeId, u16)>,
    generation: [u32; 6],
    /// The end of the TXOP this station holds, if it bursts and holds one.
    txop_until: Option<SimTime>,
    /// `TxopNext` is armed: contention waits for it.
    burst_pending: bool,
    links: Links,
    /// Block-ack sessions as originator, if aggregation is on.
    originator: Option<Originator>,
    /// Reorder buffers as recipient, per originator.
    recipients: Vec<(NodeId, Reorder)>,
    /// Per subframe, whether the A-MPDU being handed in decoded.
    rx_parts: Vec<bool>,
    rng: Stream,
    tx_power: Dbm,
    transmits: VecDeque<(Frame, Mode)>,
    timers: VecDeque<(MacTimer, SimTime, u32)>,
    events: VecDeque<DcfEvent>,
}

impl Dcf {
    pub fn new(
        me: NodeId,
        cfg: MacConfig,
        timing: Timing,
        air: Air,
        links: Links,
        rng: Stream,
        tx_power: Dbm,
    ) -> Dcf {
        Dcf {
            data: TxQueue::new(cfg.queue, cfg.queue_limit),
            originator: cfg.ampdu.map(Originator::new),
            recipients: Vec::new(),
            rx_parts: Vec::new(),
            cw: timing.cw_min,
            cfg,
            timing,
            air,
            me,
            state: DcfState::Idle,
            mgmt: VecDeque::new(),
            current: None,
            backoff: None,
            medium_busy: false,
            idle_since: SimTime::ZERO,
            nav_until: SimTime::ZERO,
            use_eifs: false,
            response: None,
            next_seq: 0,
            last_seq: Vec::new(),
            generation: [0; 6],
            txop_until: None,
            burst_pending: false,
            links,
            rng,
            tx_power,
            transmits: VecDeque::new(),
            timers: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn state(&self) -> DcfState {
        self.state
    }

    pub fn links(&self) -> &Links {
        &self.links
    }

    /// The radio's standard, preamble and basic rate.
    pub fn air(&self) -> &Air {
        &self.air
    }

    /// The power this station transmits at.
    pub fn tx_power(&self) -> Dbm {
        self.tx_power
    }

    pub fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }

    /// How many more MSDUs the data queue takes before its limit.
    pub fn queue_room(&self) -> usize {
        self.data.room()
    }

    /// The data queue's counters.
    pub fn queue_stats(&self) -> &super::queue::QueueStats {
        self.data.stats()
    }

    /// What the data queue dropped, as events.
    fn queue_drops(&mut self) {
        for (msdu, cause) in self.data.take_dropped() {
            self.events.push_back(DcfEvent::QueueDrop { msdu, cause });
        }
    }

    // ------------------------------------------------------------ outputs

    pub fn poll_transmit(&mut self) -> Option<(Frame, Mode)> {
        self.transmits.pop_front()
    }

    /// A timer to arm at a time, with the generation its expiry must carry.
    pub fn poll_timer(&mut self) -> Option<(MacTimer, SimTime, u32)> {
        self.timers.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<DcfEvent> {
        self.events.pop_front()
    }

    /// Whether an expiry of `timer` armed with `generation` is still current.
    pub fn is_current(&self, timer: MacTimer, generation: u32) -> bool {
        self.generation[timer.slot()] == generation
    }

    fn arm(&mut self, at: SimTime, timer: MacTimer) {
        let g = &mut self.generation[timer.slot()];
        *g = g.wrapping_add(1);
        self.timers.push_back((timer, at, *g));
    }

    fn cancel(&mut self, timer: MacTimer) {
        let g = &mut self.generation[timer.slot()];
        *g = g.wrapping_add(1);
    }

    // ------------------------------------------------------------ inputs

    /// Hands a data MSDU to the MAC; a full queue drops it (a `QueueDrop`
    /// event) and returns false.
    pub fn enqueue(&mut self, now: SimTime, msdu: Msdu) -> bool {
        let ahead = self.data.len() + usize::from(self.current.is_some());
        let queued = Queued {
            msdu,
            stageable: ahead >= FF_TXQ_MIN,
        };
        let taken = self.data.push(now, queued);
        self.queue_drops();
        if taken {
            self.request_access(now);
        }
        taken
    }

    /// Hands a management MSDU to the MAC (no queue limit); `front` puts it
    /// ahead of everything queued (beacons, probe requests).
    pub fn enqueue_mgmt(&mut self, now: SimTime, msdu: Msdu, front: bool) {
        if front {
            self.mgmt.push_front(msdu);
        } else {
            self.mgmt.push_back(msdu);
        }
        self.request_access(now);
    }

    /// Drops everything queued or in progress (the radio is changing channel).
    pub fn flush(&mut self) {
        self.events
            .push_back(DcfEvent::Response(TxOutcome::Unacked));
        self.data.flush();
        let current = self.current.take().map(|c| {
            if c.mpdus.is_empty() {
                vec![c.msdu]
            } else {
                c.mpdus.into_iter().map(|p| p.msdu).collect()
            }
        });
        let retries = self.originator.as_mut().map(|o| o.flush());
        let dropped: Vec<Msdu> = self
            .mgmt
            .drain(..)
            .filter(|m| !matches!(m.payload, Payload::BlockAckReq { .. }))
            .chain(self.data.take_dropped().map(|(m, _)| m))
            .chain(current.into_iter().flatten())
            .chain(retries.into_iter().flatten())
            .collect();
        self.state = DcfState::Idle;
        self.response = None;
        self.nav_until = SimTime::ZERO;
        self.txop_until = None;
        self.burst_pending = false;
        for t in MacTimer::ALL {
            self.cancel(t);
        }
        for msdu in dropped {
            let cause = DropCause::Flush;
            self.events.push_back(DcfEvent::QueueDrop { msdu, cause });
        }
    }

    /// Physical carrier sense is now `phy_busy`: re-evaluates the medium
    /// (with the NAV), freezing or resuming backoff.
    /// Whether [`Dcf::handle_medium`] would see the medium change.
    pub fn medium_changes(&self, now: SimTime, phy_busy: bool) -> bool {
        (phy_busy || self.nav_until > now) != self.medium_busy
    }

    pub fn handle_medium(&mut self, now: SimTime, phy_busy: bool) {
        let busy = phy_busy || self.nav_until > now;
        if busy == self.medium_busy {
            return;
        }
        self.medium_busy = busy;
        if busy {
            if let DcfState::Contending { since } = self.state {
                if now > since {
                    if let Some(b) = &mut self.backoff {
                        let elapsed = ((now - since).as_ns() / self.timing.slot.as_ns()) as u32;
                        *b -= elapsed.min(*b);
                    }
                }
                self.state = DcfState::Idle;
                self.cancel(MacTimer::AccessGrant);
                if self.backoff.is_none() {
                    self.draw_backoff();
                }
            }
        } else {
            self.idle_since = now;
            self.request_access(now);
        }
    }

    /// The peer a retry chain will be asked for if `timer` fires now: the
    /// receiver of the MSDU the timer takes next, if rate control chooses
    /// its rates (unicast, no fixed stage). The caller then gives
    /// [`Dcf::handle_timeout`] this node's whereabouts. (A flow queue
    /// picks that MSDU here.)
    pub fn chain_peer(&mut self, now: SimTime, timer: MacTimer) -> Option<NodeId> {
        let takes = matches!(timer, MacTimer::AccessGrant | MacTimer::TxopNext);
        if !takes || self.current.is_some() {
            return None;
        }
        let retry = self.originator.as_ref().and_then(|o| o.retry_peer());
        let next = match (self.mgmt.front(), retry) {
            (Some(m), _) => Some((m.fixed, m.dst)),
            (None, Some(peer)) => Some((None, Dst::Node(peer))),
            (None, None) => self.data.peek(now).map(|q| (q.msdu.fixed, q.msdu.dst)),
        };
        self.queue_drops();
        match next? {
            (None, Dst::Node(peer)) => Some(peer),
            _ => None,
        }
    }

    /// A timer armed with `generation` expired (call only if current);
    /// `receiving`: the PHY is locked on a frame now; `known`: this node's
    /// whereabouts, given when [`Dcf::chain_peer`] names a peer.
    pub fn handle_timeout(
        &mut self,
        now: SimTime,
        timer: MacTimer,
        receiving: bool,
        phy_busy: bool,
        known: Option<Whereabouts>,
    ) {
        match timer {
            MacTimer::AccessGrant => self.access_granted(now, known),
            MacTimer::ResponseTimeout => match self.state {
                DcfState::AwaitingAck { .. } | DcfState::AwaitingCts { .. } if receiving => {
                    self.state = match self.state {
                        DcfState::AwaitingAck { .. } => DcfState::AwaitingAck { timed_out: true },
                        _ => DcfState::AwaitingCts { timed_out: true },
                    }
                }
                _ => self.attempt_failed(now),
            },
            MacTimer::SifsResponse => {
                if let Some(t) = self.response.take() {
                    self.transmits.push_back(t);
                }
            }
            MacTimer::NavEnd => self.handle_medium(now, phy_busy),
            MacTimer::TxopNext => self.txop_next(now, known),
            MacTimer::ReorderTimeout => self.reorder_timeout(now),
        }
    }

    /// Our frame `frame` left the air.
    pub fn handle_tx_end(&mut self, now: SimTime, frame: &Frame) {
        let control = matches!(
            frame.kind,
            FrameKind::Ack | FrameKind::Cts | FrameKind::BlockAck
        );
        if !control && self.current.is_none() {
            // The radio changed channel while this frame was on the air and
            // the MAC dropped it: nothing to wait for.
            return;
        }
        let timeout = self.timing.ack_timeout;
        match (frame.kind, frame.dst) {
            (FrameKind::Ack | FrameKind::Cts | FrameKind::BlockAck, _) => self.request_access(now),
            (FrameKind::Rts, _) => self.arm(now + timeout, MacTimer::ResponseTimeout),
            (_, Dst::Node(_)) => {
                self.state = DcfState::AwaitingAck { timed_out: false };
                self.arm(now + timeout, MacTimer::ResponseTimeout);
            }
            (_, Dst::Broadcast) => self.finish(now, true),
        }
    }

    /// A frame finished arriving: `ok` if it decoded, at `rssi`; `mode` is
    /// what it was sent at; `noise_floor` turns RSSI into SNR for learning.
    pub fn handle_rx_end(
        &mut self,
        now: SimTime,
        frame: &Frame,
        mode: Mode,
        ok: bool,
        rssi: Dbm,
        noise_floor: Dbm,
    ) {
        self.use_eifs = !ok;
        let awaited = ok
            && frame.dst.is_for(self.me)
            && matches!(
                (frame.kind, self.state),
                (
                    FrameKind::Ack | FrameKind::BlockAck,
                    DcfState::AwaitingAck { .. }
                ) | (FrameKind::Cts, DcfState::AwaitingCts { .. })
            );
        // The response timeout fired while this frame was arriving: unless it
        // is the awaited response, the attempt has failed.
        let timed_out = matches!(
            self.state,
            DcfState::AwaitingAck { timed_out: true } | DcfState::AwaitingCts { timed_out: true }
        );
        if timed_out && !awaited {
            self.attempt_failed(now);
        }
        if !ok {
            return;
        }
        let carried = frame.report.map(|r| (r.position, r.tx_power));
        self.links.heard(
            now,
            frame.src,
            rssi,
            noise_floor,
            carried,
            frame.dst == Dst::Node(self.me),
        );
        if awaited {
            self.events.push_back(DcfEvent::Response(TxOutcome::Acked));
        }
        if !frame.dst.is_for(self.me) {
            if frame.duration > SimTime::ZERO {
                let until = now + frame.duration;
                if until > self.nav_until {
                    self.nav_until = until;
                    self.arm(until, MacTimer::NavEnd);
                }
            }
            return;
        }
        match (frame.kind, &frame.payload) {
            (FrameKind::Ack, _) if awaited => self.finish(now, true),
            (FrameKind::BlockAck, &Payload::BlockAck { ssn, bitmap }) if awaited => {
                if self.current().mpdus.is_empty() {
                    self.finish(now, true); // the answer to a BAR
                } else {
                    self.aggregate_done(now, Some((ssn, bitmap)));
                }
            }
            (FrameKind::Cts, _) if awaited => {
                self.state = DcfState::Idle;
                self.cancel(MacTimer::ResponseTimeout);
                let data = self.data_frame();
                self.response = Some(data);
                self.arm(now + self.timing.sifs, MacTimer::SifsResponse);
            }
            (FrameKind::Rts, _) => {
                if self.nav_until <= now {
                    let cts_time = self.response_airtime(&mode, CTS_BYTES);
                    let duration = frame.duration.saturating_sub(self.timing.sifs + cts_time);
                    let cts = self.control_frame(FrameKind::Cts, frame.src, CTS_BYTES, duration);
                    self.response = Some((
                        cts,
                        self.air.standard.control_rate_from(mode, self.air.basic),
                    ));
                    self.arm(now + self.timing.sifs, MacTimer::SifsResponse);
                }
            }
            (FrameKind::BlockAckReq, &Payload::BlockAckReq { ssn }) => {
                self.receive_bar(now, frame.src, ssn, mode)
            }
            (FrameKind::Data, Payload::Aggregate(_)) => {
                let oks = std::mem::take(&mut self.rx_parts);
                self.receive_aggregate(now, frame, mode, rssi, &oks);
            }
            (FrameKind::Ack | FrameKind::Cts | FrameKind::BlockAck, _) => {}
            _ => self.receive_msdu(now, frame, mode, rssi),
        }
    }

    // ------------------------------------------------------------ internals

    fn has_work(&self) -> bool {
        self.current.is_some()
            || !self.mgmt.is_empty()
            || !self.data.is_empty()
            || self
                .originator
                .as_ref()
                .is_some_and(|o| o.retry_peer().is_some())
    }

    fn ifs(&self) -> SimTime {
        if self.use_eifs {
            self.timing.eifs
        } else {
            self.timing.difs
        }
    }

    fn draw_backoff(&mut self) {
        self.backoff = Some(self.rng.integer_inclusive(self.cw));
    }

    /// Starts or resumes contention if there is something to send.
    fn request_access(&mut self, now: SimTime) {
        if !self.has_work()
            || self.state != DcfState::Idle
            || self.response.is_some()
            || self.burst_pending
        {
            return;
        }
        if self.medium_busy {
            if self.backoff.is_none() {
                self.draw_backoff();
            }
            return;
        }
        let since = self.idle_since + self.ifs();
        let at = since + self.timing.slot * u64::from(self.backoff.unwrap_or(0));
        self.state = DcfState::Contending { since };
        self.arm(at.max(now), MacTimer::AccessGrant);
    }

    fn access_granted(&mut self, now: SimTime, known: Option<Whereabouts>) {
        self.state = DcfState::Idle;
        self.backoff = None;
        if self.current.is_none() && !self.next_msdu(now, known) {
            return;
        }
        let rts = self.current.as_ref().is_some_and(|c| c.rts);
        let frame = if rts {
            // The CTS is awaited from the start of the RTS.
            self.state = DcfState::AwaitingCts { timed_out: false };
            self.rts_frame()
        } else {
            self.data_frame()
        };
        self.txop_until = self
            .cfg
            .txop_bursting
            .filter(|_| self.bursts_current())
            .map(|limit| now + limit);
        self.transmits.push_back(frame);
    }

    /// Whether the frame in progress may be part of a burst: unicast data
    /// from the data queue, without RTS/CTS, not an aggregate.
    fn bursts_current(&self) -> bool {
        self.current.as_ref().is_some_and(|c| {
            !c.rts
                && c.mpdus.is_empty()
                && c.msdu.fixed.is_none()
                && matches!(c.msdu.dst, Dst::Node(_))
        })
    }

    /// SIFS after an acknowledged frame in a TXOP: the next frame goes now
    /// if its exchange (data, SIFS, ACK) ends within the TXOP; else the
    /// TXOP ends and the station contends for it.
    fn txop_next(&mut self, now: SimTime, known: Option<Whereabouts>) {
        self.burst_pending = false;
        if self.current.is_none() {
            self.next_msdu(now, known);
        }
        if let Some(until) = self.txop_until.take().filter(|_| self.bursts_current()) {
            let (frame, mode) = self.data_frame();
            let airtime = mode.airtime(frame.psdu_bytes, self.air.preamble, self.air.standard);
            if now + airtime + frame.duration <= until {
                self.txop_until = Some(until);
                self.transmits.push_back((frame, mode));
                return;
            }
        }
        self.draw_backoff();
        self.request_access(now);
    }

    /// Takes the next MSDU (management first) with its retry chain, joining
    /// two data packets into a fast frame where enabled; false if none.
    fn next_msdu(&mut self, now: SimTime, known: Option<Whereabouts>) -> bool {
        if self.mgmt.is_empty() && self.originator.is_some() {
            if let Some(peer) = self.aggregate_peer(now) {
                return self.form_aggregate(now, peer, known);
            }
        }
        let (msdu, stageable) = match self.mgmt.pop_front() {
            Some(m) => (m, false),
            None => {
                let next = self.data.pop(now);
                self.queue_drops();
                match next {
                    Some(q) => (q.msdu, q.stageable),
                    None => return false,
                }
            }
        };
        let psdu_of = |m: &Msdu| match m.payload {
            Payload::BlockAckReq { .. } => BAR_BYTES,
            _ => m.bytes + DATA_OVERHEAD,
        };
        let chain_bytes = psdu_of(&msdu);
        let chain = match (msdu.fixed, msdu.dst) {
            (Some(stage), _) => RetryChain {
                stages: vec![stage],
            },
            (None, Dst::Broadcast) => RetryChain {
                stages: vec![Stage {
                    mode: self.air.basic,
                    tries: 1,
                }],
            },
            (None, Dst::Node(d)) => self.links.retry_chain(
                now,
                d,
                chain_bytes,
                self.tx_power,
                known.expect("whereabouts for a chain"),
            ),
        };
        let msdu = if stageable {
            self.join_fast_frame(now, msdu, &chain)
        } else {
            msdu
        };
        let seq = self.next_seq;
        self.next_seq = (self.next_seq + 1) % 4096;
        // madwifi (`ath_tx_start`) sends no RTS by length to a peer that
        // takes fast frames: a fast frame always exceeds the threshold.
        let rts = matches!(msdu.dst, Dst::Node(_))
            && msdu.bytes + DATA_OVERHEAD > self.cfg.rts_threshold
            && self.cfg.fast_frames.is_none();
        self.current = Some(Current {
            psdu: psdu_of(&msdu),
            msdu,
            chain,
            chain_bytes,
            seq,
            attempt: 0,
            rts,
            mpdus: Vec::new(),
            starts: Vec::new(),
        });
        true
    }

    /// Airtime of a control response (ACK or CTS) to a frame sent at `mode`.
    fn response_airtime(&self, mode: &Mode, bytes: u32) -> SimTime {
        self.air
            .standard
            .control_rate_from(*mode, self.air.basic)
            .airtime(bytes, self.air.preamble, self.air.standard)
    }

    fn current(&self) -> &Current {
        self.current.as_ref().expect("a frame in progress")
    }

    fn current_mode(&self) -> Mode {
        let cur = self.current();
        let stage = cur
            .chain
            .stage_of(cur.attempt)
            .unwrap_or(cur.chain.stages.len() - 1);
        cur.chain.stages[stage].mode
    }

    /// A frame of `kind` (default: the MSDU's own) for the current attempt.
    fn current_frame(&self, kind: Option<FrameKind>, psdu_bytes: u32, duration: SimTime) -> Frame {
        let cur = self.current();
        Frame {
            kind: kind.unwrap_or(cur.msdu.payload.kind()),
            src: self.me,
            dst: cur.msdu.dst,
            seq: cur.seq,
            retry: cur.attempt > 0,
            attempt: cur.attempt.min(255) as u8,
            psdu_bytes,
            duration,
            payload: cur.msdu.payload.clone(),
            report: None,
        }
    }

    fn control_frame(
        &self,
        kind: FrameKind,
        to: NodeId,
        psdu_bytes: u32,
        duration: SimTime,
    ) -> Frame {
        Frame {
            kind,
            src: self.me,
            dst: Dst::Node(to),
            seq: 0,
            retry: false,
            attempt: 0,
            psdu_bytes,
            duration,
            payload: Payload::Raw,
            report: None,
        }
    }

    fn data_frame(&self) -> (Frame, Mode) {
        let mode = self.current_mode();
        let cur = self.current();
        let unicast = matches!(cur.msdu.dst, Dst::Node(_));
        let blockack =
            !cur.mpdus.is_empty() || matches!(cur.msdu.payload, Payload::BlockAckReq { .. });
        let response = if blockack { BA_BYTES } else { ACK_BYTES };
        let duration = if unicast {
            self.timing.sifs + self.response_airtime(&mode, response)
        } else {
            SimTime::ZERO
        };
        if !cur.mpdus.is_empty() {
            return (self.aggregate_frame(duration), mode);
        }
        (self.current_frame(None, cur.psdu, duration), mode)
    }

    fn rts_frame(&self) -> (Frame, Mode) {
        let mode = self.current_mode();
        let psdu = self.current().psdu;
        let data = mode.airtime(psdu, self.air.preamble, self.air.standard);
        let duration = self.timing.sifs * 3
            + self.response_airtime(&mode, CTS_BYTES)
            + data
            + self.response_airtime(&mode, ACK_BYTES);
        (
            self.current_frame(Some(FrameKind::Rts), RTS_BYTES, duration),
            self.air.standard.control_rate_from(mode, self.air.basic),
        )
    }

    /// A data or management frame for this node (or broadcast) arrived intact.
    fn receive_msdu(&mut self, now: SimTime, frame: &Frame, mode: Mode, rssi: Dbm) {
        let Dst::Node(_) = frame.dst else {
            self.events.push_back(DcfEvent::Received {
                frame: frame.clone(),
                rssi,
                duplicate: false,
            });
            return;
        };
        let airtime = mode.airtime(frame.psdu_bytes, self.air.preamble, self.air.standard);
        self.data.charge_rx(frame.src, airtime);
        let ack = self.control_frame(FrameKind::Ack, frame.src, ACK_BYTES, SimTime::ZERO);
        self.response = Some((
            ack,
            self.air.standard.control_rate_from(mode, self.air.basic),
        ));
        let duplicate = match self.last_seq.iter_mut().find(|(s, _)| *s == frame.src) {
            Some((_, last)) => {
                let dup = frame.retry && *last == frame.seq;
                *last = frame.seq;
                dup
            }
            None => {
                self.last_seq.push((frame.src, frame.seq));
                false
            }
        };
        self.arm(now + self.timing.sifs, MacTimer::SifsResponse);
        self.events.push_back(DcfEvent::Received {
            frame: frame.clone(),
            rssi,
            duplicate,
        });
    }

    /// Airtime of the first `attempts` tries of `cur`: its data frame at
    /// each try's rate, as ath9k reports it to mac80211's airtime
    /// accounting (`ts->duration`).
    fn tries_airtime(&self, cur: &Current, attempts: u32) -> SimTime {
        let psdu = cur.psdu;
        let last = cur.chain.stages.len().saturating_sub(1);
        (0..attempts)
            .filter_map(|i| cur.chain.stages.get(cur.chain.stage_of(i).unwrap_or(last)))
            .map(|s| s.mode.airtime(psdu, self.air.preamble, self.air.standard))
            .fold(SimTime::ZERO, |a, b| a + b)
    }

    /// The current attempt got no response.
    fn attempt_failed(&mut self, now: SimTime) {
        self.events
            .push_back(DcfEvent::Response(TxOutcome::Unacked));
        self.state = DcfState::Idle;
        self.txop_until = None;
        self.cancel(MacTimer::ResponseTimeout);
        let cur = self
            .current
            .as_mut()
            .expect("failed attempt of a frame in progress");
        cur.attempt += 1;
        if cur.attempt >= cur.chain.total_tries() {
            self.finish(now, false);
            return;
        }
        self.cw = (2 * self.cw + 1).min(self.timing.cw_max);
        self.draw_backoff();
        self.request_access(now);
    }

    /// The current MSDU is done: acknowledged (or broadcast), or given up.
    fn finish(&mut self, now: SimTime, delivered: bool) {
        if self.current.as_ref().is_some_and(|c| !c.mpdus.is_empty()) {
            return self.aggregate_done(now, None);
        }
        self.state = DcfState::Idle;
        self.cancel(MacTimer::ResponseTimeout);
        let mut cur = self.current.take().expect("a finished frame");
        self.data.flush_staged(FF_TXQ_MIN);
        let attempts = if delivered {
            cur.attempt + 1
        } else {
            cur.attempt
        };
        if let Dst::Node(d) = cur.msdu.dst {
            let airtime = self.tries_airtime(&cur, attempts);
            self.data.charge_tx(d, airtime);
        }
        if let (Dst::Node(d), None) = (cur.msdu.dst, cur.msdu.fixed) {
            let status = TxStatus {
                now,
                bytes: cur.chain_bytes,
                chain: std::mem::take(&mut cur.chain),
                attempts,
                acked: delivered,
                ampdu: None,
            };
            self.links.report(d, &status);
        }
        self.cw = self.timing.cw_min;
        let delay = now - cur.msdu.enqueued;
        if !matches!(cur.msdu.payload, Payload::BlockAckReq { .. }) {
            self.events.push_back(DcfEvent::Done {
                msdu: cur.msdu,
                seq: cur.seq,
                delivered,
                attempts,
                delay,
            });
        }
        let burst = self
            .txop_until
            .is_some_and(|until| delivered && now + self.timing.sifs < until);
        if burst && self.has_work() {
            self.burst_pending = true;
            self.arm(now + self.timing.sifs, MacTimer::TxopNext);
            return;
        }
        self.txop_until = None;
        self.draw_backoff();
        self.request_access(now);
    }
}

#[cfg(test)]
mod tests;
