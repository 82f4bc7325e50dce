//! One run of a scenario: load, lower, simulate the training passes that
//! environment-aware rate control asks for, then the measured run.

use crate::apps::broadside::BroadsideEnd;
use crate::config::SimConfig;
use crate::ids::NodeId;
use crate::pcap::{Air, Capture, CapturedNode};
use crate::ratectl::SnrMap;
use crate::rng::Stream;
use crate::scenario::ScenarioError;
use crate::trace::{Trace, TraceSink};
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
    /// Every Broadside end as the run left it.
    pub broadside: Vec<BroadsideEnd>,
}

/// Loads `scenario` (TOML text), applies `overrides`, and runs it once.
pub fn run_scenario(
    scenario: &str,
    overrides: &[String],
    seed: Option<u64>,
    run: u64,
) -> Result<RunOutput, ScenarioError> {
    run_scenario_pcap(scenario, overrides, seed, run, None)
}

/// [`run_scenario`], writing a pcap per captured radio into `pcap_dir`
/// ([`crate::pcap`]) if one is given.
pub fn run_scenario_pcap(
    scenario: &str,
    overrides: &[String],
    seed: Option<u64>,
    run: u64,
    pcap_dir: Option<&Path>,
) -> Result<RunOutput, ScenarioError> {
    let (resolved, mut world) = prepare(scenario, overrides, seed, run, pcap_dir, |_| Ok(()))?;
    world.run_events();
    finish(resolved, world)
}

/// [`run_scenario_pcap`], sending the trace to `sink` in batches of `rows`
/// rows while the run goes on ([`crate::world`]): the output's trace then
/// holds no rows.
pub fn run_scenario_streaming(
    scenario: &str,
    overrides: &[String],
    (seed, run): (Option<u64>, u64),
    pcap_dir: Option<&Path>,
    (sink, rows): (Box<dyn TraceSink>, usize),
) -> Result<RunOutput, ScenarioError> {
    let (resolved, mut world) = prepare(scenario, overrides, seed, run, pcap_dir, |_| Ok(()))?;
    world.stream_to(sink, rows);
    world.run_events();
    finish(resolved, world)
}

/// Loads `scenario`, applies `overrides`, lets `edit` change the lowered
/// configuration, runs the training passes and opens the capture: a
/// world ready for its first event, with the scenario as resolved.
pub fn prepare(
    scenario: &str,
    overrides: &[String],
    seed: Option<u64>,
    run: u64,
    pcap_dir: Option<&Path>,
    edit: impl FnOnce(&mut SimConfig) -> Result<(), ScenarioError>,
) -> Result<(String, World), ScenarioError> {
    let (resolved, mut cfg) = crate::scenario::load(scenario, overrides, seed, run)?;
    edit(&mut cfg)?;
    let learned = train(&cfg);
    let mut world = World::new(&cfg);
    world.set_priors(&learned);
    if let Some(dir) = pcap_dir {
        world.capture = Some(
            Capture::create(
                dir,
                &captured_nodes(&cfg),
                capture_air(&cfg),
                cfg.pcap.start,
            )
            .map_err(|e| ScenarioError(e.0))?,
        );
    }
    Ok((resolved, world))
}

/// Ends `world`'s run where it stands: its trace, counters and closed
/// capture files.
pub fn finish(resolved: String, world: World) -> Result<RunOutput, ScenarioError> {
    let node_names = world.node_names();
    let (trace, stats, capture, broadside) = world.finish();
    let pcaps = capture
        .map_or(Ok(Vec::new()), Capture::finish)
        .map_err(|e| ScenarioError(e.0))?;
    Ok(RunOutput {
        resolved,
        node_names,
        trace,
        stats,
        pcaps,
        broadside,
    })
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
            CapturedNode {
                name: n.name.clone(),
                role: n.role,
                tx_power: n.tx_power,
                captured: n.radio && listed,
            }
        })
        .collect()
}

fn capture_air(cfg: &SimConfig) -> Air {
    Air {
        standard: cfg.radio.standard,
        preamble: cfg.radio.preamble,
        noise_floor: cfg.channel.noise_floor,
        beacon_interval: cfg.mgmt.beacon_interval,
    }
}

/// Simulates the earlier passes that learning rate control asks for (the
/// most training passes any node's algorithm wants) and returns, per node,
/// the map it learned (`None` where it does not learn), to start the
/// measured run from. Pass k runs the same scenario with the same
/// environment seed (same shadowing) and a run seed drawn from (seed, run,
/// k), so fading, backoff and traffic differ from the measured run's and
/// from each other; each pass starts from what the passes before learned.
fn train(cfg: &SimConfig) -> Vec<Option<Arc<SnrMap>>> {
    let passes = cfg
        .nodes
        .iter()
        .map(|n| n.mac.rate.training_passes())
        .max()
        .unwrap_or(0);
    let mut learned = vec![None; cfg.nodes.len()];
    for k in 0..passes {
        let mut draw = Stream::new("run", cfg.seed, cfg.run, &format!("ratectl/training/{k}"));
        let pass_run = (u64::from(draw.integer_inclusive(u32::MAX)) << 32)
            | u64::from(draw.integer_inclusive(u32::MAX));
        let mut world = World::new(&SimConfig {
            run: pass_run,
            ..cfg.clone()
        });
        world.set_priors(&learned);
        world.run_events();
        learned = world.learned();
    }
    learned
}
