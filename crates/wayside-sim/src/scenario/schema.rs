//! The scenario file's schema: TOML with unit strings (`"80 km/h"`,
//! `"19 dBm"`) deserialized into serde structs that reject unknown keys.
//! Variants with options of their own (mobility models, rate-control
//! algorithms) are tagged enums with one struct per variant, so a key that
//! belongs to another variant is a parse error. What serde cannot say
//! (ranges, references between sections) is checked while lowering.

use crate::config::Role;
use crate::geometry::Vec2;
use crate::phy::mode::Standard;
use crate::transport::tcp::TcpProfile;
use crate::units::{parse_quantity, Db, Dbm, Meters, Mps, Quantity, SimTime};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::fmt;
use std::str::FromStr;

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
    /// The validation targets this scenario was calibrated on, as
    /// `"paper/target"` (glob patterns allowed). `wayside validate` reports
    /// them as calibrated and never counts them as reproduced.
    #[serde(default)]
    pub calibrated_on: Vec<String>,
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
    /// Buildings that attenuate the line of sight.
    #[serde(default, rename = "obstacle")]
    pub obstacles: Vec<ObstacleSection>,
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
        }
    }
}

/// A building: its outline, and its losses (defaults: Sommer et al. 2011,
/// as Veins ships them; [`crate::obstacles`]).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ObstacleSection {
    #[serde(default)]
    pub name: Option<String>,
    /// Corners in metres, `[[x, y], ...]`, in order around the outline.
    #[serde(default)]
    pub outline: Option<Vec<[f64; 2]>>,
    /// Or: every `<poly>` of a SUMO polygon file (`polyconvert`'s output),
    /// each a building with this section's losses. A relative path is from
    /// the working directory (`wayside run` makes it relative to the
    /// scenario file).
    #[serde(default)]
    pub sumo: Option<String>,
    /// With `sumo`: only polygons of these types (e.g. `["building"]`).
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(default)]
    pub per_wall: Option<RatioQ>,
    #[serde(default)]
    pub per_metre: Option<RatioQ>,
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
    Broadside,
}

/// What a Broadside application runs over.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum BroadsideTransport {
    Udp,
    Raw,
    /// Beacons over UDP, discovery and files over TCP (Broadside-IP).
    Tcp,
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
    pub start: AppStartSection,
    /// With `start = "on-association"` or `"on-production"`: the application start delay.
    #[serde(default = "zero_time")]
    pub start_delay: TimeQ,
    /// With `start = "on-association"` or `"on-production"`: the delay is
    /// drawn uniformly from `start_delay` to this in each run (default:
    /// exactly `start_delay`).
    #[serde(default)]
    pub start_delay_max: Option<TimeQ>,
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
    /// tcp-bulk: bytes to send; default without end. broadside: the size
    /// of the file the sending end holds.
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
    /// broadside: `"udp"` (over UDP/IP, the default), `"raw"` (straight
    /// over 802.11 frames, Broadside-Raw) or `"tcp"` (discovery and files
    /// over TCP/IP, Broadside-IP).
    #[serde(default)]
    pub transport: Option<BroadsideTransport>,
    /// broadside: how many files of `bytes` each the sending end holds
    /// (default 1).
    #[serde(default)]
    pub files: Option<u64>,
    /// broadside: the other end holds an older version of every file
    /// (default false: it holds none and subscribes to their provider).
    #[serde(default)]
    pub common: Option<bool>,
    /// broadside, with `common`: each end holds the newer version of every
    /// other file, so files move both ways (default false: the sending end
    /// holds the newer version of every file).
    #[serde(default)]
    pub both_ways: Option<bool>,
    /// false: defined but not run (scenarios with several experiment variants).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_port() -> u16 {
    5001
}
fn default_app_start() -> AppStartSection {
    AppStartSection::At(TimeQ(0.0))
}

/// When an application starts: a time, or an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppStartSection {
    At(TimeQ),
    OnAssociation,
    OnProduction,
}

impl<'de> Deserialize<'de> for AppStartSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "on-association" => Ok(AppStartSection::OnAssociation),
            "on-production" => Ok(AppStartSection::OnProduction),
            _ => parse_quantity(&s, Quantity::Time)
                .map(|t| AppStartSection::At(TimeQ(t)))
                .map_err(|e| {
                    de::Error::custom(format!(
                        "'{s}': {e}, or \"on-association\" or \"on-production\""
                    ))
                }),
        }
    }
}

/// Deserializes a string with the type's `FromStr`, whose error says what is allowed.
fn from_str<'de, D: Deserializer<'de>, T: FromStr<Err: fmt::Display>>(d: D) -> Result<T, D::Error> {
    String::deserialize(d)?.parse().map_err(de::Error::custom)
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
    /// A fixed loss on every link on top of the path loss (cables,
    /// connectors, mounting); default 0 dB.
    #[serde(default = "zero_db")]
    pub system_loss: RatioQ,
    #[serde(default = "zero_db")]
    pub shadowing_sigma: RatioQ,
    #[serde(default = "default_decorrelation")]
    pub shadowing_decorrelation: LengthQ,
    /// Spread of the per-run offset of every link (lane, direction, traffic).
    #[serde(default = "zero_db")]
    pub run_shadowing_sigma: RatioQ,
    #[serde(default = "default_fading")]
    pub fading: FadingName,
    #[serde(default)]
    pub rician_k: Option<RatioQ>,
    /// The default losses of buildings: Sommer et al.'s 5.9 GHz fit at any
    /// frequency, or carried to the radio's by ITU-R P.2109.
    #[serde(default)]
    pub building_loss: BuildingLossName,
}

/// `environment.building_loss` ([`crate::obstacles::sommer_at`]).
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BuildingLossName {
    /// 9 dB per wall and 0.4 dB/m whatever the frequency.
    #[default]
    Sommer,
    /// Those, scaled from 5.9 GHz to the radio's frequency by P.2109.
    SommerP2109,
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
            system_loss: zero_db(),
            shadowing_sigma: zero_db(),
            shadowing_decorrelation: default_decorrelation(),
            run_shadowing_sigma: zero_db(),
            fading: default_fading(),
            rician_k: None,
            building_loss: BuildingLossName::default(),
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
    #[serde(deserialize_with = "from_str")]
    pub standard: Standard,
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
    /// The BSS's lowest basic rate (default the standard's lowest):
    /// broadcasts and management frames go at it, control responses at a
    /// basic rate from it up, and a node's `range` is defined at it.
    #[serde(default)]
    pub basic_rate: Option<RateQ>,
    /// How an OFDM receiver knows the channel over a frame.
    #[serde(default)]
    pub ofdm_channel_estimate: ChannelEstimateName,
}

/// `radio.ofdm_channel_estimate` ([`crate::channel::Fades::aging`]).
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelEstimateName {
    /// The channel is known at every instant of the frame.
    #[default]
    Ideal,
    /// Learnt from the preamble's long training symbols and kept for the
    /// frame (IEEE 802.11-2007 §17.3.3), the pilots following a common phase.
    Preamble,
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
            .map_err(|e| {
                de::Error::custom(format!("invalid capture margin \"{s}\": {e}, or \"off\""))
            })
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ChainStage {
    pub rate: RateQ,
    pub tries: u32,
}

/// `[[node]] forwarding`: an AP's forwarding engine from its wired side.
#[derive(Deserialize, Debug, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct ForwardingSection {
    /// Processing time per packet.
    pub per_packet: TimeQ,
    /// Packets waiting beside the one in process.
    pub queue_limit: u64,
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
    /// same receiver when madwifi's estimate of the frame's airtime stays
    /// within `txop_limit`.
    #[serde(default)]
    pub fast_frames: bool,
    /// TXOP bursting: after winning the channel, send further unicast data
    /// frames a SIFS apart for up to `txop_limit`.
    #[serde(default)]
    pub txop_bursting: bool,
    /// The best-effort TXOP limit that fast frames must fit and bursts last.
    #[serde(default = "default_txop_limit")]
    pub txop_limit: TimeQ,
}

/// The best-effort TXOP limit madwifi 0.9 runs with: net80211's WME
/// "aggressive mode" (an AP without high-priority traffic, which also
/// advertises it to its stations) gives best effort 64 × 32 µs when
/// bursting is on, and madwifi turns bursting on wherever the chip has it
/// (the AR5212).
fn default_txop_limit() -> TimeQ {
    TimeQ(2.048e-3)
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
            txop_bursting: false,
            txop_limit: default_txop_limit(),
        }
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PresetName {
    Default,
    Tuned,
}

/// `algorithm = "fixed"`: one rate, tried up to the MAC's retry limits.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FixedOptions {
    pub rate: RateQ,
}

/// `algorithm = "samplerate"`.
#[derive(Deserialize, Debug, Clone)]
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
#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum InitialRssiName {
    Driver,
    Thresholds,
}

/// An algorithm a scenario runs with its built-in parameters.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// `algorithm = "ideal"`.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct IdealOptions {
    /// Least frame success probability at the mean SNR (default 0.9).
    #[serde(default)]
    pub min_success: Option<f64>,
}

/// `algorithm = "environment-aware"`.
#[derive(Deserialize, Debug, Clone)]
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
pub(super) fn fields_of<T: de::DeserializeOwned>() -> &'static [&'static str] {
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
    /// As simulated time (its range is checked while lowering).
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
            _ => Err(de::Error::custom(format!(
                "a point is [x, y]; {} values given",
                v.len()
            ))),
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
    /// The vehicles of a Nagel–Schreckenberg highway whose lane 0 starts at
    /// `position` and runs along +x, lanes 3.5 m apart along +y
    /// ([`crate::mobility::nasch`]): one node per vehicle on the road during
    /// the run, named `name-0`, `name-1`… in order of entry, its radio on
    /// while it is on the road. The traffic follows the scenario's `seed`.
    Nasch {
        /// Fraction of cells occupied, kept for the whole run.
        density: f64,
        #[serde(default = "nasch_lanes")]
        lanes: u32,
        /// Road length in 1.5 m cells.
        #[serde(default = "nasch_cells")]
        cells: u32,
        /// Dawdling probability.
        #[serde(default = "nasch_dawdle")]
        dawdle: f64,
        /// Source vehicles, named `name-source-0`, `name-source-1`… in
        /// order of entry; a source that leaves is replaced by the vehicle
        /// entering in its place. An `[[app]]` whose `from` is
        /// `"name-source"` runs on each of them while it is on the road.
        #[serde(default)]
        sources: u32,
    },
}

fn nasch_lanes() -> u32 {
    crate::mobility::nasch::Highway::chen(0.0).lanes
}
fn nasch_cells() -> u32 {
    crate::mobility::nasch::Highway::chen(0.0).cells
}
fn nasch_dawdle() -> f64 {
    crate::mobility::nasch::Highway::chen(0.0).dawdle
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
    /// Transmit power (default 15 dBm); or give `range`.
    #[serde(default)]
    pub tx_power: Option<PowerQ>,
    /// Transmission range as Chen et al. define it (where two nodes still
    /// communicate without interference): sets the transmit power.
    #[serde(default)]
    pub range: Option<LengthQ>,
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
    #[serde(default = "default_tcp", deserialize_with = "from_str")]
    pub tcp: TcpProfile,
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
    /// An AP's forwarding engine for packets from its wired side (default:
    /// none, forwarding at once). See docs/models.md.
    #[serde(default)]
    pub forwarding: Option<ForwardingSection>,
    /// A station that gets its address by DHCP from its AP (default: static).
    #[serde(default)]
    pub dhcp: bool,
    /// An AP that answers DHCP (default true).
    #[serde(default = "yes")]
    pub dhcp_server: bool,
    /// This node's rate control (default: the `[mac]` section's).
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
    /// Its routing: "infrastructure" (default) or "greedy" (greedy
    /// geographic forwarding).
    #[serde(default)]
    pub routing: crate::net::route::Routing,
    /// Ad hoc (IBSS) membership ([`super::adhoc`]); an independent node
    /// without it sends to any node at once.
    #[serde(default)]
    pub adhoc: Option<super::adhoc::AdhocSection>,
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
    /// Largest segment payload this endpoint sends and advertises (the
    /// interface MTU less 40 bytes of IP and TCP headers): "1300 B" for
    /// iperf's 1300-byte packets.
    #[serde(default)]
    pub mss: Option<SizeQ>,
}

fn independent() -> Role {
    Role::Independent
}
fn default_tcp() -> TcpProfile {
    TcpProfile::Linux26
}
fn default_arp() -> ArpName {
    ArpName::Linux
}

fn origin() -> Point {
    Point(Vec2::new(0.0, 0.0))
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
    /// false: defined but not run (scenarios with several experiment
    /// variants), as for applications.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_payload() -> SizeQ {
    SizeQ(1500.0)
}
