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
//! the *link gain over noise* — SNR of a frame heard intact from the client
//! minus the client's transmit power — of every frame heard while the
//! client was in that cell: their mean, and how many fell in each 1 dB
//! step. The spread is what fading (and the position within the cell) does
//! to one frame there; §8 asks the AP to learn "how rapidly the signal
//! quality changes" as well as its pattern. The gain is reciprocal (same
//! path loss and shadowing both ways, equal noise floors assumed), so the
//! SNR of the AP's own frames there is estimated as gain + the AP's
//! transmit power.
//!
//! **Assumptions**: the client carries its GPS position and its transmit
//! power in its frames (as a vendor element; 802.11h's TPC report carries
//! the power). The AP keys observations by the position carried in each
//! frame and, when choosing a rate, looks up the position carried in the
//! last frame it heard from the client (a few milliseconds old during a
//! transfer). Positions are exact (GPS error is well below a 10 m cell).
//!
//! # Rules
//! - **Map rate**: the cell that speaks for the client's position is its
//!   own if it has at least `min_samples` (3) observations, else the
//!   nearest cells that do, up to `reach` (3) cells away, the one with the
//!   lowest mean among equally near ones. (Where a connection starts, the
//!   client has sent little on earlier passes: its association frames, and
//!   then nothing until the transfer starts a second or two later, so the
//!   cells just before the first data are often empty.) Each rate's
//!   first-attempt success is predicted as the mean, over the cell's
//!   observations, of the error model's success for this frame at
//!   (observed gain + own transmit power − `margin`); the map rate is the
//!   one whose retry chain delivers the most frames per unit of airtime
//!   (the standard's timing, backoff doubling per try), taking the tries as
//!   independent. Under fading this is not the highest rate that nearly
//!   always works: a rate that gets three first attempts in four through
//!   may carry more.
//! - **Fallback**: with no usable cell (first pass, or a cell never
//!   visited) the base rate is the rate last used, starting at the lowest
//!   (§8: initial parameters suitable for marginal coverage).
//! - **Short-term correction**: a run of frames whose first attempt failed
//!   lowers the rate one step — a run that would happen less than 1% of
//!   the time if the map's prediction held (at least `down_after` (2), at
//!   most 8: 2 for a rate predicted to get 90% through, 4 for 75%, 7 for
//!   50%) — and `up_after` (10) consecutive first-attempt successes raise
//!   it one step. Under the map the steps move a correction relative to
//!   the map rate that never goes above it (the map is the ceiling,
//!   failures show where it is wrong) and that starts again at 0 in every
//!   new cell (10 m: half a second at 80 km/h), so a wrong cell does not
//!   drag the rate down for the rest of the pass; in fallback the steps
//!   move the rate itself.
//! - **Learning**: every frame heard intact from the client adds one
//!   observation to this pass's map ([`EnvAware::observed`]); the next pass
//!   starts from the prior map merged with what every link observed.
//! - **Beacon hints** (`beacon_hints`, for a cooperating station): the AP
//!   advertises its map in its beacons; a station with hints looks the
//!   map up at *its own* position and adds its own transmit power — the
//!   same estimate, for its frames (TCP ACKs) to the AP. A station does not
//!   learn (the AP, its peer, does not move).
//!
//! **Retry chain**: `[r × 4, r−1 × 2, lowest × 2]`, as [`super::Ideal`]'s.
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

use super::common::{index_of, standard_of, tx_time_us, Estimate};
use super::ideal::rate_lower_lowest;
use super::{RateControl, RetryChain, RxObservation, TxRequest, TxStatus};
use crate::geometry::Vec2;
use crate::phy::error::{ErrorModel, ErrorModelKind};
use crate::phy::mode::{Mode, Standard};
use crate::units::{Db, Meters};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Link gain over noise (SNR − sender's transmit power, dB) per grid cell:
/// the mean, and how the observations spread (1 dB steps), which is what
/// fading does to a frame there.
#[derive(Clone, Debug, PartialEq)]
pub struct SnrMap {
    bin: Meters,
    cells: BTreeMap<(i64, i64), Cell>,
}

/// One cell's observations.
#[derive(Clone, Debug, Default, PartialEq)]
struct Cell {
    /// Sum of the gains in dB.
    sum: f64,
    samples: u32,
    /// Observations per 1 dB step (key k: gains in [k, k + 1) dB).
    steps: BTreeMap<i32, u32>,
}

impl Cell {
    fn mean(&self) -> f64 {
        self.sum / f64::from(self.samples)
    }
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
        let e = self.cells.entry(c).or_default();
        e.sum += gain.0;
        e.samples += 1;
        *e.steps.entry(gain.0.floor() as i32).or_insert(0) += 1;
    }

    /// The cell that speaks for `p`: its own if that has `min_samples`,
    /// else the nearest cells (ring by ring, up to `reach` cells away) that
    /// have them — the one with the lowest mean among those equally near.
    fn lookup(&self, p: Vec2, min_samples: u32, reach: u32) -> Option<((i64, i64), &Cell)> {
        let (cx, cy) = self.cell(p);
        let usable = |c: (i64, i64)| {
            self.cells
                .get(&c)
                .filter(|e| e.samples >= min_samples.max(1))
                .map(|e| (c, e))
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
            ring.filter_map(usable)
                .reduce(|a, b| if b.1.mean() < a.1.mean() { b } else { a })
        })
    }

    /// The mean gain of the cell that speaks for `p` (see `lookup`).
    pub fn estimate(&self, p: Vec2, min_samples: u32, reach: u32) -> Option<Db> {
        self.lookup(p, min_samples, reach)
            .map(|(_, c)| Db(c.mean()))
    }

    /// Adds every observation of `other` (same cell size) to this map.
    pub fn merge(&mut self, other: &SnrMap) {
        assert_eq!(self.bin, other.bin, "maps with different cell sizes");
        for (c, o) in &other.cells {
            let e = self.cells.entry(*c).or_default();
            e.sum += o.sum;
            e.samples += o.samples;
            for (k, n) in &o.steps {
                *e.steps.entry(*k).or_insert(0) += n;
            }
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
    /// Subtracted from every SNR the map predicts before choosing.
    pub margin: Db,
    /// Tries at the chosen rate, the next lower one and the lowest.
    pub tries: [u8; 3],
    /// How the success of an attempt is predicted from its SNR.
    pub error_model: ErrorModelKind,
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
            tries: [4, 2, 2],
            error_model: ErrorModelKind::default(),
            down_after: 2,
            up_after: 10,
            beacon_hints: false,
            map: Arc::new(SnrMap::new(bin)),
        }
    }
}

/// A map cell's choice for one frame size and transmit power: the rate and
/// every rate's predicted first-attempt success there.
#[derive(Clone, Debug)]
struct Choice {
    rate: usize,
    success: Vec<f64>,
}

/// Least consecutive first-attempt failures that lower the rate: the run
/// that would happen less than 1% of the time if the map's success
/// prediction `p` held (at least `floor`, at most [`MAX_DOWN_AFTER`]).
fn down_after(p: f64, floor: u32) -> u32 {
    let k = if p >= 1.0 {
        1.0
    } else if p <= 0.0 {
        f64::INFINITY
    } else {
        (0.01f64.ln() / (1.0 - p).ln()).ceil()
    };
    (k.min(f64::from(MAX_DOWN_AFTER)) as u32).max(floor.max(1))
}

/// Cap on [`down_after`]: a map whose first attempts fail this often in a
/// row is wrong whatever it predicted.
const MAX_DOWN_AFTER: u32 = 8;

/// Cells, frame sizes and powers a choice is cached for.
type ChoiceKey = ((i64, i64), u32, i64);

#[derive(Clone, Debug)]
pub struct EnvAware {
    modes: &'static [Mode],
    standard: Standard,
    params: EnvAwareParams,
    /// This pass's observations.
    seen: SnrMap,
    /// The map an AP advertised in its beacons (stations with hints).
    hint: Option<Arc<SnrMap>>,
    /// Choices made from the map in use (it does not change within a pass).
    choices: HashMap<ChoiceKey, Choice>,
    /// The cell the last choice came from.
    cell: Option<(i64, i64)>,
    /// Correction to the map rate in that cell, in rate steps (≤ 0).
    adjust: i64,
    /// Rate used when the map has nothing.
    fallback: usize,
    /// Predicted first-attempt success of the last chain's rate, if it came
    /// from the map.
    predicted: Option<f64>,
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
            standard: standard_of(modes),
            seen: SnrMap::new(params.bin),
            hint: None,
            choices: HashMap::new(),
            cell: None,
            adjust: 0,
            fallback: 0,
            predicted: None,
            successes: 0,
            failures: 0,
            params,
        }
    }

    /// The key of the map's choice for this frame in `choices`, if the map
    /// covers the position. A new cell starts without a correction.
    fn choice(&mut self, req: &TxRequest) -> Option<ChoiceKey> {
        let (min, reach) = (self.params.min_samples, self.params.reach);
        let (map, at) = match &self.hint {
            Some(h) => (h, req.position),
            None => (&self.params.map, req.peer_position?),
        };
        let (cell_key, cell) = map.lookup(at, min, reach)?;
        if self.cell != Some(cell_key) {
            self.cell = Some(cell_key);
            self.adjust = 0;
        }
        let key = (cell_key, req.bytes, (req.tx_power.0 * 100.0).round() as i64);
        self.choices
            .entry(key)
            .or_insert_with(|| choose(self.modes, self.standard, &self.params, cell, req));
        Some(key)
    }

    fn top(&self) -> i64 {
        self.modes.len() as i64 - 1
    }
}

/// The rate with the most frames delivered per unit of airtime through the
/// whole retry chain, each try succeeding with the rate's success averaged
/// over the cell's observations (each step's gain plus this node's transmit
/// power, less the margin, as the SNR), independently of the others.
fn choose(
    modes: &'static [Mode],
    standard: Standard,
    params: &EnvAwareParams,
    cell: &Cell,
    req: &TxRequest,
) -> Choice {
    let bits = 8 * u64::from(req.bytes);
    let n = f64::from(cell.samples);
    let offset = req.tx_power.0 - params.margin.0 + 0.5; // a step's middle
    let success: Vec<f64> = modes
        .iter()
        .map(|m| {
            let at = |(k, c): (&i32, &u32)| {
                f64::from(*c)
                    * params
                        .error_model
                        .chunk_success(m, Db(f64::from(*k) + offset), bits)
            };
            cell.steps.iter().map(at).sum::<f64>() / n
        })
        .collect();
    let delivered_per_us = |r: usize| {
        let chain = rate_lower_lowest(modes, r, params.tries);
        let time = |mode, tries| tx_time_us(Estimate::Standard, standard, mode, req.bytes, tries);
        let (mut left, mut us, mut tries) = (1.0, time(modes[r], 0), 0);
        for stage in &chain.stages {
            let p = success[index_of(modes, stage.mode).unwrap_or(0)];
            for _ in 0..stage.tries {
                us += left * (time(stage.mode, tries + 1) - time(stage.mode, tries));
                left *= 1.0 - p;
                tries += 1;
            }
        }
        (1.0 - left) / us
    };
    let rate = (0..modes.len())
        .map(|r| (r, delivered_per_us(r)))
        .fold((0, f64::NEG_INFINITY), |best, (r, s)| {
            if s > best.1 {
                (r, s)
            } else {
                best
            }
        })
        .0;
    Choice { rate, success }
}

impl RateControl for EnvAware {
    /// A map advertised by the AP in a beacon (used only with `beacon_hints`).
    fn hint(&mut self, map: &Arc<SnrMap>) {
        if self.params.beacon_hints && !self.hint.as_ref().is_some_and(|h| Arc::ptr_eq(h, map)) {
            self.hint = Some(Arc::clone(map));
            self.choices.clear();
        }
    }
    /// This pass's observations.
    fn observed(&self) -> Option<&SnrMap> {
        Some(&self.seen)
    }
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        let r = match self.choice(req) {
            Some(key) => {
                let c = &self.choices[&key];
                self.adjust = self.adjust.clamp(-(c.rate as i64), 0);
                let r = (c.rate as i64 + self.adjust) as usize;
                self.predicted = Some(c.success[r]);
                r
            }
            None => {
                self.predicted = None;
                self.fallback
            }
        };
        self.fallback = r;
        rate_lower_lowest(self.modes, r, self.params.tries)
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
        let down = match self.predicted {
            Some(p) => down_after(p, self.params.down_after),
            None => self.params.down_after.max(1),
        };
        let step = if self.failures >= down {
            -1
        } else if self.successes >= self.params.up_after.max(1) {
            1
        } else {
            return;
        };
        self.successes = 0;
        self.failures = 0;
        if self.predicted.is_some() {
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

    /// A map whose cell at x = 5 m heard the client at each of `snrs` (as
    /// the AP's frames would arrive there).
    fn map_of(snrs: &[f64]) -> Arc<SnrMap> {
        let mut m = SnrMap::new(Meters(10.0));
        for snr in snrs {
            m.add(Vec2::new(5.0, 0.0), Db(snr - POWER.0));
        }
        Arc::new(m)
    }

    fn first_rate(params: EnvAwareParams, ch: &Channel) -> f64 {
        EnvAware::new(Standard::G.modes(), params)
            .retry_chain(&ch.request())
            .stages[0]
            .mode
            .rate
            .mbps()
    }

    #[test]
    fn map_rate_delivers_the_most_per_airtime() {
        let g = Standard::G.modes();
        let ch = channel(g, vec![1.0; 12]);
        let with = |map| EnvAwareParams {
            map,
            ..EnvAwareParams::default()
        };
        // Every rate gets through: the fastest.
        assert_eq!(first_rate(with(map_of(&[40.0; 3])), &ch), 54.0);
        // At the SNR where 54 Mbps gets half its first attempts through,
        // 48 Mbps, which gets nearly all through, carries more.
        let half = snr_threshold(&ErrorModelKind::default(), &g[11], 1528, 0.5).0;
        let p48 = ErrorModelKind::default().chunk_success(&g[10], Db(half), 8 * 1528);
        assert!(p48 > 0.95, "{p48}");
        assert_eq!(first_rate(with(map_of(&[half; 3])), &ch), 48.0);
        // The same cell heard 3 dB weaker, or with a 3 dB margin: lower.
        let weaker = map_of(&[half - 3.0; 3]);
        let lower = first_rate(with(weaker), &ch);
        assert!(lower < 48.0, "{lower}");
        let margin = EnvAwareParams {
            margin: Db(3.0),
            ..with(map_of(&[half; 3]))
        };
        assert_eq!(first_rate(margin, &ch), lower);
        // The transmit power enters the estimate: 3 dB less, as 3 dB weaker.
        let mut quiet = channel(g, vec![1.0; 12]);
        quiet.tx_power = Dbm(POWER.0 - 3.0);
        assert_eq!(first_rate(with(map_of(&[half; 3])), &quiet), lower);
    }

    #[test]
    fn the_spread_of_a_cell_counts_not_only_its_mean() {
        // Two cells with the same mean gain (20 dB at the AP's power): one
        // heard always at it, where 54 Mbps never works, and one heard at
        // 26 dB two times in three and in a deep fade otherwise: there 54
        // Mbps gets two first attempts in three through and the chain's
        // later tries most of the rest, which beats 48 Mbps every time.
        let g = Standard::G.modes();
        let ch = channel(g, vec![1.0; 12]);
        let with = |map| EnvAwareParams {
            map,
            ..EnvAwareParams::default()
        };
        assert_eq!(first_rate(with(map_of(&[20.0; 6])), &ch), 48.0);
        let fading = [26.0, 26.0, 26.0, 26.0, 8.0, 8.0];
        assert_eq!(first_rate(with(map_of(&fading)), &ch), 54.0);
        // It then expects failures: five in a row before it steps down.
        let mut rc = EnvAware::new(g, with(map_of(&fading)));
        let mut lossy = channel(g, vec![0.0; 12]);
        let firsts: Vec<f64> = (0..6)
            .map(|_| lossy.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert_eq!(firsts, [54.0, 54.0, 54.0, 54.0, 54.0, 48.0]);
    }

    #[test]
    fn failures_needed_to_step_down_follow_the_predicted_success() {
        assert_eq!(down_after(0.99, 2), 2);
        assert_eq!(down_after(0.9, 2), 2);
        assert_eq!(down_after(0.75, 2), 4);
        assert_eq!(down_after(0.5, 2), 7);
        assert_eq!(down_after(0.2, 2), MAX_DOWN_AFTER);
        assert_eq!(down_after(0.0, 2), MAX_DOWN_AFTER);
        assert_eq!(down_after(1.0, 3), 3);
    }

    #[test]
    fn a_new_cell_starts_without_the_last_cells_correction() {
        let g = Standard::G.modes();
        let mut m = SnrMap::new(Meters(10.0));
        for x in [5.0, 15.0] {
            for _ in 0..3 {
                m.add(Vec2::new(x, 0.0), Db(40.0 - POWER.0));
            }
        }
        let mut rc = EnvAware::new(
            g,
            EnvAwareParams {
                map: Arc::new(m),
                ..EnvAwareParams::default()
            },
        );
        let mut ch = channel(g, Channel::cliff(g, 36.0));
        let firsts: Vec<f64> = (0..6)
            .map(|_| ch.send(&mut rc).0.stages[0].mode.rate.mbps())
            .collect();
        assert_eq!(firsts, [54.0, 54.0, 48.0, 48.0, 36.0, 36.0]);
        ch.peer_position = Some(Vec2::new(13.0, 0.0));
        assert_eq!(ch.send(&mut rc).0.stages[0].mode.rate.mbps(), 54.0);
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
