//! `roaming`, in `[management]` (every station's) or on a `[[node]]` (its
//! own): how a station roams while associated, lowered into a [`Roaming`]
//! ([`crate::mac::mgmt`]). A name takes the profile's defaults; a table
//! names the profile in `kind` and may set its options.
//!
//! ```toml
//! roaming = "bgscan-simple"
//! roaming = { kind = "bgscan-simple", short_interval = "10 s", signal_threshold = "-70 dBm" }
//! roaming = { kind = "threshold", threshold = "-75 dBm" }
//! ```

use super::common::{check_range, time_in, PowerQ, RatioQ, ScenarioError, TimeQ};
use crate::mac::mgmt::Roaming;
use crate::units::{Db, Dbm};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A roaming profile and its options.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RoamingSection {
    /// madwifi 0.9: no roaming (the default).
    Madwifi,
    /// wpa_supplicant's `bgscan="simple:<short>:<threshold>:<long>"`.
    /// Defaults: NetworkManager's `simple:30:-65:300`, which it sets for
    /// a network where it has seen more than one AP
    /// (`nm-supplicant-config.c`).
    BgscanSimple {
        #[serde(default)]
        short_interval: Option<TimeQ>,
        #[serde(default)]
        signal_threshold: Option<PowerQ>,
        #[serde(default)]
        long_interval: Option<TimeQ>,
    },
    /// An explicit roam threshold. Defaults: Apple's for iOS, a −70 dBm
    /// trigger and a candidate 8 dB stronger; a new scan every 10 s while
    /// below (bgscan simple's "not scanned in a while").
    Threshold {
        #[serde(default)]
        threshold: Option<PowerQ>,
        #[serde(default)]
        delta: Option<RatioQ>,
        #[serde(default)]
        rescan: Option<TimeQ>,
    },
}

impl Default for RoamingSection {
    fn default() -> Self {
        RoamingSection::Madwifi
    }
}

/// A profile by name, or a table naming it in `kind`.
pub(super) fn roaming<'de, D: Deserializer<'de>>(d: D) -> Result<RoamingSection, D::Error> {
    struct V;
    impl<'de> de::Visitor<'de> for V {
        type Value = RoamingSection;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(
                "a roaming profile: \"madwifi\", \"bgscan-simple\" or \"threshold\", \
                 or a table with its `kind` and options",
            )
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<RoamingSection, E> {
            match s {
                "madwifi" => Ok(RoamingSection::Madwifi),
                "bgscan-simple" => Ok(RoamingSection::BgscanSimple {
                    short_interval: None,
                    signal_threshold: None,
                    long_interval: None,
                }),
                "threshold" => Ok(RoamingSection::Threshold {
                    threshold: None,
                    delta: None,
                    rescan: None,
                }),
                other => Err(E::custom(format!(
                    "unknown roaming profile \"{other}\": use \"madwifi\", \
                     \"bgscan-simple\" or \"threshold\""
                ))),
            }
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RoamingSection, A::Error> {
            RoamingSection::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// [`roaming`] for an optional key.
pub(super) fn optional_roaming<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<RoamingSection>, D::Error> {
    roaming(d).map(Some)
}

impl RoamingSection {
    /// The profile, its options checked; `at` names the key in messages.
    pub(super) fn lower(&self, at: &str) -> Result<Roaming, ScenarioError> {
        let power = |key: &str, q: Option<PowerQ>, default: f64| {
            let v = q.map_or(default, |p| p.0 .0);
            let text = format!("{v} dBm");
            check_range(
                &format!("{at}.{key}"),
                v,
                &text,
                -110.0,
                0.0,
                "-110 dBm to 0 dBm",
            )
            .map(|_| Dbm(v))
        };
        let time = |key: &str, q: Option<TimeQ>, default: f64| {
            let what = format!("{at}.{key}");
            time_in(
                &what,
                q.unwrap_or(TimeQ(default)),
                0.01,
                86_400.0,
                "10 ms to 24 h",
            )
        };
        Ok(match *self {
            RoamingSection::Madwifi => Roaming::None,
            RoamingSection::BgscanSimple {
                short_interval,
                signal_threshold,
                long_interval,
            } => {
                let short_interval = time("short_interval", short_interval, 30.0)?;
                let long_interval = time("long_interval", long_interval, 300.0)?;
                if long_interval < short_interval {
                    return Err(ScenarioError(format!(
                        "{at}: long_interval is shorter than short_interval; \
                         bgscan scans every short_interval below the threshold \
                         and every long_interval above it"
                    )));
                }
                Roaming::BgscanSimple {
                    short_interval,
                    long_interval,
                    signal_threshold: Some(power("signal_threshold", signal_threshold, -65.0)?),
                }
            }
            RoamingSection::Threshold {
                threshold,
                delta,
                rescan,
            } => {
                let d = delta.map_or(8.0, |RatioQ(Db(d))| d);
                check_range(
                    &format!("{at}.delta"),
                    d,
                    &format!("{d} dB"),
                    0.0,
                    60.0,
                    "0 dB to 60 dB",
                )?;
                Roaming::Threshold {
                    threshold: power("threshold", threshold, -70.0)?,
                    delta: d,
                    rescan: time("rescan", rescan, 10.0)?,
                }
            }
        })
    }
}
