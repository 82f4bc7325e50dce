//! Speed and memory of the contact-level epidemic engine (wayside-contact).
//!
//!     cargo bench -p wayside-contact --bench epidemic -- [CITY_FCD]
//!
//! 1. Scale: a synthetic 100,000-vehicle trace generated step by step (no
//!    SUMO): time per simulated step and memory, and the same steps with an
//!    O(n²) all-pairs contact search as the baseline (ratio printed).
//! 2. With CITY_FCD (the SUMO city's `fcd.xml.gz` from `wayside epidemic
//!    city`): the time to read the trace, then one run at 12.5% with 12
//!    seeds, printed separately, and the peak memory; then the whole
//!    Figure 13 sweep (6 penetrations x 3 seed counts x 20 runs = 360 runs)
//!    on 2 threads sharing the trace.
//!
//! Peer figure, not measured here (we have no The ONE on this machine):
//! the issue reports The ONE needs about 16 s for 1,303 cars over 300
//! simulated seconds and grows about as N^1.6.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use wayside_contact::epidemic::{in_contact, Epidemic, Params, RANGE_M};
use wayside_contact::grid::Grid;
use wayside_contact::trace::{Step, TraceBuilder};
use wayside_contact::{epidemic, fcd};
use wayside_sim::rng::Stream;

/// Peak resident memory of this process so far, MiB (Linux VmHWM).
fn peak_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Synthetic city: `n` vehicles on a Manhattan grid of roads 250 m apart in
/// a square sized for the Portland trace's density (16,529 vehicles on
/// 21 km²), each driving along its road at 8-25 m/s and wrapping around.
struct Synthetic {
    side: f64,
    start: Vec<(f64, f64)>,
    velocity: Vec<(f64, f64)>,
}

impl Synthetic {
    fn new(n: usize) -> Self {
        let side = (21.0e6 * n as f64 / 16_529.0).sqrt();
        let mut r = Stream::new("run", 1, 0, "bench/synthetic");
        let lanes = (side / 250.0).floor();
        let (mut start, mut velocity) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            let road = (r.uniform() * lanes).floor() * 250.0;
            let along = r.uniform() * side;
            let speed = (8.0 + 17.0 * r.uniform()) * if r.uniform() < 0.5 { 1.0 } else { -1.0 };
            if r.uniform() < 0.5 {
                start.push((along, road));
                velocity.push((speed, 0.0));
            } else {
                start.push((road, along));
                velocity.push((0.0, speed));
            }
        }
        Synthetic {
            side,
            start,
            velocity,
        }
    }

    fn positions(&self, t: f64, x: &mut Vec<f32>, y: &mut Vec<f32>) {
        x.clear();
        y.clear();
        for (s, v) in self.start.iter().zip(&self.velocity) {
            x.push((s.0 + v.0 * t).rem_euclid(self.side) as f32);
            y.push((s.1 + v.1 * t).rem_euclid(self.side) as f32);
        }
    }
}

fn synthetic(n: usize, steps: usize, penetration: f64) {
    let names: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let city = Synthetic::new(n);
    let vehicle: Vec<u32> = (0..n as u32).collect();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let mut e = Epidemic::new(&names, &Params::paper(penetration, 24, 1, 0)).expect("parameters");
    let mut gen_s = 0.0;
    let started = Instant::now();
    for i in 0..steps {
        let g = Instant::now();
        city.positions(i as f64, &mut x, &mut y);
        gen_s += g.elapsed().as_secs_f64();
        e.step(Step {
            time: i as f64,
            vehicle: &vehicle,
            x: &x,
            y: &y,
        });
    }
    let wall = started.elapsed().as_secs_f64() - gen_s;
    let heap = e.heap_bytes();
    let out = e.finish();
    println!(
        "synthetic {n} vehicles, {:.1} km square, {:.3}% equipped ({} devices, 24 seeds), {steps} steps: \
         {:.2} ms per step (generating positions: {:.2} ms per step, not counted); engine state {:.1} MiB; \
         {} devices complete; peak RSS so far {:.0} MiB",
        city.side / 1000.0,
        penetration * 100.0,
        out.devices(),
        wall * 1e3 / steps as f64,
        gen_s * 1e3 / steps as f64,
        heap as f64 / (1 << 20) as f64,
        out.complete,
        peak_mib()
    );

    // Baseline: the same contact question answered by comparing every
    // holder with every candidate, at one instant with all devices in play.
    city.positions(0.0, &mut x, &mut y);
    let devices = (penetration * n as f64).round() as usize;
    let holders: Vec<(f32, f32)> = (0..devices / 2).map(|i| (x[i], y[i])).collect();
    let candidates: Vec<(u32, (f32, f32))> = (devices / 2..devices)
        .map(|i| (i as u32, (x[i], y[i])))
        .collect();
    let mut grid = Grid::new(RANGE_M);
    let mut got = Vec::new();
    let reps = 20;
    let g = Instant::now();
    for _ in 0..reps {
        got.clear();
        in_contact(&mut grid, &holders, &candidates, RANGE_M, &mut got);
    }
    let grid_s = g.elapsed().as_secs_f64() / reps as f64;
    let b = Instant::now();
    let brute: Vec<u32> = candidates
        .iter()
        .filter(|(_, p)| {
            holders
                .iter()
                .any(|h| ((p.0 - h.0) as f64).hypot((p.1 - h.1) as f64) <= RANGE_M)
        })
        .map(|c| c.0)
        .collect();
    let brute_s = b.elapsed().as_secs_f64();
    assert_eq!(got, brute, "grid and all-pairs contacts differ");
    println!(
        "  one instant, {} holders x {} candidates: grid {:.3} ms, all pairs {:.1} ms: grid {:.0}x faster",
        holders.len(),
        candidates.len(),
        grid_s * 1e3,
        brute_s * 1e3,
        brute_s / grid_s
    );
}

const PENETRATIONS: [f64; 6] = [
    1.0 / 256.0,
    1.0 / 128.0,
    1.0 / 64.0,
    1.0 / 32.0,
    1.0 / 16.0,
    1.0 / 8.0,
];
const SEEDS: [usize; 3] = [4, 12, 24];

fn city(path: &Path) {
    // The city build records from the end of its 300 s warm-up to 1200 s.
    let started = Instant::now();
    let trace = fcd::read_file(path, TraceBuilder::window(300.0, 1200.0)).expect("trace");
    let read_s = started.elapsed().as_secs_f64();
    let st = trace.stats();
    println!(
        "city {}: {} vehicles, {} steps, {} samples ({:.0} MiB in memory), mean moving speed {:.1} km/h",
        path.display(),
        st.vehicles,
        st.steps,
        st.samples,
        trace.heap_bytes() as f64 / (1 << 20) as f64,
        st.mean_moving_speed * 3.6
    );
    println!(
        "  read the trace: {read_s:.2} s; peak RSS so far {:.0} MiB",
        peak_mib()
    );
    let s = Instant::now();
    let out = epidemic::run(&trace, &Params::paper(0.125, 12, 1, 0)).expect("run");
    let sim_s = s.elapsed().as_secs_f64();
    println!(
        "  one run, 12.5% ({} devices), 12 seeds: simulate {:.3} s ({:.0} steps/s); {:.1}% complete; peak RSS {:.0} MiB",
        out.devices(),
        sim_s,
        st.steps as f64 / sim_s,
        out.fraction() * 100.0,
        peak_mib()
    );

    let points: Vec<(f64, usize, u64)> = SEEDS
        .iter()
        .flat_map(|&s| {
            PENETRATIONS
                .iter()
                .flat_map(move |&p| (0..20u64).map(move |r| (p, s, r)))
        })
        .collect();
    let trace = Arc::new(trace);
    let next = Arc::new(AtomicUsize::new(0));
    let s = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (trace, next, points) = (trace.clone(), next.clone(), points.clone());
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(p, seeds, run)) = points.get(i) else {
                    break;
                };
                epidemic::run(&trace, &Params::paper(p, seeds, 1, run)).expect("run");
            })
        })
        .collect();
    for t in threads {
        t.join().expect("worker");
    }
    let sweep_s = s.elapsed().as_secs_f64();
    println!(
        "  Figure 13 sweep, {} runs on 2 threads: {:.1} s ({:.0} ms a run); peak RSS {:.0} MiB",
        points.len(),
        sweep_s,
        sweep_s * 1e3 * 2.0 / points.len() as f64,
        peak_mib()
    );
}

fn main() {
    // `cargo bench` passes "--bench"; anything else is the city trace.
    let city_fcd = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    synthetic(100_000, 60, 0.125);
    synthetic(100_000, 20, 1.0 - 24.0 / 100_000.0);
    match city_fcd {
        Some(p) => city(Path::new(&p)),
        None => println!(
            "city: give the SUMO city's fcd.xml.gz (from `wayside epidemic city`) as an argument"
        ),
    }
    println!("peer (not measured here): The ONE, ~16 s for 1,303 cars over 300 s, growing ~N^1.6 (figure from the issue)");
}
