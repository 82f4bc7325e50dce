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
use serde::Deserialize;

/// `[pcap]`: the radios a run writes a capture for, and an optional
/// sniffer, a passive node that records every frame it decodes.
#[derive(Deserialize, Debug, Default)]
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
            sniffer: None,
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
    })
}
