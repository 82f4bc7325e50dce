//! Runs a built-in scenario or a scenario file once, for profiling:
//! `cargo run --release --example run -- drive-by [KEY=VALUE ...]`.

use wayside_sim::scenario::builtin;
use wayside_sim::sim::run_scenario;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "drive-by".into());
    let text = match builtin(&name) {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(&name).unwrap_or_else(|e| {
            eprintln!("error: {name}: {e}");
            std::process::exit(2)
        }),
    };
    let overrides: Vec<String> = args.collect();
    match run_scenario(&text, &overrides, None, 0) {
        Ok(out) => println!("{} events, {} transmissions", out.stats.events, out.stats.transmissions),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}
