//! Physical quantities as newtypes, and the parser for the unit strings that
//! scenario files use (`"80 km/h"`, `"19 dBm"`, `"100 ms"`, `"2304 B"`).
//!
//! Arithmetic is defined only where it is meaningful: `Dbm + Db -> Dbm`,
//! `Dbm - Dbm -> Db`, powers add in `MilliWatt`.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// Simulated time in integer nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000)
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            SimTime(0)
        } else {
            SimTime((s * 1e9).round() as u64)
        }
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 + rhs.0)
    }
}
impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 += rhs.0;
    }
}
impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 - rhs.0)
    }
}
impl Mul<u64> for SimTime {
    type Output = SimTime;
    fn mul(self, rhs: u64) -> SimTime {
        SimTime(self.0 * rhs)
    }
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9} s", self.as_secs_f64())
    }
}

macro_rules! scalar {
    ($(#[$m:meta])* $name:ident, $unit:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
        pub struct $name(pub f64);
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} {}", self.0, $unit)
            }
        }
    };
}

scalar!(
    /// Absolute power level in dBm.
    Dbm, "dBm");
scalar!(
    /// A power ratio (gain or loss) in dB; also used for dBi antenna gains.
    Db, "dB");
scalar!(
    /// Linear power in milliwatts; interference is summed in this unit.
    MilliWatt, "mW");
scalar!(
    /// Length in metres.
    Meters, "m");
scalar!(
    /// Speed in metres per second.
    Mps, "m/s");
scalar!(
    /// Frequency in hertz.
    Hertz, "Hz");

/// A data rate in bits per second (integer, so rates compare exactly).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bitrate(pub u64);

impl Bitrate {
    pub const fn kbps(k: u64) -> Self {
        Bitrate(k * 1_000)
    }
    pub fn mbps(self) -> f64 {
        self.0 as f64 / 1e6
    }
}
impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Mbps", self.mbps())
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Dbm {
    pub fn to_mw(self) -> MilliWatt {
        MilliWatt(10f64.powf(self.0 / 10.0))
    }
}
impl MilliWatt {
    /// `-inf dBm` for zero power.
    pub fn to_dbm(self) -> Dbm {
        Dbm(10.0 * self.0.log10())
    }
}
impl Db {
    pub fn ratio(self) -> f64 {
        10f64.powf(self.0 / 10.0)
    }
    pub fn from_ratio(r: f64) -> Db {
        Db(10.0 * r.log10())
    }
}
impl Add<Db> for Dbm {
    type Output = Dbm;
    fn add(self, rhs: Db) -> Dbm {
        Dbm(self.0 + rhs.0)
    }
}
impl Sub<Db> for Dbm {
    type Output = Dbm;
    fn sub(self, rhs: Db) -> Dbm {
        Dbm(self.0 - rhs.0)
    }
}
impl Sub for Dbm {
    type Output = Db;
    fn sub(self, rhs: Dbm) -> Db {
        Db(self.0 - rhs.0)
    }
}
impl Add for Db {
    type Output = Db;
    fn add(self, rhs: Db) -> Db {
        Db(self.0 + rhs.0)
    }
}
impl Neg for Db {
    type Output = Db;
    fn neg(self) -> Db {
        Db(-self.0)
    }
}
impl Add for MilliWatt {
    type Output = MilliWatt;
    fn add(self, rhs: MilliWatt) -> MilliWatt {
        MilliWatt(self.0 + rhs.0)
    }
}
impl AddAssign for MilliWatt {
    fn add_assign(&mut self, rhs: MilliWatt) {
        self.0 += rhs.0;
    }
}
impl Sub for MilliWatt {
    type Output = MilliWatt;
    fn sub(self, rhs: MilliWatt) -> MilliWatt {
        MilliWatt(self.0 - rhs.0)
    }
}

/// The kind of quantity a unit string must express; used for parsing and for
/// error messages that list the accepted units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Time,
    Power,
    Ratio,
    Length,
    Speed,
    Rate,
    Size,
    Frequency,
}

impl Quantity {
    /// The units accepted for this quantity, as shown in error messages.
    pub fn units(self) -> &'static str {
        match self {
            Quantity::Time => "ns, us, ms, TU (1024 us), s, min, h",
            Quantity::Power => "dBm, mW, W",
            Quantity::Ratio => "dB, dBi",
            Quantity::Length => "mm, cm, m, km",
            Quantity::Speed => "m/s, km/h, mph",
            Quantity::Rate => "bps, kbps, Mbps, Gbps",
            Quantity::Size => "B, KB, KiB, MB, MiB, GB, GiB",
            Quantity::Frequency => "Hz, kHz, MHz, GHz",
        }
    }
    pub fn example(self) -> &'static str {
        match self {
            Quantity::Time => "\"100 ms\"",
            Quantity::Power => "\"19 dBm\"",
            Quantity::Ratio => "\"7 dBi\"",
            Quantity::Length => "\"20 m\"",
            Quantity::Speed => "\"80 km/h\"",
            Quantity::Rate => "\"54 Mbps\"",
            Quantity::Size => "\"1500 B\"",
            Quantity::Frequency => "\"2.437 GHz\"",
        }
    }
}

/// Length of the leading decimal number (sign, digits, point, exponent) of `t`.
fn number_prefix_len(t: &str) -> usize {
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// Parses `"<number> <unit>"` (space optional) into the SI base value of the
/// quantity: seconds, dBm, dB, metres, m/s, bit/s, bytes or hertz.
pub fn parse_quantity(text: &str, q: Quantity) -> Result<f64, String> {
    let t = text.trim();
    let (num, unit) = t.split_at(number_prefix_len(t));
    let unit = unit.trim();
    let value: f64 = num.trim().parse().map_err(|_| {
        format!(
            "expected a number followed by a unit ({}), for example {}",
            q.units(),
            q.example()
        )
    })?;
    if !value.is_finite() {
        return Err("the number must be finite".into());
    }
    let bad_unit = || {
        if unit.is_empty() {
            format!(
                "a unit is required ({}), for example {}",
                q.units(),
                q.example()
            )
        } else {
            format!("unknown unit '{unit}'; allowed: {}", q.units())
        }
    };
    let si = match q {
        Quantity::Time => {
            value
                * match unit {
                    "ns" => 1e-9,
                    "us" | "µs" => 1e-6,
                    "ms" => 1e-3,
                    // 802.11's time unit, 1024 µs (beacon intervals).
                    "TU" => 1.024e-3,
                    "s" => 1.0,
                    "min" => 60.0,
                    "h" => 3600.0,
                    _ => return Err(bad_unit()),
                }
        }
        Quantity::Power => match unit {
            "dBm" => value,
            "mW" | "W" => {
                let mw = if unit == "W" { value * 1e3 } else { value };
                if mw <= 0.0 {
                    return Err("a linear power must be positive".into());
                }
                10.0 * mw.log10()
            }
            _ => return Err(bad_unit()),
        },
        Quantity::Ratio => match unit {
            "dB" | "dBi" => value,
            _ => return Err(bad_unit()),
        },
        Quantity::Length => {
            value
                * match unit {
                    "mm" => 1e-3,
                    "cm" => 1e-2,
                    "m" => 1.0,
                    "km" => 1e3,
                    _ => return Err(bad_unit()),
                }
        }
        Quantity::Speed => {
            value
                * match unit {
                    "m/s" => 1.0,
                    "km/h" => 1.0 / 3.6,
                    "mph" => 0.44704,
                    _ => return Err(bad_unit()),
                }
        }
        Quantity::Rate => {
            value
                * match unit {
                    "bps" | "bit/s" => 1.0,
                    "kbps" => 1e3,
                    "Mbps" => 1e6,
                    "Gbps" => 1e9,
                    _ => return Err(bad_unit()),
                }
        }
        Quantity::Size => {
            value
                * match unit {
                    "B" => 1.0,
                    "KB" | "kB" => 1e3,
                    "KiB" => 1024.0,
                    "MB" => 1e6,
                    "MiB" => 1048576.0,
                    "GB" => 1e9,
                    "GiB" => 1073741824.0,
                    _ => return Err(bad_unit()),
                }
        }
        Quantity::Frequency => {
            value
                * match unit {
                    "Hz" => 1.0,
                    "kHz" => 1e3,
                    "MHz" => 1e6,
                    "GHz" => 1e9,
                    _ => return Err(bad_unit()),
                }
        }
    };
    Ok(si)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_units_scenarios_use() {
        assert!((parse_quantity("80 km/h", Quantity::Speed).unwrap() - 22.2222).abs() < 1e-3);
        assert_eq!(parse_quantity("19 dBm", Quantity::Power).unwrap(), 19.0);
        assert!((parse_quantity("100 mW", Quantity::Power).unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(parse_quantity("100 ms", Quantity::Time).unwrap(), 0.1);
        assert_eq!(parse_quantity("2304 B", Quantity::Size).unwrap(), 2304.0);
        assert_eq!(parse_quantity("-95dBm", Quantity::Power).unwrap(), -95.0);
        assert_eq!(parse_quantity("5.5 Mbps", Quantity::Rate).unwrap(), 5.5e6);
        assert_eq!(parse_quantity("1e3 m", Quantity::Length).unwrap(), 1000.0);
    }

    #[test]
    fn rejects_wrong_units_with_the_allowed_list() {
        let e = parse_quantity("80 furlongs", Quantity::Speed).unwrap_err();
        assert!(e.contains("furlongs") && e.contains("km/h"), "{e}");
        let e = parse_quantity("80", Quantity::Speed).unwrap_err();
        assert!(e.contains("unit is required"), "{e}");
        // A spelling close to an allowed one is not guessed at.
        let e = parse_quantity("80 kmh", Quantity::Speed).unwrap_err();
        assert_eq!(e, "unknown unit 'kmh'; allowed: m/s, km/h, mph");
        assert!(parse_quantity("fast", Quantity::Speed).is_err());
        assert!(parse_quantity("19 dBm", Quantity::Time).is_err());
        assert!(parse_quantity("-3 mW", Quantity::Power).is_err());
    }

    #[test]
    fn decibel_arithmetic() {
        let p = Dbm(19.0) + Db(7.0) - Db(100.0);
        assert_eq!(p, Dbm(-74.0));
        assert_eq!(Dbm(-70.0) - Dbm(-95.0), Db(25.0));
        let sum = Dbm(0.0).to_mw() + Dbm(0.0).to_mw();
        assert!((sum.to_dbm().0 - 3.0103).abs() < 1e-3);
    }
}
