//! The performance anomaly and airtime fairness, through whole runs.
//!
//! - Heusse et al., "Performance anomaly of 802.11b" (INFOCOM 2003): with
//!   one host at 1 Mb/s among hosts at 11 Mb/s, all get about the same
//!   throughput, the fast ones below 1 Mb/s (the abstract), and that
//!   throughput is the paper's Section III expression: one frame of each
//!   host per cycle of (N-1) fast and one slow exchange.
//! - Høiland-Jørgensen et al., "Ending the Anomaly" (USENIX ATC 2017): an
//!   AP whose queue is packet-fair (a FIFO) gives each station airtime in
//!   proportion to its frame duration; the airtime scheduler gives each
//!   the same share, and each station's throughput is then its share of
//!   its own rate (the paper's Section 3 model; see docs/queues.md).

mod common;
use common::{id, run};
use wayside_sim::mac::{ACK_BYTES, DATA_OVERHEAD};
use wayside_sim::phy::mode::{Preamble, Standard};
use wayside_sim::trace::{FrameKind, MacEvent, PhyEvent};
use wayside_sim::RunOutput;

const HEUSSE: &str = include_str!("../../../scenarios/heusse-anomaly.toml");
const SECONDS: f64 = 10.0;
const PAYLOAD: u32 = 1500;

/// Mb/s that `node` delivered (acknowledged MSDU bytes) over the run.
fn delivered_mbps(out: &RunOutput, node: &str) -> f64 {
    let (n, mac) = (id(out, node), &out.trace.mac);
    let bytes: u64 = (0..mac.len())
        .filter(|&i| mac.node[i] == n && mac.event[i] == MacEvent::Delivered as u8)
        .map(|i| u64::from(mac.bytes[i]))
        .sum();
    bytes as f64 * 8.0 / SECONDS / 1e6
}

/// One exchange at `rate` Mb/s on 802.11b with long preambles: DIFS, the
/// data frame, SIFS and the ACK at the control rate (Heusse's T without
/// the contention term), in seconds.
fn exchange_b(rate: f64) -> f64 {
    let std = Standard::B;
    let t = std.timing(true);
    let mode = std.mode_by_mbps(rate).unwrap();
    let data = mode.airtime(PAYLOAD + DATA_OVERHEAD, Preamble::Long, std);
    let ack = std.control_rate(mode).airtime(ACK_BYTES, Preamble::Long, std);
    (t.difs + data + t.sifs + ack).as_secs_f64()
}

/// Heusse et al.'s per-host throughput, Mb/s, for `fast` hosts at 11 Mb/s
/// and one at `slow` Mb/s: a frame from each per cycle, the cycle being
/// every host's exchange plus the mean backoff between them (CWmin/2
/// slots, split over the N contenders); collisions left out.
fn heusse_mbps(fast: usize, slow: f64) -> f64 {
    let t = Standard::B.timing(true);
    let n = fast as f64 + 1.0;
    let backoff = t.cw_min as f64 / 2.0 * t.slot.as_secs_f64() / n;
    let cycle = fast as f64 * (exchange_b(11.0) + backoff) + exchange_b(slow) + backoff;
    f64::from(PAYLOAD) * 8.0 / cycle / 1e6
}

fn heusse(slow: f64) -> Vec<f64> {
    let rate = format!("node.slow.rate_control.rate=\"{slow} Mbps\"");
    let out = run(HEUSSE, &["duration=\"10 s\"", &rate], 1);
    let rates: Vec<f64> = ["fast1", "fast2", "fast3", "slow"]
        .iter()
        .map(|n| delivered_mbps(&out, n))
        .collect();
    println!("slow host at {slow} Mb/s: {rates:.3?} Mb/s");
    rates
}

#[test]
fn one_slow_host_brings_every_host_to_its_throughput() {
    for slow in [1.0, 2.0] {
        let rates = heusse(slow);
        let expect = heusse_mbps(3, slow);
        let (lo, hi) = rates
            .iter()
            .fold((f64::MAX, 0.0_f64), |(l, h), &r| (l.min(r), h.max(r)));
        // All about equal: the fast hosts get the slow host's throughput.
        assert!(hi / lo < 1.2, "slow at {slow}: {rates:?}");
        // Within 15% of the paper's expression (it leaves collisions out).
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let err = (mean - expect) / expect;
        println!("  mean {mean:.3} Mb/s, Heusse {expect:.3} Mb/s ({:+.1}%)", err * 100.0);
        assert!(err.abs() < 0.15, "slow at {slow}: {mean} against {expect}");
        if slow == 1.0 {
            // The abstract: the 11 Mb/s hosts fall below 1 Mb/s.
            assert!(rates[..3].iter().all(|&r| r < 1.0), "{rates:?}");
        }
    }
}

const ATC: &str = include_str!("../../../scenarios/airtime-anomaly.toml");
const STATIONS: [&str; 3] = ["fast1", "fast2", "slow"];

/// A station as the AP served it.
#[derive(Debug)]
struct Served {
    /// Mb/s delivered to it.
    mbps: f64,
    /// Its share of the AP's transmit airtime.
    share: f64,
    /// Mean airtime per MSDU sent to it (every attempt), s.
    per_frame: f64,
    /// The rate most of its data frames went at, Mb/s.
    rate: f32,
}

fn downstream(queue: &str) -> Vec<Served> {
    let set = format!("node.ap.queue=\"{queue}\"");
    let out = run(ATC, &["duration=\"10 s\"", &set], 1);
    let ap = id(&out, "ap");
    let stats = &out.stats.queues[ap as usize];
    let total: f64 = stats.airtime.iter().map(|(_, a)| a.tx.as_secs_f64()).sum();
    let (mac, frames) = (&out.trace.mac, &out.trace.frames);
    let served: Vec<Served> = STATIONS
        .iter()
        .map(|s| {
            let n = id(&out, s);
            let to = |i: usize| mac.node[i] == ap && mac.peer[i] == n;
            let delivered = |i: usize| mac.event[i] == MacEvent::Delivered as u8;
            let failed = |i: usize| mac.event[i] == MacEvent::Failed as u8;
            let bytes: u64 = (0..mac.len())
                .filter(|&i| to(i) && delivered(i))
                .map(|i| u64::from(mac.bytes[i]))
                .sum();
            let msdus = (0..mac.len())
                .filter(|&i| to(i) && (delivered(i) || failed(i)))
                .count();
            let air = stats
                .airtime
                .iter()
                .find(|(p, _)| p.0 == n)
                .map_or(0.0, |(_, a)| a.tx.as_secs_f64());
            let mut rates: Vec<f32> = (0..frames.len())
                .filter(|&i| frames.node[i] == ap && frames.peer[i] == n)
                .filter(|&i| frames.event[i] == PhyEvent::Tx as u8)
                .filter(|&i| frames.kind[i] == FrameKind::Data as u8)
                .map(|i| frames.rate_mbps[i])
                .collect();
            rates.sort_by(f32::total_cmp);
            Served {
                mbps: bytes as f64 * 8.0 / SECONDS / 1e6,
                share: air / total,
                per_frame: air / msdus.max(1) as f64,
                rate: rates[rates.len() / 2],
            }
        })
        .collect();
    println!("{queue}: {served:.3?}");
    served
}

#[test]
fn a_fifo_shares_frames_and_the_airtime_scheduler_shares_airtime() {
    let fifo = downstream("fifo");
    let fair = downstream("airtime");
    assert!(fifo[0].rate == 54.0 && fifo[2].rate == 6.0, "{fifo:?}");
    let sum: f64 = fifo.iter().map(|s| s.per_frame).sum();
    for i in 0..3 {
        // FIFO: as many frames for each station, so airtime in proportion
        // to its frames' airtime, and the same throughput for each.
        let model = fifo[i].per_frame / sum;
        assert!((fifo[i].share - model).abs() < 0.05, "fifo {i}: {fifo:?}, model {model:.3}");
        assert!((fifo[i].mbps / fifo[2].mbps - 1.0).abs() < 0.1, "fifo {i}: {fifo:?}");
        // Airtime fairness: a third of the airtime each, so throughput in
        // inverse proportion to each station's airtime per frame.
        assert!((fair[i].share - 1.0 / 3.0).abs() < 0.05, "airtime {i}: {fair:?}");
        let model = fair[2].per_frame / fair[i].per_frame;
        let ratio = fair[i].mbps / fair[2].mbps / model;
        assert!((ratio - 1.0).abs() < 0.15, "airtime {i}: {fair:?}, {ratio:.3}");
    }
    // The fast stations gain (2.8 times here), the slow one loses.
    assert!(fair[0].mbps > 2.0 * fifo[0].mbps, "{fifo:?} {fair:?}");
    assert!(fair[2].mbps < fifo[2].mbps, "{fifo:?} {fair:?}");
}
