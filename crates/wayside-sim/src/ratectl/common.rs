//! Helpers shared by the rate-control algorithms: which standard a mode list
//! belongs to, the estimate of a frame's transmission time the algorithms
//! rank rates by (by the standard's timing, or as madwifi's SampleRate
//! computes it), retry-chain building and walking a finished chain attempt
//! by attempt.

use super::{RetryChain, Stage, MAX_STAGES};
use crate::phy::mode::{ModClass, Mode, Preamble, Standard};
use crate::units::SimTime;

/// The standard a mode list (ascending, as [`Standard::modes`] returns)
/// belongs to: an exact match first, else inferred from what it contains
/// (10 MHz OFDM → 802.11p; DSSS and OFDM → 802.11g; DSSS only → 802.11b;
/// 20 MHz OFDM only → 802.11a).
/// A periodic decision timer that, like the drivers' timers, runs on a fixed
/// grid: the first deadline is one interval after the first frame, and a
/// decision is due at the first frame at or after each deadline.
#[derive(Clone, Debug, Default)]
pub(crate) struct Periodic {
    next: Option<SimTime>,
}

impl Periodic {
    /// Whether a decision is due at `now`; if so, moves to the next deadline
    /// after `now` on the grid.
    pub(crate) fn due(&mut self, now: SimTime, interval: SimTime) -> bool {
        let interval = interval.max(SimTime::from_ns(1));
        let next = *self.next.get_or_insert(now + interval);
        if now < next {
            return false;
        }
        let periods = (now - next).as_ns() / interval.as_ns() + 1;
        self.next = Some(next + interval * periods);
        true
    }
}

pub(crate) fn standard_of(modes: &[Mode]) -> Standard {
    if let Some(s) = Standard::ALL.into_iter().find(|s| s.modes() == modes) {
        return s;
    }
    let dsss = modes.iter().any(|m| m.class == ModClass::Dsss);
    let ofdm = modes.iter().any(|m| m.class == ModClass::Ofdm);
    if modes.iter().any(|m| m.bandwidth_mhz == 10) {
        Standard::P
    } else if dsss && ofdm {
        Standard::G
    } else if dsss {
        Standard::B
    } else {
        Standard::A
    }
}

/// Whose rules an estimate of a frame's transmission time follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Estimate {
    /// The standard's own timing: the mode class's slot, SIFS and DIFS
    /// (DSSS/CCK modes 802.11b's, OFDM modes the standard's), mean backoff
    /// slot·CW/2 with CW doubling from CWmin each try, long preambles.
    Standard,
    /// madwifi 0.9's `calc_usecs_unicast_packet` in `ath_rate/sample`:
    /// 20 µs slot, 50 µs DIFS and 10 µs SIFS for DSSS/CCK, 9 µs slot and
    /// 28 µs DIFS for OFDM with an 8 µs SIFS (its OFDM case falls through to
    /// the turbo one), short preambles (`ath_hal_computetxtime(…, AH_TRUE)`),
    /// and a backoff that starts at `WIFI_CW_MIN` = 31 and doubles before
    /// each try is counted: slot·63/2 for the first, 127/2 the second, up to
    /// `WIFI_CW_MAX` = 1023.
    MadwifiSample,
}

/// The estimated time, in µs, one frame of `bytes` bytes takes at `mode`
/// when it needs `tries` transmissions (no RTS/CTS): one DIFS, then per try
/// the data frame, SIFS, an ACK at the control-response rate and the mean
/// backoff, by `rules`.
pub(crate) fn tx_time_us(
    rules: Estimate,
    standard: Standard,
    mode: Mode,
    bytes: u32,
    tries: u32,
) -> f64 {
    let us = |t: SimTime| t.as_ns() as f64 / 1_000.0;
    let (slot, sifs, difs, mut cw, cw_max, preamble) = match rules {
        Estimate::Standard => {
            let timing = match mode.class {
                ModClass::Dsss => Standard::B.timing(false),
                ModClass::Ofdm if standard == Standard::B => Standard::A.timing(false),
                ModClass::Ofdm => standard.timing(false),
            };
            let (slot, sifs, difs) = (us(timing.slot), us(timing.sifs), us(timing.difs));
            (
                slot,
                sifs,
                difs,
                timing.cw_min,
                timing.cw_max,
                Preamble::Long,
            )
        }
        Estimate::MadwifiSample => {
            let (slot, sifs, difs) = match mode.class {
                ModClass::Dsss => (20.0, 10.0, 50.0),
                ModClass::Ofdm => (9.0, 8.0, 28.0),
            };
            (slot, sifs, difs, 2 * 31 + 1, 1023, Preamble::Short)
        }
    };
    let data = us(mode.airtime(bytes, preamble, standard));
    let ack = us(standard.control_rate(mode).airtime(14, preamble, standard));
    let mut tt = difs;
    for _ in 0..tries {
        tt += data + sifs + ack + slot * f64::from(cw) / 2.0;
        cw = (2 * cw + 1).min(cw_max);
    }
    tt
}

/// Index of `mode` in `modes`, if present.
pub(crate) fn index_of(modes: &[Mode], mode: Mode) -> Option<usize> {
    modes.iter().position(|m| *m == mode)
}

/// Index of the highest mode of at most `mbps` (0 if none is that low).
pub(crate) fn highest_at_most(modes: &[Mode], mbps: f64) -> usize {
    modes
        .iter()
        .rposition(|m| m.rate.mbps() <= mbps + 1e-9)
        .unwrap_or(0)
}

/// Builds a chain from (mode index, tries) stages, skipping stages with no
/// tries and keeping at most [`MAX_STAGES`]. Reuses `chain`'s allocation.
pub(crate) fn fill_chain(chain: &mut RetryChain, modes: &[Mode], stages: &[(usize, u8)]) {
    chain.stages.clear();
    for &(i, tries) in stages {
        if tries > 0 && chain.stages.len() < MAX_STAGES {
            chain.stages.push(Stage {
                mode: modes[i],
                tries,
            });
        }
    }
}

/// A chain from (mode index, tries) stages (see [`fill_chain`]).
pub(crate) fn chain_of(modes: &[Mode], stages: &[(usize, u8)]) -> RetryChain {
    let mut c = RetryChain {
        stages: Vec::with_capacity(MAX_STAGES),
    };
    fill_chain(&mut c, modes, stages);
    c
}

/// The stages a finished chain actually used: for each stage reached, its
/// index, mode and the number of attempts made in it. The last item is the
/// stage of the final attempt (the acknowledged one if the frame was acked).
pub(crate) fn stages_used(
    chain: &RetryChain,
    attempts: u32,
) -> impl Iterator<Item = (usize, Mode, u32)> + '_ {
    let mut left = attempts;
    chain.stages.iter().enumerate().filter_map(move |(i, s)| {
        if left == 0 {
            return None;
        }
        let n = left.min(u32::from(s.tries));
        left -= n;
        Some((i, s.mode, n))
    })
}

#[cfg(test)]
pub(crate) mod testing {
    //! A synthetic channel for driving an algorithm through
    //! `retry_chain`/`report`: each attempt at mode index `i` succeeds with
    //! probability `p[i]`.

    use super::super::{RateControl, RetryChain, TxRequest, TxStatus};
    use crate::geometry::Vec2;
    use crate::phy::mode::Mode;
    use crate::rng::Stream;
    use crate::units::{Db, Dbm, SimTime};

    pub struct Channel {
        pub modes: &'static [Mode],
        pub p: Vec<f64>,
        pub rng: Stream,
        pub now: SimTime,
        /// Time between frames.
        pub gap: SimTime,
        pub bytes: u32,
        pub rssi: Option<Dbm>,
        pub mean_snr: Db,
        pub tx_power: Dbm,
        pub position: Vec2,
        pub peer_position: Option<Vec2>,
    }

    impl Channel {
        pub fn new(modes: &'static [Mode], p: Vec<f64>) -> Channel {
            Channel {
                modes,
                p,
                rng: Stream::new("run", 7, 0, "test/channel"),
                now: SimTime::ZERO,
                gap: SimTime::from_ms(1),
                bytes: 1528,
                rssi: None,
                mean_snr: Db(30.0),
                tx_power: Dbm(15.0),
                position: Vec2::default(),
                peer_position: None,
            }
        }

        pub fn request(&self) -> TxRequest {
            TxRequest {
                now: self.now,
                bytes: self.bytes,
                rssi: self.rssi,
                mean_snr: Some(self.mean_snr),
                tx_power: self.tx_power,
                position: self.position,
                peer_position: self.peer_position,
            }
        }

        /// Sends one frame: asks for a chain, walks it against the channel,
        /// reports, advances time. Returns the chain and the status.
        pub fn send(&mut self, rc: &mut impl RateControl) -> (RetryChain, TxStatus) {
            let chain = rc.retry_chain(&self.request());
            let mut attempts = 0;
            let mut acked = false;
            'outer: for s in &chain.stages {
                let i = super::index_of(self.modes, s.mode).expect("mode of the list");
                for _ in 0..s.tries {
                    attempts += 1;
                    if self.rng.uniform() < self.p[i] {
                        acked = true;
                        break 'outer;
                    }
                }
            }
            let status = TxStatus {
                now: self.now,
                bytes: self.bytes,
                chain: chain.clone(),
                attempts,
                acked,
                ampdu: None,
            };
            rc.report(&status);
            self.now += self.gap;
            (chain, status)
        }

        /// Success probabilities that are 1 up to and including `mbps` and
        /// 0 above.
        pub fn cliff(modes: &[Mode], mbps: f64) -> Vec<f64> {
            modes
                .iter()
                .map(|m| {
                    if m.rate.mbps() <= mbps + 1e-9 {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect()
        }
    }

    pub fn mbps(chain: &RetryChain) -> Vec<(f64, u8)> {
        chain
            .stages
            .iter()
            .map(|s| (s.mode.rate.mbps(), s.tries))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standards_are_recognised() {
        for s in Standard::ALL {
            assert_eq!(standard_of(s.modes()), s);
        }
        assert_eq!(standard_of(&Standard::G.modes()[3..]), Standard::G);
        assert_eq!(standard_of(&Standard::A.modes()[2..]), Standard::A);
    }

    #[test]
    fn tx_time_grows_with_tries_and_falls_with_rate() {
        let g = Standard::G.modes();
        let t1 = tx_time_us(Estimate::Standard, Standard::G, g[11], 1528, 1);
        let t2 = tx_time_us(Estimate::Standard, Standard::G, g[11], 1528, 2);
        assert!(t2 > 2.0 * t1 - 28.0 - 1.0, "{t1} {t2}");
        // 54 Mbps lossless: DIFS 28 + 254 µs data + SIFS 10 + ACK at 24 Mbps
        // (20 + 2 symbols·4 + 6 = 34) + 9·15/2 = 67.5 backoff.
        assert!(
            (t1 - (28.0 + 254.0 + 10.0 + 34.0 + 67.5)).abs() < 1e-9,
            "{t1}"
        );
        let mut last = f64::INFINITY;
        for m in Standard::A.modes() {
            let t = tx_time_us(Estimate::Standard, Standard::A, *m, 1528, 1);
            assert!(t < last);
            last = t;
        }
    }

    /// madwifi's estimate, by hand from its rules.
    #[test]
    fn madwifi_sample_estimate_follows_the_driver() {
        let g = Standard::G.modes();
        let t = |i: usize, bytes, tries| {
            tx_time_us(Estimate::MadwifiSample, Standard::G, g[i], bytes, tries)
        };
        // 54 Mbps, 1600 bytes, one try: DIFS 28 + data (20 + 60 symbols·4
        // + 6 = 266) + SIFS 8 + ACK at 24 Mbps (20 + 2·4 + 6 = 34) + 9·63/2.
        let one = 28.0 + 266.0 + 8.0 + 34.0 + 9.0 * 63.0 / 2.0;
        assert!((t(11, 1600, 1) - one).abs() < 1e-9, "{}", t(11, 1600, 1));
        // A second try adds the frame again and 9·127/2 of backoff.
        let two = one + 266.0 + 8.0 + 34.0 + 9.0 * 127.0 / 2.0;
        assert!((t(11, 1600, 2) - two).abs() < 1e-9, "{}", t(11, 1600, 2));
        // 11 Mbps CCK, 250 bytes: DIFS 50 + short preamble 96 + 250·8/11
        // + SIFS 10 + ACK at 11 Mbps (96 + 14·8/11) + 20·63/2.
        let cck = 50.0 + 96.0 + 2000.0 / 11.0 + 10.0 + 96.0 + 112.0 / 11.0 + 630.0;
        // (each CCK PPDU rounds up to a whole µs: up to 1 µs each)
        assert!((t(5, 250, 1) - cck).abs() < 2.0, "{}", t(5, 250, 1));
    }

    #[test]
    fn stages_used_splits_attempts() {
        let g = Standard::G.modes();
        let c = chain_of(g, &[(11, 2), (9, 3), (0, 3)]);
        let v: Vec<(usize, u32)> = stages_used(&c, 4).map(|(i, _, n)| (i, n)).collect();
        assert_eq!(v, [(0, 2), (1, 2)]);
        assert_eq!(stages_used(&c, 0).count(), 0);
        assert_eq!(chain_of(g, &[(11, 0), (0, 2)]).stages.len(), 1);
    }
}
