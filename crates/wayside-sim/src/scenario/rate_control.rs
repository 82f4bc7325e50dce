//! `rate_control = { algorithm = "…", … }`, in `[mac]` (every node's
//! default) or on a `[[node]]` (its own): the algorithm names a variant,
//! every other key is one of that algorithm's options, so an option of
//! another algorithm is a parse error naming both. Lowered into a
//! [`RateControlSpec`] against what `[mac]` fixes ([`RateContext`]).
//!
//! ```toml
//! rate_control = { algorithm = "samplerate", preset = "tuned" }
//! ```

use super::common::{check_range, err, only, rate_mode, LengthQ, RateQ, RatioQ, ScenarioError};
use crate::config::Role;
use crate::phy::error::ErrorModelKind;
use crate::phy::mode::{Mode, Standard};
use crate::ratectl::{
    AmrrParams, ArfParams, EnvAwareParams, IdealParams, InitialRssi, MinstrelHtParams,
    MinstrelParams, OnoeParams, RateControlSpec, RetryChain, RraaParams, SampleRateParams, SnrMap,
    Stage,
};
use serde::de::{self, Deserializer};
use serde::ser::{self, Serializer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PresetName {
    Default,
    Tuned,
}

/// `algorithm = "fixed"`: one rate, tried up to the MAC's retry limits.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FixedOptions {
    pub rate: RateQ,
}

/// `algorithm = "samplerate"`.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct SampleRateOptions {
    /// Hadaller et al. Table 1's "default" (madwifi) or "tuned".
    #[serde(default)]
    pub preset: Option<PresetName>,
    /// How the initial rate reads the RSSI: "driver" (madwifi 0.9.x's
    /// fixed-point average, in practice 54 Mbps; default) or "thresholds"
    /// (11, 36 or 54 Mbps by dB above the noise floor, as written).
    #[serde(default)]
    pub initial_rssi: Option<InitialRssiName>,
}

/// `initial_rssi`: how SampleRate's initial rate reads the RSSI.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum InitialRssiName {
    Driver,
    Thresholds,
}

/// An algorithm a scenario runs with its built-in parameters.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// `algorithm = "ideal"`.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct IdealOptions {
    /// Least frame success probability at the mean SNR (default 0.9).
    #[serde(default)]
    pub min_success: Option<f64>,
}

/// `algorithm = "environment-aware"`.
#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct EnvAwareOptions {
    /// Earlier passes simulated to fill the map (AP).
    #[serde(default)]
    pub training_passes: Option<u32>,
    /// Map cell size (default 10 m).
    #[serde(default)]
    pub bin: Option<LengthQ>,
    /// Subtracted from every SNR the map predicts (default 0 dB).
    #[serde(default)]
    pub margin: Option<RatioQ>,
    /// Use the map the AP advertises in its beacons (station).
    #[serde(default)]
    pub beacon_hints: Option<bool>,
}

/// Defines [`RateControlSection`], one variant per algorithm with its own
/// options struct, and the table of algorithm names a scenario file uses.
macro_rules! rate_control_sections {
    ($($name:literal => $variant:ident($options:ty), example $example:literal;)*) => {
        /// `rate_control = { algorithm = "samplerate", preset = "tuned" }`:
        /// the algorithm names the variant; every other key is one of that
        /// algorithm's options, so an option of another algorithm is a
        /// parse error naming both.
        #[derive(Debug, Clone)]
        pub enum RateControlSection {
            $($variant($options),)*
        }

        /// Each algorithm's name, the options it takes and an example.
        pub(super) const ALGORITHMS: &[(&str, fn() -> &'static [&'static str], &str)] = &[
            $(($name, fields_of::<$options>, $example),)*
        ];

        impl RateControlSection {
            /// The algorithm's name and its options as a table.
            fn options(&self) -> (&'static str, Result<toml::Table, toml::ser::Error>) {
                match self {
                    $(Self::$variant(o) => ($name, toml::Table::try_from(o)),)*
                }
            }

            fn from_options(algorithm: &str, options: toml::Table) -> Result<Self, String> {
                match algorithm {
                    $($name => options_of($name, options).map(Self::$variant),)*
                    _ => Err(format!(".algorithm: unknown algorithm '{algorithm}'; allowed: {}", algorithm_names())),
                }
            }
        }
    };
}

rate_control_sections! {
    "samplerate" => SampleRate(SampleRateOptions), example "preset = \"tuned\"";
    "onoe" => Onoe(NoOptions), example "";
    "amrr" => Amrr(NoOptions), example "";
    "rraa" => Rraa(NoOptions), example "";
    "minstrel" => Minstrel(NoOptions), example "";
    "minstrel-ht" => MinstrelHt(NoOptions), example "";
    "arf" => Arf(NoOptions), example "";
    "ideal" => Ideal(IdealOptions), example "min_success = 0.9";
    "environment-aware" => EnvAware(EnvAwareOptions), example "training_passes = 3";
    "fixed" => Fixed(FixedOptions), example "rate = \"11 Mbps\"";
}

fn algorithm_names() -> String {
    ALGORITHMS
        .iter()
        .map(|(name, ..)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deserializes `algorithm`'s options; errors start with the option's key
/// (`.margin: …`), or `: ` if none, for [`super::load`] to append to the
/// section's key.
fn options_of<T: de::DeserializeOwned>(algorithm: &str, options: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(options)).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().message().to_string();
        if path.is_empty() || path == "." {
            match msg
                .strip_prefix("missing field `")
                .and_then(|f| f.strip_suffix('`'))
            {
                Some(field) => format!(": algorithm = \"{algorithm}\" needs {field}"),
                None => format!(": algorithm = \"{algorithm}\": {msg}"),
            }
        } else {
            format!(".{path}: {msg}")
        }
    })
}

/// `{ algorithm = "…", … }`, as [`RateControlSection`] reads it.
impl Serialize for RateControlSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (algorithm, options) = self.options();
        let mut table = toml::Table::new();
        table.insert("algorithm".into(), algorithm.into());
        table.extend(options.map_err(ser::Error::custom)?);
        table.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RateControlSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut options = toml::Table::deserialize(d)?;
        let Some(algorithm) = options.remove("algorithm") else {
            return Err(de::Error::custom(format!(
                ".algorithm: missing; allowed: {}",
                algorithm_names()
            )));
        };
        let Some(algorithm) = algorithm.as_str().map(str::to_string) else {
            return Err(de::Error::custom(format!(
                ".algorithm: {algorithm} is not a name; allowed: {}",
                algorithm_names()
            )));
        };
        let Some(&(_, takes, example)) = ALGORITHMS.iter().find(|(name, ..)| *name == algorithm)
        else {
            return RateControlSection::from_options(&algorithm, options)
                .map_err(de::Error::custom);
        };
        // An option of another algorithm: name both.
        if let Some(key) = options.keys().find(|k| !takes().contains(&k.as_str())) {
            let owners: Vec<&str> = ALGORITHMS
                .iter()
                .filter(|(_, t, _)| t().contains(&key.as_str()))
                .map(|(n, ..)| *n)
                .collect();
            let own = match takes() {
                [] => format!("\"{algorithm}\" takes no options"),
                keys => format!("\"{algorithm}\" takes {}", keys.join(", ")),
            };
            let what = if owners.is_empty() {
                format!("not an option of any algorithm; {own}")
            } else {
                let owners: Vec<String> = owners.iter().map(|o| format!("\"{o}\"")).collect();
                format!("only used with algorithm = {}; {own}", owners.join(" or "))
            };
            return Err(de::Error::custom(format!(".{key}: {what}")));
        }
        RateControlSection::from_options(&algorithm, options).map_err(|e| {
            let options = if example.is_empty() {
                String::new()
            } else {
                format!(", {example}")
            };
            de::Error::custom(format!(
                "{e} (for example rate_control = {{ algorithm = \"{algorithm}\"{options} }})"
            ))
        })
    }
}

/// The keys a struct deserialized by serde takes (what it hands to
/// `deserialize_struct`), asked of it without any input.
fn fields_of<T: de::DeserializeOwned>() -> &'static [&'static str] {
    struct Probe(std::cell::Cell<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for &Probe {
        type Error = de::value::Error;
        fn deserialize_any<V: de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(fields);
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let probe = Probe(std::cell::Cell::new(&[]));
    let _ = T::deserialize(&probe);
    probe.0.get()
}

/// What the `[mac]` section fixes for every node's rate control.
pub(super) struct RateContext {
    pub(super) standard: Standard,
    /// The lowest basic rate (`radio.basic_rate`).
    pub(super) basic: Mode,
    pub(super) error_model: ErrorModelKind,
    /// `mac.retry_chain`, if given: (mode, tries) per stage.
    pub(super) chain: Option<Vec<Stage>>,
    pub(super) short_retry_limit: u8,
    pub(super) long_retry_limit: u8,
    pub(super) rts_threshold: u32,
}

impl RateContext {
    /// One fixed `rate`, tried up to the retry limits.
    pub(super) fn fixed(&self, mode: Mode) -> RateControlSpec {
        self.fixed_chain(|tries| vec![Stage { mode, tries }])
    }

    /// `mac.retry_chain`, if given.
    pub(super) fn chain(&self) -> Option<RateControlSpec> {
        let stages = self.chain.clone()?;
        Some(self.fixed_chain(|_| stages.clone()))
    }

    fn fixed_chain(&self, stages: impl Fn(u8) -> Vec<Stage>) -> RateControlSpec {
        RateControlSpec::Fixed {
            short: RetryChain {
                stages: stages(self.short_retry_limit),
            },
            long: RetryChain {
                stages: stages(self.long_retry_limit),
            },
            rts_threshold: self.rts_threshold,
        }
    }

    fn ideal(&self, key: &str, min_success: Option<f64>) -> Result<IdealParams, ScenarioError> {
        let d = IdealParams::default();
        if let Some(p) = min_success {
            check_range(
                &format!("{key}.min_success"),
                p,
                &p.to_string(),
                0.01,
                0.9999,
                "0.01 to 0.9999",
            )?;
        }
        Ok(IdealParams {
            min_success: min_success.unwrap_or(d.min_success),
            error_model: self.error_model,
            ..d
        })
    }

    /// The algorithm a `rate_control` section at `key` builds.
    pub(super) fn spec(
        &self,
        key: &str,
        rc: &RateControlSection,
    ) -> Result<RateControlSpec, ScenarioError> {
        Ok(match rc {
            RateControlSection::Fixed(o) => {
                self.fixed(rate_mode(self.standard, &format!("{key}.rate"), o.rate)?)
            }
            RateControlSection::SampleRate(o) => {
                let preset = match o.preset {
                    Some(PresetName::Tuned) => SampleRateParams::tuned_preset(),
                    Some(PresetName::Default) | None => SampleRateParams::default_preset(),
                };
                RateControlSpec::SampleRate(SampleRateParams {
                    initial_rssi: match o.initial_rssi {
                        Some(InitialRssiName::Thresholds) => InitialRssi::Thresholds,
                        Some(InitialRssiName::Driver) => InitialRssi::Driver,
                        None => preset.initial_rssi,
                    },
                    ..preset
                })
            }
            RateControlSection::Onoe(NoOptions {}) => RateControlSpec::Onoe(OnoeParams::default()),
            RateControlSection::Amrr(NoOptions {}) => RateControlSpec::Amrr(AmrrParams::default()),
            RateControlSection::Rraa(NoOptions {}) => RateControlSpec::Rraa(RraaParams::default()),
            RateControlSection::Minstrel(NoOptions {}) => {
                RateControlSpec::Minstrel(MinstrelParams::default())
            }
            RateControlSection::MinstrelHt(NoOptions {}) => {
                if !matches!(self.standard, Standard::Ht(_)) {
                    return err(format!(
                        "{key}: minstrel-ht picks 802.11n/ac MCS; this radio is {}; \
                         use minstrel for legacy rates",
                        self.standard
                    ));
                }
                RateControlSpec::MinstrelHt(MinstrelHtParams::default())
            }
            RateControlSection::Arf(NoOptions {}) => RateControlSpec::Arf(ArfParams::default()),
            RateControlSection::Ideal(o) => RateControlSpec::Ideal(self.ideal(key, o.min_success)?),
            RateControlSection::EnvAware(o) => {
                let d = EnvAwareParams::default();
                if let Some(n) = o.training_passes {
                    check_range(
                        &format!("{key}.training_passes"),
                        f64::from(n),
                        &n.to_string(),
                        0.0,
                        100.0,
                        "0 to 100",
                    )?;
                }
                if let Some(b) = o.bin {
                    check_range(
                        &format!("{key}.bin"),
                        b.0 .0,
                        &format!("{} m", b.0 .0),
                        0.1,
                        10_000.0,
                        "0.1 m to 10 km",
                    )?;
                }
                if let Some(m) = o.margin {
                    check_range(
                        &format!("{key}.margin"),
                        m.0 .0,
                        &format!("{} dB", m.0 .0),
                        -20.0,
                        30.0,
                        "-20 dB to 30 dB",
                    )?;
                }
                let bin = o.bin.map_or(d.bin, |b| b.0);
                RateControlSpec::EnvAware(EnvAwareParams {
                    training_passes: o.training_passes.unwrap_or(d.training_passes),
                    bin,
                    margin: o.margin.map_or(d.margin, |m| m.0),
                    error_model: self.error_model,
                    beacon_hints: o.beacon_hints.unwrap_or(d.beacon_hints),
                    map: Arc::new(SnrMap::new(bin)),
                    ..d
                })
            }
        })
    }
}

/// The rate control of a node when neither it nor `[mac]` names one: its
/// driver's. madwifi 0.9 (the `madwifi` and `tuned` driver profiles, an AP,
/// and a station that does not roam) builds SampleRate unless told
/// otherwise (its Makefile.inc sets `ATH_RATE=ath_rate/sample` when
/// `ATH_RATE` is empty). A station that roams as a mac80211 client does
/// (`mac80211` true: bgscan, a roam threshold) runs mac80211's Minstrel.
/// madwifi had no 802.11n, so an 802.11n/ac radio runs minstrel_ht,
/// mac80211's default since Linux 2.6.32.
pub(super) fn driver_default(standard: Standard, mac80211: bool) -> RateControlSection {
    match standard {
        Standard::Ht(_) => RateControlSection::MinstrelHt(NoOptions {}),
        _ if mac80211 => RateControlSection::Minstrel(NoOptions {}),
        _ => RateControlSection::SampleRate(SampleRateOptions {
            preset: None,
            initial_rssi: None,
        }),
    }
}

/// Whether a node of `role` can run `spec` (`None`: the `[mac]` default,
/// checked again against each node that uses it).
pub(super) fn check_rate_role(
    key: &str,
    spec: &RateControlSpec,
    role: Option<Role>,
) -> Result<(), ScenarioError> {
    match role {
        Some(Role::Sta) if spec.advertised().is_some() => err(format!(
            "{key}: {} keys its map by the client's position and learns at the access point; \
             on a station set beacon_hints = true to use the map the AP advertises",
            spec.name()
        )),
        Some(role) if spec.takes_hints() => only(&format!("{key}.beacon_hints"), Role::Sta, role, "takes hints from beacons"),
        None if spec.takes_hints() => err(format!("{key}.beacon_hints: set it on the station's own rate_control ([[node]] with role = \"sta\")")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_of_each_algorithm_are_those_of_its_struct() {
        assert_eq!(
            fields_of::<EnvAwareOptions>(),
            ["training_passes", "bin", "margin", "beacon_hints"]
        );
        assert_eq!(fields_of::<FixedOptions>(), ["rate"]);
        assert!(fields_of::<NoOptions>().is_empty());
    }
}
