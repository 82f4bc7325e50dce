//! A frozen spatial Gaussian field: the draws of one link's shadowing
//! (see [`super::shadowing`]), kept as the seeded stream they come from
//! until the link holds them.

use crate::geometry::Vec2;
use crate::rng::Stream;
use crate::units::Db;
use std::f64::consts::PI;

/// How far a drawn gain may stray from its mean, in standard deviations:
/// its value is clipped to ±this many σ.
pub const SHADOWING_CLIP: f64 = 4.0;
const SHADOWING_COMPONENTS: usize = 32;

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
/// for, unless it holds them.
#[derive(Clone, Debug)]
pub struct ShadowingField {
    stream: Stream,
    held: Option<Box<[(f64, f64, f64); SHADOWING_COMPONENTS]>>,
    /// Where the field was last evaluated, and its value there.
    cache: Option<(Vec2, f64)>,
}

impl ShadowingField {
    /// The field whose draws come from `stream` (at its start).
    pub(super) fn new(stream: Stream) -> ShadowingField {
        ShadowingField {
            stream,
            held: None,
            cache: None,
        }
    }

    /// Keeps the draws in memory from now on (`decorrelation` as for
    /// [`ShadowingField::at`]).
    pub(super) fn hold(&mut self, decorrelation: f64) {
        if self.held.is_none() {
            self.held = Some(Box::new(shadowing_draws(
                self.stream.clone(),
                decorrelation,
            )));
        }
    }

    /// Field value in dB at `p`; recomputed only once `p` moves by more than
    /// `resolution` (a small fraction of the decorrelation distance).
    pub(super) fn at(&mut self, p: Vec2, resolution: f64, sigma: Db, decorrelation: f64) -> f64 {
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
