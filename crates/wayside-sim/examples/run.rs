//! Runs a built-in scenario or a scenario file once, for profiling and for
//! checking that a change leaves results byte-identical:
//! `cargo run --release --example run -- drive-by [--seed N] [--summary]
//! [--no-digest] [--undetectable] [KEY=VALUE ...]` prints the event and
//! transmission counts and a SHA-256 digest of every trace column
//! (`--no-digest`: not, for timing against older commits, whose example
//! had none); `--summary` adds, per node that received data, the megabytes
//! delivered to its applications and where it first associated;
//! `--undetectable` adds what the run counted of undetectable preambles
//! and the digest without the `frames` rows of their drops (with
//! `radio.undetectable_rows=true`, the same as a run that counts them);
//! `--columns` prints a digest per column, also without those rows.

use sha2::{Digest, Sha256};
use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;
use wayside_sim::trace::{Column, ConnEvent, Trace};

/// The digest of every column, leaving out the `frames` rows `without`.
fn digest(trace: &Trace, without: &[u32]) -> String {
    let mut h = Sha256::new();
    each_column(trace, without, |_, name, feed| {
        h.update(name.as_bytes());
        feed(&mut h)
    });
    hex(h)
}

/// Per column (`table.column`), the digest of its values, leaving out the
/// `frames` rows `without`.
fn per_column(trace: &Trace, without: &[u32]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    each_column(trace, without, |table, name, feed| {
        let mut h = Sha256::new();
        feed(&mut h);
        out.push((format!("{table}.{name}"), hex(h)));
    });
    out
}

fn hex(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Calls `each` with every column's table, name and a function that feeds
/// its values (but the `frames` rows `without`) to a hasher.
fn each_column(trace: &Trace, without: &[u32], mut each: impl FnMut(&str, &str, &dyn Fn(&mut Sha256))) {
    let mut keep = vec![true; trace.frames.len()];
    without.iter().for_each(|&r| keep[r as usize] = false);
    for (table, cols) in trace.tables() {
        for (name, col) in cols {
            let kept = |i: &usize| table != "frames" || keep[*i];
            let feed = |h: &mut Sha256| match &col {
                Column::U8(v) | Column::Category(v, _) => {
                    let v: Vec<u8> = (0..v.len()).filter(kept).map(|i| v[i]).collect();
                    h.update(v)
                }
                Column::U16(v) => (0..v.len())
                    .filter(kept)
                    .for_each(|i| h.update(v[i].to_le_bytes())),
                Column::U32(v) | Column::Node(v) => (0..v.len())
                    .filter(kept)
                    .for_each(|i| h.update(v[i].to_le_bytes())),
                Column::U64(v) => (0..v.len())
                    .filter(kept)
                    .for_each(|i| h.update(v[i].to_le_bytes())),
                Column::F32(v) => (0..v.len())
                    .filter(kept)
                    .for_each(|i| h.update(v[i].to_le_bytes())),
                Column::F64(v) => (0..v.len())
                    .filter(kept)
                    .for_each(|i| h.update(v[i].to_le_bytes())),
            };
            each(table, name, &feed);
        }
    }
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
    let show_undetectable = args.iter().any(|a| a == "--undetectable");
    let show_columns = args.iter().any(|a| a == "--columns");
    let flags = ["--summary", "--no-digest", "--undetectable", "--columns"];
    args.retain(|a| !flags.contains(&a.as_str()));
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
                print!(", digest {}", digest(&out.trace, &[]));
            }
            println!();
            if show_undetectable {
                let u = &out.trace.undetectable;
                let drops: u64 = u.drops.iter().flatten().sum();
                println!(
                    "undetectable: {} arrivals ({} divergent), {} drops counted, \
                     {} rows; without them, digest {}",
                    u.arrivals,
                    u.divergent,
                    drops,
                    u.rows.len(),
                    digest(&out.trace, &u.rows)
                );
            }
            if show_columns {
                // Without the rows of counted drops' kept rows, if any.
                for (name, d) in per_column(&out.trace, &out.trace.undetectable.rows) {
                    println!("{name:<28} {d}");
                }
            }
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
