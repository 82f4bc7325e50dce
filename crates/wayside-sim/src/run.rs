//! One run of a scenario: load, lower, simulate the training passes that
//! environment-aware rate control asks for, then the measured run.

use crate::config::SimConfig;
use crate::ids::NodeId;
use crate::pcap::{Air, Capture, CapturedNode};
use crate::ratectl::RateControlSpec;
use crate::rng::Stream;
use crate::scenario::ScenarioError;
use crate::trace::Trace;
use crate::world::{RunStats, World};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one run produces.
pub struct RunOutput {
    /// The scenario as run, after overrides (TOML).
    pub resolved: String,
    pub node_names: Vec<String>,
    pub trace: Trace,
    pub stats: RunStats,
    /// The capture files written, if any.
    pub pcaps: Vec<PathBuf>,
}

/// Loads `scenario` (TOML text), applies `overrides`, and runs it once.
pub fn run_scenario(scenario: &str, overrides: &[String], seed: Option<u64>, run: u64) -> Result<RunOutput, ScenarioError> {
    run_scenario_pcap(scenario, overrides, seed, run, None)
}

/// [`run_scenario`], writing a pcap per captured radio into `pcap_dir`
/// ([`crate::pcap`]) if one is given.
pub fn run_scenario_pcap(scenario: &str, overrides: &[String], seed: Option<u64>, run: u64, pcap_dir: Option<&Path>) -> Result<RunOutput, ScenarioError> {
    let (resolved, s) = crate::scenario::load(scenario, overrides)?;
    let mut cfg = s.to_sim_config(seed, run);
    train_rate_maps(&mut cfg);
    let mut world = World::new(&cfg);
    if let Some(dir) = pcap_dir {
        world.capture = Some(Capture::create(dir, &captured_nodes(&cfg), capture_air(&cfg)).map_err(|e| ScenarioError(e.0))?);
    }
    let node_names = world.node_names();
    let (trace, stats, capture) = world.run();
    let pcaps = capture.map_or(Ok(Vec::new()), Capture::finish).map_err(|e| ScenarioError(e.0))?;
    Ok(RunOutput { resolved, node_names, trace, stats, pcaps })
}

/// The nodes as the capture sees them: radios the `[pcap]` section lists
/// (every radio if it lists none) and the sniffer get a file.
fn captured_nodes(cfg: &SimConfig) -> Vec<CapturedNode> {
    let p = &cfg.pcap;
    cfg.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let id = NodeId(i as u32);
            let listed = p.nodes.is_empty() || p.nodes.contains(&id) || p.sniffer == Some(id);
            CapturedNode { name: n.name.clone(), role: n.role, tx_power: n.tx_power, captured: n.radio && listed }
        })
        .collect()
}

fn capture_air(cfg: &SimConfig) -> Air {
    Air { standard: cfg.radio.standard, preamble: cfg.radio.preamble, noise_floor: cfg.channel.noise_floor, beacon_interval: cfg.mgmt.beacon_interval }
}

/// Simulates the earlier passes environment-aware rate control asks for
/// (`training_passes`, the most any node asks) and installs what they
/// learned as each such node's map. Pass k runs the same scenario with the
/// same environment seed (same shadowing) and a run seed drawn from
/// (seed, run, k), so fading, backoff and traffic differ from the measured
/// run's and from each other; each pass starts from the map learned so far.
fn train_rate_maps(cfg: &mut SimConfig) {
    let spec = |c: &SimConfig, i: usize| c.nodes[i].rate_control.clone().unwrap_or_else(|| c.mac.rate.clone());
    let passes = (0..cfg.nodes.len())
        .filter_map(|i| match spec(cfg, i) {
            RateControlSpec::EnvAware(p) => Some(p.training_passes),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    for k in 0..passes {
        let mut draw = Stream::new("run", cfg.seed, cfg.run, &format!("ratectl/training/{k}"));
        let pass_run = (u64::from(draw.integer_inclusive(u32::MAX)) << 32) | u64::from(draw.integer_inclusive(u32::MAX));
        let mut world = World::new(&SimConfig { run: pass_run, ..cfg.clone() });
        world.run_events();
        for i in 0..cfg.nodes.len() {
            if let (RateControlSpec::EnvAware(mut p), Some(map)) = (spec(cfg, i), world.nodes[i].dcf.links().learned()) {
                p.map = Arc::new(map);
                cfg.nodes[i].rate_control = Some(RateControlSpec::EnvAware(p));
            }
        }
    }
}
