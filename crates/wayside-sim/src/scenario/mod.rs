//! Scenario files, in three steps: `--set key=value` overrides are applied
//! to the TOML tree ([`overrides`]), the tree is parsed into the schema's
//! serde structs ([`schema`]), and the parsed scenario is lowered into a
//! [`SimConfig`] ([`lower`]), which checks what the types cannot. Every
//! error names the key, the value and what is allowed. The built-in
//! scenarios are in [`builtins`].

mod builtins;
mod lower;
mod overrides;
pub mod schema;

pub use builtins::{builtin, BUILTIN};
pub use overrides::apply_overrides;
pub use schema::Scenario;

use crate::config::SimConfig;

/// Most nodes a scenario may define.
pub const MAX_NODES: usize = 10_000;
/// Longest simulated duration.
pub const MAX_DURATION_S: f64 = 86_400.0;

/// A scenario that cannot be used, with a message for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

/// Parses scenario text, applies overrides, parses and lowers it. Returns
/// the resolved TOML (what was actually run) and the configuration, with
/// the scenario's own seed and run 0.
pub fn load(text: &str, overrides: &[String]) -> Result<(String, SimConfig), ScenarioError> {
    let mut doc: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError(format!("scenario is not valid TOML: {}", e.message())))?;
    apply_overrides(&mut doc, overrides)?;
    let resolved = toml::to_string(&doc).map_err(|e| ScenarioError(e.to_string()))?;
    let scenario: Scenario = serde_path_to_error::deserialize(toml::Deserializer::new(&resolved)).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().message().to_string();
        match path.as_str() {
            "" | "." => ScenarioError(msg),
            // A section that parses its own keys (rate control) starts its
            // message with the rest of the key (`.margin: …`) or `: `.
            _ if msg.starts_with(['.', ':']) => ScenarioError(format!("{path}{msg}")),
            _ => ScenarioError(format!("{path}: {msg}")),
        }
    })?;
    Ok((resolved, scenario.lower()?))
}
