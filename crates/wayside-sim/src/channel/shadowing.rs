//! The drawn stages of the chain: log-normal shadowing, frozen per
//! environment seed, and a per-run offset of every link.
//!
//! **Frozen field** ([`FrozenShadowing`]). Each unordered pair of nodes (by
//! stable name) has its own Gaussian random field, a sum of
//! 32 random sinusoids whose wave vectors are drawn
//! from the spectrum of Gudmundson's exponential correlation
//! `exp(-d / d_c)` (a random Fourier feature field). The field is
//! evaluated at the midpoint of the link with half the decorrelation
//! distance, so that when one end is fixed (an AP) the correlation along
//! the other end's path is exactly `exp(-d / d_c)`; the field is
//! reciprocal. Its draws come from the environment stream, so a given
//! car–AP pair sees the same large-scale signal on every pass regardless
//! of the run seed. The field is clipped at ±[`SHADOWING_CLIP`]·σ = ±4σ, so
//! that the strongest signal a link can carry has a bound
//! ([`super::ChannelConfig::max_excess_gain`]). A Gaussian exceeds ±4σ
//! with probability 6.3·10⁻⁵; the sum of 32 sinusoids, bounded by ±8σ,
//! does so with about 4·10⁻⁵ (2·10⁷ random-phase draws), so the clip
//! changes about one value in 25,000, and only by what lies beyond 4σ.
//!
//! **Per-run offset** ([`RunShadowing`]). On top of the frozen field, each
//! link gets one Gaussian offset per run (σ = `run_shadowing_sigma`, from
//! the run stream, clipped at ±4σ like the field): what changes between
//! passes over the same road and stays for the whole pass — the lane and
//! direction (runs alternate, so the car's roof and body face the AP
//! differently), the antenna's mounting, other traffic. It leaves the
//! shape of the signal along the road alone and moves a whole pass up or
//! down.
//!
//! **Memory.** A link keeps only the seeded stream its field's draws come
//! from and the last value; the draws are redrawn when the link is
//! evaluated, until the medium asks the link to hold them (it does for
//! links that carry frames). Held or not, the values are the same.

use super::field::{ShadowingField, SHADOWING_CLIP};
use super::stage::{Endpoint, LinkDraws, Stage};
use crate::geometry::Vec2;
use crate::rng::Stream;
use crate::units::{Db, Meters};

/// Log-normal shadowing frozen per environment seed: the same road on
/// every pass (`environment.shadowing_sigma`, `shadowing_decorrelation`,
/// `seed`).
#[derive(Clone, Debug)]
pub struct FrozenShadowing {
    pub sigma: Db,
    pub decorrelation: Meters,
    pub environment_seed: u64,
}

impl Stage for FrozenShadowing {
    fn open(&self, link: &mut LinkDraws, key: &str, _seed: u64, _run: u64) {
        link.field = Some(ShadowingField::new(Stream::new(
            "env",
            self.environment_seed,
            0,
            key,
        )));
    }

    fn gain(&self, tx: &Endpoint, rx: &Endpoint, link: &mut LinkDraws) -> f64 {
        let Some(f) = &mut link.field else {
            return 0.0;
        };
        let mid = Vec2::new(
            (tx.position.x + rx.position.x) / 2.0,
            (tx.position.y + rx.position.y) / 2.0,
        );
        f.at(
            mid,
            self.decorrelation.0 / 100.0,
            self.sigma,
            self.decorrelation.0 / 2.0,
        )
    }

    fn hold(&self, link: &mut LinkDraws) {
        if let Some(f) = &mut link.field {
            f.hold(self.decorrelation.0 / 2.0);
        }
    }

    fn sigma(&self) -> Db {
        self.sigma
    }
}

/// One offset per link and run (`environment.run_shadowing_sigma`).
#[derive(Clone, Debug)]
pub struct RunShadowing {
    pub sigma: Db,
}

impl Stage for RunShadowing {
    fn open(&self, link: &mut LinkDraws, key: &str, seed: u64, run: u64) {
        let z = Stream::new("run", seed, run, &format!("{key}/offset")).normal();
        link.run_offset = self.sigma.0 * z.clamp(-SHADOWING_CLIP, SHADOWING_CLIP);
    }

    fn gain(&self, _tx: &Endpoint, _rx: &Endpoint, link: &mut LinkDraws) -> f64 {
        link.run_offset
    }

    fn sigma(&self) -> Db {
        self.sigma
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f64) -> Endpoint {
        super::super::test_endpoint(x)
    }

    fn frozen(seed: u64) -> FrozenShadowing {
        FrozenShadowing {
            sigma: Db(6.0),
            decorrelation: Meters(20.0),
            environment_seed: seed,
        }
    }

    /// The gain of `stage` on the link named `a`–`b` with one end at the
    /// origin and the other at each of `xs`.
    fn gains(stage: &dyn Stage, (a, b): (&str, &str), run: (u64, u64), xs: &[f64]) -> Vec<f64> {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let mut link = LinkDraws::default();
        stage.open(&mut link, &format!("link/{lo}/{hi}"), run.0, run.1);
        xs.iter()
            .map(|&x| stage.gain(&at(0.0), &at(x), &mut link))
            .collect()
    }

    #[test]
    fn the_field_is_frozen_by_environment_seed_and_reciprocal() {
        let xs: Vec<f64> = (0..50).map(|i| 10.0 + 7.0 * i as f64).collect();
        let a = gains(&frozen(1), ("ap", "car"), (1, 0), &xs);
        // Another run seed, the other order: the same field.
        assert_eq!(a, gains(&frozen(1), ("car", "ap"), (99, 7), &xs));
        assert_ne!(a, gains(&frozen(2), ("ap", "car"), (1, 0), &xs));
    }

    #[test]
    fn the_field_has_the_configured_spread_and_decorrelates() {
        // Over many links: variance ~ sigma^2, correlation at d_c ~ e^-1.
        let (mut sum2, mut prod_dc, mut prod_far, mut n) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..400 {
            let s = gains(
                &frozen(1),
                ("ap", &format!("car{i}")),
                (1, 0),
                &[500.0, 520.0, 700.0],
            );
            sum2 += s[0] * s[0];
            prod_dc += s[0] * s[1];
            prod_far += s[0] * s[2];
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
    fn the_field_stays_within_its_clip_and_reaches_into_its_tail() {
        let stage = frozen(1);
        let limit = SHADOWING_CLIP * stage.sigma.0;
        let xs: Vec<f64> = (0..200).map(|k| 1.0 + 13.7 * k as f64).collect();
        let largest = (0..300)
            .flat_map(|i| gains(&stage, ("ap", &format!("car{i}")), (1, 0), &xs))
            .fold(0.0f64, |m, s| m.max(s.abs()));
        assert!(largest <= limit, "{largest} dB beyond the clip {limit} dB");
        // The clip is not what sets its spread.
        assert!(largest > 3.0 * stage.sigma.0, "largest {largest} dB");
    }

    #[test]
    fn a_held_field_gives_the_values_it_gave_before() {
        let stage = frozen(4);
        let mut redrawn = LinkDraws::default();
        let mut held = LinkDraws::default();
        stage.open(&mut redrawn, "link/ap/car", 4, 0);
        stage.open(&mut held, "link/ap/car", 4, 0);
        for i in 0..60 {
            if i == 30 {
                stage.hold(&mut held);
            }
            let rx = at(5.0 + 3.3 * i as f64);
            assert_eq!(
                stage.gain(&at(0.0), &rx, &mut redrawn),
                stage.gain(&at(0.0), &rx, &mut held)
            );
        }
    }

    #[test]
    fn the_run_offset_moves_a_whole_pass_and_differs_between_runs() {
        let stage = RunShadowing { sigma: Db(2.5) };
        let offsets: Vec<f64> = (0..400)
            .map(|run| {
                let g = gains(&stage, ("ap", "car"), (1, run), &[30.0, 800.0]);
                // One value over the whole pass, and both directions.
                assert_eq!(g[0], g[1], "run {run}");
                assert_eq!(gains(&stage, ("car", "ap"), (1, run), &[30.0]), [g[0]]);
                g[0]
            })
            .collect();
        let mean = offsets.iter().sum::<f64>() / 400.0;
        let sd = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f64>() / 399.0).sqrt();
        assert!(mean.abs() < 0.4, "mean {mean}");
        assert!((sd - 2.5).abs() < 0.3, "sd {sd}");
        assert!(offsets.iter().all(|o| o.abs() <= SHADOWING_CLIP * 2.5));
    }
}
