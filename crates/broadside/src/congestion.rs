//! Congestion control for the data sent to one peer: a model of the path
//! (bottleneck delivery rate and smallest round-trip time) built from the
//! receiver's vectors, which act as acknowledgements, and the sending rate
//! and data in flight that model allows.
//!
//! It is BBR's model (Cardwell et al., "BBR: congestion-based congestion
//! control", 2016; draft-cardwell-iccrg-bbr-congestion-control) with a
//! different answer to loss, because a radio link loses packets at random
//! whether or not anyone queues:
//!
//! - BBRv2 cuts the data in flight by its β = 0.7 whenever more than 2% of a
//!   round's packets are lost; on a link that loses 10% at random that is
//!   every round, so it would throttle itself to nothing. Loss-based
//!   controllers (Reno, CUBIC, QUIC's NewReno of RFC 9002) halve on every
//!   loss, which is worse.
//! - Here a round counts as *congested* only if both (a) its loss rate
//!   exceeds the rate of random loss (the average of the rounds not judged
//!   congested) by more than BBRv2's 2% and by more than two standard
//!   errors of the round's sample, and (b) its smallest round-trip time shows a
//!   standing queue: at least [`QUEUE_DELAY`] and a quarter (BBR's
//!   ProbeBW gain of 5/4 may build that much on its own) over the smallest
//!   round trip seen. A drop-tail queue that overflows does both; random
//!   radio loss does neither. A congested round lowers a rate ceiling by
//!   BBRv2's β = 0.7; each round without congestion raises it by 1/8 (the
//!   gain cycle's probe) until it no longer binds. The same β as CUBIC's
//!   keeps a TCP flow and this one backing off together when they share a
//!   full queue, so neither starves.
//!
//! The delivery rate counts what arrived, after random loss; to deliver at
//! the bottleneck rate the sender paces at that rate times `1 / (1 − p)`
//! for the random loss rate `p` (BBR without this, on a link that loses
//! 60%, sees each round deliver 40% of what it sent, paces at that, and
//! spirals down to nothing).
//!
//! The rest follows BBR: *Startup* paces at 2/ln 2 ≈ 2.89× the best
//! delivery rate (doubling per round) until three rounds grow it by less
//! than a quarter or a round is congested; *Drain* paces at the inverse for
//! one round; *ProbeBw* cycles the pacing gain through 5/4, 3/4 and six
//! rounds of 1. The bottleneck rate is the largest delivery rate of the last
//! ten rounds; the smallest round trip is kept ten seconds. A round is the
//! time until a block sent at its start is acknowledged.
//!
//! The window (data in flight) is twice the bandwidth-delay product plus
//! twice the largest burst one vector acknowledged: the receiver sends its
//! vector only every so many blocks ([`crate::transfer::AckPolicy`]), so
//! the sender must keep sending that much while it waits (BBR's allowance
//! for aggregated acknowledgements does the same).
//!
//! The caller keeps a [`SentLog`] per transfer: it notes each block sent and,
//! when a vector arrives, tells which were delivered and which were lost (a
//! block sent before a delivered one but not held: blocks travel in order).

use crate::bitvec::BitVec;
use crate::time::Instant;
use core::time::Duration;
use std::collections::VecDeque;

/// Startup's pacing gain, 2/ln 2: the rate doubles each round.
const STARTUP_GAIN: f64 = 2.885;
/// ProbeBw's pacing gains, one per round.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Rounds the bottleneck rate is remembered.
const BW_ROUNDS: u64 = 10;
/// How long the smallest round trip is remembered.
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Startup ends after this many rounds that grew the rate by less than
/// [`GROWTH`].
const FLAT_ROUNDS: u32 = 3;
const GROWTH: f64 = 1.25;
/// BBRv2's loss threshold over the random loss rate, per round.
const LOSS_THRESH: f64 = 0.02;
/// BBRv2's multiplicative decrease on a congested round.
const BETA: f64 = 0.7;
/// Queueing delay (beyond a quarter of the smallest round trip) that counts
/// as a standing queue: above the scheduling jitter of a sender in user
/// space on a loaded host, below the 100 ms a drop-tail queue of a Wi-Fi
/// access point or the experiments' relay holds.
pub const QUEUE_DELAY: Duration = Duration::from_millis(10);
/// Weight of a queue-free round in the random loss estimate.
const LOSS_EWMA: f64 = 0.125;

/// What a sent block carries for its delivery-rate sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sent {
    /// When it was sent.
    pub at: Instant,
    /// Bytes (the whole datagram).
    pub bytes: u32,
    /// Bytes delivered to the peer when it was sent …
    delivered: u64,
    /// … and when that count last grew.
    delivered_at: Instant,
    /// Sent while the sender waited (a probe), not at the pacing rate: its
    /// rate sample only counts if it raises the estimate.
    limited: bool,
}

/// Where the controller is in BBR's cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Finding the bottleneck: the rate doubles each round.
    Startup,
    /// Emptying the queue Startup built (one round).
    Drain,
    /// At the bottleneck rate, probing above and below it in turn; the
    /// index into the gain cycle.
    ProbeBw(usize),
}

/// The congestion controller of one peer.
#[derive(Clone, Debug)]
pub struct Controller {
    phase: Phase,
    packet: u64,
    min_window: u64,
    initial_rate: f64,
    /// (round, rate) samples: the largest of the last [`BW_ROUNDS`] rounds.
    bw: VecDeque<(u64, f64)>,
    min_rtt: Option<(Duration, Instant)>,
    delivered: u64,
    delivered_at: Instant,
    round: u64,
    round_start: u64,
    round_lost: u64,
    round_acked: u64,
    round_rtt: Option<Duration>,
    /// Best rate when Startup last grew, and rounds since.
    full_bw: f64,
    flat_rounds: u32,
    /// Loss rate of rounds not judged congested (`None` before the first).
    random_loss: Option<f64>,
    /// Rate ceiling after congestion.
    ceiling: Option<f64>,
    /// Most bytes one vector acknowledged, this and the last round.
    burst: [u64; 2],
    /// Rounds judged congested (for tests and counters).
    pub congested_rounds: u64,
}

impl Controller {
    /// A controller for datagrams of about `packet` bytes that starts at
    /// `initial_rate` bytes per second and keeps a window of at least
    /// `min_window` bytes (what the receiver takes to send its vector).
    pub fn new(now: Instant, packet: usize, initial_rate: f64, min_window: u64) -> Self {
        Controller {
            phase: Phase::Startup,
            packet: packet as u64,
            min_window,
            initial_rate,
            bw: VecDeque::new(),
            min_rtt: None,
            delivered: 0,
            delivered_at: now,
            round: 0,
            round_start: 0,
            round_lost: 0,
            round_acked: 0,
            round_rtt: None,
            full_bw: 0.0,
            flat_rounds: 0,
            random_loss: None,
            ceiling: None,
            burst: [0; 2],
            congested_rounds: 0,
        }
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The bottleneck rate estimate, bytes per second (0 before a sample).
    pub fn bottleneck(&self) -> f64 {
        self.bw.iter().map(|&(_, r)| r).fold(0.0, f64::max)
    }

    /// The smallest round trip seen lately.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(|(r, _)| r)
    }

    /// The random loss rate estimate (0 before the first round).
    pub fn random_loss(&self) -> f64 {
        self.random_loss.unwrap_or(0.0)
    }

    /// The ceiling a congested round set, if it still binds.
    pub fn ceiling(&self) -> Option<f64> {
        self.ceiling
    }

    fn gain(&self) -> f64 {
        match self.phase {
            Phase::Startup => STARTUP_GAIN,
            Phase::Drain => 1.0 / STARTUP_GAIN,
            Phase::ProbeBw(i) => CYCLE[i],
        }
    }

    /// Bytes sent per byte delivered on a link that loses `random_loss` at
    /// random (at most 10: a link that loses more is treated as 90%).
    fn loss_factor(&self) -> f64 {
        1.0 / (1.0 - self.random_loss().min(0.9))
    }

    /// Bytes per second to pace at: the rate the model allows, delivered
    /// after random loss, so sent at `1 / (1 − loss)` times it.
    pub fn pacing_rate(&self) -> f64 {
        let bw = self.bottleneck() * self.loss_factor();
        let base = if bw > 0.0 {
            bw * self.gain()
        } else {
            self.initial_rate
        };
        let r = self.ceiling.map_or(base, |c| {
            base.min(c * self.loss_factor() * self.gain().max(1.0))
        });
        // Never below two packets per smallest round trip or 1% of the
        // initial rate, so a collapsed estimate still draws samples.
        r.max(self.initial_rate / 100.0)
    }

    /// Bytes that may be in flight.
    pub fn window(&self) -> u64 {
        let Some(rtt) = self.min_rtt() else {
            return u64::MAX;
        };
        let bdp = (self.bottleneck() * self.loss_factor() * rtt.as_secs_f64()) as u64;
        let burst = self.burst[0].max(self.burst[1]);
        (2 * bdp + 2 * burst)
            .max(4 * self.packet)
            .max(self.min_window)
    }

    /// Notes a datagram of `bytes` sent now with `in_flight` bytes already
    /// in flight (`limited`: while waiting for a vector, not at the pacing
    /// rate); keep the result with the block.
    pub fn on_sent(&mut self, now: Instant, bytes: usize, limited: bool, in_flight: u64) -> Sent {
        if in_flight == 0 {
            // Restart from idle (as delivery-rate estimation does): the
            // next sample's interval starts now, not at the last vector
            // before the pause, which would make it look slow.
            self.delivered_at = now;
        }
        Sent {
            limited,
            at: now,
            bytes: bytes as u32,
            delivered: self.delivered,
            delivered_at: self.delivered_at,
        }
    }

    /// A vector arrived: `acked` are the blocks it newly holds, `lost_bytes`
    /// what [`SentLog`] judged lost.
    pub fn on_ack(&mut self, now: Instant, acked: &[Sent], lost_bytes: u64) {
        self.round_lost += lost_bytes;
        let Some(last) = acked.iter().max_by_key(|s| s.at) else {
            return;
        };
        let bytes: u64 = acked.iter().map(|s| u64::from(s.bytes)).sum();
        self.delivered += bytes;
        self.delivered_at = now;
        self.round_acked += bytes;
        self.burst[0] = self.burst[0].max(bytes);
        let rtt = now.saturating_since(last.at);
        self.round_rtt = Some(self.round_rtt.map_or(rtt, |r| r.min(rtt)));
        if self
            .min_rtt
            .is_none_or(|(m, at)| rtt <= m || now.saturating_since(at) > MIN_RTT_WINDOW)
        {
            self.min_rtt = Some((rtt, now));
        }
        // Delivery rate since the last block of this vector was sent.
        let interval = now.saturating_since(last.delivered_at).max(rtt);
        if !interval.is_zero() {
            let rate = (self.delivered - last.delivered) as f64 / interval.as_secs_f64();
            if !last.limited || rate > self.bottleneck() {
                self.bw.push_back((self.round, rate));
            }
        }
        if last.delivered >= self.round_start {
            self.end_round();
        }
        while self
            .bw
            .front()
            .is_some_and(|&(r, _)| r + BW_ROUNDS <= self.round)
        {
            self.bw.pop_front();
        }
    }

    fn end_round(&mut self) {
        self.round += 1;
        self.round_start = self.delivered;
        let congested = self.judge();
        self.round_lost = 0;
        self.round_acked = 0;
        self.round_rtt = None;
        self.burst = [0, self.burst[0]];
        let bw = self.bottleneck();
        if congested {
            self.congested_rounds += 1;
            let base = self.ceiling.map_or(bw, |c| c.min(bw));
            self.ceiling = Some(base * BETA);
        } else if let Some(c) = self.ceiling {
            let up = c * 1.125;
            self.ceiling = (up < 2.0 * bw).then_some(up);
        }
        self.phase = match self.phase {
            Phase::Startup => {
                if bw >= self.full_bw * GROWTH {
                    self.full_bw = bw;
                    self.flat_rounds = 0;
                } else {
                    self.flat_rounds += 1;
                }
                if congested || self.flat_rounds >= FLAT_ROUNDS {
                    Phase::Drain
                } else {
                    Phase::Startup
                }
            }
            Phase::Drain => Phase::ProbeBw(1),
            Phase::ProbeBw(i) => Phase::ProbeBw((i + 1) % CYCLE.len()),
        };
    }

    /// Whether the round that just ended was congested (see the module
    /// doc); updates the random loss estimate from rounds without a queue.
    fn judge(&mut self) -> bool {
        let n = self.round_lost + self.round_acked;
        let (Some(rtt), Some(min)) = (self.round_rtt, self.min_rtt()) else {
            return false;
        };
        if n == 0 {
            return false;
        }
        let loss = self.round_lost as f64 / n as f64;
        let Some(p) = self.random_loss else {
            // The first round with a verdict sets the baseline.
            self.random_loss = Some(loss);
            return false;
        };
        let queued = rtt > min + min / 4 + QUEUE_DELAY;
        let packets = (n / self.packet.max(1)).max(1) as f64;
        let noise = 2.0 * (p * (1.0 - p) / packets).sqrt();
        let congested = queued && loss > p + LOSS_THRESH.max(noise);
        if !congested {
            // Loss that a queue does not explain is the link's own.
            self.random_loss = Some(p + LOSS_EWMA * (loss - p));
        }
        congested
    }
}

/// The blocks of one transfer sent and not yet acknowledged or lost, in the
/// order sent (a block sent twice appears twice).
#[derive(Clone, Debug, Default)]
pub struct SentLog {
    sent: VecDeque<(u32, Sent)>,
    bytes: u64,
}

/// Entries kept at most (blocks sent with no vector back, then dropped
/// oldest first without a verdict).
const LOG_CAP: usize = 1 << 16;

impl SentLog {
    /// Notes `block` (segment-relative) sent.
    pub fn push(&mut self, block: u32, s: Sent) {
        if self.sent.len() == LOG_CAP {
            if let Some((_, old)) = self.sent.pop_front() {
                self.bytes -= u64::from(old.bytes);
            }
        }
        self.bytes += u64::from(s.bytes);
        self.sent.push_back((block, s));
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.bytes
    }

    /// Splits the log by the receiver's vector: returns the blocks it holds
    /// (delivered) and the bytes of those sent before the last delivered one
    /// but missing (lost); the rest stay in flight.
    pub fn on_vector(&mut self, v: &BitVec) -> (Vec<Sent>, u64) {
        let held = |b: u32| b < v.len() && v.get(b);
        let Some(last) = self.sent.iter().rposition(|&(b, _)| held(b)) else {
            return (Vec::new(), 0);
        };
        let mut acked = Vec::new();
        let mut lost = 0;
        // Newest first: a block sent twice is delivered once (its last copy).
        let mut counted = std::collections::BTreeSet::new();
        let drained: Vec<(u32, Sent)> = self.sent.drain(..=last).collect();
        for (b, s) in drained.into_iter().rev() {
            if !held(b) {
                lost += u64::from(s.bytes);
            } else if counted.insert(b) {
                acked.push(s);
            }
        }
        self.bytes = self.sent.iter().map(|(_, s)| u64::from(s.bytes)).sum();
        (acked, lost)
    }
}

#[cfg(test)]
mod tests;
