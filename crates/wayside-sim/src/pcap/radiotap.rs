//! The radiotap header in front of each captured frame: what the radio
//! saw of it. Fields, in the order and alignment the radiotap standard
//! fixes (all little-endian): TSFT (µs), Flags, Rate (500 kb/s units),
//! Channel (MHz and flags), then antenna signal and noise (dBm) on frames
//! heard, or transmit power (dBm) on frames sent.

use crate::phy::mode::ModClass;

/// Radiotap `present` bits.
const TSFT: u32 = 1 << 0;
const FLAGS: u32 = 1 << 1;
const RATE: u32 = 1 << 2;
const CHANNEL: u32 = 1 << 3;
const DBM_ANTSIGNAL: u32 = 1 << 5;
const DBM_ANTNOISE: u32 = 1 << 6;
const DBM_TX_POWER: u32 = 1 << 10;

/// Flags: the frame was sent with the short DSSS preamble.
pub const FLAG_SHORT_PREAMBLE: u8 = 0x02;
/// Flags: the frame ends with its 4-byte FCS.
pub const FLAG_FCS: u8 = 0x10;
/// Flags: the FCS check failed.
pub const FLAG_BAD_FCS: u8 = 0x40;

/// Channel flags.
const CHAN_CCK: u16 = 0x0020;
const CHAN_OFDM: u16 = 0x0040;
const CHAN_2GHZ: u16 = 0x0080;
const CHAN_5GHZ: u16 = 0x0100;
const CHAN_HALF_RATE: u16 = 0x4000;

/// The radio side of one captured frame.
#[derive(Clone, Copy, Debug)]
pub struct RadioInfo {
    pub tsft_us: u64,
    pub flags: u8,
    pub rate_mbps: f64,
    pub freq_mhz: u16,
    pub class: ModClass,
    /// Channel width, MHz (10 for 802.11p).
    pub bandwidth_mhz: u32,
    /// Heard: (signal, noise) dBm. Sent: `None`, and `tx_power_dbm` is written.
    pub heard: Option<(f64, f64)>,
    pub tx_power_dbm: f64,
}

/// A dBm figure as radiotap's signed byte.
fn dbm_byte(v: f64) -> u8 {
    (v.round().clamp(-128.0, 127.0) as i8) as u8
}

impl RadioInfo {
    /// Channel flags for the band, modulation and width.
    pub fn channel_flags(&self) -> u16 {
        let band = if self.freq_mhz < 3000 {
            CHAN_2GHZ
        } else {
            CHAN_5GHZ
        };
        let modulation = match self.class {
            ModClass::Dsss => CHAN_CCK,
            ModClass::Ofdm => CHAN_OFDM,
        };
        let width = if self.bandwidth_mhz == 10 {
            CHAN_HALF_RATE
        } else {
            0
        };
        band | modulation | width
    }

    /// Appends the header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let tail = if self.heard.is_some() {
            DBM_ANTSIGNAL | DBM_ANTNOISE
        } else {
            DBM_TX_POWER
        };
        let present = TSFT | FLAGS | RATE | CHANNEL | tail;
        // version 0, pad, length (filled in below), present; TSFT is then
        // at offset 8, already 8-byte aligned.
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&present.to_le_bytes());
        out.extend_from_slice(&self.tsft_us.to_le_bytes());
        out.push(self.flags);
        out.push((self.rate_mbps * 2.0).round() as u8);
        out.extend_from_slice(&self.freq_mhz.to_le_bytes());
        out.extend_from_slice(&self.channel_flags().to_le_bytes());
        match self.heard {
            Some((signal, noise)) => out.extend_from_slice(&[dbm_byte(signal), dbm_byte(noise)]),
            None => out.push(dbm_byte(self.tx_power_dbm)),
        }
        let len = (out.len() - start) as u16;
        out[start + 2..start + 4].copy_from_slice(&len.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_heard_frame_layout() {
        let info = RadioInfo {
            tsft_us: 0x0102_0304_0506_0708,
            flags: FLAG_FCS | FLAG_BAD_FCS,
            rate_mbps: 5.5,
            freq_mhz: 2437,
            class: ModClass::Dsss,
            bandwidth_mhz: 22,
            heard: Some((-71.4, -95.0)),
            tx_power_dbm: f64::NAN,
        };
        let mut v = vec![0xee];
        info.write(&mut v);
        let h = &v[1..];
        assert_eq!(h.len(), 24);
        assert_eq!(u16::from_le_bytes([h[2], h[3]]), 24);
        assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 0b110_1111);
        assert_eq!(
            u64::from_le_bytes(h[8..16].try_into().unwrap()),
            0x0102_0304_0506_0708
        );
        assert_eq!((h[16], h[17]), (0x50, 11));
        assert_eq!(u16::from_le_bytes([h[18], h[19]]), 2437);
        assert_eq!(u16::from_le_bytes([h[20], h[21]]), CHAN_2GHZ | CHAN_CCK);
        assert_eq!((h[22] as i8, h[23] as i8), (-71, -95));
    }

    #[test]
    fn test_sent_frame_has_tx_power_and_80211p_flags() {
        let info = RadioInfo {
            tsft_us: 1,
            flags: FLAG_FCS,
            rate_mbps: 4.5,
            freq_mhz: 5890,
            class: ModClass::Ofdm,
            bandwidth_mhz: 10,
            heard: None,
            tx_power_dbm: 20.0,
        };
        let mut v = Vec::new();
        info.write(&mut v);
        assert_eq!(v.len(), 23);
        assert_eq!(
            u32::from_le_bytes(v[4..8].try_into().unwrap()),
            TSFT | FLAGS | RATE | CHANNEL | DBM_TX_POWER
        );
        assert_eq!(v[17], 9);
        assert_eq!(
            u16::from_le_bytes([v[20], v[21]]),
            CHAN_5GHZ | CHAN_OFDM | CHAN_HALF_RATE
        );
        assert_eq!(v[22] as i8, 20);
    }
}
