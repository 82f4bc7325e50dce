//! The link impairment model shared by both relays (UDP datagrams on
//! loopback, [`crate::relay::Relay::start`]; IP packets between two TUN
//! devices, [`crate::relay::Relay::start_tun`]): seeded random or
//! Gilbert–Elliott (burst) loss, a fixed one-way delay, a bandwidth limit with
//! a drop-tail queue bounded in queueing delay, and a link up/down schedule.
//!
//! [`Link`] is one direction of it as a pure state machine over time since
//! the relay started (no clock, no I/O), so it can be tested draw by draw;
//! [`forward`] is the one loop that drives a [`Link`] between two [`Port`]s.

use crate::NodeError;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How packets are lost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// Each packet lost independently with this probability.
    Random(f64),
    /// Two-state Markov chain: Good→Bad with `p_gb` per packet, Bad→Good with
    /// `p_bg`; a packet is lost with `loss_good` or `loss_bad` in that state.
    /// The state steps before each packet's loss draw.
    GilbertElliott {
        /// P(Good → Bad) per packet.
        p_gb: f64,
        /// P(Bad → Good) per packet.
        p_bg: f64,
        /// Loss probability in Good.
        loss_good: f64,
        /// Loss probability in Bad.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Checks that every probability is in 0..=1.
    pub fn check(&self) -> Result<(), NodeError> {
        let (what, probs): (&str, Vec<f64>) = match *self {
            LossModel::Random(p) => ("--loss", vec![p]),
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => (
                "--burst P_GB,P_BG,LOSS_GOOD,LOSS_BAD",
                vec![p_gb, p_bg, loss_good, loss_bad],
            ),
        };
        if probs.iter().all(|p| (0.0..=1.0).contains(p)) {
            return Ok(());
        }
        let given: Vec<String> = probs.iter().map(|p| p.to_string()).collect();
        Err(NodeError::Usage(format!(
            "invalid {what} {}: a loss probability must be in 0..=1",
            given.join(",")
        )))
    }

    /// Long-run fraction of packets lost.
    pub fn loss_rate(&self) -> f64 {
        match *self {
            LossModel::Random(p) => p,
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let bad = stationary_bad(p_gb, p_bg);
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }

    /// Long-run mean length of a run of consecutive lost packets:
    /// P(lost) / P(not lost, then lost).
    pub fn mean_burst(&self) -> f64 {
        match *self {
            LossModel::Random(p) => 1.0 / (1.0 - p),
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let bad = stationary_bad(p_gb, p_bg);
                let pi = [1.0 - bad, bad];
                let l = [loss_good, loss_bad];
                // Transition matrix T[from][to]; states 0 = Good, 1 = Bad.
                let t = [[1.0 - p_gb, p_gb], [p_bg, 1.0 - p_bg]];
                let mut start = 0.0;
                for s in 0..2 {
                    for u in 0..2 {
                        start += pi[s] * (1.0 - l[s]) * t[s][u] * l[u];
                    }
                }
                self.loss_rate() / start
            }
        }
    }
}

fn stationary_bad(p_gb: f64, p_bg: f64) -> f64 {
    if p_gb + p_bg == 0.0 {
        0.0
    } else {
        p_gb / (p_gb + p_bg)
    }
}

/// Link state over time: up during any listed window (seconds since the
/// relay started); always up if the list is empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule(pub Vec<(Duration, Duration)>);

impl Schedule {
    /// Whether the link is up at `t`.
    pub fn is_up(&self, t: Duration) -> bool {
        self.0.is_empty() || self.0.iter().any(|(a, b)| *a <= t && t < *b)
    }

    /// Parses `"START-END,START-END"` in seconds, e.g. `"2-22"` for one 20-second contact.
    pub fn parse(s: &str) -> Result<Schedule, NodeError> {
        let bad = |w: &str| {
            NodeError::Usage(format!("schedule {s:?}: {w}; expected comma-separated START-END windows in seconds, e.g. \"2-22\""))
        };
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').ok_or_else(|| bad("missing '-'"))?;
            let a: f64 = a.trim().parse().map_err(|_| bad("start is not a number"))?;
            let b: f64 = b.trim().parse().map_err(|_| bad("end is not a number"))?;
            if !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b) {
                return Err(bad("need 0 <= START < END"));
            }
            v.push((Duration::from_secs_f64(a), Duration::from_secs_f64(b)));
        }
        Ok(Schedule(v))
    }
}

/// The impairment of a relay, applied to each direction independently.
#[derive(Clone, Debug)]
pub struct Impairment {
    /// Loss, per direction independently.
    pub loss: LossModel,
    /// One-way delay.
    pub delay: Duration,
    /// Bytes per second per direction; `None` for unlimited.
    pub bandwidth: Option<u64>,
    /// Longest queueing delay before drop-tail, when `bandwidth` is set.
    pub max_queue: Duration,
    /// When the link is up.
    pub schedule: Schedule,
    /// Seed of the loss draws (direction A→B uses `seed`, B→A `seed + 1`).
    pub seed: u64,
}

impl Impairment {
    /// A link without impairment (always up, no loss, no delay, unlimited).
    pub fn none(seed: u64) -> Impairment {
        Impairment {
            loss: LossModel::Random(0.0),
            delay: Duration::ZERO,
            bandwidth: None,
            max_queue: Duration::from_millis(100),
            schedule: Schedule::default(),
            seed,
        }
    }

    /// Checks the probabilities and the bandwidth.
    pub fn check(&self) -> Result<(), NodeError> {
        self.loss.check()?;
        if self.bandwidth == Some(0) {
            return Err(NodeError::Usage(
                "bandwidth 0: give a positive number of bytes per second, or none".into(),
            ));
        }
        Ok(())
    }
}

/// Counts for one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Packets received from the node.
    pub received: u64,
    /// Forwarded.
    pub forwarded: u64,
    /// Bytes forwarded.
    pub forwarded_bytes: u64,
    /// Dropped by the loss model.
    pub lost: u64,
    /// Dropped because the link was down.
    pub down: u64,
    /// Dropped because the queue was full.
    pub queue_full: u64,
    /// Ignored: not from (or not between) the configured nodes.
    pub foreign: u64,
}

/// What happened to an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; leaves at this time.
    Queued(Duration),
    /// Dropped by the loss model.
    Lost,
    /// Dropped: the link was down.
    Down,
    /// Dropped: the bandwidth queue was full.
    QueueFull,
}

/// One direction of an impaired link: loss state, bandwidth queue, delay line.
#[derive(Debug)]
pub struct Link {
    imp: Impairment,
    rng: Xoshiro256PlusPlus,
    bad: bool,
    link_free: Duration,
    queue: VecDeque<(Duration, Vec<u8>)>,
    /// Counts so far.
    pub stats: DirectionStats,
}

impl Link {
    /// Direction `direction` (0 for A→B, 1 for B→A) of `imp`.
    pub fn new(imp: &Impairment, direction: u64) -> Link {
        Link {
            rng: Xoshiro256PlusPlus::seed_from_u64(imp.seed.wrapping_add(direction)),
            imp: imp.clone(),
            bad: false,
            link_free: Duration::ZERO,
            queue: VecDeque::new(),
            stats: DirectionStats::default(),
        }
    }

    /// One loss draw (steps the Gilbert–Elliott state first).
    pub fn draw_loss(&mut self) -> bool {
        match self.imp.loss {
            LossModel::Random(p) => self.rng.random::<f64>() < p,
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let flip = self.rng.random::<f64>() < if self.bad { p_bg } else { p_gb };
                self.bad ^= flip;
                self.rng.random::<f64>() < if self.bad { loss_bad } else { loss_good }
            }
        }
    }

    /// Offers a packet arriving at `t` (since the relay started).
    pub fn offer(&mut self, t: Duration, packet: &[u8]) -> Verdict {
        self.stats.received += 1;
        if !self.imp.schedule.is_up(t) {
            self.stats.down += 1;
            return Verdict::Down;
        }
        if self.draw_loss() {
            self.stats.lost += 1;
            return Verdict::Lost;
        }
        let depart = match self.imp.bandwidth {
            None => t,
            Some(bw) => {
                let begin = self.link_free.max(t);
                if begin - t > self.imp.max_queue {
                    self.stats.queue_full += 1;
                    return Verdict::QueueFull;
                }
                self.link_free = begin + Duration::from_secs_f64(packet.len() as f64 / bw as f64);
                self.link_free
            }
        };
        let at = depart + self.imp.delay;
        self.queue.push_back((at, packet.to_vec()));
        Verdict::Queued(at)
    }

    /// When the next queued packet leaves.
    pub fn next_due(&self) -> Option<Duration> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// The next packet due at or before `t`.
    pub fn pop_due(&mut self, t: Duration) -> Option<Vec<u8>> {
        if self.next_due().is_some_and(|d| d <= t) {
            self.queue.pop_front().map(|(_, p)| p)
        } else {
            None
        }
    }
}

/// What a port's receive gave.
pub(crate) enum Recv {
    /// A packet of this many bytes from the expected node.
    Packet(usize),
    /// Something to ignore (wrong source, not between the two nodes).
    Foreign,
    /// Nothing within the wait.
    Idle,
}

/// One side of a relay: where packets of one direction come in or go out.
pub(crate) trait Port: Send {
    /// Waits up to `wait` for one packet.
    fn recv(&mut self, buf: &mut [u8], wait: Duration) -> std::io::Result<Recv>;
    /// Sends one packet; false if it could not be sent.
    fn send(&mut self, packet: &[u8]) -> bool;
}

/// Moves packets from `rx` through `link` to `tx` until `stop`; publishes
/// the counts into `stats` now and then.
pub(crate) fn forward(
    mut rx: impl Port,
    mut tx: impl Port,
    mut link: Link,
    start: Instant,
    stop: &AtomicBool,
    stats: &Mutex<DirectionStats>,
) {
    let mut buf = vec![0u8; 65_536];
    let mut last_publish = Instant::now();
    let publish = |link: &Link| {
        if let Ok(mut s) = stats.lock() {
            *s = link.stats;
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let now = start.elapsed();
        while let Some(p) = link.pop_due(now) {
            if tx.send(&p) {
                link.stats.forwarded += 1;
                link.stats.forwarded_bytes += p.len() as u64;
            }
        }
        let wait = link
            .next_due()
            .map_or(Duration::from_millis(5), |t| t.saturating_sub(now))
            .clamp(Duration::from_micros(100), Duration::from_millis(5));
        match rx.recv(&mut buf, wait) {
            Ok(Recv::Packet(n)) => {
                link.offer(start.elapsed(), &buf[..n]);
            }
            Ok(Recv::Foreign) => link.stats.foreign += 1,
            Ok(Recv::Idle) => {}
            Err(_) => break,
        }
        if last_publish.elapsed() >= Duration::from_millis(20) {
            last_publish = Instant::now();
            publish(&link);
        }
    }
    publish(&link);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ge(p_gb: f64, p_bg: f64, loss_good: f64, loss_bad: f64) -> LossModel {
        LossModel::GilbertElliott {
            p_gb,
            p_bg,
            loss_good,
            loss_bad,
        }
    }

    /// Loss rate and mean run length of consecutive losses over `n` draws.
    fn measure(model: LossModel, seed: u64, n: usize) -> (f64, f64, Vec<bool>) {
        let mut link = Link::new(
            &Impairment {
                loss: model,
                ..Impairment::none(seed)
            },
            0,
        );
        let pattern: Vec<bool> = (0..n)
            .map(|i| link.offer(Duration::from_micros(i as u64), &[0u8; 8]) == Verdict::Lost)
            .collect();
        let lost = pattern.iter().filter(|l| **l).count();
        let bursts = pattern
            .iter()
            .enumerate()
            .filter(|&(i, &l)| l && (i == 0 || !pattern[i - 1]))
            .count();
        (lost as f64 / n as f64, lost as f64 / bursts as f64, pattern)
    }

    #[test]
    fn gilbert_elliott_matches_its_closed_form() {
        // Pure Gilbert (every packet in Bad lost, none in Good): bursts are
        // the Bad sojourns, geometric with mean 1/p_bg; loss = p_gb/(p_gb+p_bg).
        let pure = ge(0.05, 0.25, 0.0, 1.0);
        assert!((pure.loss_rate() - 0.05 / 0.30).abs() < 1e-12);
        assert!((pure.mean_burst() - 4.0).abs() < 1e-12);
        // General Gilbert–Elliott: some loss in Good, some delivery in Bad.
        let general = ge(0.02, 0.2, 0.05, 0.8);
        let n = 400_000;
        for (model, seed) in [(pure, 7), (general, 11), (ge(0.1, 0.1, 0.0, 1.0), 3)] {
            let (rate, burst, _) = measure(model, seed, n);
            let (want_rate, want_burst) = (model.loss_rate(), model.mean_burst());
            assert!(
                (rate - want_rate).abs() < 0.01,
                "{model:?}: loss {rate} vs {want_rate}"
            );
            assert!(
                (burst / want_burst - 1.0).abs() < 0.05,
                "{model:?}: mean burst {burst} vs {want_burst}"
            );
        }
        // Bursty, not random: the same loss rate drawn independently has
        // much shorter runs.
        let random = LossModel::Random(pure.loss_rate());
        let (_, random_burst, _) = measure(random, 7, n);
        assert!((random_burst / random.mean_burst() - 1.0).abs() < 0.05);
        assert!(random_burst * 2.5 < pure.mean_burst());
    }

    #[test]
    fn loss_draws_are_seeded_per_direction() {
        let m = ge(0.05, 0.25, 0.01, 0.9);
        let (_, _, a) = measure(m, 5, 5000);
        let (_, _, b) = measure(m, 5, 5000);
        let (_, _, c) = measure(m, 6, 5000);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Direction B→A of seed 5 draws like direction A→B of seed 6.
        let imp = Impairment {
            loss: m,
            ..Impairment::none(5)
        };
        let mut back = Link::new(&imp, 1);
        let d: Vec<bool> = (0..5000).map(|_| back.draw_loss()).collect();
        assert_eq!(d, c);
    }

    #[test]
    fn bandwidth_queue_delay_and_schedule() {
        let imp = Impairment {
            delay: Duration::from_millis(10),
            bandwidth: Some(1_000_000),
            max_queue: Duration::from_millis(3),
            schedule: Schedule::parse("1-2").unwrap(),
            ..Impairment::none(1)
        };
        let mut link = Link::new(&imp, 0);
        let s = Duration::from_secs(1);
        assert_eq!(link.offer(Duration::ZERO, &[0; 1000]), Verdict::Down);
        // 1000 bytes at 1 MB/s take 1 ms each; the queue holds 3 ms of waiting.
        let v: Vec<Verdict> = (0..6).map(|_| link.offer(s, &[0; 1000])).collect();
        let ms = |m: u64| Verdict::Queued(s + Duration::from_millis(m));
        assert_eq!(
            v,
            [
                ms(11),
                ms(12),
                ms(13),
                ms(14),
                Verdict::QueueFull,
                Verdict::QueueFull
            ]
        );
        assert_eq!(link.pop_due(s + Duration::from_millis(10)), None);
        assert!(link.pop_due(s + Duration::from_millis(12)).is_some());
        assert!(link.pop_due(s + Duration::from_millis(12)).is_some());
        assert_eq!(link.pop_due(s + Duration::from_millis(12)), None);
        assert_eq!(link.offer(Duration::from_secs(2), &[0; 10]), Verdict::Down);
        let st = link.stats;
        assert_eq!((st.received, st.down, st.queue_full), (8, 2, 2));
    }
}
