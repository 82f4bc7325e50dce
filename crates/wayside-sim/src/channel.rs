//! The radio channel, as a chain of analogue models applied to every link:
//! deterministic path loss (free space, two-ray ground, log-distance) plus
//! antenna gains and the loss of buildings on the line of sight
//! ([`crate::obstacles`]), then log-normal shadowing that is spatially correlated and
//! frozen per *environment seed*, then fast fading (Rayleigh or Rician) whose
//! time correlation follows the distance the ends travel, hence speed and
//! carrier frequency. Also the thermal noise floor and propagation delay.
//!
//! **Shadowing.** Each unordered pair of nodes (by stable name) has its own
//! Gaussian random field, a sum of `SHADOWING_COMPONENTS` random sinusoids whose
//! wave vectors are drawn from the spectrum of Gudmundson's exponential
//! correlation `exp(-d / d_c)` (a random Fourier feature field). The field is
//! evaluated at the midpoint of the link with half the decorrelation distance,
//! so that when one end is fixed (an AP) the correlation along the other end's
//! path is exactly `exp(-d / d_c)`; the field is reciprocal. Its draws come
//! from the environment stream, so a given car–AP pair sees the same
//! large-scale signal on every pass regardless of the run seed. The field is
//! clipped at ±`SHADOWING_CLIP`·σ = ±4σ, so that the strongest signal a link
//! can carry has a bound ([`ChannelConfig::max_excess_gain`]). A Gaussian
//! exceeds ±4σ with probability 6.3·10⁻⁵; the sum of 32 sinusoids, bounded
//! by ±8σ, does so with about 4·10⁻⁵ (2·10⁷ random-phase draws), so the clip
//! changes about one value in 25,000, and only by what lies beyond 4σ.
//!
//! **Per-run offset.** On top of the frozen field, each link gets one
//! Gaussian offset per run (σ = `run_shadowing_sigma`, from the run stream,
//! clipped at ±4σ like the field): what changes between passes over the
//! same road and stays for the whole pass — the lane and direction (runs
//! alternate, so the car's roof and body face the AP differently), the
//! antenna's mounting, other traffic. It leaves the shape of the signal
//! along the road alone and moves a whole pass up or down.
//!
//! **Memory.** A link keeps only the seeded streams its draws come from and
//! the last shadowing value; the draws are redrawn when the link is
//! evaluated, until the medium asks the link to hold them (it does for links
//! that carry frames). Held or not, the values are the same.
//!
//! **Fast fading.** A sum of `FADING_PATHS` scattered paths with random
//! arrival angles and phases (drawn from the run stream), advanced by the sum
//! of the distances both ends have travelled: the autocorrelation approaches
//! Jakes' `J0(2π Δu / λ)`, i.e. coherence time ∝ λ / speed. Rician adds a
//! line-of-sight path of relative power K. Static links keep one fade per run.
//! A frame is not one fade: [`Link::fades`] cuts it into pieces over which
//! the ends travel a tenth of a wavelength, each with its own gain, so the
//! PHY's SINR tracking sees every fade a long frame spans.
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

use crate::geometry::Vec2;
use crate::obstacles::Obstacles;
use crate::rng::Stream;
use crate::units::{Db, Dbm, Hertz, Meters, SimTime};
use std::f64::consts::PI;
use std::sync::Arc;

pub const SPEED_OF_LIGHT: f64 = 299_792_458.0;
const SHADOWING_COMPONENTS: usize = 32;
const FADING_PATHS: usize = 16;
/// Path-loss models are evaluated no closer than this (near field).
const MIN_DISTANCE: f64 = 1.0;

/// Deterministic large-scale path loss.
#[derive(Clone, Debug, PartialEq)]
pub enum PathLoss {
    FreeSpace,
    /// Free space up to the crossover distance 4π·h_t·h_r/λ, then d⁻⁴.
    TwoRayGround,
    /// Free space up to `reference`, then `10·exponent·log10(d/reference)`.
    LogDistance {
        exponent: f64,
        reference: Meters,
    },
    /// Free space up to `reference`, then three log-distance slopes with
    /// exponents `exponents[0..3]` changing at `breakpoints[0]` and
    /// `breakpoints[1]` (ns-3's ThreeLogDistancePropagationLossModel); a
    /// steep last slope stands for terrain or vegetation that ends coverage.
    ThreeLogDistance {
        exponents: [f64; 3],
        breakpoints: [Meters; 2],
        reference: Meters,
    },
}

impl PathLoss {
    /// Loss in dB between antennas at heights `ht`, `hr` separated by `d`
    /// horizontally, at wavelength `lambda`.
    pub fn loss(&self, d: Meters, ht: Meters, hr: Meters, lambda: f64) -> Db {
        let d = d.0.max(MIN_DISTANCE);
        let fspl = |d: f64| 20.0 * (4.0 * PI * d / lambda).log10();
        match *self {
            PathLoss::FreeSpace => Db(fspl(d)),
            PathLoss::TwoRayGround => {
                let crossover = 4.0 * PI * ht.0 * hr.0 / lambda;
                if d <= crossover {
                    Db(fspl(d))
                } else {
                    Db(40.0 * d.log10() - 20.0 * (ht.0 * hr.0).log10())
                }
            }
            PathLoss::LogDistance {
                exponent,
                reference,
            } => {
                let d0 = reference.0.max(MIN_DISTANCE);
                if d <= d0 {
                    Db(fspl(d))
                } else {
                    Db(fspl(d0) + 10.0 * exponent * (d / d0).log10())
                }
            }
            PathLoss::ThreeLogDistance {
                exponents,
                breakpoints,
                reference,
            } => {
                let d0 = reference.0.max(MIN_DISTANCE);
                if d <= d0 {
                    return Db(fspl(d));
                }
                let edges = [
                    d0,
                    breakpoints[0].0.max(d0),
                    breakpoints[1].0.max(breakpoints[0].0).max(d0),
                    f64::INFINITY,
                ];
                let mut loss = fspl(d0);
                for (k, n) in exponents.iter().enumerate() {
                    let (lo, hi) = (edges[k], edges[k + 1].min(d));
                    if hi > lo {
                        loss += 10.0 * n * (hi / lo).log10();
                    }
                }
                Db(loss)
            }
        }
    }
}

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

/// Channel configuration shared by every link.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelConfig {
    pub path_loss: PathLoss,
    /// A fixed loss on every link on top of the path loss (ns-3's Friis
    /// `SystemLoss`): cables, connectors, mounting — what the geometry does
    /// not explain.
    pub system_loss: Db,
    /// Standard deviation of log-normal shadowing; 0 disables it.
    pub shadowing_sigma: Db,
    /// Standard deviation of the per-run offset of every link; 0 disables it.
    pub run_shadowing_sigma: Db,
    pub decorrelation: Meters,
    pub fading: FadingKind,
    pub frequency: Hertz,
    pub noise_floor: Dbm,
    pub environment_seed: u64,
    /// Buildings on the line of sight ([`crate::obstacles`]).
    pub obstacles: Arc<Obstacles>,
}

impl ChannelConfig {
    pub fn wavelength(&self) -> f64 {
        SPEED_OF_LIGHT / self.frequency.0
    }

    /// The most shadowing and fast fading together can add to the mean
    /// received power: the shadowing field and the per-run offset at their
    /// clips, [`SHADOWING_CLIP`]·σ each, and every fading path at its peak
    /// at once ((√(K/(K+1)) + √(M/(K+1)))² for M scattered paths, K = 0 if
    /// Rayleigh).
    pub fn max_excess_gain(&self) -> Db {
        Db(
            SHADOWING_CLIP * (self.shadowing_sigma.0 + self.run_shadowing_sigma.0)
                + self.max_fading_gain().0,
        )
    }

    /// The most fast fading can add to the received power: every path in
    /// phase.
    pub fn max_fading_gain(&self) -> Db {
        let m = FADING_PATHS as f64;
        Db(match self.fading {
            FadingKind::None => 0.0,
            FadingKind::Rayleigh => 10.0 * m.log10(),
            FadingKind::Rician { k } => {
                let k = k.ratio();
                10.0 * ((k / (k + 1.0)).sqrt() + (m / (k + 1.0)).sqrt())
                    .powi(2)
                    .log10()
            }
        })
    }

    /// The distance beyond which no signal can arrive above `floor`: a
    /// sender of at most `eirp` (power plus antenna gain), a receiver
    /// antenna of at most `rx_gain`, antennas at most `height` high (the
    /// least path loss), and shadowing and fading at their peak.
    pub fn reach(&self, eirp: Dbm, rx_gain: Db, height: Meters, floor: Dbm) -> Meters {
        let budget = eirp.0 + rx_gain.0 + self.max_excess_gain().0 - self.system_loss.0 - floor.0;
        let loss = |d: f64| {
            self.path_loss
                .loss(Meters(d), height, height, self.wavelength())
                .0
        };
        let (mut lo, mut hi) = (MIN_DISTANCE, 1e7);
        if loss(hi) <= budget {
            return Meters(hi);
        }
        // Path loss grows with distance in every model: bisect.
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if loss(mid) <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Meters(hi)
    }
}

/// How far the shadowing field may stray from its mean, in standard
/// deviations: its value is clipped to ±this many σ.
pub const SHADOWING_CLIP: f64 = 4.0;

/// The draws of one link's shadowing field, (kx, ky, phase) per component
/// in rad/m and rad, from its environment stream (at its start).
fn shadowing_draws(
    mut stream: Stream,
    decorrelation: f64,
) -> [(f64, f64, f64); SHADOWING_COMPONENTS] {
    std::array::from_fn(|_| {
        // Radial wavenumber of the 2-D exponential covariance exp(-r/a):
        // F(k) = 1 - 1/sqrt(1 + (a k)^2), inverted.
        let u = stream.uniform();
        let k = ((1.0 / (1.0 - u).powi(2)) - 1.0).sqrt() / decorrelation;
        let dir = 2.0 * PI * stream.uniform();
        (k * dir.cos(), k * dir.sin(), 2.0 * PI * stream.uniform())
    })
}

/// A frozen spatial Gaussian field with exponential correlation, clipped at
/// ±[`SHADOWING_CLIP`]·σ. Its draws are redrawn from the stream when asked
/// for, unless the link holds them ([`Link::hold`]).
#[derive(Clone, Debug)]
struct ShadowingField {
    stream: Stream,
    held: Option<Box<[(f64, f64, f64); SHADOWING_COMPONENTS]>>,
    /// Where the field was last evaluated, and its value there.
    cache: Option<(Vec2, f64)>,
}

impl ShadowingField {
    /// Field value in dB at `p`; recomputed only once `p` moves by more than
    /// `resolution` (a small fraction of the decorrelation distance).
    fn at(&mut self, p: Vec2, resolution: f64, sigma: Db, decorrelation: f64) -> f64 {
        if let Some((at, value)) = self.cache {
            if at.dist(p).0 <= resolution {
                return value;
            }
        }
        let drawn;
        let components = match &self.held {
            Some(c) => &**c,
            None => {
                drawn = shadowing_draws(self.stream.clone(), decorrelation);
                &drawn
            }
        };
        let amplitude = sigma.0 * (2.0 / SHADOWING_COMPONENTS as f64).sqrt();
        let sum = components
            .iter()
            .map(|&(kx, ky, ph)| (kx * p.x + ky * p.y + ph).cos())
            .sum::<f64>();
        let limit = SHADOWING_CLIP * sigma.0;
        let value = (amplitude * sum).clamp(-limit, limit);
        self.cache = Some((p, value));
        value
    }
}

/// The draws of one link's fading process, from its run stream.
#[derive(Clone, Debug)]
struct FadingDraws {
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
struct FadingProcess {
    stream: Stream,
    held: Option<Box<FadingDraws>>,
    los_amplitude: f64,
    scatter_amplitude: f64,
}

impl FadingProcess {
    fn new(kind: FadingKind, stream: Stream) -> Option<Self> {
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

    fn draws(&self) -> FadingDraws {
        FadingDraws::new(self.stream.clone(), self.los_amplitude > 0.0)
    }

    /// Power gain |h|² (mean 1) after the ends have travelled `u` metres in total.
    fn power_gain(&self, u: f64, lambda: f64) -> f64 {
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
        let beta = 2.0 * PI * u / lambda;
        let (mut re, mut im) = self.scatter_with(d, u, lambda);
        if let Some((c, ph)) = d.los {
            let (s, co) = (beta * c + ph).sin_cos();
            re += self.los_amplitude * co;
            im += self.los_amplitude * s;
        }
        re * re + im * im
    }
}

/// Per-link channel state: the frozen shadowing field and the fading
/// process, each kept as the seeded stream its draws come from (so a link
/// costs about 150 bytes), and the draws themselves once the link is held.
#[derive(Clone, Debug)]
pub struct Link {
    shadowing: Option<ShadowingField>,
    /// This run's offset of the link's large-scale signal, in dB.
    run_offset: f64,
    fading: Option<FadingProcess>,
}

/// One end of a link as seen by the channel at the instant of transmission.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub position: Vec2,
    pub height: Meters,
    pub antenna_gain: Db,
    /// Distance travelled since the start; drives fading.
    pub odometer: Meters,
}

/// The large- and small-scale parts of one link's loss, kept apart so traces
/// can explain a received power.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkBudget {
    pub distance: Meters,
    pub path_loss: Db,
    pub shadowing: Db,
    pub fading: Db,
    pub rx_power: Dbm,
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

/// The distance between two ends and the deterministic path loss over it,
/// buildings on the line of sight included.
pub fn path_loss(cfg: &ChannelConfig, tx: &Endpoint, rx: &Endpoint) -> (Meters, Db) {
    let distance = tx.position.dist(rx.position);
    let obstacles = cfg.obstacles.attenuation(tx.position, rx.position);
    (
        distance,
        cfg.path_loss
            .loss(distance, tx.height, rx.height, cfg.wavelength())
            + obstacles
            + cfg.system_loss,
    )
}

impl Link {
    /// Creates the state of the link between the nodes named `a` and `b`
    /// (order does not matter), drawing the field from the environment seed
    /// and the fading from the run stream.
    pub fn new(cfg: &ChannelConfig, a: &str, b: &str, master_seed: u64, run: u64) -> Link {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let key = format!("link/{lo}/{hi}");
        let shadowing = (cfg.shadowing_sigma.0 > 0.0).then(|| ShadowingField {
            stream: Stream::new("env", cfg.environment_seed, 0, &key),
            held: None,
            cache: None,
        });
        let run_offset = match cfg.run_shadowing_sigma.0 {
            s if s > 0.0 => {
                let z = Stream::new("run", master_seed, run, &format!("{key}/offset")).normal();
                s * z.clamp(-SHADOWING_CLIP, SHADOWING_CLIP)
            }
            _ => 0.0,
        };
        let fading = FadingProcess::new(cfg.fading, Stream::new("run", master_seed, run, &key));
        Link {
            shadowing,
            run_offset,
            fading,
        }
    }

    /// Keeps the link's draws in memory from now on, so that evaluating it
    /// no longer redraws them (for links that carry frames; the values are
    /// the same either way).
    pub fn hold(&mut self, cfg: &ChannelConfig) {
        if let Some(f) = self.shadowing.as_mut().filter(|f| f.held.is_none()) {
            f.held = Some(Box::new(shadowing_draws(
                f.stream.clone(),
                cfg.decorrelation.0 / 2.0,
            )));
        }
        if let Some(f) = self.fading.as_mut().filter(|f| f.held.is_none()) {
            f.held = Some(Box::new(f.draws()));
        }
    }

    /// Shadowing between the two ends, in dB: the frozen field plus this
    /// run's offset.
    fn shadowing(&mut self, cfg: &ChannelConfig, tx: &Endpoint, rx: &Endpoint) -> Db {
        let field = match &mut self.shadowing {
            Some(f) => {
                let mid = Vec2::new(
                    (tx.position.x + rx.position.x) / 2.0,
                    (tx.position.y + rx.position.y) / 2.0,
                );
                f.at(
                    mid,
                    cfg.decorrelation.0 / 100.0,
                    cfg.shadowing_sigma,
                    cfg.decorrelation.0 / 2.0,
                )
            }
            None => 0.0,
        };
        Db(field + self.run_offset)
    }

    /// Mean received power (path loss, gains and shadowing; no fast fading).
    pub fn mean_rx_power(
        &mut self,
        cfg: &ChannelConfig,
        tx_power: Dbm,
        tx: &Endpoint,
        rx: &Endpoint,
    ) -> Dbm {
        let (_, path_loss) = path_loss(cfg, tx, rx);
        let shadowing = self.shadowing(cfg, tx, rx);
        tx_power + tx.antenna_gain + rx.antenna_gain - path_loss + shadowing
    }

    /// Received power at `rx` of a transmission at `tx_power` from `tx`.
    pub fn budget(
        &mut self,
        cfg: &ChannelConfig,
        tx_power: Dbm,
        tx: &Endpoint,
        rx: &Endpoint,
    ) -> LinkBudget {
        self.budget_from(
            cfg,
            path_loss(cfg, tx, rx),
            tx_power,
            tx,
            rx,
            f64::NEG_INFINITY,
        )
        .expect("no floor")
    }

    /// [`Link::budget`] given the ends' distance and path loss
    /// ([`path_loss`]), if the signal can arrive at `floor` or above:
    /// `None`, without evaluating the fading (which keeps no state), when
    /// even `fading_max` more would not lift it there.
    #[allow(clippy::too_many_arguments)]
    pub fn budget_reaching(
        &mut self,
        cfg: &ChannelConfig,
        span: (Meters, Db),
        tx_power: Dbm,
        tx: &Endpoint,
        rx: &Endpoint,
        floor: Dbm,
        fading_max: Db,
    ) -> Option<LinkBudget> {
        self.budget_from(cfg, span, tx_power, tx, rx, floor.0 - fading_max.0)
    }

    /// The budget, or `None` if the mean received power is below `least` dBm.
    fn budget_from(
        &mut self,
        cfg: &ChannelConfig,
        (distance, path_loss): (Meters, Db),
        tx_power: Dbm,
        tx: &Endpoint,
        rx: &Endpoint,
        least: f64,
    ) -> Option<LinkBudget> {
        let shadowing = self.shadowing(cfg, tx, rx);
        let mean = tx_power + tx.antenna_gain + rx.antenna_gain - path_loss + shadowing;
        if mean.0 < least {
            return None;
        }
        let fading = match &self.fading {
            Some(f) => Db::from_ratio(
                f.power_gain(tx.odometer.0 + rx.odometer.0, cfg.wavelength())
                    .max(1e-12),
            ),
            None => Db(0.0),
        };
        Some(LinkBudget {
            distance,
            path_loss,
            shadowing,
            fading,
            rx_power: mean + fading,
        })
    }
}

impl Link {
    /// The fades of a frame over which the ends travel `travel` metres in
    /// total, starting with odometers summing to `start` ([`Fades`]); with
    /// `aging`, also what a channel estimate from the preamble misses
    /// ([`Fades::aging`]), which costs a second sum over the paths.
    pub fn fades(&self, cfg: &ChannelConfig, start: Meters, travel: Meters, aging: bool) -> Fades {
        let Some(f) = &self.fading else {
            return Fades::FLAT;
        };
        if travel.0 <= 0.0 {
            return Fades::FLAT;
        }
        let lambda = cfg.wavelength();
        let step = FADE_CHUNK_WAVELENGTHS * lambda;
        let chunks = (travel.0 / step).ceil().clamp(1.0, MAX_FADE_CHUNKS as f64) as usize;
        if chunks == 1 && !aging {
            return Fades::FLAT;
        }
        let piece = travel.0 / chunks as f64;
        f.with_draws(|d| {
            let first = f.gain_with(d, start.0, lambda).max(1e-12);
            let mut fades = Fades {
                chunks: chunks as u8,
                ..Fades::FLAT
            };
            for k in 1..chunks {
                fades.gains[k] =
                    (f.gain_with(d, start.0 + k as f64 * piece, lambda) / first) as f32;
            }
            if aging {
                let (s0re, s0im) = f.scatter_with(d, start.0, lambda);
                for k in 0..chunks {
                    let (re, im) = f.scatter_with(d, start.0 + (k as f64 + 0.5) * piece, lambda);
                    fades.aging[k] = (((re - s0re).powi(2) + (im - s0im).powi(2)) / first) as f32;
                }
            }
            fades
        })
    }
}

/// Time for a signal to cover `d`.
pub fn propagation_delay(d: Meters) -> SimTime {
    SimTime::from_secs_f64(d.0 / SPEED_OF_LIGHT)
}

/// A channel for tests: `path_loss` alone, at 2.437 GHz over a −95 dBm
/// noise floor, no shadowing and no fading.
#[cfg(test)]
pub(crate) fn test_channel(path_loss: PathLoss) -> ChannelConfig {
    ChannelConfig {
        path_loss,
        system_loss: Db(0.0),
        shadowing_sigma: Db(0.0),
        run_shadowing_sigma: Db(0.0),
        decorrelation: Meters(20.0),
        fading: FadingKind::None,
        frequency: Hertz(2.437e9),
        noise_floor: Dbm(-95.0),
        environment_seed: 1,
        obstacles: Arc::new(Obstacles::new(Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(path_loss: PathLoss) -> ChannelConfig {
        test_channel(path_loss)
    }

    fn at(x: f64) -> Endpoint {
        Endpoint {
            position: Vec2::new(x, 0.0),
            height: Meters(1.5),
            antenna_gain: Db(0.0),
            odometer: Meters(0.0),
        }
    }

    #[test]
    fn free_space_matches_friis() {
        let c = cfg(PathLoss::FreeSpace);
        let lambda = c.wavelength();
        for d in [10.0, 100.0, 1000.0] {
            let expected = 20.0 * (4.0 * PI * d / lambda).log10();
            let got = c
                .path_loss
                .loss(Meters(d), Meters(1.5), Meters(1.5), lambda)
                .0;
            assert!((got - expected).abs() < 1e-9);
        }
        // 100 m at 2.437 GHz is about 80.2 dB.
        assert!(
            (c.path_loss
                .loss(Meters(100.0), Meters(1.5), Meters(1.5), lambda)
                .0
                - 80.18)
                .abs()
                < 0.05
        );
    }

    #[test]
    fn two_ray_is_free_space_then_fourth_power() {
        let c = cfg(PathLoss::TwoRayGround);
        let lambda = c.wavelength();
        let crossover = 4.0 * PI * 1.5 * 1.5 / lambda; // ~229 m
        let near = c
            .path_loss
            .loss(Meters(crossover * 0.5), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((near - 20.0 * (4.0 * PI * crossover * 0.5 / lambda).log10()).abs() < 1e-9);
        let l1 = c
            .path_loss
            .loss(Meters(2.0 * crossover), Meters(1.5), Meters(1.5), lambda)
            .0;
        let l2 = c
            .path_loss
            .loss(Meters(4.0 * crossover), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((l2 - l1 - 40.0 * 2f64.log10()).abs() < 1e-9);
        // Continuous at the crossover.
        let a = c
            .path_loss
            .loss(Meters(crossover - 1e-6), Meters(1.5), Meters(1.5), lambda)
            .0;
        let b = c
            .path_loss
            .loss(Meters(crossover + 1e-6), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((a - b).abs() < 1e-3);
    }

    #[test]
    fn log_distance_slope() {
        let c = cfg(PathLoss::LogDistance {
            exponent: 3.0,
            reference: Meters(10.0),
        });
        let l = |d| {
            c.path_loss
                .loss(Meters(d), Meters(1.5), Meters(1.5), c.wavelength())
                .0
        };
        assert!((l(1000.0) - l(100.0) - 30.0).abs() < 1e-9);
    }

    #[test]
    fn three_log_distance_slopes_change_at_the_breakpoints() {
        let c = cfg(PathLoss::ThreeLogDistance {
            exponents: [2.0, 3.5, 10.0],
            breakpoints: [Meters(100.0), Meters(400.0)],
            reference: Meters(1.0),
        });
        let l = |d| {
            c.path_loss
                .loss(Meters(d), Meters(1.5), Meters(1.5), c.wavelength())
                .0
        };
        assert!((l(100.0) - l(10.0) - 20.0).abs() < 1e-9);
        assert!((l(400.0) - l(200.0) - 35.0 * 2f64.log10()).abs() < 1e-9);
        assert!((l(800.0) - l(400.0) - 100.0 * 2f64.log10()).abs() < 1e-9);
        // Continuous at both breakpoints.
        for b in [100.0, 400.0] {
            assert!((l(b - 1e-6) - l(b + 1e-6)).abs() < 1e-3);
        }
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
    fn budget_adds_gains_and_subtracts_loss() {
        let c = cfg(PathLoss::FreeSpace);
        let mut link = Link::new(&c, "ap", "car", 1, 0);
        let mut tx = at(0.0);
        tx.antenna_gain = Db(7.0);
        let b = link.budget(&c, Dbm(19.0), &tx, &at(100.0));
        assert!((b.rx_power.0 - (19.0 + 7.0 - b.path_loss.0)).abs() < 1e-9);
    }

    #[test]
    fn system_loss_takes_the_same_off_every_link_and_shortens_the_reach() {
        let plain = cfg(PathLoss::FreeSpace);
        let mut lossy = cfg(PathLoss::FreeSpace);
        lossy.system_loss = Db(20.0);
        let rx = |c: &ChannelConfig, d: f64| {
            let mut link = Link::new(c, "ap", "car", 1, 0);
            link.budget(c, Dbm(15.0), &at(0.0), &at(d)).rx_power.0
        };
        for d in [10.0, 100.0, 1000.0] {
            assert!((rx(&plain, d) - rx(&lossy, d) - 20.0).abs() < 1e-9);
        }
        let reach = |c: &ChannelConfig| c.reach(Dbm(15.0), Db(0.0), Meters(1.5), Dbm(-95.0)).0;
        // Free space: 20 dB less budget is a tenth of the distance.
        assert!((reach(&plain) / reach(&lossy) - 10.0).abs() < 1e-6);
    }

    fn shadow_cfg() -> ChannelConfig {
        let mut c = cfg(PathLoss::FreeSpace);
        c.shadowing_sigma = Db(6.0);
        c
    }

    #[test]
    fn shadowing_is_frozen_by_environment_seed_and_reciprocal() {
        let c = shadow_cfg();
        let samples = |link: &mut Link| -> Vec<f64> {
            (0..50)
                .map(|i| {
                    link.budget(&c, Dbm(0.0), &at(0.0), &at(10.0 + 7.0 * i as f64))
                        .shadowing
                        .0
                })
                .collect()
        };
        let a = samples(&mut Link::new(&c, "ap", "car", 1, 0));
        let b = samples(&mut Link::new(&c, "car", "ap", 99, 7)); // other run seed, other order
        assert_eq!(a, b);
        let mut other_env = shadow_cfg();
        other_env.environment_seed = 2;
        let d: Vec<f64> = {
            let mut l = Link::new(&other_env, "ap", "car", 1, 0);
            (0..50)
                .map(|i| {
                    l.budget(&other_env, Dbm(0.0), &at(0.0), &at(10.0 + 7.0 * i as f64))
                        .shadowing
                        .0
                })
                .collect()
        };
        assert_ne!(a, d);
    }

    #[test]
    fn shadowing_has_the_configured_spread_and_decorrelates() {
        // Average over many links: variance ~ sigma^2, correlation at d_c ~ e^-1.
        let c = shadow_cfg();
        let (mut sum2, mut prod_dc, mut prod_far, mut n) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..400 {
            let mut link = Link::new(&c, "ap", &format!("car{i}"), 1, 0);
            let mut s = |x: f64| link.budget(&c, Dbm(0.0), &at(0.0), &at(x)).shadowing.0;
            let (s0, s1, s2) = (s(500.0), s(520.0), s(700.0));
            sum2 += s0 * s0;
            prod_dc += s0 * s1;
            prod_far += s0 * s2;
            n += 1.0;
        }
        let var = sum2 / n;
        assert!((var.sqrt() - 6.0).abs() < 0.8, "sigma {}", var.sqrt());
        let rho_dc = prod_dc / n / var;
        let rho_far = prod_far / n / var;
        assert!((rho_dc - (-1f64).exp()).abs() < 0.15, "rho(d_c) = {rho_dc}");
        assert!(rho_far.abs() < 0.15, "rho(10 d_c) = {rho_far}");
    }

    #[test]
    fn the_per_run_offset_moves_a_whole_pass_and_differs_between_runs() {
        let mut c = shadow_cfg();
        c.run_shadowing_sigma = Db(2.5);
        let frozen = shadow_cfg();
        let offsets: Vec<f64> = (0..400)
            .map(|run| {
                let (mut with, mut without) = (
                    Link::new(&c, "ap", "car", 1, run),
                    Link::new(&frozen, "ap", "car", 1, run),
                );
                let diff = |x: f64, w: &mut Link, wo: &mut Link| {
                    w.budget(&c, Dbm(0.0), &at(0.0), &at(x)).shadowing.0
                        - wo.budget(&frozen, Dbm(0.0), &at(0.0), &at(x)).shadowing.0
                };
                let (near, far) = (
                    diff(30.0, &mut with, &mut without),
                    diff(800.0, &mut with, &mut without),
                );
                // One value over the whole pass, both directions of the link.
                assert!((near - far).abs() < 1e-9, "run {run}: {near} vs {far}");
                let back = Link::new(&c, "car", "ap", 1, run)
                    .budget(&c, Dbm(0.0), &at(30.0), &at(0.0))
                    .shadowing
                    .0;
                assert!(
                    (back - with.budget(&c, Dbm(0.0), &at(0.0), &at(30.0)).shadowing.0).abs()
                        < 1e-9
                );
                near
            })
            .collect();
        let mean = offsets.iter().sum::<f64>() / 400.0;
        let sd = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f64>() / 399.0).sqrt();
        assert!(mean.abs() < 0.4, "mean {mean}");
        assert!((sd - 2.5).abs() < 0.3, "sd {sd}");
        assert!(offsets.iter().all(|o| o.abs() <= SHADOWING_CLIP * 2.5));
        // Without it, the run seed leaves the large-scale signal alone.
        assert_eq!(
            Link::new(&frozen, "ap", "car", 1, 3)
                .budget(&frozen, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing,
            Link::new(&frozen, "ap", "car", 1, 4)
                .budget(&frozen, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing
        );
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

    #[test]
    fn reach_bounds_every_arrival_above_the_floor() {
        // Rayleigh fading and 6 dB shadowing over many links: no sample
        // beyond the reach clears the floor, and the reach is where the
        // mean power plus the largest excess meets it.
        let mut c = shadow_cfg();
        c.fading = FadingKind::Rayleigh;
        c.path_loss = PathLoss::LogDistance {
            exponent: 3.0,
            reference: Meters(1.0),
        };
        let floor = Dbm(-125.0);
        let reach = c.reach(Dbm(20.0), Db(0.0), Meters(1.5), floor);
        let mean_at_reach = 20.0
            - c.path_loss
                .loss(reach, Meters(1.5), Meters(1.5), c.wavelength())
                .0;
        assert!((mean_at_reach + c.max_excess_gain().0 - floor.0).abs() < 1e-6);
        for i in 0..200 {
            let mut link = Link::new(&c, "ap", &format!("car{i}"), 1, 0);
            for k in 0..20 {
                let d = reach.0 * (1.0 + 0.01 * k as f64);
                let b = link.budget(&c, Dbm(20.0), &at(0.0), &at(d));
                assert!(
                    b.rx_power.0 < floor.0,
                    "{} dBm at {d} m beyond reach {}",
                    b.rx_power.0,
                    reach.0
                );
            }
        }
    }

    #[test]
    fn a_held_link_gives_the_values_it_gave_before() {
        // Redrawn on each evaluation or held from the start or from midway:
        // the same budgets, bit for bit.
        let mut c = shadow_cfg();
        c.fading = FadingKind::Rician { k: Db(3.0) };
        let path = |link: &mut Link, hold_at: Option<usize>| -> Vec<LinkBudget> {
            (0..60)
                .map(|i| {
                    if hold_at == Some(i) {
                        link.hold(&c);
                    }
                    let mut rx = at(5.0 + 3.3 * i as f64);
                    rx.odometer = Meters(0.7 * i as f64);
                    link.budget(&c, Dbm(18.0), &at(0.0), &rx)
                })
                .collect()
        };
        let redrawn = path(&mut Link::new(&c, "ap", "car", 4, 0), None);
        assert_eq!(
            redrawn,
            path(&mut Link::new(&c, "ap", "car", 4, 0), Some(0))
        );
        assert_eq!(
            redrawn,
            path(&mut Link::new(&c, "car", "ap", 4, 0), Some(30))
        );
    }

    #[test]
    fn an_unheld_link_is_small() {
        assert!(
            std::mem::size_of::<Link>() <= 160,
            "{} bytes",
            std::mem::size_of::<Link>()
        );
    }

    #[test]
    fn shadowing_stays_within_its_clip() {
        let c = shadow_cfg();
        let limit = SHADOWING_CLIP * c.shadowing_sigma.0;
        let mut largest: f64 = 0.0;
        for i in 0..300 {
            let mut link = Link::new(&c, "ap", &format!("car{i}"), 1, 0);
            for k in 0..200 {
                let s = link
                    .budget(&c, Dbm(0.0), &at(0.0), &at(1.0 + 13.7 * k as f64))
                    .shadowing
                    .0;
                largest = largest.max(s.abs());
            }
        }
        assert!(largest <= limit, "{largest} dB beyond the clip {limit} dB");
        // The field does reach far into its tail (3σ), so the clip is not
        // what sets its spread.
        assert!(largest > 3.0 * c.shadowing_sigma.0, "largest {largest} dB");
    }

    #[test]
    fn propagation_delay_is_distance_over_c() {
        assert_eq!(
            propagation_delay(Meters(299.792458)),
            SimTime::from_ns(1000)
        );
    }
}
