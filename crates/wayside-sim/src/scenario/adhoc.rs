//! A node's `adhoc` table: the IBSS it joins ([`crate::mac::adhoc`]),
//! parsed and lowered. Defaults are the Broadside prototype's driver
//! settings (Zahn et al. 2009, §4).
//!
//! ```toml
//! adhoc = { bssid = "02:00:00:00:00:01", join_probe = "100 ms",
//!           disconnect_timeout = "2 s", unicast_keepalive = true }
//! ```

use super::common::{err, time_in, yes, ScenarioError, TimeQ};
use crate::mac::adhoc::AdhocConfig;
use crate::mac::mgmt::Role;
use crate::phy::mode::Timing;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AdhocSection {
    /// The static BSSID, six hex octets; a locally administered unicast
    /// address, as IBSS BSSIDs are.
    #[serde(default = "default_bssid")]
    pub bssid: String,
    #[serde(default = "default_join_probe")]
    pub join_probe: TimeQ,
    #[serde(default = "default_disconnect")]
    pub disconnect_timeout: TimeQ,
    #[serde(default = "yes")]
    pub unicast_keepalive: bool,
}

fn default_bssid() -> String {
    "02:00:00:00:00:01".into()
}
fn default_join_probe() -> TimeQ {
    TimeQ(0.1)
}
fn default_disconnect() -> TimeQ {
    TimeQ(2.0)
}

/// Six colon-separated hex octets as a 48-bit number.
fn parse_bssid(key: &str, s: &str) -> Result<u64, ScenarioError> {
    let octets: Vec<&str> = s.split(':').collect();
    let parsed: Option<Vec<u8>> = octets
        .iter()
        .map(|o| {
            (o.len() == 2)
                .then(|| u8::from_str_radix(o, 16).ok())
                .flatten()
        })
        .collect();
    match parsed {
        Some(b) if b.len() == 6 => Ok(b.iter().fold(0u64, |acc, &o| (acc << 8) | u64::from(o))),
        _ => err(format!(
            "{key}: '{s}' is not a BSSID; expected six hex octets like \"02:00:00:00:00:01\""
        )),
    }
}

/// The IBSS of the node errors name `node`; `beacon_interval` from
/// `[management]`, `timing` the standard's (the beacon window is 2·CWmin
/// slots).
pub(super) fn lower_adhoc(
    node: &str,
    a: &AdhocSection,
    role: Role,
    beacon_interval: SimTime,
    timing: &Timing,
) -> Result<AdhocConfig, ScenarioError> {
    let key = |k: &str| format!("{node}.adhoc.{k}");
    if role != Role::Independent {
        return err(format!(
            "{node}.adhoc: only for role = \"independent\", not {}",
            role.described()
        ));
    }
    Ok(AdhocConfig {
        bssid: parse_bssid(&key("bssid"), &a.bssid)?,
        join_probe: time_in(&key("join_probe"), a.join_probe, 1e-3, 60.0, "1 ms to 60 s")?,
        beacon_interval,
        beacon_window: timing.slot * u64::from(2 * timing.cw_min),
        disconnect_timeout: time_in(
            &key("disconnect_timeout"),
            a.disconnect_timeout,
            1e-3,
            600.0,
            "1 ms to 600 s",
        )?,
        unicast_keepalive: a.unicast_keepalive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssid_parses_and_bad_ones_are_named() {
        assert_eq!(parse_bssid("k", "02:00:00:00:00:01"), Ok(0x0200_0000_0001));
        for bad in [
            "02:00:00:00:00",
            "02:00:00:00:00:0g",
            "2:00:00:00:00:01",
            "",
        ] {
            let e = parse_bssid("node[0].adhoc.bssid", bad).unwrap_err().0;
            assert!(
                e.contains("node[0].adhoc.bssid") && e.contains("six hex octets"),
                "{e}"
            );
        }
    }
}
