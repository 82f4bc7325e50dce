//! Runs a built-in scenario or a scenario file once, for profiling and for
//! checking that a change leaves results byte-identical:
//! `cargo run --release --example run -- drive-by [--seed N] [--summary]
//! [--no-digest] [KEY=VALUE ...]` prints the event and transmission counts
//! and a SHA-256 digest of every trace column (`--no-digest`: not, for
//! timing against older commits, whose example had none); `--summary` adds,
//! per node that received data, the megabytes delivered to its applications
//! and where it first associated.

use sha2::{Digest, Sha256};
use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;
use wayside_sim::trace::{Column, ConnEvent, Trace};

fn digest(trace: &Trace) -> String {
    let mut h = Sha256::new();
    for (name, col) in trace.tables().into_iter().flat_map(|(_, cols)| cols) {
        h.update(name.as_bytes());
        match col {
            Column::U8(v) | Column::Category(v, _) => h.update(v),
            Column::U16(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::U32(v) | Column::Node(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::U64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::F32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::F64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Per receiving node: MB delivered, and x at its first association.
fn summary(trace: &Trace) {
    let mut nodes: std::collections::BTreeMap<u32, (u64, Option<f32>)> = Default::default();
    let t = &trace.transport;
    for (node, bytes) in t.node.iter().zip(&t.bytes) {
        nodes.entry(*node).or_default().0 += u64::from(*bytes);
    }
    let e = &trace.events;
    for i in 0..e.len() {
        if e.event[i] == ConnEvent::Associated as u8 {
            if let Some((_, at)) = nodes.get_mut(&e.node[i]) {
                at.get_or_insert(e.x[i]);
            }
        }
    }
    let total: u64 = nodes.values().map(|(b, _)| b).sum();
    println!("{:>6} {:>10} {:>14}", "node", "MB", "associated x");
    for (node, (bytes, at)) in &nodes {
        let at = at.map_or("-".to_string(), |x| format!("{x:.0} m"));
        println!("{node:>6} {:>10.2} {at:>14}", *bytes as f64 / 1e6);
    }
    println!("{:>6} {:>10.2}", "total", total as f64 / 1e6);
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let name = if args.is_empty() {
        "drive-by".to_string()
    } else {
        args.remove(0)
    };
    let show_summary = args.iter().any(|a| a == "--summary");
    let show_digest = !args.iter().any(|a| a == "--no-digest");
    args.retain(|a| a != "--summary" && a != "--no-digest");
    let mut seed = None;
    if let Some(i) = args.iter().position(|a| a == "--seed") {
        let value = args.get(i + 1).and_then(|s| s.parse().ok());
        let Some(v) = value else {
            eprintln!("error: --seed takes a whole number");
            std::process::exit(2)
        };
        seed = Some(v);
        args.drain(i..i + 2);
    }
    let text = match builtin(&name) {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(&name).unwrap_or_else(|e| {
            eprintln!("error: {name}: {e}");
            std::process::exit(2)
        }),
    };
    match run_scenario(&text, &args, seed, 0) {
        Ok(out) => {
            print!(
                "{} events, {} transmissions",
                out.stats.events, out.stats.transmissions
            );
            if show_digest {
                print!(", digest {}", digest(&out.trace));
            }
            println!();
            if show_summary {
                summary(&out.trace);
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}
