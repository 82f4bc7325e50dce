//! `[[app]]`: applications over IP (bulk TCP, constant-rate UDP,
//! request-response, Broadside) between two nodes, with when each starts
//! (a time, on association, or once the AP's signal is good enough),
//! checked and lowered into [`AppConfig`]s ([`crate::apps::ip`]).
//!
//! ```toml
//! [[app]]
//! kind = "tcp-bulk"
//! from = "server"
//! to = "car"
//! start = "on-association"
//! ```

use super::common::{
    check_range, err, node_id, time_in, yes, zero_time, PowerQ, ScenarioError, SizeQ, TimeQ,
    MAX_DURATION_S,
};
use super::mobility::MobilitySection;
use super::nodes::NodeSection;
use crate::apps::broadside::{Files, Link};
use crate::apps::ip::{AppConfig, AppKind, AppStart};
use crate::config::{NodeConfig, Role};
use crate::ids::NodeId;
use crate::mac::mgmt::BEACON_HISTORY;
use crate::units::{parse_quantity, Quantity, SimTime};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum AppKindName {
    TcpBulk,
    UdpCbr,
    RequestResponse,
    Broadside,
}

/// What a Broadside application runs over.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum BroadsideTransport {
    Udp,
    Raw,
    /// Beacons over UDP, discovery and files over TCP (Broadside-IP).
    Tcp,
}

/// An application over IP.
#[derive(Deserialize, Serialize, Debug)]
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
    /// broadside over UDP or raw frames: run the node's congestion control
    /// (`broadside::congestion`). Default false: the sender fills the MAC
    /// queue at line rate, as Zahn et al. 2009 §5's implementation did;
    /// over TCP (Broadside-IP) TCP's own control paces it.
    #[serde(default)]
    pub congestion: Option<bool>,
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

impl Serialize for AppStartSection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AppStartSection::At(t) => t.serialize(s),
            AppStartSection::OnAssociation => s.serialize_str("on-association"),
            AppStartSection::OnProduction => s.serialize_str("on-production"),
        }
    }
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

/// request-response: the trigger's payload unless `trigger_size` is given.
const DEFAULT_TRIGGER_BYTES: u32 = 32;

/// The applications of the `[[app]]` sections between the nodes `names`
/// (of `nodes`, the `[[node]]` sections), whose APs beacon every
/// `beacon_interval`. An app of a highway's sources runs on its first
/// source until [`expand_source_apps`].
pub(super) fn lower_apps(
    sections: &[AppSection],
    nodes: &[NodeSection],
    beacon_interval: TimeQ,
    names: &[String],
) -> Result<Vec<AppConfig>, ScenarioError> {
    let mut apps = Vec::with_capacity(sections.len());
    for (i, a) in sections.iter().enumerate() {
        let key = |k: &str| format!("app[{i}].{k}");
        // A highway's sources stand in as its first source until
        // `expand_source_apps`.
        let from_name = if source_group(nodes, &a.from) {
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
        let start = app_start(&key, a, nodes, beacon_interval)?;
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
            ("congestion", a.congestion.is_some()),
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
                let (common, both_ways) = (a.common.unwrap_or(false), a.both_ways.unwrap_or(false));
                if both_ways && !common {
                    return err(format!("{}: both_ways = true needs common = true (files move both ways only between versions both ends hold)", key("both_ways")));
                }
                let files = Files {
                    bytes: b.0 as u64,
                    count: count as u32,
                    common,
                    both_ways,
                };
                let link = match a.transport {
                    None | Some(BroadsideTransport::Udp) => Link::Udp,
                    Some(BroadsideTransport::Raw) => Link::Raw,
                    Some(BroadsideTransport::Tcp) => Link::Tcp,
                };
                let congestion = a.congestion.unwrap_or(false);
                if congestion && link == Link::Tcp {
                    return err(format!("{}: congestion = true is for transport = \"udp\" or \"raw\"; over \"tcp\" TCP paces Broadside-IP itself", key("congestion")));
                }
                AppKind::Broadside {
                    files,
                    link,
                    congestion,
                }
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
                if a.blocking && !nodes.iter().any(|n| n.radio && n.name == a.from) {
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
fn source_group(nodes: &[NodeSection], name: &str) -> bool {
    nodes.iter().any(|n| matches!(n.mobility, MobilitySection::Nasch { sources, .. } if sources > 0 && name.strip_suffix("-source") == Some(n.name.as_str())))
}

/// Each app of a highway's sources (lowered on its first source) runs
/// on every source while that one is on the road: from when it enters
/// (or the app's start, if later) until it leaves.
pub(super) fn expand_source_apps(
    apps: Vec<AppConfig>,
    sections: &[AppSection],
    node_sections: &[NodeSection],
    nodes: &[NodeConfig],
) -> Vec<AppConfig> {
    let mut out = Vec::with_capacity(apps.len());
    for (app, section) in apps.into_iter().zip(sections) {
        if !source_group(node_sections, &section.from) {
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

/// When app `a` (its keys named by `key`) starts.
fn app_start(
    key: &impl Fn(&str) -> String,
    a: &AppSection,
    nodes: &[NodeSection],
    beacon_interval: TimeQ,
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
            if !nodes
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
            let bi = beacon_interval.0;
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
