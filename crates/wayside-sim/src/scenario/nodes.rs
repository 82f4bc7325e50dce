//! `[[node]]`: the nodes, each section a node or a group of them (`count`
//! copies, or the vehicles of a highway), with its radio, role, transport
//! and rate control, checked and lowered into [`NodeConfig`]s. How they
//! move is [`super::mobility`], an IBSS they join [`super::adhoc`].
//!
//! ```toml
//! [[node]]
//! name = "car"
//! role = "sta"
//! tx_power = "19 dBm"
//! mobility = { model = "line", speed = "80 km/h" }
//! ```

use super::adhoc::{lower_adhoc, AdhocSection};
use super::common::{
    check_point, check_range, display, err, from_str, one, only, time_in, yes, zero_db, LengthQ,
    Point, PowerQ, RatioQ, ScenarioError, SizeQ, TimeQ, MAX_DURATION_S, MAX_NODES,
};
use super::mobility::{check_mobility, highway, trajectory, MobilitySection};
use super::rate_control::{check_rate_role, driver_default, RateContext, RateControlSection};
use super::roaming::{optional_roaming, RoamingSection};
use crate::channel::ChannelConfig;
use crate::config::{NodeConfig, Role};
use crate::geometry::Vec2;
use crate::mac::MacConfig;
use crate::mobility::nasch::Vehicle;
use crate::mobility::{MobilityModel, Trajectory};
use crate::net::arp::{ArpConfig, ArpProfile};
use crate::net::forwarding::ForwardingConfig;
use crate::phy::error::ErrorModel;
use crate::phy::mode::{Standard, Timing};
use crate::rng::Stream;
use crate::transport::tcp::{TcpConfig, TcpProfile};
use crate::units::{Db, Dbm, Meters, SimTime};
use serde::{Deserialize, Serialize};

/// What the other sections fix for every node.
pub(super) struct NodeContext<'a> {
    /// What `[mac]` fixes for rate control.
    pub(super) rates: &'a RateContext,
    /// `[mac]` lowered: every node's MAC but for its own queue limit and
    /// rate control.
    pub(super) mac: &'a MacConfig,
    /// Whether `[mac]` names every node's rate selection; if not, a node
    /// that names none runs its driver's.
    pub(super) mac_names_rate: bool,
    /// `management.roaming`: a station's unless it names its own.
    pub(super) roaming: &'a RoamingSection,
    /// The channel model (a node's `range` is defined over it).
    pub(super) channel: &'a ChannelConfig,
    /// The channel radios use unless they name one.
    pub(super) channel_no: u32,
    /// The standard's timing (an IBSS's beacon window).
    pub(super) timing: Timing,
    /// `management.beacon_interval` (an IBSS beacons at it).
    pub(super) beacon_interval: SimTime,
    pub(super) duration: SimTime,
    /// (seed, run): a highway's traffic is drawn from them.
    pub(super) seed: (u64, u64),
}

/// How errors name `[[node]]` section `i`: by its name, as an override
/// names it (`node.car`), or by its index where the name could not be a
/// key (`node[3]`).
pub(super) fn node_key(i: usize, name: &str) -> String {
    let keyable = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        && !name.chars().all(|c| c.is_ascii_digit());
    if keyable {
        format!("node.{name}")
    } else {
        format!("node[{i}]")
    }
}

#[derive(Deserialize, Serialize, Debug)]
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
    /// A station's own scan list, instead of `management.scan_channels`
    /// (a client configured for one network's channel).
    #[serde(default)]
    pub scan_channels: Option<Vec<u32>>,
    /// TCP behaviour: linux-2.6, linux-modern or windows-xp.
    #[serde(
        default = "default_tcp",
        deserialize_with = "from_str",
        serialize_with = "display"
    )]
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
    /// This node's data queue (an AP's, mostly): "fifo" (madwifi's
    /// drop-tail queue, default),
    /// "fq_codel" (Linux's qdisc) or "airtime" (mac80211's per-station
    /// TXQs with airtime fairness). See docs/queues.md.
    #[serde(default)]
    pub queue: Option<crate::mac::queue::QueueKind>,
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
    pub adhoc: Option<AdhocSection>,
    /// A station's own roaming profile ([`super::roaming`]), instead of
    /// `[management]`'s.
    #[serde(default, deserialize_with = "optional_roaming")]
    pub roaming: Option<RoamingSection>,
}

/// `tcp_params = { initial_rto = "1 s", backoff_limit = 0 }`: each key
/// replaces one value of the node's TCP profile.
#[derive(Deserialize, Serialize, Debug, Default, Clone)]
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

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum ArpName {
    Linux,
    WindowsXp,
}

/// `[[node]] forwarding`: an AP's forwarding engine from its wired side.
#[derive(Deserialize, Serialize, Debug, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct ForwardingSection {
    /// Processing time per packet.
    pub per_packet: TimeQ,
    /// Packets waiting beside the one in process.
    pub queue_limit: u64,
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
    let loss = channel.chain.clear_loss(range, height);
    Dbm(channel.noise_floor.0 + hi + loss.0 + channel.system_loss.0 - 2.0 * gain.0)
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

/// Node names after expanding `count`.
fn node_names(sections: &[NodeSection]) -> Vec<String> {
    let mut v = Vec::new();
    for n in sections {
        if n.count == 1 {
            v.push(n.name.clone());
        } else {
            v.extend((0..n.count).map(|i| format!("{}-{i}", n.name)));
        }
    }
    v
}

/// The nodes of the `[[node]]` sections.
pub(super) fn lower_nodes(
    sections: &[NodeSection],
    cx: &NodeContext,
) -> Result<Vec<NodeConfig>, ScenarioError> {
    if sections.is_empty() {
        return err("node: at least one [[node]] is required");
    }
    for (i, n) in sections.iter().enumerate() {
        let key = format!("{}.count", node_key(i, &n.name));
        check_range(
            &key,
            n.count as f64,
            &n.count.to_string(),
            1.0,
            MAX_NODES as f64,
            &format!("1 to {MAX_NODES}"),
        )?;
    }
    let total: u64 = sections.iter().map(|n| n.count).sum();
    if total as usize > MAX_NODES {
        return err(format!(
            "node: {total} nodes in all; allowed: 1 to {MAX_NODES}"
        ));
    }
    let names = node_names(sections);
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return err(format!(
                "node: the name '{name}' is used twice; node names must be unique"
            ));
        }
    }
    if sections.iter().any(|n| n.role == Role::Sta) && !sections.iter().any(|n| n.role == Role::Ap)
    {
        return err("node: stations (role = \"sta\") need at least one node with role = \"ap\"");
    }
    let mut groups = Vec::with_capacity(sections.len());
    for (i, n) in sections.iter().enumerate() {
        groups.push(node_group(i, n, cx)?);
    }
    // Where a controller learns per position, every node's frames carry
    // its position and power (the cooperating deployment environment-
    // aware selection assumes).
    let reports_position = sections
        .iter()
        .zip(&groups)
        .any(|(n, g)| n.radio && g.learns);
    let mut nodes = Vec::with_capacity(names.len());
    for (i, (n, group)) in sections.iter().zip(groups).enumerate() {
        let channel = n.channel.unwrap_or(cx.channel_no);
        let standard = cx
            .rates
            .standard
            .on_channel(channel)
            .map_err(|e| ScenarioError(format!("{}.channel: {e}", node_key(i, &n.name))))?;
        for m in members(n, &group, cx.duration, cx.seed) {
            nodes.push(NodeConfig {
                name: m.name,
                mobility: MobilityModel::Trajectory(m.trajectory),
                tx_power: group.tx_power,
                antenna_gain: n.antenna_gain.0,
                antenna_height: n.antenna_height.0,
                radio: n.radio,
                role: n.role,
                channel,
                standard,
                scan_channels: n.scan_channels.clone(),
                tcp: group.tcp.clone(),
                mac: MacConfig {
                    queue_limit: n.queue_limit.map_or(cx.mac.queue_limit, |q| q as usize),
                    queue: n.queue.unwrap_or_default(),
                    // Each node its own (an environment-aware map is per
                    // node); the `[mac]` default is one for all that take it.
                    rate: match cx.own_rate_control(n) {
                        Some(rc) => cx
                            .rates
                            .spec(&format!("{}.rate_control", node_key(i, &n.name)), &rc)?,
                        None => cx.mac.rate.clone(),
                    },
                    modes: standard.modes(),
                    ampdu: cx
                        .mac
                        .ampdu
                        .filter(|_| matches!(standard, crate::phy::mode::Standard::Ht(_))),
                    ..cx.mac.clone()
                },
                forwarding: group.forwarding,
                dhcp: n.dhcp,
                dhcp_server: n.dhcp_server,
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
                        let node = node_key(i, &n.name);
                        lower_adhoc(&node, a, n.role, cx.beacon_interval, &cx.timing)
                    })
                    .transpose()?,
                roaming: n
                    .roaming
                    .as_ref()
                    .map(|r| r.lower(&format!("{}.roaming", node_key(i, &n.name))))
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

impl NodeSection {
    /// The rate control this node runs if not `[mac]`'s: the one it names,
    /// else, where `[mac]` names none, a station's that roams as a mac80211
    /// client does (its driver's, [`driver_default`]).
    pub(super) fn own_rate_control(
        &self,
        mac_names_rate: bool,
        roaming: &RoamingSection,
        standard: Standard,
    ) -> Option<RateControlSection> {
        if self.rate_control.is_some() || mac_names_rate {
            return self.rate_control.clone();
        }
        let roaming = self.roaming.as_ref().unwrap_or(roaming);
        (self.role == Role::Sta && *roaming != RoamingSection::Madwifi)
            .then(|| driver_default(standard, true))
    }

    /// The transmit power it runs with unless it gives one or a `range`.
    pub(super) fn default_tx_power(&self) -> Option<PowerQ> {
        (self.tx_power.is_none() && self.range.is_none()).then_some(PowerQ(DEFAULT_TX_POWER))
    }
}

impl NodeContext<'_> {
    fn own_rate_control(&self, n: &NodeSection) -> Option<RateControlSection> {
        n.own_rate_control(self.mac_names_rate, self.roaming, self.rates.standard)
    }
}

/// Checks a `[[node]]` section and lowers what its nodes share.
fn node_group(i: usize, n: &NodeSection, cx: &NodeContext) -> Result<NodeGroup, ScenarioError> {
    let (rates, default, channel) = (cx.rates, &cx.mac.rate, cx.channel);
    let node = node_key(i, &n.name);
    let key = |k: &str| format!("{node}.{k}");
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
        rates
            .standard
            .default_channel_frequency(c)
            .map_err(|e| ScenarioError(format!("{}: {e}", key("channel"))))?;
    }
    if let Some(chs) = &n.scan_channels {
        only(&key("scan_channels"), Role::Sta, n.role, "scans")?;
        if chs.is_empty() {
            return err(format!(
                "{}: give at least one channel",
                key("scan_channels")
            ));
        }
        for (j, &c) in chs.iter().enumerate() {
            rates
                .standard
                .default_channel_frequency(c)
                .map_err(|e| ScenarioError(format!("{}[{j}]: {e}", key("scan_channels"))))?;
        }
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
    let learns = match &cx.own_rate_control(n) {
        Some(rc) => {
            let spec = rates.spec(&key("rate_control"), rc)?;
            check_rate_role(&key("rate_control"), &spec, Some(n.role))?;
            spec.prior().is_some()
        }
        None if n.radio => {
            check_rate_role(
                &format!("mac.rate_control (used by {node})"),
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
