//! Tests of the DTN engine: one rule per test, on hand-made traces.

use super::message::Message;
use super::router::{ProphetParams, Router};
use super::*;
use crate::trace::TraceBuilder;

/// A trace of `n` hosts over `steps` 1 s steps; `at(t, host)` places a host.
fn trace(n: usize, steps: u32, at: impl Fn(u32, usize) -> f64) -> Trace {
    let mut b = TraceBuilder::new();
    for t in 0..steps {
        for h in 0..n {
            b.push(t as f64, &format!("h{h}"), at(t, h), 0.0, &|| String::new())
                .unwrap();
        }
    }
    b.finish()
}

fn settings(router: Router) -> Settings {
    Settings {
        router,
        range_m: 100.0,
        speed: 1000.0,
        buffer: 1_000_000,
        queue: Queue::Fifo,
        seed: 1,
        run: 0,
    }
}

fn msg(from: u32, to: u32, size: u64, created: f64) -> Message {
    Message {
        from,
        to,
        size,
        created,
        ttl_min: None,
        also_at: Vec::new(),
    }
}

#[test]
fn a_message_created_at_several_hosts_is_one_message_with_a_copy_at_each() {
    // Hosts 0 and 2 create it for host 4; host 1 sits beside 0, host 3
    // beside 2, host 4 far away. Spray-and-wait: each creator has its own
    // copies and gives half to its neighbour; 0 and 2 never meet.
    let t = trace(5, 30, |_, h| [0.0, 50.0, 1000.0, 1050.0, 5000.0][h]);
    let m = Message {
        also_at: vec![2],
        ..msg(0, 4, 5_000, 1.0)
    };
    let s = run(&t, vec![m], settings(Router::SprayAndWait { copies: 4 })).unwrap();
    assert_eq!((s.created, s.relayed, s.delivered), (1, 2, 0));
    let created: Vec<u64> = s.hosts.iter().map(|h| h.created).collect();
    assert_eq!(created, vec![1, 0, 1, 0, 0]);
    let first: Vec<Option<f64>> = s.hosts.iter().map(|h| h.first_received).collect();
    assert_eq!(first, vec![None, Some(6.0), None, Some(6.0), None]);
}

#[test]
fn a_message_to_a_neighbour_takes_size_over_speed() {
    // Hosts 0 and 1 side by side; 10 kB at 1 kB/s from 2 s.
    let t = trace(2, 30, |_, h| h as f64 * 50.0);
    let s = run(
        &t,
        vec![msg(0, 1, 10_000, 2.0)],
        settings(Router::DirectDelivery),
    )
    .unwrap();
    assert_eq!((s.created, s.started, s.relayed, s.delivered), (1, 1, 1, 1));
    assert_eq!(s.messages[0].delivered_at, Some(12.0));
    assert_eq!(
        (s.latencies.clone(), s.hop_counts.clone()),
        (vec![10.0], vec![1])
    );
    assert_eq!(s.summary().overhead_ratio, 0.0);
}

#[test]
fn a_link_down_before_the_end_aborts_and_loses_the_transfer() {
    // In range for 0..=8 s, then apart until 15 s, then together again.
    let t = trace(2, 40, |t, h| {
        if h == 1 && (9..15).contains(&t) {
            500.0
        } else {
            h as f64 * 50.0
        }
    });
    let s = run(
        &t,
        vec![msg(0, 1, 10_000, 0.0)],
        settings(Router::DirectDelivery),
    )
    .unwrap();
    assert_eq!((s.started, s.aborted, s.delivered), (2, 1, 1));
    // Restarted at 15 s from nothing: 10 s more.
    assert_eq!(s.messages[0].delivered_at, Some(25.0));
}

#[test]
fn epidemic_relays_through_a_carrier_and_direct_delivery_waits() {
    // Host 1 meets 0 early, then drives to 2; 0 and 2 never meet.
    let t = trace(3, 60, |t, h| match h {
        0 => 0.0,
        1 => {
            if t < 20 {
                50.0
            } else {
                1000.0
            }
        }
        _ => 1050.0,
    });
    let m = || vec![msg(0, 2, 5_000, 1.0)];
    let e = run(&t, m(), settings(Router::Epidemic)).unwrap();
    assert_eq!((e.delivered, e.hop_counts.clone()), (1, vec![2]));
    assert_eq!(e.summary().overhead_ratio, 1.0);
    let d = run(&t, m(), settings(Router::DirectDelivery)).unwrap();
    assert_eq!((d.delivered, d.started), (0, 0));
    // First contact hands the message on and keeps no copy (the carrier
    // removes its own after delivering, as The ONE's does).
    let f = run(&t, m(), settings(Router::FirstContact)).unwrap();
    assert_eq!((f.delivered, f.removed), (1, 2));
}

#[test]
fn binary_spray_and_wait_halves_the_copies() {
    // The source meets hosts 1, 2 and 3 in turn (10 s each); host 4, the
    // destination, is never met. 4 copies: 1 gets 2, 2 gets 1, 3 none.
    let t = trace(5, 40, |t, h| match h {
        0 => 0.0,
        4 => 5000.0,
        h if (t / 10) as usize + 1 == h => 50.0,
        h => 1000.0 * h as f64,
    });
    let s = run(
        &t,
        vec![msg(0, 4, 2_000, 0.0)],
        settings(Router::SprayAndWait { copies: 4 }),
    )
    .unwrap();
    assert_eq!((s.started, s.relayed, s.delivered), (2, 2, 0));
    let e = run(&t, vec![msg(0, 4, 2_000, 0.0)], settings(Router::Epidemic)).unwrap();
    assert_eq!(e.relayed, 3);
}

#[test]
fn one_transfer_at_a_time_per_host() {
    // Three hosts together, two messages from 0 to 1 and 2: sent in turn.
    let t = trace(3, 30, |_, h| h as f64 * 10.0);
    let ms = vec![msg(0, 1, 5_000, 0.0), msg(0, 2, 5_000, 0.0)];
    let s = run(&t, ms, settings(Router::DirectDelivery)).unwrap();
    let mut at: Vec<f64> = s.messages.iter().map(|m| m.delivered_at.unwrap()).collect();
    at.sort_by(f64::total_cmp);
    assert_eq!(at, vec![5.0, 10.0]);
}

#[test]
fn a_full_buffer_drops_the_oldest_and_ttl_expires() {
    let t = trace(2, 200, |_, h| h as f64 * 1000.0);
    let mut st = settings(Router::Epidemic);
    st.buffer = 1_500;
    let ms = vec![msg(0, 1, 1_000, 0.0), msg(0, 1, 1_000, 5.0)];
    let s = run(&t, ms, st.clone()).unwrap();
    assert_eq!((s.dropped, s.buffer_times.clone()), (1, vec![5.0]));
    let mut m = msg(0, 1, 100, 0.0);
    m.ttl_min = Some(2);
    st.buffer = 1_000_000;
    let s = run(&t, vec![m], st).unwrap();
    // Less than a minute left after 60 s; checked every 60 s.
    assert_eq!((s.dropped, s.buffer_times.clone()), (1, vec![120.0]));
}

#[test]
fn prophet_forwards_to_better_predictors_only() {
    // 1 meets the destination 3 early (0-4 s); later 0 meets 1 and 2 on
    // either side (1 and 2 out of each other's range). 2 only knows 3
    // through 0, less well than 0 does: 0 hands the message to 1 only.
    let t = trace(4, 60, |t, h| match (h, t) {
        (3, _) => 0.0,
        (1, 0..=4) => 50.0,
        (0, _) => 3000.0,
        (1, _) => 3060.0,
        (2, 5..) => 2940.0,
        _ => 8000.0,
    });
    let s = run(
        &t,
        vec![msg(0, 3, 1_000, 10.0)],
        settings(Router::Prophet(ProphetParams::default())),
    )
    .unwrap();
    assert_eq!(
        (s.started, s.hosts[1].received, s.hosts[2].received),
        (1, 1, 0)
    );
}

#[test]
fn runs_are_deterministic_and_bad_settings_are_clear_errors() {
    let t = trace(12, 100, |t, h| {
        ((t as f64 * (h as f64 + 1.0) * 7.0) % 400.0) + h as f64
    });
    let g = message::Generator {
        interval: (2, 5),
        size: (500, 3000),
        hosts: (0, 12),
        to_hosts: None,
        time: None,
        prefix: "M".into(),
    };
    let mut st = settings(Router::Epidemic);
    st.queue = Queue::Random;
    let ms = g.messages(100.0, Some(1), 3, 0);
    let a = run(&t, ms.clone(), st.clone()).unwrap();
    assert_eq!(a, run(&t, ms.clone(), st.clone()).unwrap());
    assert!(a.delivered > 0 && a.relayed > a.delivered);
    let e = run(&t, vec![msg(0, 12, 1, 0.0)], st.clone()).unwrap_err().0;
    assert!(e.contains("host 12") && e.contains("0 to 11"), "{e}");
    st.speed = 0.0;
    assert!(run(&t, ms, st).unwrap_err().0.contains("must be positive"));
}
