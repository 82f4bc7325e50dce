//! Every built-in scenario runs to completion and records traffic.

use wayside_sim::run_scenario;
use wayside_sim::scenario::BUILTIN;

#[test]
fn every_builtin_scenario_runs() {
    for (name, text) in BUILTIN {
        let out = run_scenario(text, &["duration=\"20 s\"".to_string()], Some(3), 0)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            out.trace.frames.len() > 100,
            "{name}: only {} frame records",
            out.trace.frames.len()
        );
    }
}
