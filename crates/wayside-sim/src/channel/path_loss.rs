//! The path-loss stage: deterministic large-scale loss over the distance
//! between the antennas (free space, two-ray ground, log-distance, three
//! log-distance slopes), at the scenario's carrier.

use super::stage::{Endpoint, Stage};
use crate::units::{Db, Meters};
use std::f64::consts::PI;

/// Path-loss models are evaluated no closer than this (near field).
pub(super) const MIN_DISTANCE: f64 = 1.0;

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

/// The path-loss stage: `model` at `wavelength` (metres).
#[derive(Clone, Debug)]
pub struct PathLossStage {
    pub model: PathLoss,
    pub wavelength: f64,
}

impl Stage for PathLossStage {
    fn loss(&self, tx: &Endpoint, rx: &Endpoint) -> f64 {
        let d = tx.position.dist(rx.position);
        self.model.loss(d, tx.height, rx.height, self.wavelength).0
    }

    fn clear_loss(&self, d: Meters, height: Meters) -> f64 {
        self.model.loss(d, height, height, self.wavelength).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2.437 GHz (channel 6).
    const LAMBDA: f64 = super::super::SPEED_OF_LIGHT / 2.437e9;

    #[test]
    fn free_space_matches_friis() {
        let c = PathLoss::FreeSpace;
        let lambda = LAMBDA;
        for d in [10.0, 100.0, 1000.0] {
            let expected = 20.0 * (4.0 * PI * d / lambda).log10();
            let got = c.loss(Meters(d), Meters(1.5), Meters(1.5), lambda).0;
            assert!((got - expected).abs() < 1e-9);
        }
        // 100 m at 2.437 GHz is about 80.2 dB.
        assert!((c.loss(Meters(100.0), Meters(1.5), Meters(1.5), lambda).0 - 80.18).abs() < 0.05);
    }

    #[test]
    fn two_ray_is_free_space_then_fourth_power() {
        let c = PathLoss::TwoRayGround;
        let lambda = LAMBDA;
        let crossover = 4.0 * PI * 1.5 * 1.5 / lambda; // ~229 m
        let near = c
            .loss(Meters(crossover * 0.5), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((near - 20.0 * (4.0 * PI * crossover * 0.5 / lambda).log10()).abs() < 1e-9);
        let l1 = c
            .loss(Meters(2.0 * crossover), Meters(1.5), Meters(1.5), lambda)
            .0;
        let l2 = c
            .loss(Meters(4.0 * crossover), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((l2 - l1 - 40.0 * 2f64.log10()).abs() < 1e-9);
        // Continuous at the crossover.
        let a = c
            .loss(Meters(crossover - 1e-6), Meters(1.5), Meters(1.5), lambda)
            .0;
        let b = c
            .loss(Meters(crossover + 1e-6), Meters(1.5), Meters(1.5), lambda)
            .0;
        assert!((a - b).abs() < 1e-3);
    }

    #[test]
    fn log_distance_slope() {
        let c = PathLoss::LogDistance {
            exponent: 3.0,
            reference: Meters(10.0),
        };
        let l = |d| c.loss(Meters(d), Meters(1.5), Meters(1.5), LAMBDA).0;
        assert!((l(1000.0) - l(100.0) - 30.0).abs() < 1e-9);
    }

    #[test]
    fn three_log_distance_slopes_change_at_the_breakpoints() {
        let c = PathLoss::ThreeLogDistance {
            exponents: [2.0, 3.5, 10.0],
            breakpoints: [Meters(100.0), Meters(400.0)],
            reference: Meters(1.0),
        };
        let l = |d| c.loss(Meters(d), Meters(1.5), Meters(1.5), LAMBDA).0;
        assert!((l(100.0) - l(10.0) - 20.0).abs() < 1e-9);
        assert!((l(400.0) - l(200.0) - 35.0 * 2f64.log10()).abs() < 1e-9);
        assert!((l(800.0) - l(400.0) - 100.0 * 2f64.log10()).abs() < 1e-9);
        // Continuous at both breakpoints.
        for b in [100.0, 400.0] {
            assert!((l(b - 1e-6) - l(b + 1e-6)).abs() < 1e-3);
        }
    }

    #[test]
    fn the_stage_is_its_model_over_the_ends_distance_and_heights() {
        let stage = PathLossStage {
            model: PathLoss::TwoRayGround,
            wavelength: LAMBDA,
        };
        let end = |x: f64, h: f64| Endpoint {
            position: crate::geometry::Vec2::new(x, 0.0),
            height: Meters(h),
            antenna_gain: Db(7.0),
            odometer: Meters(0.0),
        };
        let want = PathLoss::TwoRayGround.loss(Meters(400.0), Meters(5.0), Meters(1.5), LAMBDA);
        assert_eq!(stage.loss(&end(100.0, 5.0), &end(500.0, 1.5)), want.0);
        assert_eq!(
            stage.clear_loss(Meters(400.0), Meters(1.5)),
            PathLoss::TwoRayGround
                .loss(Meters(400.0), Meters(1.5), Meters(1.5), LAMBDA)
                .0
        );
    }
}
