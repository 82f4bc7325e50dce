//! A scenario as it would run, every default written out (`wayside show
//! --resolved`): the keys the file gives stay as written; every key it
//! leaves out is added with the value it runs with, in the SI unit the
//! quantity is read in ("0.1 s"). Where a default is computed rather than
//! fixed (each node's rate control, a station's scan channels, the radio's
//! channel, a node's transmit power) the computed value is written. The
//! text is TOML that [`super::load`] reads back to the same configuration.

use super::common::ScenarioError;
use super::management::default_scan_channels;
use super::rate_control::driver_default;
use super::Scenario;

/// `text` with `overrides` applied and every default written out.
pub fn resolve_defaults(text: &str, overrides: &[String]) -> Result<String, ScenarioError> {
    // Checks the scenario as a run would.
    let (given, _) = super::load(text, overrides, None, 0)?;
    let mut scenario: Scenario =
        toml::from_str(&given).map_err(|e| ScenarioError(e.message().to_string()))?;
    scenario.fill_computed_defaults()?;
    let full = toml::Table::try_from(&scenario).map_err(|e| ScenarioError(e.to_string()))?;
    let mut doc: toml::Table = given
        .parse()
        .map_err(|e: toml::de::Error| ScenarioError(e.message().to_string()))?;
    add_missing(&mut doc, full);
    toml::to_string(&doc).map_err(|e| ScenarioError(e.to_string()))
}

impl Scenario {
    /// Writes into the parsed scenario the defaults that lowering computes
    /// from other keys.
    fn fill_computed_defaults(&mut self) -> Result<(), ScenarioError> {
        let standard = self.radio.standard()?;
        let names_rate = self.mac.names_rate();
        for n in &mut self.nodes {
            if n.radio {
                n.rate_control = n.own_rate_control(names_rate, &self.management.roaming, standard);
                n.tx_power = n.tx_power.or(n.default_tx_power());
            }
        }
        if !names_rate {
            self.mac.rate_control = Some(driver_default(standard, false));
        }
        self.radio.channel = Some(self.radio.channel_number());
        let scan = &mut self.management.scan_channels;
        *scan = Some(
            scan.take()
                .unwrap_or_else(|| default_scan_channels(standard)),
        );
        Ok(())
    }
}

/// Adds to `doc` every key of `full` it lacks, table by table and, in an
/// array of tables, entry by entry (empty lists left out); a value `doc`
/// gives stays as given.
fn add_missing(doc: &mut toml::Table, full: toml::Table) {
    for (key, value) in full {
        match (doc.get_mut(&key), value) {
            // An empty list the file leaves out is its default: not
            // written, so no `app = []` lines.
            (None, toml::Value::Array(all)) if all.is_empty() => {}
            (None, value) => {
                doc.insert(key, value);
            }
            (Some(toml::Value::Table(given)), toml::Value::Table(all)) => add_missing(given, all),
            (Some(toml::Value::Array(given)), toml::Value::Array(all)) => {
                for (g, a) in given.iter_mut().zip(all) {
                    if let (toml::Value::Table(g), toml::Value::Table(a)) = (g, a) {
                        add_missing(g, a);
                    }
                }
            }
            (Some(_), _) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{load, BUILTIN};

    /// The configuration `text` lowers to, as text to compare.
    fn config(text: &str) -> String {
        format!("{:?}", load(text, &[], None, 0).unwrap().1)
    }

    #[test]
    fn every_builtin_resolved_reads_back_to_the_same_configuration() {
        for (name, text) in BUILTIN {
            let resolved = resolve_defaults(text, &[]).unwrap();
            assert_eq!(config(&resolved), config(text), "{name}");
            assert_eq!(
                resolve_defaults(&resolved, &[]).unwrap(),
                resolved,
                "{name}"
            );
        }
    }

    const ROAMING: &str = r#"
duration = "10 s"
[radio]
standard = "802.11g"
[management]
roaming = "bgscan-simple"
[[node]]
name = "ap"
role = "ap"
[[node]]
name = "car"
role = "sta"
roaming = "madwifi"
[[node]]
name = "bus"
role = "sta"
range = "300 m"
mobility = { model = "line", speed = "80 km/h" }
"#;

    #[test]
    fn defaults_are_written_out_and_read_back() {
        let resolved = resolve_defaults(ROAMING, &[]).unwrap();
        let doc: toml::Table = resolved.parse().unwrap();
        let rate = |t: &toml::Value| t["rate_control"]["algorithm"].as_str().map(str::to_string);
        // The AP and the madwifi station take [mac]'s: madwifi's SampleRate;
        // the station that roams with bgscan runs mac80211's Minstrel.
        assert_eq!(rate(&doc["mac"]).as_deref(), Some("samplerate"));
        let nodes = doc["node"].as_array().unwrap();
        assert!(nodes[0].get("rate_control").is_none());
        assert!(nodes[1].get("rate_control").is_none());
        assert_eq!(rate(&nodes[2]).as_deref(), Some("minstrel"));
        assert_eq!(doc["management"]["beacon_interval"].as_str(), Some("0.1 s"));
        assert_eq!(
            doc["management"]["scan_channels"].as_array().unwrap().len(),
            11
        );
        assert_eq!(doc["radio"]["channel"].as_integer(), Some(6));
        assert_eq!(nodes[0]["tx_power"].as_str(), Some("15 dBm"));
        // The user's spelling stays; a node with a range gets no power.
        assert_eq!(nodes[2]["mobility"]["speed"].as_str(), Some("80 km/h"));
        assert!(nodes[2].get("tx_power").is_none());
        // Lists the file leaves empty are not written ("app = []").
        assert!(doc.get("app").is_none() && doc.get("obstacle").is_none());
        assert_eq!(config(&resolved), config(ROAMING));
    }
}
