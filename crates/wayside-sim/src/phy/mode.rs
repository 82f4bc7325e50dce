//! 802.11 PHY modes: the rate tables of 802.11b/g/a/p, interframe timing,
//! frame airtime, control-response rates, minimum receiver sensitivities and
//! channel centre frequencies.
//!
//! The HT and VHT modes of 802.11n and 802.11ac are in [`super::ht`]; this
//! module dispatches to it. Legacy numbers come from IEEE Std 802.11-2007; clause numbers are given as
//! "2007 (2012)": DSSS clause 15 (16), HR/DSSS clause 18 (17), OFDM clause 17
//! (18) — whose half-clocked 10 MHz variant is 802.11p — and ERP clause 19
//! (19). 802.11p's channel numbers are those of the US 5.9 GHz ITS band.
//!
//! Timing that [`Standard::timing`] derives (µs; EIFS and ACKTimeout use the
//! lowest mandatory rate: 1 Mbps long preamble for b/g, 6 Mbps for a, 3 Mbps
//! for p; an ACK is 14 bytes):
//!
//! | standard          | slot | SIFS | DIFS | EIFS | CWmin | CWmax | ACKTimeout |
//! |-------------------|-----:|-----:|-----:|-----:|------:|------:|-----------:|
//! | 802.11b           |   20 |   10 |   50 |  364 |    31 |  1023 |        222 |
//! | 802.11g b-compat. |   20 |   10 |   50 |  364 |    31 |  1023 |        222 |
//! | 802.11g ERP-only  |    9 |   10 |   28 |  342 |    15 |  1023 |        211 |
//! | 802.11a           |    9 |   16 |   34 |   94 |    15 |  1023 |         45 |
//! | 802.11p           |   13 |   32 |   58 |  178 |    15 |  1023 |         85 |
//!
//! ACKTimeout is aSIFSTime + aSlotTime + aPHY-RX-START-Delay, with the
//! RX-START delay taken as the preamble + PLCP header airtime at the lowest
//! rate, which is when this simulator's receiver starts a reception. For DSSS
//! that equals the standard's 192 µs; the OFDM PHY specifies 25 µs (49 µs at
//! 10 MHz), 5 (9) µs more than preamble + SIGNAL, a receiver processing margin
//! that a simulated receiver does not need.

use std::fmt;
use std::str::FromStr;

use super::ht::HtPhy;
pub use super::rate::{CodeRate, HtMode, ModClass, Mode, Modulation};
use crate::units::{Bitrate, Dbm, Hertz, SimTime};

/// An 802.11 PHY amendment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Standard {
    /// DSSS (1, 2 Mbps) and HR/DSSS CCK (5.5, 11 Mbps) at 2.4 GHz.
    B,
    /// ERP at 2.4 GHz: the 802.11b rates plus ERP-OFDM 6–54 Mbps.
    G,
    /// OFDM 6–54 Mbps in 20 MHz channels at 5 GHz.
    A,
    /// OFDM 3–27 Mbps in 10 MHz channels at 5.9 GHz (outside the context of a
    /// BSS).
    P,
    /// 802.11n (HT-mixed format) or 802.11ac (VHT), with their legacy
    /// OFDM (and at 2.4 GHz, ERP) basic rates.
    Ht(HtPhy),
}

/// PLCP preamble of a DSSS frame. `Short` applies only to the 2, 5.5 and
/// 11 Mbps modes; it is ignored (long is used) at 1 Mbps and for OFDM, which
/// has a single preamble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preamble {
    Long,
    Short,
}

/// Interframe spaces and contention-window bounds of a standard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub slot: SimTime,
    pub sifs: SimTime,
    /// SIFS + 2 slots.
    pub difs: SimTime,
    /// SIFS + DIFS + an ACK at the lowest mandatory rate.
    pub eifs: SimTime,
    pub cw_min: u32,
    pub cw_max: u32,
    /// SIFS + slot + preamble and PLCP header at the lowest mandatory rate.
    pub ack_timeout: SimTime,
}

const ACK_PSDU_BYTES: u32 = 14;

const fn dsss(kbps: u64, modulation: Modulation) -> Mode {
    Mode {
        rate: Bitrate::kbps(kbps),
        modulation,
        code_rate: CodeRate::None,
        class: ModClass::Dsss,
        bandwidth_mhz: 22,
        data_bits_per_symbol: 0,
        ht: None,
    }
}

const fn ofdm(
    kbps: u64,
    modulation: Modulation,
    code_rate: CodeRate,
    bandwidth_mhz: u32,
    data_bits_per_symbol: u32,
) -> Mode {
    Mode {
        rate: Bitrate::kbps(kbps),
        modulation,
        code_rate,
        class: ModClass::Ofdm,
        bandwidth_mhz,
        data_bits_per_symbol,
        ht: None,
    }
}

use CodeRate::{Half, ThreeQuarters, TwoThirds};
use Modulation::{Bpsk, Cck11, Cck55, Dbpsk, Dqpsk, Qam16, Qam256, Qam64, Qpsk};

const DSSS1: Mode = dsss(1_000, Dbpsk);
const DSSS2: Mode = dsss(2_000, Dqpsk);
const CCK5_5: Mode = dsss(5_500, Cck55);
const CCK11: Mode = dsss(11_000, Cck11);

// 20 MHz OFDM, clause 17 (18) table 17-3 (18-4).
const OFDM6: Mode = ofdm(6_000, Bpsk, Half, 20, 24);
const OFDM9: Mode = ofdm(9_000, Bpsk, ThreeQuarters, 20, 36);
const OFDM12: Mode = ofdm(12_000, Qpsk, Half, 20, 48);
const OFDM18: Mode = ofdm(18_000, Qpsk, ThreeQuarters, 20, 72);
const OFDM24: Mode = ofdm(24_000, Qam16, Half, 20, 96);
const OFDM36: Mode = ofdm(36_000, Qam16, ThreeQuarters, 20, 144);
const OFDM48: Mode = ofdm(48_000, Qam64, TwoThirds, 20, 192);
const OFDM54: Mode = ofdm(54_000, Qam64, ThreeQuarters, 20, 216);

// 10 MHz OFDM: same N_DBPS per modulation, 8 µs symbols, so half the rate.
const P3: Mode = ofdm(3_000, Bpsk, Half, 10, 24);
const P4_5: Mode = ofdm(4_500, Bpsk, ThreeQuarters, 10, 36);
const P6: Mode = ofdm(6_000, Qpsk, Half, 10, 48);
const P9: Mode = ofdm(9_000, Qpsk, ThreeQuarters, 10, 72);
const P12: Mode = ofdm(12_000, Qam16, Half, 10, 96);
const P18: Mode = ofdm(18_000, Qam16, ThreeQuarters, 10, 144);
const P24: Mode = ofdm(24_000, Qam64, TwoThirds, 10, 192);
const P27: Mode = ofdm(27_000, Qam64, ThreeQuarters, 10, 216);

static B_MODES: [Mode; 4] = [DSSS1, DSSS2, CCK5_5, CCK11];
static G_MODES: [Mode; 12] = [
    DSSS1, DSSS2, CCK5_5, OFDM6, OFDM9, CCK11, OFDM12, OFDM18, OFDM24, OFDM36, OFDM48, OFDM54,
];
static A_MODES: [Mode; 8] = [OFDM6, OFDM9, OFDM12, OFDM18, OFDM24, OFDM36, OFDM48, OFDM54];
static P_MODES: [Mode; 8] = [P3, P4_5, P6, P9, P12, P18, P24, P27];

static B_BASIC: [Mode; 2] = [DSSS1, DSSS2];
static G_BASIC: [Mode; 7] = [DSSS1, DSSS2, CCK5_5, OFDM6, CCK11, OFDM12, OFDM24];
static A_BASIC: [Mode; 3] = [OFDM6, OFDM12, OFDM24];
static P_BASIC: [Mode; 3] = [P3, P6, P12];

impl Standard {
    pub const ALL: [Standard; 4] = [Standard::B, Standard::G, Standard::A, Standard::P];

    /// "802.11b", "802.11g", "802.11a", "802.11p", "802.11n" or "802.11ac".
    pub fn name(self) -> &'static str {
        match self {
            Standard::B => "802.11b",
            Standard::G => "802.11g",
            Standard::A => "802.11a",
            Standard::P => "802.11p",
            Standard::Ht(p) => p.name(),
        }
    }

    /// The legacy standard whose timing and basic rates an HT or VHT radio
    /// uses: 802.11g at 2.4 GHz, 802.11a at 5 GHz; the standard itself
    /// otherwise.
    pub fn legacy(self) -> Standard {
        match self {
            Standard::Ht(p) if p.band5 => Standard::A,
            Standard::Ht(_) => Standard::G,
            s => s,
        }
    }

    /// The standard as a radio tuned to `channel` uses it: an HT or VHT
    /// radio takes its band and width from the channel number
    /// ([`HtPhy::on_channel`]); the others are unchanged.
    pub fn on_channel(self, channel: u32) -> Result<Standard, String> {
        match self {
            Standard::Ht(p) => p.on_channel(channel).map(Standard::Ht),
            s => Ok(s),
        }
    }

    /// How much more noise the channel collects than a 20 MHz one, dB
    /// (0 for every legacy standard).
    pub fn noise_excess_db(self) -> f64 {
        match self {
            Standard::Ht(p) => p.noise_excess_db(),
            _ => 0.0,
        }
    }

    /// Every mode of the standard, ascending by rate.
    pub fn modes(self) -> &'static [Mode] {
        match self {
            Standard::B => &B_MODES,
            Standard::G => &G_MODES,
            Standard::A => &A_MODES,
            Standard::P => &P_MODES,
            Standard::Ht(p) => p.modes(),
        }
    }

    /// The basic (mandatory) rate set, ascending by rate; control responses
    /// are sent at one of these.
    pub fn basic_rates(self) -> &'static [Mode] {
        match self {
            Standard::B => &B_BASIC,
            Standard::G => &G_BASIC,
            Standard::A => &A_BASIC,
            Standard::P => &P_BASIC,
            Standard::Ht(_) => self.legacy().basic_rates(),
        }
    }

    /// The mode at `rate`; for HT and VHT, a basic rate if no MCS has it.
    pub fn mode(self, rate: Bitrate) -> Option<Mode> {
        let find = |modes: &[Mode]| modes.iter().copied().find(|m| m.rate == rate);
        find(self.modes()).or_else(|| match self {
            Standard::Ht(_) => find(self.basic_rates()),
            _ => None,
        })
    }

    /// The mode at `mbps` megabits per second (5.5 for 5.5 Mbps).
    pub fn mode_by_mbps(self, mbps: f64) -> Option<Mode> {
        if !mbps.is_finite() || mbps <= 0.0 {
            return None;
        }
        self.mode(Bitrate((mbps * 1e6).round() as u64))
    }

    /// Rate of an ACK or CTS answering a frame sent with `data`: the highest
    /// basic rate not above the data rate within the same modulation class,
    /// else the lowest basic rate of that class, else the lowest basic rate.
    pub fn control_rate(self, data: Mode) -> Mode {
        self.control_rate_from(data, self.basic_rates()[0])
    }

    /// [`Standard::control_rate`] in a BSS whose lowest basic rate is
    /// `lowest` (`radio.basic_rate`): the basic set is `lowest` and the
    /// standard's basic rates above it.
    pub fn control_rate_from(self, data: Mode, lowest: Mode) -> Mode {
        let basic = std::iter::once(lowest).chain(
            self.basic_rates()
                .iter()
                .copied()
                .filter(move |m| m.rate > lowest.rate),
        );
        let same_class = || basic.clone().filter(move |m| m.class == data.class);
        same_class()
            .rfind(|m| m.rate <= data.rate)
            .or_else(|| same_class().next())
            .unwrap_or(lowest)
    }

    /// Interframe timing; `b_compatible` selects the long slot and CWmin 31
    /// of an 802.11g BSS that admits 802.11b stations and is ignored by the
    /// other standards. See the module table for the resulting values.
    pub fn timing(self, b_compatible: bool) -> Timing {
        if let Standard::Ht(_) = self {
            return self.legacy().timing(b_compatible);
        }
        let (slot_us, sifs_us, cw_min) = match self {
            Standard::B => (20, 10, 31),
            Standard::G if b_compatible => (20, 10, 31),
            Standard::G => (9, 10, 15),
            Standard::A => (9, 16, 15),
            Standard::P => (13, 32, 15),
            Standard::Ht(_) => unreachable!("HT timing is its legacy standard's"),
        };
        let (slot, sifs) = (SimTime::from_us(slot_us), SimTime::from_us(sifs_us));
        let difs = sifs + slot * 2;
        // The lowest rate is also the lowest mandatory one in every standard.
        let lowest = self.modes()[0];
        Timing {
            slot,
            sifs,
            difs,
            eifs: sifs + difs + lowest.airtime(ACK_PSDU_BYTES, Preamble::Long, self),
            cw_min,
            cw_max: 1023,
            ack_timeout: sifs + slot + lowest.header_airtime(Preamble::Long),
        }
    }

    /// Centre frequency of `channel`: 2407 + 5·ch MHz for 2.4 GHz channels
    /// 1–13 and 2484 MHz for channel 14 (802.11b only); 5000 + 5·ch MHz for
    /// 802.11a channels 1–200 (no regulatory-domain check) and for the
    /// 802.11p 10 MHz channels 172, 174, …, 184.
    pub fn default_channel_frequency(self, channel: u32) -> Result<Hertz, String> {
        if let Standard::Ht(p) = self {
            let legacy = p.on_channel(channel).map(Standard::Ht)?.legacy();
            return legacy.default_channel_frequency(channel);
        }
        let mhz = match (self, channel) {
            (Standard::B | Standard::G, 1..=13) => 2407 + 5 * channel,
            (Standard::B, 14) => 2484,
            (Standard::G, 14) => {
                return Err("channel 14 is DSSS/CCK-only; use 802.11b or channels 1-13".into())
            }
            (Standard::A, 1..=200) => 5000 + 5 * channel,
            (Standard::P, 172 | 174 | 176 | 178 | 180 | 182 | 184) => 5000 + 5 * channel,
            _ => {
                let allowed = match self {
                    Standard::B => "1-14",
                    Standard::G => "1-13",
                    Standard::A => "1-200 (5000 + 5 x channel MHz)",
                    Standard::P => "the 10 MHz ITS channels 172, 174, ..., 184",
                    Standard::Ht(_) => unreachable!("HT channels are checked above"),
                };
                return Err(format!(
                    "invalid {} channel {channel}; allowed: {allowed}",
                    self.name()
                ));
            }
        };
        Ok(Hertz(f64::from(mhz) * 1e6))
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Standard {
    type Err = String;

    /// Parses a [`Standard::name`], ignoring case and surrounding spaces.
    /// "802.11n" and "802.11ac" give a one-stream, long-GI radio at 20 MHz
    /// (2.4 GHz for 802.11n, 5 GHz for 802.11ac) until tuned
    /// ([`Standard::on_channel`]).
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let ht = |vht| {
            Standard::Ht(HtPhy {
                vht,
                band5: vht,
                width_mhz: 20,
                streams: 1,
                short_gi: false,
            })
        };
        Standard::ALL
            .into_iter()
            .chain([ht(false), ht(true)])
            .find(|std| std.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                format!(
                    "unknown standard '{t}'; allowed: 802.11b, 802.11g, 802.11a, \
                     802.11p, 802.11n, 802.11ac"
                )
            })
    }
}

impl Mode {
    /// Whether a DSSS frame at this rate really uses the short preamble.
    fn short_preamble(self, preamble: Preamble) -> bool {
        preamble == Preamble::Short && self.class == ModClass::Dsss && self.rate.0 > 1_000_000
    }

    /// OFDM symbol duration: 4 µs, doubled in half-clocked 10 MHz channels.
    fn ofdm_symbol_us(self) -> u64 {
        if self.bandwidth_mhz == 10 {
            8
        } else {
            4
        }
    }

    /// Duration of the preamble and PLCP header (SIGNAL field for OFDM):
    /// when the receiver knows the frame's mode and length.
    /// DSSS: 144 + 48 µs long, 72 + 24 µs short; OFDM: 16 + 4 µs (20 MHz),
    /// 32 + 8 µs (10 MHz).
    pub fn header_airtime(self, preamble: Preamble) -> SimTime {
        if let Some(ht) = self.ht {
            return SimTime::from_us(ht.preamble_us());
        }
        SimTime::from_us(match self.class {
            ModClass::Dsss if self.short_preamble(preamble) => 72 + 24,
            ModClass::Dsss => 144 + 48,
            ModClass::Ofdm => 5 * self.ofdm_symbol_us(),
        })
    }

    /// Airtime of a PPDU carrying `psdu_bytes` (MAC header + body + FCS).
    /// DSSS payload: ceil(8·L / rate) µs, the LENGTH-field rounding.
    /// OFDM payload: ceil((16 SERVICE + 8·L + 6 tail) / N_DBPS) symbols, plus
    /// the 6 µs signal extension of 802.11g ERP-OFDM.
    /// HT and VHT: [`HtMode::preamble_us`] and [`HtMode::data_us`], plus
    /// the signal extension at 2.4 GHz.
    pub fn airtime(self, psdu_bytes: u32, preamble: Preamble, standard: Standard) -> SimTime {
        if let Some(ht) = self.ht {
            let extension = if standard.legacy() == Standard::G {
                6
            } else {
                0
            };
            let data = ht.data_us(psdu_bytes, self.data_bits_per_symbol);
            return SimTime::from_us(ht.preamble_us() + data + extension);
        }
        let bits = 8 * u64::from(psdu_bytes);
        let payload_us = match self.class {
            ModClass::Dsss => (bits * 1_000_000).div_ceil(self.rate.0.max(1)),
            ModClass::Ofdm => {
                let symbols = (16 + bits + 6).div_ceil(u64::from(self.data_bits_per_symbol.max(1)));
                let extension = if standard.legacy() == Standard::G {
                    6
                } else {
                    0
                };
                symbols * self.ofdm_symbol_us() + extension
            }
        };
        self.header_airtime(preamble) + SimTime::from_us(payload_us)
    }

    /// Minimum receiver input sensitivity required by the standard:
    ///
    /// | mode                         | dBm  | source (2007 clause) and criterion        |
    /// |------------------------------|-----:|-------------------------------------------|
    /// | DSSS 1, 2 Mbps               | −80  | 15.4.8.2, FER 8 % at 1024 B               |
    /// | HR/DSSS 5.5, 11 Mbps         | −76  | 18.4.8.2, FER 8 % at 1024 B (at 11 Mbps)  |
    /// | OFDM 6/9/12/18 Mbps          | −82/−81/−79/−77 | 17.3.10.1 table 17-13, PER 10 % at 1000 B |
    /// | OFDM 24/36/48/54 Mbps        | −74/−70/−66/−65 | same                           |
    /// | 10 MHz OFDM (802.11p) 3…27   | 3 dB lower: −85/−84/−82/−80/−77/−73/−69/−68 | same table, 10 MHz column |
    ///
    /// ERP-OFDM (clause 19) uses the OFDM values. The 5.5 Mbps figure is the
    /// 11 Mbps requirement, the only one HR/DSSS states.
    /// HT and VHT modes: [`HtMode::min_sensitivity`].
    pub fn min_sensitivity(self) -> Dbm {
        if let Some(ht) = self.ht {
            return ht.min_sensitivity(self.bandwidth_mhz);
        }
        let dbm = match (self.modulation, self.code_rate) {
            (Dbpsk | Dqpsk, _) => -80.0,
            (Cck55 | Cck11, _) => -76.0,
            (Bpsk, ThreeQuarters) => -81.0,
            (Bpsk, _) => -82.0,
            (Qpsk, ThreeQuarters) => -77.0,
            (Qpsk, _) => -79.0,
            (Qam16, ThreeQuarters) => -70.0,
            (Qam16, _) => -74.0,
            (Qam64, ThreeQuarters) => -65.0,
            (Qam64, _) => -66.0,
            (Qam256, _) => unreachable!("256-QAM is VHT-only"),
        };
        let narrow = if self.bandwidth_mhz == 10 { 3.0 } else { 0.0 };
        Dbm(dbm - narrow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(t: SimTime) -> u64 {
        t.as_ns() / 1_000
    }

    fn mbps(standard: Standard) -> Vec<f64> {
        standard.modes().iter().map(|m| m.rate.mbps()).collect()
    }

    #[test]
    fn rate_tables() {
        assert_eq!(mbps(Standard::B), [1.0, 2.0, 5.5, 11.0]);
        assert_eq!(
            mbps(Standard::G),
            [1.0, 2.0, 5.5, 6.0, 9.0, 11.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0]
        );
        assert_eq!(
            mbps(Standard::A),
            [6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0]
        );
        assert_eq!(
            mbps(Standard::P),
            [3.0, 4.5, 6.0, 9.0, 12.0, 18.0, 24.0, 27.0]
        );
        for standard in Standard::ALL {
            for m in standard.modes() {
                if m.class == ModClass::Ofdm {
                    // rate = N_DBPS / symbol duration
                    let rate = u64::from(m.data_bits_per_symbol) * 1_000_000 / m.ofdm_symbol_us();
                    assert_eq!(m.rate.0, rate, "{m:?}");
                }
            }
            for b in standard.basic_rates() {
                assert!(standard.modes().contains(b));
            }
        }
    }

    #[test]
    fn lookup_and_names() {
        assert_eq!(Standard::G.mode_by_mbps(5.5), Some(CCK5_5));
        assert_eq!(Standard::P.mode(Bitrate::kbps(4_500)), Some(P4_5));
        assert_eq!(Standard::A.mode_by_mbps(11.0), None);
        assert_eq!(Standard::A.mode_by_mbps(f64::NAN), None);
        assert_eq!(Standard::A.mode_by_mbps(-6.0), None);
        for standard in Standard::ALL {
            assert_eq!(standard.name().parse::<Standard>(), Ok(standard));
            assert_eq!(standard.to_string(), standard.name());
        }
        assert_eq!(" 802.11P ".parse::<Standard>(), Ok(Standard::P));
        let e = "802.11ax".parse::<Standard>().unwrap_err();
        assert!(e.contains("802.11ax") && e.contains("802.11ac"), "{e}");
        assert_eq!(
            "802.11N".parse::<Standard>().map(|s| s.name()),
            Ok("802.11n")
        );
    }

    #[test]
    fn airtime_dsss() {
        let ack = 14;
        assert_eq!(us(DSSS1.airtime(ack, Preamble::Long, Standard::B)), 304);
        assert_eq!(us(DSSS1.airtime(ack, Preamble::Short, Standard::B)), 304);
        assert_eq!(
            us(CCK11.airtime(ack, Preamble::Short, Standard::B)),
            96 + 11
        );
        assert_eq!(
            us(DSSS2.airtime(ack, Preamble::Long, Standard::G)),
            192 + 56
        );
        // 5.5 Mbps: ceil(8·1528 / 5.5) = ceil(2222.5)
        assert_eq!(
            us(CCK5_5.airtime(1528, Preamble::Long, Standard::B)),
            192 + 2223
        );
        assert_eq!(us(CCK11.header_airtime(Preamble::Short)), 96);
        assert_eq!(us(DSSS1.header_airtime(Preamble::Short)), 192);
    }

    #[test]
    fn airtime_ofdm() {
        // 1500 B of IP + 28 B MAC overhead at 54 Mbps.
        let sym = (16 + 8 * 1528 + 6_u64).div_ceil(216);
        assert_eq!(sym, 57);
        assert_eq!(
            us(OFDM54.airtime(1528, Preamble::Long, Standard::G)),
            20 + 4 * sym + 6
        );
        assert_eq!(
            us(OFDM54.airtime(1528, Preamble::Short, Standard::A)),
            20 + 4 * sym
        );
        // ACK at 6 Mbps: ceil(134 / 24) = 6 symbols.
        assert_eq!(us(OFDM6.airtime(14, Preamble::Long, Standard::A)), 44);
        // 802.11p ACK at 3 Mbps and 6 Mbps.
        assert_eq!(us(P3.airtime(14, Preamble::Long, Standard::P)), 40 + 8 * 6);
        assert_eq!(us(P6.airtime(14, Preamble::Long, Standard::P)), 40 + 8 * 3);
        assert_eq!(us(P27.header_airtime(Preamble::Long)), 40);
        assert_eq!(us(OFDM6.header_airtime(Preamble::Long)), 20);
    }

    #[test]
    fn timing_table() {
        let row = |t: Timing| {
            (
                us(t.slot),
                us(t.sifs),
                us(t.difs),
                us(t.eifs),
                t.cw_min,
                t.cw_max,
                us(t.ack_timeout),
            )
        };
        assert_eq!(
            row(Standard::B.timing(false)),
            (20, 10, 50, 364, 31, 1023, 222)
        );
        assert_eq!(
            row(Standard::B.timing(true)),
            (20, 10, 50, 364, 31, 1023, 222)
        );
        assert_eq!(
            row(Standard::G.timing(true)),
            (20, 10, 50, 364, 31, 1023, 222)
        );
        assert_eq!(
            row(Standard::G.timing(false)),
            (9, 10, 28, 342, 15, 1023, 211)
        );
        assert_eq!(
            row(Standard::A.timing(false)),
            (9, 16, 34, 94, 15, 1023, 45)
        );
        assert_eq!(
            row(Standard::P.timing(false)),
            (13, 32, 58, 178, 15, 1023, 85)
        );
    }

    #[test]
    fn control_rates() {
        let ctl =
            |s: Standard, mbps: f64| s.control_rate(s.mode_by_mbps(mbps).unwrap()).rate.mbps();
        assert_eq!(ctl(Standard::B, 1.0), 1.0);
        assert_eq!(ctl(Standard::B, 11.0), 2.0);
        assert_eq!(ctl(Standard::G, 5.5), 5.5);
        assert_eq!(ctl(Standard::G, 11.0), 11.0);
        assert_eq!(ctl(Standard::G, 9.0), 6.0);
        assert_eq!(ctl(Standard::G, 18.0), 12.0);
        assert_eq!(ctl(Standard::G, 54.0), 24.0);
        assert_eq!(ctl(Standard::A, 36.0), 24.0);
        assert_eq!(ctl(Standard::P, 4.5), 3.0);
        assert_eq!(ctl(Standard::P, 27.0), 12.0);
        // No basic rate of the class at or below: the lowest of the class.
        assert_eq!(Standard::G.control_rate(P3).rate.mbps(), 6.0);
        // No basic rate of the class at all: the lowest basic rate.
        assert_eq!(Standard::B.control_rate(OFDM54).rate.mbps(), 1.0);
        // A BSS whose basic set starts at 5.5 (radio.basic_rate): 5.5 and
        // the standard's basic rates above it.
        let from =
            |s: Standard, data: Mode, lowest: Mode| s.control_rate_from(data, lowest).rate.mbps();
        assert_eq!(from(Standard::B, CCK11, CCK11), 11.0);
        assert_eq!(from(Standard::B, CCK11, CCK5_5), 5.5);
        assert_eq!(from(Standard::B, DSSS2, CCK5_5), 5.5);
        assert_eq!(from(Standard::G, OFDM54, CCK11), 24.0);
        assert_eq!(from(Standard::G, OFDM9, CCK11), 12.0);
    }

    #[test]
    fn sensitivities() {
        let dbm =
            |s: Standard| -> Vec<f64> { s.modes().iter().map(|m| m.min_sensitivity().0).collect() };
        assert_eq!(dbm(Standard::B), [-80.0, -80.0, -76.0, -76.0]);
        assert_eq!(
            dbm(Standard::A),
            [-82.0, -81.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0]
        );
        assert_eq!(
            dbm(Standard::P),
            [-85.0, -84.0, -82.0, -80.0, -77.0, -73.0, -69.0, -68.0]
        );
        assert_eq!(
            OFDM54.min_sensitivity(),
            Standard::G.modes()[11].min_sensitivity()
        );
    }

    #[test]
    fn channel_frequencies() {
        let mhz = |s: Standard, ch| s.default_channel_frequency(ch).map(|f| f.0 / 1e6);
        assert_eq!(mhz(Standard::B, 1), Ok(2412.0));
        assert_eq!(mhz(Standard::G, 6), Ok(2437.0));
        assert_eq!(mhz(Standard::G, 13), Ok(2472.0));
        assert_eq!(mhz(Standard::B, 14), Ok(2484.0));
        assert_eq!(mhz(Standard::A, 36), Ok(5180.0));
        assert_eq!(mhz(Standard::A, 165), Ok(5825.0));
        assert_eq!(mhz(Standard::P, 178), Ok(5890.0));
        assert!(mhz(Standard::G, 14).unwrap_err().contains("802.11b"));
        for (s, ch) in [
            (Standard::B, 0),
            (Standard::B, 15),
            (Standard::A, 0),
            (Standard::A, 201),
            (Standard::P, 175),
            (Standard::P, 186),
            (Standard::P, 36),
        ] {
            let e = mhz(s, ch).unwrap_err();
            assert!(e.contains(&ch.to_string()) && e.contains(s.name()), "{e}");
        }
    }
}
