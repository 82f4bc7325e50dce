//! Contact-level epidemic dissemination of one file among vehicles, after
//! Zahn et al. (2009) §5.6 (Broadside, Figure 13), under a choice of
//! transfer rules (`rules`: §5.6's or The ONE's).
//!
//! The model, each rule from §5.6:
//! - A fraction of the vehicles carry a device ("penetration"); a further
//!   set of vehicles carry seed devices pre-loaded with the file (`roles`:
//!   drawn, or given).
//! - Two devices are in contact while within 150 m. A transfer needs 20 s of
//!   contact, at a constant per-second rate: k seconds of contact move k/20
//!   of the file.
//! - A device becomes a source only once complete ("conservatively").
//!
//! Where §5.6 is silent: a device receives at most at the one rate whatever
//! the number of holders around it (the receiver's radio is the
//! bottleneck), and a contact sampled at one trace step lasts until the
//! next step (the trace's sampling interval, 1 s for the paper's trace and
//! SUMO's default). A device completed during an interval serves from the
//! next step on (from the step after under `Completion::LinkAtEnd`).
//!
//! Under `Senders::OneAtATime`, idle holders (in an order shuffled at
//! every step, as The ONE shuffles its hosts' update order) each start a
//! transfer over their longest-standing link to an idle device that lacks
//! the file, as The ONE's routers walk a host's connections (`links`).

use wayside_sim::rng::Stream;

use crate::grid::Grid;
use crate::links::Links;
pub use crate::roles::{Roles, RolesError};
pub use crate::rules::{Completion, Progress, Rules, Senders};
use crate::trace::{Step, Trace};

/// Contact range, m (§5.6: "within 150 meters").
pub const RANGE_M: f64 = 150.0;
/// Contact time to move the whole file, s (§5.6: "for 20 seconds").
pub const TRANSFER_S: f64 = 20.0;

const NONE: u32 = u32::MAX;

/// Parameters of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the trace's vehicles carrying a device, seeds excluded.
    pub penetration: f64,
    /// Number of seed devices, in addition to the equipped vehicles.
    pub seeds: usize,
    pub range_m: f64,
    pub transfer_s: f64,
    pub rules: Rules,
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
            rules: Rules::PAPER,
            seed,
            run,
        }
    }
}

/// A run that cannot be made; the message says why and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EpidemicError(pub String);

impl From<RolesError> for EpidemicError {
    fn from(e: RolesError) -> Self {
        EpidemicError(e.0)
    }
}

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
    /// The devices and seeds of the run.
    pub roles: Roles,
    /// Devices (seeds excluded) holding the whole file at the end.
    pub complete: usize,
    /// Time of every trace step, and devices complete by then.
    pub times: Vec<f64>,
    pub complete_over_time: Vec<u32>,
    /// Device-steps in which a device was receiving.
    pub receiving_steps: u64,
    /// Transfers broken off before the file was through.
    pub broken: u64,
}

impl Outcome {
    /// Devices, seeds excluded.
    pub fn devices(&self) -> usize {
        self.roles.devices.len()
    }
    /// Fraction of devices (seeds excluded) complete at the end.
    pub fn fraction(&self) -> f64 {
        self.complete as f64 / self.devices() as f64
    }
}

/// The epidemic over a stream of trace steps: feed [`Epidemic::step`] in
/// time order, then [`Epidemic::finish`].
#[derive(Debug)]
pub struct Epidemic {
    range: f64,
    transfer: f64,
    rules: Rules,
    seed: u64,
    run: u64,
    roles: Roles,
    role: Vec<Role>,
    /// Seconds of contact received per vehicle (devices only).
    progress: Vec<f64>,
    complete: Vec<bool>,
    /// Under `OneAtATime`: the device a holder sends to, or the holder a
    /// device receives from (`NONE` when idle).
    peer: Vec<u32>,
    /// Under `OneAtATime`: the links among equipped vehicles.
    links: Option<Links>,
    completed: u32,
    grid: Grid,
    holders: Vec<(u32, (f32, f32))>,
    candidates: Vec<(u32, (f32, f32))>,
    /// Devices in contact at the previous step, credited at the next one.
    receiving: Vec<u32>,
    scratch: Vec<u32>,
    step_no: u32,
    last_time: Option<f64>,
    times: Vec<f64>,
    over_time: Vec<u32>,
    receiving_steps: u64,
    broken: u64,
}

fn check(p: &Params) -> Result<(), EpidemicError> {
    if !(p.range_m > 0.0 && p.range_m.is_finite() && p.transfer_s > 0.0 && p.transfer_s.is_finite())
    {
        return Err(EpidemicError(format!(
            "range {} m and transfer time {} s must be positive",
            p.range_m, p.transfer_s
        )));
    }
    Ok(())
}

impl Epidemic {
    /// Draws the devices and seeds among the vehicles `names` (every vehicle
    /// of the trace).
    pub fn new(names: &[String], p: &Params) -> Result<Self, EpidemicError> {
        check(p)?;
        let roles = Roles::draw(names, p.penetration, p.seeds, p.seed, p.run)?;
        Self::with_roles(names.len(), roles, p)
    }

    /// A run with the given roles (indices into the trace's `vehicles`);
    /// `p.penetration` and `p.seeds` are not used.
    pub fn with_roles(vehicles: usize, roles: Roles, p: &Params) -> Result<Self, EpidemicError> {
        check(p)?;
        if let Some(&v) = roles
            .devices
            .iter()
            .chain(&roles.seeds)
            .find(|&&v| v as usize >= vehicles)
        {
            return Err(EpidemicError(format!(
                "vehicle index {v}: the trace has {vehicles} vehicles"
            )));
        }
        let mut role = vec![Role::Unequipped; vehicles];
        let mut complete = vec![false; vehicles];
        for &d in &roles.devices {
            role[d as usize] = Role::Device;
        }
        for &s in &roles.seeds {
            role[s as usize] = Role::Seed;
            complete[s as usize] = true;
        }
        Ok(Epidemic {
            range: p.range_m,
            transfer: p.transfer_s,
            rules: p.rules,
            seed: p.seed,
            run: p.run,
            roles,
            role,
            progress: vec![0.0; vehicles],
            complete,
            peer: vec![NONE; vehicles],
            links: (p.rules.senders == Senders::OneAtATime)
                .then(|| Links::new(vehicles, p.range_m)),
            completed: 0,
            grid: Grid::new(p.range_m),
            holders: Vec::new(),
            candidates: Vec::new(),
            receiving: Vec::new(),
            scratch: Vec::new(),
            step_no: 0,
            last_time: None,
            times: Vec::new(),
            over_time: Vec::new(),
            receiving_steps: 0,
            broken: 0,
        })
    }

    fn finish_transfer(&mut self, v: usize) {
        self.complete[v] = true;
        self.completed += 1;
        let s = std::mem::replace(&mut self.peer[v], NONE);
        if s != NONE {
            self.peer[s as usize] = NONE;
        }
    }

    /// A contact of `v` broke before the file was through.
    fn break_off(&mut self, v: usize) {
        self.broken += 1;
        if self.rules.progress == Progress::Restart {
            self.progress[v] = 0.0;
        }
        let s = std::mem::replace(&mut self.peer[v], NONE);
        if s != NONE {
            self.peer[s as usize] = NONE;
        }
    }

    /// Advances to the trace step `s` (times must increase).
    pub fn step(&mut self, s: Step<'_>) {
        self.step_no += 1;
        // Credit the contacts seen at the previous step for the interval since.
        let mut due = std::mem::take(&mut self.scratch);
        due.clear();
        if let Some(t0) = self.last_time {
            let dt = s.time - t0;
            debug_assert!(dt > 0.0, "trace steps must increase in time");
            for &v in &self.receiving {
                let v = v as usize;
                self.progress[v] += dt;
                // Due at 20 s of contact; the tolerance absorbs the
                // rounding of fractional sampling intervals.
                if self.progress[v] >= self.transfer * (1.0 - 1e-9) {
                    due.push(v as u32);
                }
            }
            self.receiving_steps += self.receiving.len() as u64;
        }
        let sampled = self.rules.completion == Completion::Sampled;
        if sampled {
            for &v in &due {
                self.finish_transfer(v as usize);
            }
        }
        self.last_time = Some(s.time);

        // Who is where: holders of the whole file, devices missing it.
        self.holders.clear();
        self.candidates.clear();
        for k in 0..s.vehicle.len() {
            let v = s.vehicle[k] as usize;
            if self.role[v] == Role::Unequipped {
                continue;
            }
            let p = (s.x[k], s.y[k]);
            if self.complete[v] {
                self.holders.push((v as u32, p));
            } else {
                self.candidates.push((v as u32, p));
            }
        }
        let previous = std::mem::take(&mut self.receiving);
        match self.rules.senders {
            Senders::Broadcast => {
                let holders: Vec<(f32, f32)> = self.holders.iter().map(|h| h.1).collect();
                in_contact(
                    &mut self.grid,
                    &holders,
                    &self.candidates,
                    self.range,
                    &mut self.receiving,
                );
                self.receiving.sort_unstable();
                // Devices credited last step and out of contact now.
                for &v in &previous {
                    if !self.complete[v as usize] && self.receiving.binary_search(&v).is_err() {
                        self.break_off(v as usize);
                    }
                }
            }
            Senders::OneAtATime => {
                let mut links = self.links.take().expect("made for one at a time");
                let (ids, points): (Vec<u32>, Vec<(f32, f32)>) =
                    self.holders.iter().chain(&self.candidates).copied().unzip();
                links.update(&ids, &points);
                for &v in &previous {
                    let v = v as usize;
                    if self.complete[v] {
                        continue;
                    }
                    if links.linked(v as u32, self.peer[v]) {
                        self.receiving.push(v as u32);
                    } else {
                        self.break_off(v);
                    }
                }
                self.links = Some(links);
                self.pair_idle();
            }
        }
        if !sampled {
            for &v in &due {
                let v = v as usize;
                if self.receiving.contains(&(v as u32)) {
                    self.finish_transfer(v);
                }
            }
            let complete = &self.complete;
            self.receiving.retain(|&v| !complete[v as usize]);
        }
        self.receiving.sort_unstable();
        self.scratch = due;
        self.times.push(s.time);
        self.over_time.push(self.completed);
    }

    /// Idle holders, in an order shuffled for this step, each start a
    /// transfer over their longest-standing link to an idle device that
    /// lacks the file.
    fn pair_idle(&mut self) {
        let peer = &self.peer;
        let mut senders: Vec<u32> = self
            .holders
            .iter()
            .map(|h| h.0)
            .filter(|&h| peer[h as usize] == NONE)
            .collect();
        if senders.is_empty() || self.candidates.is_empty() {
            return;
        }
        let mut rng = Stream::new(
            "run",
            self.seed,
            self.run,
            &format!("epidemic/order/{}", self.step_no),
        );
        for i in (1..senders.len()).rev() {
            senders.swap(i, rng.integer_inclusive(i as u32) as usize);
        }
        let links = self.links.as_ref().expect("made for one at a time");
        for h in senders {
            let free = |&v: &u32| !self.complete[v as usize] && self.peer[v as usize] == NONE;
            if let Some(v) = links.of(h).iter().copied().find(free) {
                self.peer[v as usize] = h;
                self.peer[h as usize] = v;
                self.receiving.push(v);
            }
        }
    }

    /// The outcome; contacts seen at the last step end with the trace.
    pub fn finish(self) -> Outcome {
        Outcome {
            vehicles: self.role.len(),
            roles: self.roles,
            complete: self.completed as usize,
            times: self.times,
            complete_over_time: self.over_time,
            receiving_steps: self.receiving_steps,
            broken: self.broken,
        }
    }

    /// Approximate heap size of the engine's state, bytes.
    pub fn heap_bytes(&self) -> usize {
        self.role.capacity()
            + self.progress.capacity() * 8
            + self.complete.capacity()
            + self.peer.capacity() * 4
            + self.links.as_ref().map_or(0, Links::heap_bytes)
            + (self.roles.devices.capacity() + self.roles.seeds.capacity()) * 4
            + (self.holders.capacity() + self.candidates.capacity()) * 12
            + (self.receiving.capacity() + self.scratch.capacity()) * 4
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

/// One run over a whole trace, roles drawn.
pub fn run(trace: &Trace, p: &Params) -> Result<Outcome, EpidemicError> {
    run_with(trace, Epidemic::new(trace.names(), p)?)
}

/// One run over a whole trace with the given roles.
pub fn run_roles(trace: &Trace, roles: Roles, p: &Params) -> Result<Outcome, EpidemicError> {
    run_with(trace, Epidemic::with_roles(trace.vehicles(), roles, p)?)
}

fn run_with(trace: &Trace, mut e: Epidemic) -> Result<Outcome, EpidemicError> {
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

    /// Every vehicle a device, vehicle 0 the seed, under `rules`.
    fn all_devices(n: usize, rules: Rules) -> Epidemic {
        let roles = Roles {
            devices: (1..n as u32).collect(),
            seeds: vec![0],
        };
        let p = Params {
            rules,
            ..Params::paper(1.0, 1, 1, 0)
        };
        Epidemic::with_roles(n, roles, &p).unwrap()
    }

    #[test]
    fn twenty_seconds_in_range_move_the_file_and_progress_resumes_with_another_holder() {
        let mut e = all_devices(3, Rules::PAPER);
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
        let mut e = all_devices(3, Rules::PAPER);
        // 0 (seed) — 1 at 100 m — 2 at 200 m from 1 and 300 m from the seed.
        for t in 0..=20 {
            feed(&mut e, t as f64, &[(0.0, 0.0), (100.0, 0.0), (250.0, 0.0)]);
        }
        let out = e.finish();
        assert_eq!(out.complete, 1);
        assert_eq!(out.complete_over_time[19], 0);
        assert_eq!(out.complete_over_time[20], 1);
    }

    /// Vehicle 1 next to the seed for the samples `0..=last`, then far.
    fn leave_after(last: u32, rules: Rules) -> Outcome {
        let mut e = all_devices(2, rules);
        for t in 0..=25u32 {
            let x = if t <= last { 100.0 } else { 1000.0 };
            feed(&mut e, t as f64, &[(0.0, 0.0), (x, 0.0)]);
        }
        e.finish()
    }

    #[test]
    fn the_one_completes_a_transfer_whose_link_goes_down_at_its_last_step() {
        // Measured in The ONE (c973bfb, EpidemicRouter, 1 s steps, 150 m,
        // 20 s a message): a transfer started at 1 s with the link down at
        // 21 s is delivered at 21 s; with the link down at 20 s, aborted.
        let done = |o: &Outcome| o.complete_over_time[20];
        assert_eq!(done(&leave_after(19, Rules::THE_ONE)), 1);
        assert_eq!(leave_after(18, Rules::THE_ONE).complete, 0);
        // Requiring the link at the end needs one more sample.
        let at_end = Rules {
            completion: Completion::LinkAtEnd,
            ..Rules::THE_ONE
        };
        assert_eq!(leave_after(19, at_end).complete, 0);
        assert_eq!(done(&leave_after(20, at_end)), 1);
    }

    #[test]
    fn restart_loses_a_broken_transfer_and_resume_keeps_it() {
        // 12 s in range, 3 s apart, 8 s in range again.
        let run = |rules: Rules| {
            let mut e = all_devices(2, rules);
            for t in 0..40u32 {
                let near = t < 12 || (15..23).contains(&t);
                feed(
                    &mut e,
                    t as f64,
                    &[(0.0, 0.0), (if near { 100.0 } else { 900.0 }, 0.0)],
                );
            }
            e.finish()
        };
        let keep = run(Rules::PAPER);
        assert_eq!(
            (
                keep.complete,
                keep.complete_over_time[22],
                keep.complete_over_time[23]
            ),
            (1, 0, 1)
        );
        assert_eq!(keep.broken, 1);
        let lose = run(Rules {
            progress: Progress::Restart,
            ..Rules::PAPER
        });
        assert_eq!((lose.complete, lose.broken), (0, 2));
    }

    #[test]
    fn one_transfer_at_a_time_serves_the_longest_standing_link_first() {
        // The seed (0) fills device 1 by 20 s. Device 2, 140 m from 1,
        // has been linked to it since 0 s and leaves at 45 s; device 3, 50 m
        // from 1, since 5 s. Broadcast fills 2 and 3 at once by 40 s; one
        // at a time, 1 serves its older link first (2, done at 40 s), then
        // 3 (60 s). Serving the nearest first would lose 2 when it leaves.
        let run = |rules: Rules| {
            let mut e = all_devices(4, rules);
            for t in 0..=70u32 {
                let two = if t < 45 { (140.0, 0.0) } else { (5000.0, 0.0) };
                let three = if t >= 5 { (0.0, 50.0) } else { (0.0, 5000.0) };
                feed(&mut e, t as f64, &[(0.0, -140.0), (0.0, 0.0), two, three]);
            }
            e.finish()
        };
        let b = run(Rules::PAPER);
        assert_eq!((b.complete_over_time[39], b.complete_over_time[40]), (1, 3));
        let one = run(Rules::THE_ONE);
        let c = &one.complete_over_time;
        assert_eq!(
            (c[19], c[20], c[39], c[40], c[59], c[60]),
            (0, 1, 1, 2, 2, 3)
        );
        assert_eq!((one.complete, one.broken, one.receiving_steps), (3, 0, 60));
    }

    #[test]
    fn given_roles_reproduce_a_drawn_run_and_are_checked() {
        let n: Vec<String> = (0..50).map(|i| format!("v{i}")).collect();
        let p = Params::paper(0.2, 3, 5, 1);
        let drawn = Epidemic::new(&n, &p).unwrap().finish();
        let given = Epidemic::with_roles(50, drawn.roles.clone(), &p)
            .unwrap()
            .finish();
        assert_eq!(drawn, given);
        let bad = Roles {
            devices: vec![1, 50],
            seeds: vec![0],
        };
        let e = Epidemic::with_roles(50, bad, &p).unwrap_err().0;
        assert!(e.contains("index 50"), "{e}");
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
            let p = Params { rules: Rules::THE_ONE, ..p };
            prop_assert_eq!(run(&trace, &p).unwrap(), run(&trace, &p).unwrap());
        }

        /// Broadcast with resumed progress reaches every device no later
        /// than one transfer at a time with restarts: its holders are a
        /// superset at every step (induction on the steps).
        #[test]
        fn the_papers_rules_dominate_the_ones(trace in small_trace(), seed in 0u64..1000) {
            prop_assume!(trace.vehicles() >= 4);
            let p = Params::paper(0.5, 1, seed, 0);
            let paper = run(&trace, &p).unwrap();
            let one = run(&trace, &Params { rules: Rules::THE_ONE, ..p }).unwrap();
            for (a, b) in paper.complete_over_time.iter().zip(&one.complete_over_time) {
                prop_assert!(a >= b);
            }
        }

        /// One at a time: every transfer pairs two hosts, each in one
        /// transfer only.
        #[test]
        fn one_at_a_time_pairs_are_exclusive(trace in small_trace(), seed in 0u64..1000) {
            prop_assume!(trace.vehicles() >= 4);
            let p = Params { rules: Rules::THE_ONE, ..Params::paper(0.5, 2, seed, 0) };
            let mut e = Epidemic::new(trace.names(), &p).unwrap();
            for s in trace.iter() {
                e.step(s);
                for &r in &e.receiving {
                    let h = e.peer[r as usize];
                    prop_assert!(h != NONE && e.peer[h as usize] == r && e.complete[h as usize]);
                }
                let busy = e.peer.iter().filter(|&&q| q != NONE).count();
                prop_assert_eq!(busy, 2 * e.receiving.len());
            }
        }
    }
}
