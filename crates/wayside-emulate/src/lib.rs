//! wayside-emulate: real programs through a simulated drive-by. The
//! scenario runs paced to the wall clock ([`pacer`]); each hosted node
//! becomes a real Linux host whose IP packets cross a TUN device in its
//! network namespace ([`device`]) into the node's simulated network layer
//! and out of it again. Everything between the hosts (radios, MAC,
//! association, ARP, DHCP, the AP and its wires) is simulated, and traced
//! as in a simulated run. How late each event ran is measured
//! ([`lateness`]): a run that fell behind says so.

pub mod device;
pub mod lateness;
pub mod pacer;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use wayside_sim::ids::NodeId;
use wayside_sim::pcap::frame::ip_of;
use wayside_sim::units::SimTime;
use wayside_sim::RunOutput;

pub use lateness::LatenessSummary;
pub use pacer::Counters;

/// The TUN device's name in each host's namespace, unless told otherwise.
pub const DEVICE: &str = "wsim0";

/// Why an emulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Scenario(String),
    #[error("emulation needs root (to enter network namespaces and open TUN devices)")]
    NotRoot,
    #[error("this kernel has no TUN/TAP support (/dev/net/tun is missing; modprobe tun)")]
    NoTun,
    #[error("network namespace {0:?} does not exist; create it with `wayside emulate-setup`")]
    NoNamespace(String),
    #[error(
        "no TUN device {device:?} in network namespace {netns:?}; \
         create it with `wayside emulate-setup`"
    )]
    NoDevice { netns: String, device: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A node of the scenario that a real host takes the place of.
#[derive(Clone, Debug)]
pub struct Host {
    pub node: String,
    pub netns: String,
}

/// How to emulate.
#[derive(Clone, Debug)]
pub struct Options {
    pub hosts: Vec<Host>,
    pub device: String,
    /// An event later than this makes the run one that fell behind.
    pub tolerance: SimTime,
}

/// What an emulation reports besides its trace.
#[derive(Clone, Debug)]
pub struct Report {
    pub lateness: LatenessSummary,
    pub counters: Counters,
    /// Set if the run was stopped (a signal) before its end.
    pub stopped_at: Option<SimTime>,
    /// Per hosted node: (name, namespace, address).
    pub hosts: Vec<(String, String, [u8; 4])>,
}

/// The address a real host in place of node `n` takes: the node's own.
pub fn address(n: NodeId) -> [u8; 4] {
    ip_of(n.0)
}

/// Runs `scenario` in real time with `opts.hosts` attached, until its
/// end or until `stop` is set; writes a pcap per captured radio into
/// `pcap_dir` if given. Scenario applications with an end at a hosted
/// node are disabled: the real programs take their place.
pub fn emulate(
    scenario: &str,
    overrides: &[String],
    seed: Option<u64>,
    pcap_dir: Option<&Path>,
    opts: &Options,
    stop: Arc<AtomicBool>,
) -> Result<(RunOutput, Report), Error> {
    let (_, cfg) = wayside_sim::scenario::load(scenario, overrides, seed, 0)
        .map_err(|e| Error::Scenario(e.0))?;
    let mut ids = Vec::new();
    for h in &opts.hosts {
        let Some(i) = cfg.nodes.iter().position(|n| n.name == h.node) else {
            let names: Vec<&str> = cfg.nodes.iter().map(|n| n.name.as_str()).collect();
            return Err(Error::Scenario(format!(
                "--host {}={}: no node {:?} in the scenario; allowed: {}",
                h.node,
                h.netns,
                h.node,
                names.join(", ")
            )));
        };
        ids.push(NodeId(i as u32));
    }
    // The real programs take the place of the hosted nodes' applications:
    // disabled, so that the scenario as run says so.
    let mut overrides = overrides.to_vec();
    for (i, a) in cfg.apps.iter().enumerate() {
        if ids.contains(&a.from) || ids.contains(&a.to) {
            overrides.push(format!("app.{i}.enabled=false"));
        }
    }
    let (resolved, world) =
        wayside_sim::run::prepare(scenario, &overrides, seed, 0, pcap_dir, |_| Ok(()))
            .map_err(|e| Error::Scenario(e.0))?;
    let devices = opts
        .hosts
        .iter()
        .zip(&ids)
        .map(|(h, &id)| device::Device::open(id, &h.netns, &opts.device))
        .collect::<Result<Vec<_>, _>>()?;
    let hosts = opts
        .hosts
        .iter()
        .zip(&ids)
        .map(|(h, &id)| (h.node.clone(), h.netns.clone(), address(id)))
        .collect();
    let run = pacer::run(world, &devices, opts.tolerance, &stop)?;
    let mut out =
        wayside_sim::run::finish(resolved, run.world).map_err(|e| Error::Scenario(e.0))?;
    if let Some(t) = run.stopped_at {
        out.stats.simulated = t; // what was run, not what was planned
    }
    let report = Report {
        lateness: run.lateness,
        counters: run.counters,
        stopped_at: run.stopped_at,
        hosts,
    };
    Ok((out, report))
}
