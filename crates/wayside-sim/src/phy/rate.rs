//! One transmission mode as a value: its modulation, code rate and class,
//! its rate and width, and what an HT or VHT mode adds (MCS, streams,
//! guard interval, preamble and data airtime, sensitivity). The tables
//! that list the modes of each standard are in [`super::mode`] (legacy)
//! and [`super::ht`] (802.11n/ac).

use crate::units::{Bitrate, Dbm};

/// Modulation of the data part of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Modulation {
    /// Differential BPSK over an 11-chip Barker code (1 Mbps).
    Dbpsk,
    /// Differential QPSK over an 11-chip Barker code (2 Mbps).
    Dqpsk,
    /// Complementary code keying, 4 bits per 8-chip symbol (5.5 Mbps).
    Cck55,
    /// Complementary code keying, 8 bits per 8-chip symbol (11 Mbps).
    Cck11,
    Bpsk,
    Qpsk,
    Qam16,
    Qam64,
    /// 802.11ac MCS 8 and 9.
    Qam256,
}

/// Rate of the K=7 convolutional code; `None` for the uncoded DSSS modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeRate {
    None,
    Half,
    TwoThirds,
    ThreeQuarters,
    /// HT/VHT MCS 7 and 9.
    FiveSixths,
}

/// Modulation class; control responses stay within the class of the frame
/// they answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModClass {
    /// DSSS and HR/DSSS (CCK).
    Dsss,
    /// OFDM, including ERP-OFDM and 10 MHz OFDM.
    Ofdm,
}

/// One transmission mode (rate) of a standard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mode {
    pub rate: Bitrate,
    pub modulation: Modulation,
    pub code_rate: CodeRate,
    pub class: ModClass,
    /// Channel width: 22 for DSSS, 20 for OFDM, 10 for 802.11p.
    pub bandwidth_mhz: u32,
    /// OFDM data bits per symbol (N_DBPS), over all streams; 0 for DSSS.
    pub data_bits_per_symbol: u32,
    /// MCS, streams and guard interval of an HT or VHT mode.
    pub ht: Option<HtMode>,
}

/// What an HT or VHT [`Mode`] adds to a legacy one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HtMode {
    pub vht: bool,
    /// MCS index within a stream count: 0–7 (HT) or 0–9 (VHT).
    pub mcs: u8,
    pub streams: u8,
    pub short_gi: bool,
    /// The HT-/VHT-LTFs the preamble carries.
    pub ltfs: u8,
    /// BCC encoders N_ES.
    pub encoders: u8,
}

impl HtMode {
    /// Airtime in µs of the preamble up to the data symbols.
    pub fn preamble_us(self) -> u64 {
        let ltf = 4 * u64::from(self.ltfs);
        if self.vht {
            16 + 4 + 8 + 4 + ltf + 4
        } else {
            16 + 4 + 8 + 4 + ltf
        }
    }

    /// Airtime in µs of the data symbols carrying a PSDU of `psdu_bytes`
    /// bytes (for VHT, the MPDU without its A-MPDU delimiter), at
    /// `dbps` data bits per symbol.
    pub fn data_us(self, psdu_bytes: u32, dbps: u32) -> u64 {
        let delimiter = if self.vht { 4 } else { 0 };
        let bits = 8 * u64::from(psdu_bytes + delimiter) + 16 + 6 * u64::from(self.encoders);
        let symbols = bits.div_ceil(u64::from(dbps.max(1)));
        if self.short_gi {
            // ⌈3.6 µs · N_SYM / 4 µs⌉ whole 4 µs symbols.
            4 * (9 * symbols).div_ceil(10)
        } else {
            4 * symbols
        }
    }

    /// The standard's minimum input sensitivity at `width_mhz`.
    pub fn min_sensitivity(self, width_mhz: u32) -> Dbm {
        const TWENTY: [f64; 10] = [
            -82.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0, -64.0, -59.0, -57.0,
        ];
        let wider = 10.0 * (f64::from(width_mhz) / 20.0).log10();
        Dbm(TWENTY[usize::from(self.mcs.min(9))] + wider.round())
    }
}
