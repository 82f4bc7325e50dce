//! Helpers shared by the scenario-level tests: running a scenario text with
//! overrides, and reading a node's connection events from the trace.
#![allow(dead_code)] // each test file uses its own subset

use wayside_sim::scenario::builtin;
use wayside_sim::trace::{ConnEvent, MacEvent};
use wayside_sim::{run_scenario, RunOutput};

/// Runs `text` with `overrides` and run seed `seed`; panics on an error.
pub fn run(text: &str, overrides: &[&str], seed: u64) -> RunOutput {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    run_scenario(text, &o, Some(seed), 0).unwrap()
}

/// The trace id of the node called `name`.
pub fn id(out: &RunOutput, name: &str) -> u32 {
    out.node_names
        .iter()
        .position(|x| x == name)
        .unwrap_or_else(|| panic!("no node {name}")) as u32
}

/// (time in s, value) of every `ev` that `node` recorded.
pub fn events(out: &RunOutput, node: &str, ev: ConnEvent) -> Vec<(f64, f64)> {
    let n = id(out, node);
    let e = &out.trace.events;
    (0..e.len())
        .filter(|&i| e.node[i] == n && e.event[i] == ev as u8)
        .map(|i| (e.time_ns[i] as f64 * 1e-9, e.value[i]))
        .collect()
}

/// The built-in `saturation` scenario with `overrides`, run for `seconds`:
/// the receiver's delivered bits per second. Panics if any frame fails
/// (the two radios are 5 m apart).
pub fn saturation_bps(overrides: &[String], seconds: f64) -> f64 {
    let out = run_scenario(builtin("saturation").unwrap(), overrides, Some(1), 0).unwrap();
    let mac = &out.trace.mac;
    let delivered: u64 = (0..mac.len())
        .filter(|&i| mac.event[i] == MacEvent::Delivered as u8)
        .map(|i| mac.bytes[i] as u64)
        .sum();
    assert!(
        !(0..mac.len()).any(|i| mac.event[i] == MacEvent::Failed as u8),
        "no frame may fail at 5 m: {overrides:?}"
    );
    delivered as f64 * 8.0 / seconds
}
