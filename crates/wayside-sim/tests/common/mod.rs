//! Helpers shared by the scenario-level tests: running a scenario text with
//! overrides, and reading a node's connection events from the trace.
#![allow(dead_code)] // each test file uses its own subset

use wayside_sim::trace::ConnEvent;
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
