//! TCP as a sans-IO state machine (quinn-proto/smoltcp style): feed it
//! segments ([`Tcp::handle_segment`]) and timer expiries
//! ([`Tcp::handle_timeout`]), drain [`Tcp::poll_transmit`] and
//! [`Tcp::poll_event`] after every input, and wake it at
//! [`Tcp::poll_timeout`]. Segments carry header fields and a payload length;
//! the application side is a byte count (`send`) and an in-order delivered
//! byte count (`bytes_received`).
//!
//! Owns: the connection state machine (RFC 793/9293), SYN/SYN-ACK
//! retransmission with backoff, the RTO (RFC 6298, Karn's rule, backoff),
//! delayed ACKs (RFC 1122/5681, Linux quick-ack), SACK generation and the
//! sender scoreboard (RFC 2018, RFC 6675), fast retransmit/recovery (NewReno
//! RFC 6582, Linux 2.6 rate halving and cwnd moderation, PRR RFC 6937),
//! congestion control (Reno RFC 5681, CUBIC RFC 9438), the persist timer, and
//! the per-OS profiles in [`TcpProfile`]. Windows are counted in segments as
//! Linux does. Not modelled: timestamps, Nagle, urgent data, ECN, RACK/TLP,
//! F-RTO, undo, D-SACK, path MTU discovery. The application read side is
//! optional: by default data is consumed as it arrives in order (the
//! advertised window is constant); after [`Tcp::set_manual_read`] in-order
//! data waits in the receive buffer, shrinking the advertised window, until
//! the owner calls [`Tcp::read`] (a relay that must not buffer without end).

mod assembler;
mod congestion;
mod profile;
mod recovery;
mod rtt;
mod scoreboard;
mod seq;
#[cfg(test)]
mod tests;
mod timers;

pub use profile::{Congestion, LossRecovery, TcpConfig, TcpProfile, UnknownProfile};

use crate::packet::{Flags, Segment};
use crate::units::SimTime;
use congestion::{Cc, CWND_CLAMP};
use rtt::RttEstimator;
use scoreboard::{Acked, Scoreboard, TxSeg};
use seq::SeqNum;
use std::collections::VecDeque;

/// RFC 6298 §5.7: RTO once data flows if the SYN had to be retransmitted.
const RTO_FALLBACK: SimTime = SimTime::from_ms(3000);
/// Default MSS when the peer sends no MSS option (RFC 9293 §3.7.1).
const DEFAULT_MSS: u32 = 536;
/// Smallest MSS accepted from a peer.
const MIN_MSS: u32 = 64;
/// Largest window with scaling (RFC 7323: shift 14).
const MAX_SCALED_WINDOW: u32 = 1 << 30;

/// Connection states, RFC 793 names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

/// What the connection reports to its owner (and the trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpEvent {
    /// The handshake completed.
    Established,
    /// SYN (active side) or SYN-ACK (passive side) retransmission number
    /// `attempt` (1-based).
    SynRetransmit { attempt: u32 },
    /// A retransmission timeout; `rto` is the new, backed-off timeout and
    /// `backoff` the number of consecutive timeouts.
    Timeout { rto: SimTime, backoff: u32 },
    /// Fast retransmit: loss recovery began.
    FastRetransmit,
    /// Retries exhausted (SYN, SYN-ACK or data); the connection is closed.
    GaveUp,
    /// The connection closed normally.
    Closed,
    /// The peer reset the connection.
    Reset,
    /// One per ACK processed by a sender with data outstanding. Windows in
    /// segments (as Linux's tcpprobe), `acked` in bytes.
    AckSample {
        cwnd: u32,
        /// `u32::MAX` until the first congestion event.
        ssthresh: u32,
        srtt: Option<SimTime>,
        /// Current RTO, backoff included.
        rto: SimTime,
        dupacks: u32,
        /// Segments in the network (RFC 6675 pipe).
        in_flight: u32,
        /// Bytes newly acknowledged cumulatively by this ACK.
        acked: u32,
    },
}

/// Congestion-avoidance state (Linux `icsk_ca_state`, less Disorder/CWR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CaState {
    Open,
    /// Fast recovery until `recover` (RFC 6582) is acknowledged.
    Recovery {
        recover: SeqNum,
    },
    /// After an RTO, until everything outstanding then is acknowledged.
    Loss {
        recover: SeqNum,
    },
}

/// Proportional Rate Reduction counters (RFC 6937), segments.
#[derive(Clone, Copy, Debug, Default)]
struct Prr {
    delivered: u32,
    out: u32,
    recover_fs: u32,
}

/// One TCP endpoint.
#[derive(Clone, Debug)]
pub struct Tcp {
    cfg: TcpConfig,
    state: State,
    local_port: u16,
    remote_port: u16,
    /// Opened with `listen`: a failed half-open connection returns to Listen.
    passive: bool,

    // Send side.
    iss: SeqNum,
    snd_una: SeqNum,
    snd_nxt: SeqNum,
    snd_wnd: u32,
    snd_wl1: SeqNum,
    snd_wl2: SeqNum,
    mss: u32,
    sack_ok: bool,
    wscale_ok: bool,
    app_total: u64,
    sent_total: u64,
    acked_total: u64,
    /// `close` was called: FIN once the buffer drains.
    fin_queued: bool,
    /// Sequence number of our FIN once sent.
    fin_seq: Option<SeqNum>,
    board: Scoreboard,

    // Congestion control.
    cwnd: u32,
    ssthresh: u32,
    cc: Cc,
    ca: CaState,
    dupacks: u32,
    /// Duplicate ACKs standing in for SACKed segments without SACK (Linux
    /// `tcp_add_reno_sack`).
    reno_sacked: u32,
    halving_cnt: u32,
    prr: Prr,
    /// Send the next retransmission regardless of cwnd (fast retransmit,
    /// NewReno partial ACK).
    force_rtx: bool,
    rtt: RttEstimator,
    backoff: u32,
    /// Timeouts (or SYN retransmissions) since the last forward progress.
    retries: u32,

    // Handshake.
    syn_pending: bool,
    syn_sent_at: SimTime,
    syn_retransmitted: bool,

    // Receive side.
    rcv_nxt: SeqNum,
    received: u64,
    /// In-order bytes handed to the application (`received` unless reads are manual).
    read_total: u64,
    manual_read: bool,
    asm: Assembler,
    /// Peer's FIN seen out of order, consumed when `rcv_nxt` reaches it.
    rcv_fin: Option<SeqNum>,
    ack_now: bool,
    unacked_bytes: u32,
    rcv_mss: u32,
    quickacks: u32,

    rst_out: Option<Segment>,
    probe_pending: bool,

    // Timers.
    rtx_at: Option<SimTime>,
    delack_at: Option<SimTime>,
    persist_at: Option<SimTime>,
    persist_backoff: u32,
    timewait_at: Option<SimTime>,

    events: VecDeque<TcpEvent>,
}

use assembler::Assembler;

impl Tcp {
    fn new(cfg: TcpConfig, state: State, local_port: u16, remote_port: u16, iss: u32) -> Tcp {
        let iss = SeqNum(iss);
        let mss = cfg.mss();
        Tcp {
            rtt: RttEstimator::new(&cfg),
            cc: Cc::new(cfg.congestion),
            cwnd: cfg.initial_cwnd.clamp(1, CWND_CLAMP),
            sack_ok: false,
            wscale_ok: false,
            cfg,
            state,
            local_port,
            remote_port,
            passive: state == State::Listen,
            iss,
            snd_una: iss,
            snd_nxt: iss + 1,
            snd_wnd: 0,
            snd_wl1: SeqNum(0),
            snd_wl2: iss,
            mss,
            app_total: 0,
            sent_total: 0,
            acked_total: 0,
            fin_queued: false,
            fin_seq: None,
            board: Scoreboard::default(),
            ssthresh: u32::MAX,
            ca: CaState::Open,
            dupacks: 0,
            reno_sacked: 0,
            halving_cnt: 0,
            prr: Prr::default(),
            force_rtx: false,
            backoff: 0,
            retries: 0,
            syn_pending: state == State::SynSent,
            syn_sent_at: SimTime::ZERO,
            syn_retransmitted: false,
            rcv_nxt: SeqNum(0),
            received: 0,
            read_total: 0,
            manual_read: false,
            asm: Assembler::default(),
            rcv_fin: None,
            ack_now: false,
            unacked_bytes: 0,
            rcv_mss: mss.min(DEFAULT_MSS),
            quickacks: 0,
            rst_out: None,
            probe_pending: false,
            rtx_at: None,
            delack_at: None,
            persist_at: None,
            persist_backoff: 0,
            timewait_at: None,
            events: VecDeque::new(),
        }
    }

    /// Active open: the SYN comes out of the next `poll_transmit`.
    pub fn connect(
        now: SimTime,
        cfg: TcpConfig,
        local_port: u16,
        remote_port: u16,
        iss: u32,
    ) -> Tcp {
        let mut t = Tcp::new(cfg, State::SynSent, local_port, remote_port, iss);
        t.syn_sent_at = now;
        t
    }

    /// Passive open: accepts the first SYN to `local_port` from any port.
    pub fn listen(cfg: TcpConfig, local_port: u16, iss: u32) -> Tcp {
        Tcp::new(cfg, State::Listen, local_port, 0, iss)
    }

    /// Appends `bytes` of application data to the send buffer. Ignored once
    /// `close` has been called or the connection is closed.
    pub fn send(&mut self, bytes: u64) {
        let open = matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        );
        if open && !self.fin_queued {
            self.app_total = self.app_total.saturating_add(bytes);
        }
    }

    /// Closes the sending direction: FIN after the buffer drains (and, if
    /// the handshake is still under way, after it completes). A listening
    /// endpoint closes at once.
    pub fn close(&mut self) {
        match self.state {
            State::Listen => {
                self.enter_closed();
                self.events.push_back(TcpEvent::Closed);
            }
            State::SynSent | State::SynReceived => self.fin_queued = true,
            State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Drops the connection at once, sending nothing (an application
    /// closing a socket whose handshake has not completed).
    pub fn abort(&mut self) {
        if self.state != State::Closed {
            self.enter_closed();
            self.events.push_back(TcpEvent::Closed);
        }
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// Payload bytes the peer has acknowledged cumulatively.
    pub fn bytes_acked(&self) -> u64 {
        self.acked_total
    }
    /// Payload bytes received in order (delivered to the application).
    pub fn bytes_received(&self) -> u64 {
        self.received
    }
    /// Bytes passed to `send` that the peer has not acknowledged yet.
    pub fn bytes_unacked(&self) -> u64 {
        self.app_total - self.acked_total
    }
    /// From now on, in-order data stays in the receive buffer (and out of
    /// the advertised window) until [`Tcp::read`] takes it.
    pub fn set_manual_read(&mut self) {
        self.manual_read = true;
        self.read_total = self.received;
    }
    /// In-order bytes received but not yet read (always 0 unless reads are manual).
    pub fn unread(&self) -> u64 {
        if self.manual_read {
            self.received - self.read_total
        } else {
            0
        }
    }
    /// Takes up to `bytes` of unread data and returns how many were taken.
    /// If that opens a window the peer may be stalled on (under one segment
    /// before, and by at least a segment or half the buffer; RFC 1122
    /// §4.2.3.3 receiver SWS avoidance), a window update goes out at once.
    pub fn read(&mut self, bytes: u64) -> u64 {
        let n = bytes.min(self.unread());
        let before = self.adv_window();
        self.read_total += n;
        let after = self.adv_window();
        let step = self.rcv_mss.min(self.cfg.rcv_wnd / 2).max(1);
        let synchronized = matches!(
            self.state,
            State::Established | State::FinWait1 | State::FinWait2
        );
        if synchronized && before < self.rcv_mss && after >= before + step {
            self.ack_now = true;
        }
        n
    }
    /// The sending MSS in effect (after the handshake: the smaller of ours and
    /// the peer's).
    pub fn mss(&self) -> u32 {
        self.mss
    }
    /// Congestion window, segments.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }
    /// Slow-start threshold, segments (`u32::MAX` before any loss).
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
    /// Current RTO including backoff.
    pub fn rto(&self) -> SimTime {
        self.rtt.backed_off(self.backoff)
    }
    pub fn srtt(&self) -> Option<SimTime> {
        self.rtt.srtt()
    }

    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        self.events.pop_front()
    }

    /// The earliest armed timer.
    pub fn poll_timeout(&self) -> Option<SimTime> {
        [
            self.rtx_at,
            self.delack_at,
            self.persist_at,
            self.timewait_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----------------------------------------------------------------------
    // Input: segments.

    pub fn handle_segment(&mut self, now: SimTime, seg: &Segment) {
        if seg.dst_port != self.local_port {
            return;
        }
        match self.state {
            State::Closed => return,
            State::Listen => return self.on_listen(seg),
            State::SynSent => return self.on_syn_sent(now, seg),
            _ => {}
        }
        if seg.src_port != self.remote_port {
            return;
        }
        if !self.acceptable(seg) {
            if !seg.flags.rst {
                if self.state == State::SynReceived
                    && seg.flags.syn
                    && SeqNum(seg.seq) + 1 == self.rcv_nxt
                {
                    // The peer retransmitted its SYN: our SYN-ACK was lost.
                    self.syn_pending = true;
                } else {
                    self.ack_now = true;
                }
            }
            return;
        }
        if seg.flags.rst {
            return self.on_rst();
        }
        if seg.flags.syn {
            // In-window SYN on a synchronized connection: challenge ACK
            // (RFC 5961 §4) rather than a reset.
            self.ack_now = true;
            return;
        }
        if !seg.flags.ack {
            return;
        }
        if self.state == State::SynReceived {
            let ack = SeqNum(seg.ack);
            if ack != self.iss + 1 {
                self.rst_out = Some(self.rst_for(seg));
                return;
            }
            self.snd_una = ack;
            self.update_window(seg);
            self.establish(now);
        }
        if !self.on_ack(now, seg) {
            return;
        }
        match self.state {
            State::Established | State::FinWait1 | State::FinWait2 => self.on_data(now, seg),
            _ => {
                if seg.len > 0 || seg.flags.fin {
                    self.ack_now = true;
                }
            }
        }
    }

    fn on_listen(&mut self, seg: &Segment) {
        if seg.flags.rst {
            return;
        }
        if seg.flags.ack {
            self.rst_out = Some(self.rst_for(seg));
            return;
        }
        if !seg.flags.syn {
            return;
        }
        self.remote_port = seg.src_port;
        self.rcv_nxt = SeqNum(seg.seq) + 1;
        self.negotiate(seg);
        self.snd_wnd = seg.window;
        self.snd_wl1 = SeqNum(seg.seq);
        self.state = State::SynReceived;
        self.syn_pending = true;
    }

    fn on_syn_sent(&mut self, now: SimTime, seg: &Segment) {
        if seg.src_port != self.remote_port {
            return;
        }
        let ack_ok = seg.flags.ack && SeqNum(seg.ack) == self.iss + 1;
        if seg.flags.ack && !ack_ok {
            if !seg.flags.rst {
                self.rst_out = Some(self.rst_for(seg));
            }
            return;
        }
        if seg.flags.rst {
            if ack_ok {
                self.reset();
            }
            return;
        }
        if !seg.flags.syn {
            return;
        }
        self.rcv_nxt = SeqNum(seg.seq) + 1;
        self.negotiate(seg);
        if ack_ok {
            self.snd_una = self.iss + 1;
            self.snd_wnd = seg.window;
            self.snd_wl1 = SeqNum(seg.seq);
            self.snd_wl2 = self.snd_una;
            self.establish(now);
            self.ack_now = true;
        } else {
            // Simultaneous open.
            self.snd_wnd = seg.window;
            self.snd_wl1 = SeqNum(seg.seq);
            self.state = State::SynReceived;
            self.syn_pending = true;
        }
    }

    fn offers_window_scale(&self) -> bool {
        self.cfg.window_scaling || self.cfg.rcv_wnd > 65535
    }

    /// Options from the peer's SYN.
    fn negotiate(&mut self, syn: &Segment) {
        let peer_mss = syn.mss.map_or(DEFAULT_MSS, u32::from).max(MIN_MSS);
        self.mss = self.cfg.mss().min(peer_mss);
        self.sack_ok = self.cfg.sack && syn.sack_permitted;
        self.wscale_ok = self.offers_window_scale() && syn.window_scale;
    }

    fn establish(&mut self, now: SimTime) {
        self.state = State::Established;
        self.backoff = 0;
        self.retries = 0;
        self.rtx_at = None;
        if self.syn_retransmitted {
            // Karn: no sample. RFC 6298 §5.7 and RFC 5681 §3.1 (loss window).
            self.rtt.set_rto(self.cfg.initial_rto.max(RTO_FALLBACK));
            self.cwnd = 1;
        } else {
            self.rtt.sample(now.saturating_sub(self.syn_sent_at));
        }
        self.snd_nxt = self.snd_una;
        self.quickacks = self.cfg.quickack_segments;
        self.events.push_back(TcpEvent::Established);
        if self.fin_queued {
            self.state = State::FinWait1;
        }
    }

    /// RFC 793 §3.9 segment acceptability.
    fn acceptable(&self, seg: &Segment) -> bool {
        let wnd = self.adv_window().max(1);
        let seq = SeqNum(seg.seq);
        let in_wnd = |s: SeqNum| self.rcv_nxt <= s && s < self.rcv_nxt + wnd;
        match seg.seq_len() {
            0 => in_wnd(seq),
            n => in_wnd(seq) || in_wnd(seq + (n - 1)),
        }
    }

    fn on_rst(&mut self) {
        if self.state == State::SynReceived && self.passive {
            let events = std::mem::take(&mut self.events);
            *self = Tcp::listen(self.cfg.clone(), self.local_port, self.iss.0);
            self.events = events;
        } else {
            self.reset();
        }
    }

    fn reset(&mut self) {
        self.enter_closed();
        self.events.push_back(TcpEvent::Reset);
    }

    fn enter_closed(&mut self) {
        self.state = State::Closed;
        self.rtx_at = None;
        self.delack_at = None;
        self.persist_at = None;
        self.timewait_at = None;
        self.ack_now = false;
        self.syn_pending = false;
        self.probe_pending = false;
    }

    fn rst_for(&self, seg: &Segment) -> Segment {
        Segment {
            src_port: self.local_port,
            dst_port: seg.src_port,
            seq: seg.ack,
            flags: Flags {
                rst: true,
                ..Flags::default()
            },
            ..Segment::default()
        }
    }

    fn update_window(&mut self, seg: &Segment) {
        let (seq, ack) = (SeqNum(seg.seq), SeqNum(seg.ack));
        if self.snd_wl1 < seq || (self.snd_wl1 == seq && self.snd_wl2 <= ack) {
            self.snd_wnd = seg.window;
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
        }
    }

    /// Segments in the network: the scoreboard's pipe, less duplicate ACKs
    /// counted as SACKs when SACK is off (Linux Reno emulation).
    fn pipe(&self) -> u32 {
        let p = self.board.pipe();
        if self.sack_ok || self.cfg.recovery == LossRecovery::NewReno {
            p
        } else {
            p.saturating_sub(self.reno_sacked)
        }
    }

    /// Uses SACK information as a sender.
    fn sender_sack(&self) -> bool {
        self.sack_ok && self.cfg.recovery != LossRecovery::NewReno
    }

    /// Sender-side ACK processing. Returns false if the segment must be
    /// dropped (it acknowledges data never sent).
    fn on_ack(&mut self, now: SimTime, seg: &Segment) -> bool {
        let ack = SeqNum(seg.ack);
        if ack > self.snd_nxt {
            self.ack_now = true;
            return false;
        }
        if ack < self.snd_una {
            return true; // old duplicate: ignore the ACK field
        }
        let had_outstanding = !self.board.is_empty();
        let prior_una = self.snd_una;
        let prior_pipe = self.pipe();
        let prior_wnd = self.snd_wnd;
        self.update_window(seg);
        if self.snd_wnd > 0 {
            self.persist_at = None;
            self.persist_backoff = 0;
        }

        let newly_sacked = if self.sender_sack() {
            self.board.sack(&seg.sack)
        } else {
            0
        };
        let acked = if ack > prior_una {
            self.board.ack(ack)
        } else {
            Acked::default()
        };
        if ack > prior_una {
            self.snd_una = ack;
            self.acked_total += acked.bytes;
            self.retries = 0;
            if !acked.retransmitted {
                if let Some(sent) = acked.oldest_sent {
                    self.rtt.sample(now.saturating_sub(sent));
                    self.backoff = 0;
                }
            }
            self.rtx_at = if self.board.is_empty() {
                None
            } else {
                Some(now + self.rto())
            };
            if acked.fin {
                self.on_fin_acked(now);
            }
        }
        if !had_outstanding {
            return true;
        }
        let is_dup = ack == prior_una
            && seg.len == 0
            && !seg.flags.fin
            && (seg.window == prior_wnd || newly_sacked > 0);
        self.congestion_on_ack(now, ack, &acked, newly_sacked, is_dup, prior_pipe);
        self.events.push_back(TcpEvent::AckSample {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            srtt: self.rtt.srtt(),
            rto: self.rto(),
            dupacks: self.dupacks,
            in_flight: self.pipe(),
            acked: acked.bytes.min(u32::MAX as u64) as u32,
        });
        true
    }

    fn on_fin_acked(&mut self, now: SimTime) {
        match self.state {
            State::FinWait1 => self.state = State::FinWait2,
            State::Closing => self.enter_time_wait(now),
            State::LastAck => {
                self.enter_closed();
                self.events.push_back(TcpEvent::Closed);
            }
            _ => {}
        }
    }

    /// Receive-side processing of an acceptable segment's payload and FIN.
    fn on_data(&mut self, now: SimTime, seg: &Segment) {
        let seq = SeqNum(seg.seq);
        let wnd_end = self.rcv_nxt + self.adv_window().max(1);
        let mut end = seq + seg.len;
        if let Some(fin) = self.rcv_fin {
            end = end.min(fin);
        }
        let fin_ok = seg.flags.fin && end == seq + seg.len && end <= wnd_end;
        end = end.min(wnd_end);
        let start = seq.max(self.rcv_nxt);
        if seg.len > 0 {
            self.rcv_mss = self.rcv_mss.max(seg.len.min(self.cfg.mss()));
            if end <= self.rcv_nxt {
                self.ack_now = true; // duplicate
            } else if start == self.rcv_nxt {
                let filled_hole = !self.asm.is_empty();
                let before = self.rcv_nxt;
                self.rcv_nxt = self.asm.advance(end);
                let delivered = self.rcv_nxt - before;
                self.received += delivered as u64;
                if filled_hole {
                    self.ack_now = true;
                } else if self.quickacks > 0 {
                    self.quickacks -= 1;
                    self.ack_now = true;
                } else {
                    self.unacked_bytes = self.unacked_bytes.saturating_add(delivered);
                    if self.unacked_bytes > self.rcv_mss {
                        self.ack_now = true;
                    } else if self.delack_at.is_none() {
                        self.delack_at = Some(now + self.cfg.delayed_ack);
                    }
                }
            } else {
                // Out of order: immediate duplicate ACK with SACK blocks.
                self.asm.insert(start, end);
                self.ack_now = true;
            }
        }
        if fin_ok && self.rcv_fin.is_none() {
            self.rcv_fin = Some(seq + seg.len);
        }
        if self.rcv_fin == Some(self.rcv_nxt) {
            self.rcv_nxt = self.rcv_nxt + 1;
            self.ack_now = true;
            match self.state {
                State::Established => self.state = State::CloseWait,
                State::FinWait1 => self.state = State::Closing,
                State::FinWait2 => self.enter_time_wait(now),
                _ => {}
            }
        }
    }

    fn enter_time_wait(&mut self, now: SimTime) {
        self.state = State::TimeWait;
        self.rtx_at = None;
        self.persist_at = None;
        self.timewait_at = Some(now + self.cfg.time_wait);
    }

    /// The window we advertise, bytes.
    fn adv_window(&self) -> u32 {
        let cap = if self.wscale_ok {
            MAX_SCALED_WINDOW
        } else {
            65535
        };
        let unread = self.unread().min(u64::from(u32::MAX)) as u32;
        self.cfg.rcv_wnd.saturating_sub(unread).min(cap)
    }

    // ----------------------------------------------------------------------
    // Output.

    /// The next segment to send, if any. Call until `None` after every input.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Segment> {
        if let Some(rst) = self.rst_out.take() {
            return Some(rst);
        }
        match self.state {
            State::Closed | State::Listen => return None,
            State::SynSent | State::SynReceived => {
                if !self.syn_pending {
                    return None;
                }
                self.syn_pending = false;
                self.syn_sent_at = now;
                self.rtx_at = Some(now + self.rto());
                let ack = self.state == State::SynReceived;
                let mut s = self.segment(self.iss, 0, true, false, ack);
                s.window = s.window.min(65535);
                s.mss = Some(self.cfg.mss().min(u16::MAX as u32) as u16);
                s.sack_permitted = self.cfg.sack && (!ack || self.sack_ok);
                s.window_scale = self.offers_window_scale() && (!ack || self.wscale_ok);
                return Some(s);
            }
            _ => {}
        }
        if let Some(s) = self.next_data_segment(now) {
            return Some(s);
        }
        if self.probe_pending {
            // Zero-window probe: an old sequence number elicits an ACK.
            self.probe_pending = false;
            return Some(self.segment(self.snd_una - 1, 0, false, false, true));
        }
        if self.ack_now {
            return Some(self.segment(self.snd_nxt, 0, false, false, true));
        }
        self.arm_persist(now);
        None
    }

    fn segment(&mut self, seq: SeqNum, len: u32, syn: bool, fin: bool, ack: bool) -> Segment {
        let mut s = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: seq.0,
            ack: if ack { self.rcv_nxt.0 } else { 0 },
            flags: Flags {
                syn,
                ack,
                fin,
                rst: false,
            },
            window: self.adv_window(),
            len,
            ..Segment::default()
        };
        if ack {
            self.ack_now = false;
            self.delack_at = None;
            self.unacked_bytes = 0;
            if self.sack_ok && !syn {
                s.sack = self.asm.sack_blocks();
            }
        }
        s
    }

    fn next_data_segment(&mut self, now: SimTime) -> Option<Segment> {
        if self.state == State::TimeWait {
            return None;
        }
        let forced = std::mem::take(&mut self.force_rtx);
        if !forced && self.pipe() >= self.cwnd {
            return None;
        }
        if let Some(i) = self.board.next_pending() {
            let s = self.board.get(i);
            self.board.on_retransmit(i, now);
            return Some(self.sent(now, s.seq, s.len, s.fin));
        }
        if self.pipe() >= self.cwnd {
            return None;
        }
        let may_send_new = matches!(
            self.state,
            State::Established | State::CloseWait | State::FinWait1 | State::LastAck
        );
        if !may_send_new || self.fin_seq.is_some() {
            return None;
        }
        let unsent = self.app_total - self.sent_total;
        let room = (self.snd_una + self.snd_wnd) - self.snd_nxt;
        let len = (self.mss as u64).min(unsent).min(room as u64) as u32;
        let fin = self.fin_queued && unsent == len as u64;
        // Sender-side silly window avoidance (RFC 1122 §4.2.3.4).
        let worth_it = len == self.mss || len as u64 == unsent || self.board.is_empty();
        if (len == 0 || !worth_it) && !fin {
            return None;
        }
        let seq = self.snd_nxt;
        self.board.push(TxSeg::new(seq, len, fin, now));
        self.snd_nxt = seq + len + fin as u32;
        self.sent_total += len as u64;
        if fin {
            self.fin_seq = Some(seq + len);
        }
        Some(self.sent(now, seq, len, fin))
    }

    /// Bookkeeping common to new data and retransmissions.
    fn sent(&mut self, now: SimTime, seq: SeqNum, len: u32, fin: bool) -> Segment {
        if self.rtx_at.is_none() {
            self.rtx_at = Some(now + self.rto());
        }
        if matches!(self.ca, CaState::Recovery { .. }) {
            self.prr.out += 1;
        }
        self.segment(seq, len, false, fin, true)
    }
}
