//! Two TCP peers over a lossy, rate-limited link: transfers that must
//! complete, fill the link, and a goodput table.

use super::*;

struct Link {
    delay: SimTime,
    bits_per_s: u64,
    busy_until: SimTime,
    loss: f64,
    queue: VecDeque<(SimTime, Segment)>,
}

impl Link {
    fn new(delay: SimTime, bits_per_s: u64, loss: f64) -> Link {
        Link {
            delay,
            bits_per_s,
            busy_until: SimTime::ZERO,
            loss,
            queue: VecDeque::new(),
        }
    }
    fn send(&mut self, now: SimTime, s: Segment, rng: &mut Stream) {
        let bytes = 20 + s.header_bytes() as u64 + s.len as u64;
        let start = now.max(self.busy_until);
        self.busy_until = start + SimTime(bytes * 8 * 1_000_000_000 / self.bits_per_s);
        if rng.uniform() >= self.loss {
            self.queue.push_back((self.busy_until + self.delay, s));
        }
    }
}

struct Outcome {
    /// Time the receiver had every byte.
    done: SimTime,
    goodput_mbps: f64,
    fast_retransmits: u32,
    timeouts: u32,
    closed: bool,
}

fn transfer(profile: TcpProfile, bytes: u64, loss: f64, seed: u64, iss: (u32, u32)) -> Outcome {
    let mut rng = Stream::new("run", seed, 0, "tcp-test-link");
    let mut a = Tcp::connect(SimTime::ZERO, profile.config(), A, B, iss.0);
    let mut b = Tcp::listen(profile.config(), B, iss.1);
    a.send(bytes);
    a.close();
    let mut ab = Link::new(ms(10), 20_000_000, loss);
    let mut ba = Link::new(ms(10), 20_000_000, loss);
    let mut now = SimTime::ZERO;
    let (mut fr, mut to) = (0, 0);
    let mut done = None;
    let mut last_rx = 0;
    while now < ms(3_600_000) {
        while ab.queue.front().is_some_and(|(t, _)| *t <= now) {
            let (_, s) = ab.queue.pop_front().unwrap();
            b.handle_segment(now, &s);
        }
        while ba.queue.front().is_some_and(|(t, _)| *t <= now) {
            let (_, s) = ba.queue.pop_front().unwrap();
            a.handle_segment(now, &s);
        }
        for t in [&mut a, &mut b] {
            if t.poll_timeout().is_some_and(|at| at <= now) {
                t.handle_timeout(now);
            }
        }
        if b.state() == State::CloseWait {
            b.close();
        }
        while let Some(s) = a.poll_transmit(now) {
            ab.send(now, s, &mut rng);
        }
        while let Some(s) = b.poll_transmit(now) {
            ba.send(now, s, &mut rng);
        }
        while let Some(e) = a.poll_event() {
            match e {
                TcpEvent::FastRetransmit => fr += 1,
                TcpEvent::Timeout { .. } => to += 1,
                _ => {}
            }
        }
        while b.poll_event().is_some() {}
        assert!(b.bytes_received() >= last_rx, "delivery is monotonic");
        last_rx = b.bytes_received();
        assert!(last_rx <= bytes);
        if done.is_none() && last_rx == bytes {
            done = Some(now);
        }
        let next = [
            ab.queue.front().map(|x| x.0),
            ba.queue.front().map(|x| x.0),
            a.poll_timeout(),
            b.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) => now = t.max(now),
            None => break,
        }
        if a.state() == State::Closed && b.state() == State::Closed {
            break;
        }
        if a.state() == State::TimeWait && b.state() == State::Closed {
            break;
        }
    }
    let done = done.expect("transfer incomplete");
    Outcome {
        done,
        goodput_mbps: bytes as f64 * 8.0 / done.as_secs_f64() / 1e6,
        fast_retransmits: fr,
        timeouts: to,
        closed: b.state() == State::Closed && a.bytes_acked() == bytes,
    }
}

#[test]
fn test_two_peers_10mb_one_percent_loss() {
    for p in TcpProfile::ALL {
        let o = transfer(p, 10_000_000, 0.01, 7, (u32::MAX - 5000, 123));
        assert!(o.closed, "{p}: FIN handshake completes");
        assert!(o.fast_retransmits > 10, "{p}: {}", o.fast_retransmits);
        assert!(
            o.goodput_mbps > 2.0 && o.goodput_mbps < 20.0,
            "{p}: {}",
            o.goodput_mbps
        );
    }
}

#[test]
fn test_two_peers_lossless_fills_link() {
    for p in TcpProfile::ALL {
        let o = transfer(p, 10_000_000, 0.0, 1, (1, 2));
        assert!(o.closed);
        assert_eq!((o.fast_retransmits, o.timeouts), (0, 0), "{p}");
        assert!(o.goodput_mbps > 16.0, "{p}: {}", o.goodput_mbps);
        assert!(o.done > ms(4000));
    }
}

/// Prints the goodput table reported to the lead:
/// `cargo test --release -p wayside-sim --lib transport -- --ignored --nocapture`.
#[test]
#[ignore]
fn goodput_table() {
    println!("profile       loss  goodput(Mb/s)  FR  RTO  (10 MB, 20 Mb/s, 10 ms one way, loss both ways, mean of 5 seeds)");
    for p in TcpProfile::ALL {
        for loss in [0.0, 0.01] {
            let runs: Vec<Outcome> = (0..5)
                .map(|s| transfer(p, 10_000_000, loss, s, (s as u32, 9)))
                .collect();
            let n = runs.len() as f64;
            let g = runs.iter().map(|o| o.goodput_mbps).sum::<f64>() / n;
            let fr = runs.iter().map(|o| o.fast_retransmits as f64).sum::<f64>() / n;
            let to = runs.iter().map(|o| o.timeouts as f64).sum::<f64>() / n;
            println!(
                "{:<13} {:>4.0}% {:>13.2} {:>4.0} {:>4.1}",
                p.name(),
                loss * 100.0,
                g,
                fr,
                to
            );
        }
    }
}
