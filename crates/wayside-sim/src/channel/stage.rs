//! The chain of loss stages every link goes through, behind one trait
//! ([`Stage`]), as ns-3 chains its propagation loss models and Veins its
//! analogue models. A stage is either deterministic, a loss fixed by the
//! geometry of the line between the antennas (path loss, buildings), or
//! drawn, a gain each link draws once and keeps (shadowing). The
//! `[environment]` section lowers into the chain of one scenario; stages it
//! does not ask for are left out, not run at zero.

use super::field::ShadowingField;
use crate::geometry::Vec2;
use crate::units::{Db, Meters};
use std::fmt;
use std::sync::Arc;

/// One end of a link as seen by the channel at the instant of transmission.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub position: Vec2,
    pub height: Meters,
    pub antenna_gain: Db,
    /// Distance travelled since the start; drives fading.
    pub odometer: Meters,
}

/// One stage of the chain.
pub trait Stage: fmt::Debug + Send + Sync {
    /// Its deterministic loss in dB on the line from `tx` to `rx` (0 for a
    /// stage that draws).
    fn loss(&self, _tx: &Endpoint, _rx: &Endpoint) -> f64 {
        0.0
    }

    /// Its deterministic loss in dB between antennas `height` high `d`
    /// apart with nothing in between: what a reach and a node's `range`
    /// are computed from.
    fn clear_loss(&self, _d: Meters, _height: Meters) -> f64 {
        0.0
    }

    /// Draws what it keeps per link into `link`, for the pair named by
    /// `key` in run `run` of `seed`.
    fn open(&self, _link: &mut LinkDraws, _key: &str, _seed: u64, _run: u64) {}

    /// The gain in dB it draws for the link from `tx` to `rx`, from what
    /// it drew into `link` (0 for a deterministic stage).
    fn gain(&self, _tx: &Endpoint, _rx: &Endpoint, _link: &mut LinkDraws) -> f64 {
        0.0
    }

    /// Keeps the link's draws in memory from now on (the values are the
    /// same either way).
    fn hold(&self, _link: &mut LinkDraws) {}

    /// The standard deviation of the gain it draws, which stays within
    /// ±[`super::SHADOWING_CLIP`] of it (0 if deterministic).
    fn sigma(&self) -> Db {
        Db(0.0)
    }
}

/// What one link keeps for the stages that draw: the frozen field's draws
/// and this run's offset. A stage that draws has its place here, so that a
/// link stays a few words.
#[derive(Clone, Debug, Default)]
pub struct LinkDraws {
    pub(super) field: Option<ShadowingField>,
    pub(super) run_offset: f64,
}

/// The stages of one scenario, in the order they apply.
#[derive(Clone, Debug, Default)]
pub struct Chain(Vec<Arc<dyn Stage>>);

impl Chain {
    /// The chain of `stages`, in order.
    pub fn new(stages: Vec<Arc<dyn Stage>>) -> Chain {
        Chain(stages)
    }

    /// The deterministic loss of every stage on the line from `tx` to `rx`.
    pub fn loss(&self, tx: &Endpoint, rx: &Endpoint) -> Db {
        Db(self.0.iter().fold(0.0, |sum, s| sum + s.loss(tx, rx)))
    }

    /// The deterministic loss between antennas `height` high `d` apart on
    /// a clear line.
    pub fn clear_loss(&self, d: Meters, height: Meters) -> Db {
        Db(self
            .0
            .iter()
            .fold(0.0, |sum, s| sum + s.clear_loss(d, height)))
    }

    /// A new link's draws, for the pair named by `key`.
    pub fn open(&self, key: &str, seed: u64, run: u64) -> LinkDraws {
        let mut link = LinkDraws::default();
        for s in &self.0 {
            s.open(&mut link, key, seed, run);
        }
        link
    }

    /// The gain every stage draws for the link from `tx` to `rx`.
    pub fn gain(&self, tx: &Endpoint, rx: &Endpoint, link: &mut LinkDraws) -> Db {
        Db(self.0.iter().fold(0.0, |sum, s| sum + s.gain(tx, rx, link)))
    }

    /// Keeps every stage's draws of `link` in memory.
    pub fn hold(&self, link: &mut LinkDraws) {
        for s in &self.0 {
            s.hold(link);
        }
    }

    /// The sum of the stages' spreads (each clipped at the same multiple).
    pub fn sigma(&self) -> Db {
        Db(self.0.iter().fold(0.0, |sum, s| sum + s.sigma().0))
    }
}
