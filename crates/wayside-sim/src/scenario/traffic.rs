//! `[[traffic]]`: MAC-level sources that need no IP stack (saturating,
//! constant-rate, and the sounder that cycles through rates), checked and
//! lowered into [`SourceConfig`]s ([`crate::apps`]).
//!
//! ```toml
//! [[traffic]]
//! kind = "cbr"
//! from = "ap"
//! to = "broadcast"
//! interval = "100 ms"
//! ```

use super::common::{
    check_range, err, node_id, rate_mode, time_in, yes, zero_time, RateQ, ScenarioError, SizeQ,
    TimeQ, MAX_DURATION_S,
};
use crate::apps::{SourceConfig, SourceKind};
use crate::ids::Dst;
use crate::phy::mode::Standard;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficKind {
    Saturate,
    Cbr,
    Sounder,
}

#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct TrafficSection {
    pub kind: TrafficKind,
    pub from: String,
    /// A node name, or "broadcast".
    pub to: String,
    #[serde(default = "default_payload")]
    pub payload: SizeQ,
    #[serde(default)]
    pub interval: Option<TimeQ>,
    /// Sounder only: the rates to cycle through; default every rate.
    #[serde(default)]
    pub rates: Option<Vec<RateQ>>,
    #[serde(default = "zero_time")]
    pub start: TimeQ,
    #[serde(default)]
    pub stop: Option<TimeQ>,
    /// false: defined but not run (scenarios with several experiment
    /// variants), as for applications.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_payload() -> SizeQ {
    SizeQ(1500.0)
}

/// The sources of the `[[traffic]]` sections, on radios of `standard`
/// between the nodes `names`.
pub(super) fn lower_traffic(
    sections: &[TrafficSection],
    standard: Standard,
    names: &[String],
) -> Result<Vec<SourceConfig>, ScenarioError> {
    let mut sources = Vec::with_capacity(sections.len());
    for (i, t) in sections.iter().enumerate() {
        let key = |k: &str| format!("traffic[{i}].{k}");
        let from = node_id(names, &key("from"), &t.from, "")?;
        let to = if t.to == "broadcast" {
            Dst::Broadcast
        } else {
            Dst::Node(node_id(names, &key("to"), &t.to, ", or broadcast")?)
        };
        if t.to == t.from {
            return err(format!("{}: a node cannot send to itself", key("to")));
        }
        check_range(
            &key("payload"),
            t.payload.0,
            &format!("{} B", t.payload.0),
            1.0,
            2304.0,
            "1 B to 2304 B (the 802.11 MSDU limit)",
        )?;
        let interval = t
            .interval
            .map(|iv| time_in(&key("interval"), iv, 1e-6, 3600.0, "1 us to 1 h"))
            .transpose()?;
        if t.rates.is_some() && t.kind != TrafficKind::Sounder {
            return err(format!(
                "{}: only used with kind = \"sounder\"",
                key("rates")
            ));
        }
        let kind = match (t.kind, interval) {
            (TrafficKind::Saturate, Some(_)) => {
                return err(format!(
                    "{}: a saturating source has no interval",
                    key("interval")
                ))
            }
            (TrafficKind::Cbr | TrafficKind::Sounder, None) => {
                return err(format!(
                    "{}: required for kind = \"cbr\" and \"sounder\"",
                    key("interval")
                ))
            }
            (TrafficKind::Saturate, None) if to == Dst::Broadcast => {
                return err(format!(
                    "{}: a saturating source needs a unicast destination",
                    key("to")
                ))
            }
            (TrafficKind::Saturate, None) => SourceKind::Saturate,
            (TrafficKind::Cbr, Some(interval)) => SourceKind::Cbr { interval },
            (TrafficKind::Sounder, Some(interval)) => SourceKind::Sounder {
                interval,
                modes: match &t.rates {
                    Some(rs) if rs.is_empty() => {
                        return err(format!("{}: give at least one rate", key("rates")))
                    }
                    Some(rs) => rs
                        .iter()
                        .enumerate()
                        .map(|(j, r)| rate_mode(standard, &format!("{}[{j}]", key("rates")), *r))
                        .collect::<Result<_, _>>()?,
                    None => standard.modes().to_vec(),
                },
            },
        };
        let start = time_in(&key("start"), t.start, 0.0, MAX_DURATION_S, "0 s to 24 h")?;
        let stop = match t.stop {
            Some(stop) if stop.0 < t.start.0 => {
                return err(format!(
                    "{}: {} s is before start ({} s)",
                    key("stop"),
                    stop.0,
                    t.start.0
                ))
            }
            Some(stop) => time_in(&key("stop"), stop, 0.0, MAX_DURATION_S, "0 s to 24 h")?,
            None => SimTime::MAX,
        };
        let stop = if t.enabled { stop } else { SimTime::ZERO };
        sources.push(SourceConfig {
            kind,
            from,
            to,
            payload: t.payload.0 as u32,
            start,
            stop,
        });
    }
    Ok(sources)
}
