//! The radio channel between two antennas: a chain of loss stages
//! ([`stage`]) applied to every link, then fast fading ([`fading`]), over
//! the thermal noise floor, with the propagation delay.
//!
//! The stages, in the order a scenario's `[environment]` puts them:
//! - path loss ([`path_loss`]): free space, two-ray ground, log-distance,
//!   three log-distance slopes;
//! - buildings on the line of sight ([`obstacles`]), with Sommer et al.'s
//!   losses, or those carried to the carrier by ITU-R P.2109's building
//!   entry loss ([`building_entry`]);
//! - log-normal shadowing frozen per environment seed, and an offset per
//!   link and run ([`shadowing`]).
//!
//! The deterministic stages, antenna gains and a fixed system loss give a
//! link's mean; the drawn ones move it up or down per link; fading moves
//! it per frame. [`LinkBudget`] keeps the parts apart so traces can
//! explain a received power.

pub mod building_entry;
pub mod diffraction;
mod fading;
mod field;
pub mod obstacles;
mod path_loss;
mod shadowing;
mod stage;

pub use fading::{Fades, FadingKind, MAX_FADE_CHUNKS};
pub use field::SHADOWING_CLIP;
pub use path_loss::{PathLoss, PathLossStage};
pub use shadowing::{FrozenShadowing, RunShadowing};
pub use stage::{Chain, Endpoint, LinkDraws, Stage};

use crate::rng::Stream;
use crate::units::{Db, Dbm, Hertz, Meters, SimTime};
use fading::{FadingProcess, FADING_PATHS};
use path_loss::MIN_DISTANCE;

pub const SPEED_OF_LIGHT: f64 = 299_792_458.0;

/// Channel configuration shared by every link.
#[derive(Clone, Debug)]
pub struct ChannelConfig {
    /// The loss stages, in order.
    pub chain: Chain,
    /// A fixed loss on every link on top of the chain's (ns-3's Friis
    /// `SystemLoss`): cables, connectors, mounting — what the geometry does
    /// not explain.
    pub system_loss: Db,
    pub fading: FadingKind,
    pub frequency: Hertz,
    pub noise_floor: Dbm,
}

impl ChannelConfig {
    pub fn wavelength(&self) -> f64 {
        SPEED_OF_LIGHT / self.frequency.0
    }

    /// The most the drawn stages and fast fading together can add to the
    /// mean received power: each drawn stage at its clip,
    /// [`SHADOWING_CLIP`]·σ, and every fading path at its peak at once
    /// ((√(K/(K+1)) + √(M/(K+1)))² for M scattered paths, K = 0 if
    /// Rayleigh).
    pub fn max_excess_gain(&self) -> Db {
        Db(SHADOWING_CLIP * self.chain.sigma().0 + self.max_fading_gain().0)
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
    /// least path loss), nothing on the line of sight, and the drawn
    /// stages and fading at their peak.
    pub fn reach(&self, eirp: Dbm, rx_gain: Db, height: Meters, floor: Dbm) -> Meters {
        let budget = eirp.0 + rx_gain.0 + self.max_excess_gain().0 - self.system_loss.0 - floor.0;
        let loss = |d: f64| self.chain.clear_loss(Meters(d), height).0;
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

/// Per-link channel state: what the drawn stages keep ([`LinkDraws`]) and
/// the fading process, each kept as the seeded stream its draws come from
/// (so a link costs about 150 bytes), and the draws themselves once the
/// link is held.
#[derive(Clone, Debug)]
pub struct Link {
    draws: LinkDraws,
    fading: Option<FadingProcess>,
}

/// The large- and small-scale parts of one link's loss, kept apart so traces
/// can explain a received power.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkBudget {
    pub distance: Meters,
    /// The deterministic stages' loss and the system loss.
    pub path_loss: Db,
    /// The drawn stages' gain.
    pub shadowing: Db,
    pub fading: Db,
    pub rx_power: Dbm,
}

/// The distance between two ends and the deterministic loss over it: the
/// chain's deterministic stages (buildings included) and the system loss.
pub fn path_loss(cfg: &ChannelConfig, tx: &Endpoint, rx: &Endpoint) -> (Meters, Db) {
    let distance = tx.position.dist(rx.position);
    (distance, cfg.chain.loss(tx, rx) + cfg.system_loss)
}

impl Link {
    /// Creates the state of the link between the nodes named `a` and `b`
    /// (order does not matter): each drawn stage's draws, and the fading
    /// from the run stream.
    pub fn new(cfg: &ChannelConfig, a: &str, b: &str, master_seed: u64, run: u64) -> Link {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let key = format!("link/{lo}/{hi}");
        let draws = cfg.chain.open(&key, master_seed, run);
        let fading = FadingProcess::new(cfg.fading, Stream::new("run", master_seed, run, &key));
        Link { draws, fading }
    }

    /// Keeps the link's draws in memory from now on, so that evaluating it
    /// no longer redraws them (for links that carry frames; the values are
    /// the same either way).
    pub fn hold(&mut self, cfg: &ChannelConfig) {
        cfg.chain.hold(&mut self.draws);
        if let Some(f) = self.fading.as_mut().filter(|f| f.held.is_none()) {
            f.held = Some(Box::new(f.draws()));
        }
    }

    /// The fades of a frame over which the ends travel `travel` metres in
    /// total, starting with odometers summing to `start` ([`Fades`]); with
    /// `aging`, also what a channel estimate from the preamble misses
    /// ([`Fades::aging`]), which costs a second sum over the paths.
    pub fn fades(&self, cfg: &ChannelConfig, start: Meters, travel: Meters, aging: bool) -> Fades {
        match &self.fading {
            Some(f) => f.fades(cfg.wavelength(), start, travel, aging),
            None => Fades::FLAT,
        }
    }

    /// The drawn stages' gain between the two ends, in dB.
    fn shadowing(&mut self, cfg: &ChannelConfig, tx: &Endpoint, rx: &Endpoint) -> Db {
        cfg.chain.gain(tx, rx, &mut self.draws)
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

/// Time for a signal to cover `d`.
pub fn propagation_delay(d: Meters) -> SimTime {
    SimTime::from_secs_f64(d.0 / SPEED_OF_LIGHT)
}

/// A channel for tests: `path_loss` alone, at 2.437 GHz over a −95 dBm
/// noise floor, no shadowing and no fading.
#[cfg(test)]
pub(crate) fn test_channel(path_loss: PathLoss) -> ChannelConfig {
    test_chain(path_loss, Vec::new())
}

/// An end for tests: at `x` on the x axis, 1.5 m high, 0 dBi, not moved.
#[cfg(test)]
pub(crate) fn test_endpoint(x: f64) -> Endpoint {
    Endpoint {
        position: crate::geometry::Vec2::new(x, 0.0),
        height: Meters(1.5),
        antenna_gain: Db(0.0),
        odometer: Meters(0.0),
    }
}

/// [`test_channel`] with `stages` after the path loss.
#[cfg(test)]
pub(crate) fn test_chain(
    path_loss: PathLoss,
    stages: Vec<std::sync::Arc<dyn Stage>>,
) -> ChannelConfig {
    let frequency = Hertz(2.437e9);
    let mut chain: Vec<std::sync::Arc<dyn Stage>> = vec![std::sync::Arc::new(PathLossStage {
        model: path_loss,
        wavelength: SPEED_OF_LIGHT / frequency.0,
    })];
    chain.extend(stages);
    ChannelConfig {
        chain: Chain::new(chain),
        system_loss: Db(0.0),
        fading: FadingKind::None,
        frequency,
        noise_floor: Dbm(-95.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cfg(path_loss: PathLoss) -> ChannelConfig {
        test_channel(path_loss)
    }

    fn at(x: f64) -> Endpoint {
        test_endpoint(x)
    }

    /// 6 dB of frozen shadowing.
    fn frozen() -> FrozenShadowing {
        FrozenShadowing {
            sigma: Db(6.0),
            decorrelation: Meters(20.0),
            environment_seed: 1,
        }
    }

    /// Free space with 6 dB of frozen shadowing, and `run` dB of per-run
    /// offset if any.
    fn shadow_cfg(run: Option<f64>) -> ChannelConfig {
        let mut stages: Vec<Arc<dyn Stage>> = vec![Arc::new(frozen())];
        if let Some(sigma) = run {
            stages.push(Arc::new(RunShadowing { sigma: Db(sigma) }));
        }
        test_chain(PathLoss::FreeSpace, stages)
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
    fn the_budget_is_the_chain_s_stages_apart() {
        // Deterministic stages make the path loss, drawn ones the
        // shadowing, each the sum of its stages.
        let c = shadow_cfg(Some(2.5));
        let mut link = Link::new(&c, "ap", "car", 3, 1);
        let (tx, rx) = (at(0.0), at(250.0));
        let b = link.budget(&c, Dbm(15.0), &tx, &rx);
        let free =
            PathLoss::FreeSpace.loss(Meters(250.0), Meters(1.5), Meters(1.5), c.wavelength());
        assert_eq!(b.path_loss, free);
        let mut draws = c.chain.open("link/ap/car", 3, 1);
        let field = frozen().gain(&tx, &rx, &mut draws);
        let offset = RunShadowing { sigma: Db(2.5) }.gain(&tx, &rx, &mut draws);
        assert!(field != 0.0 && offset != 0.0);
        assert_eq!(b.shadowing, Db(field + offset));
        assert_eq!(b.rx_power, Dbm(15.0) - free + Db(field + offset));
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

    #[test]
    fn without_a_run_offset_the_run_seed_leaves_the_large_scale_signal_alone() {
        let still = shadow_cfg(None);
        assert_eq!(
            Link::new(&still, "ap", "car", 1, 3)
                .budget(&still, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing,
            Link::new(&still, "ap", "car", 1, 4)
                .budget(&still, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing
        );
        let with = shadow_cfg(Some(2.5));
        assert_ne!(
            Link::new(&with, "ap", "car", 1, 3)
                .budget(&with, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing,
            Link::new(&with, "ap", "car", 1, 4)
                .budget(&with, Dbm(0.0), &at(0.0), &at(90.0))
                .shadowing
        );
    }

    #[test]
    fn reach_bounds_every_arrival_above_the_floor() {
        // Rayleigh fading and 6 dB shadowing over many links: no sample
        // beyond the reach clears the floor, and the reach is where the
        // mean power plus the largest excess meets it.
        let model = PathLoss::LogDistance {
            exponent: 3.0,
            reference: Meters(1.0),
        };
        let mut c = test_chain(model.clone(), vec![Arc::new(frozen())]);
        c.fading = FadingKind::Rayleigh;
        let floor = Dbm(-125.0);
        let reach = c.reach(Dbm(20.0), Db(0.0), Meters(1.5), floor);
        let mean_at_reach = 20.0
            - model
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
        let mut c = shadow_cfg(Some(2.0));
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
    fn propagation_delay_is_distance_over_c() {
        assert_eq!(
            propagation_delay(Meters(299.792458)),
            SimTime::from_ns(1000)
        );
    }
}
