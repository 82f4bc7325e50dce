//! The controller as a state machine (one event at a time), and driven
//! through a small packet-level model of a bottleneck: a drop-tail queue
//! of a given rate and depth, random loss ahead of it, a fixed delay, and a
//! receiver that sends its vector every so many blocks.

use super::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const PKT: usize = 1000;

fn at(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

/// One round: `n` packets sent at `t0`, of which `lost` are lost, the rest
/// acknowledged in one vector at `t0 + rtt`.
fn round(c: &mut Controller, t0: Instant, rtt: Duration, n: usize, lost: usize) {
    let sent: Vec<Sent> = (0..n).map(|_| c.on_sent(t0, PKT, false, 1)).collect();
    c.on_ack(t0 + rtt, &sent[lost..], (lost * PKT) as u64);
}

#[test]
fn startup_paces_at_the_initial_rate_until_a_sample() {
    let c = Controller::new(at(0), PKT, 1e6, 0);
    assert_eq!(c.phase(), Phase::Startup);
    assert_eq!(c.pacing_rate(), 1e6);
    assert_eq!(
        c.window(),
        u64::MAX,
        "no round trip yet: the caller's cap binds"
    );
}

#[test]
fn startup_doubles_then_drains_when_the_rate_stops_growing() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let rtt = Duration::from_millis(10);
    // Each round delivers 10 packets in 10 ms: 1 MB/s, never more.
    let mut t = at(0);
    let mut phases = Vec::new();
    for _ in 0..8 {
        round(&mut c, t, rtt, 10, 0);
        t = t + rtt;
        phases.push(c.phase());
    }
    assert!(
        phases[..3].iter().all(|p| *p == Phase::Startup),
        "{phases:?}"
    );
    let drained = phases.iter().position(|p| *p == Phase::Drain).unwrap();
    assert_eq!(phases[drained + 1], Phase::ProbeBw(1));
    assert_eq!(phases[drained + 2], Phase::ProbeBw(2));
    let bw = c.bottleneck();
    assert!((bw / 1e6 - 1.0).abs() < 0.05, "bottleneck {bw}");
    assert_eq!(c.min_rtt(), Some(rtt));
    assert_eq!(c.congested_rounds, 0);
}

#[test]
fn random_loss_without_a_queue_is_not_congestion() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let rtt = Duration::from_millis(10);
    let mut t = at(0);
    for _ in 0..50 {
        // 20% lost every round, the round trip never grows.
        round(&mut c, t, rtt, 20, 4);
        t = t + rtt;
    }
    assert_eq!(c.congested_rounds, 0);
    assert!(c.ceiling().is_none());
    assert!((c.random_loss() - 0.2).abs() < 0.02, "{}", c.random_loss());
    assert!(c.pacing_rate() >= 0.75 * c.bottleneck());
}

#[test]
fn a_queue_alone_is_not_congestion_either() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let mut t = at(0);
    round(&mut c, t, Duration::from_millis(10), 20, 0);
    for _ in 0..20 {
        t = t + Duration::from_millis(100);
        round(&mut c, t, Duration::from_millis(80), 20, 0);
    }
    assert_eq!(c.congested_rounds, 0);
}

#[test]
fn loss_above_the_random_rate_with_a_queue_cuts_the_rate_by_beta() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let rtt = Duration::from_millis(10);
    let mut t = at(0);
    for _ in 0..20 {
        round(&mut c, t, rtt, 100, 10);
        t = t + rtt;
    }
    let bw = c.bottleneck();
    assert_eq!(c.congested_rounds, 0);
    // The queue overflows: 30% lost and the round trip triples.
    round(&mut c, t, 3 * rtt, 100, 30);
    assert_eq!(c.congested_rounds, 1);
    let ceiling = c.ceiling().expect("a ceiling");
    assert!(ceiling <= bw * BETA * 1.0001, "{ceiling} vs {bw}");
    // Rounds without congestion raise it again until it no longer binds.
    t = t + 3 * rtt;
    let mut rounds = 0;
    while c.ceiling().is_some() {
        round(&mut c, t, rtt, 100, 10);
        t = t + rtt;
        rounds += 1;
        assert!(rounds < 50);
    }
    assert!(rounds > 3, "{rounds}");
}

#[test]
fn startup_ends_on_a_congested_round() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let mut t = at(0);
    let rtt = Duration::from_millis(10);
    round(&mut c, t, rtt, 10, 0);
    t = t + rtt;
    round(&mut c, t, rtt, 20, 0);
    t = t + rtt;
    assert_eq!(c.phase(), Phase::Startup);
    round(&mut c, t, 4 * rtt, 40, 15);
    assert_eq!(c.phase(), Phase::Drain);
    assert_eq!(c.congested_rounds, 1);
}

#[test]
fn window_covers_twice_the_pipe_and_the_ack_burst() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let rtt = Duration::from_millis(10);
    round(&mut c, at(0), rtt, 50, 0);
    round(&mut c, at(10), rtt, 50, 0);
    // 50 kB per 10 ms = 5 MB/s; pipe 50 kB; one vector acknowledged 50 kB.
    let w = c.window();
    assert!((190_000..=210_000).contains(&w), "{w}");
}

#[test]
fn log_splits_delivered_lost_and_in_flight() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let mut log = SentLog::default();
    for b in 0..6 {
        log.push(b, c.on_sent(at(b as u64), PKT, false, 1));
    }
    assert_eq!(log.in_flight(), 6 * PKT as u64);
    let mut v = BitVec::new(8);
    v.set(0);
    v.set(2);
    v.set(3);
    let (acked, lost) = log.on_vector(&v);
    assert_eq!(acked.len(), 3);
    assert_eq!(lost, PKT as u64, "block 1, sent before 3");
    assert_eq!(log.in_flight(), 2 * PKT as u64, "4 and 5 may still come");
    // A re-sent block counts once.
    log.push(1, c.on_sent(at(7), PKT, false, 1));
    log.push(1, c.on_sent(at(8), PKT, false, 1));
    v.set(1);
    let (acked, lost) = log.on_vector(&v);
    assert_eq!((acked.len(), lost), (1, 2 * PKT as u64));
    assert_eq!(acked[0].at, at(8));
    assert_eq!(log.in_flight(), 0);
}

/// A bottleneck of `rate` bytes/s with a drop-tail queue of `queue`,
/// random loss `p` before it, one-way delay `delay` each way; the receiver
/// sends its vector every `every` blocks. Runs `secs` of a sender that
/// always has data; returns (controller, bytes sent, bytes delivered).
fn bottleneck(rate: f64, queue: Duration, p: f64, every: u32, secs: f64) -> (Controller, u64, u64) {
    let delay = Duration::from_millis(2);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let mut log = SentLog::default();
    let mut held = BitVec::new(1 << 20);
    let mut free = Instant::ZERO; // when the link is free
    let mut arrivals: VecDeque<(Instant, u32)> = VecDeque::new();
    let mut acks: VecDeque<(Instant, BitVec)> = VecDeque::new();
    let mut since_ack = 0;
    let (mut sent, mut delivered) = (0u64, 0u64);
    let mut next_send = Instant::ZERO;
    let mut block = 0u32;
    let step = Duration::from_micros(100);
    let end = Instant::from_micros((secs * 1e6) as u64);
    let mut t = Instant::ZERO;
    while t < end {
        while acks.front().is_some_and(|(a, _)| *a <= t) {
            let (_, v) = acks.pop_front().unwrap();
            let (a, l) = log.on_vector(&v);
            c.on_ack(t, &a, l);
        }
        while arrivals.front().is_some_and(|(a, _)| *a <= t) {
            let (_, b) = arrivals.pop_front().unwrap();
            held.set(b);
            delivered += PKT as u64;
            since_ack += 1;
            if since_ack >= every {
                since_ack = 0;
                acks.push_back((t + delay, held.clone()));
            }
        }
        while next_send <= t && log.in_flight() + PKT as u64 <= c.window() {
            log.push(block, c.on_sent(t, PKT, false, log.in_flight()));
            sent += PKT as u64;
            let begin = free.max(t);
            if rng.random::<f64>() >= p && begin.saturating_since(t) <= queue {
                free = begin + Duration::from_secs_f64(PKT as f64 / rate);
                arrivals.push_back((free + delay, block));
            }
            block += 1;
            next_send =
                next_send.max(t - step) + Duration::from_secs_f64(PKT as f64 / c.pacing_rate());
        }
        t = t + step;
    }
    (c, sent, delivered)
}

#[test]
fn finds_the_bottleneck_through_random_loss() {
    let rate = 2e6;
    let (c, sent, delivered) = bottleneck(rate, Duration::from_millis(100), 0.1, 32, 10.0);
    let goodput = delivered as f64 / 10.0;
    assert!(goodput > 0.85 * rate, "goodput {goodput}");
    // Random loss costs 1/0.9 = 1.11; queue overflows add little.
    let per_byte = sent as f64 / delivered as f64;
    assert!(per_byte < 1.2, "{per_byte} bytes sent per byte delivered");
    assert!(
        (c.bottleneck() / rate - 1.0).abs() < 0.15,
        "{}",
        c.bottleneck()
    );
}

#[test]
fn without_loss_it_runs_at_the_bottleneck_with_a_short_queue() {
    let rate = 20e6;
    let (c, sent, delivered) = bottleneck(rate, Duration::from_millis(100), 0.0, 128, 5.0);
    assert!(delivered as f64 / 5.0 > 0.85 * rate);
    assert!((sent as f64) < 1.02 * delivered as f64 + 2e5);
    assert!(matches!(c.phase(), Phase::ProbeBw(_)));
}

proptest! {
    #[test]
    fn log_conserves_bytes(ops in prop::collection::vec((0u32..64, any::<bool>()), 1..200)) {
        let mut c = Controller::new(at(0), PKT, 1e6, 0);
        let mut log = SentLog::default();
        let mut v = BitVec::new(64);
        let mut pushed = 0u64;
        let mut resolved = 0u64;
        for (i, (b, ack)) in ops.into_iter().enumerate() {
            if ack {
                v.set(b);
                let before = log.in_flight();
                let (a, l) = log.on_vector(&v);
                let got: u64 = a.iter().map(|s| u64::from(s.bytes)).sum::<u64>() + l;
                prop_assert!(got <= before - log.in_flight());
                resolved += before - log.in_flight();
                c.on_ack(at(i as u64 + 1), &a, l);
            } else {
                log.push(b, c.on_sent(at(i as u64), PKT, false, log.in_flight()));
                pushed += PKT as u64;
            }
            prop_assert_eq!(pushed, resolved + log.in_flight());
            let r = c.pacing_rate();
            prop_assert!(r.is_finite() && r > 0.0);
            prop_assert!(c.window() >= 4 * PKT as u64);
        }
    }
}

#[test]
fn probe_samples_only_raise_the_estimate_and_the_window_has_a_floor() {
    let mut c = Controller::new(at(0), PKT, 1e6, 50 * PKT as u64);
    let rtt = Duration::from_millis(10);
    round(&mut c, at(0), rtt, 20, 0);
    round(&mut c, at(10), rtt, 20, 0);
    let bw = c.bottleneck();
    // A probe acknowledged long after: a slow sample, left out.
    let probe = c.on_sent(at(20), PKT, true, 1);
    c.on_ack(at(500), &[probe], 0);
    assert_eq!(c.bottleneck(), bw);
    assert_eq!(
        c.window(),
        50 * PKT as u64,
        "the floor binds on a small pipe"
    );
}

#[test]
fn a_pause_does_not_count_as_a_slow_sample() {
    let mut c = Controller::new(at(0), PKT, 1e6, 0);
    let rtt = Duration::from_millis(10);
    round(&mut c, at(0), rtt, 20, 0);
    round(&mut c, at(10), rtt, 20, 0);
    let bw = c.bottleneck();
    // Five seconds idle, then one packet with nothing in flight.
    let s = c.on_sent(at(5020), PKT, false, 0);
    c.on_ack(at(5030), &[s], 0);
    assert!(c.bottleneck() >= bw * 0.99, "{} vs {bw}", c.bottleneck());
    let slow = c.bw.back().map(|&(_, r)| r).unwrap_or(0.0);
    assert!(slow > 50_000.0, "sample {slow}");
}
