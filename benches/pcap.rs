//! The cost of pcap output: one full `hadaller-highway` pass (135 s, TCP
//! download at up to 54 Mbps) run without captures and with a capture per
//! radio plus a sniffer by the road (which records every frame it decodes),
//! interleaved, each the median of `RUNS` runs. Prints both wall times,
//! the bytes written and the ratio (target: under 2×).
//!
//! `cargo bench -p wayside-sim --bench pcap`

use std::time::Instant;
use wayside_sim::run_scenario_pcap;
use wayside_sim::scenario::builtin;

const RUNS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut text = builtin("hadaller-highway")
        .expect("built-in scenario")
        .to_string();
    text.push_str(
        "\n[[node]]\nname = \"sniffer\"\nposition = [30, -5]\n\n[pcap]\nsniffer = \"sniffer\"\n",
    );
    let dir = std::env::temp_dir().join(format!("wayside-pcap-bench-{}", std::process::id()));
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let mut written = 0;
    let mut frames = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = run_scenario_pcap(&text, &[], Some(1), 0, None).expect("runs");
        without.push(started.elapsed().as_secs_f64());
        frames = out.trace.frames.len();
        let started = Instant::now();
        let out = run_scenario_pcap(&text, &[], Some(1), 0, Some(&dir)).expect("runs");
        with.push(started.elapsed().as_secs_f64());
        written = out
            .pcaps
            .iter()
            .map(|p| std::fs::metadata(p).expect("written").len())
            .sum::<u64>();
        // Each run writes new files, as a user's does (not timed).
        std::fs::remove_dir_all(&dir).expect("bench directory");
    }
    let (a, b) = (median(without), median(with));
    println!("hadaller-highway + sniffer, {frames} frame rows, median of {RUNS} interleaved runs:");
    println!("  without pcap  {a:.3} s");
    println!(
        "  with pcap     {b:.3} s  ({:.1} MB in 3 files)",
        written as f64 / 1e6
    );
    println!("  ratio         {:.2}x (target: under 2x)", b / a);
}
