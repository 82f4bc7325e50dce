//! Figure 12 (§5.5): content-discovery overhead in packets.
//!
//! A universe of 20,000 files; each device holds 10,000 chosen at random
//! (about 5,000 in common); `d` of the common files have a newer version on
//! one of the two devices (the side chosen at random). For each `d` it runs
//! two real [`broadside::Endpoint`]s over the in-memory link and counts
//! discovery packets (filters, match filters, records and plans, both
//! directions) for a full sync ("broadside") and until the first file to
//! transfer is identified ("broadside_first"). Baselines, all in packets of
//! the same payload:
//! - `full_set`: Minsky et al. with one evaluation per file on either device
//!   (|A| + |B| evaluations of 22 bytes: fileId ‖ version);
//! - `perfect_knowledge`: one evaluation per element of the symmetric
//!   difference of the (fileId, version) sets;
//! - `pinsketch`: a real PinSketch over GF(2^64) (elements are
//!   `H(fileId ‖ version)` truncated to 64 bits) of capacity |Δ|, i.e. the
//!   same perfect knowledge of |Δ| with 8-byte syndromes. Its decoding is
//!   checked on a 1/10-scale instance for every `d` (`pinsketch_ok`).
//!
//! Usage: `cargo run --release -p broadside --example fig12 [RUNS] > fig12.csv`

mod pinsketch;

use broadside::sim::Pair;
use broadside::{
    Certificate, Config, Endpoint, Event, Id160, Instant, MemStore, ProviderKey, TrustedKeys,
};
use pinsketch::Sketch;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeSet;

const PACKET: usize = 2304;

struct Universe {
    v1: Vec<Certificate>,
    v2: Vec<Certificate>,
}

fn universe(key: &ProviderKey, n: usize) -> Universe {
    let empty = Id160::hash(&[]);
    let cert = |i: usize, v: u16| {
        Certificate::issue(key, &format!("f{i}"), v, 0, empty).expect("valid name")
    };
    Universe {
        v1: (0..n).map(|i| cert(i, 1)).collect(),
        v2: (0..n).map(|i| cert(i, 2)).collect(),
    }
}

/// The two devices' holdings: (file index, version) per device.
fn holdings(
    n: usize,
    per: usize,
    d: usize,
    rng: &mut Xoshiro256PlusPlus,
) -> [Vec<(usize, u16)>; 2] {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(rng);
    let a: BTreeSet<usize> = idx[..per].iter().copied().collect();
    idx.shuffle(rng);
    let b: BTreeSet<usize> = idx[..per].iter().copied().collect();
    let mut common: Vec<usize> = a.intersection(&b).copied().collect();
    common.shuffle(rng);
    let newer: Vec<(usize, bool)> = common
        .iter()
        .take(d)
        .map(|&i| (i, rng.random::<bool>()))
        .collect();
    let version = |i: usize, side_a: bool| {
        newer
            .iter()
            .find(|(f, _)| *f == i)
            .map_or(1, |(_, on_a)| if *on_a == side_a { 2 } else { 1 })
    };
    [
        a.iter().map(|&i| (i, version(i, true))).collect(),
        b.iter().map(|&i| (i, version(i, false))).collect(),
    ]
}

fn element(u: &Universe, i: usize, v: u16) -> u64 {
    let c = if v == 1 { &u.v1[i] } else { &u.v2[i] };
    let h = Id160::hash(&[&c.file_id().0, &v.to_be_bytes()]);
    u64::from_le_bytes(h.0[..8].try_into().expect("8 bytes")).max(1)
}

fn symmetric_difference(u: &Universe, h: &[Vec<(usize, u16)>; 2]) -> Vec<u64> {
    let a: BTreeSet<u64> = h[0].iter().map(|&(i, v)| element(u, i, v)).collect();
    let b: BTreeSet<u64> = h[1].iter().map(|&(i, v)| element(u, i, v)).collect();
    a.symmetric_difference(&b).copied().collect()
}

/// Runs a Broadside sync; returns (discovery packets in total, until the first candidate).
fn broadside(
    u: &Universe,
    key: &ProviderKey,
    h: &[Vec<(usize, u16)>; 2],
    seed: u64,
) -> (u64, Option<u64>) {
    let trusted = TrustedKeys::new([key.public()]);
    let mk = |side: usize| {
        let mut store = MemStore::new();
        for &(i, v) in &h[side] {
            store.insert(
                if v == 1 {
                    u.v1[i].clone()
                } else {
                    u.v2[i].clone()
                },
                Vec::new(),
            );
        }
        let cfg = Config {
            seed: seed * 2 + side as u64,
            packet_size: PACKET,
            ..Config::default()
        };
        let ep = Endpoint::new(cfg, trusted.clone(), store.certificates(), Instant::ZERO)
            .expect("valid config");
        (ep, store)
    };
    let ((ea, sa), (eb, sb)) = (mk(0), mk(1));
    let mut p = Pair::new([ea, eb], [sa, sb], seed);
    let discovery = |p: &Pair| {
        p.nodes
            .iter()
            .map(|n| n.counters().tx.discovery.packets)
            .sum::<u64>()
    };
    let mut first = None;
    let finished = p.run_until(Instant::from_micros(600_000_000), |p| {
        if first.is_none()
            && p.events
                .iter()
                .any(|(_, e)| matches!(e, Event::Candidate { .. }))
        {
            first = Some(discovery(p));
        }
        p.events
            .iter()
            .any(|(_, e)| matches!(e, Event::SyncFinished { .. }))
    });
    assert!(finished, "sync did not finish");
    (discovery(&p), first)
}

fn packets(bytes: usize, payload: usize) -> usize {
    bytes.div_ceil(payload)
}

fn main() {
    let runs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let key = ProviderKey::from_seed([12; 32]);
    let (n, per) = (20_000, 10_000);
    let u = universe(&key, n);
    let small = universe(&key, n / 10);
    let payload = PACKET - 16;
    println!(
        "differing,broadside,broadside_first,full_set,perfect_knowledge,pinsketch,pinsketch_ok"
    );
    for d in [
        0usize, 1, 10, 20, 50, 100, 250, 500, 1000, 2000, 3000, 4000, 5000,
    ] {
        let (mut total, mut first, mut firsts, mut delta, mut ok) =
            (0u64, 0u64, 0u64, 0usize, true);
        for r in 0..runs {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(1000 * d as u64 + r);
            let h = holdings(n, per, d, &mut rng);
            let (t, f) = broadside(&u, &key, &h, 77 + r);
            total += t;
            if let Some(f) = f {
                first += f;
                firsts += 1;
            }
            delta += symmetric_difference(&u, &h).len();
            // PinSketch decoding, checked at 1/10 scale.
            let hs = holdings(n / 10, per / 10, d / 10, &mut rng);
            let diff = symmetric_difference(&small, &hs);
            let sketch = |side: usize| {
                Sketch::new(
                    diff.len(),
                    hs[side].iter().map(|&(i, v)| element(&small, i, v)),
                )
            };
            let candidates: Vec<u64> = (0..n / 10)
                .flat_map(|i| [element(&small, i, 1), element(&small, i, 2)])
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let decoded = sketch(0)
                .merge(&sketch(1))
                .decode(&candidates)
                .map(|mut v| {
                    v.sort_unstable();
                    v
                });
            ok &= decoded.as_deref() == Some(&diff[..]);
        }
        let runs_f = runs as f64;
        let delta = delta as f64 / runs_f;
        let first = if firsts == 0 {
            String::new()
        } else {
            format!("{:.1}", first as f64 / firsts as f64)
        };
        println!(
            "{d},{:.1},{first},{},{},{},{ok}",
            total as f64 / runs_f,
            packets(2 * per * 22, payload),
            packets((delta * 22.0) as usize, payload),
            packets((delta * 8.0) as usize, payload),
        );
    }
}
