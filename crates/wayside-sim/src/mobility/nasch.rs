//! The Nagel–Schreckenberg highway: one multi-lane cellular automaton shared
//! by every vehicle of a scenario, run once for the whole duration, each
//! vehicle getting the [`Trajectory`] it drove and the times it entered and
//! left the road.
//!
//! Per lane, every step of Δt = 1 s updates all vehicles in parallel with the
//! four rules of Nagel & Schreckenberg (J. Phys. I France 2, 1992):
//! accelerate by one cell/s up to `vmax`, brake to the free gap ahead, dawdle
//! (slow by one) with probability `dawdle`, move. Before that, vehicles may
//! change lane by the symmetric rule of Rickert, Nagel, Schreckenberg &
//! Latour (Physica A 231, 1996), with their parameters `l = l_o = v + 1`,
//! `l_o,back = vmax`: a vehicle moves sideways when the gap ahead in its lane
//! is `< l`, the gap ahead in the other lane is `> l_o`, the gap behind in the
//! other lane is `> l_o,back`, and then with probability `change_probability`.
//! With more than two lanes, even steps consider only moves to the next
//! higher lane and odd steps only moves to the next lower one, so two
//! vehicles never move into the same cells at once.
//!
//! The boundaries hold the density: a vehicle whose front passes the last
//! cell leaves the road — its trajectory ends there — and a new vehicle
//! enters at the first cells of the same lane in its place, at its speed.
//! For the automaton this is the periodic road of the original paper (gaps
//! are measured across the seam), so the occupancy stays at its target; for
//! the radio it is an open road with one vehicle entering per vehicle
//! leaving. A plain open entrance cannot hold the congested densities: the
//! automaton's capacity at vmax 20 and 5-cell vehicles is near 20% of
//! cells occupied, and an entrance filling the first free cells measured
//! under 10% on a road meant to hold 30%. Positions between steps are linear
//! interpolations. Everything draws from one stream, so a seed gives the
//! same traffic.
//!
//! Chen et al.'s sources: `sources` of the vehicles on the road at t = 0,
//! spaced evenly along it (the one nearest cell `j · cells / sources`,
//! `j = 0, 1, …`), are sources, and so is the vehicle that enters in a
//! source's place when it leaves — the paper's single source that "exits
//! the road, at which point another source vehicle enters".

use super::Trajectory;
use crate::geometry::Vec2;
use crate::rng::Stream;
use crate::units::SimTime;

/// A highway's geometry and driving rules.
#[derive(Clone, Debug, PartialEq)]
pub struct Highway {
    pub lanes: u32,
    /// Road length in cells.
    pub cells: u32,
    /// Metres per cell.
    pub cell_length: f64,
    /// Cells a vehicle occupies.
    pub vehicle_cells: u32,
    /// Highest speed, cells per step.
    pub vmax: u32,
    /// Probability of slowing by one cell/s in a step (rule 3).
    pub dawdle: f64,
    /// Probability that a vehicle meeting the lane-change criteria changes.
    pub change_probability: f64,
    /// Target fraction of cells occupied; the road is filled to it at the
    /// start and keeps it.
    pub density: f64,
    /// Metres between lane centres.
    pub lane_width: f64,
    /// Centre of lane 0 at the start of cell 0; the road runs along +x and
    /// lanes are stacked along +y.
    pub origin: Vec2,
    /// Steps run before t = 0 so that the road starts in steady flow rather
    /// than in its random initial placement.
    pub warmup_steps: u32,
    /// Vehicles that are sources at any time (see the module doc).
    pub sources: u32,
}

impl Highway {
    /// The highway of Chen et al.: 4 lanes of 1000 cells of 1.5 m, vehicles
    /// 5 cells long, vmax 20 cells/s = 108 km/h.
    ///
    /// Dawdling 0.1: this is the discretisation of Knospe, Santen,
    /// Schadschneider & Schreckenberg (J. Phys. A 33, 2000: 1.5 m cells,
    /// 7.5 m cars, vmax 20), whose fitted randomisation for free flow is 0.1;
    /// the 0.5 of the original paper belongs to its 7.5 m cells, where one
    /// cell/s of dawdling is a five times larger slowdown. Lane changes are
    /// taken whenever the criteria hold (`change_probability` 1), as in the
    /// basic symmetric rule; 3.5 m lanes; 120 s of warm-up, more than twice
    /// the time to cross the road at vmax.
    pub fn chen(density: f64) -> Highway {
        Highway {
            lanes: 4,
            cells: 1000,
            cell_length: 1.5,
            vehicle_cells: 5,
            vmax: 20,
            dawdle: 0.1,
            change_probability: 1.0,
            density,
            lane_width: 3.5,
            origin: Vec2::default(),
            warmup_steps: 120,
            sources: 0,
        }
    }

    /// Checks the parameters; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{name} = {p}: must be a probability in [0, 1]"))
            }
        };
        if self.lanes == 0 {
            return Err("lanes = 0: a road needs at least one lane".into());
        }
        if self.vehicle_cells == 0 || self.vmax == 0 {
            return Err("vehicle_cells and vmax must be at least 1 cell".into());
        }
        if self.cells < self.vehicle_cells {
            return Err(format!(
                "cells = {}: the road must hold one vehicle ({} cells)",
                self.cells, self.vehicle_cells
            ));
        }
        if !(self.cell_length > 0.0 && self.lane_width >= 0.0) {
            return Err("cell_length must be positive and lane_width not negative".into());
        }
        prob("dawdle", self.dawdle)?;
        prob("change_probability", self.change_probability)?;
        if !(0.0..1.0).contains(&self.density) {
            return Err(format!(
                "density = {}: must be a fraction of cells occupied in [0, 1)",
                self.density
            ));
        }
        let fits = self.target_cells() / self.vehicle_cells as u64;
        if self.sources as u64 > fits {
            return Err(format!(
                "sources = {}: more than the {fits} vehicles the road holds at this density",
                self.sources
            ));
        }
        Ok(())
    }

    /// Where a vehicle whose front is in cell `head` of `lane` is: the
    /// middle of its body.
    fn place(&self, lane: u32, head: i64) -> Vec2 {
        let centre = head as f64 + 1.0 - self.vehicle_cells as f64 / 2.0;
        Vec2::new(
            self.origin.x + centre * self.cell_length,
            self.origin.y + lane as f64 * self.lane_width,
        )
    }

    /// Runs the road for `duration` (rounded up to whole steps) and returns
    /// every vehicle that was on it, in order of entry (those on the road at
    /// t = 0 first).
    pub fn run(&self, duration: SimTime, mut rng: Stream) -> Vec<Vehicle> {
        let mut road = Road::new(self, &mut rng);
        for k in 0..self.warmup_steps {
            road.step(k as u64, &mut rng);
        }
        road.pick_sources(self.sources);
        let mut rec: Vec<Record> = Vec::new();
        let mut slot: Vec<usize> = Vec::new(); // car id -> record
        let note = |road: &Road, slot: &mut Vec<usize>, rec: &mut Vec<Record>, step: u64| {
            for c in &road.cars {
                if slot.len() <= c.id {
                    slot.resize(c.id + 1, usize::MAX);
                }
                if slot[c.id] == usize::MAX {
                    slot[c.id] = rec.len();
                    rec.push(Record {
                        enter: step,
                        leave: None,
                        source: c.source,
                        samples: Vec::new(),
                    });
                }
                rec[slot[c.id]].push(step, c.lane, c.head);
            }
        };
        note(&road, &mut slot, &mut rec, 0);
        let steps = duration.as_ns().div_ceil(STEP.as_ns());
        for k in 0..steps {
            let left = road.step(self.warmup_steps as u64 + k, &mut rng);
            for c in left {
                let r = &mut rec[slot[c.id]];
                r.push(k + 1, c.lane, c.head);
                r.leave = Some(k + 1);
            }
            note(&road, &mut slot, &mut rec, k + 1);
        }
        rec.into_iter()
            .map(|r| {
                let samples: Vec<(SimTime, Vec2)> = r
                    .samples
                    .iter()
                    .map(|&(k, lane, head)| (STEP * k, self.place(lane, head)))
                    .collect();
                let leave = r.leave.map_or(SimTime::MAX, |k| STEP * k);
                Vehicle {
                    enter: STEP * r.enter,
                    leave,
                    source: r.source,
                    trajectory: Trajectory::timed(&samples),
                }
            })
            .collect()
    }
}

/// The automaton's time step.
const STEP: SimTime = SimTime::from_ms(1000);

/// One vehicle's drive: on the road from `enter` until `leave`
/// (`SimTime::MAX`: still on it at the end).
#[derive(Clone, Debug, PartialEq)]
pub struct Vehicle {
    pub enter: SimTime,
    pub leave: SimTime,
    /// A source of the scenario's traffic (see the module doc).
    pub source: bool,
    pub trajectory: Trajectory,
}

/// A vehicle's recorded cells, kept only where its velocity changes.
struct Record {
    enter: u64,
    leave: Option<u64>,
    source: bool,
    samples: Vec<(u64, u32, i64)>,
}

impl Record {
    fn push(&mut self, step: u64, lane: u32, head: i64) {
        if let [.., (k0, l0, h0), (k1, l1, h1)] = self.samples[..] {
            let steady = l0 == l1
                && l1 == lane
                && k1 + 1 == step
                && (head - h1) * (k1 - k0) as i64 == h1 - h0;
            if steady {
                *self.samples.last_mut().expect("two samples") = (step, lane, head);
                return;
            }
        }
        self.samples.push((step, lane, head));
    }
}

/// A vehicle in the automaton: its front cell, lane and speed (cells/step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Car {
    id: usize,
    lane: u32,
    head: i64,
    v: u32,
    /// A source; the vehicle re-entering in its place is one too.
    source: bool,
}

/// The automaton's state.
struct Road<'a> {
    hw: &'a Highway,
    cars: Vec<Car>,
    /// Occupied cells, lane-major.
    occ: Vec<bool>,
    next_id: usize,
}

impl<'a> Road<'a> {
    /// Places the target number of vehicles at random, stopped, in
    /// distinct vehicle-sized slots.
    fn new(hw: &'a Highway, rng: &mut Stream) -> Road<'a> {
        let len = hw.vehicle_cells;
        let per_lane = hw.cells / len;
        let mut slots: Vec<u32> = (0..hw.lanes * per_lane).collect();
        let n = (hw.target_cells() / len as u64).min(slots.len() as u64) as usize;
        for i in 0..n {
            let j = i + rng.integer_inclusive((slots.len() - 1 - i) as u32) as usize;
            slots.swap(i, j);
        }
        slots[..n].sort_unstable();
        let cars = slots[..n]
            .iter()
            .enumerate()
            .map(|(id, &s)| Car {
                id,
                lane: s / per_lane,
                head: ((s % per_lane + 1) * len - 1) as i64,
                v: 0,
                source: false,
            })
            .collect();
        let mut road = Road {
            hw,
            cars,
            occ: Vec::new(),
            next_id: n,
        };
        road.mark();
        road
    }

    /// Makes `n` vehicles sources: for `j = 0, 1, …` the one whose front is
    /// nearest cell `j · cells / n` (on the ring), not already a source.
    fn pick_sources(&mut self, n: u32) {
        let cells = self.hw.cells as i64;
        for j in 0..n as i64 {
            let target = j * cells / n as i64;
            let ring = |c: &Car| {
                let d = (c.head - target).rem_euclid(cells);
                d.min(cells - d)
            };
            let pick = self
                .cars
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.source)
                .min_by_key(|(i, c)| (ring(c), *i))
                .map(|(i, _)| i);
            if let Some(i) = pick {
                self.cars[i].source = true;
            }
        }
    }

    /// Rebuilds the occupancy from the cars.
    fn mark(&mut self) {
        let cells = self.hw.cells as i64;
        self.occ.clear();
        self.occ
            .resize((self.hw.lanes as i64 * cells) as usize, false);
        for c in &self.cars {
            for x in c.head - self.hw.vehicle_cells as i64 + 1..=c.head {
                self.occ[(c.lane as i64 * cells + x.rem_euclid(cells)) as usize] = true;
            }
        }
    }

    /// Whether cell `x` of `lane` is occupied, the road's ends joined.
    fn taken(&self, lane: u32, x: i64) -> bool {
        let cells = self.hw.cells as i64;
        self.occ[(lane as i64 * cells + x.rem_euclid(cells)) as usize]
    }

    /// Free cells in front of cell `head`, counted up to `vmax + 2`
    /// (enough for every rule).
    fn gap_ahead(&self, lane: u32, head: i64) -> u32 {
        let cap = self.hw.vmax + 2;
        (1..=cap as i64)
            .find(|&d| self.taken(lane, head + d))
            .map_or(cap, |d| d as u32 - 1)
    }

    /// Free cells behind cell `tail`, counted up to `vmax + 2`.
    fn gap_behind(&self, lane: u32, tail: i64) -> u32 {
        let cap = self.hw.vmax + 2;
        (1..=cap as i64)
            .find(|&d| self.taken(lane, tail - d))
            .map_or(cap, |d| d as u32 - 1)
    }

    /// One step: lane changes, then the four rules. Returns the vehicles
    /// that left, at their last position (past the end of the road).
    fn step(&mut self, k: u64, rng: &mut Stream) -> Vec<Car> {
        self.change_lanes(k, rng);
        self.advance(rng)
    }

    /// Rickert et al.'s symmetric rule, decided for all vehicles on the
    /// same state, then applied.
    fn change_lanes(&mut self, k: u64, rng: &mut Stream) {
        let up = k.is_multiple_of(2);
        let len = self.hw.vehicle_cells as i64;
        let mut moves = Vec::new();
        for (i, c) in self.cars.iter().enumerate() {
            let other = if up {
                c.lane + 1
            } else {
                c.lane.wrapping_sub(1)
            };
            if other >= self.hw.lanes {
                continue;
            }
            let l = c.v + 1;
            let tail = c.head - len + 1;
            let beside_free = (tail..=c.head).all(|x| !self.taken(other, x));
            let wants = self.gap_ahead(c.lane, c.head) < l;
            if wants
                && beside_free
                && self.gap_ahead(other, c.head) > l
                && self.gap_behind(other, tail) > self.hw.vmax
                && rng.uniform() < self.hw.change_probability
            {
                moves.push((i, other));
            }
        }
        for &(i, lane) in &moves {
            self.cars[i].lane = lane;
        }
        if !moves.is_empty() {
            self.mark();
        }
    }

    /// The Nagel–Schreckenberg rules in parallel; a vehicle whose front
    /// passed the end of the road is returned as it left and re-enters as a
    /// new vehicle at the start of its lane.
    fn advance(&mut self, rng: &mut Stream) -> Vec<Car> {
        let vmax = self.hw.vmax;
        for i in 0..self.cars.len() {
            let c = self.cars[i];
            let mut v = (c.v + 1).min(vmax).min(self.gap_ahead(c.lane, c.head));
            if v > 0 && rng.uniform() < self.hw.dawdle {
                v -= 1;
            }
            self.cars[i].v = v;
        }
        for c in &mut self.cars {
            c.head += c.v as i64;
        }
        let cells = self.hw.cells as i64;
        let mut left = Vec::new();
        for c in &mut self.cars {
            if c.head >= cells {
                left.push(*c);
                c.head -= cells;
                c.id = self.next_id;
                self.next_id += 1;
            }
        }
        self.mark();
        left
    }

    /// Occupied cells on the road.
    #[cfg(test)]
    fn occupied(&self) -> usize {
        self.occ.iter().filter(|&&o| o).count()
    }
}

impl Highway {
    /// The number of cells the road keeps occupied.
    fn target_cells(&self) -> u64 {
        (self.density * (self.lanes as u64 * self.cells as u64) as f64).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mobility::Mobility;

    fn stream(seed: u64) -> Stream {
        Stream::new("run", seed, 0, "mobility/nasch")
    }

    const CELLS: i64 = 1000;

    /// Free cells ahead of `head` in `lane` among the other `cars`, on the
    /// ring (the test's own reading of the state, independent of the road's).
    fn free_ahead(cars: &[Car], me: usize, lane: u32, head: i64, len: i64) -> i64 {
        let others = cars.iter().filter(|c| c.lane == lane && c.id != me);
        others
            .map(|c| (c.head - head).rem_euclid(CELLS) - len)
            .min()
            .unwrap_or(i64::MAX)
    }

    fn free_behind(cars: &[Car], me: usize, lane: u32, tail: i64) -> i64 {
        let others = cars.iter().filter(|c| c.lane == lane && c.id != me);
        others
            .map(|c| (tail - c.head).rem_euclid(CELLS) - 1)
            .min()
            .unwrap_or(i64::MAX)
    }

    #[test]
    fn density_holds_near_the_target() {
        for target in [0.1, 0.3] {
            let hw = Highway::chen(target);
            let mut rng = stream(1);
            let mut road = Road::new(&hw, &mut rng);
            let mut left = 0;
            for k in 0..600 {
                left += road.step(k, &mut rng).len();
                let occupancy = road.occupied() as f64 / (hw.lanes * hw.cells) as f64;
                assert!(
                    (occupancy - target).abs() < 1e-9,
                    "step {k}: target {target}, occupancy {occupancy}"
                );
            }
            // The road was not jammed: at least one full road's worth of
            // vehicles went through in 10 minutes.
            assert!(
                left as u64 * hw.vehicle_cells as u64 >= hw.target_cells(),
                "{left} left"
            );
        }
    }

    #[test]
    fn vehicles_never_overlap_nor_exceed_vmax() {
        let hw = Highway::chen(0.3);
        let mut rng = stream(2);
        let mut road = Road::new(&hw, &mut rng);
        let len = hw.vehicle_cells as i64;
        for k in 0..400 {
            let before: Vec<Car> = road.cars.clone();
            road.step(k, &mut rng);
            for c in &road.cars {
                assert!(c.v <= hw.vmax);
                if let Some(b) = before.iter().find(|b| b.id == c.id) {
                    assert!(c.head - b.head <= hw.vmax as i64 && c.head >= b.head);
                }
                assert!(
                    free_ahead(&road.cars, c.id, c.lane, c.head, len) >= 0,
                    "step {k}: {c:?} overlaps"
                );
            }
        }
    }

    #[test]
    fn lane_changes_happen_and_obey_the_symmetric_rule() {
        let hw = Highway::chen(0.3);
        let mut rng = stream(3);
        let mut road = Road::new(&hw, &mut rng);
        let len = hw.vehicle_cells as i64;
        let mut changes = [0usize; 2];
        for k in 0..300 {
            let before = road.cars.clone();
            road.change_lanes(k, &mut rng);
            for (b, a) in before.iter().zip(&road.cars) {
                if a.lane == b.lane {
                    continue;
                }
                changes[(a.lane > b.lane) as usize] += 1;
                assert_eq!(
                    a.lane,
                    if k % 2 == 0 { b.lane + 1 } else { b.lane - 1 },
                    "step {k}: wrong direction"
                );
                let l = b.v as i64 + 1;
                assert!(
                    free_ahead(&before, b.id, b.lane, b.head, len) < l,
                    "no incentive: {b:?}"
                );
                assert!(
                    free_ahead(&before, b.id, a.lane, b.head, len) > l,
                    "gap ahead too short: {b:?}"
                );
                assert!(
                    free_behind(&before, b.id, a.lane, b.head - len + 1) > hw.vmax as i64,
                    "unsafe: {b:?}"
                );
                let beside = before.iter().any(|o| {
                    o.lane == a.lane && (o.head - (b.head - len + 1)).rem_euclid(CELLS) < len
                });
                assert!(!beside, "moved onto a vehicle: {b:?}");
            }
            road.advance(&mut rng);
        }
        assert!(
            changes[0] > 10 && changes[1] > 10,
            "changes down/up: {changes:?}"
        );
    }

    #[test]
    fn same_seed_same_trajectories_and_another_seed_differs() {
        let hw = Highway::chen(0.1);
        let a = hw.run(SimTime::from_ms(60_000), stream(4));
        let b = hw.run(SimTime::from_ms(60_000), stream(4));
        let c = hw.run(SimTime::from_ms(60_000), stream(5));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn trajectories_interpolate_the_automaton_and_enter_and_leave() {
        let hw = Highway::chen(0.1);
        let duration = SimTime::from_ms(100_000);
        let vehicles = hw.run(duration, stream(6));
        let at_start = vehicles.iter().filter(|v| v.enter == SimTime::ZERO).count();
        // 10% of 4000 cells in 5-cell vehicles.
        assert!(
            (70..=80).contains(&at_start),
            "{at_start} vehicles at t = 0"
        );
        assert!(
            vehicles.iter().any(|v| v.enter > SimTime::ZERO),
            "none entered"
        );
        assert!(vehicles.iter().any(|v| v.leave < SimTime::MAX), "none left");
        let vmax = hw.vmax as f64 * hw.cell_length;
        for v in &vehicles {
            // Along the road at most vmax; a lane change adds its sideways
            // 3.5 m/s within the step.
            for half in 0..200 {
                let u = v.trajectory.velocity(SimTime::from_ms(500 * half + 250));
                assert!(
                    u.x >= 0.0 && u.x <= vmax + 1e-9 && u.y.abs() <= 3.5 + 1e-9,
                    "{u:?}"
                );
            }
            assert!(v.trajectory.max_speed() <= vmax.hypot(3.5) + 1e-9);
            let p = v.trajectory.position(v.enter);
            assert!(
                p.x > -7.5 && p.x < 1500.0 && [0.0, 3.5, 7.0, 10.5].contains(&p.y),
                "{p:?}"
            );
            if v.leave < SimTime::MAX {
                assert!(v.trajectory.position(v.leave).x >= 1500.0 - 1.5 * 2.5);
                assert!(v.leave > v.enter);
            }
            // Between steps the position is on the segment joining them.
            let t0 = v.enter + SimTime::from_ms(3000);
            if t0 + STEP < v.leave.min(duration) {
                let (p0, p1) = (v.trajectory.position(t0), v.trajectory.position(t0 + STEP));
                let mid = v.trajectory.position(t0 + SimTime::from_ms(500));
                assert!(
                    (mid.x - (p0.x + p1.x) / 2.0).abs() < 1e-9
                        && (mid.y - (p0.y + p1.y) / 2.0).abs() < 1e-9
                );
            }
        }
    }

    #[test]
    fn sources_stay_as_many_and_a_new_one_enters_as_one_leaves() {
        for n in [1u32, 3] {
            let hw = Highway {
                sources: n,
                ..Highway::chen(0.1)
            };
            let duration = SimTime::from_ms(200_000);
            let vehicles = hw.run(duration, stream(7));
            let sources: Vec<&Vehicle> = vehicles.iter().filter(|v| v.source).collect();
            // At every half second, exactly n sources on the road.
            for half in 0..400 {
                let t = SimTime::from_ms(500 * half + 250);
                let on = sources
                    .iter()
                    .filter(|v| v.enter <= t && t < v.leave)
                    .count();
                assert_eq!(on, n as usize, "{n} sources: {on} on the road at {t:?}");
            }
            // Each source that left was followed by one entering that step.
            let left: Vec<SimTime> = sources
                .iter()
                .map(|v| v.leave)
                .filter(|&l| l < SimTime::MAX)
                .collect();
            assert!(!left.is_empty(), "no source left in 200 s");
            for l in left {
                assert!(
                    sources.iter().any(|v| v.enter == l),
                    "none entered at {l:?}"
                );
            }
            // Spaced evenly at the start: fronts about cells / n apart.
            let mut xs: Vec<f64> = sources
                .iter()
                .filter(|v| v.enter == SimTime::ZERO)
                .map(|v| v.trajectory.position(SimTime::ZERO).x)
                .collect();
            xs.sort_by(f64::total_cmp);
            for w in xs.windows(2) {
                let gap = w[1] - w[0];
                assert!((gap - 1500.0 / n as f64).abs() < 150.0, "{xs:?}");
            }
        }
        assert!(Highway {
            sources: 81,
            ..Highway::chen(0.1)
        }
        .validate()
        .unwrap_err()
        .contains("sources = 81"));
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut hw = Highway::chen(1.2);
        assert!(hw.validate().unwrap_err().contains("density = 1.2"));
        hw.density = 0.1;
        hw.dawdle = -0.5;
        assert!(hw.validate().unwrap_err().contains("dawdle"));
        assert_eq!(Highway::chen(0.3).validate(), Ok(()));
    }
}
