//! Fast fading, the small-scale part of the channel after the chain of
//! loss stages: a sum of `FADING_PATHS` scattered paths with random arrival
//! angles and phases (drawn from the run stream), advanced by the sum of
//! the distances both ends have travelled, so the autocorrelation
//! approaches Jakes' `J0(2π Δu / λ)`, i.e. coherence time ∝ λ / speed.
//! Rician adds a line-of-sight path of relative power K. Static links keep
//! one fade per run. A frame is not one fade: [`FadingProcess::fades`] cuts it into
//! pieces over which the ends travel a tenth of a wavelength, each with
//! its own gain, so the PHY's SINR tracking sees every fade a long frame
//! spans.
//!
//! **Channel-estimate aging.** An 802.11a/g OFDM receiver learns the
//! channel once, from the two long training symbols of the preamble
//! (IEEE 802.11-2007 §17.3.3), and equalises every data symbol with that
//! estimate; its four pilot subcarriers track only a phase common to all
//! subcarriers (§17.3.5.8). Whatever of the channel changes after the
//! preamble and is not common to the subcarriers — the scattered paths,
//! which over a delay spread of a few hundred ns fade differently across
//! the 16.6 MHz band — is left as an error on every subcarrier. [`Fades`]
//! carries, per piece of a frame, the power of that change: |s(u) − s(u₀)|²
//! of the scattered sum s, at the middle of the piece, relative to the
//! power |h(u₀)|² the frame started with (the line-of-sight path, one
//! Doppler shift, is the common phase the pilots follow). Its mean is
//! 2·(1 − J₀(2π·Δu/λ))/(K + 1): at 140 mph closing speed on channel 1
//! (λ = 12.4 cm) the ends travel 2.3 cm during a 2304-byte frame at
//! 54 Mb/s, and with K = 3 dB the error at its end is 7 dB below the
//! signal. The PHY counts it as interference for OFDM payloads when the
//! radio estimates from the preamble only (`radio.ofdm_channel_estimate`).
//! DSSS and CCK need no estimate to carry: DBPSK and DQPSK are detected
//! differentially, and CCK differentially encodes the phase of each symbol
//! (§18.4.6.5).

use crate::rng::Stream;
use crate::units::{Db, Meters};
use std::f64::consts::PI;

pub(super) const FADING_PATHS: usize = 16;

/// Small-scale fading distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FadingKind {
    None,
    Rayleigh,
    /// Rician with K factor (ratio of line-of-sight to scattered power).
    Rician {
        k: Db,
    },
}

/// The draws of one link's fading process, from its run stream.
#[derive(Clone, Debug)]
pub(super) struct FadingDraws {
    /// (cos of arrival angle, phase) per scattered path.
    paths: [(f64, f64); FADING_PATHS],
    /// (cos of arrival angle, phase) of the line-of-sight path, if Rician.
    los: Option<(f64, f64)>,
}

impl FadingDraws {
    fn new(mut stream: Stream, rician: bool) -> FadingDraws {
        let paths = std::array::from_fn(|_| {
            (
                (2.0 * PI * stream.uniform()).cos(),
                2.0 * PI * stream.uniform(),
            )
        });
        let los = rician.then(|| {
            (
                (2.0 * PI * stream.uniform()).cos(),
                2.0 * PI * stream.uniform(),
            )
        });
        FadingDraws { paths, los }
    }
}

/// Sum-of-sinusoids fading process for one link. Its draws are redrawn from
/// the stream when asked for, unless the link holds them ([`Link::hold`]).
#[derive(Clone, Debug)]
pub(super) struct FadingProcess {
    stream: Stream,
    pub(super) held: Option<Box<FadingDraws>>,
    los_amplitude: f64,
    scatter_amplitude: f64,
}

impl FadingProcess {
    pub(super) fn new(kind: FadingKind, stream: Stream) -> Option<Self> {
        let (los_power, scatter_power) = match kind {
            FadingKind::None => return None,
            FadingKind::Rayleigh => (0.0, 1.0),
            FadingKind::Rician { k } => {
                let k = k.ratio();
                (k / (k + 1.0), 1.0 / (k + 1.0))
            }
        };
        let scatter_amplitude = (scatter_power / FADING_PATHS as f64).sqrt();
        Some(FadingProcess {
            stream,
            held: None,
            los_amplitude: los_power.sqrt(),
            scatter_amplitude,
        })
    }

    pub(super) fn draws(&self) -> FadingDraws {
        FadingDraws::new(self.stream.clone(), self.los_amplitude > 0.0)
    }

    /// Power gain |h|² (mean 1) after the ends have travelled `u` metres in total.
    pub(super) fn power_gain(&self, u: f64, lambda: f64) -> f64 {
        self.with_draws(|d| self.gain_with(d, u, lambda))
    }

    /// Calls `f` with the draws, held or redrawn.
    fn with_draws<T>(&self, f: impl FnOnce(&FadingDraws) -> T) -> T {
        match &self.held {
            Some(d) => f(d),
            None => f(&self.draws()),
        }
    }

    /// The scattered paths' sum (re, im) with the draws `d` after the ends
    /// have travelled `u` metres.
    fn scatter_with(&self, d: &FadingDraws, u: f64, lambda: f64) -> (f64, f64) {
        let beta = 2.0 * PI * u / lambda;
        let (mut re, mut im) = (0.0, 0.0);
        for &(c, ph) in &d.paths {
            let (s, co) = (beta * c + ph).sin_cos();
            re += co;
            im += s;
        }
        (re * self.scatter_amplitude, im * self.scatter_amplitude)
    }

    /// [`FadingProcess::power_gain`] with the draws `d`.
    fn gain_with(&self, d: &FadingDraws, u: f64, lambda: f64) -> f64 {
        self.gain_of_scatter(d, u, lambda, self.scatter_with(d, u, lambda))
    }

    /// [`FadingProcess::gain_with`], given the scattered paths' sum there.
    fn gain_of_scatter(&self, d: &FadingDraws, u: f64, lambda: f64, scatter: (f64, f64)) -> f64 {
        let beta = 2.0 * PI * u / lambda;
        let (mut re, mut im) = scatter;
        if let Some((c, ph)) = d.los {
            let (s, co) = (beta * c + ph).sin_cos();
            re += self.los_amplitude * co;
            im += self.los_amplitude * s;
        }
        re * re + im * im
    }
}

/// At most this many pieces of a frame see their own fade ([`Fades`]).
pub const MAX_FADE_CHUNKS: usize = 32;

/// The ends travel this fraction of a wavelength (together) per piece of a
/// frame: the fading's amplitude correlation over it, Jakes' J0(2π/10),
/// is 0.90, so one value per piece stands for the fade within it.
const FADE_CHUNK_WAVELENGTHS: f64 = 0.1;

/// How the fast fading changes over one frame: the frame's airtime cut
/// into equal pieces, each with its power gain relative to the frame's
/// start (the first piece is 1). A frame longer than the fading's
/// coherence time spans several fades; at 80 km/h a 1500-byte frame at
/// 1 Mb/s (12.5 ms) covers 2.3 wavelengths, about five coherence times
/// (0.423·λ/v), and is cut into 23 pieces. A link whose ends stand still
/// over the frame has one piece.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fades {
    chunks: u8,
    gains: [f32; MAX_FADE_CHUNKS],
    /// Per piece, the power of the scattered paths' change since the
    /// frame's start (its middle against its start), relative to the
    /// start's power: what an estimate from the preamble misses.
    aging: [f32; MAX_FADE_CHUNKS],
}

impl Fades {
    /// No change over the frame.
    pub const FLAT: Fades = Fades {
        chunks: 1,
        gains: [1.0; MAX_FADE_CHUNKS],
        aging: [0.0; MAX_FADE_CHUNKS],
    };

    /// Pieces with these gains (the first is the frame's start: 1).
    #[cfg(test)]
    pub fn from_gains(gains: &[f32]) -> Fades {
        let mut f = Fades::FLAT;
        f.chunks = gains.len() as u8;
        f.gains[..gains.len()].copy_from_slice(gains);
        f
    }

    /// Flat pieces with these estimate errors ([`Fades::aging`]).
    #[cfg(test)]
    pub fn from_aging(aging: &[f32]) -> Fades {
        let mut f = Fades::FLAT;
        f.chunks = aging.len() as u8;
        f.aging[..aging.len()].copy_from_slice(aging);
        f
    }

    /// The number of pieces the frame is cut into.
    pub fn chunks(&self) -> usize {
        usize::from(self.chunks)
    }

    /// Piece `k`'s power relative to the frame's start.
    pub fn gain(&self, k: usize) -> f64 {
        f64::from(self.gains[k])
    }

    /// Piece `k`'s channel-estimate error relative to the frame's starting
    /// power (module docs, "Channel-estimate aging").
    pub fn aging(&self, k: usize) -> f64 {
        f64::from(self.aging[k])
    }
}

impl FadingProcess {
    /// The fades at wavelength `lambda` of a frame over which the ends
    /// travel `travel` metres in total, starting with odometers summing to
    /// `start` ([`Fades`]); with `aging`, also what a channel estimate from
    /// the preamble misses ([`Fades::aging`]), which costs a second sum
    /// over the paths.
    pub(super) fn fades(&self, lambda: f64, start: Meters, travel: Meters, aging: bool) -> Fades {
        let f = self;
        if travel.0 <= 0.0 {
            return Fades::FLAT;
        }
        let step = FADE_CHUNK_WAVELENGTHS * lambda;
        let chunks = (travel.0 / step).ceil().clamp(1.0, MAX_FADE_CHUNKS as f64) as usize;
        if chunks == 1 && !aging {
            return Fades::FLAT;
        }
        let piece = travel.0 / chunks as f64;
        f.with_draws(|d| {
            // The scattered sum at the start serves both the first gain
            // and the estimate's reference.
            let s0 = f.scatter_with(d, start.0, lambda);
            let first = f.gain_of_scatter(d, start.0, lambda, s0).max(1e-12);
            let mut fades = Fades {
                chunks: chunks as u8,
                ..Fades::FLAT
            };
            for k in 1..chunks {
                fades.gains[k] =
                    (f.gain_with(d, start.0 + k as f64 * piece, lambda) / first) as f32;
            }
            if aging {
                let (s0re, s0im) = s0;
                for k in 0..chunks {
                    let (re, im) = f.scatter_with(d, start.0 + (k as f64 + 0.5) * piece, lambda);
                    fades.aging[k] = (((re - s0re).powi(2) + (im - s0im).powi(2)) / first) as f32;
                }
            }
            fades
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{test_channel, ChannelConfig, Link, PathLoss};
    use super::*;

    fn cfg(path_loss: PathLoss) -> ChannelConfig {
        test_channel(path_loss)
    }

    #[test]
    fn fades_cut_a_frame_into_tenths_of_a_wavelength() {
        let mut c = cfg(PathLoss::FreeSpace);
        c.fading = FadingKind::Rician { k: Db(0.0) };
        let link = Link::new(&c, "ap", "car", 1, 0);
        let lambda = c.wavelength();
        // Ends that stand still: one piece.
        assert_eq!(
            link.fades(&c, Meters(10.0), Meters(0.0), false),
            Fades::FLAT
        );
        // 12.5 ms at 80 km/h: 0.278 m, 2.3 wavelengths, 23 pieces, each
        // the process's gain at its start relative to the frame's start.
        let travel = 80.0 / 3.6 * 0.0125;
        let f = link.fades(&c, Meters(10.0), Meters(travel), false);
        assert_eq!(f.chunks(), (travel / (0.1 * lambda)).ceil() as usize);
        assert_eq!(f.chunks(), 23);
        let fp = link.fading.as_ref().unwrap();
        let g0 = fp.power_gain(10.0, lambda);
        for k in 0..f.chunks() {
            let expected = fp.power_gain(10.0 + k as f64 * travel / 23.0, lambda) / g0;
            assert!(
                (f.gain(k) - expected).abs() < 1e-5 * expected.max(1.0),
                "piece {k}"
            );
        }
        // At 180 km/h the frame is cut into the most pieces allowed.
        assert_eq!(
            link.fades(&c, Meters(10.0), Meters(180.0 / 3.6 * 0.0125), false)
                .chunks(),
            MAX_FADE_CHUNKS
        );
    }

    #[test]
    fn aging_is_the_scattered_change_at_each_piece_middle() {
        let mut c = cfg(PathLoss::FreeSpace);
        c.fading = FadingKind::Rician { k: Db(3.0) };
        let link = Link::new(&c, "east", "west", 1, 0);
        let lambda = c.wavelength();
        // 2.3 cm at 140 mph closing: a 2304-byte frame at 54 Mb/s.
        let travel = 0.023;
        let f = link.fades(&c, Meters(40.0), Meters(travel), true);
        let fp = link.fading.as_ref().unwrap();
        let d = fp.draws();
        let g0 = fp.gain_with(&d, 40.0, lambda);
        let (r0, i0) = fp.scatter_with(&d, 40.0, lambda);
        let piece = travel / f.chunks() as f64;
        assert_eq!(f.chunks(), 2);
        for k in 0..f.chunks() {
            let (r, i) = fp.scatter_with(&d, 40.0 + (k as f64 + 0.5) * piece, lambda);
            let want = ((r - r0).powi(2) + (i - i0).powi(2)) / g0;
            assert!(
                (f.aging(k) - want).abs() < 1e-5 * want.max(1e-3),
                "piece {k}: {} vs {want}",
                f.aging(k)
            );
            assert!(f.aging(k) > 0.0);
        }
        // Without aging asked for, none is computed; a frame short enough
        // for one piece then needs no fading sums at all.
        let plain = link.fades(&c, Meters(40.0), Meters(travel), false);
        assert_eq!(
            (plain.chunks(), plain.aging(0), plain.aging(1)),
            (2, 0.0, 0.0)
        );
        assert_eq!(
            link.fades(&c, Meters(40.0), Meters(0.5 * 0.1 * lambda), false),
            Fades::FLAT
        );
        // Ends that stand still carry no error; no fading, none either.
        assert_eq!(
            link.fades(&c, Meters(40.0), Meters(0.0), true).aging(0),
            0.0
        );
        assert_eq!(
            Link::new(&cfg(PathLoss::FreeSpace), "a", "b", 1, 0).fades(
                &c,
                Meters(0.0),
                Meters(1.0),
                true
            ),
            Fades::FLAT
        );
    }

    #[test]
    fn the_scattered_change_follows_jakes_on_average() {
        // E|s(u) - s(0)|^2 = 2 (1 - J0(2 pi u / lambda)) / (K + 1): at
        // u = 0.2 lambda, J0(1.25664) = 0.642512, so with K = 3 dB
        // (1.99526) it is 2 * 0.357488 / 2.99526 = 0.238702.
        let mut c = cfg(PathLoss::FreeSpace);
        c.fading = FadingKind::Rician { k: Db(3.0) };
        let lambda = c.wavelength();
        let n = 4000;
        let mut sum = 0.0;
        for i in 0..n {
            let link = Link::new(&c, "a", &format!("b{i}"), 5, 0);
            let fp = link.fading.as_ref().unwrap();
            let d = fp.draws();
            let (r0, i0) = fp.scatter_with(&d, 0.0, lambda);
            let (r1, i1) = fp.scatter_with(&d, 0.2 * lambda, lambda);
            sum += (r1 - r0).powi(2) + (i1 - i0).powi(2);
        }
        let mean = sum / n as f64;
        assert!((mean - 0.238702).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn rayleigh_fading_has_unit_mean_power_and_speed_sets_coherence() {
        let mut c = cfg(PathLoss::FreeSpace);
        c.fading = FadingKind::Rayleigh;
        let lambda = c.wavelength();
        let (mut mean, mut deep) = (0.0, 0.0);
        let n = 4000;
        for i in 0..n {
            let link = Link::new(&c, "a", &format!("b{i}"), 3, 0);
            let g = link.fading.as_ref().unwrap().power_gain(0.0, lambda);
            mean += g;
            if g < 0.1 {
                deep += 1.0;
            }
        }
        mean /= n as f64;
        // Exponential power: mean 1, P(g < 0.1) = 1 - e^-0.1 ~ 0.095.
        assert!((mean - 1.0).abs() < 0.08, "mean {mean}");
        assert!((deep / n as f64 - 0.095).abs() < 0.03);
        // Gains a hundredth of a wavelength apart are nearly equal; gains
        // several wavelengths apart are not.
        let link = Link::new(&c, "a", "b", 3, 0);
        let f = link.fading.as_ref().unwrap();
        let (g0, g_close) = (
            f.power_gain(0.0, lambda),
            f.power_gain(lambda / 100.0, lambda),
        );
        assert!((g0 - g_close).abs() < 0.1 * g0.max(0.1));
    }

    #[test]
    fn rician_with_large_k_barely_fades() {
        let mut c = cfg(PathLoss::FreeSpace);
        c.fading = FadingKind::Rician { k: Db(20.0) };
        let link = Link::new(&c, "a", "b", 3, 0);
        let f = link.fading.as_ref().unwrap();
        for i in 0..200 {
            let g = f.power_gain(i as f64 * 0.37, c.wavelength());
            assert!(Db::from_ratio(g).0.abs() < 2.5);
        }
    }
}
