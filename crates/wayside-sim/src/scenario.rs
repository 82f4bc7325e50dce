//! Scenario files: TOML with unit strings (`"80 km/h"`, `"19 dBm"`), parsed
//! into serde structs that reject unknown keys, checked for ranges, and turned
//! into a [`SimConfig`]. Every error names the key, the value and what is
//! allowed. `--set key=value` overrides are applied to the TOML tree first.
//! Built-in scenarios (the files in `scenarios/`) are compiled in.

use crate::apps::ip::{AppConfig, AppKind, AppStart};
use crate::apps::{SourceConfig, SourceKind};
use crate::mac::mgmt::{DriverProfile, MgmtConfig};
use crate::net::{ArpConfig, ArpProfile, WiredLink};
use crate::transport::tcp::{TcpConfig, TcpProfile};
use crate::channel::{ChannelConfig, FadingKind, PathLoss};
use crate::ids::NodeId;
use crate::mac::{Dst, MacConfig};
use crate::mobility::{MobilityModel, Trajectory, Vec2, Waypoint};
use crate::phy::error::{ClosedForm, ErrorModelKind};
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::ratectl::{
    AmrrParams, EnvAwareParams, IdealParams, MinstrelParams, OnoeParams, RateControlSpec, RetryChain, RraaParams, SampleRateParams, SnrMap,
    Stage, MAX_STAGES,
};
use crate::config::{NodeConfig, RadioConfig, Role, SimConfig};
use crate::pcap::PcapConfig;
use crate::units::{parse_quantity, Bitrate, Db, Dbm, Hertz, Meters, Mps, Quantity, SimTime};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;

/// Most nodes a scenario may define: what `benches/many_nodes.py` shows is
/// practical. 10,000 vehicles beaconing at 1 Hz for 60 s simulated take
/// 2.5 GiB (300 m between vehicles in a lane) to 4.9 GiB (150 m) and about
/// ten minutes; memory grows with radios × neighbours and, through the
/// trace's row for each frame at each radio it reaches, with time.
pub const MAX_NODES: usize = 10_000;
/// Longest simulated duration.
pub const MAX_DURATION_S: f64 = 86_400.0;

/// A scenario that cannot be used, with a message for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(msg.into()))
}

/// The built-in scenarios, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    ("saturation", include_str!("../../../scenarios/saturation.toml")),
    ("range", include_str!("../../../scenarios/range.toml")),
    ("drive-by", include_str!("../../../scenarios/drive-by.toml")),
    ("static-lab", include_str!("../../../scenarios/static-lab.toml")),
    ("hadaller-highway", include_str!("../../../scenarios/hadaller-highway.toml")),
    ("hadaller-highway-remote", include_str!("../../../scenarios/hadaller-highway-remote.toml")),
    ("drivethru-autobahn", include_str!("../../../scenarios/drivethru-autobahn.toml")),
];

pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

// ---------------------------------------------------------------- quantities

macro_rules! quantity {
    ($(#[$m:meta])* $name:ident($inner:ty), $q:expr, $what:literal, $conv:expr, $bare:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "a {} with a unit ({}), for example {}", $what, $q.units(), $q.example())
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        parse_quantity(s, $q)
                            .map(|v| $name($conv(v)))
                            .map_err(|e| E::custom(format!("invalid {} \"{}\": {}", $what, s, e)))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        if $bare {
                            Ok($name($conv(v)))
                        } else {
                            Err(E::custom(format!(
                                "invalid {} {}: a unit is required ({}), for example {}", $what, v, $q.units(), $q.example()
                            )))
                        }
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        self.visit_f64(v as f64)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

quantity!(
    /// A duration, e.g. `"100 ms"`.
    TimeQ(f64), Quantity::Time, "duration", |v| v, false);
quantity!(
    /// A power level, e.g. `"19 dBm"`.
    PowerQ(Dbm), Quantity::Power, "power", Dbm, false);
quantity!(
    /// A gain or ratio, e.g. `"7 dBi"`.
    RatioQ(Db), Quantity::Ratio, "ratio", Db, false);
quantity!(
    /// A length, e.g. `"20 m"`; a bare number is metres.
    LengthQ(Meters), Quantity::Length, "length", Meters, true);
quantity!(
    /// A speed, e.g. `"80 km/h"`.
    SpeedQ(Mps), Quantity::Speed, "speed", Mps, false);
quantity!(
    /// A bit rate, e.g. `"54 Mbps"`.
    RateQ(f64), Quantity::Rate, "rate", |v| v, false);
quantity!(
    /// A size, e.g. `"1500 B"`.
    SizeQ(f64), Quantity::Size, "size", |v| v, false);

// ---------------------------------------------------------------- schema

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub duration: TimeQ,
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
    /// pcap output: which radios, and a sniffer.
    #[serde(default)]
    pub pcap: Option<PcapSection>,
}

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

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum DriverName {
    Madwifi,
    Tuned,
}

/// Infrastructure-mode management, shared by every AP and station.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ManagementSection {
    #[serde(default = "default_beacon")]
    pub beacon_interval: TimeQ,
    /// Channels a station scans, in order; default: every channel of the standard's band commonly used (b/g: 1–11).
    #[serde(default)]
    pub scan_channels: Option<Vec<u32>>,
    #[serde(default = "default_dwell")]
    pub scan_dwell: TimeQ,
    #[serde(default = "yes")]
    pub active_scan: bool,
    /// madwifi 0.9's acceptance floor for a scan candidate, STA_RSSI_MIN = 8
    /// units above the -95 dBm floor (Hadaller et al. cite rssi11g = 24 units,
    /// -71 dBm, which the driver's scan module uses only for roaming).
    #[serde(default = "default_threshold")]
    pub selection_threshold: PowerQ,
    #[serde(default = "default_filter")]
    pub rssi_filter: u32,
    #[serde(default = "default_driver")]
    pub driver: DriverName,
    #[serde(default = "default_bmiss")]
    pub beacon_miss_limit: u32,
    #[serde(default = "default_inactivity")]
    pub inactivity_timeout: TimeQ,
}

fn default_beacon() -> TimeQ {
    TimeQ(0.1)
}
fn default_dwell() -> TimeQ {
    TimeQ(0.1)
}
fn default_threshold() -> PowerQ {
    PowerQ(Dbm(-87.0))
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
            selection_threshold: default_threshold(),
            rssi_filter: default_filter(),
            driver: default_driver(),
            beacon_miss_limit: default_bmiss(),
            inactivity_timeout: default_inactivity(),
        }
    }
}

/// A wired point-to-point link (an AP's backhaul to a server).
#[derive(Deserialize, Debug)]
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

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum AppKindName {
    TcpBulk,
    UdpCbr,
    RequestResponse,
}

/// An application over IP.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct AppSection {
    pub kind: AppKindName,
    pub from: String,
    pub to: String,
    #[serde(default = "default_port")]
    pub port: u16,
    /// A time (`"5 s"`), `"on-association"` or `"on-production"`.
    #[serde(default = "default_app_start")]
    pub start: String,
    /// With `start = "on-association"` or `"on-production"`: the application start delay.
    #[serde(default = "zero_time")]
    pub start_delay: TimeQ,
    /// on-production: least fraction of the AP's beacons heard over `production_window` (default 0.9).
    #[serde(default)]
    pub production_ratio: Option<f64>,
    /// on-production: the window the beacon fraction is measured over (default 1 s).
    #[serde(default)]
    pub production_window: Option<TimeQ>,
    /// on-production: least filtered beacon RSSI as well (default: none).
    #[serde(default)]
    pub production_rssi: Option<PowerQ>,
    #[serde(default)]
    pub stop: Option<TimeQ>,
    /// tcp-bulk: bytes to send; default without end.
    #[serde(default)]
    pub bytes: Option<SizeQ>,
    /// udp-cbr: datagram payload.
    #[serde(default)]
    pub payload: Option<SizeQ>,
    /// udp-cbr: time between datagrams.
    #[serde(default)]
    pub interval: Option<TimeQ>,
    /// udp-cbr: wait for room in the sender's MAC queue instead of losing datagrams.
    #[serde(default)]
    pub blocking: bool,
    /// request-response: bytes the client sends per exchange.
    #[serde(default)]
    pub request: Option<SizeQ>,
    /// request-response: bytes the server answers each request with.
    #[serde(default)]
    pub response: Option<SizeQ>,
    /// request-response: exchanges to make; default without end.
    #[serde(default)]
    pub exchanges: Option<u64>,
    /// request-response: time between the server's multicast triggers.
    #[serde(default)]
    pub trigger_interval: Option<TimeQ>,
    /// request-response: the trigger datagram's payload.
    #[serde(default)]
    pub trigger_size: Option<SizeQ>,
    /// false: defined but not run (scenarios with several experiment variants).
    #[serde(default = "yes")]
    pub enabled: bool,
}

/// request-response: the trigger's payload unless `trigger_size` is given.
const DEFAULT_TRIGGER_BYTES: u32 = 32;

fn default_port() -> u16 {
    5001
}
fn default_app_start() -> String {
    "0 s".into()
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum ArpName {
    Linux,
    WindowsXp,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PathLossName {
    FreeSpace,
    TwoRay,
    LogDistance,
    ThreeLogDistance,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum FadingName {
    None,
    Rayleigh,
    Rician,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Seed of the environment (shadowing map): the same road on every pass.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default = "default_noise")]
    pub noise_floor: PowerQ,
    #[serde(default = "default_path_loss")]
    pub path_loss: PathLossName,
    #[serde(default)]
    pub path_loss_exponent: Option<f64>,
    /// three-log-distance: the three exponents.
    #[serde(default)]
    pub path_loss_exponents: Option<[f64; 3]>,
    /// three-log-distance: where the second and third slopes begin.
    #[serde(default)]
    pub path_loss_breakpoints: Option<[LengthQ; 2]>,
    #[serde(default)]
    pub reference_distance: Option<LengthQ>,
    #[serde(default = "zero_db")]
    pub shadowing_sigma: RatioQ,
    #[serde(default = "default_decorrelation")]
    pub shadowing_decorrelation: LengthQ,
    #[serde(default = "default_fading")]
    pub fading: FadingName,
    #[serde(default)]
    pub rician_k: Option<RatioQ>,
}

fn default_noise() -> PowerQ {
    PowerQ(Dbm(-95.0))
}
fn default_path_loss() -> PathLossName {
    PathLossName::TwoRay
}
fn zero_db() -> RatioQ {
    RatioQ(Db(0.0))
}
fn default_decorrelation() -> LengthQ {
    LengthQ(Meters(20.0))
}
fn default_fading() -> FadingName {
    FadingName::None
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            seed: 1,
            noise_floor: default_noise(),
            path_loss: default_path_loss(),
            path_loss_exponent: None,
            path_loss_exponents: None,
            path_loss_breakpoints: None,
            reference_distance: None,
            shadowing_sigma: zero_db(),
            shadowing_decorrelation: default_decorrelation(),
            fading: default_fading(),
            rician_k: None,
        }
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PreambleName {
    Long,
    Short,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Radio {
    pub standard: String,
    #[serde(default)]
    pub channel: Option<u32>,
    #[serde(default = "yes")]
    pub b_compatible: bool,
    #[serde(default = "long")]
    pub preamble: PreambleName,
    #[serde(default = "default_cca")]
    pub cca_threshold: PowerQ,
    /// A frame this much stronger than the one being received takes over; "off" disables.
    #[serde(default = "default_capture")]
    pub capture_margin: CaptureMargin,
    #[serde(default = "zero_db")]
    pub implementation_loss: RatioQ,
}

fn yes() -> bool {
    true
}
fn long() -> PreambleName {
    PreambleName::Long
}
fn default_cca() -> PowerQ {
    PowerQ(Dbm(-62.0))
}
fn default_capture() -> CaptureMargin {
    CaptureMargin(Some(Db(10.0)))
}

/// A capture margin in dB, or `"off"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaptureMargin(pub Option<Db>);

impl<'de> Deserialize<'de> for CaptureMargin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim() == "off" {
            return Ok(CaptureMargin(None));
        }
        parse_quantity(&s, Quantity::Ratio)
            .map(|v| CaptureMargin(Some(Db(v))))
            .map_err(|e| de::Error::custom(format!("invalid capture margin \"{s}\": {e}, or \"off\"")))
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ChainStage {
    pub rate: RateQ,
    pub tries: u32,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct MacSection {
    #[serde(default = "default_queue")]
    pub queue_limit: u64,
    #[serde(default = "default_short")]
    pub short_retry_limit: u32,
    #[serde(default = "default_long")]
    pub long_retry_limit: u32,
    #[serde(default = "default_rts")]
    pub rts_threshold: SizeQ,
    /// Fixed data rate; default the standard's highest.
    #[serde(default)]
    pub rate: Option<RateQ>,
    /// A static multi-rate retry chain (instead of `rate`).
    #[serde(default)]
    pub retry_chain: Option<Vec<ChainStage>>,
    /// A rate-control algorithm instead of a fixed `rate` / `retry_chain`.
    #[serde(default)]
    pub rate_control: Option<RateControlSection>,
    /// Atheros fast frames (madwifi's `ff`): aggregate two packets to the
    /// same receiver when the frame's airtime stays within `fast_frame_airtime`.
    #[serde(default)]
    pub fast_frames: bool,
    #[serde(default = "default_ff_airtime")]
    pub fast_frame_airtime: TimeQ,
}

fn default_ff_airtime() -> TimeQ {
    TimeQ(1.2e-3)
}

fn default_queue() -> u64 {
    1000
}
fn default_short() -> u32 {
    7
}
fn default_long() -> u32 {
    4
}
fn default_rts() -> SizeQ {
    SizeQ(2347.0)
}

impl Default for MacSection {
    fn default() -> Self {
        MacSection {
            queue_limit: default_queue(),
            short_retry_limit: default_short(),
            long_retry_limit: default_long(),
            rts_threshold: default_rts(),
            rate: None,
            retry_chain: None,
            rate_control: None,
            fast_frames: false,
            fast_frame_airtime: default_ff_airtime(),
        }
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum AlgorithmName {
    Samplerate,
    Onoe,
    Amrr,
    Rraa,
    Minstrel,
    Ideal,
    EnvironmentAware,
    Fixed,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PresetName {
    Default,
    Tuned,
}

/// `rate_control = { algorithm = "samplerate", preset = "tuned" }`, or
/// `{ algorithm = "fixed", rate = "11 Mbps" }` for one node at one rate.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct RateControlSection {
    pub algorithm: AlgorithmName,
    /// fixed: the rate, tried up to the MAC's retry limits.
    #[serde(default)]
    pub rate: Option<RateQ>,
    /// samplerate: Hadaller et al. Table 1's "default" (madwifi) or "tuned".
    #[serde(default)]
    pub preset: Option<PresetName>,
    /// ideal, environment-aware: least frame success probability at the
    /// (estimated) mean SNR (default 0.9).
    #[serde(default)]
    pub min_success: Option<f64>,
    /// environment-aware: earlier passes simulated to fill the map (AP).
    #[serde(default)]
    pub training_passes: Option<u32>,
    /// environment-aware: map cell size (default 10 m).
    #[serde(default)]
    pub bin: Option<LengthQ>,
    /// environment-aware: subtracted from the map's SNR estimate (default 0 dB).
    #[serde(default)]
    pub margin: Option<RatioQ>,
    /// environment-aware: use the map the AP advertises in its beacons (station).
    #[serde(default)]
    pub beacon_hints: Option<bool>,
}

impl RateControlSection {
    /// Checks the section; `role` is the node's role, or `None` for the
    /// `[mac]` default (checked again against every node that uses it).
    fn validate(&self, key: &str, role: Option<Role>, standard: Standard) -> Result<(), ScenarioError> {
        match (self.algorithm, self.rate) {
            (AlgorithmName::Fixed, None) => return err(format!("{key}: algorithm = \"fixed\" needs rate, for example rate = \"11 Mbps\"")),
            (AlgorithmName::Fixed, Some(r)) => {
                rate_mode(standard, &format!("{key}.rate"), r)?;
            }
            (_, Some(_)) => return err(format!("{key}.rate: only used with algorithm = \"fixed\"")),
            _ => {}
        }
        if self.preset.is_some() && self.algorithm != AlgorithmName::Samplerate {
            return err(format!("{key}.preset: only samplerate has presets (default, tuned)"));
        }
        let env = self.algorithm == AlgorithmName::EnvironmentAware;
        if let Some(p) = self.min_success {
            if !matches!(self.algorithm, AlgorithmName::Ideal | AlgorithmName::EnvironmentAware) {
                return err(format!("{key}.min_success: only used with algorithm = \"ideal\" or \"environment-aware\""));
            }
            check_range(&format!("{key}.min_success"), p, &p.to_string(), 0.01, 0.9999, "0.01 to 0.9999")?;
        }
        let given = [
            ("training_passes", self.training_passes.is_some()),
            ("bin", self.bin.is_some()),
            ("margin", self.margin.is_some()),
            ("beacon_hints", self.beacon_hints.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, g)| *g && !env) {
            return err(format!("{key}.{name}: only used with algorithm = \"environment-aware\""));
        }
        if let Some(n) = self.training_passes {
            check_range(&format!("{key}.training_passes"), f64::from(n), &n.to_string(), 0.0, 100.0, "0 to 100")?;
        }
        if let Some(b) = self.bin {
            check_range(&format!("{key}.bin"), b.0 .0, &format!("{} m", b.0 .0), 0.1, 10_000.0, "0.1 m to 10 km")?;
        }
        if let Some(m) = self.margin {
            check_range(&format!("{key}.margin"), m.0 .0, &format!("{} dB", m.0 .0), -20.0, 30.0, "-20 dB to 30 dB")?;
        }
        let hints = self.beacon_hints == Some(true);
        match role {
            Some(Role::Sta) if env && !hints => err(format!(
                "{key}: environment-aware keys its map by the client's position and learns at the access point; \
                 on a station set beacon_hints = true to use the map the AP advertises"
            )),
            Some(Role::Ap | Role::Independent) if hints => {
                err(format!("{key}.beacon_hints: only a station (role = \"sta\") takes hints from beacons"))
            }
            None if hints => err(format!("{key}.beacon_hints: set it on the station's own rate_control ([[node]] with role = \"sta\")")),
            _ => Ok(()),
        }
    }

    /// The algorithm to build; `fixed` gives the chain of a fixed rate.
    fn spec(&self, error_model: ErrorModelKind, fixed: impl Fn(Option<RateQ>) -> RateControlSpec) -> RateControlSpec {
        match self.algorithm {
            AlgorithmName::Fixed => fixed(self.rate),
            AlgorithmName::Samplerate => RateControlSpec::SampleRate(match self.preset {
                Some(PresetName::Tuned) => SampleRateParams::tuned_preset(),
                _ => SampleRateParams::default_preset(),
            }),
            AlgorithmName::Onoe => RateControlSpec::Onoe(OnoeParams::default()),
            AlgorithmName::Amrr => RateControlSpec::Amrr(AmrrParams::default()),
            AlgorithmName::Rraa => RateControlSpec::Rraa(RraaParams::default()),
            AlgorithmName::Minstrel => RateControlSpec::Minstrel(MinstrelParams::default()),
            AlgorithmName::Ideal => RateControlSpec::Ideal(self.ideal(error_model)),
            AlgorithmName::EnvironmentAware => {
                let d = EnvAwareParams::default();
                let bin = self.bin.map_or(d.bin, |b| b.0);
                RateControlSpec::EnvAware(EnvAwareParams {
                    training_passes: self.training_passes.unwrap_or(d.training_passes),
                    bin,
                    margin: self.margin.map_or(d.margin, |m| m.0),
                    ideal: self.ideal(error_model),
                    beacon_hints: self.beacon_hints.unwrap_or(d.beacon_hints),
                    map: Arc::new(SnrMap::new(bin)),
                    ..d
                })
            }
        }
    }

    fn ideal(&self, error_model: ErrorModelKind) -> IdealParams {
        IdealParams { min_success: self.min_success.unwrap_or(IdealParams::default().min_success), error_model, ..IdealParams::default() }
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct WaypointSection {
    pub position: Point,
    pub speed: SpeedQ,
    #[serde(default = "zero_time")]
    pub pause: TimeQ,
}

fn zero_time() -> TimeQ {
    TimeQ(0.0)
}

impl TimeQ {
    /// As simulated time (validated non-negative first).
    pub fn time(self) -> SimTime {
        SimTime::from_secs_f64(self.0)
    }
}

/// A point in the road plane: exactly two lengths `[x, y]` (bare numbers are metres).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point(pub Vec2);

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<LengthQ>::deserialize(d)?;
        match v[..] {
            [x, y] => Ok(Point(Vec2::new(x.0 .0, y.0 .0))),
            _ => Err(de::Error::custom(format!("a point is [x, y]; {} values given", v.len()))),
        }
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MobilitySection {
    /// Stays at the node's `position`.
    Static {},
    /// From `position`, moves forever at `speed` along `heading` (degrees, 0 = +x).
    Line {
        speed: SpeedQ,
        #[serde(default)]
        heading: f64,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
    /// Follows `points` at `speed`, starting from the first.
    Polyline {
        points: Vec<Point>,
        speed: SpeedQ,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
    /// From `position`, visits each waypoint at its speed, pausing there.
    Waypoints {
        waypoints: Vec<WaypointSection>,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct NodeSection {
    pub name: String,
    /// Several identical nodes named `name-0`, `name-1`, … offset by `spacing`.
    #[serde(default = "one")]
    pub count: u64,
    #[serde(default)]
    pub spacing: Option<Point>,
    #[serde(default = "origin")]
    pub position: Point,
    #[serde(default = "default_power")]
    pub tx_power: PowerQ,
    #[serde(default = "zero_db")]
    pub antenna_gain: RatioQ,
    #[serde(default = "default_height")]
    pub antenna_height: LengthQ,
    #[serde(default = "static_mobility")]
    pub mobility: MobilitySection,
    /// false for a wired-only host (a server behind the AP).
    #[serde(default = "yes")]
    pub radio: bool,
    #[serde(default = "independent")]
    pub role: Role,
    /// An AP's channel; default the radio's.
    #[serde(default)]
    pub channel: Option<u32>,
    /// TCP behaviour: linux-2.6, linux-modern or windows-xp.
    #[serde(default = "default_tcp")]
    pub tcp: String,
    /// Overrides of the TCP profile's timers (Hadaller et al. 2007 §7.3 (e), (f)).
    #[serde(default)]
    pub tcp_params: TcpParams,
    #[serde(default = "default_arp")]
    pub arp: ArpName,
    /// Replaces the ARP profile's retransmission timeout (§7.3 (c)).
    #[serde(default)]
    pub arp_retransmit: Option<TimeQ>,
    /// This node's transmit queue, frames (default: mac.queue_limit).
    #[serde(default)]
    pub queue_limit: Option<u64>,
    /// A station that gets its address by DHCP from its AP (default: static).
    #[serde(default)]
    pub dhcp: bool,
    /// An AP that answers DHCP (default true).
    #[serde(default = "yes")]
    pub dhcp_server: bool,
    /// This node's rate control (default: the [mac] section's).
    #[serde(default)]
    pub rate_control: Option<RateControlSection>,
    /// An AP that splits the TCP connections it forwards (I-TCP; Hadaller et al. 2007 §7.3).
    #[serde(default)]
    pub split_tcp: bool,
    /// When the node's radio comes on (default: at the start). Before, it
    /// neither sends nor hears: a vehicle not yet in the area.
    #[serde(default)]
    pub appear: Option<TimeQ>,
    /// When its radio goes off for good (default: never): a vehicle that
    /// has left the area.
    #[serde(default)]
    pub disappear: Option<TimeQ>,
}

/// `tcp_params = { initial_rto = "1 s", backoff_limit = 0 }`: each key
/// replaces one value of the node's TCP profile.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct TcpParams {
    /// RTO before the first RTT sample; also the SYN retransmission timeout.
    #[serde(default)]
    pub initial_rto: Option<TimeQ>,
    #[serde(default)]
    pub min_rto: Option<TimeQ>,
    #[serde(default)]
    pub max_rto: Option<TimeQ>,
    /// Most doublings of the RTO in a row; 0: no exponential backoff.
    #[serde(default)]
    pub backoff_limit: Option<u32>,
    #[serde(default)]
    pub syn_retries: Option<u32>,
    #[serde(default)]
    pub data_retries: Option<u32>,
    /// Receive window (above 64 KB with window scaling); at a split-TCP AP
    /// also the relay buffer per direction.
    #[serde(default)]
    pub rcv_wnd: Option<SizeQ>,
}

impl TcpParams {
    fn validate(&self, key: &str) -> Result<(), ScenarioError> {
        let time = |k: &str, t: Option<TimeQ>, lo: f64, hi: f64, allowed: &str| match t {
            Some(t) => check_range(&format!("{key}.{k}"), t.0, &format!("{} s", t.0), lo, hi, allowed),
            None => Ok(()),
        };
        time("initial_rto", self.initial_rto, 1e-3, 600.0, "1 ms to 600 s")?;
        time("min_rto", self.min_rto, 1e-3, 600.0, "1 ms to 600 s")?;
        time("max_rto", self.max_rto, 1e-3, 3600.0, "1 ms to 1 h")?;
        if let (Some(lo), Some(hi)) = (self.min_rto, self.max_rto) {
            if lo.0 > hi.0 {
                return err(format!("{key}.min_rto: {} s is above max_rto ({} s)", lo.0, hi.0));
            }
        }
        if let Some(w) = self.rcv_wnd {
            check_range(&format!("{key}.rcv_wnd"), w.0, &format!("{} B", w.0), 1024.0, 1073741824.0, "1 KiB to 1 GiB")?;
        }
        for (k, v) in [("backoff_limit", self.backoff_limit), ("syn_retries", self.syn_retries), ("data_retries", self.data_retries)] {
            if let Some(v) = v {
                check_range(&format!("{key}.{k}"), v as f64, &v.to_string(), 0.0, 100.0, "0 to 100")?;
            }
        }
        Ok(())
    }

    /// `cfg` with these overrides.
    fn apply(&self, mut cfg: TcpConfig) -> TcpConfig {
        if let Some(t) = self.initial_rto {
            cfg.initial_rto = t.time();
        }
        if let Some(t) = self.min_rto {
            cfg.min_rto = t.time();
        }
        if let Some(t) = self.max_rto {
            cfg.max_rto = t.time();
        }
        if let Some(n) = self.backoff_limit {
            cfg.backoff_limit = n;
        }
        if let Some(n) = self.syn_retries {
            cfg.syn_retries = n;
        }
        if let Some(n) = self.data_retries {
            cfg.data_retries = n;
        }
        if let Some(w) = self.rcv_wnd {
            cfg.rcv_wnd = w.0 as u32;
        }
        if cfg.min_rto > cfg.max_rto {
            cfg.max_rto = cfg.min_rto;
        }
        cfg
    }
}

fn independent() -> Role {
    Role::Independent
}
fn default_tcp() -> String {
    "linux-2.6".into()
}
fn default_arp() -> ArpName {
    ArpName::Linux
}

fn origin() -> Point {
    Point(Vec2::new(0.0, 0.0))
}
fn default_power() -> PowerQ {
    PowerQ(Dbm(15.0))
}
fn default_height() -> LengthQ {
    LengthQ(Meters(1.5))
}
fn static_mobility() -> MobilitySection {
    MobilitySection::Static {}
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficKind {
    Saturate,
    Cbr,
    Sounder,
}

#[derive(Deserialize, Debug)]
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
}

fn default_payload() -> SizeQ {
    SizeQ(1500.0)
}

// ---------------------------------------------------------------- loading

/// Applies `key=value` overrides to a parsed TOML document. Keys are dotted
/// paths; inside the `node` and `traffic` arrays a segment is an index or,
/// for nodes, a node name: `node.car.tx_power="15 dBm"`, `traffic.0.payload="500 B"`
/// (also written `traffic[0].payload`, as error messages name keys).
pub fn apply_overrides(doc: &mut toml::Table, overrides: &[String]) -> Result<(), ScenarioError> {
    for o in overrides {
        let Some((key, raw)) = o.split_once('=') else {
            return err(format!("override '{o}': expected KEY=VALUE, for example radio.standard=802.11b"));
        };
        // `node[1].x`, as errors name keys, is `node.1.x`.
        let key = key.trim().replace('[', ".").replace(']', "");
        let value = parse_override_value(raw.trim());
        let segments: Vec<&str> = key.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return err(format!("override '{o}': empty segment in key '{key}'"));
        }
        if segments.len() > 1 && ARRAY_SECTIONS.contains(&segments[0]) && !doc.contains_key(segments[0]) {
            let first = segments[0];
            return err(format!(
                "override '{o}': the scenario has no [[{first}]] entries; an override changes a value, it cannot add a {first}: add one to the scenario file"
            ));
        }
        set_path(doc, &segments, value).map_err(|e| ScenarioError(format!("override '{o}': {e}")))?;
    }
    Ok(())
}

fn parse_override_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// The sections that are arrays of tables (`[[node]]`, …): an override can
/// change their entries but not create them.
const ARRAY_SECTIONS: [&str; 4] = ["node", "traffic", "link", "app"];

fn set_path(table: &mut toml::Table, path: &[&str], value: toml::Value) -> Result<(), String> {
    let (first, rest) = path.split_first().expect("non-empty path");
    if rest.is_empty() {
        table.insert((*first).to_string(), value);
        return Ok(());
    }
    let entry = table.entry((*first).to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(t) => set_path(t, rest, value),
        toml::Value::Array(items) => {
            let (sel, rest2) = rest.split_first().expect("non-empty");
            let idx = match sel.parse::<usize>() {
                Ok(i) if i < items.len() => i,
                Ok(i) => return Err(format!("'{first}' has {} entries; index {i} is out of range", items.len())),
                Err(_) => items
                    .iter()
                    .position(|it| it.get("name").and_then(|n| n.as_str()) == Some(sel))
                    .ok_or_else(|| {
                        let names: Vec<&str> = items.iter().filter_map(|it| it.get("name").and_then(|n| n.as_str())).collect();
                        if names.is_empty() {
                            format!("no {first} named '{sel}'; use an index 0 to {}", items.len().saturating_sub(1))
                        } else {
                            format!("no {first} named '{sel}'; {first}s: {}, or an index 0 to {}", names.join(", "), items.len() - 1)
                        }
                    })?,
            };
            if rest2.is_empty() {
                return Err(format!("'{first}.{sel}' is a whole table; name one of its keys"));
            }
            match &mut items[idx] {
                toml::Value::Table(t) => set_path(t, rest2, value),
                _ => Err(format!("'{first}.{sel}' is not a table")),
            }
        }
        _ => Err(format!("'{first}' is a value, not a table")),
    }
}

/// Parses scenario text, applies overrides, and validates. Returns the
/// resolved TOML (what was actually run) and the typed scenario.
pub fn load(text: &str, overrides: &[String]) -> Result<(String, Scenario), ScenarioError> {
    let mut doc: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError(format!("scenario is not valid TOML: {}", e.message())))?;
    apply_overrides(&mut doc, overrides)?;
    let resolved = toml::to_string(&doc).map_err(|e| ScenarioError(e.to_string()))?;
    let de = toml::Deserializer::new(&resolved);
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().to_string();
        if path.is_empty() || path == "." {
            ScenarioError(msg)
        } else {
            ScenarioError(format!("{path}: {msg}"))
        }
    })?;
    scenario.validate()?;
    Ok((resolved, scenario))
}

fn check_range(key: &str, value: f64, shown: &str, lo: f64, hi: f64, allowed: &str) -> Result<(), ScenarioError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        err(format!("{key}: {shown} is out of range; allowed: {allowed}"))
    }
}

/// Coordinates must be finite and within 10 000 km of the origin.
fn check_point(key: &str, p: Point) -> Result<(), ScenarioError> {
    for (axis, v) in [("x", p.0.x), ("y", p.0.y)] {
        check_range(&format!("{key}.{axis}"), v, &format!("{v} m"), -1e7, 1e7, "-10000 km to 10000 km")?;
    }
    Ok(())
}

fn parse_standard(s: &str) -> Result<Standard, ScenarioError> {
    s.parse::<Standard>().map_err(|e| ScenarioError(format!("radio.standard: {e}")))
}

fn rate_mode(standard: Standard, key: &str, r: RateQ) -> Result<Mode, ScenarioError> {
    standard.mode(Bitrate(r.0.round() as u64)).ok_or_else(|| {
        let allowed: Vec<String> = standard.modes().iter().map(|m| format!("{}", m.rate.mbps())).collect();
        ScenarioError(format!("{key}: {} Mbps is not a rate of {}; allowed: {} Mbps", r.0 / 1e6, standard.name(), allowed.join(", ")))
    })
}

impl Scenario {
    /// Range and consistency checks serde cannot express.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if let Some(name) = &self.name {
            if name.is_empty() || name.len() > 100 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || name.starts_with('.') {
                return err(format!("name: '{name}' is not usable; use up to 100 letters, digits, '-', '_' and '.', not starting with '.'"));
            }
        }
        let d = self.duration.0;
        check_range("duration", d, &format!("{d} s"), 1e-9, MAX_DURATION_S, "more than 0 s, up to 24 h")?;
        let env = &self.environment;
        check_range("environment.noise_floor", env.noise_floor.0 .0, &format!("{} dBm", env.noise_floor.0 .0), -130.0, -30.0, "-130 dBm to -30 dBm")?;
        if let Some(n) = env.path_loss_exponent {
            check_range("environment.path_loss_exponent", n, &n.to_string(), 1.0, 8.0, "1 to 8")?;
            if env.path_loss != PathLossName::LogDistance {
                return err("environment.path_loss_exponent: only used with path_loss = \"log-distance\"");
            }
        }
        match (env.path_loss, env.path_loss_exponents, env.path_loss_breakpoints) {
            (PathLossName::ThreeLogDistance, Some(ns), Some(bs)) => {
                for (i, n) in ns.iter().enumerate() {
                    check_range(&format!("environment.path_loss_exponents[{i}]"), *n, &n.to_string(), 1.0, 20.0, "1 to 20")?;
                }
                for (i, b) in bs.iter().enumerate() {
                    check_range(&format!("environment.path_loss_breakpoints[{i}]"), b.0 .0, &format!("{} m", b.0 .0), 1.0, 1e5, "1 m to 100 km")?;
                }
                if bs[1].0 .0 <= bs[0].0 .0 {
                    return err("environment.path_loss_breakpoints: the second must be farther than the first");
                }
            }
            (PathLossName::ThreeLogDistance, _, _) => {
                return err("environment: path_loss = \"three-log-distance\" needs path_loss_exponents = [n0, n1, n2] and path_loss_breakpoints = [d1, d2]");
            }
            (_, None, None) => {}
            _ => return err("environment.path_loss_exponents and path_loss_breakpoints: only used with path_loss = \"three-log-distance\""),
        }
        if let Some(r) = env.reference_distance {
            check_range("environment.reference_distance", r.0 .0, &format!("{} m", r.0 .0), 0.01, 10_000.0, "0.01 m to 10 km")?;
        }
        let s = env.shadowing_sigma.0 .0;
        check_range("environment.shadowing_sigma", s, &format!("{s} dB"), 0.0, 20.0, "0 dB to 20 dB")?;
        let dc = env.shadowing_decorrelation.0 .0;
        check_range("environment.shadowing_decorrelation", dc, &format!("{dc} m"), 0.1, 10_000.0, "0.1 m to 10 km")?;
        if env.rician_k.is_some() && env.fading != FadingName::Rician {
            return err("environment.rician_k: only used with fading = \"rician\"");
        }
        if let Some(k) = env.rician_k {
            check_range("environment.rician_k", k.0 .0, &format!("{} dB", k.0 .0), -30.0, 40.0, "-30 dB to 40 dB")?;
        }
        let standard = parse_standard(&self.radio.standard)?;
        if let Some(ch) = self.radio.channel {
            standard.default_channel_frequency(ch).map_err(|e| ScenarioError(format!("radio.channel: {e}")))?;
        }
        let cca = self.radio.cca_threshold.0 .0;
        check_range("radio.cca_threshold", cca, &format!("{cca} dBm"), -120.0, 0.0, "-120 dBm to 0 dBm")?;
        if let Some(m) = self.radio.capture_margin.0 {
            check_range("radio.capture_margin", m.0, &format!("{} dB", m.0), 0.0, 60.0, "0 dB to 60 dB, or \"off\"")?;
        }
        let il = self.radio.implementation_loss.0 .0;
        check_range("radio.implementation_loss", il, &format!("{il} dB"), 0.0, 30.0, "0 dB to 30 dB")?;
        let mac = &self.mac;
        check_range("mac.queue_limit", mac.queue_limit as f64, &mac.queue_limit.to_string(), 1.0, 1e6, "1 to 1000000 frames")?;
        check_range("mac.short_retry_limit", mac.short_retry_limit as f64, &mac.short_retry_limit.to_string(), 1.0, 255.0, "1 to 255 attempts")?;
        check_range("mac.long_retry_limit", mac.long_retry_limit as f64, &mac.long_retry_limit.to_string(), 1.0, 255.0, "1 to 255 attempts")?;
        check_range("mac.rts_threshold", mac.rts_threshold.0, &format!("{} B", mac.rts_threshold.0), 0.0, 1e6, "0 B to 1 MB")?;
        let ff = mac.fast_frame_airtime.0;
        check_range("mac.fast_frame_airtime", ff, &format!("{ff} s"), 1e-5, 0.05, "10 us to 50 ms")?;
        if [mac.rate.is_some(), mac.retry_chain.is_some(), mac.rate_control.is_some()].iter().filter(|&&b| b).count() > 1 {
            return err("mac: give one of rate, retry_chain and rate_control");
        }
        if let Some(rc) = &mac.rate_control {
            rc.validate("mac.rate_control", None, standard)?;
            for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.rate_control.is_none() && n.radio) {
                rc.validate(&format!("mac.rate_control (used by node[{i}] '{}')", n.name), Some(n.role), standard)?;
            }
        }
        if let Some(r) = mac.rate {
            rate_mode(standard, "mac.rate", r)?;
        }
        if let Some(chain) = &mac.retry_chain {
            if chain.is_empty() || chain.len() > MAX_STAGES {
                return err(format!("mac.retry_chain: {} stages given; allowed: 1 to {MAX_STAGES}", chain.len()));
            }
            for (i, st) in chain.iter().enumerate() {
                rate_mode(standard, &format!("mac.retry_chain[{i}].rate"), st.rate)?;
                check_range(&format!("mac.retry_chain[{i}].tries"), st.tries as f64, &st.tries.to_string(), 1.0, 15.0, "1 to 15")?;
            }
        }
        if self.nodes.is_empty() {
            return err("node: at least one [[node]] is required");
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let key = |k: &str| format!("node[{i}].{k}");
            if n.name.trim().is_empty() || n.name.contains(['.', '=', '/']) || n.name == "broadcast" {
                return err(format!("{}: '{}' is not a usable name; use letters, digits, '-' and '_' (not 'broadcast')", key("name"), n.name));
            }
            check_range(&key("count"), n.count as f64, &n.count.to_string(), 1.0, MAX_NODES as f64, &format!("1 to {MAX_NODES}"))?;
            check_range(&key("tx_power"), n.tx_power.0 .0, &format!("{} dBm", n.tx_power.0 .0), -30.0, 40.0, "-30 dBm to 40 dBm")?;
            check_range(&key("antenna_gain"), n.antenna_gain.0 .0, &format!("{} dBi", n.antenna_gain.0 .0), -20.0, 30.0, "-20 dBi to 30 dBi")?;
            let h = n.antenna_height.0 .0;
            check_range(&key("antenna_height"), h, &format!("{h} m"), 0.01, 1000.0, "0.01 m to 1000 m")?;
            check_point(&key("position"), n.position)?;
            if let Some(sp) = n.spacing {
                check_point(&key("spacing"), sp)?;
                let far = Point(Vec2::new(n.position.0.x + sp.0.x * n.count as f64, n.position.0.y + sp.0.y * n.count as f64));
                check_point(&format!("{} (the last of {} nodes)", key("spacing"), n.count), far)?;
            }
            self.validate_mobility(&key("mobility"), &n.mobility)?;
            for (k, t) in [("appear", n.appear), ("disappear", n.disappear)] {
                if let Some(t) = t {
                    check_range(&key(k), t.0, &format!("{} s", t.0), 0.0, MAX_DURATION_S, "0 s to 24 h")?;
                    if !n.radio {
                        return err(format!("{}: only a node with a radio appears and disappears; this one has radio = false", key(k)));
                    }
                }
            }
            if let (Some(a), Some(d)) = (n.appear, n.disappear) {
                if d.0 <= a.0 {
                    return err(format!("{}: {} s is not after appear ({} s)", key("disappear"), d.0, a.0));
                }
            }
        }
        let total: u64 = self.nodes.iter().map(|n| n.count).sum();
        if total as usize > MAX_NODES {
            return err(format!("node: {total} nodes in all; allowed: 1 to {MAX_NODES}"));
        }
        let names = self.node_names();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return err(format!("node: the name '{name}' is used twice; node names must be unique"));
            }
        }
        for (i, t) in self.traffic.iter().enumerate() {
            let key = |k: &str| format!("traffic[{i}].{k}");
            if !names.contains(&t.from) {
                return err(format!("{}: no node named '{}'; nodes: {}", key("from"), t.from, names.join(", ")));
            }
            if t.to != "broadcast" && !names.contains(&t.to) {
                return err(format!("{}: no node named '{}'; nodes: {}, or broadcast", key("to"), t.to, names.join(", ")));
            }
            if t.to == t.from {
                return err(format!("{}: a node cannot send to itself", key("to")));
            }
            check_range(&key("payload"), t.payload.0, &format!("{} B", t.payload.0), 1.0, 2304.0, "1 B to 2304 B (the 802.11 MSDU limit)")?;
            match (t.kind, t.interval) {
                (TrafficKind::Saturate, Some(_)) => return err(format!("{}: a saturating source has no interval", key("interval"))),
                (TrafficKind::Cbr | TrafficKind::Sounder, None) => return err(format!("{}: required for kind = \"cbr\" and \"sounder\"", key("interval"))),
                (_, Some(iv)) => check_range(&key("interval"), iv.0, &format!("{} s", iv.0), 1e-6, 3600.0, "1 us to 1 h")?,
                _ => {}
            }
            if t.kind == TrafficKind::Saturate && t.to == "broadcast" {
                return err(format!("{}: a saturating source needs a unicast destination", key("to")));
            }
            match (&t.rates, t.kind) {
                (Some(_), k) if k != TrafficKind::Sounder => return err(format!("{}: only used with kind = \"sounder\"", key("rates"))),
                (Some(rs), _) => {
                    if rs.is_empty() {
                        return err(format!("{}: give at least one rate", key("rates")));
                    }
                    for (j, r) in rs.iter().enumerate() {
                        rate_mode(standard, &format!("{}[{j}]", key("rates")), *r)?;
                    }
                }
                _ => {}
            }
            check_range(&key("start"), t.start.0, &format!("{} s", t.start.0), 0.0, MAX_DURATION_S, "0 s to 24 h")?;
            if let Some(stop) = t.stop {
                if stop.0 < t.start.0 {
                    return err(format!("{}: {} s is before start ({} s)", key("stop"), stop.0, t.start.0));
                }
            }
        }
        self.validate_infrastructure(standard, &names)?;
        self.validate_pcap(&names)?;
        Ok(())
    }

    fn validate_pcap(&self, names: &[String]) -> Result<(), ScenarioError> {
        let Some(p) = &self.pcap else { return Ok(()) };
        if p.nodes.as_ref().is_some_and(Vec::is_empty) {
            return err("pcap.nodes: give at least one radio, or leave nodes out to capture every radio");
        }
        let radios = self.node_names_where(|n| n.radio);
        for (i, n) in p.nodes.iter().flatten().enumerate() {
            if !radios.contains(n) {
                return err(format!("pcap.nodes[{i}]: no node with a radio named '{n}'; radios: {}", radios.join(", ")));
            }
        }
        let Some(sniffer) = &p.sniffer else { return Ok(()) };
        let Some(node) = self.nodes.iter().find(|n| n.count == 1 && &n.name == sniffer) else {
            let what = if names.contains(sniffer) { "is one of a group (count > 1); give the sniffer a [[node]] of its own" } else { "no such node" };
            return err(format!("pcap.sniffer: '{sniffer}': {what}; nodes: {}", names.join(", ")));
        };
        if !node.radio || node.role != Role::Independent {
            return err(format!("pcap.sniffer: '{sniffer}' must have a radio and role = \"independent\" (a passive radio that never associates)"));
        }
        let named = self.traffic.iter().flat_map(|t| [&t.from, &t.to]).map(|n| ("traffic", n))
            .chain(self.apps.iter().flat_map(|a| [&a.from, &a.to]).map(|n| ("app", n)))
            .chain(self.links.iter().flat_map(|l| [&l.a, &l.b]).map(|n| ("link", n)));
        for (section, n) in named {
            if n == sniffer {
                return err(format!("pcap.sniffer: '{sniffer}' is named by a [[{section}]]; a sniffer sends nothing and nothing is sent to it"));
            }
        }
        Ok(())
    }

    /// Expanded names of the nodes whose section satisfies `keep`.
    fn node_names_where(&self, keep: impl Fn(&NodeSection) -> bool) -> Vec<String> {
        let sections = self.nodes.iter().flat_map(|n| std::iter::repeat_n(n, n.count as usize));
        self.node_names().into_iter().zip(sections).filter(|(_, n)| keep(n)).map(|(name, _)| name).collect()
    }

    fn validate_infrastructure(&self, standard: Standard, names: &[String]) -> Result<(), ScenarioError> {
        let m = &self.management;
        let bi = m.beacon_interval.0;
        check_range("management.beacon_interval", bi, &format!("{bi} s"), 1e-3, 10.0, "1 ms to 10 s")?;
        let dw = m.scan_dwell.0;
        check_range("management.scan_dwell", dw, &format!("{dw} s"), 1e-3, 10.0, "1 ms to 10 s")?;
        let th = m.selection_threshold.0 .0;
        check_range("management.selection_threshold", th, &format!("{th} dBm"), -110.0, 0.0, "-110 dBm to 0 dBm")?;
        check_range("management.rssi_filter", m.rssi_filter as f64, &m.rssi_filter.to_string(), 1.0, 1000.0, "1 to 1000")?;
        check_range("management.beacon_miss_limit", m.beacon_miss_limit as f64, &m.beacon_miss_limit.to_string(), 1.0, 1000.0, "1 to 1000")?;
        let it = m.inactivity_timeout.0;
        check_range("management.inactivity_timeout", it, &format!("{it} s"), 0.01, MAX_DURATION_S, "10 ms to 24 h")?;
        if let Some(chs) = &m.scan_channels {
            if chs.is_empty() {
                return err("management.scan_channels: give at least one channel");
            }
            for (i, &c) in chs.iter().enumerate() {
                standard.default_channel_frequency(c).map_err(|e| ScenarioError(format!("management.scan_channels[{i}]: {e}")))?;
            }
        }
        let mut has_ap = false;
        for (i, n) in self.nodes.iter().enumerate() {
            let key = |k: &str| format!("node[{i}].{k}");
            if !n.radio && n.role != Role::Independent {
                return err(format!("{}: a node without a radio cannot be an {:?}", key("role"), n.role).to_lowercase());
            }
            has_ap |= n.role == Role::Ap;
            if let Some(c) = n.channel {
                standard.default_channel_frequency(c).map_err(|e| ScenarioError(format!("{}: {e}", key("channel"))))?;
            }
            n.tcp.parse::<TcpProfile>().map_err(|e| ScenarioError(format!("{}: {e}", key("tcp"))))?;
            n.tcp_params.validate(&key("tcp_params"))?;
            if let Some(t) = n.arp_retransmit {
                check_range(&key("arp_retransmit"), t.0, &format!("{} s", t.0), 1e-3, 60.0, "1 ms to 60 s")?;
            }
            if let Some(rc) = &n.rate_control {
                rc.validate(&key("rate_control"), Some(n.role), standard)?;
            }
            if n.split_tcp && n.role != Role::Ap {
                return err(format!("{}: only an access point (role = \"ap\") splits TCP", key("split_tcp")));
            }
            if n.dhcp && n.role != Role::Sta {
                return err(format!("{}: only a station (role = \"sta\") gets its address by DHCP", key("dhcp")));
            }
            if let Some(q) = n.queue_limit {
                check_range(&key("queue_limit"), q as f64, &q.to_string(), 1.0, 1e6, "1 to 1000000 frames")?;
            }
        }
        if !has_ap && self.nodes.iter().any(|n| n.role == Role::Sta) {
            return err("node: stations (role = \"sta\") need at least one node with role = \"ap\"");
        }
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (i, l) in self.links.iter().enumerate() {
            let key = |k: &str| format!("link[{i}].{k}");
            for (k, end) in [("a", &l.a), ("b", &l.b)] {
                if !names.contains(end) {
                    return err(format!("{}: no node named '{end}'; nodes: {}", key(k), names.join(", ")));
                }
            }
            let pair = if l.a <= l.b { (l.a.as_str(), l.b.as_str()) } else { (l.b.as_str(), l.a.as_str()) };
            if pairs.contains(&pair) {
                return err(format!("{}: '{}' and '{}' are already linked", key("b"), l.a, l.b));
            }
            pairs.push(pair);
            if l.a == l.b {
                return err(format!("{}: a link needs two different nodes", key("b")));
            }
            check_range(&key("bandwidth"), l.bandwidth.0, &format!("{} bit/s", l.bandwidth.0), 1e3, 1e12, "1 kbps to 1000 Gbps")?;
            check_range(&key("delay"), l.delay.0, &format!("{} s", l.delay.0), 0.0, 10.0, "0 s to 10 s")?;
            check_range(&key("queue_limit"), l.queue_limit as f64, &l.queue_limit.to_string(), 1.0, 1e6, "1 to 1000000 packets")?;
        }
        for (i, a) in self.apps.iter().enumerate() {
            let key = |k: &str| format!("app[{i}].{k}");
            for (k, end) in [("from", &a.from), ("to", &a.to)] {
                if !names.contains(end) {
                    return err(format!("{}: no node named '{end}'; nodes: {}", key(k), names.join(", ")));
                }
            }
            if a.from == a.to {
                return err(format!("{}: an application cannot send to its own node", key("to")));
            }
            if a.start != "on-association" && a.start != "on-production" {
                let t = parse_quantity(&a.start, Quantity::Time)
                    .map_err(|e| ScenarioError(format!("{}: '{}': {e}, or \"on-association\" or \"on-production\"", key("start"), a.start)))?;
                check_range(&key("start"), t, &a.start, 0.0, MAX_DURATION_S, "0 s to 24 h, or \"on-association\" or \"on-production\"")?;
            }
            if a.start == "on-production" {
                if !self.nodes.iter().any(|n| n.role == Role::Sta && (n.name == a.from || n.name == a.to)) {
                    return err(format!("{}: \"on-production\" needs a station (role = \"sta\") at one end to measure its AP's beacons", key("start")));
                }
                if let Some(r) = a.production_ratio {
                    check_range(&key("production_ratio"), r, &r.to_string(), 0.01, 1.0, "0.01 to 1")?;
                }
                if let Some(w) = a.production_window {
                    let bi = self.management.beacon_interval.0;
                    check_range(&key("production_window"), w.0, &format!("{} s", w.0), bi, crate::mac::mgmt::BEACON_HISTORY.as_secs_f64(), &format!("one beacon interval ({bi} s) to 10 s"))?;
                }
                if let Some(p) = a.production_rssi {
                    check_range(&key("production_rssi"), p.0 .0, &format!("{} dBm", p.0 .0), -110.0, 0.0, "-110 dBm to 0 dBm")?;
                }
            } else {
                for (k, given) in [("production_ratio", a.production_ratio.is_some()), ("production_window", a.production_window.is_some()), ("production_rssi", a.production_rssi.is_some())] {
                    if given {
                        return err(format!("{}: only used with start = \"on-production\"", key(k)));
                    }
                }
            }
            let sd = a.start_delay.0;
            check_range(&key("start_delay"), sd, &format!("{sd} s"), 0.0, 3600.0, "0 s to 1 h")?;
            let rr_keys = [
                ("request", a.request.is_some()),
                ("response", a.response.is_some()),
                ("exchanges", a.exchanges.is_some()),
                ("trigger_interval", a.trigger_interval.is_some()),
                ("trigger_size", a.trigger_size.is_some()),
            ];
            if a.kind != AppKindName::RequestResponse {
                if let Some((k, _)) = rr_keys.iter().find(|(_, given)| *given) {
                    return err(format!("{}: only used with kind = \"request-response\"", key(k)));
                }
            }
            match a.kind {
                AppKindName::TcpBulk => {
                    if a.payload.is_some() || a.interval.is_some() {
                        return err(format!("{}: payload and interval are for kind = \"udp-cbr\"", key("kind")));
                    }
                }
                AppKindName::RequestResponse => {
                    let (Some(rq), Some(rs)) = (a.request, a.response) else {
                        return err(format!("{}: kind = \"request-response\" needs request and response (sizes, e.g. \"1 kB\")", key("kind")));
                    };
                    check_range(&key("request"), rq.0, &format!("{} B", rq.0), 1.0, 1e9, "1 B to 1 GB")?;
                    check_range(&key("response"), rs.0, &format!("{} B", rs.0), 1.0, 1e9, "1 B to 1 GB")?;
                    if let Some(n) = a.exchanges {
                        check_range(&key("exchanges"), n as f64, &n.to_string(), 1.0, 1e9, "1 to 1000000000")?;
                    }
                    if let Some(t) = a.trigger_interval {
                        check_range(&key("trigger_interval"), t.0, &format!("{} s", t.0), 1e-3, 3600.0, "1 ms to 1 h")?;
                    }
                    if let Some(b) = a.trigger_size {
                        check_range(&key("trigger_size"), b.0, &format!("{} B", b.0), 1.0, 1472.0, "1 B to 1472 B (one 1500-byte IP packet)")?;
                    }
                    for (k, given) in [("payload", a.payload.is_some()), ("interval", a.interval.is_some()), ("bytes", a.bytes.is_some()), ("blocking", a.blocking)] {
                        if given {
                            return err(format!("{}: not used with kind = \"request-response\" (use request, response, exchanges, trigger_interval)", key(k)));
                        }
                    }
                }
                AppKindName::UdpCbr => {
                    let (Some(p), Some(iv)) = (a.payload, a.interval) else {
                        return err(format!("{}: kind = \"udp-cbr\" needs payload and interval", key("kind")));
                    };
                    check_range(&key("payload"), p.0, &format!("{} B", p.0), 1.0, 1472.0, "1 B to 1472 B (one 1500-byte IP packet)")?;
                    check_range(&key("interval"), iv.0, &format!("{} s", iv.0), 1e-6, 3600.0, "1 us to 1 h")?;
                    if a.bytes.is_some() {
                        return err(format!("{}: bytes is for kind = \"tcp-bulk\"", key("bytes")));
                    }
                    if a.blocking && !self.nodes.iter().any(|n| n.radio && n.name == a.from) {
                        return err(format!("{}: only a sender with a radio can block on its MAC queue", key("blocking")));
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_mobility(&self, key: &str, m: &MobilitySection) -> Result<(), ScenarioError> {
        let speed = |k: &str, s: SpeedQ| check_range(k, s.0 .0, &format!("{} m/s", s.0 .0), 0.01, 200.0, "0.01 m/s to 200 m/s (720 km/h)");
        let depart = |d: TimeQ| check_range(&format!("{key}.depart"), d.0, &format!("{} s", d.0), 0.0, MAX_DURATION_S, "0 s to 24 h");
        match m {
            MobilitySection::Static {} => Ok(()),
            MobilitySection::Line { speed: s, heading, depart: d } => {
                depart(*d)?;
                speed(&format!("{key}.speed"), *s)?;
                check_range(&format!("{key}.heading"), *heading, &heading.to_string(), -360.0, 360.0, "-360 to 360 degrees")
            }
            MobilitySection::Polyline { points, speed: s, depart: d } => {
                depart(*d)?;
                speed(&format!("{key}.speed"), *s)?;
                if points.len() < 2 {
                    return err(format!("{key}.points: {} given; a polyline needs at least 2", points.len()));
                }
                for (i, p) in points.iter().enumerate() {
                    check_point(&format!("{key}.points[{i}]"), *p)?;
                }
                Ok(())
            }
            MobilitySection::Waypoints { waypoints, depart: d } => {
                depart(*d)?;
                if waypoints.is_empty() {
                    return err(format!("{key}.waypoints: give at least one waypoint"));
                }
                for (i, w) in waypoints.iter().enumerate() {
                    speed(&format!("{key}.waypoints[{i}].speed"), w.speed)?;
                    check_point(&format!("{key}.waypoints[{i}].position"), w.position)?;
                    let p = w.pause.0;
                    check_range(&format!("{key}.waypoints[{i}].pause"), p, &format!("{p} s"), 0.0, MAX_DURATION_S, "0 s to 24 h")?;
                }
                Ok(())
            }
        }
    }

    /// Node names after expanding `count`.
    pub fn node_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        for n in &self.nodes {
            if n.count == 1 {
                v.push(n.name.clone());
            } else {
                v.extend((0..n.count).map(|i| format!("{}-{i}", n.name)));
            }
        }
        v
    }

    pub fn standard(&self) -> Standard {
        parse_standard(&self.radio.standard).expect("validated")
    }

    /// The simulator configuration for run `run` with the given seed
    /// (the scenario's own seed if `None`). The scenario must be validated.
    pub fn to_sim_config(&self, seed: Option<u64>, run: u64) -> SimConfig {
        let standard = self.standard();
        let env = &self.environment;
        let channel_no = self.radio.channel.unwrap_or(match standard {
            Standard::B | Standard::G => 6,
            Standard::A => 36,
            Standard::P => 178,
        });
        let frequency: Hertz = standard.default_channel_frequency(channel_no).expect("validated");
        let channel = ChannelConfig {
            path_loss: match env.path_loss {
                PathLossName::FreeSpace => PathLoss::FreeSpace,
                PathLossName::TwoRay => PathLoss::TwoRayGround,
                PathLossName::LogDistance => PathLoss::LogDistance {
                    exponent: env.path_loss_exponent.unwrap_or(3.0),
                    reference: env.reference_distance.map_or(Meters(1.0), |r| r.0),
                },
                PathLossName::ThreeLogDistance => PathLoss::ThreeLogDistance {
                    exponents: env.path_loss_exponents.expect("validated"),
                    breakpoints: env.path_loss_breakpoints.map(|b| [b[0].0, b[1].0]).expect("validated"),
                    reference: env.reference_distance.map_or(Meters(1.0), |r| r.0),
                },
            },
            shadowing_sigma: env.shadowing_sigma.0,
            decorrelation: env.shadowing_decorrelation.0,
            fading: match env.fading {
                FadingName::None => FadingKind::None,
                FadingName::Rayleigh => FadingKind::Rayleigh,
                FadingName::Rician => FadingKind::Rician { k: env.rician_k.map_or(Db(6.0), |k| k.0) },
            },
            frequency,
            noise_floor: env.noise_floor.0,
            environment_seed: env.seed,
        };
        let radio = RadioConfig {
            standard,
            b_compatible: self.radio.b_compatible,
            preamble: match self.radio.preamble {
                PreambleName::Long => Preamble::Long,
                PreambleName::Short => Preamble::Short,
            },
            cca_threshold: self.radio.cca_threshold.0,
            capture_margin: self.radio.capture_margin.0,
            error_model: ErrorModelKind::ClosedForm(ClosedForm { implementation_loss: self.radio.implementation_loss.0 }),
        };
        let top = *standard.modes().last().expect("modes");
        let chain = |rate: Option<RateQ>, tries: u8| match (&self.mac.retry_chain, rate) {
            (Some(chain), None) => RetryChain {
                stages: chain
                    .iter()
                    .map(|s| Stage { mode: rate_mode(standard, "", s.rate).expect("validated"), tries: s.tries as u8 })
                    .collect(),
            },
            (_, Some(r)) => RetryChain { stages: vec![Stage { mode: rate_mode(standard, "", r).expect("validated"), tries }] },
            (None, None) => RetryChain { stages: vec![Stage { mode: top, tries }] },
        };
        let fixed = |rate: Option<RateQ>| RateControlSpec::Fixed {
            short: chain(rate, self.mac.short_retry_limit as u8),
            long: chain(rate, self.mac.long_retry_limit as u8),
            rts_threshold: self.mac.rts_threshold.0 as u32,
        };
        let rate = match &self.mac.rate_control {
            Some(rc) => rc.spec(radio.error_model, fixed),
            None => fixed(self.mac.rate),
        };
        let mac = MacConfig {
            queue_limit: self.mac.queue_limit as usize,
            short_retry_limit: self.mac.short_retry_limit as u8,
            long_retry_limit: self.mac.long_retry_limit as u8,
            rts_threshold: self.mac.rts_threshold.0 as u32,
            rate,
            modes: standard.modes(),
            fast_frames: self.mac.fast_frames.then(|| self.mac.fast_frame_airtime.time()),
        };
        let names = self.node_names();
        // Where a controller learns per position, every node's frames carry
        // its position and power (the cooperating deployment environment-
        // aware selection assumes).
        let learns = |rc: &Option<RateControlSection>| {
            rc.as_ref().or(self.mac.rate_control.as_ref()).is_some_and(|rc| rc.algorithm == AlgorithmName::EnvironmentAware)
        };
        let reports_position = self.nodes.iter().any(|n| n.radio && learns(&n.rate_control));
        let mut nodes = Vec::with_capacity(names.len());
        for n in &self.nodes {
            let spacing = n.spacing.map_or(Vec2::default(), |s| s.0);
            for i in 0..n.count {
                let off = Vec2::new(spacing.x * i as f64, spacing.y * i as f64);
                let name = if n.count == 1 { n.name.clone() } else { format!("{}-{i}", n.name) };
                let at = Vec2::new(n.position.0.x + off.x, n.position.0.y + off.y);
                let shift = |p: &Point| Vec2::new(p.0.x + off.x, p.0.y + off.y);
                let trajectory = match &n.mobility {
                    MobilitySection::Static {} => Trajectory::fixed(at),
                    MobilitySection::Line { speed, heading, depart } => Trajectory::line(at, *heading, speed.0, depart.time()),
                    MobilitySection::Polyline { points, speed, depart } => {
                        let pts: Vec<Vec2> = points.iter().map(shift).collect();
                        Trajectory::polyline(&pts, speed.0, depart.time())
                    }
                    MobilitySection::Waypoints { waypoints, depart } => {
                        let wps: Vec<Waypoint> =
                            waypoints.iter().map(|w| Waypoint { position: shift(&w.position), speed: w.speed.0, pause: w.pause.time() }).collect();
                        Trajectory::waypoints(at, &wps, depart.time())
                    }
                };
                nodes.push(NodeConfig {
                    name,
                    mobility: MobilityModel::Trajectory(trajectory),
                    tx_power: n.tx_power.0,
                    antenna_gain: n.antenna_gain.0,
                    antenna_height: n.antenna_height.0,
                    radio: n.radio,
                    role: n.role,
                    channel: n.channel.unwrap_or(channel_no),
                    tcp: n.tcp_params.apply(n.tcp.parse::<TcpProfile>().expect("validated").config()),
                    queue_limit: n.queue_limit.map_or(self.mac.queue_limit, |q| q) as usize,
                    dhcp: n.dhcp,
                    dhcp_server: n.dhcp_server,
                    rate_control: n.rate_control.as_ref().map(|rc| rc.spec(radio.error_model, fixed)),
                    split_tcp: n.split_tcp,
                    reports_position,
                    appear: n.appear.map_or(SimTime::ZERO, |t| t.time()),
                    disappear: n.disappear.map_or(SimTime::MAX, |t| t.time()),
                    arp: {
                        let profile = match n.arp {
                            ArpName::Linux => ArpProfile::Linux,
                            ArpName::WindowsXp => ArpProfile::WindowsXp,
                        };
                        let cfg = profile.config();
                        ArpConfig { retransmit: n.arp_retransmit.map_or(cfg.retransmit, |t| t.time()), ..cfg }
                    },
                });
            }
        }
        let id = |name: &str| NodeId(names.iter().position(|n| n == name).expect("validated") as u32);
        let sources = self
            .traffic
            .iter()
            .map(|t| SourceConfig {
                kind: match t.kind {
                    TrafficKind::Saturate => SourceKind::Saturate,
                    TrafficKind::Cbr => SourceKind::Cbr { interval: t.interval.expect("validated").time() },
                    TrafficKind::Sounder => SourceKind::Sounder {
                        interval: t.interval.expect("validated").time(),
                        modes: match &t.rates {
                            Some(rs) => rs.iter().map(|r| rate_mode(standard, "", *r).expect("validated")).collect(),
                            None => standard.modes().to_vec(),
                        },
                    },
                },
                from: id(&t.from),
                to: if t.to == "broadcast" { Dst::Broadcast } else { Dst::Node(id(&t.to)) },
                payload: t.payload.0 as u32,
                start: t.start.time(),
                stop: t.stop.map_or(SimTime::MAX, |s| s.time()),
            })
            .collect();
        let m = &self.management;
        let mgmt = MgmtConfig {
            beacon_interval: m.beacon_interval.time(),
            scan_channels: m.scan_channels.clone().unwrap_or_else(|| match standard {
                Standard::B | Standard::G => (1..=11).collect(),
                Standard::A => vec![36, 40, 44, 48],
                Standard::P => vec![178],
            }),
            scan_dwell: m.scan_dwell.time(),
            active_scan: m.active_scan,
            selection_threshold: m.selection_threshold.0,
            rssi_filter: m.rssi_filter,
            driver: match m.driver {
                DriverName::Madwifi => DriverProfile::Madwifi,
                DriverName::Tuned => DriverProfile::Tuned,
            },
            beacon_miss_limit: m.beacon_miss_limit,
            inactivity_timeout: m.inactivity_timeout.time(),
        };
        let wires = self
            .links
            .iter()
            .map(|l| WiredLink::new(id(&l.a), id(&l.b), l.bandwidth.0, l.delay.time(), l.queue_limit as usize))
            .collect();
        let apps = self
            .apps
            .iter()
            .map(|a| AppConfig {
                blocking: a.blocking,
                kind: match a.kind {
                    AppKindName::TcpBulk => AppKind::TcpBulk { bytes: a.bytes.map_or(u64::MAX, |b| b.0 as u64) },
                    AppKindName::UdpCbr => AppKind::UdpCbr {
                        payload: a.payload.expect("validated").0 as u32,
                        interval: a.interval.expect("validated").time(),
                    },
                    AppKindName::RequestResponse => AppKind::RequestResponse {
                        request: a.request.expect("validated").0 as u64,
                        response: a.response.expect("validated").0 as u64,
                        exchanges: a.exchanges.unwrap_or(u64::MAX),
                        trigger: a.trigger_size.map_or(DEFAULT_TRIGGER_BYTES, |b| b.0 as u32),
                        trigger_interval: a.trigger_interval.map_or(SimTime::from_ms(1000), |t| t.time()),
                    },
                },
                from: id(&a.from),
                to: id(&a.to),
                port: a.port,
                start: if a.start == "on-association" {
                    AppStart::OnAssociation { delay: a.start_delay.time() }
                } else if a.start == "on-production" {
                    AppStart::OnProduction {
                        delay: a.start_delay.time(),
                        window: a.production_window.map_or(SimTime::from_ms(1000), |w| w.time()),
                        ratio: a.production_ratio.unwrap_or(0.9),
                        rssi: a.production_rssi.map(|p| p.0),
                    }
                } else {
                    AppStart::At(SimTime::from_secs_f64(parse_quantity(&a.start, Quantity::Time).expect("validated")))
                },
                // A disabled app keeps its index (traces name apps by index) but never runs.
                stop: if a.enabled { a.stop.map_or(SimTime::MAX, |s| s.time()) } else { SimTime::ZERO },
            })
            .collect();
        let index = |n: &String| NodeId(names.iter().position(|m| m == n).expect("validated") as u32);
        let pcap = self.pcap.as_ref().map_or_else(PcapConfig::default, |p| PcapConfig {
            nodes: p.nodes.iter().flatten().map(index).collect(),
            sniffer: p.sniffer.as_ref().map(index),
        });
        SimConfig {
            mgmt,
            wires,
            apps,
            pcap,
            duration: self.duration.time(),
            seed: seed.unwrap_or(self.seed),
            run,
            channel,
            radio,
            mac,
            nodes,
            sources,
        }
    }
}
