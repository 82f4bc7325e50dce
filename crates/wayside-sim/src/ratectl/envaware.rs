//! Environment-aware rate selection, the idea of Hadaller et al. (2007, §8):
//! a roadside AP takes part in every pass, signal strength per road
//! position repeats from pass to pass (§4.1), so the AP can remember the
//! signal it saw per position and choose the initial rate and the rate per
//! position of a new pass from that memory instead of learning it again in
//! the few seconds a drive-by lasts. This is our design, not a published
//! algorithm.
//!
//! # The map ([`SnrMap`])
//! A square grid of `bin` (10 m) cells over the road plane. Each cell keeps
//! the mean, in dB, of the *link gain over noise* — SNR of a frame heard
//! intact from the client minus the client's transmit power — observed while
//! the client was in that cell. The gain is reciprocal (same path loss and
//! shadowing both ways, equal noise floors assumed), so the SNR of the AP's
//! own frames there is estimated as gain + the AP's transmit power.
//!
//! **Assumptions**: the client carries its GPS position and its transmit
//! power in its frames (as a vendor element; 802.11h's TPC report carries
//! the power). The AP keys observations by the position carried in each
//! frame and, when choosing a rate, looks up the position carried in the
//! last frame it heard from the client (a few milliseconds old during a
//! transfer). Positions are exact (GPS error is well below a 10 m cell).
//!
//! # Rules
//! - **Map rate**: if the client's cell has at least `min_samples` (3)
//!   observations — else the nearest cells that do, up to `reach` (3) cells
//!   away, taking the lowest among equally near ones — the base rate is the
//!   highest rate whose frame success at (estimated SNR − `margin`) reaches
//!   `min_success` — the rule of [`super::Ideal`], with the map's estimate
//!   in place of the true SNR. (Where a connection starts, the client
//!   has sent little on earlier passes: its association frames, and then
//!   nothing until the transfer starts a second or two later, so the cells
//!   just before the first data are often empty.)
//! - **Fallback**: with no usable cell (first pass, or a cell never
//!   visited) the base rate is the rate last used, starting at the lowest
//!   (§8: initial parameters suitable for marginal coverage).
//! - **Short-term correction**: `down_after` (2) consecutive frames whose
//!   first attempt failed lower the rate one step, `up_after` (10)
//!   consecutive frames whose first attempt succeeded raise it one step.
//!   Under the map the steps move a correction relative to the map rate
//!   that never goes above it (the map is the ceiling, failures show where
//!   it is wrong); in fallback they move the rate itself.
//! - **Learning**: every frame heard intact from the client adds one
//!   observation to this pass's map ([`EnvAware::observed`]); the next pass
//!   starts from the prior map merged with what every link observed.
//! - **Beacon hints** (`beacon_hints`, for a cooperating station): the AP
//!   advertises its map in its beacons; a station with hints looks the
//!   map up at *its own* position and adds its own transmit power — the
//!   same estimate, for its frames (TCP ACKs) to the AP. A station does not
//!   learn (the AP, its peer, does not move).
//!
//! **Retry chain**: `[r × 4, r−1 × 2, lowest × 2]`, as [`super::Ideal`].
//!
//! # Earlier passes
//! `training_passes` = N runs the scenario N times before the measured run,
//! each with its own run-stream seed drawn from (seed, run) but the same
//! environment seed — same shadowing, new fading, backoff and traffic —
//! and hands each pass the map learned so far (see
//! `run::train_rate_maps`). We chose this over a map file written by one
//! run and read by another because a run stays one self-contained,
//! deterministic call: a sweep over seeds needs no ordering between runs
//! and no files, and (seed, run) alone reproduces the result.

use super::ideal::{rate_lower_lowest, Ideal, IdealParams};
use super::{RateControl, RetryChain, RxObservation, TxRequest, TxStatus};
use crate::mobility::Vec2;
use crate::phy::mode::Mode;
use crate::units::{Db, Meters};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Mean link gain over noise (SNR − sender's transmit power, dB) per grid cell.
#[derive(Clone, Debug, PartialEq)]
pub struct SnrMap {
    bin: Meters,
    /// Cell → (sum of gains in dB, samples).
    cells: BTreeMap<(i64, i64), (f64, u32)>,
}

impl SnrMap {
    pub fn new(bin: Meters) -> SnrMap {
        assert!(bin.0 > 0.0, "map cells need a positive size");
        SnrMap {
            bin,
            cells: BTreeMap::new(),
        }
    }

    fn cell(&self, p: Vec2) -> (i64, i64) {
        (
            (p.x / self.bin.0).floor() as i64,
            (p.y / self.bin.0).floor() as i64,
        )
    }

    /// Adds one observation of `gain` at `p`.
    pub fn add(&mut self, p: Vec2, gain: Db) {
        let c = self.cell(p);
        let e = self.cells.entry(c).or_insert((0.0, 0));
        e.0 += gain.0;
        e.1 += 1;
    }

    /// The estimate at `p`: the mean of its cell if that has `min_samples`,
    /// else of the nearest cells (ring by ring, up to `reach` cells away)
    /// that have them — the lowest mean among those equally near.
    pub fn estimate(&self, p: Vec2, min_samples: u32, reach: u32) -> Option<Db> {
        let (cx, cy) = self.cell(p);
        let usable = |c: (i64, i64)| {
            self.cells
                .get(&c)
                .filter(|e| e.1 >= min_samples.max(1))
                .map(|e| e.0 / f64::from(e.1))
        };
        (0..=i64::from(reach)).find_map(|d| {
            let ring = (-d..=d).flat_map(|i| {
                [
                    (cx + i, cy - d),
                    (cx + i, cy + d),
                    (cx - d, cy + i),
                    (cx + d, cy + i),
                ]
            });
            ring.filter_map(usable).reduce(f64::min).map(Db)
        })
    }

    /// Adds every observation of `other` (same cell size) to this map.
    pub fn merge(&mut self, other: &SnrMap) {
        assert_eq!(self.bin, other.bin, "maps with different cell sizes");
        for (c, (sum, n)) in &other.cells {
            let e = self.cells.entry(*c).or_insert((0.0, 0));
            e.0 += sum;
            e.1 += n;
        }
    }

    /// Number of cells with at least one observation.
    pub fn cells(&self) -> usize {
        self.cells.len()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnvAwareParams {
    /// Passes simulated before the measured run to fill the map.
    pub training_passes: u32,
    /// Grid cell size.
    pub bin: Meters,
    /// Observations a cell needs before it is used.
    pub min_samples: u32,
    /// How many cells away an empty cell may borrow an estimate from.
    pub reach: u32,
    /// Subtracted from the map's SNR estimate before choosing.
    pub margin: Db,
    /// Frame success probability the chosen rate must reach; error model.
    pub ideal: IdealParams,
    /// Consecutive first-attempt failures that lower the rate one step.
    pub down_after: u32,
    /// Consecutive first-attempt successes that raise it one step.
    pub up_after: u32,
    /// Station: use the map the AP advertises in its beacons.
    pub beacon_hints: bool,
    /// What earlier passes learned (empty without training).
    pub map: Arc<SnrMap>,
}

impl super::Params for EnvAwareParams {
    fn training_passes(&self) -> u32 {
        self.training_passes
    }
    fn prior(&self) -> Option<&Arc<SnrMap>> {
        Some(&self.map)
    }
    fn set_prior(&mut self, map: Arc<SnrMap>) {
        self.map = map;
    }
    /// An AP advertises its map; a station that takes hints does not learn.
    fn advertised(&self) -> Option<&Arc<SnrMap>> {
        (!self.beacon_hints).then_some(&self.map)
    }
    fn takes_hints(&self) -> bool {
        self.beacon_hints
    }
}

impl Default for EnvAwareParams {
    fn default() -> Self {
        let bin = Meters(10.0);
        EnvAwareParams {
            training_passes: 0,
            bin,
            min_samples: 3,
            reach: 3,
            margin: Db(0.0),
            ideal: IdealParams::default(),
            down_after: 2,
            up_after: 10,
            beacon_hints: false,
            map: Arc::new(SnrMap::new(bin)),
        }
    }
}

#[derive(Clone, Debug)]
pub struct EnvAware {
    modes: &'static [Mode],
    params: EnvAwareParams,
    oracle: Ideal,
    /// This pass's observations.
    seen: SnrMap,
    /// The map an AP advertised in its beacons (stations with hints).
    hint: Option<Arc<SnrMap>>,
    /// Correction to the map rate, in rate steps (≤ 0).
    adjust: i64,
    /// Rate used when the map has nothing.
    fallback: usize,
    /// Whether the last chain came from the map.
    from_map: bool,
    successes: u32,
    failures: u32,
}

impl EnvAware {
    pub fn new(modes: &'static [Mode], params: EnvAwareParams) -> Self {
        assert!(
            !modes.is_empty(),
            "environment-aware rate control needs at least one mode"
        );
        EnvAware {
            modes,
            oracle: Ideal::new(modes, params.ideal.clone()),
            seen: SnrMap::new(params.bin),
            hint: None,
            adjust: 0,
            fallback: 0,
            from_map: false,
            successes: 0,
            failures: 0,
            params,
        }
    }

    /// The link gain the map predicts for this frame, if any.
    fn gain(&self, req: &TxRequest) -> Option<Db> {
        let (min, reach) = (self.params.min_samples, self.params.reach);
        match &self.hint {
            Some(h) => h.estimate(req.position, min, reach),
            None => req
                .peer_position
                .and_then(|p| self.params.map.estimate(p, min, reach)),
        }
    }

    fn top(&self) -> i64 {
        self.modes.len() as i64 - 1
    }
}

impl RateControl for EnvAware {
    /// A map advertised by the AP in a beacon (used only with `beacon_hints`).
    fn hint(&mut self, map: &Arc<SnrMap>) {
        if self.params.beacon_hints {
            self.hint = Some(Arc::clone(map));
        }
    }
    /// This pass's observations.
    fn observed(&self) -> Option<&SnrMap> {
        Some(&self.seen)
    }
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        let r = match self.gain(req) {
            Some(g) => {
                let snr = Db(g.0 + req.tx_power.0 - self.params.margin.0);
                let base = self.oracle.pick(snr, req.bytes) as i64;
                self.adjust = self.adjust.clamp(-base, 0);
                self.from_map = true;
                (base + self.adjust) as usize
            }
            None => {
                self.from_map = false;
                self.fallback
            }
        };
        self.fallback = r;
        rate_lower_lowest(self.modes, r, self.params.ideal.tries)
    }

    fn report(&mut self, status: &TxStatus) {
        let first_ok = status.acked && status.attempts == 1;
        if first_ok {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.failures += 1;
            self.successes = 0;
        }
        let step = if self.failures >= self.params.down_after.max(1) {
            -1
        } else if self.successes >= self.params.up_after.max(1) {
            1
        } else {
            return;
        };
        self.successes = 0;
        self.failures = 0;
        if self.from_map {
            self.adjust += step; // kept at or below the map rate when next used
        } else {
            self.fallback = (self.fallback as i64 + step).clamp(0, self.top()) as usize;
        }
    }

    fn observe(&mut self, obs: &RxObservation) {
        if !self.params.beacon_hints {
            self.seen
                .add(obs.peer_position, Db(obs.snr.0 - obs.peer_tx_power.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{mbps, Channel};
    use super::*;
    use crate::phy::error::{snr_threshold, ErrorModelKind};
    use crate::phy::mode::Standard;
    use crate::units::{Dbm, SimTime};

    const POWER: Dbm = Dbm(19.0);

    fn threshold(modes: &[Mode], i: usize) -> f64 {
        snr_threshold(&ErrorModelKind::default(), &modes[i], 1528, 0.9).0
    }

    /// A map whose cell at x = 5 m says the AP's frames arrive at `snr`.
    fn map_with(snr: f64, samples: u32) -> Arc<SnrMap> {
        let mut m = SnrMap::new(Meters(10.0));
        for _ in 0..samples {
            m.add(Vec2::new(5.0, 0.0), Db(snr - POWER.0));
        }
        Arc::new(m)
    }

    fn channel(modes: &'static [Mode], p: Vec<f64>) -> Channel {
        let mut ch = Channel::new(modes, p);
        ch.tx_power = POWER;
        ch.peer_position = Some(Vec2::new(3.0, 0.0));
        ch
    }

    #[test]
    fn map_cells_average_and_merge() {
        let mut a = SnrMap::new(Meters(10.0));
        a.add(Vec2::new(1.0, 1.0), Db(-10.0));
        a.add(Vec2::new(9.0, 2.0), Db(-20.0));
        a.add(Vec2::new(-1.0, 1.0), Db(0.0));
        assert_eq!(a.estimate(Vec2::new(5.0, 5.0), 1, 0), Some(Db(-15.0)));
        assert_eq!(a.estimate(Vec2::new(5.0, 5.0), 3, 0), None);
        assert_eq!(a.estimate(Vec2::new(-5.0, 5.0), 1, 0), Some(Db(0.0)));
        assert_eq!(a.estimate(Vec2::new(15.0, 5.0), 1, 0), None);
        // An empty cell borrows from the nearest usable ones, the lowest of
        // equally near ones, within reach.
        assert_eq!(a.estimate(Vec2::new(15.0, 5.0), 1, 1), Some(Db(-15.0)));
        assert_eq!(a.estimate(Vec2::new(-25.0, 5.0), 1, 1), None);
        assert_eq!(a.estimate(Vec2::new(-25.0, 5.0), 1, 2), Some(Db(0.0)));
        a.add(Vec2::new(-21.0, 1.0), Db(-40.0));
        assert_eq!(a.estimate(Vec2::new(-25.0, 5.0), 1, 2), Some(Db(-40.0)));
        assert_eq!(a.estimate(Vec2::new(-15.0, 5.0), 1, 2), Some(Db(-40.0)));
        let mut b = SnrMap::new(Meters(10.0));
        b.add(Vec2::new(2.0, 2.0), Db(-30.0));
        a.merge(&b);
        assert_eq!(a.estimate(Vec2::new(5.0, 5.0), 3, 0), Some(Db(-20.0)));
        assert_eq!(a.cells(), 3);
    }

    #[test]
    fn map_rate_is_the_highest_whose_threshold_the_estimate_clears() {
        let g = Standard::G.modes();
        for (i, want) in [(7, 7usize), (9, 9), (11, 11)] {
            let snr = threshold(g, i) + 0.05;
            let mut rc = EnvAware::new(
                g,
                EnvAwareParams {
                    map: map_with(snr, 3),
                    ..EnvAwareParams::default()
                },
            );
            let ch = channel(g, vec![1.0; 12]);
            assert_eq!(rc.retry_chain(&ch.request()).stages[0].mode, g[want]);
            // The margin moves the choice below the threshold.
            let p = EnvAwareParams {
                map: map_with(snr, 3),
                margin: Db(0.1),
                ..EnvAwareParams::default()
            };
            assert!(
                EnvAware::new(g, p).retry_chain(&ch.request()).stages[0]
                    .mode
                    .rate
                    < g[want].rate
            );
        }
        // The transmit power enters the estimate: 10 dB less power, lower rate.
        let snr = threshold(g, 11) + 0.05;
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(snr, 3),
                ..EnvAwareParams::default()
            },
        );
        let mut ch = channel(g, vec![1.0; 12]);
        ch.tx_power = Dbm(9.0);
        assert!(rc.retry_chain(&ch.request()).stages[0].mode.rate < g[11].rate);
    }

    #[test]
    fn initial_rate_comes_from_the_map_else_the_lowest() {
        let g = Standard::G.modes();
        let ch = channel(g, vec![1.0; 12]);
        let mut trained = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(40.0, 3),
                ..EnvAwareParams::default()
            },
        );
        assert_eq!(
            mbps(&trained.retry_chain(&ch.request())),
            [(54.0, 4), (48.0, 2), (1.0, 2)]
        );
        let mut fresh = EnvAware::new(g, EnvAwareParams::default());
        assert_eq!(mbps(&fresh.retry_chain(&ch.request())), [(1.0, 8)]);
        // Too few samples in the cell: no map.
        let mut thin = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(40.0, 2),
                ..EnvAwareParams::default()
            },
        );
        assert_eq!(
            thin.retry_chain(&ch.request()).stages[0].mode.rate.mbps(),
            1.0
        );
        // No position heard from the client yet: no map.
        let mut blind = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(40.0, 3),
                ..EnvAwareParams::default()
            },
        );
        let mut ch2 = channel(g, vec![1.0; 12]);
        ch2.peer_position = None;
        assert_eq!(
            blind.retry_chain(&ch2.request()).stages[0].mode.rate.mbps(),
            1.0
        );
    }

    #[test]
    fn consecutive_failures_step_below_a_wrong_map_and_successes_return_to_it() {
        let g = Standard::G.modes();
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(40.0, 3),
                ..EnvAwareParams::default()
            },
        );
        // The channel supports only 24 Mbps (index 8).
        let mut ch = channel(g, Channel::cliff(g, 24.0));
        let firsts: Vec<f64> = (0..12)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert_eq!(
            firsts,
            [54.0, 54.0, 48.0, 48.0, 36.0, 36.0, 24.0, 24.0, 24.0, 24.0, 24.0, 24.0]
        );
        // Now the channel is good again: ten first-attempt successes per step up,
        // never above the map.
        ch.p = vec![1.0; 12];
        let firsts: Vec<f64> = (0..40)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert_eq!(firsts[..4], [24.0; 4]);
        assert_eq!(firsts[6], 36.0);
        assert_eq!(firsts[16], 48.0);
        assert_eq!(firsts[26], 54.0);
        assert!(firsts[27..].iter().all(|&r| r == 54.0), "{firsts:?}");
    }

    #[test]
    fn the_map_rate_is_a_ceiling() {
        let g = Standard::G.modes();
        let snr = threshold(g, 8) + 0.05; // 24 Mbps
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(snr, 3),
                ..EnvAwareParams::default()
            },
        );
        let mut ch = channel(g, vec![1.0; 12]);
        let firsts: Vec<f64> = (0..50)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert!(firsts.iter().all(|&r| r == 24.0), "{firsts:?}");
    }

    #[test]
    fn leaving_the_map_keeps_the_last_rate() {
        let g = Standard::G.modes();
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(40.0, 3),
                ..EnvAwareParams::default()
            },
        );
        let mut ch = channel(g, vec![1.0; 12]);
        assert_eq!(ch.send(&mut rc).0.stages[0].mode.rate.mbps(), 54.0);
        // Far from any mapped cell: carry on at the map's last rate, not the lowest.
        ch.peer_position = Some(Vec2::new(500.0, 0.0));
        assert_eq!(ch.send(&mut rc).0.stages[0].mode.rate.mbps(), 54.0);
        ch.p = Channel::cliff(g, 36.0);
        let firsts: Vec<f64> = (0..5)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert_eq!(firsts, [54.0, 54.0, 48.0, 48.0, 36.0]);
    }

    #[test]
    fn without_a_map_the_rate_steps_up_and_down_by_itself() {
        let g = Standard::G.modes();
        let mut rc = EnvAware::new(g, EnvAwareParams::default());
        let mut ch = channel(g, Channel::cliff(g, 11.0));
        let firsts: Vec<f64> = (0..70)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        // 1 → 2 → 5.5 → 6 → 9 → 11 every ten successes, then 12 fails twice and
        // it comes back to 11.
        assert_eq!(firsts[..10], [1.0; 10]);
        assert_eq!(firsts[10], 2.0);
        assert_eq!(firsts[50], 11.0);
        assert_eq!(firsts[60..63], [12.0, 12.0, 11.0]);
    }

    #[test]
    fn hints_are_looked_up_at_the_own_position_and_only_when_enabled() {
        let g = Standard::G.modes();
        let mut ch = channel(g, vec![1.0; 12]);
        ch.position = Vec2::new(5.0, 0.0);
        ch.peer_position = Some(Vec2::new(500.0, 0.0));
        let mut on = EnvAware::new(
            g,
            EnvAwareParams {
                beacon_hints: true,
                ..EnvAwareParams::default()
            },
        );
        on.hint(&map_with(40.0, 3));
        assert_eq!(
            on.retry_chain(&ch.request()).stages[0].mode.rate.mbps(),
            54.0
        );
        let mut off = EnvAware::new(g, EnvAwareParams::default());
        off.hint(&map_with(40.0, 3));
        assert_eq!(
            off.retry_chain(&ch.request()).stages[0].mode.rate.mbps(),
            1.0
        );
    }

    #[test]
    fn observations_record_gain_at_the_peer_position() {
        let g = Standard::G.modes();
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: map_with(30.0, 1),
                ..EnvAwareParams::default()
            },
        );
        for _ in 0..3 {
            rc.observe(&RxObservation {
                now: SimTime::ZERO,
                snr: Db(20.0),
                peer_tx_power: Dbm(15.0),
                peer_position: Vec2::new(7.0, 0.0),
            });
        }
        // Three observations of 20 − 15 = 5 dB; the prior is not among them.
        assert_eq!(
            rc.observed().unwrap().estimate(Vec2::new(5.0, 0.0), 3, 0),
            Some(Db(5.0))
        );
        assert_eq!(
            rc.observed().unwrap().estimate(Vec2::new(5.0, 0.0), 4, 0),
            None
        );
        // A station with hints learns nothing.
        let mut sta = EnvAware::new(
            g,
            EnvAwareParams {
                beacon_hints: true,
                ..EnvAwareParams::default()
            },
        );
        sta.observe(&RxObservation {
            now: SimTime::ZERO,
            snr: Db(20.0),
            peer_tx_power: Dbm(15.0),
            peer_position: Vec2::new(7.0, 0.0),
        });
        assert_eq!(sta.observed().unwrap().cells(), 0);
    }
}
