//! Scenario files, in three steps: `--set key=value` overrides are applied
//! to the TOML tree ([`apply_overrides`]), the tree is parsed into serde
//! structs, and the parsed scenario is lowered into a [`SimConfig`]
//! ([`Scenario::lower`]), which checks what the types cannot. Every error
//! names the key, the value and what is allowed. The built-in scenarios
//! are in [`BUILTIN`].
//!
//! Each section of the file is one module holding its serde struct,
//! defaults, checks and lowering; `common` holds the quantities with units
//! and the error type they share. This module parses, and resolves what
//! one section refers to in another (node names, the radio's channel).

mod adhoc;
mod apps;
mod builtins;
mod common;
mod environment;
mod links;
mod mac;
mod management;
mod mobility;
mod nodes;
mod overrides;
mod pcap;
mod radio;
mod rate_control;
mod resolved;
mod roaming;
mod traffic;

pub use builtins::{builtin, BUILTIN};
pub use common::{ScenarioError, MAX_DURATION_S, MAX_NODES};
pub use overrides::apply_overrides;
pub use resolved::resolve_defaults;

use apps::{expand_source_apps, lower_apps, AppSection};
use common::{err, one, time_in, TimeQ};
use environment::{Environment, ObstacleSection};
use links::{lower_links, LinkSection};
use mac::MacSection;
use management::ManagementSection;
use nodes::{lower_nodes, node_key, NodeContext, NodeSection};
use pcap::{default_start, lower_pcap, lower_start, PcapSection};
use radio::Radio;
use serde::{Deserialize, Serialize};
use traffic::{lower_traffic, TrafficSection};

use crate::config::SimConfig;
use crate::pcap::PcapConfig;

/// A scenario file, parsed.
#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The validation targets this scenario was calibrated on, as
    /// `"paper/target"` (glob patterns allowed). `wayside validate` reports
    /// them as calibrated and never counts them as reproduced.
    #[serde(default)]
    pub calibrated_on: Vec<String>,
    pub duration: TimeQ,
    /// The wall-clock time of run time zero (RFC 3339), which the pcap
    /// timestamps and the GPS logs count from; default the Unix epoch.
    #[serde(default = "default_start")]
    pub start: String,
    /// Run seed used when none is given on the command line.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default)]
    pub environment: Environment,
    pub radio: Radio,
    #[serde(default)]
    pub mac: MacSection,
    #[serde(rename = "node")]
    pub nodes: Vec<NodeSection>,
    #[serde(default, rename = "traffic")]
    pub traffic: Vec<TrafficSection>,
    #[serde(default)]
    pub management: ManagementSection,
    #[serde(default, rename = "link")]
    pub links: Vec<LinkSection>,
    #[serde(default, rename = "app")]
    pub apps: Vec<AppSection>,
    /// Buildings that attenuate the line of sight.
    #[serde(default, rename = "obstacle")]
    pub obstacles: Vec<ObstacleSection>,
    /// pcap output: which radios, and a sniffer.
    #[serde(default)]
    pub pcap: Option<PcapSection>,
}

/// Parses scenario text, applies overrides, parses and lowers it for run
/// `run` with `seed` (default: the scenario's own). Returns the resolved
/// TOML (what was actually run) and the configuration.
pub fn load(
    text: &str,
    overrides: &[String],
    seed: Option<u64>,
    run: u64,
) -> Result<(String, SimConfig), ScenarioError> {
    let mut doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ScenarioError(format!("scenario is not valid TOML: {}", e.message()))
    })?;
    apply_overrides(&mut doc, overrides)?;
    let resolved = toml::to_string(&doc).map_err(|e| ScenarioError(e.to_string()))?;
    let scenario: Scenario = serde_path_to_error::deserialize(toml::Deserializer::new(&resolved))
        .map_err(|e| {
        let path = named_path(&doc, &e.path().to_string());
        let msg = e.into_inner().message().to_string();
        match path.as_str() {
            "" | "." => ScenarioError(msg),
            // A section that parses its own keys (rate control) starts its
            // message with the rest of the key (`.margin: …`) or `: `.
            _ if msg.starts_with(['.', ':']) => ScenarioError(format!("{path}{msg}")),
            _ => ScenarioError(format!("{path}: {msg}")),
        }
    })?;
    Ok((resolved, scenario.lower(seed, run)?))
}

/// `path` (a key as serde names it) with a `[[node]]` entry named as
/// errors name nodes ([`nodes::node_key`]): `node[1].role` is
/// `node.car.role`.
fn named_path(doc: &toml::Table, path: &str) -> String {
    let entry = path
        .strip_prefix("node[")
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(index, tail)| {
            let i: usize = index.parse().ok()?;
            let name = doc.get("node")?.as_array()?.get(i)?.get("name")?.as_str()?;
            Some(format!("{}{tail}", node_key(i, name)))
        });
    entry.unwrap_or_else(|| path.to_string())
}

impl Scenario {
    /// The simulator configuration for run `run` with `seed` (default: the
    /// scenario's own); what is drawn while lowering (highway traffic)
    /// comes from them.
    pub fn lower(&self, seed: Option<u64>, run: u64) -> Result<SimConfig, ScenarioError> {
        let seed = seed.unwrap_or(self.seed);
        if let Some(name) = &self.name {
            if name.is_empty()
                || name.len() > 100
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || name.starts_with('.')
            {
                return err(format!("name: '{name}' is not usable; use up to 100 letters, digits, '-', '_' and '.', not starting with '.'"));
            }
        }
        let duration = time_in(
            "duration",
            self.duration,
            1e-9,
            MAX_DURATION_S,
            "more than 0 s, up to 24 h",
        )?;
        let standard = self.radio.standard()?;
        let channel_no = self.radio.channel_number();
        let frequency = self.radio.frequency(channel_no)?;
        let channel = self.environment.lower(frequency, &self.obstacles)?;
        let radio = self.radio.lower()?;
        let rates = self
            .mac
            .rate_context(standard, radio.basic_rate, radio.error_model)?;
        let mac = self.mac.lower(&rates)?;
        let nodes = lower_nodes(
            &self.nodes,
            &NodeContext {
                rates: &rates,
                mac: &mac,
                mac_names_rate: self.mac.names_rate(),
                roaming: &self.management.roaming,
                channel: &channel,
                channel_no,
                timing: standard.timing(self.radio.b_compatible),
                beacon_interval: self.management.beacon_interval.time(),
                duration,
                seed: (seed, run),
            },
        )?;
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let sources = lower_traffic(&self.traffic, standard, &names)?;
        let mgmt = self.management.lower(standard)?;
        let wires = lower_links(&self.links, &names)?;
        let apps = lower_apps(
            &self.apps,
            &self.nodes,
            self.management.beacon_interval,
            &names,
        )?;
        let apps = expand_source_apps(apps, &self.apps, &self.nodes, &nodes);
        let pcap = PcapConfig {
            start: lower_start(&self.start, duration)?,
            ..lower_pcap(self.pcap.as_ref(), &self.nodes, &nodes, &self.named_nodes())?
        };
        Ok(SimConfig {
            mgmt,
            wires,
            apps,
            pcap,
            duration,
            seed,
            run,
            channel,
            radio,
            nodes,
            sources,
        })
    }

    /// Every node a `[[traffic]]`, `[[app]]` or `[[link]]` names, with the
    /// section that names it.
    fn named_nodes(&self) -> Vec<(&'static str, &str)> {
        let traffic = self.traffic.iter().flat_map(|t| [&t.from, &t.to]);
        let apps = self.apps.iter().flat_map(|a| [&a.from, &a.to]);
        let links = self.links.iter().flat_map(|l| [&l.a, &l.b]);
        traffic
            .map(|n| ("traffic", n.as_str()))
            .chain(apps.map(|n| ("app", n.as_str())))
            .chain(links.map(|n| ("link", n.as_str())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(overrides: &[&str]) -> String {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        // An AP (node.ap) and a car (node.car, a station) with one application.
        match load(builtin("hadaller-highway").unwrap(), &o, None, 0) {
            Ok(_) => panic!("accepted: {overrides:?}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn samplerate_keys_lower_to_their_parameters() {
        use crate::ratectl::{InitialRssi, RateControlSpec, SampleRateParams};
        let spec = |rc: &str| {
            let o = vec![format!("node.ap.rate_control={rc}")];
            let (_, cfg) = load(builtin("hadaller-highway").unwrap(), &o, None, 0).unwrap();
            cfg.nodes[0].mac.rate.clone()
        };
        let want = RateControlSpec::SampleRate;
        assert_eq!(
            spec(r#"{algorithm="samplerate", preset="tuned"}"#),
            want(SampleRateParams::tuned_preset())
        );
        assert_eq!(
            spec(r#"{algorithm="samplerate", initial_rssi="thresholds"}"#),
            want(SampleRateParams {
                initial_rssi: InitialRssi::Thresholds,
                ..SampleRateParams::default_preset()
            })
        );
        assert_eq!(
            SampleRateParams::default_preset().initial_rssi,
            InitialRssi::Driver
        );
    }

    #[test]
    fn an_option_of_another_algorithm_names_the_option_and_its_algorithms() {
        let e = error(&[r#"node.ap.rate_control={algorithm="onoe", min_success=0.5}"#]);
        assert_eq!(
            e,
            "node.ap.rate_control.min_success: only used with algorithm = \"ideal\"; \"onoe\" takes no options"
        );
        let e = error(&[r#"mac.rate_control={algorithm="samplerate", rate="11 Mbps"}"#]);
        assert_eq!(e, "mac.rate_control.rate: only used with algorithm = \"fixed\"; \"samplerate\" takes preset, initial_rssi");
        let e = error(&[r#"node.car.rate_control={algorithm="ideal", colour="red"}"#]);
        assert_eq!(e, "node.car.rate_control.colour: not an option of any algorithm; \"ideal\" takes min_success");
    }

    #[test]
    fn a_rate_control_section_needs_a_known_algorithm_and_its_required_options() {
        let e = error(&[r#"mac.rate_control={algorithm="warp"}"#]);
        assert!(
            e.starts_with(
                "mac.rate_control.algorithm: unknown algorithm 'warp'; allowed: samplerate, onoe,"
            ),
            "{e}"
        );
        assert!(e.ends_with("environment-aware, fixed"), "{e}");
        let e = error(&[r#"mac.rate_control={preset="tuned"}"#]);
        assert!(
            e.starts_with("mac.rate_control.algorithm: missing; allowed: samplerate"),
            "{e}"
        );
        let e = error(&["mac.rate_control={algorithm=3}"]);
        assert!(
            e.starts_with("mac.rate_control.algorithm: 3 is not a name; allowed:"),
            "{e}"
        );
        let e = error(&[r#"mac.rate_control={algorithm="fixed"}"#]);
        assert_eq!(e, "mac.rate_control: algorithm = \"fixed\" needs rate (for example rate_control = { algorithm = \"fixed\", rate = \"11 Mbps\" })");
    }

    #[test]
    fn an_invalid_option_value_is_named_by_its_full_key() {
        let e = error(&[
            r#"node.ap.rate_control={algorithm="environment-aware", margin="3 furlongs"}"#,
        ]);
        assert!(
            e.starts_with("node.ap.rate_control.margin: invalid ratio \"3 furlongs\""),
            "{e}"
        );
        let e = error(&[r#"node.ap.rate_control={algorithm="samplerate", preset="fast"}"#]);
        assert!(e.starts_with("node.ap.rate_control.preset: unknown variant `fast`, expected `default` or `tuned`"), "{e}");
        let e = error(&[r#"node.ap.rate_control={algorithm="samplerate", initial_rssi="dbm"}"#]);
        assert!(
            e.starts_with(
                "node.ap.rate_control.initial_rssi: unknown variant `dbm`, expected `driver` or `thresholds`"
            ),
            "{e}"
        );
        // Ranges are checked while lowering, under the same key.
        let e = error(&[r#"node.ap.rate_control={algorithm="ideal", min_success=2}"#]);
        assert_eq!(
            e,
            "node.ap.rate_control.min_success: 2 is out of range; allowed: 0.01 to 0.9999"
        );
    }

    #[test]
    fn what_a_role_allows_is_checked_with_the_role_named() {
        let e = error(&[r#"node.car.role="router""#]);
        assert_eq!(
            e,
            "node.car.role: unknown variant `router`, expected one of `independent`, `ap`, `sta`"
        );
        let e = error(&["node.ap.dhcp=true"]);
        assert_eq!(e, "node.ap.dhcp: only a station (role = \"sta\") gets its address by DHCP; this node is an access point (role = \"ap\")");
        let e = error(&["node.car.radio=false"]);
        assert!(
            e.starts_with(
                "node.car.role: a node without a radio cannot be a station (role = \"sta\")"
            ),
            "{e}"
        );
        let e = error(&["node.ap.role=\"independent\""]);
        assert!(
            e.contains("need at least one node with role = \"ap\""),
            "{e}"
        );
        let e =
            error(&[r#"node.ap.rate_control={algorithm="environment-aware", beacon_hints=true}"#]);
        assert!(
            e.starts_with(
                "node.ap.rate_control.beacon_hints: only a station (role = \"sta\") takes hints"
            ),
            "{e}"
        );
        let e = error(&[r#"node.car.rate_control={algorithm="environment-aware"}"#]);
        assert!(
            e.starts_with("node.car.rate_control: environment-aware keys its map")
                && e.contains("beacon_hints = true"),
            "{e}"
        );
    }

    #[test]
    fn a_stop_time_is_a_time_in_range() {
        assert_eq!(
            error(&["app.0.stop=\"-1 s\""]),
            "app[0].stop: -1 s is out of range; allowed: 0 s to 24 h"
        );
        assert_eq!(
            error(&["app.0.stop=\"1e9 s\""]),
            "app[0].stop: 1000000000 s is out of range; allowed: 0 s to 24 h"
        );
    }

    #[test]
    fn an_override_into_a_missing_section_names_the_section() {
        for section in ["traffic", "link"] {
            let e = error(&[&format!("{section}[0].from=\"ap\"")]);
            assert!(
                e.contains(&format!("no [[{section}]] entries"))
                    && e.contains(&format!("add a [[{section}]]")),
                "{e}"
            );
        }
    }

    /// Each name in the rate-control table builds the algorithm that calls
    /// itself by that name.
    #[test]
    fn every_algorithm_name_builds_that_algorithm() {
        for (name, _, example) in rate_control::ALGORITHMS {
            let options = if example.is_empty() {
                String::new()
            } else {
                format!(", {example}")
            };
            let mut o = vec![format!(
                "node.ap.rate_control={{algorithm=\"{name}\"{options}}}"
            )];
            if *name == "minstrel-ht" {
                o.push("radio.standard=\"802.11n\"".into());
            }
            let (_, cfg) = load(builtin("hadaller-highway").unwrap(), &o, None, 0)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(cfg.nodes[0].mac.rate.name(), *name);
        }
    }

    /// The resolved TOML a run records lowers to the same configuration.
    #[test]
    fn every_builtin_lowers_again_from_its_resolved_text() {
        for (name, text) in BUILTIN {
            let (resolved, cfg) =
                load(text, &[], None, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (again, cfg2) =
                load(&resolved, &[], None, 0).unwrap_or_else(|e| panic!("{name} resolved: {e}"));
            assert_eq!(resolved, again, "{name}");
            assert_eq!(format!("{cfg:?}"), format!("{cfg2:?}"), "{name}");
        }
    }

    #[test]
    fn errors_name_a_node_by_its_name_or_else_its_index() {
        assert_eq!(nodes::node_key(1, "car"), "node.car");
        assert_eq!(nodes::node_key(4, "car-2_b"), "node.car-2_b");
        for unkeyable in ["7", "a.b", "", "two words"] {
            assert_eq!(nodes::node_key(3, unkeyable), "node[3]");
        }
        // Checked while lowering, and by serde while parsing.
        assert!(
            error(&["node.car.antenna_height=\"-3 m\""]).starts_with("node.car.antenna_height: ")
        );
        let e = error(&["node.car.mobility.speed=3"]);
        assert!(
            e.starts_with("node.car.mobility") && e.contains("unit is required"),
            "{e}"
        );
    }
}
