//! Frame success probability from SINR: the [`ErrorModel`] trait and a
//! closed-form model of uncoded bit error rates plus a hard-decision Viterbi
//! union bound.
//!
//! # The closed-form model
//!
//! γ is the SINR as a linear ratio, after subtracting the implementation loss,
//! with noise taken over the channel's nominal bandwidth.
//!
//! DSSS/HR-DSSS, with Eb/N0 = γ · 11 Mchip/s / bit rate (the matched filter's
//! noise bandwidth is the chip rate; ns-3 uses 22 MHz, 3 dB more optimistic):
//! - 1 Mbps DBPSK: Pb = ½·exp(−Eb/N0).
//! - 2 Mbps DQPSK: M-DPSK symbol error Ps ≈ 2Q(√(2Es/N0)·sin(π/(√2·M)))
//!   with M = 4 and Gray mapping (Pb ≈ Ps/2) gives Pb ≈ Q(√(1.112·Eb/N0)).
//! - CCK 5.5 and 11 Mbps: coherent QPSK per bit, Pb ≈ Q(√(2·Eb/N0)). This
//!   ignores CCK's small coding gain and its code-word error structure, but
//!   keeps the required SINR ordered 1 < 2 < 5.5 < 11 Mbps.
//!
//! OFDM: the per-subcarrier Es/N0 is taken equal to γ. Exactly it is
//! γ · 64/52 (signal on 52 of 64 subcarriers, noise on all) · 0.8 (the guard
//! interval carries no information) = 0.985·γ, i.e. −0.07 dB; the same holds
//! at 10 MHz, where every duration doubles. With γ = Es/N0 and Gray mapping:
//! BPSK Pb = Q(√(2γ)), QPSK Pb = Q(√γ), square M-QAM
//! Pb ≈ (4/log2 M)(1 − 1/√M)·Q(√(3γ/(M−1))).
//!
//! 256-QAM (802.11ac) uses the square M-QAM formula with M = 256.
//!
//! Coded OFDM modes: K=7 (133,171) convolutional code, punctured for 2/3,
//! 3/4 and 5/6, hard-decision Viterbi decoding. With p the uncoded bit error rate,
//! Pb ≤ (1/k) Σ_d c_d·P_d(p), where P_d is the probability that a wrong path
//! at Hamming distance d wins:
//! P_d = Σ_{i>d/2} C(d,i) p^i (1−p)^(d−i), plus ½·C(d,d/2) p^(d/2) (1−p)^(d/2)
//! for even d. The first four terms (d: c_d) of the information-weight
//! spectra used throughout the literature (e.g. ns-3's NIST model):
//! R=1/2, k=1: 10:36, 12:211, 14:1404, 16:11633; R=2/3, k=2: 6:3, 7:70,
//! 8:285, 9:1276; R=3/4, k=3: 5:42, 6:201, 7:1492, 8:10469; R=5/6, k=5
//! (Haccoun and Bégin, IEEE Trans. Commun. 37(11), 1989, table V): 4:92,
//! 5:528, 6:8694, 7:79453.
//!
//! # HT and VHT: streams and antennas
//!
//! An HT/VHT mode is decoded per stream with the same formulas; every
//! stream carries the same MCS (19.5, 21.5). Receive diversity: with more
//! receive antennas N_rx than streams N_SS the SINR gains N_rx / N_SS
//! (maximum-ratio combining in AWGN, the gain ns-3's interference helper
//! applies). Spatial multiplexing needs a channel of rank N_SS: on a
//! line-of-sight path, uniform arrays spaced d_t and d_r only reach full
//! rank N when d_t·d_r ≥ λ·R / N (Bøhagen, Orten and Øien, IEEE Trans.
//! Wireless Commun. 6(4), 2007), which for the usual half-wavelength
//! spacing holds within λ/2 of the antenna: a line-of-sight channel has
//! rank 1 and a frame of several streams is lost. A richly scattering
//! channel has the full rank min(N_tx, N_rx) = N_rx ([`Mimo::rank`]).
//!
//! Every BER is clamped to [0, 0.5]; a chunk of n bits succeeds with
//! probability (1 − Pb)^n = exp(n·ln_1p(−Pb)). A NaN SINR succeeds with
//! probability 0. Q(x) = ½·erfc(x/√2), with erfc from Numerical Recipes.
//!
//! # SINR for 50 % success of a 1500-byte frame (12000 bits), 0 dB loss
//!
//! Computed by [`snr_threshold`] (test `threshold_table`), dB:
//!
//! | DSSS, b and g (Mbps)   | 1     | 2    | 5.5  | 11   |
//! |------------------------|-------|------|------|------|
//! | dB                     | −0.84 | 3.86 | 5.70 | 8.71 |
//!
//! | OFDM, a and g (Mbps)   | 6    | 9    | 12   | 18   | 24    | 36    | 48    | 54    |
//! |------------------------|------|------|------|------|-------|-------|-------|-------|
//! | 802.11p (Mbps)         | 3    | 4.5  | 6    | 9    | 12    | 18    | 24    | 27    |
//! | dB                     | 2.96 | 5.59 | 5.97 | 8.60 | 12.40 | 15.27 | 19.89 | 21.21 |
//!
//! 802.11p's modes use the same modulations and codes as the 20 MHz ones and
//! so need the same SINR; their gain is the 3 dB lower noise floor of a
//! 10 MHz channel. Hard-decision decoding is about 2 dB worse than the
//! soft-decision Viterbi decoders of real receivers, so the OFDM thresholds
//! are conservative by about that much.

use crate::phy::mode::{CodeRate, Mode, Modulation};
use crate::units::Db;

/// Link-level error model: how likely bits sent with a mode at a given SINR
/// survive.
pub trait ErrorModel {
    /// Probability that all `bits` payload bits sent with `mode` at constant
    /// `sinr` are received correctly. A frame whose SINR changes during
    /// reception succeeds with the product over its constant-SINR chunks.
    fn chunk_success(&self, mode: &Mode, sinr: Db, bits: u64) -> f64;
}

/// The available error models.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErrorModelKind {
    ClosedForm(ClosedForm),
}

impl Default for ErrorModelKind {
    fn default() -> Self {
        ErrorModelKind::ClosedForm(ClosedForm::default())
    }
}

impl ErrorModel for ErrorModelKind {
    fn chunk_success(&self, mode: &Mode, sinr: Db, bits: u64) -> f64 {
        match self {
            ErrorModelKind::ClosedForm(m) => m.chunk_success(mode, sinr, bits),
        }
    }
}

/// The closed-form model of the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClosedForm {
    /// Receiver implementation loss, subtracted from the SINR.
    pub implementation_loss: Db,
    /// Antennas and channel rank, for HT and VHT modes.
    pub mimo: Mimo,
}

/// The receiver's antennas and how many streams the channel separates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mimo {
    /// Receive antennas N_rx (also the transmit antennas).
    pub antennas: u8,
    /// The channel's rank: 1 on a line-of-sight path, `antennas` in rich
    /// scattering.
    pub rank: u8,
}

impl Mimo {
    /// One antenna: every legacy radio.
    pub const SISO: Mimo = Mimo {
        antennas: 1,
        rank: 1,
    };

    /// SINR per stream of a frame of `streams` streams at `sinr`, or
    /// `None` if the channel cannot separate that many.
    fn per_stream(self, streams: u8, sinr: Db) -> Option<Db> {
        if streams > self.rank.min(self.antennas) {
            None
        } else if self.antennas > streams {
            Some(Db(sinr.0
                + 10.0
                    * (f64::from(self.antennas) / f64::from(streams))
                        .log10()))
        } else {
            Some(sinr)
        }
    }
}

impl Default for Mimo {
    fn default() -> Self {
        Mimo::SISO
    }
}

impl ClosedForm {
    /// Post-decoding bit error rate of `mode` at `sinr`, in [0, 0.5]
    /// (0.5 for a NaN SINR).
    pub fn bit_error_rate(&self, mode: &Mode, sinr: Db) -> f64 {
        let Some(sinr) = self.stream_sinr(mode, sinr) else {
            return 0.5;
        };
        self.gamma(sinr).map_or(0.5, |gamma| ber(mode, gamma))
    }

    /// The SINR each stream of an HT/VHT frame sees ([`Mimo`]); `sinr`
    /// itself for a legacy mode.
    fn stream_sinr(&self, mode: &Mode, sinr: Db) -> Option<Db> {
        match mode.ht {
            Some(ht) => self.mimo.per_stream(ht.streams, sinr),
            None => Some(sinr),
        }
    }

    /// Linear SINR after the implementation loss; `None` if NaN.
    fn gamma(&self, sinr: Db) -> Option<f64> {
        let gamma = Db(sinr.0 - self.implementation_loss.0).ratio();
        (!gamma.is_nan()).then_some(gamma)
    }
}

impl ErrorModel for ClosedForm {
    fn chunk_success(&self, mode: &Mode, sinr: Db, bits: u64) -> f64 {
        let Some(sinr) = self.stream_sinr(mode, sinr) else {
            return 0.0;
        };
        match self.gamma(sinr) {
            Some(gamma) => match ber(mode, gamma) {
                0.0 => 1.0, // exp(bits · ln(1 − 0)), exactly
                ber => (bits as f64 * (-ber).ln_1p()).exp(),
            },
            None => 0.0,
        }
    }
}

/// DSSS chip rate, chips per second.
const CHIP_RATE: f64 = 11e6;

/// Bit error rate at linear SINR `gamma` (not NaN), clamped to [0, 0.5].
fn ber(mode: &Mode, gamma: f64) -> f64 {
    let ebn0 = gamma * CHIP_RATE / mode.rate.0 as f64;
    let uncoded = match mode.modulation {
        Modulation::Dbpsk => 0.5 * (-ebn0).exp(),
        Modulation::Dqpsk => q((1.112 * ebn0).sqrt()),
        Modulation::Cck55 | Modulation::Cck11 => q((2.0 * ebn0).sqrt()),
        Modulation::Bpsk => q((2.0 * gamma).sqrt()),
        Modulation::Qpsk => q(gamma.sqrt()),
        Modulation::Qam16 => qam(16.0, gamma),
        Modulation::Qam64 => qam(64.0, gamma),
        Modulation::Qam256 => qam(256.0, gamma),
    };
    let coded = match mode.code_rate {
        CodeRate::None => uncoded,
        rate => viterbi_union_bound(rate, uncoded.clamp(0.0, 0.5)),
    };
    coded.clamp(0.0, 0.5)
}

/// Gray-coded square M-QAM bit error rate at symbol SNR `gamma`.
fn qam(m: f64, gamma: f64) -> f64 {
    4.0 / m.log2() * (1.0 - 1.0 / m.sqrt()) * q((3.0 * gamma / (m - 1.0)).sqrt())
}

/// Hard-decision Viterbi union bound on the decoded bit error rate, given the
/// channel bit error rate `p`.
fn viterbi_union_bound(rate: CodeRate, p: f64) -> f64 {
    let (k, spectrum): (f64, [(u32, f64); 4]) = match rate {
        CodeRate::TwoThirds => (2.0, [(6, 3.0), (7, 70.0), (8, 285.0), (9, 1276.0)]),
        CodeRate::ThreeQuarters => (3.0, [(5, 42.0), (6, 201.0), (7, 1492.0), (8, 10469.0)]),
        CodeRate::FiveSixths => (5.0, [(4, 92.0), (5, 528.0), (6, 8694.0), (7, 79453.0)]),
        CodeRate::Half | CodeRate::None => {
            (1.0, [(10, 36.0), (12, 211.0), (14, 1404.0), (16, 11633.0)])
        }
    };
    spectrum
        .iter()
        .map(|&(d, c)| c * pairwise_error(d, p))
        .sum::<f64>()
        / k
}

/// Probability that a path at Hamming distance `d` beats the correct one
/// under hard decisions with channel bit error rate `p` (ties split evenly):
/// Σ_{i > d/2} C(d,i) pⁱ (1−p)^(d−i), plus half the i = d/2 term for even d.
/// Terms are built incrementally (this runs once per received frame chunk),
/// with the binomial coefficient and the steps between terms from tables.
fn pairwise_error(d: u32, p: f64) -> f64 {
    if p <= 0.0 {
        return 0.0;
    }
    let first = d.div_ceil(2);
    let ratio = p / (1.0 - p);
    let mut term =
        TERMS.first[d as usize] * p.powi(first as i32) * (1.0 - p).powi((d - first) as i32);
    let mut sum = if 2 * first == d { 0.5 * term } else { term };
    for step in &TERMS.step[d as usize][first as usize..d as usize] {
        term *= step * ratio;
        sum += term;
    }
    sum
}

/// The largest Hamming distance in the weight spectra.
const MAX_DISTANCE: usize = 16;

/// What [`pairwise_error`] multiplies by, for each distance d: C(d, ⌈d/2⌉),
/// and the step C(d, i+1)/C(d, i) = (d−i)/(i+1) from term i to term i+1.
struct Terms {
    first: [f64; MAX_DISTANCE + 1],
    step: [[f64; MAX_DISTANCE]; MAX_DISTANCE + 1],
}

const TERMS: Terms = {
    let mut t = Terms {
        first: [0.0; MAX_DISTANCE + 1],
        step: [[0.0; MAX_DISTANCE]; MAX_DISTANCE + 1],
    };
    let mut d = 0;
    while d <= MAX_DISTANCE {
        t.first[d] = binomial(d as u32, (d as u32).div_ceil(2));
        let mut i = 0;
        while i < d {
            t.step[d][i] = (d - i) as f64 / (i + 1) as f64;
            i += 1;
        }
        d += 1;
    }
    t
};

/// C(n, k), exact: each partial product C(n, i)·(n−i) is a whole multiple
/// of i+1, and every value here is far below 2⁵³.
const fn binomial(n: u32, k: u32) -> f64 {
    let (mut acc, mut i) = (1u64, 0);
    while i < k {
        acc = acc * (n - i) as u64 / (i + 1) as u64;
        i += 1;
    }
    acc as f64
}

/// Gaussian tail probability Q(x) = ½·erfc(x/√2).
fn q(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

/// Complementary error function, Chebyshev fit `erfcc` of Numerical Recipes
/// (Press et al., 2nd ed., §6.2): relative error below 1.2e-7 everywhere.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    if z >= 28.0 {
        // The exponent below is under -785, where exp is exactly 0 in f64
        // (it underflows below -745.2): the same answer, without the work.
        return if x >= 0.0 { 0.0 } else { 2.0 };
    }
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ]
    .iter()
    .rev()
    .fold(0.0, |acc, c| c + t * acc);
    let ans = t * (-z * z + poly).exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// SINR at which a frame of `bytes` bytes sent with `mode` succeeds with
/// probability `target_success`, found by bisection over −10…60 dB to
/// 1e-6 dB; the model must be non-decreasing in SINR. Returns −10 dB if the
/// target is met there already and 60 dB if it is not met at 60 dB (also for
/// a target above 1 or NaN).
pub fn snr_threshold(model: &impl ErrorModel, mode: &Mode, bytes: u32, target_success: f64) -> Db {
    let bits = 8 * u64::from(bytes);
    let meets = |db: f64| model.chunk_success(mode, Db(db), bits) >= target_success;
    let (mut lo, mut hi) = (-10.0, 60.0);
    if meets(lo) {
        return Db(lo);
    }
    if !meets(hi) {
        return Db(hi);
    }
    while hi - lo > 1e-6 {
        let mid = 0.5 * (lo + hi);
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Db(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mode::{ModClass, Standard};

    const MODEL: ClosedForm = ClosedForm {
        implementation_loss: Db(0.0),
        mimo: Mimo::SISO,
    };

    fn threshold(mode: &Mode) -> f64 {
        snr_threshold(&MODEL, mode, 1500, 0.5).0
    }

    #[test]
    fn erfc_matches_reference_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 1.842_700_792_949_714_8),
        ] {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1.2e-7,
                "erfc({x}) = {got}, want {want}"
            );
        }
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
    }

    #[test]
    fn union_bound_pairwise_terms() {
        // d = 3: 3p²(1−p) + p³; d = 2: p² + ½·2p(1−p).
        let p: f64 = 0.1;
        assert!((pairwise_error(3, p) - (3.0 * p * p * (1.0 - p) + p.powi(3))).abs() < 1e-15);
        assert!((pairwise_error(2, p) - (p * p + p * (1.0 - p))).abs() < 1e-15);
        assert_eq!(binomial(16, 8), 12870.0);
    }

    #[test]
    fn success_is_monotone_in_sinr_for_every_mode() {
        for standard in Standard::ALL {
            for mode in standard.modes() {
                let mut last = 0.0;
                for i in -120..=320 {
                    let s = MODEL.chunk_success(mode, Db(f64::from(i) * 0.25), 12_000);
                    assert!((0.0..=1.0).contains(&s));
                    assert!(
                        s >= last,
                        "{standard} {mode:?} at {} dB",
                        f64::from(i) * 0.25
                    );
                    last = s;
                }
                assert!(last > 0.999, "{standard} {mode:?} never succeeds");
            }
        }
    }

    #[test]
    fn longer_frames_fail_more() {
        for mode in Standard::G.modes() {
            let sinr = Db(threshold(mode));
            let short = MODEL.chunk_success(mode, sinr, 8 * 100);
            let long = MODEL.chunk_success(mode, sinr, 8 * 1500);
            assert!(short > long, "{mode:?}: {short} vs {long}");
        }
    }

    #[test]
    fn implementation_loss_shifts_thresholds() {
        let lossy = ClosedForm {
            implementation_loss: Db(3.0),
            ..MODEL
        };
        for mode in Standard::A.modes() {
            let shift = snr_threshold(&lossy, mode, 1500, 0.5).0 - threshold(mode);
            assert!((shift - 3.0).abs() < 1e-4, "{mode:?}: {shift}");
        }
        let kind = ErrorModelKind::ClosedForm(lossy);
        let mode = &Standard::A.modes()[0];
        assert_eq!(
            kind.chunk_success(mode, Db(5.0), 800),
            lossy.chunk_success(mode, Db(5.0), 800)
        );
    }

    #[test]
    fn never_panics_and_handles_extremes() {
        let mode = &Standard::G.modes()[11];
        assert_eq!(MODEL.chunk_success(mode, Db(f64::NAN), 100), 0.0);
        assert_eq!(MODEL.chunk_success(mode, Db(f64::NAN), 0), 0.0);
        assert_eq!(MODEL.bit_error_rate(mode, Db(f64::NAN)), 0.5);
        assert_eq!(MODEL.chunk_success(mode, Db(f64::INFINITY), u64::MAX), 1.0);
        let floor = MODEL.chunk_success(mode, Db(f64::NEG_INFINITY), 100);
        assert!((floor / 0.5_f64.powi(100) - 1.0).abs() < 1e-12);
        assert_eq!(MODEL.chunk_success(mode, Db(-300.0), u64::MAX), 0.0);
        assert_eq!(MODEL.chunk_success(mode, Db(10.0), 0), 1.0);
        let nan_loss = ClosedForm {
            implementation_loss: Db(f64::NAN),
            ..MODEL
        };
        assert_eq!(nan_loss.chunk_success(mode, Db(30.0), 100), 0.0);
        assert_eq!(snr_threshold(&MODEL, mode, 1500, f64::NAN), Db(60.0));
        assert_eq!(snr_threshold(&MODEL, mode, 1500, 2.0), Db(60.0));
        assert_eq!(snr_threshold(&MODEL, mode, 1500, 0.0), Db(-10.0));
    }

    #[test]
    fn thresholds_increase_with_rate_within_each_class() {
        for standard in Standard::ALL {
            for class in [ModClass::Dsss, ModClass::Ofdm] {
                let t: Vec<f64> = standard
                    .modes()
                    .iter()
                    .filter(|m| m.class == class)
                    .map(threshold)
                    .collect();
                assert!(
                    t.windows(2).all(|w| w[0] < w[1]),
                    "{standard} {class:?}: {t:?}"
                );
            }
        }
    }

    #[test]
    fn threshold_table() {
        for standard in Standard::ALL {
            for mode in standard.modes() {
                println!(
                    "{standard} {:>4} Mbps {:6.2} dB",
                    mode.rate.mbps(),
                    threshold(mode)
                );
            }
        }
        let at = |s: Standard, mbps: f64| threshold(&s.mode_by_mbps(mbps).unwrap());
        assert!(at(Standard::B, 1.0) < 0.0);
        assert!((7.0..11.0).contains(&at(Standard::B, 11.0)));
        assert!((2.0..7.0).contains(&at(Standard::A, 6.0)));
        assert!((18.0..26.0).contains(&at(Standard::A, 54.0)));
        assert_eq!(at(Standard::P, 3.0), at(Standard::A, 6.0));
        assert_eq!(at(Standard::G, 54.0), at(Standard::A, 54.0));
    }

    #[test]
    fn ht_thresholds_climb_with_mcs_and_match_legacy_codes() {
        use crate::phy::ht::mode;
        let t: Vec<f64> = (0..10)
            .map(|m| threshold(&mode(true, 80, m, 1, false).unwrap()))
            .collect();
        println!("VHT MCS 0-9, 1500 B, 50 %: {t:.2?} dB");
        assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
        // MCS 0 is BPSK 1/2 like 6 Mbit/s; 5/6 needs more than 3/4.
        assert!((t[0] - threshold(&Standard::A.modes()[0])).abs() < 0.05);
        assert!(t[7] - t[6] > 0.5 && t[9] - t[8] > 0.5, "{t:?}");
        assert!((25.0..35.0).contains(&t[9]), "{t:?}");
    }

    #[test]
    fn streams_need_rank_and_antennas_give_diversity() {
        use crate::phy::ht::mode;
        let (one, two) = (
            mode(false, 20, 4, 1, false).unwrap(),
            mode(false, 20, 4, 2, false).unwrap(),
        );
        let los = ClosedForm {
            mimo: Mimo {
                antennas: 2,
                rank: 1,
            },
            ..MODEL
        };
        let rich = ClosedForm {
            mimo: Mimo {
                antennas: 2,
                rank: 2,
            },
            ..MODEL
        };
        // Line of sight: two streams never decode; one stream gains 3 dB.
        assert_eq!(los.chunk_success(&two, Db(40.0), 8000), 0.0);
        let gain = threshold(&one) - snr_threshold(&los, &one, 1500, 0.5).0;
        assert!((gain - 3.0103).abs() < 1e-3, "{gain}");
        // Rich scattering: two streams at the SISO threshold of the MCS.
        let t2 = snr_threshold(&rich, &two, 1500, 0.5).0;
        assert!((t2 - threshold(&one)).abs() < 0.2, "{t2}");
        // A legacy mode ignores the antennas.
        let six = Standard::A.modes()[0];
        assert_eq!(
            los.chunk_success(&six, Db(3.0), 800),
            MODEL.chunk_success(&six, Db(3.0), 800)
        );
    }
}
