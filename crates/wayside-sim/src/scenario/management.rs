//! `[management]`: infrastructure-mode management shared by every AP and
//! station (beacons, scanning, association and its loss), parsed and
//! lowered into a [`MgmtConfig`] ([`crate::mac::mgmt`]).
//!
//! ```toml
//! [management]
//! beacon_interval = "100 ms"
//! scan_channels = [1, 6, 11]
//! beacon_miss_limit = 7
//! roaming = "bgscan-simple"   # every station's; a node may set its own
//! ```

use super::common::{check_range, err, time_in, yes, PowerQ, ScenarioError, TimeQ, MAX_DURATION_S};
use super::roaming::{roaming, RoamingSection};
use crate::mac::mgmt::{DriverProfile, MgmtConfig};
use crate::phy::mode::Standard;
use crate::units::Dbm;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum DriverName {
    Madwifi,
    Tuned,
}

/// Infrastructure-mode management, shared by every AP and station.
#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ManagementSection {
    #[serde(default = "default_beacon")]
    pub beacon_interval: TimeQ,
    /// Channels a station scans, in order; default: every channel of the standard's band commonly used (b/g: 1–11, in madwifi's order 1, 6, 11, 7, 2–5, 8–10).
    /// A b/g station may also list a dual-band card's 5 GHz channels, on which it only listens.
    #[serde(default)]
    pub scan_channels: Option<Vec<u32>>,
    #[serde(default = "default_dwell")]
    pub scan_dwell: TimeQ,
    #[serde(default = "yes")]
    pub active_scan: bool,
    /// A floor on a scan candidate's filtered RSSI. Default none, as in
    /// madwifi 0.9's scan module (`crate::mac::mgmt`); later net80211
    /// takes STA_RSSI_MIN, 8 units above the -95 dBm floor = -87 dBm.
    #[serde(default)]
    pub selection_threshold: Option<PowerQ>,
    #[serde(default = "default_filter")]
    pub rssi_filter: u32,
    #[serde(default = "default_driver")]
    pub driver: DriverName,
    #[serde(default = "default_bmiss")]
    pub beacon_miss_limit: u32,
    #[serde(default = "default_inactivity")]
    pub inactivity_timeout: TimeQ,
    /// How stations roam while associated (`super::roaming`); default
    /// madwifi's: not at all.
    #[serde(default, deserialize_with = "roaming")]
    pub roaming: RoamingSection,
}

fn default_beacon() -> TimeQ {
    TimeQ(0.1)
}
/// The longest a station dwells on a scan channel: madwifi 0.9's 200 ms.
fn default_dwell() -> TimeQ {
    TimeQ(0.2)
}
fn default_filter() -> u32 {
    10
}
fn default_driver() -> DriverName {
    DriverName::Madwifi
}
fn default_bmiss() -> u32 {
    7
}
fn default_inactivity() -> TimeQ {
    TimeQ(300.0)
}

impl Default for ManagementSection {
    fn default() -> Self {
        ManagementSection {
            beacon_interval: default_beacon(),
            scan_channels: None,
            scan_dwell: default_dwell(),
            active_scan: true,
            selection_threshold: None,
            rssi_filter: default_filter(),
            driver: default_driver(),
            beacon_miss_limit: default_bmiss(),
            inactivity_timeout: default_inactivity(),
            roaming: RoamingSection::default(),
        }
    }
}

/// The channels a station scans unless told: madwifi 0.9's station scan
/// table (b/g: 1, 6, 11, 7, then the rest of the FCC channels 1-11).
pub(super) fn default_scan_channels(standard: Standard) -> Vec<u32> {
    match standard.legacy() {
        Standard::A => vec![36, 40, 44, 48],
        Standard::P => vec![178],
        _ => vec![1, 6, 11, 7, 2, 3, 4, 5, 8, 9, 10],
    }
}

/// A 20 MHz 5 GHz channel a dual-band card may scan: 36-64 and 100-144
/// (multiples of 4), 149-165 (149 + 4k).
fn is_5ghz_channel(c: u32) -> bool {
    matches!(c, 36..=64 | 100..=144) && c.is_multiple_of(4)
        || matches!(c, 149..=165) && (c - 149).is_multiple_of(4)
}

impl ManagementSection {
    /// Management for radios of `standard`.
    pub(super) fn lower(&self, standard: Standard) -> Result<MgmtConfig, ScenarioError> {
        let m = self;
        let beacon_interval = time_in(
            "management.beacon_interval",
            m.beacon_interval,
            1e-3,
            10.0,
            "1 ms to 10 s",
        )?;
        let scan_dwell = time_in(
            "management.scan_dwell",
            m.scan_dwell,
            1e-3,
            10.0,
            "1 ms to 10 s",
        )?;
        if let Some(PowerQ(Dbm(th))) = m.selection_threshold {
            check_range(
                "management.selection_threshold",
                th,
                &format!("{th} dBm"),
                -110.0,
                0.0,
                "-110 dBm to 0 dBm",
            )?;
        }
        check_range(
            "management.rssi_filter",
            m.rssi_filter as f64,
            &m.rssi_filter.to_string(),
            1.0,
            1000.0,
            "1 to 1000",
        )?;
        check_range(
            "management.beacon_miss_limit",
            m.beacon_miss_limit as f64,
            &m.beacon_miss_limit.to_string(),
            1.0,
            1000.0,
            "1 to 1000",
        )?;
        let inactivity_timeout = time_in(
            "management.inactivity_timeout",
            m.inactivity_timeout,
            0.01,
            MAX_DURATION_S,
            "10 ms to 24 h",
        )?;
        let mut listen_only = Vec::new();
        let scan_channels = match &m.scan_channels {
            Some(chs) if chs.is_empty() => {
                return err("management.scan_channels: give at least one channel")
            }
            Some(chs) => {
                let dual_band = matches!(standard, Standard::B | Standard::G);
                for (i, &c) in chs.iter().enumerate() {
                    match standard.default_channel_frequency(c) {
                        Ok(_) => {}
                        Err(_) if dual_band && is_5ghz_channel(c) => listen_only.push(c),
                        Err(e) => {
                            let also = if dual_band {
                                ", or a dual-band card's 5 GHz channel (36-64, \
                                 100-144: multiples of 4; 149-165: 149 + 4k)"
                            } else {
                                ""
                            };
                            return err(format!("management.scan_channels[{i}]: {e}{also}"));
                        }
                    }
                }
                chs.clone()
            }
            None => default_scan_channels(standard),
        };
        Ok(MgmtConfig {
            beacon_interval,
            scan_channels,
            listen_only,
            scan_dwell,
            active_scan: m.active_scan,
            scan_phase: true,
            selection_threshold: m.selection_threshold.map(|t| t.0),
            rssi_filter: m.rssi_filter,
            driver: match m.driver {
                DriverName::Madwifi => DriverProfile::Madwifi,
                DriverName::Tuned => DriverProfile::Tuned,
            },
            beacon_miss_limit: m.beacon_miss_limit,
            inactivity_timeout,
            roaming: m.roaming.lower("management.roaming")?,
        })
    }
}
