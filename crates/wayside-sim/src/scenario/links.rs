//! `[[link]]`: wired point-to-point links (an AP's backhaul to a server),
//! checked and lowered into [`WiredLink`]s ([`crate::wire`]).
//!
//! ```toml
//! [[link]]
//! a = "ap"
//! b = "server"
//! bandwidth = "100 Mbps"
//! delay = "1 ms"
//! ```

use super::common::{check_range, err, node_id, time_in, zero_time, RateQ, ScenarioError, TimeQ};
use crate::wire::WiredLink;
use serde::{Deserialize, Serialize};

/// A wired point-to-point link (an AP's backhaul to a server).
#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    pub a: String,
    pub b: String,
    #[serde(default = "default_bandwidth")]
    pub bandwidth: RateQ,
    #[serde(default = "zero_time")]
    pub delay: TimeQ,
    #[serde(default = "default_queue")]
    pub queue_limit: u64,
}

fn default_bandwidth() -> RateQ {
    RateQ(1e9)
}
/// Packets a link's queue holds in each direction.
fn default_queue() -> u64 {
    1000
}

/// The links of the `[[link]]` sections between the nodes `names`.
pub(super) fn lower_links(
    sections: &[LinkSection],
    names: &[String],
) -> Result<Vec<WiredLink>, ScenarioError> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let mut wires = Vec::with_capacity(sections.len());
    for (i, l) in sections.iter().enumerate() {
        let key = |k: &str| format!("link[{i}].{k}");
        let a = node_id(names, &key("a"), &l.a, "")?;
        let b = node_id(names, &key("b"), &l.b, "")?;
        let pair = if l.a <= l.b {
            (l.a.as_str(), l.b.as_str())
        } else {
            (l.b.as_str(), l.a.as_str())
        };
        if pairs.contains(&pair) {
            return err(format!(
                "{}: '{}' and '{}' are already linked",
                key("b"),
                l.a,
                l.b
            ));
        }
        pairs.push(pair);
        if a == b {
            return err(format!("{}: a link needs two different nodes", key("b")));
        }
        check_range(
            &key("bandwidth"),
            l.bandwidth.0,
            &format!("{} bit/s", l.bandwidth.0),
            1e3,
            1e12,
            "1 kbps to 1000 Gbps",
        )?;
        let delay = time_in(&key("delay"), l.delay, 0.0, 10.0, "0 s to 10 s")?;
        check_range(
            &key("queue_limit"),
            l.queue_limit as f64,
            &l.queue_limit.to_string(),
            1.0,
            1e6,
            "1 to 1000000 packets",
        )?;
        wires.push(WiredLink::new(
            a,
            b,
            l.bandwidth.0,
            delay,
            l.queue_limit as usize,
        ));
    }
    Ok(wires)
}
