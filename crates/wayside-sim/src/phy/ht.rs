//! 802.11n (HT) and 802.11ac (VHT) modes: the MCS tables, the PPDU airtime
//! of the HT-mixed and VHT formats, which channel widths a channel number
//! names, and the receiver sensitivities, all from IEEE Std 802.11-2016.
//!
//! - MCS: HT clause 19.5 tables 19-27 to 19-38 (MCS 0–7 per stream, equal
//!   modulation on every stream, 1–4 streams); VHT clause 21.5 tables 21-30
//!   to 21-53 (MCS 0–9, adding 256-QAM 3/4 and 5/6). Data subcarriers
//!   N_SD: 52 at 20 MHz, 108 at 40 MHz, 234 at 80 MHz (tables 19-6, 21-5).
//!   N_DBPS = N_SD · N_BPSCS · R · N_SS.
//! - BCC encoders N_ES: one per 300 Mbit/s (HT) or 600 Mbit/s (VHT) of
//!   the short-GI data rate, which reproduces the N_ES columns of those
//!   tables; a VHT MCS is invalid where N_DBPS or N_CBPS is not a multiple
//!   of N_ES (21.5: e.g. MCS 9 at 20 MHz for 1, 2 and 4 streams, MCS 6 at
//!   80 MHz for 3 streams).
//! - Symbols: 4 µs, or 3.6 µs with the short guard interval (19.3.6,
//!   21.3.6); N_SYM = ⌈(8·L + 16 + 6·N_ES) / N_DBPS⌉ (19-32, 21-64).
//! - HT-mixed TXTIME (19.4.3, 19-135/19-136): L-STF 8 + L-LTF 8 + L-SIG 4 +
//!   HT-SIG 8 + HT-STF 4 + 4 µs per HT-LTF, then the data symbols, whose
//!   total with the short GI is rounded up to whole 4 µs symbols, plus the
//!   6 µs signal extension at 2.4 GHz. HT-LTFs: 1, 2, 4, 4 for 1–4 streams
//!   (table 19-13).
//! - VHT TXTIME (21.4.3, 21-105): L-STF, L-LTF, L-SIG 20 + VHT-SIG-A 8 +
//!   VHT-STF 4 + 4 µs per VHT-LTF + VHT-SIG-B 4, then the data as above.
//!   VHT-LTFs: 1, 2, 4, 4 (table 21-13). A VHT PPDU always carries an
//!   A-MPDU (10.13.1): a lone MPDU has its 4-byte delimiter.
//! - Channel numbers name the centre of the operating channel (Annex E,
//!   table E-4; 21.3.14): at 5 GHz 38, 46, 54, 62, 102, 110, 118, 126, 134,
//!   142, 151 and 159 are 40 MHz channels and 42, 58, 106, 122, 138 and 155
//!   are 80 MHz ones; every other channel, and every 2.4 GHz channel, is
//!   20 MHz wide (40 MHz in the crowded 2.4 GHz band is left out).
//! - Minimum sensitivity (19.3.19.1 table 19-23, 21.3.18.1 table 21-25),
//!   20 MHz: −82, −79, −77, −74, −70, −66, −65, −64, −59, −57 dBm for
//!   MCS 0–9, 3 dB higher per doubling of the width.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::rate::{CodeRate, HtMode, ModClass, Mode, Modulation};
use crate::units::Bitrate;

/// An HT or VHT radio: format, band, channel width, how many spatial
/// streams it can send and whether it uses the short guard interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HtPhy {
    /// 802.11ac (VHT) rather than 802.11n (HT).
    pub vht: bool,
    /// 5 GHz rather than 2.4 GHz.
    pub band5: bool,
    /// 20, 40 or 80 (80 only for VHT).
    pub width_mhz: u32,
    /// 1 to 4.
    pub streams: u8,
    pub short_gi: bool,
}

/// Modulation, bits per subcarrier and code rate (as a fraction) of MCS
/// 0–9 (one stream).
const MCS: [(Modulation, u32, CodeRate, u32, u32); 10] = [
    (Modulation::Bpsk, 1, CodeRate::Half, 1, 2),
    (Modulation::Qpsk, 2, CodeRate::Half, 1, 2),
    (Modulation::Qpsk, 2, CodeRate::ThreeQuarters, 3, 4),
    (Modulation::Qam16, 4, CodeRate::Half, 1, 2),
    (Modulation::Qam16, 4, CodeRate::ThreeQuarters, 3, 4),
    (Modulation::Qam64, 6, CodeRate::TwoThirds, 2, 3),
    (Modulation::Qam64, 6, CodeRate::ThreeQuarters, 3, 4),
    (Modulation::Qam64, 6, CodeRate::FiveSixths, 5, 6),
    (Modulation::Qam256, 8, CodeRate::ThreeQuarters, 3, 4),
    (Modulation::Qam256, 8, CodeRate::FiveSixths, 5, 6),
];

/// The 5 GHz channel numbers that name 40 and 80 MHz channels.
const CENTRES_40: [u32; 12] = [38, 46, 54, 62, 102, 110, 118, 126, 134, 142, 151, 159];
const CENTRES_80: [u32; 6] = [42, 58, 106, 122, 138, 155];

fn data_subcarriers(width_mhz: u32) -> u32 {
    match width_mhz {
        40 => 108,
        80 => 234,
        _ => 52,
    }
}

/// The mode of `mcs` with `streams` streams in `width_mhz`, if the standard
/// defines it.
pub fn mode(vht: bool, width_mhz: u32, mcs: u8, streams: u8, short_gi: bool) -> Option<Mode> {
    let &(modulation, bpscs, code_rate, num, den) = MCS.get(usize::from(mcs))?;
    let valid_width = matches!(width_mhz, 20 | 40) || (vht && width_mhz == 80);
    if (!vht && mcs > 7) || !(1..=4).contains(&streams) || !valid_width {
        return None;
    }
    let coded = data_subcarriers(width_mhz) * bpscs * u32::from(streams);
    if coded * num % den != 0 {
        return None;
    }
    let dbps = coded * num / den;
    // Short-GI rate in kbit/s: N_DBPS / 3.6 µs.
    let sgi_kbps = u64::from(dbps) * 10_000 / 36;
    let per_encoder = if vht { 600_000 } else { 300_000 };
    let encoders = sgi_kbps.div_ceil(per_encoder).max(1) as u32;
    if vht && (dbps % encoders != 0 || coded % encoders != 0) {
        return None;
    }
    let bps = if short_gi {
        (u64::from(dbps) * 10_000_000).div_ceil(36) // N_DBPS / 3.6 µs, rounded up
    } else {
        u64::from(dbps) * 250_000
    };
    Some(Mode {
        rate: Bitrate(bps),
        modulation,
        code_rate,
        class: ModClass::Ofdm,
        bandwidth_mhz: width_mhz,
        data_bits_per_symbol: dbps,
        ht: Some(HtMode {
            vht,
            mcs,
            streams,
            short_gi,
            ltfs: [1, 2, 4, 4][usize::from(streams - 1)],
            encoders: encoders as u8,
        }),
    })
}

impl HtPhy {
    /// "802.11n" or "802.11ac".
    pub fn name(self) -> &'static str {
        if self.vht {
            "802.11ac"
        } else {
            "802.11n"
        }
    }

    /// The same radio tuned to `channel`: band and width as the channel
    /// number names them (module documentation).
    pub fn on_channel(self, channel: u32) -> Result<HtPhy, String> {
        let band5 = channel > 14;
        let width_mhz = if !band5 {
            20
        } else if CENTRES_40.contains(&channel) {
            40
        } else if CENTRES_80.contains(&channel) {
            if !self.vht {
                return Err(format!(
                    "channel {channel} is an 80 MHz channel, which 802.11n does not \
                     have; use 802.11ac or a 20 or 40 MHz channel"
                ));
            }
            80
        } else {
            20
        };
        if self.vht && !band5 {
            return Err(format!(
                "802.11ac works at 5 GHz only; channel {channel} is at 2.4 GHz"
            ));
        }
        Ok(HtPhy {
            band5,
            width_mhz,
            ..self
        })
    }

    /// Every mode the radio can send: MCS 0–7 (HT) or 0–9 (VHT) for 1 up
    /// to `streams` streams, long GI and, if enabled, short GI; ascending
    /// by rate (ties: fewer streams first).
    pub fn build_modes(self) -> Vec<Mode> {
        let gis: &[bool] = if self.short_gi {
            &[false, true]
        } else {
            &[false]
        };
        let mut modes: Vec<Mode> = gis
            .iter()
            .flat_map(|&gi| {
                (1..=self.streams).flat_map(move |n| {
                    (0..10).filter_map(move |m| mode(self.vht, self.width_mhz, m, n, gi))
                })
            })
            .collect();
        modes.sort_by_key(|m| (m.rate, m.ht.map(|h| h.streams)));
        modes
    }

    /// [`HtPhy::build_modes`], built once per radio configuration and
    /// kept for the life of the process (there are at most 96).
    pub fn modes(self) -> &'static [Mode] {
        static TABLES: OnceLock<Mutex<HashMap<HtPhy, &'static [Mode]>>> = OnceLock::new();
        let tables = TABLES.get_or_init(Default::default);
        let mut tables = tables.lock().unwrap_or_else(|e| e.into_inner());
        tables
            .entry(self)
            .or_insert_with(|| Box::leak(self.build_modes().into_boxed_slice()))
    }

    /// The noise bandwidth relative to 20 MHz, dB: 10·log10(width / 20).
    pub fn noise_excess_db(self) -> f64 {
        10.0 * (f64::from(self.width_mhz) / 20.0).log10()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Dbm;

    fn mbps(vht: bool, width: u32, mcs: u8, n: u8, sgi: bool) -> f64 {
        mode(vht, width, mcs, n, sgi).map_or(0.0, |m| m.rate.0 as f64 / 1e6)
    }

    #[test]
    fn rates_match_the_standards_tables() {
        // HT 20 MHz one stream (table 19-27), long and short GI.
        let lgi: Vec<f64> = (0..8).map(|m| mbps(false, 20, m, 1, false)).collect();
        assert_eq!(lgi, [6.5, 13.0, 19.5, 26.0, 39.0, 52.0, 58.5, 65.0]);
        assert!((mbps(false, 20, 7, 1, true) - 72.2).abs() < 0.05);
        // HT 40 MHz: MCS 7 135 / 150 Mbit/s; two streams MCS 15: 270 / 300.
        assert_eq!(mbps(false, 40, 7, 1, false), 135.0);
        assert!((mbps(false, 40, 7, 1, true) - 150.0).abs() < 1e-5);
        assert_eq!(mbps(false, 40, 7, 2, false), 270.0);
        // VHT 80 MHz MCS 9: 390 Mbit/s one stream, 1560 four (long GI).
        assert_eq!(mbps(true, 80, 9, 1, false), 390.0);
        assert_eq!(mbps(true, 80, 9, 4, false), 1560.0);
        assert_eq!(mbps(true, 40, 9, 1, false), 180.0);
        // Invalid combinations (21.5).
        assert!(mode(true, 20, 9, 1, false).is_none());
        assert!(mode(true, 20, 9, 2, false).is_none());
        assert!(mode(true, 20, 9, 3, false).is_some());
        assert!(mode(true, 20, 9, 4, false).is_none());
        assert!(mode(true, 80, 6, 3, false).is_none());
        assert!(mode(false, 20, 8, 1, false).is_none());
        assert!(mode(false, 80, 0, 1, false).is_none());
        assert!(mode(true, 20, 0, 5, false).is_none());
    }

    #[test]
    fn encoders_follow_the_tables() {
        let nes = |vht, w, m, n| mode(vht, w, m, n, false).unwrap().ht.unwrap().encoders;
        // HT: two encoders above 300 Mbit/s (short GI): 40 MHz 3 streams
        // MCS 20 (270 Mbit/s) one, MCS 21 (360) two; 20 MHz MCS 31 one.
        assert_eq!(nes(false, 40, 4, 3), 1);
        assert_eq!(nes(false, 40, 5, 3), 2);
        assert_eq!(nes(false, 20, 7, 4), 1);
        // VHT 80 MHz MCS 9: 433, 867 and 1733 Mbit/s short GI.
        assert_eq!(nes(true, 80, 9, 1), 1);
        assert_eq!(nes(true, 80, 9, 2), 2);
        assert_eq!(nes(true, 80, 9, 4), 3);
    }

    #[test]
    fn airtime_of_preamble_and_data() {
        let ht = mode(false, 20, 7, 1, false).unwrap().ht.unwrap();
        assert_eq!(ht.preamble_us(), 36);
        // 1500 B: ⌈(12000 + 16 + 6) / 260⌉ = 47 symbols.
        assert_eq!(ht.data_us(1500, 260), 47 * 4);
        let sgi = mode(false, 20, 7, 1, true).unwrap().ht.unwrap();
        // 47 short symbols = 169.2 µs → 43 long symbols.
        assert_eq!(sgi.data_us(1500, 260), 172);
        let two = mode(false, 20, 0, 3, false).unwrap().ht.unwrap();
        assert_eq!(two.preamble_us(), 32 + 16);
        let vht = mode(true, 80, 0, 1, false).unwrap().ht.unwrap();
        assert_eq!(vht.preamble_us(), 40);
        // 1500 B + 4 B delimiter at 117 bits per symbol.
        assert_eq!(
            vht.data_us(1500, 117),
            4 * (8 * 1504 + 22_u64).div_ceil(117)
        );
    }

    #[test]
    fn channels_name_their_width() {
        let n = HtPhy {
            vht: false,
            band5: false,
            width_mhz: 20,
            streams: 1,
            short_gi: false,
        };
        let ac = HtPhy { vht: true, ..n };
        assert_eq!(
            n.on_channel(6).map(|p| (p.band5, p.width_mhz)),
            Ok((false, 20))
        );
        assert_eq!(
            n.on_channel(38).map(|p| (p.band5, p.width_mhz)),
            Ok((true, 40))
        );
        assert_eq!(n.on_channel(36).map(|p| p.width_mhz), Ok(20));
        assert_eq!(ac.on_channel(42).map(|p| p.width_mhz), Ok(80));
        assert!(n.on_channel(42).unwrap_err().contains("802.11ac"));
        assert!(ac.on_channel(11).unwrap_err().contains("5 GHz"));
        assert!((n.on_channel(46).unwrap().noise_excess_db() - 3.0103).abs() < 1e-3);
    }

    #[test]
    fn mode_lists_are_ascending_and_complete() {
        let p = HtPhy {
            vht: true,
            band5: true,
            width_mhz: 20,
            streams: 2,
            short_gi: true,
        };
        let modes = p.build_modes();
        // 2 GIs x (9 + 9) valid MCS (MCS 9 invalid for 1 and 2 streams).
        assert_eq!(modes.len(), 36);
        assert!(modes.windows(2).all(|w| w[0].rate <= w[1].rate));
        let s = mode(true, 20, 8, 1, false).unwrap().ht.unwrap();
        assert_eq!(s.min_sensitivity(20), Dbm(-59.0));
        assert_eq!(s.min_sensitivity(80), Dbm(-53.0));
    }
}
