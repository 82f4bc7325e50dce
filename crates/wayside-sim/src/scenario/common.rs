//! What every section of a scenario file uses: quantities with units
//! (`"80 km/h"`, `"19 dBm"`) and points, the error type, range checks, and
//! the lookup of a node by name. A section's own types, defaults, checks and
//! lowering live in its own file.

use crate::config::Role;
use crate::geometry::Vec2;
use crate::ids::NodeId;
use crate::phy::mode::{Mode, Standard};
use crate::units::{parse_quantity, Bitrate, Db, Dbm, Meters, Mps, Quantity, SimTime};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

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

macro_rules! quantity {
    ($(#[$m:meta])* $name:ident($inner:ty), $q:expr, $what:literal, $conv:expr, $bare:expr, $si:literal, $value:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);
        /// Written back in the SI unit [`parse_quantity`] reads it into, so
        /// that it reads back to the same value.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&format!("{} {}", $value(self.0), $si))
            }
        }
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
    TimeQ(f64), Quantity::Time, "duration", |v| v, false, "s", |v| v);
quantity!(
    /// A power level, e.g. `"19 dBm"`.
    PowerQ(Dbm), Quantity::Power, "power", Dbm, false, "dBm", |v: Dbm| v.0);
quantity!(
    /// A gain or ratio, e.g. `"7 dBi"`.
    RatioQ(Db), Quantity::Ratio, "ratio", Db, false, "dB", |v: Db| v.0);
quantity!(
    /// A length, e.g. `"20 m"`; a bare number is metres.
    LengthQ(Meters), Quantity::Length, "length", Meters, true, "m", |v: Meters| v.0);
quantity!(
    /// A speed, e.g. `"80 km/h"`.
    SpeedQ(Mps), Quantity::Speed, "speed", Mps, false, "m/s", |v: Mps| v.0);
quantity!(
    /// A bit rate, e.g. `"54 Mbps"`.
    RateQ(f64), Quantity::Rate, "rate", |v| v, false, "bps", |v| v);
quantity!(
    /// A size, e.g. `"1500 B"`.
    SizeQ(f64), Quantity::Size, "size", |v| v, false, "B", |v| v);

/// Deserializes a string with the type's `FromStr`, whose error says what is allowed.
pub(super) fn from_str<'de, D: Deserializer<'de>, T: FromStr<Err: fmt::Display>>(
    d: D,
) -> Result<T, D::Error> {
    String::deserialize(d)?.parse().map_err(de::Error::custom)
}

/// Serializes a value read with [`from_str`] as its `Display`, which
/// `FromStr` reads back.
pub(super) fn display<S: Serializer, T: fmt::Display>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// The serde defaults several sections share.
pub(super) fn one() -> u64 {
    1
}

pub(super) fn yes() -> bool {
    true
}

pub(super) fn zero_db() -> RatioQ {
    RatioQ(Db(0.0))
}

pub(super) fn zero_time() -> TimeQ {
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

impl Serialize for Point {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        [self.0.x, self.0.y].serialize(s)
    }
}

/// A [`ScenarioError`] with `msg`.
pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(msg.into()))
}

/// `value` (shown to the user as `shown`) is within `lo..=hi`, or an
/// error naming `key` and what is `allowed`.
pub(super) fn check_range(
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
pub(super) fn check_point(key: &str, p: Point) -> Result<(), ScenarioError> {
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

/// The mode of `standard` at rate `r`, or an error listing its rates.
pub(super) fn rate_mode(standard: Standard, key: &str, r: RateQ) -> Result<Mode, ScenarioError> {
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
pub(super) fn node_id(
    names: &[String],
    key: &str,
    name: &str,
    extra: &str,
) -> Result<NodeId, ScenarioError> {
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(NodeId(i as u32)),
        None => err(format!(
            "{key}: no node named '{name}'; nodes: {}{extra}",
            names.join(", ")
        )),
    }
}

/// `key` is set on a node of `role`, where only one of role `allowed` `does`.
pub(super) fn only(key: &str, allowed: Role, role: Role, does: &str) -> Result<(), ScenarioError> {
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
