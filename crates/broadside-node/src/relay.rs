//! A seeded lossy UDP relay between two endpoints on loopback, for
//! experiments: random or Gilbert–Elliott (burst) loss, a fixed delay, a
//! bandwidth limit with a drop-tail queue, and a link up/down schedule (for
//! example a single 20-second contact).
//!
//! Node A sends to `listen_a`; the relay forwards to B from `listen_b`, so B
//! sees `listen_b` as A's address and replies there, which goes back to A
//! from `listen_a`. Only packets from the configured node addresses are
//! relayed. Every address must be in 127.0.0.0/8: the relay never sends
//! anywhere else.

use crate::node::bind_udp;
use crate::NodeError;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How packets are lost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// Each packet lost independently with this probability.
    Random(f64),
    /// Two-state Markov chain: Good→Bad with `p_gb` per packet, Bad→Good with
    /// `p_bg`; a packet is lost with `loss_good` or `loss_bad` in that state.
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
    fn check(&self) -> Result<(), NodeError> {
        let probs: Vec<f64> = match *self {
            LossModel::Random(p) => vec![p],
            LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => vec![p_gb, p_bg, loss_good, loss_bad],
        };
        if probs.iter().all(|p| (0.0..=1.0).contains(p)) {
            Ok(())
        } else {
            Err(NodeError::Usage(format!("loss model {self:?}: probabilities must be in 0..=1")))
        }
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
        let bad = |w: &str| NodeError::Usage(format!("schedule {s:?}: {w}; expected comma-separated START-END windows in seconds, e.g. \"2-22\""));
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

/// Relay settings.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Where node A sends.
    pub listen_a: SocketAddr,
    /// Where node B sends.
    pub listen_b: SocketAddr,
    /// Node A.
    pub a: SocketAddr,
    /// Node B.
    pub b: SocketAddr,
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

/// Counts for one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Datagrams received from the node.
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
    /// Ignored: not from the configured node.
    pub foreign: u64,
}

/// Counts for both directions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// A → B.
    pub a_to_b: DirectionStats,
    /// B → A.
    pub b_to_a: DirectionStats,
}

/// A running relay; stops when dropped or on [`Relay::stop`].
pub struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    stats: Arc<Mutex<RelayStats>>,
}

fn check_loopback(what: &str, a: SocketAddr) -> Result<(), NodeError> {
    match a.ip() {
        IpAddr::V4(v4) if v4.octets()[0] == 127 => Ok(()),
        _ => Err(NodeError::Usage(format!("{what} {a} is not a loopback address; the relay only uses 127.0.0.0/8"))),
    }
}

struct Direction {
    from_node: SocketAddr,
    to_node: SocketAddr,
    rx: UdpSocket,
    tx: UdpSocket,
    rng: Xoshiro256PlusPlus,
    bad: bool,
    link_free: Instant,
    queue: VecDeque<(Instant, Vec<u8>)>,
}

impl Relay {
    /// Binds both ports and starts forwarding.
    pub fn start(cfg: RelayConfig) -> Result<Relay, NodeError> {
        for (w, a) in [("listen_a", cfg.listen_a), ("listen_b", cfg.listen_b), ("node a", cfg.a), ("node b", cfg.b)] {
            check_loopback(w, a)?;
        }
        cfg.loss.check()?;
        if cfg.bandwidth == Some(0) {
            return Err(NodeError::Usage("bandwidth 0: give a positive number of bytes per second, or none".into()));
        }
        let (sa, sb) = (bind_udp(cfg.listen_a, 8 << 20)?, bind_udp(cfg.listen_b, 8 << 20)?);
        let clone = |s: &UdpSocket| s.try_clone().map_err(|e| NodeError::Runtime(e.to_string()));
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(RelayStats::default()));
        let start = Instant::now();
        let mut threads = Vec::new();
        for (i, (rx, tx, from, to)) in [(clone(&sa)?, clone(&sb)?, cfg.a, cfg.b), (sb, sa, cfg.b, cfg.a)].into_iter().enumerate() {
            let dir = Direction {
                from_node: from,
                to_node: to,
                rx,
                tx,
                rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed.wrapping_add(i as u64)),
                bad: false,
                link_free: start,
                queue: VecDeque::new(),
            };
            let (stop, stats, cfg) = (stop.clone(), stats.clone(), cfg.clone());
            threads.push(std::thread::spawn(move || forward(dir, &cfg, start, &stop, &stats, i == 0)));
        }
        Ok(Relay { stop, threads, stats })
    }

    /// Counts so far.
    pub fn stats(&self) -> RelayStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Stops forwarding and returns the final counts.
    pub fn stop(mut self) -> RelayStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.halt();
    }
}

fn lost(d: &mut Direction, model: LossModel) -> bool {
    match model {
        LossModel::Random(p) => d.rng.random::<f64>() < p,
        LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
            let flip = d.rng.random::<f64>() < if d.bad { p_bg } else { p_gb };
            d.bad ^= flip;
            d.rng.random::<f64>() < if d.bad { loss_bad } else { loss_good }
        }
    }
}

fn forward(mut d: Direction, cfg: &RelayConfig, start: Instant, stop: &AtomicBool, stats: &Mutex<RelayStats>, a_to_b: bool) {
    let mut buf = vec![0u8; 65_536];
    let mut st = DirectionStats::default();
    let mut last_publish = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while d.queue.front().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, p)) = d.queue.pop_front() {
                if d.tx.send_to(&p, d.to_node).is_ok() {
                    st.forwarded += 1;
                    st.forwarded_bytes += p.len() as u64;
                }
            }
        }
        let wait = d.queue.front().map_or(Duration::from_millis(5), |(t, _)| t.saturating_duration_since(now)).clamp(Duration::from_micros(100), Duration::from_millis(5));
        if d.rx.set_read_timeout(Some(wait)).is_err() {
            break;
        }
        if let Ok((n, src)) = d.rx.recv_from(&mut buf) {
            let now = Instant::now();
            if src != d.from_node {
                st.foreign += 1;
            } else {
                st.received += 1;
                if !cfg.schedule.is_up(now - start) {
                    st.down += 1;
                } else if lost(&mut d, cfg.loss) {
                    st.lost += 1;
                } else {
                    let depart = match cfg.bandwidth {
                        None => Some(now),
                        Some(bw) => {
                            let begin = d.link_free.max(now);
                            (begin - now <= cfg.max_queue).then(|| {
                                d.link_free = begin + Duration::from_secs_f64(n as f64 / bw as f64);
                                d.link_free
                            })
                        }
                    };
                    match depart {
                        Some(t) => d.queue.push_back((t + cfg.delay, buf[..n].to_vec())),
                        None => st.queue_full += 1,
                    }
                }
            }
        }
        if last_publish.elapsed() >= Duration::from_millis(20) || stop.load(Ordering::Relaxed) {
            last_publish = Instant::now();
            publish(stats, &st, a_to_b);
        }
    }
    publish(stats, &st, a_to_b);
}

fn publish(stats: &Mutex<RelayStats>, st: &DirectionStats, a_to_b: bool) {
    if let Ok(mut s) = stats.lock() {
        if a_to_b {
            s.a_to_b = *st;
        } else {
            s.b_to_a = *st;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_addr() -> SocketAddr {
        UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
    }

    #[test]
    fn refuses_non_loopback_addresses() {
        let cfg = RelayConfig {
            listen_a: "127.0.0.1:0".parse().unwrap(),
            listen_b: "127.0.0.1:0".parse().unwrap(),
            a: "127.0.0.1:9".parse().unwrap(),
            b: "192.0.2.1:9".parse().unwrap(),
            loss: LossModel::Random(0.0),
            delay: Duration::ZERO,
            bandwidth: None,
            max_queue: Duration::from_millis(50),
            schedule: Schedule::default(),
            seed: 1,
        };
        let e = Relay::start(cfg).err().unwrap().to_string();
        assert!(e.contains("192.0.2.1:9") && e.contains("127.0.0.0/8"), "{e}");
    }

    #[test]
    fn schedule_parses_and_gates() {
        let s = Schedule::parse("2-22, 30-31").unwrap();
        assert!(!s.is_up(Duration::from_secs(1)) && s.is_up(Duration::from_secs(2)) && !s.is_up(Duration::from_secs(22)));
        assert!(Schedule::parse("5-1").is_err() && Schedule::parse("x").is_err());
    }

    #[test]
    fn random_loss_rate_is_close_to_configured_and_seeded() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, b) = (bind_udp(any, 8 << 20).unwrap(), bind_udp(any, 8 << 20).unwrap());
        let (la, lb) = (free_addr(), free_addr());
        let cfg = RelayConfig {
            listen_a: la,
            listen_b: lb,
            a: a.local_addr().unwrap(),
            b: b.local_addr().unwrap(),
            loss: LossModel::Random(0.3),
            delay: Duration::from_millis(1),
            bandwidth: None,
            max_queue: Duration::from_millis(50),
            schedule: Schedule::default(),
            seed: 42,
        };
        let relay = Relay::start(cfg).unwrap();
        for i in 0..2000u32 {
            a.send_to(&i.to_be_bytes(), la).unwrap();
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        b.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut got = 0;
        let mut buf = [0u8; 16];
        while let Ok((_, src)) = b.recv_from(&mut buf) {
            assert_eq!(src, lb, "B sees A as the relay's B-side port");
            got += 1;
        }
        let s = relay.stop();
        assert_eq!(s.a_to_b.received, 2000);
        assert_eq!(s.a_to_b.lost + s.a_to_b.forwarded, 2000);
        assert_eq!(got, s.a_to_b.forwarded);
        let rate = s.a_to_b.lost as f64 / 2000.0;
        assert!((0.26..0.34).contains(&rate), "loss {rate}");
    }
}
