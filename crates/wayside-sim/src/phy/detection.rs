//! Preamble detection decided from a table: the probability that a
//! preamble and PLCP header are detected rises with the SINR, so a table of
//! it over a grid of SINRs brackets the probability at any SINR between two
//! of its points, and a detection draw that falls outside the bracket is
//! decided without evaluating the error model. A draw inside it (or off
//! the grid) asks the model, so every decision is the one the model gives.

use crate::phy::error::{ErrorModel, ErrorModelKind};
use crate::phy::mode::Mode;
use crate::units::Db;

/// The grid: every 0.05 dB from −40 dB to +40 dB SINR.
const LOWEST_DB: f64 = -40.0;
const STEP_DB: f64 = 0.05;
const POINTS: usize = 1601;

/// How far a probability computed at one SINR may stray from the rise it
/// follows (rounding in the model's arithmetic), relative to it.
const SLACK: f64 = 1e-9;

/// The detection probability of one header mode and length over the grid.
#[derive(Clone, Debug)]
struct Table {
    mode: Mode,
    bits: u64,
    /// The grid's SINRs, as ratios, ascending.
    sinr: Vec<f64>,
    /// The probability at each.
    p: Vec<f64>,
}

/// Detection tables for the header modes met so far, with the model.
#[derive(Clone, Debug)]
pub struct Detection {
    model: ErrorModelKind,
    tables: Vec<Table>,
}

impl Detection {
    pub fn new(model: ErrorModelKind) -> Detection {
        Detection {
            model,
            tables: Vec::new(),
        }
    }

    /// The probability the model gives that a header of `bits` bits sent
    /// at `mode` is detected at SINR `sinr` (a ratio).
    pub fn probability(&self, mode: &Mode, sinr: f64, bits: u64) -> f64 {
        self.model.chunk_success(mode, Db::from_ratio(sinr), bits)
    }

    /// Makes the table for headers of `bits` bits sent at `mode`.
    pub fn prepare(&mut self, mode: &Mode, bits: u64) {
        if self.table(mode, bits).is_some() {
            return;
        }
        let sinr: Vec<f64> = (0..POINTS)
            .map(|k| Db(LOWEST_DB + STEP_DB * k as f64).ratio())
            .collect();
        let p = sinr
            .iter()
            .map(|&r| self.probability(mode, r, bits))
            .collect();
        self.tables.push(Table {
            mode: *mode,
            bits,
            sinr,
            p,
        });
    }

    fn table(&self, mode: &Mode, bits: u64) -> Option<&Table> {
        self.tables.iter().find(|t| t.mode == *mode && t.bits == bits)
    }

    /// Whether draw `u` (uniform in [0, 1)) detects a header of `bits` bits
    /// sent at `mode` at SINR `sinr` (a ratio): `u` under the probability.
    pub fn detected(&self, mode: &Mode, sinr: f64, bits: u64, u: f64) -> bool {
        if let Some(t) = self.table(mode, bits) {
            let k = t.sinr.partition_point(|&r| r <= sinr);
            // The probability is at least that at the point below, and at
            // most that at the point above.
            if k > 0 && u < t.p[k - 1] * (1.0 - SLACK) {
                return true;
            }
            if k < POINTS && u >= t.p[k] * (1.0 + SLACK) {
                return false;
            }
        }
        u < self.probability(mode, sinr, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mode::Standard;
    use crate::rng::Stream;

    #[test]
    fn decides_every_draw_as_the_model_does() {
        for (standard, bits) in [(Standard::B, 48), (Standard::A, 24)] {
            let mut d = Detection::new(ErrorModelKind::default());
            let mode = standard.modes()[0];
            d.prepare(&mode, bits);
            let mut rng = Stream::new("run", 1, 0, "detection-test");
            let (mut yes, mut no) = (0, 0);
            for _ in 0..200_000 {
                let sinr = Db(-45.0 + 90.0 * rng.uniform()).ratio();
                let u = rng.uniform();
                let model = u < d.probability(&mode, sinr, bits);
                assert_eq!(d.detected(&mode, sinr, bits, u), model, "sinr {sinr} u {u}");
                if model {
                    yes += 1;
                } else {
                    no += 1;
                }
            }
            assert!(yes > 1000 && no > 1000, "{yes} detected, {no} not");
        }
    }
}
