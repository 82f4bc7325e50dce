//! Contact-level epidemic dissemination of one file among vehicles, after
//! Zahn et al. (2009) §5.6 (Broadside, Figure 13).
//!
//! The model, each rule from §5.6:
//! - A fraction of the vehicles carry a device ("penetration"); a further
//!   set of vehicles carry seed devices pre-loaded with the file. Both are
//!   drawn at random among the vehicles of the trace (present at some
//!   time, not necessarily throughout).
//! - Two devices are in contact while within 150 m. A transfer needs 20 s of
//!   contact, at a constant per-second rate: k seconds of contact move k/20
//!   of the file.
//! - Partial progress is kept and resumes with any holder of the complete
//!   file; a device becomes a source only once complete ("conservatively").
//!
//! Where §5.6 is silent: a device receives at most at the one rate whatever
//! the number of holders around it (the receiver's radio is the
//! bottleneck), a holder serves every device in range at once, and a
//! contact sampled at one trace step lasts until the next step (the
//! trace's sampling interval, 1 s for the paper's trace and SUMO's default).
//! A device completed during an interval serves from the next step on.
//!
//! Randomness: who is equipped and who is a seed come from per-vehicle
//! streams keyed by the vehicle's id (`rng::Stream`, domain "run", names
//! `epidemic/device/ID` and `epidemic/seed/ID`): the devices are the
//! vehicles with the smallest draws, so the same (seed, run) equips a
//! superset of vehicles at a higher penetration, and nothing depends on
//! the order of the trace.

use wayside_sim::rng::Stream;

use crate::grid::Grid;
use crate::trace::{Step, Trace};

/// Contact range, m (§5.6: "within 150 meters").
pub const RANGE_M: f64 = 150.0;
/// Contact time to move the whole file, s (§5.6: "for 20 seconds").
pub const TRANSFER_S: f64 = 20.0;

/// Parameters of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the trace's vehicles carrying a device, seeds excluded.
    pub penetration: f64,
    /// Number of seed devices, in addition to the equipped vehicles.
    pub seeds: usize,
    pub range_m: f64,
    pub transfer_s: f64,
    pub seed: u64,
    pub run: u64,
}

impl Params {
    /// The paper's contact model with the given penetration and seeds.
    pub fn paper(penetration: f64, seeds: usize, seed: u64, run: u64) -> Self {
        Params {
            penetration,
            seeds,
            range_m: RANGE_M,
            transfer_s: TRANSFER_S,
            seed,
            run,
        }
    }
}

/// A run that cannot be made; the message says why and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EpidemicError(pub String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Unequipped,
    Device,
    Seed,
}

/// The result of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub vehicles: usize,
    /// Equipped vehicles, seeds excluded.
    pub devices: usize,
    /// Indices (into the trace's vehicles) of the seeds.
    pub seeds: Vec<u32>,
    /// Devices (seeds excluded) holding the whole file at the end.
    pub complete: usize,
    /// Time of every trace step, and devices complete by then.
    pub times: Vec<f64>,
    pub complete_over_time: Vec<u32>,
    /// Device-steps in which a device was receiving.
    pub receiving_steps: u64,
}

impl Outcome {
    /// Fraction of devices (seeds excluded) complete at the end.
    pub fn fraction(&self) -> f64 {
        self.complete as f64 / self.devices as f64
    }
}

/// The epidemic over a stream of trace steps: feed [`Epidemic::step`] in
/// time order, then [`Epidemic::finish`].
#[derive(Debug)]
pub struct Epidemic {
    range: f64,
    transfer: f64,
    role: Vec<Role>,
    /// Seconds of contact received per vehicle (devices only).
    progress: Vec<f64>,
    complete: Vec<bool>,
    devices: usize,
    seeds: Vec<u32>,
    completed: u32,
    grid: Grid,
    holders: Vec<(f32, f32)>,
    candidates: Vec<(u32, (f32, f32))>,
    /// Devices in contact at the previous step, credited at the next one.
    receiving: Vec<u32>,
    last_time: Option<f64>,
    times: Vec<f64>,
    over_time: Vec<u32>,
    receiving_steps: u64,
}

fn check(p: &Params, vehicles: usize) -> Result<(usize, usize), EpidemicError> {
    if !(0.0..=1.0).contains(&p.penetration) {
        return Err(EpidemicError(format!(
            "penetration {}: give a fraction from 0 to 1 (e.g. 0.125 for 12.5%)",
            p.penetration
        )));
    }
    if !(p.range_m > 0.0 && p.range_m.is_finite() && p.transfer_s > 0.0 && p.transfer_s.is_finite())
    {
        return Err(EpidemicError(format!(
            "range {} m and transfer time {} s must be positive",
            p.range_m, p.transfer_s
        )));
    }
    let devices = (p.penetration * vehicles as f64).round() as usize;
    if devices == 0 {
        return Err(EpidemicError(format!(
            "penetration {}% of {vehicles} vehicles equips no vehicle: give at least {:.3}%",
            p.penetration * 100.0,
            50.0 / vehicles.max(1) as f64
        )));
    }
    if p.seeds == 0 || devices + p.seeds > vehicles {
        return Err(EpidemicError(format!(
            "{} seeds with {devices} devices: the trace has {vehicles} vehicles; give 1 to {} seeds",
            p.seeds,
            vehicles.saturating_sub(devices)
        )));
    }
    Ok((devices, p.seeds))
}

/// Indices of the `k` entries of `eligible` with the smallest draws from
/// each vehicle's stream `prefix/ID`, sorted by index.
fn smallest_draws(
    names: &[String],
    eligible: &[u32],
    k: usize,
    p: &Params,
    prefix: &str,
) -> Vec<u32> {
    let mut draws: Vec<(f64, u32)> = eligible
        .iter()
        .map(|&v| {
            (
                Stream::new(
                    "run",
                    p.seed,
                    p.run,
                    &format!("{prefix}/{}", names[v as usize]),
                )
                .uniform(),
                v,
            )
        })
        .collect();
    draws.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<u32> = draws[..k].iter().map(|d| d.1).collect();
    chosen.sort_unstable();
    chosen
}

impl Epidemic {
    /// Draws the devices and seeds among the vehicles `names` (every vehicle
    /// of the trace).
    pub fn new(names: &[String], p: &Params) -> Result<Self, EpidemicError> {
        let n = names.len();
        let (devices, seeds) = check(p, n)?;
        let all: Vec<u32> = (0..n as u32).collect();
        let mut role = vec![Role::Unequipped; n];
        for v in smallest_draws(names, &all, devices, p, "epidemic/device") {
            role[v as usize] = Role::Device;
        }
        let rest: Vec<u32> = all
            .into_iter()
            .filter(|&v| role[v as usize] == Role::Unequipped)
            .collect();
        let seeds = smallest_draws(names, &rest, seeds, p, "epidemic/seed");
        let mut complete = vec![false; n];
        for &s in &seeds {
            role[s as usize] = Role::Seed;
            complete[s as usize] = true;
        }
        Ok(Epidemic {
            range: p.range_m,
            transfer: p.transfer_s,
            role,
            progress: vec![0.0; n],
            complete,
            devices,
            seeds,
            completed: 0,
            grid: Grid::new(p.range_m),
            holders: Vec::new(),
            candidates: Vec::new(),
            receiving: Vec::new(),
            last_time: None,
            times: Vec::new(),
            over_time: Vec::new(),
            receiving_steps: 0,
        })
    }

    /// Advances to the trace step `s` (times must increase).
    pub fn step(&mut self, s: Step<'_>) {
        // Credit the contacts seen at the previous step for the interval since.
        if let Some(t0) = self.last_time {
            let dt = s.time - t0;
            debug_assert!(dt > 0.0, "trace steps must increase in time");
            for &v in &self.receiving {
                let v = v as usize;
                self.progress[v] += dt;
                // Complete at 20 s of contact; the tolerance absorbs the
                // rounding of fractional sampling intervals.
                if self.progress[v] >= self.transfer * (1.0 - 1e-9) {
                    self.complete[v] = true;
                    self.completed += 1;
                }
            }
            self.receiving_steps += self.receiving.len() as u64;
        }
        self.last_time = Some(s.time);
        self.times.push(s.time);
        self.over_time.push(self.completed);

        // Contacts at this step: devices still missing the file, within
        // range of a holder of the whole file.
        self.holders.clear();
        self.candidates.clear();
        for k in 0..s.vehicle.len() {
            let v = s.vehicle[k] as usize;
            match (self.role[v], self.complete[v]) {
                (Role::Unequipped, _) => {}
                (_, true) => self.holders.push((s.x[k], s.y[k])),
                (_, false) => self.candidates.push((v as u32, (s.x[k], s.y[k]))),
            }
        }
        self.receiving.clear();
        in_contact(
            &mut self.grid,
            &self.holders,
            &self.candidates,
            self.range,
            &mut self.receiving,
        );
    }

    /// The outcome; contacts seen at the last step end with the trace.
    pub fn finish(self) -> Outcome {
        Outcome {
            vehicles: self.role.len(),
            devices: self.devices,
            seeds: self.seeds,
            complete: self.completed as usize,
            times: self.times,
            complete_over_time: self.over_time,
            receiving_steps: self.receiving_steps,
        }
    }

    /// Approximate heap size of the engine's state, bytes.
    pub fn heap_bytes(&self) -> usize {
        self.role.capacity()
            + self.progress.capacity() * 8
            + self.complete.capacity()
            + self.seeds.capacity() * 4
            + self.holders.capacity() * 8
            + self.candidates.capacity() * 12
            + self.receiving.capacity() * 4
            + (self.times.capacity() + self.over_time.capacity()) * 12
            + self.grid.len() * 20
    }
}

/// The candidates (vehicle, position) within `range` of any holder, pushed
/// onto `out` in candidate order; `grid` is reused scratch space.
pub fn in_contact(
    grid: &mut Grid,
    holders: &[(f32, f32)],
    candidates: &[(u32, (f32, f32))],
    range: f64,
    out: &mut Vec<u32>,
) {
    if holders.is_empty() || candidates.is_empty() {
        return;
    }
    grid.rebuild(holders.iter().copied());
    for &(v, p) in candidates {
        if grid.find_within(p, range, |_| true) {
            out.push(v);
        }
    }
}

/// One run over a whole trace.
pub fn run(trace: &Trace, p: &Params) -> Result<Outcome, EpidemicError> {
    let mut e = Epidemic::new(trace.names(), p)?;
    for s in trace.iter() {
        e.step(s);
    }
    Ok(e.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceBuilder;
    use proptest::prelude::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("v{i}")).collect()
    }

    /// Feeds `e` one step at `time` with every vehicle at `pos[v]`.
    fn feed(e: &mut Epidemic, time: f64, pos: &[(f32, f32)]) {
        let vehicle: Vec<u32> = (0..pos.len() as u32).collect();
        let (x, y): (Vec<f32>, Vec<f32>) = pos.iter().copied().unzip();
        e.step(Step {
            time,
            vehicle: &vehicle,
            x: &x,
            y: &y,
        });
    }

    /// All vehicles equipped (penetration 1 leaves no room for seeds, so
    /// the roles are set by hand): vehicle 0 the seed.
    fn all_devices(n: usize) -> Epidemic {
        let mut e = Epidemic::new(&names(n + 1), &Params::paper(0.5, 1, 1, 0)).unwrap();
        e.role = vec![Role::Device; n];
        e.role[0] = Role::Seed;
        e.complete = vec![false; n];
        e.complete[0] = true;
        e.progress = vec![0.0; n];
        e.devices = n - 1;
        e
    }

    #[test]
    fn twenty_seconds_in_range_move_the_file_and_progress_resumes_with_another_holder() {
        let mut e = all_devices(3);
        // 12 s next to the seed, then apart; then 8 s next to another holder.
        for t in 0..12 {
            feed(&mut e, t as f64, &[(0.0, 0.0), (149.0, 0.0), (5000.0, 0.0)]);
        }
        feed(&mut e, 12.0, &[(0.0, 0.0), (151.0, 0.0), (5000.0, 0.0)]);
        assert!((e.progress[1] - 12.0).abs() < 1e-12 && !e.complete[1]);
        e.complete[2] = true; // vehicle 2 now holds the file too
        for t in 13..21 {
            feed(
                &mut e,
                t as f64,
                &[(0.0, 0.0), (5100.0, 0.0), (5000.0, 0.0)],
            );
        }
        assert!(!e.complete[1]);
        feed(&mut e, 21.0, &[(0.0, 0.0), (5100.0, 0.0), (5000.0, 0.0)]);
        assert!(e.complete[1], "12 s + 8 s of contact complete the file");
    }

    #[test]
    fn a_device_serves_only_once_complete() {
        let mut e = all_devices(3);
        // 0 (seed) — 1 at 100 m — 2 at 200 m from 1 and 300 m from the seed.
        for t in 0..=20 {
            feed(&mut e, t as f64, &[(0.0, 0.0), (100.0, 0.0), (250.0, 0.0)]);
        }
        let out = e.finish();
        assert_eq!(out.complete, 1);
        assert_eq!(out.complete_over_time[19], 0);
        assert_eq!(out.complete_over_time[20], 1);
    }

    #[test]
    fn roles_are_deterministic_nested_across_penetrations_and_independent_of_order() {
        let n = names(1000);
        let a = Epidemic::new(&n, &Params::paper(0.05, 4, 7, 3)).unwrap();
        let b = Epidemic::new(&n, &Params::paper(0.05, 4, 7, 3)).unwrap();
        assert_eq!(a.role, b.role);
        assert_eq!(a.devices, 50);
        assert_eq!(a.seeds.len(), 4);
        let big = Epidemic::new(&n, &Params::paper(0.10, 4, 7, 3)).unwrap();
        assert!((0..1000).all(|v| a.role[v] != Role::Device || big.role[v] == Role::Device));
        let other_run = Epidemic::new(&n, &Params::paper(0.05, 4, 7, 4)).unwrap();
        assert_ne!(a.role, other_run.role);
        let mut rev = n.clone();
        rev.reverse();
        let r = Epidemic::new(&rev, &Params::paper(0.05, 4, 7, 3)).unwrap();
        assert!((0..1000).all(|v| r.role[999 - v] == a.role[v]));
    }

    #[test]
    fn impossible_parameters_are_clear_errors() {
        let n = names(100);
        let e = Epidemic::new(&n, &Params::paper(0.001, 4, 1, 0))
            .unwrap_err()
            .0;
        assert!(e.contains("equips no vehicle"), "{e}");
        let e = Epidemic::new(&n, &Params::paper(0.9, 24, 1, 0))
            .unwrap_err()
            .0;
        assert!(e.contains("give 1 to 10 seeds"), "{e}");
        let e = Epidemic::new(&n, &Params::paper(1.5, 4, 1, 0))
            .unwrap_err()
            .0;
        assert!(e.contains("from 0 to 1"), "{e}");
    }

    /// A random small trace: vehicles on a 1 km square moving a few metres a
    /// step, each present for a random window.
    fn small_trace() -> impl Strategy<Value = Trace> {
        prop::collection::vec(
            (
                (-500.0f32..500.0, -500.0f32..500.0),
                (-30.0f32..30.0, -30.0f32..30.0),
                0u32..20,
                1u32..20,
            ),
            2..40,
        )
        .prop_map(|vs| {
            let at = || String::new();
            let mut b = TraceBuilder::new();
            for t in 0..30u32 {
                b.empty_step(t as f64);
                for (i, &((x, y), (vx, vy), from, len)) in vs.iter().enumerate() {
                    if t >= from && t < from + len {
                        let dt = (t - from) as f32;
                        b.push(
                            t as f64,
                            &format!("v{i}"),
                            (x + vx * dt) as f64,
                            (y + vy * dt) as f64,
                            &at,
                        )
                        .unwrap();
                    }
                }
            }
            b.finish()
        })
    }

    proptest! {
        /// At every step of a small trace, the grid finds exactly the
        /// devices that an O(n²) comparison of every pair finds.
        #[test]
        fn contacts_agree_with_brute_force_on_a_small_trace(trace in small_trace(), holders_every in 1usize..4) {
            let mut grid = Grid::new(RANGE_M);
            for s in trace.iter() {
                let pts: Vec<(f32, f32)> = s.x.iter().copied().zip(s.y.iter().copied()).collect();
                let holders: Vec<(f32, f32)> = pts.iter().copied().step_by(holders_every).collect();
                let candidates: Vec<(u32, (f32, f32))> = s.vehicle.iter().copied().zip(pts.iter().copied()).collect();
                let mut got = Vec::new();
                in_contact(&mut grid, &holders, &candidates, RANGE_M, &mut got);
                let want: Vec<u32> = candidates.iter().filter(|(_, p)| holders.iter().any(|h| {
                    let (dx, dy) = (p.0 as f64 - h.0 as f64, p.1 as f64 - h.1 as f64);
                    dx * dx + dy * dy <= RANGE_M * RANGE_M
                })).map(|c| c.0).collect();
                prop_assert_eq!(got, want);
            }
        }

        /// Whole runs are reproducible from (seed, run).
        #[test]
        fn runs_are_deterministic(trace in small_trace(), seed in 0u64..1000) {
            prop_assume!(trace.vehicles() >= 4);
            let p = Params::paper(0.5, 1, seed, 0);
            prop_assert_eq!(run(&trace, &p).unwrap(), run(&trace, &p).unwrap());
        }
    }
}
