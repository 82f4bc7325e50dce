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
//! The `rate-control` group runs `hadaller-highway` as configured (SampleRate
//! at the AP and the car) and with rate control replaced by a fixed 54 Mbps
//! rate, and prints the overhead ratio — wall time per simulated frame and
//! per run, each the median of interleaved runs — measured in the same run
//! (target: rate control adds under 10%). Per frame is the fair figure: a
//! fixed rate changes how many frames a pass carries.
//!
//! `cargo bench -p wayside-sim --bench simulator`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Instant;
use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;

const CASES: &[(&str, &str)] = &[
    ("saturation", "duration=\"2 s\""),
    ("drive-by", "duration=\"140 s\""),
    ("hadaller-highway", "duration=\"135 s\""),
];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulator");
    group.sample_size(10);
    for &(name, duration) in CASES {
        let text = builtin(name).expect("built-in scenario");
        let overrides = vec![duration.to_string()];
        let frames = run_scenario(text, &overrides, Some(1), 0)
            .expect("runs")
            .stats
            .transmissions;
        group.throughput(Throughput::Elements(frames));
        group.bench_function(name, |b| {
            b.iter(|| run_scenario(text, &overrides, Some(1), 0).expect("runs"))
        });
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

/// `text` with every rate_control removed and a fixed 54 Mbps rate.
fn fixed_rate(text: &str) -> String {
    let mut doc: toml::Table = text.parse().expect("valid scenario");
    let mac = doc
        .get_mut("mac")
        .and_then(|m| m.as_table_mut())
        .expect("[mac]");
    mac.remove("rate_control");
    mac.insert("rate".into(), toml::Value::String("54 Mbps".into()));
    for node in doc
        .get_mut("node")
        .and_then(|n| n.as_array_mut())
        .expect("[[node]]")
    {
        node.as_table_mut()
            .expect("node table")
            .remove("rate_control");
    }
    toml::to_string(&doc).expect("serialises")
}

fn bench_rate_control(c: &mut Criterion) {
    let configured = builtin("hadaller-highway")
        .expect("built-in scenario")
        .to_string();
    let fixed = fixed_rate(&configured);
    let cases = [
        ("hadaller-highway/rate-control", &configured),
        ("hadaller-highway/fixed-54", &fixed),
    ];
    let mut group = c.benchmark_group("rate-control");
    group.sample_size(10);
    for (name, text) in cases {
        let frames = run_scenario(text, &[], Some(1), 0)
            .expect("runs")
            .stats
            .transmissions;
        group.throughput(Throughput::Elements(frames));
        group.bench_function(name, |b| {
            b.iter(|| run_scenario(text, &[], Some(1), 0).expect("runs"))
        });
    }
    group.finish();
    // Interleaved, in alternating order, so that machine load and whatever
    // one run leaves behind affect both alike.
    let mut per_frame = [Vec::new(), Vec::new()];
    let mut per_run = [Vec::new(), Vec::new()];
    for i in 0..9 {
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let text = cases[k].1;
            let started = Instant::now();
            let out = run_scenario(text, &[], Some(1), 0).expect("runs");
            let wall = started.elapsed().as_secs_f64();
            per_run[k].push(wall);
            per_frame[k].push(wall / out.stats.transmissions as f64);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [rc_frame, fixed_frame] = per_frame.map(median);
    let [rc_run, fixed_run] = per_run.map(median);
    println!(
        "rate control overhead on hadaller-highway: {:+.1}% wall time per simulated frame \
         ({:.0} vs {:.0} ns/frame), {:+.1}% per run ({:.3} s vs {:.3} s at a fixed 54 Mbps); target < +10%",
        (rc_frame / fixed_frame - 1.0) * 100.0,
        rc_frame * 1e9,
        fixed_frame * 1e9,
        (rc_run / fixed_run - 1.0) * 100.0,
        rc_run,
        fixed_run,
    );
}

criterion_group!(benches, bench, bench_rate_control);
criterion_main!(benches);
