//! Lowering: a parsed [`Scenario`] into the simulator's [`SimConfig`]. What
//! the schema's types cannot say (ranges, one key needing or excluding
//! another, names that must refer to a node, what a role allows) is checked
//! here, where each value is turned into its configuration, and every
//! failure is a [`ScenarioError`] naming the key, the value and what is
//! allowed.

use super::schema::*;
use super::{ScenarioError, MAX_DURATION_S, MAX_NODES};
use crate::apps::ip::{AppConfig, AppKind, AppStart};
use crate::apps::{SourceConfig, SourceKind};
use crate::channel::{ChannelConfig, FadingKind, PathLoss};
use crate::config::{NodeConfig, RadioConfig, Role, SimConfig};
use crate::geometry::Vec2;
use crate::ids::{Dst, NodeId};
use crate::mac::mgmt::{DriverProfile, MgmtConfig, BEACON_HISTORY};
use crate::mac::MacConfig;
use crate::mobility::nasch::{Highway, Vehicle};
use crate::mobility::{MobilityModel, Trajectory, Waypoint};
use crate::net::arp::{ArpConfig, ArpProfile};
use crate::net::forwarding::ForwardingConfig;
use crate::obstacles::{read_sumo_polygons, sommer_at, Obstacle, Obstacles, PER_METRE, PER_WALL};
use crate::pcap::PcapConfig;
use crate::phy::error::{ClosedForm, ErrorModel, ErrorModelKind};
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::ratectl::{
    AmrrParams, ArfParams, EnvAwareParams, IdealParams, InitialRssi, MinstrelParams, OnoeParams,
    RateControlSpec, RetryChain, RraaParams, SampleRateParams, SnrMap, Stage, MAX_STAGES,
};
use crate::rng::Stream;
use crate::transport::tcp::TcpConfig;
use crate::units::{Bitrate, Db, Dbm, Hertz, Meters, SimTime};
use crate::wire::WiredLink;
use std::sync::Arc;

/// request-response: the trigger's payload unless `trigger_size` is given.
const DEFAULT_TRIGGER_BYTES: u32 = 32;
/// A node's transmit power unless it gives one (or a range).
const DEFAULT_TX_POWER: Dbm = Dbm(15.0);
/// The frame that defines a range: a 1500-byte MSDU with its MAC header
/// and FCS, at the lowest basic rate, through with this probability.
const RANGE_FRAME_BITS: u64 = 8 * (1500 + 28);
const RANGE_SUCCESS: f64 = 0.9;

/// The transmit power at which `range` is the transmission range, as Chen
/// et al. (after SWANS) define it: the distance at which two nodes with
/// these antennas still communicate with no interference — here, where a
/// 1500-byte frame at the lowest basic rate (`radio.basic_rate`) gets
/// through with probability 0.9 against the noise floor over the mean path
/// loss (no obstacles, shadowing or fading; both antennas alike). SWANS
/// sends every frame at one rate with one reception rule, so its range
/// holds for beacons and data alike; here that takes a basic rate equal to
/// the data rate.
fn power_for_range(
    channel: &ChannelConfig,
    rates: &RateContext,
    range: Meters,
    height: Meters,
    gain: Db,
) -> Dbm {
    let mode = rates.basic;
    let ok = |snr: f64| {
        rates
            .error_model
            .chunk_success(&mode, Db(snr), RANGE_FRAME_BITS)
            >= RANGE_SUCCESS
    };
    // Success grows with SNR: bisect for the least SNR that is enough.
    let (mut lo, mut hi) = (-20.0, 60.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let loss = channel
        .path_loss
        .loss(range, height, height, channel.wavelength());
    Dbm(channel.noise_floor.0 + hi + loss.0 + channel.system_loss.0 - 2.0 * gain.0)
}
/// Most buildings a scenario may hold (a city district from OpenStreetMap
/// has tens of thousands).
const MAX_OBSTACLES: usize = 200_000;
/// Most corners of one building's outline.
const MAX_OUTLINE: usize = 10_000;

/// A 20 MHz 5 GHz channel a dual-band card may scan: 36-64 and 100-144
/// (multiples of 4), 149-165 (149 + 4k).
fn is_5ghz_channel(c: u32) -> bool {
    matches!(c, 36..=64 | 100..=144) && c.is_multiple_of(4)
        || matches!(c, 149..=165) && (c - 149).is_multiple_of(4)
}

pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(msg.into()))
}

fn check_range(
    key: &str,
    value: f64,
    shown: &str,
    lo: f64,
    hi: f64,
    allowed: &str,
) -> Result<(), ScenarioError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        err(format!(
            "{key}: {shown} is out of range; allowed: {allowed}"
        ))
    }
}

/// A duration from `lo` to `hi` seconds, as simulated time.
pub(super) fn time_in(
    key: &str,
    t: TimeQ,
    lo: f64,
    hi: f64,
    allowed: &str,
) -> Result<SimTime, ScenarioError> {
    check_range(key, t.0, &format!("{} s", t.0), lo, hi, allowed)?;
    Ok(t.time())
}

/// Coordinates must be finite and within 10 000 km of the origin.
fn check_point(key: &str, p: Point) -> Result<(), ScenarioError> {
    for (axis, v) in [("x", p.0.x), ("y", p.0.y)] {
        check_range(
            &format!("{key}.{axis}"),
            v,
            &format!("{v} m"),
            -1e7,
            1e7,
            "-10000 km to 10000 km",
        )?;
    }
    Ok(())
}

fn rate_mode(standard: Standard, key: &str, r: RateQ) -> Result<Mode, ScenarioError> {
    standard.mode(Bitrate(r.0.round() as u64)).ok_or_else(|| {
        let allowed: Vec<String> = standard
            .modes()
            .iter()
            .map(|m| format!("{}", m.rate.mbps()))
            .collect();
        ScenarioError(format!(
            "{key}: {} Mbps is not a rate of {}; allowed: {} Mbps",
            r.0 / 1e6,
            standard.name(),
            allowed.join(", ")
        ))
    })
}

/// The node `name` refers to, or an error listing the nodes (`extra`: what
/// else the key allows).
fn node_id(names: &[String], key: &str, name: &str, extra: &str) -> Result<NodeId, ScenarioError> {
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(NodeId(i as u32)),
        None => err(format!(
            "{key}: no node named '{name}'; nodes: {}{extra}",
            names.join(", ")
        )),
    }
}

/// What the `[mac]` section fixes for every node's rate control.
struct RateContext {
    standard: Standard,
    /// The lowest basic rate (`radio.basic_rate`).
    basic: Mode,
    error_model: ErrorModelKind,
    /// `mac.retry_chain`, if given: (mode, tries) per stage.
    chain: Option<Vec<Stage>>,
    short_retry_limit: u8,
    long_retry_limit: u8,
    rts_threshold: u32,
}

impl RateContext {
    /// A fixed chain: `rate` tried up to the retry limits, else the
    /// `[mac]` chain, else the standard's highest rate.
    fn fixed(&self, rate: Option<Mode>) -> RateControlSpec {
        let chain = |tries: u8| match (&self.chain, rate) {
            (_, Some(mode)) => RetryChain {
                stages: vec![Stage { mode, tries }],
            },
            (Some(stages), None) => RetryChain {
                stages: stages.clone(),
            },
            (None, None) => RetryChain {
                stages: self
                    .standard
                    .modes()
                    .last()
                    .map(|&mode| Stage { mode, tries })
                    .into_iter()
                    .collect(),
            },
        };
        RateControlSpec::Fixed {
            short: chain(self.short_retry_limit),
            long: chain(self.long_retry_limit),
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
    fn spec(&self, key: &str, rc: &RateControlSection) -> Result<RateControlSpec, ScenarioError> {
        Ok(match rc {
            RateControlSection::Fixed(o) => self.fixed(Some(rate_mode(
                self.standard,
                &format!("{key}.rate"),
                o.rate,
            )?)),
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

/// `key` is set on a node of `role`, where only one of role `allowed` `does`.
fn only(key: &str, allowed: Role, role: Role, does: &str) -> Result<(), ScenarioError> {
    if role == allowed {
        Ok(())
    } else {
        err(format!(
            "{key}: only {} {does}; this node is {}",
            allowed.described(),
            role.described()
        ))
    }
}

/// Whether a node of `role` can run `spec` (`None`: the `[mac]` default,
/// checked again against each node that uses it).
fn check_rate_role(
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

impl TcpParams {
    /// `cfg` with these overrides, each checked.
    fn apply(&self, key: &str, mut cfg: TcpConfig) -> Result<TcpConfig, ScenarioError> {
        let time = |k: &str, t: Option<TimeQ>, hi: f64, allowed: &str| {
            t.map(|t| time_in(&format!("{key}.{k}"), t, 1e-3, hi, allowed))
                .transpose()
        };
        let initial_rto = time("initial_rto", self.initial_rto, 600.0, "1 ms to 600 s")?;
        let min_rto = time("min_rto", self.min_rto, 600.0, "1 ms to 600 s")?;
        let max_rto = time("max_rto", self.max_rto, 3600.0, "1 ms to 1 h")?;
        if let (Some(lo), Some(hi)) = (self.min_rto, self.max_rto) {
            if lo.0 > hi.0 {
                return err(format!(
                    "{key}.min_rto: {} s is above max_rto ({} s)",
                    lo.0, hi.0
                ));
            }
        }
        if let Some(w) = self.rcv_wnd {
            check_range(
                &format!("{key}.rcv_wnd"),
                w.0,
                &format!("{} B", w.0),
                1024.0,
                1073741824.0,
                "1 KiB to 1 GiB",
            )?;
            cfg.rcv_wnd = w.0 as u32;
        }
        if let Some(m) = self.mss {
            check_range(
                &format!("{key}.mss"),
                m.0,
                &format!("{} B", m.0),
                64.0,
                8960.0,
                "64 B to 8960 B",
            )?;
            cfg.mtu = m.0 as u32 + 40;
        }
        for (k, v, field) in [
            ("backoff_limit", self.backoff_limit, &mut cfg.backoff_limit),
            ("syn_retries", self.syn_retries, &mut cfg.syn_retries),
            ("data_retries", self.data_retries, &mut cfg.data_retries),
        ] {
            if let Some(v) = v {
                check_range(
                    &format!("{key}.{k}"),
                    v as f64,
                    &v.to_string(),
                    0.0,
                    100.0,
                    "0 to 100",
                )?;
                *field = v;
            }
        }
        cfg.initial_rto = initial_rto.unwrap_or(cfg.initial_rto);
        cfg.min_rto = min_rto.unwrap_or(cfg.min_rto);
        cfg.max_rto = max_rto.unwrap_or(cfg.max_rto);
        if cfg.min_rto > cfg.max_rto {
            cfg.max_rto = cfg.min_rto;
        }
        Ok(cfg)
    }
}

/// Checks a mobility section once for a group of nodes.
fn check_mobility(key: &str, m: &MobilitySection) -> Result<(), ScenarioError> {
    let speed = |k: &str, s: SpeedQ| {
        check_range(
            k,
            s.0 .0,
            &format!("{} m/s", s.0 .0),
            0.01,
            200.0,
            "0.01 m/s to 200 m/s (720 km/h)",
        )
    };
    let depart = |d: TimeQ| {
        check_range(
            &format!("{key}.depart"),
            d.0,
            &format!("{} s", d.0),
            0.0,
            MAX_DURATION_S,
            "0 s to 24 h",
        )
    };
    match m {
        MobilitySection::Static {} => Ok(()),
        MobilitySection::Line {
            speed: s,
            heading,
            depart: d,
        } => {
            depart(*d)?;
            speed(&format!("{key}.speed"), *s)?;
            check_range(
                &format!("{key}.heading"),
                *heading,
                &heading.to_string(),
                -360.0,
                360.0,
                "-360 to 360 degrees",
            )
        }
        MobilitySection::Polyline {
            points,
            speed: s,
            depart: d,
        } => {
            depart(*d)?;
            speed(&format!("{key}.speed"), *s)?;
            if points.len() < 2 {
                return err(format!(
                    "{key}.points: {} given; a polyline needs at least 2",
                    points.len()
                ));
            }
            for (i, p) in points.iter().enumerate() {
                check_point(&format!("{key}.points[{i}]"), *p)?;
            }
            Ok(())
        }
        MobilitySection::Waypoints {
            waypoints,
            depart: d,
        } => {
            depart(*d)?;
            if waypoints.is_empty() {
                return err(format!("{key}.waypoints: give at least one waypoint"));
            }
            for (i, w) in waypoints.iter().enumerate() {
                speed(&format!("{key}.waypoints[{i}].speed"), w.speed)?;
                check_point(&format!("{key}.waypoints[{i}].position"), w.position)?;
                let p = w.pause.0;
                check_range(
                    &format!("{key}.waypoints[{i}].pause"),
                    p,
                    &format!("{p} s"),
                    0.0,
                    MAX_DURATION_S,
                    "0 s to 24 h",
                )?;
            }
            Ok(())
        }
        MobilitySection::Nasch { lanes, cells, .. } => {
            check_range(
                &format!("{key}.lanes"),
                *lanes as f64,
                &lanes.to_string(),
                1.0,
                16.0,
                "1 to 16",
            )?;
            check_range(
                &format!("{key}.cells"),
                *cells as f64,
                &cells.to_string(),
                5.0,
                100_000.0,
                "5 to 100000 cells of 1.5 m",
            )?;
            highway(m, Vec2::default())
                .validate()
                .map_err(|e| ScenarioError(format!("{key}.{e}")))
        }
    }
}

/// The highway of a Nagel–Schreckenberg section, lane 0 starting at `at`.
fn highway(m: &MobilitySection, at: Vec2) -> Highway {
    let MobilitySection::Nasch {
        density,
        lanes,
        cells,
        dawdle,
        sources,
    } = *m
    else {
        unreachable!("called for NaSch sections only")
    };
    Highway {
        lanes,
        cells,
        dawdle,
        sources,
        origin: at,
        ..Highway::chen(density)
    }
}

/// One node of a `[[node]]` section: its name, path and radio window.
struct Member {
    name: String,
    trajectory: Trajectory,
    appear: SimTime,
    disappear: SimTime,
}

/// The nodes of section `n`: `count` copies offset by `spacing`, or the
/// vehicles of its highway over `duration`, traffic drawn from run `run`
/// of `seed`.
fn members(
    n: &NodeSection,
    group: &NodeGroup,
    duration: SimTime,
    (seed, run): (u64, u64),
) -> Vec<Member> {
    if let MobilitySection::Nasch { .. } = n.mobility {
        let stream = Stream::new("run", seed, run, &format!("mobility/nasch/{}", n.name));
        let vehicles = highway(&n.mobility, n.position.0).run(duration, stream);
        // Cars and sources are numbered apart, each in order of entry.
        let mut count = [0usize; 2];
        let member = |v: Vehicle| {
            let k = count[v.source as usize];
            count[v.source as usize] += 1;
            let name = if v.source {
                format!("{}-source-{k}", n.name)
            } else {
                format!("{}-{k}", n.name)
            };
            Member {
                name,
                trajectory: v.trajectory,
                appear: v.enter,
                disappear: v.leave,
            }
        };
        return vehicles.into_iter().map(member).collect();
    }
    let spacing = n.spacing.map_or(Vec2::default(), |s| s.0);
    (0..n.count)
        .map(|k| {
            let off = Vec2::new(spacing.x * k as f64, spacing.y * k as f64);
            let at = Vec2::new(n.position.0.x + off.x, n.position.0.y + off.y);
            Member {
                name: if n.count == 1 {
                    n.name.clone()
                } else {
                    format!("{}-{k}", n.name)
                },
                trajectory: trajectory(&n.mobility, at, off),
                appear: group.appear,
                disappear: group.disappear,
            }
        })
        .collect()
}

/// The trajectory of a (checked) mobility section starting at `at`, every
/// point shifted by `off` (the node's place in its group).
fn trajectory(m: &MobilitySection, at: Vec2, off: Vec2) -> Trajectory {
    let shift = |p: &Point| Vec2::new(p.0.x + off.x, p.0.y + off.y);
    match m {
        MobilitySection::Static {} => Trajectory::fixed(at),
        MobilitySection::Line {
            speed,
            heading,
            depart,
        } => Trajectory::line(at, *heading, speed.0, depart.time()),
        MobilitySection::Polyline {
            points,
            speed,
            depart,
        } => {
            let pts: Vec<Vec2> = points.iter().map(shift).collect();
            Trajectory::polyline(&pts, speed.0, depart.time())
        }
        MobilitySection::Waypoints { waypoints, depart } => {
            let wps: Vec<Waypoint> = waypoints
                .iter()
                .map(|w| Waypoint {
                    position: shift(&w.position),
                    speed: w.speed.0,
                    pause: w.pause.time(),
                })
                .collect();
            Trajectory::waypoints(at, &wps, depart.time())
        }
        MobilitySection::Nasch { .. } => unreachable!("NaSch sections are expanded by members()"),
    }
}

impl Scenario {
    /// Node names after expanding `count`.
    fn node_names(&self) -> Vec<String> {
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

    /// The simulator configuration for run `run` with `seed` (default: the
    /// scenario's own); what is drawn while lowering (highway traffic)
    /// comes from them.
    pub fn lower(&self, seed: Option<u64>, run: u64) -> Result<SimConfig, ScenarioError> {
        let seed = seed.unwrap_or(self.seed);
        if let Some(name) = &self.name {
            if name.is_empty()
                || name.len() > 100
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || name.starts_with('.')
            {
                return err(format!("name: '{name}' is not usable; use up to 100 letters, digits, '-', '_' and '.', not starting with '.'"));
            }
        }
        let duration = time_in(
            "duration",
            self.duration,
            1e-9,
            MAX_DURATION_S,
            "more than 0 s, up to 24 h",
        )?;
        let standard = self.radio.standard;
        let channel_no = self.radio.channel.unwrap_or(match standard {
            Standard::B | Standard::G => 6,
            Standard::A => 36,
            Standard::P => 178,
        });
        let channel = self.lower_channel(channel_no)?;
        let radio = self.lower_radio()?;
        let rates = self.rate_context(radio.error_model)?;
        let mac = self.lower_mac(&rates)?;
        let nodes = self.lower_nodes(
            &rates,
            &mac.rate,
            (&channel, channel_no),
            duration,
            (seed, run),
        )?;
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let sources = self.lower_traffic(standard, &names)?;
        let mgmt = self.lower_management()?;
        let wires = self.lower_links(&names)?;
        let apps = self.lower_apps(&names)?;
        let apps = self.expand_source_apps(apps, &nodes);
        let pcap = self.lower_pcap(&nodes)?;
        Ok(SimConfig {
            mgmt,
            wires,
            apps,
            pcap,
            duration,
            seed,
            run,
            channel,
            radio,
            mac,
            nodes,
            sources,
        })
    }

    fn lower_channel(&self, channel_no: u32) -> Result<ChannelConfig, ScenarioError> {
        let env = &self.environment;
        check_range(
            "environment.noise_floor",
            env.noise_floor.0 .0,
            &format!("{} dBm", env.noise_floor.0 .0),
            -130.0,
            -30.0,
            "-130 dBm to -30 dBm",
        )?;
        if let Some(n) = env.path_loss_exponent {
            check_range(
                "environment.path_loss_exponent",
                n,
                &n.to_string(),
                1.0,
                8.0,
                "1 to 8",
            )?;
            if env.path_loss != PathLossName::LogDistance {
                return err(
                    "environment.path_loss_exponent: only used with path_loss = \"log-distance\"",
                );
            }
        }
        if let Some(r) = env.reference_distance {
            check_range(
                "environment.reference_distance",
                r.0 .0,
                &format!("{} m", r.0 .0),
                0.01,
                10_000.0,
                "0.01 m to 10 km",
            )?;
        }
        let reference = env.reference_distance.map_or(Meters(1.0), |r| r.0);
        let path_loss = match (env.path_loss, env.path_loss_exponents, env.path_loss_breakpoints) {
            (PathLossName::ThreeLogDistance, Some(exponents), Some(bs)) => {
                for (i, n) in exponents.iter().enumerate() {
                    check_range(&format!("environment.path_loss_exponents[{i}]"), *n, &n.to_string(), 1.0, 20.0, "1 to 20")?;
                }
                for (i, b) in bs.iter().enumerate() {
                    check_range(&format!("environment.path_loss_breakpoints[{i}]"), b.0 .0, &format!("{} m", b.0 .0), 1.0, 1e5, "1 m to 100 km")?;
                }
                if bs[1].0 .0 <= bs[0].0 .0 {
                    return err("environment.path_loss_breakpoints: the second must be farther than the first");
                }
                PathLoss::ThreeLogDistance { exponents, breakpoints: [bs[0].0, bs[1].0], reference }
            }
            (PathLossName::ThreeLogDistance, _, _) => {
                return err("environment: path_loss = \"three-log-distance\" needs path_loss_exponents = [n0, n1, n2] and path_loss_breakpoints = [d1, d2]");
            }
            (_, Some(_), _) | (_, _, Some(_)) => {
                return err("environment.path_loss_exponents and path_loss_breakpoints: only used with path_loss = \"three-log-distance\"")
            }
            (PathLossName::FreeSpace, None, None) => PathLoss::FreeSpace,
            (PathLossName::TwoRay, None, None) => PathLoss::TwoRayGround,
            (PathLossName::LogDistance, None, None) => PathLoss::LogDistance { exponent: env.path_loss_exponent.unwrap_or(3.0), reference },
        };
        let s = env.shadowing_sigma.0 .0;
        check_range(
            "environment.shadowing_sigma",
            s,
            &format!("{s} dB"),
            0.0,
            20.0,
            "0 dB to 20 dB",
        )?;
        let r = env.run_shadowing_sigma.0 .0;
        check_range(
            "environment.run_shadowing_sigma",
            r,
            &format!("{r} dB"),
            0.0,
            20.0,
            "0 dB to 20 dB",
        )?;
        let dc = env.shadowing_decorrelation.0 .0;
        check_range(
            "environment.shadowing_decorrelation",
            dc,
            &format!("{dc} m"),
            0.1,
            10_000.0,
            "0.1 m to 10 km",
        )?;
        let fading = match (env.fading, env.rician_k) {
            (FadingName::Rician, k) => {
                if let Some(k) = k {
                    check_range(
                        "environment.rician_k",
                        k.0 .0,
                        &format!("{} dB", k.0 .0),
                        -30.0,
                        40.0,
                        "-30 dB to 40 dB",
                    )?;
                }
                FadingKind::Rician {
                    k: k.map_or(Db(6.0), |k| k.0),
                }
            }
            (_, Some(_)) => return err("environment.rician_k: only used with fading = \"rician\""),
            (FadingName::None, None) => FadingKind::None,
            (FadingName::Rayleigh, None) => FadingKind::Rayleigh,
        };
        let frequency = self
            .radio
            .standard
            .default_channel_frequency(channel_no)
            .map_err(|e| ScenarioError(format!("radio.channel: {e}")))?;
        let system_loss = env.system_loss.0;
        check_range(
            "environment.system_loss",
            system_loss.0,
            &format!("{} dB", system_loss.0),
            0.0,
            60.0,
            "0 dB to 60 dB",
        )?;
        Ok(ChannelConfig {
            path_loss,
            system_loss,
            shadowing_sigma: env.shadowing_sigma.0,
            run_shadowing_sigma: env.run_shadowing_sigma.0,
            decorrelation: env.shadowing_decorrelation.0,
            fading,
            frequency,
            noise_floor: env.noise_floor.0,
            environment_seed: env.seed,
            obstacles: Arc::new(self.lower_obstacles(frequency)?),
        })
    }

    fn lower_obstacles(&self, frequency: Hertz) -> Result<Obstacles, ScenarioError> {
        let (default_wall, default_metre) = match self.environment.building_loss {
            BuildingLossName::Sommer => (PER_WALL, PER_METRE),
            BuildingLossName::SommerP2109 => sommer_at(frequency),
        };
        if self.obstacles.len() > MAX_OBSTACLES {
            return err(format!(
                "obstacle: {} buildings; at most {MAX_OBSTACLES} are allowed",
                self.obstacles.len()
            ));
        }
        let mut list = Vec::with_capacity(self.obstacles.len());
        for (i, o) in self.obstacles.iter().enumerate() {
            let key = |k: &str| format!("obstacle[{i}].{k}");
            let outlines: Vec<Vec<Vec2>> = match (&o.outline, &o.sumo) {
                (Some(outline), None) => {
                    if !o.types.is_empty() {
                        return err(format!("{}: only used with sumo", key("types")));
                    }
                    vec![outline.iter().map(|p| Vec2::new(p[0], p[1])).collect()]
                }
                (None, Some(path)) => {
                    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError(format!("{}: cannot read '{path}': {e}", key("sumo"))))?;
                    read_sumo_polygons(&text, path, &o.types).map_err(|e| ScenarioError(format!("{}: {e}", key("sumo"))))?
                }
                _ => return err(format!("{}: give an outline = [[x, y], ...] or a sumo = \"file.poly.xml\", one of them", key("outline"))),
            };
            let loss = |k: &str, v: Option<RatioQ>, default: Db| -> Result<Db, ScenarioError> {
                let d = v.map_or(default, |q| q.0);
                check_range(
                    &key(k),
                    d.0,
                    &format!("{} dB", d.0),
                    0.0,
                    100.0,
                    "0 dB to 100 dB",
                )?;
                Ok(d)
            };
            let (per_wall, per_metre) = (
                loss("per_wall", o.per_wall, default_wall)?,
                loss("per_metre", o.per_metre, default_metre)?,
            );
            for outline in outlines {
                if !(3..=MAX_OUTLINE).contains(&outline.len()) {
                    return err(format!(
                        "{}: {} corners; an outline has 3 to {MAX_OUTLINE}",
                        key("outline"),
                        outline.len()
                    ));
                }
                if let Some(p) = outline.iter().find(|p| {
                    !(p.x.is_finite() && p.y.is_finite() && p.x.abs() <= 1e7 && p.y.abs() <= 1e7)
                }) {
                    return err(format!(
                        "{}: corner ({}, {}): coordinates are metres within ±10,000 km",
                        key("outline"),
                        p.x,
                        p.y
                    ));
                }
                if list.len() == MAX_OBSTACLES {
                    return err(format!("obstacle: more than {MAX_OBSTACLES} buildings; at most {MAX_OBSTACLES} are allowed"));
                }
                list.push(Obstacle {
                    outline,
                    per_wall,
                    per_metre,
                });
            }
        }
        Ok(Obstacles::new(list))
    }

    fn lower_radio(&self) -> Result<RadioConfig, ScenarioError> {
        let r = &self.radio;
        let cca = r.cca_threshold.0 .0;
        check_range(
            "radio.cca_threshold",
            cca,
            &format!("{cca} dBm"),
            -120.0,
            0.0,
            "-120 dBm to 0 dBm",
        )?;
        if let Some(m) = r.capture_margin.0 {
            check_range(
                "radio.capture_margin",
                m.0,
                &format!("{} dB", m.0),
                0.0,
                60.0,
                "0 dB to 60 dB, or \"off\"",
            )?;
        }
        let il = r.implementation_loss.0 .0;
        check_range(
            "radio.implementation_loss",
            il,
            &format!("{il} dB"),
            0.0,
            30.0,
            "0 dB to 30 dB",
        )?;
        Ok(RadioConfig {
            standard: r.standard,
            b_compatible: r.b_compatible,
            preamble: match r.preamble {
                PreambleName::Long => Preamble::Long,
                PreambleName::Short => Preamble::Short,
            },
            cca_threshold: r.cca_threshold.0,
            capture_margin: r.capture_margin.0,
            error_model: ErrorModelKind::ClosedForm(ClosedForm {
                implementation_loss: r.implementation_loss.0,
            }),
            basic_rate: self.basic_rate()?,
            ofdm_preamble_estimate: r.ofdm_channel_estimate == ChannelEstimateName::Preamble,
        })
    }

    /// `radio.basic_rate`, or the standard's lowest basic rate.
    fn basic_rate(&self) -> Result<Mode, ScenarioError> {
        let standard = self.radio.standard;
        self.radio
            .basic_rate
            .map_or(Ok(standard.basic_rates()[0]), |r| {
                rate_mode(standard, "radio.basic_rate", r)
            })
    }

    fn rate_context(&self, error_model: ErrorModelKind) -> Result<RateContext, ScenarioError> {
        let mac = &self.mac;
        if [
            mac.rate.is_some(),
            mac.retry_chain.is_some(),
            mac.rate_control.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count()
            > 1
        {
            return err("mac: give one of rate, retry_chain and rate_control");
        }
        let standard = self.radio.standard;
        let limit = |k: &str, v: u32| {
            check_range(
                &format!("mac.{k}"),
                v as f64,
                &v.to_string(),
                1.0,
                255.0,
                "1 to 255 attempts",
            )?;
            Ok::<u8, ScenarioError>(v as u8)
        };
        let short_retry_limit = limit("short_retry_limit", mac.short_retry_limit)?;
        let long_retry_limit = limit("long_retry_limit", mac.long_retry_limit)?;
        check_range(
            "mac.rts_threshold",
            mac.rts_threshold.0,
            &format!("{} B", mac.rts_threshold.0),
            0.0,
            1e6,
            "0 B to 1 MB",
        )?;
        let chain = match &mac.retry_chain {
            None => None,
            Some(chain) if chain.is_empty() || chain.len() > MAX_STAGES => {
                return err(format!(
                    "mac.retry_chain: {} stages given; allowed: 1 to {MAX_STAGES}",
                    chain.len()
                ));
            }
            Some(chain) => Some(
                chain
                    .iter()
                    .enumerate()
                    .map(|(i, st)| {
                        let mode =
                            rate_mode(standard, &format!("mac.retry_chain[{i}].rate"), st.rate)?;
                        check_range(
                            &format!("mac.retry_chain[{i}].tries"),
                            st.tries as f64,
                            &st.tries.to_string(),
                            1.0,
                            15.0,
                            "1 to 15",
                        )?;
                        Ok(Stage {
                            mode,
                            tries: st.tries as u8,
                        })
                    })
                    .collect::<Result<Vec<_>, ScenarioError>>()?,
            ),
        };
        let basic = self.basic_rate()?;
        Ok(RateContext {
            standard,
            basic,
            error_model,
            chain,
            short_retry_limit,
            long_retry_limit,
            rts_threshold: mac.rts_threshold.0 as u32,
        })
    }

    fn lower_mac(&self, rates: &RateContext) -> Result<MacConfig, ScenarioError> {
        let mac = &self.mac;
        check_range(
            "mac.queue_limit",
            mac.queue_limit as f64,
            &mac.queue_limit.to_string(),
            1.0,
            1e6,
            "1 to 1000000 frames",
        )?;
        let txop_limit = time_in(
            "mac.txop_limit",
            mac.txop_limit,
            1e-5,
            0.05,
            "10 us to 50 ms",
        )?;
        // At most one of them is given (see `rate_context`).
        let rate = match (mac.rate, &mac.rate_control) {
            (Some(r), _) => rates.fixed(Some(rate_mode(rates.standard, "mac.rate", r)?)),
            (None, Some(rc)) => {
                let spec = rates.spec("mac.rate_control", rc)?;
                check_rate_role("mac.rate_control", &spec, None)?;
                spec
            }
            (None, None) => rates.fixed(None),
        };
        Ok(MacConfig {
            queue_limit: mac.queue_limit as usize,
            short_retry_limit: rates.short_retry_limit,
            long_retry_limit: rates.long_retry_limit,
            rts_threshold: rates.rts_threshold,
            rate,
            modes: rates.standard.modes(),
            fast_frames: mac.fast_frames.then_some(txop_limit),
            txop_bursting: mac.txop_bursting.then_some(txop_limit),
        })
    }

    /// The nodes; `default` is the `[mac]` section's rate control.
    /// `radio_channel`: the channel model, and the channel number radios
    /// use unless they say otherwise.
    fn lower_nodes(
        &self,
        rates: &RateContext,
        default: &RateControlSpec,
        radio_channel: (&ChannelConfig, u32),
        duration: SimTime,
        seed: (u64, u64),
    ) -> Result<Vec<NodeConfig>, ScenarioError> {
        let (channel, channel_no) = radio_channel;
        if self.nodes.is_empty() {
            return err("node: at least one [[node]] is required");
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let key = format!("node[{i}].count");
            check_range(
                &key,
                n.count as f64,
                &n.count.to_string(),
                1.0,
                MAX_NODES as f64,
                &format!("1 to {MAX_NODES}"),
            )?;
        }
        let total: u64 = self.nodes.iter().map(|n| n.count).sum();
        if total as usize > MAX_NODES {
            return err(format!(
                "node: {total} nodes in all; allowed: 1 to {MAX_NODES}"
            ));
        }
        let names = self.node_names();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return err(format!(
                    "node: the name '{name}' is used twice; node names must be unique"
                ));
            }
        }
        if self.nodes.iter().any(|n| n.role == Role::Sta)
            && !self.nodes.iter().any(|n| n.role == Role::Ap)
        {
            return err(
                "node: stations (role = \"sta\") need at least one node with role = \"ap\"",
            );
        }
        let mut groups = Vec::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            groups.push(self.node_group(i, n, rates, default, channel)?);
        }
        // Where a controller learns per position, every node's frames carry
        // its position and power (the cooperating deployment environment-
        // aware selection assumes).
        let reports_position = self
            .nodes
            .iter()
            .zip(&groups)
            .any(|(n, g)| n.radio && g.learns);
        let timing = rates.standard.timing(self.radio.b_compatible);
        let mut nodes = Vec::with_capacity(names.len());
        for (i, (n, group)) in self.nodes.iter().zip(groups).enumerate() {
            for m in members(n, &group, duration, seed) {
                nodes.push(NodeConfig {
                    name: m.name,
                    mobility: MobilityModel::Trajectory(m.trajectory),
                    tx_power: group.tx_power,
                    antenna_gain: n.antenna_gain.0,
                    antenna_height: n.antenna_height.0,
                    radio: n.radio,
                    role: n.role,
                    channel: n.channel.unwrap_or(channel_no),
                    tcp: group.tcp.clone(),
                    queue_limit: n.queue_limit.unwrap_or(self.mac.queue_limit) as usize,
                    forwarding: group.forwarding,
                    dhcp: n.dhcp,
                    dhcp_server: n.dhcp_server,
                    // Each node its own (an environment-aware map is per node).
                    rate_control: n
                        .rate_control
                        .as_ref()
                        .map(|rc| rates.spec(&format!("node[{i}].rate_control"), rc))
                        .transpose()?,
                    split_tcp: n.split_tcp,
                    reports_position,
                    appear: m.appear,
                    disappear: m.disappear,
                    arp: group.arp,
                    routing: n.routing,
                    adhoc: n
                        .adhoc
                        .as_ref()
                        .map(|a| {
                            super::adhoc::lower_adhoc(
                                i,
                                a,
                                n.role,
                                self.management.beacon_interval.time(),
                                &timing,
                            )
                        })
                        .transpose()?,
                });
            }
        }
        if nodes.len() > MAX_NODES {
            return err(format!(
                "node: {} nodes in all with the highways' vehicles; allowed: 1 to {MAX_NODES}",
                nodes.len()
            ));
        }
        for (i, a) in nodes.iter().enumerate() {
            if nodes[..i].iter().any(|b| b.name == a.name) {
                return err(format!("node: the name '{}' is used twice (a highway names its vehicles name-0, name-1, …); node names must be unique", a.name));
            }
        }
        Ok(nodes)
    }

    /// Checks a `[[node]]` section and lowers what its nodes share.
    fn node_group(
        &self,
        i: usize,
        n: &NodeSection,
        rates: &RateContext,
        default: &RateControlSpec,
        channel: &ChannelConfig,
    ) -> Result<NodeGroup, ScenarioError> {
        let key = |k: &str| format!("node[{i}].{k}");
        if n.name.trim().is_empty() || n.name.contains(['.', '=', '/']) || n.name == "broadcast" {
            return err(format!(
                "{}: '{}' is not a usable name; use letters, digits, '-' and '_' (not 'broadcast')",
                key("name"),
                n.name
            ));
        }
        let tx_power = match (n.tx_power, n.range) {
            (Some(_), Some(_)) => {
                return err(format!(
                    "{}: sets the transmit power; give range or tx_power, not both",
                    key("range")
                ))
            }
            (Some(p), None) => p.0,
            (None, None) => DEFAULT_TX_POWER,
            (None, Some(r)) => {
                check_range(
                    &key("range"),
                    r.0 .0,
                    &format!("{} m", r.0 .0),
                    1.0,
                    100_000.0,
                    "1 m to 100 km",
                )?;
                let p = power_for_range(channel, rates, r.0, n.antenna_height.0, n.antenna_gain.0);
                if !(-30.0..=40.0).contains(&p.0) {
                    return err(format!(
                        "{}: {} m needs {:.1} dBm, outside what a radio sends (-30 dBm to 40 dBm)",
                        key("range"),
                        r.0 .0,
                        p.0
                    ));
                }
                p
            }
        };
        check_range(
            &key("tx_power"),
            tx_power.0,
            &format!("{} dBm", tx_power.0),
            -30.0,
            40.0,
            "-30 dBm to 40 dBm",
        )?;
        check_range(
            &key("antenna_gain"),
            n.antenna_gain.0 .0,
            &format!("{} dBi", n.antenna_gain.0 .0),
            -20.0,
            30.0,
            "-20 dBi to 30 dBi",
        )?;
        let h = n.antenna_height.0 .0;
        check_range(
            &key("antenna_height"),
            h,
            &format!("{h} m"),
            0.01,
            1000.0,
            "0.01 m to 1000 m",
        )?;
        check_point(&key("position"), n.position)?;
        if let Some(sp) = n.spacing {
            check_point(&key("spacing"), sp)?;
            let far = Point(Vec2::new(
                n.position.0.x + sp.0.x * n.count as f64,
                n.position.0.y + sp.0.y * n.count as f64,
            ));
            check_point(
                &format!("{} (the last of {} nodes)", key("spacing"), n.count),
                far,
            )?;
        }
        check_mobility(&key("mobility"), &n.mobility)?;
        if let MobilitySection::Nasch { .. } = n.mobility {
            let set = [
                ("count", n.count != 1),
                ("spacing", n.spacing.is_some()),
                ("appear", n.appear.is_some()),
                ("disappear", n.disappear.is_some()),
            ];
            if let Some((k, _)) = set.iter().find(|(_, given)| *given) {
                return err(format!("{}: not with mobility model \"nasch\"; the highway decides how many vehicles there are and when each is on the road", key(k)));
            }
        }
        let mut window = [SimTime::ZERO, SimTime::MAX];
        for ((k, t), at) in [("appear", n.appear), ("disappear", n.disappear)]
            .into_iter()
            .zip(&mut window)
        {
            if let Some(t) = t {
                *at = time_in(&key(k), t, 0.0, MAX_DURATION_S, "0 s to 24 h")?;
                if !n.radio {
                    return err(format!("{}: only a node with a radio appears and disappears; this one has radio = false", key(k)));
                }
            }
        }
        if let (Some(a), Some(d)) = (n.appear, n.disappear) {
            if d.0 <= a.0 {
                return err(format!(
                    "{}: {} s is not after appear ({} s)",
                    key("disappear"),
                    d.0,
                    a.0
                ));
            }
        }
        if !n.radio && n.role != Role::Independent {
            return err(format!(
                "{}: a node without a radio cannot be {}; a wired host has role = \"independent\"",
                key("role"),
                n.role.described()
            ));
        }
        if let Some(c) = n.channel {
            self.radio
                .standard
                .default_channel_frequency(c)
                .map_err(|e| ScenarioError(format!("{}: {e}", key("channel"))))?;
        }
        let tcp = n.tcp_params.apply(&key("tcp_params"), n.tcp.config())?;
        let arp = {
            let profile = match n.arp {
                ArpName::Linux => ArpProfile::Linux,
                ArpName::WindowsXp => ArpProfile::WindowsXp,
            };
            let cfg = profile.config();
            let retransmit = n
                .arp_retransmit
                .map(|t| time_in(&key("arp_retransmit"), t, 1e-3, 60.0, "1 ms to 60 s"))
                .transpose()?;
            ArpConfig {
                retransmit: retransmit.unwrap_or(cfg.retransmit),
                ..cfg
            }
        };
        let learns = match &n.rate_control {
            Some(rc) => {
                let spec = rates.spec(&key("rate_control"), rc)?;
                check_rate_role(&key("rate_control"), &spec, Some(n.role))?;
                spec.prior().is_some()
            }
            None if n.radio => {
                check_rate_role(
                    &format!("mac.rate_control (used by node[{i}] '{}')", n.name),
                    default,
                    Some(n.role),
                )?;
                default.prior().is_some()
            }
            None => default.prior().is_some(),
        };
        if n.split_tcp {
            only(&key("split_tcp"), Role::Ap, n.role, "splits TCP")?;
        }
        if n.dhcp {
            only(&key("dhcp"), Role::Sta, n.role, "gets its address by DHCP")?;
        }
        if let Some(q) = n.queue_limit {
            check_range(
                &key("queue_limit"),
                q as f64,
                &q.to_string(),
                1.0,
                1e6,
                "1 to 1000000 frames",
            )?;
        }
        let forwarding = match n.forwarding {
            None => None,
            Some(f) => {
                only(
                    &key("forwarding"),
                    Role::Ap,
                    n.role,
                    "forwards from its wired side",
                )?;
                let per_packet = time_in(
                    &key("forwarding.per_packet"),
                    f.per_packet,
                    0.0,
                    1.0,
                    "0 to 1 s",
                )?;
                check_range(
                    &key("forwarding.queue_limit"),
                    f.queue_limit as f64,
                    &f.queue_limit.to_string(),
                    0.0,
                    1e6,
                    "0 to 1000000 packets",
                )?;
                Some(ForwardingConfig {
                    per_packet,
                    queue_limit: f.queue_limit as usize,
                })
            }
        };
        let [appear, disappear] = window;
        Ok(NodeGroup {
            forwarding,
            tx_power,
            tcp,
            arp,
            learns,
            appear,
            disappear,
        })
    }

    fn lower_traffic(
        &self,
        standard: Standard,
        names: &[String],
    ) -> Result<Vec<SourceConfig>, ScenarioError> {
        let mut sources = Vec::with_capacity(self.traffic.len());
        for (i, t) in self.traffic.iter().enumerate() {
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
                            .map(|(j, r)| {
                                rate_mode(standard, &format!("{}[{j}]", key("rates")), *r)
                            })
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

    fn lower_management(&self) -> Result<MgmtConfig, ScenarioError> {
        let m = &self.management;
        let standard = self.radio.standard;
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
            None => match standard {
                // madwifi 0.9's station scan table: 1, 6, 11, 7, then the
                // rest of the FCC channels 1-11.
                Standard::B | Standard::G => vec![1, 6, 11, 7, 2, 3, 4, 5, 8, 9, 10],
                Standard::A => vec![36, 40, 44, 48],
                Standard::P => vec![178],
            },
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
        })
    }

    fn lower_links(&self, names: &[String]) -> Result<Vec<WiredLink>, ScenarioError> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let mut wires = Vec::with_capacity(self.links.len());
        for (i, l) in self.links.iter().enumerate() {
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

    fn lower_apps(&self, names: &[String]) -> Result<Vec<AppConfig>, ScenarioError> {
        let mut apps = Vec::with_capacity(self.apps.len());
        for (i, a) in self.apps.iter().enumerate() {
            let key = |k: &str| format!("app[{i}].{k}");
            // A highway's sources stand in as its first source until
            // `expand_source_apps`.
            let from_name = if self.source_group(&a.from) {
                format!("{}-0", a.from)
            } else {
                a.from.clone()
            };
            let from = node_id(names, &key("from"), &from_name, "")?;
            let to = node_id(names, &key("to"), &a.to, "")?;
            if from == to {
                return err(format!(
                    "{}: an application cannot send to its own node",
                    key("to")
                ));
            }
            let start = self.app_start(&key, a)?;
            let stop = a
                .stop
                .map(|t| time_in(&key("stop"), t, 0.0, MAX_DURATION_S, "0 s to 24 h"))
                .transpose()?;
            if a.kind != AppKindName::RequestResponse {
                let rr_keys = [
                    ("request", a.request.is_some()),
                    ("response", a.response.is_some()),
                    ("exchanges", a.exchanges.is_some()),
                    ("trigger_interval", a.trigger_interval.is_some()),
                    ("trigger_size", a.trigger_size.is_some()),
                ];
                if let Some((k, _)) = rr_keys.iter().find(|(_, given)| *given) {
                    return err(format!(
                        "{}: only used with kind = \"request-response\"",
                        key(k)
                    ));
                }
            }
            for (k, given) in [
                ("transport", a.transport.is_some()),
                ("files", a.files.is_some()),
                ("common", a.common.is_some()),
                ("both_ways", a.both_ways.is_some()),
            ] {
                if given && a.kind != AppKindName::Broadside {
                    return err(format!("{}: only used with kind = \"broadside\"", key(k)));
                }
            }
            let kind = match a.kind {
                AppKindName::TcpBulk => {
                    if a.payload.is_some() || a.interval.is_some() {
                        return err(format!(
                            "{}: payload and interval are for kind = \"udp-cbr\"",
                            key("kind")
                        ));
                    }
                    AppKind::TcpBulk {
                        bytes: a.bytes.map_or(u64::MAX, |b| b.0 as u64),
                    }
                }
                AppKindName::RequestResponse => {
                    let (Some(rq), Some(rs)) = (a.request, a.response) else {
                        return err(format!("{}: kind = \"request-response\" needs request and response (sizes, e.g. \"1 kB\")", key("kind")));
                    };
                    check_range(
                        &key("request"),
                        rq.0,
                        &format!("{} B", rq.0),
                        1.0,
                        1e9,
                        "1 B to 1 GB",
                    )?;
                    check_range(
                        &key("response"),
                        rs.0,
                        &format!("{} B", rs.0),
                        1.0,
                        1e9,
                        "1 B to 1 GB",
                    )?;
                    if let Some(n) = a.exchanges {
                        check_range(
                            &key("exchanges"),
                            n as f64,
                            &n.to_string(),
                            1.0,
                            1e9,
                            "1 to 1000000000",
                        )?;
                    }
                    let trigger_interval = a
                        .trigger_interval
                        .map(|t| time_in(&key("trigger_interval"), t, 1e-3, 3600.0, "1 ms to 1 h"))
                        .transpose()?;
                    if let Some(b) = a.trigger_size {
                        check_range(
                            &key("trigger_size"),
                            b.0,
                            &format!("{} B", b.0),
                            1.0,
                            1472.0,
                            "1 B to 1472 B (one 1500-byte IP packet)",
                        )?;
                    }
                    for (k, given) in [
                        ("payload", a.payload.is_some()),
                        ("interval", a.interval.is_some()),
                        ("bytes", a.bytes.is_some()),
                        ("blocking", a.blocking),
                    ] {
                        if given {
                            return err(format!("{}: not used with kind = \"request-response\" (use request, response, exchanges, trigger_interval)", key(k)));
                        }
                    }
                    AppKind::RequestResponse {
                        request: rq.0 as u64,
                        response: rs.0 as u64,
                        exchanges: a.exchanges.unwrap_or(u64::MAX),
                        trigger: a.trigger_size.map_or(DEFAULT_TRIGGER_BYTES, |b| b.0 as u32),
                        trigger_interval: trigger_interval.unwrap_or(SimTime::from_ms(1000)),
                    }
                }
                AppKindName::Broadside => {
                    let Some(b) = a.bytes else {
                        return err(format!(
                            "{}: kind = \"broadside\" needs bytes (the file's size, e.g. \"1 MB\")",
                            key("kind")
                        ));
                    };
                    check_range(
                        &key("bytes"),
                        b.0,
                        &format!("{} B", b.0),
                        1.0,
                        256e6,
                        "1 B to 256 MB",
                    )?;
                    for (k, given) in [
                        ("payload", a.payload.is_some()),
                        ("interval", a.interval.is_some()),
                        ("blocking", a.blocking),
                    ] {
                        if given {
                            return err(format!("{}: not used with kind = \"broadside\" (its endpoint paces itself on the MAC queue)", key(k)));
                        }
                    }
                    let count = a.files.unwrap_or(1);
                    check_range(
                        &key("files"),
                        count as f64,
                        &count.to_string(),
                        1.0,
                        10_000.0,
                        "1 to 10000",
                    )?;
                    let (common, both_ways) =
                        (a.common.unwrap_or(false), a.both_ways.unwrap_or(false));
                    if both_ways && !common {
                        return err(format!("{}: both_ways = true needs common = true (files move both ways only between versions both ends hold)", key("both_ways")));
                    }
                    let files = crate::apps::broadside::Files {
                        bytes: b.0 as u64,
                        count: count as u32,
                        common,
                        both_ways,
                    };
                    let link = match a.transport {
                        None | Some(BroadsideTransport::Udp) => crate::apps::broadside::Link::Udp,
                        Some(BroadsideTransport::Raw) => crate::apps::broadside::Link::Raw,
                        Some(BroadsideTransport::Tcp) => crate::apps::broadside::Link::Tcp,
                    };
                    AppKind::Broadside { files, link }
                }
                AppKindName::UdpCbr => {
                    let (Some(p), Some(iv)) = (a.payload, a.interval) else {
                        return err(format!(
                            "{}: kind = \"udp-cbr\" needs payload and interval",
                            key("kind")
                        ));
                    };
                    check_range(
                        &key("payload"),
                        p.0,
                        &format!("{} B", p.0),
                        1.0,
                        1472.0,
                        "1 B to 1472 B (one 1500-byte IP packet)",
                    )?;
                    let interval = time_in(&key("interval"), iv, 1e-6, 3600.0, "1 us to 1 h")?;
                    if a.bytes.is_some() {
                        return err(format!(
                            "{}: bytes is for kind = \"tcp-bulk\"",
                            key("bytes")
                        ));
                    }
                    if a.blocking && !self.nodes.iter().any(|n| n.radio && n.name == a.from) {
                        return err(format!(
                            "{}: only a sender with a radio can block on its MAC queue",
                            key("blocking")
                        ));
                    }
                    AppKind::UdpCbr {
                        payload: p.0 as u32,
                        interval,
                    }
                }
            };
            apps.push(AppConfig {
                blocking: a.blocking,
                kind,
                from,
                to,
                port: a.port,
                start,
                // A disabled app keeps its index (traces name apps by index) but never runs.
                stop: if a.enabled {
                    stop.unwrap_or(SimTime::MAX)
                } else {
                    SimTime::ZERO
                },
            });
        }
        Ok(apps)
    }

    /// Whether `name` is `"car-source"` for a NaSch section `car` with
    /// sources.
    fn source_group(&self, name: &str) -> bool {
        self.nodes.iter().any(|n| matches!(n.mobility, MobilitySection::Nasch { sources, .. } if sources > 0 && name.strip_suffix("-source") == Some(n.name.as_str())))
    }

    /// Each app of a highway's sources (lowered on its first source) runs
    /// on every source while that one is on the road: from when it enters
    /// (or the app's start, if later) until it leaves.
    fn expand_source_apps(&self, apps: Vec<AppConfig>, nodes: &[NodeConfig]) -> Vec<AppConfig> {
        let mut out = Vec::with_capacity(apps.len());
        for (app, section) in apps.into_iter().zip(&self.apps) {
            if !self.source_group(&section.from) {
                out.push(app);
                continue;
            }
            let prefix = format!("{}-", section.from);
            for (i, n) in nodes.iter().enumerate() {
                if n.name
                    .strip_prefix(&prefix)
                    .is_some_and(|k| k.bytes().all(|b| b.is_ascii_digit()))
                {
                    let start = match app.start {
                        AppStart::At(t) => AppStart::At(t.max(n.appear)),
                        other => other,
                    };
                    out.push(AppConfig {
                        from: NodeId(i as u32),
                        start,
                        stop: app.stop.min(n.disappear),
                        ..app.clone()
                    });
                }
            }
        }
        out
    }

    fn app_start(
        &self,
        key: &impl Fn(&str) -> String,
        a: &AppSection,
    ) -> Result<AppStart, ScenarioError> {
        if a.start != AppStartSection::OnProduction {
            for (k, given) in [
                ("production_ratio", a.production_ratio.is_some()),
                ("production_window", a.production_window.is_some()),
                ("production_rssi", a.production_rssi.is_some()),
            ] {
                if given {
                    return err(format!(
                        "{}: only used with start = \"on-production\"",
                        key(k)
                    ));
                }
            }
        }
        let delay = time_in(
            &key("start_delay"),
            a.start_delay,
            0.0,
            3600.0,
            "0 s to 1 h",
        )?;
        let spread = match a.start_delay_max {
            Some(_) if matches!(a.start, AppStartSection::At(_)) => {
                return err(format!(
                    "{}: only used with start = \"on-association\" or \"on-production\"",
                    key("start_delay_max")
                ))
            }
            Some(most) => {
                let allowed = format!("{} s (start_delay) to 1 h", delay.as_secs_f64());
                time_in(
                    &key("start_delay_max"),
                    most,
                    delay.as_secs_f64(),
                    3600.0,
                    &allowed,
                )? - delay
            }
            None => SimTime::ZERO,
        };
        Ok(match a.start {
            AppStartSection::At(t) => AppStart::At(time_in(
                &key("start"),
                t,
                0.0,
                MAX_DURATION_S,
                "0 s to 24 h, or \"on-association\" or \"on-production\"",
            )?),
            AppStartSection::OnAssociation => AppStart::OnAssociation { delay, spread },
            AppStartSection::OnProduction => {
                if !self
                    .nodes
                    .iter()
                    .any(|n| n.role == Role::Sta && (n.name == a.from || n.name == a.to))
                {
                    return err(format!(
                        "{}: \"on-production\" needs {} at one end to measure its AP's beacons",
                        key("start"),
                        Role::Sta.described()
                    ));
                }
                if let Some(r) = a.production_ratio {
                    check_range(
                        &key("production_ratio"),
                        r,
                        &r.to_string(),
                        0.01,
                        1.0,
                        "0.01 to 1",
                    )?;
                }
                let bi = self.management.beacon_interval.0;
                let window = a
                    .production_window
                    .map(|w| {
                        time_in(
                            &key("production_window"),
                            w,
                            bi,
                            BEACON_HISTORY.as_secs_f64(),
                            &format!("one beacon interval ({bi} s) to 10 s"),
                        )
                    })
                    .transpose()?;
                if let Some(p) = a.production_rssi {
                    check_range(
                        &key("production_rssi"),
                        p.0 .0,
                        &format!("{} dBm", p.0 .0),
                        -110.0,
                        0.0,
                        "-110 dBm to 0 dBm",
                    )?;
                }
                AppStart::OnProduction {
                    delay,
                    spread,
                    window: window.unwrap_or(SimTime::from_ms(1000)),
                    ratio: a.production_ratio.unwrap_or(0.9),
                    rssi: a.production_rssi.map(|p| p.0),
                }
            }
        })
    }

    fn lower_pcap(&self, nodes_cfg: &[NodeConfig]) -> Result<PcapConfig, ScenarioError> {
        let names: Vec<String> = nodes_cfg.iter().map(|n| n.name.clone()).collect();
        let Some(p) = &self.pcap else {
            return Ok(PcapConfig::default());
        };
        if p.nodes.as_ref().is_some_and(Vec::is_empty) {
            return err(
                "pcap.nodes: give at least one radio, or leave nodes out to capture every radio",
            );
        }
        let radios: Vec<&String> = nodes_cfg
            .iter()
            .filter(|n| n.radio)
            .map(|n| &n.name)
            .collect();
        let mut nodes = Vec::new();
        for (i, n) in p.nodes.iter().flatten().enumerate() {
            let Some(id) = names
                .iter()
                .position(|m| m == n)
                .filter(|_| radios.contains(&n))
            else {
                let radios: Vec<&str> = radios.iter().map(|s| s.as_str()).collect();
                return err(format!(
                    "pcap.nodes[{i}]: no node with a radio named '{n}'; radios: {}",
                    radios.join(", ")
                ));
            };
            nodes.push(NodeId(id as u32));
        }
        let Some(sniffer) = &p.sniffer else {
            return Ok(PcapConfig {
                nodes,
                sniffer: None,
            });
        };
        let Some(node) = self
            .nodes
            .iter()
            .find(|n| n.count == 1 && &n.name == sniffer && names.contains(sniffer))
        else {
            let what = if names.contains(sniffer) {
                "is one of a group (count > 1); give the sniffer a [[node]] of its own"
            } else {
                "no such node"
            };
            return err(format!(
                "pcap.sniffer: '{sniffer}': {what}; nodes: {}",
                names.join(", ")
            ));
        };
        if !node.radio || node.role != Role::Independent {
            return err(format!("pcap.sniffer: '{sniffer}' must have a radio and role = \"independent\" (a passive radio that never associates)"));
        }
        let named = self
            .traffic
            .iter()
            .flat_map(|t| [&t.from, &t.to])
            .map(|n| ("traffic", n))
            .chain(
                self.apps
                    .iter()
                    .flat_map(|a| [&a.from, &a.to])
                    .map(|n| ("app", n)),
            )
            .chain(
                self.links
                    .iter()
                    .flat_map(|l| [&l.a, &l.b])
                    .map(|n| ("link", n)),
            );
        for (section, n) in named {
            if n == sniffer {
                return err(format!("pcap.sniffer: '{sniffer}' is named by a [[{section}]]; a sniffer sends nothing and nothing is sent to it"));
            }
        }
        let sniffer = node_id(&names, "pcap.sniffer", sniffer, "")?;
        Ok(PcapConfig {
            nodes,
            sniffer: Some(sniffer),
        })
    }
}

/// What the nodes of one `[[node]]` section share once lowered.
struct NodeGroup {
    tx_power: Dbm,
    forwarding: Option<ForwardingConfig>,
    tcp: TcpConfig,
    arp: ArpConfig,
    /// Its rate control (its own, else the `[mac]` default) learns per position.
    learns: bool,
    appear: SimTime,
    disappear: SimTime,
}
