//! Runs a built-in scenario or a scenario file once, for profiling and for
//! checking that a change leaves results byte-identical:
//! `cargo run --release --example run -- drive-by [--seed N] [KEY=VALUE ...]`
//! prints the event and transmission counts and a SHA-256 digest of every
//! trace column.

use sha2::{Digest, Sha256};
use wayside_sim::scenario::builtin;
use wayside_sim::run_scenario;
use wayside_sim::trace::{Column, Trace};

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

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let name = if args.is_empty() { "drive-by".to_string() } else { args.remove(0) };
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
        Ok(out) => println!("{} events, {} transmissions, digest {}", out.stats.events, out.stats.transmissions, digest(&out.trace)),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}
