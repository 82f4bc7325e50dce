//! Simulator speed: frames simulated per wall-clock second on the saturation
//! scenario (one saturated 54 Mbps 802.11g link), on the link-level drive-by
//! (a car passing an AP with fading, shadowing and a multi-rate retry chain)
//! and on one full `hadaller-highway` run (scanning, association, ARP, TCP
//! over a 135 s pass at 80 km/h).
//!
//! Criterion reports throughput in frames (transmissions, data and ACK) per
//! second; after it, the harness prints each scenario's speed-up over real
//! time (simulated seconds per wall-clock second) measured in the same run.
//!
//! `cargo bench -p wayside-sim --bench simulator`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Instant;
use wayside_sim::scenario::builtin;
use wayside_sim::sim::run_scenario;

const CASES: &[(&str, &str)] =
    &[("saturation", "duration=\"2 s\""), ("drive-by", "duration=\"140 s\""), ("hadaller-highway", "duration=\"135 s\"")];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulator");
    group.sample_size(10);
    for &(name, duration) in CASES {
        let text = builtin(name).expect("built-in scenario");
        let overrides = vec![duration.to_string()];
        let frames = run_scenario(text, &overrides, Some(1), 0).expect("runs").stats.transmissions;
        group.throughput(Throughput::Elements(frames));
        group.bench_function(name, |b| b.iter(|| run_scenario(text, &overrides, Some(1), 0).expect("runs")));
    }
    group.finish();
    for &(name, duration) in CASES {
        let text = builtin(name).expect("built-in scenario");
        let overrides = vec![duration.to_string()];
        let started = Instant::now();
        let out = run_scenario(text, &overrides, Some(1), 0).expect("runs");
        let wall = started.elapsed().as_secs_f64();
        println!(
            "{name}: {} frames, {:.0} frames/s, {:.0}x faster than real time ({} s simulated in {:.3} s)",
            out.stats.transmissions,
            out.stats.transmissions as f64 / wall,
            out.stats.simulated.as_secs_f64() / wall,
            out.stats.simulated.as_secs_f64(),
            wall
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
