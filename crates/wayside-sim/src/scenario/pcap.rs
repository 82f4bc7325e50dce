//! `[pcap]`: which radios a run writes a capture for, and a sniffer, a
//! passive node that records every frame it decodes; checked and lowered
//! into a [`PcapConfig`] ([`crate::pcap`]).
//!
//! ```toml
//! [pcap]
//! nodes = ["ap", "car"]
//! sniffer = "monitor"
//! ```

use super::common::{err, node_id, ScenarioError};
use super::nodes::NodeSection;
use crate::config::{NodeConfig, Role};
use crate::ids::NodeId;
use crate::pcap::PcapConfig;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[pcap]`: the radios a run writes a capture for, and an optional
/// sniffer, a passive node that records every frame it decodes.
#[derive(Deserialize, Serialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct PcapSection {
    /// Node names; default every radio.
    #[serde(default)]
    pub nodes: Option<Vec<String>>,
    /// A node of its own (`count = 1`) with a radio, `role = "independent"`,
    /// that no traffic, application or link names: it transmits nothing.
    #[serde(default)]
    pub sniffer: Option<String>,
}

/// The capture `section` asks for (none: every radio, no sniffer), of
/// the nodes `nodes_cfg` lowered from `node_sections`; `named` is every
/// node another section names, with that section (a sniffer must be none
/// of them).
pub(super) fn lower_pcap(
    section: Option<&PcapSection>,
    node_sections: &[NodeSection],
    nodes_cfg: &[NodeConfig],
    named: &[(&str, &str)],
) -> Result<PcapConfig, ScenarioError> {
    let names: Vec<String> = nodes_cfg.iter().map(|n| n.name.clone()).collect();
    let Some(p) = section else {
        return Ok(PcapConfig::default());
    };
    if p.nodes.as_ref().is_some_and(Vec::is_empty) {
        return err(
            "pcap.nodes: give at least one radio, or leave nodes out to capture every radio",
        );
    }
    let radios: Vec<&String> = nodes_cfg
        .iter()
        .filter(|n| n.radio)
        .map(|n| &n.name)
        .collect();
    let mut nodes = Vec::new();
    for (i, n) in p.nodes.iter().flatten().enumerate() {
        let Some(id) = names
            .iter()
            .position(|m| m == n)
            .filter(|_| radios.contains(&n))
        else {
            let radios: Vec<&str> = radios.iter().map(|s| s.as_str()).collect();
            return err(format!(
                "pcap.nodes[{i}]: no node with a radio named '{n}'; radios: {}",
                radios.join(", ")
            ));
        };
        nodes.push(NodeId(id as u32));
    }
    let Some(sniffer) = &p.sniffer else {
        return Ok(PcapConfig {
            nodes,
            ..PcapConfig::default()
        });
    };
    let Some(node) = node_sections
        .iter()
        .find(|n| n.count == 1 && &n.name == sniffer && names.contains(sniffer))
    else {
        let what = if names.contains(sniffer) {
            "is one of a group (count > 1); give the sniffer a [[node]] of its own"
        } else {
            "no such node"
        };
        return err(format!(
            "pcap.sniffer: '{sniffer}': {what}; nodes: {}",
            names.join(", ")
        ));
    };
    if !node.radio || node.role != Role::Independent {
        return err(format!("pcap.sniffer: '{sniffer}' must have a radio and role = \"independent\" (a passive radio that never associates)"));
    }
    for &(section, n) in named {
        if n == sniffer.as_str() {
            return err(format!("pcap.sniffer: '{sniffer}' is named by a [[{section}]]; a sniffer sends nothing and nothing is sent to it"));
        }
    }
    let sniffer = node_id(&names, "pcap.sniffer", sniffer, "")?;
    Ok(PcapConfig {
        nodes,
        sniffer: Some(sniffer),
        ..PcapConfig::default()
    })
}

/// The run's start on the wall clock when the scenario gives none: the Unix
/// epoch, so that a capture's timestamps are the run's own times (as
/// simulators' captures commonly are).
pub(super) fn default_start() -> String {
    "1970-01-01T00:00:00Z".into()
}

/// The wall-clock time of run time zero, since the Unix epoch: `start`
/// (RFC 3339). A capture keeps whole seconds in 32 bits, so the run must
/// lie between 1970 and early 2106.
pub(super) fn lower_start(start: &str, duration: SimTime) -> Result<Duration, ScenarioError> {
    let t = chrono::DateTime::parse_from_rfc3339(start).map_err(|e| {
        ScenarioError(format!(
            "start: \"{start}\" is not an RFC 3339 time ({e}); \
             for example \"2006-08-15T12:00:00Z\""
        ))
    })?;
    let end = t.timestamp() + duration.as_secs_f64().ceil() as i64;
    if t.timestamp() < 0 || end > i64::from(u32::MAX) {
        return err(format!(
            "start: {start}: the run must lie between 1970-01-01T00:00:00Z and \
             2106-02-07T06:28:15Z (a capture's 32-bit seconds)"
        ));
    }
    Ok(Duration::new(
        t.timestamp() as u64,
        t.timestamp_subsec_nanos(),
    ))
}
