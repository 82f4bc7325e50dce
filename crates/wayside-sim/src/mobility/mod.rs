//! Where nodes are: the `Mobility` trait and its models.
//!
//! Static nodes, constant velocity along a line or a polyline, and waypoints
//! with per-leg speeds and pauses all reduce to one piecewise-linear
//! [`Trajectory`]. Traffic models reduce to trajectories too: the
//! Nagel–Schreckenberg highway ([`nasch`]) runs its cellular automaton once
//! for the whole run and gives each vehicle the path it drove; SUMO traces
//! will be a further implementation of the trait.

pub mod nasch;

use crate::geometry::Vec2;
use crate::units::{Meters, Mps, SimTime};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// What the rest of the simulator asks of a mobility model.
pub trait Mobility {
    /// Position at time `t`.
    fn position(&self, t: SimTime) -> Vec2;
    /// Velocity vector at time `t`, m/s.
    fn velocity(&self, t: SimTime) -> Vec2;
    /// Distance travelled since t = 0; drives the phase of fast fading.
    fn odometer(&self, t: SimTime) -> Meters;
    /// The highest speed the model ever moves at, m/s (bounds how far a
    /// node can get between two updates of the medium's spatial index).
    fn max_speed(&self) -> f64;
}

/// One leg: at `t0` the node is at `p0`, moving linearly to `p1` at `t1`.
#[derive(Clone, Debug, PartialEq)]
struct Leg {
    t0: f64,
    t1: f64,
    p0: Vec2,
    p1: Vec2,
    /// Odometer reading at `t0`.
    odo0: f64,
}

/// A piecewise-linear path in time. Before the first leg the node waits at
/// its start; after the last one it stays at its end — unless the path was
/// built as an unbounded line, whose last leg extends forever.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    start: Vec2,
    legs: Vec<Leg>,
    /// Velocity kept after the last leg (non-zero only for unbounded lines).
    tail_velocity: Vec2,
    /// The leg found last ([`LegHint`]).
    hint: LegHint,
}

/// The index of the leg a trajectory found last: a run asks for times
/// that mostly stay in one leg or move to the next, so that leg or its
/// successor is tried before searching all legs. Only a shortcut: the leg
/// found is the same either way, and it is no part of the trajectory's
/// value (equal whatever it holds).
#[derive(Debug, Default)]
struct LegHint(AtomicUsize);

impl Clone for LegHint {
    fn clone(&self) -> Self {
        LegHint(AtomicUsize::new(self.0.load(Relaxed)))
    }
}

impl PartialEq for LegHint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One waypoint: travel to `position` at `speed`, then pause there.
#[derive(Clone, Debug, PartialEq)]
pub struct Waypoint {
    pub position: Vec2,
    pub speed: Mps,
    pub pause: SimTime,
}

impl Trajectory {
    pub fn fixed(at: Vec2) -> Self {
        Trajectory {
            start: at,
            legs: Vec::new(),
            tail_velocity: Vec2::default(),
            hint: LegHint::default(),
        }
    }

    /// Starts at `start` at `depart` and moves forever at `speed` along `heading_deg`
    /// (0° = +x, 90° = +y).
    pub fn line(start: Vec2, heading_deg: f64, speed: Mps, depart: SimTime) -> Self {
        let h = heading_deg.to_radians();
        Trajectory {
            start,
            legs: vec![Leg {
                t0: depart.as_secs_f64(),
                t1: depart.as_secs_f64(),
                p0: start,
                p1: start,
                odo0: 0.0,
            }],
            tail_velocity: Vec2::new(speed.0 * h.cos(), speed.0 * h.sin()),
            hint: LegHint::default(),
        }
    }

    /// Follows `points` at a constant `speed`, leaving the first at `depart`.
    pub fn polyline(points: &[Vec2], speed: Mps, depart: SimTime) -> Self {
        let wps: Vec<Waypoint> = points[1..]
            .iter()
            .map(|&p| Waypoint {
                position: p,
                speed,
                pause: SimTime::ZERO,
            })
            .collect();
        Self::waypoints(points[0], &wps, depart)
    }

    /// Starts at `start` at `depart`, then visits each waypoint in turn.
    /// Speeds must be positive (the scenario validator guarantees it).
    pub fn waypoints(start: Vec2, waypoints: &[Waypoint], depart: SimTime) -> Self {
        let mut legs = Vec::with_capacity(waypoints.len() * 2);
        let mut t = depart.as_secs_f64();
        let mut p = start;
        let mut odo = 0.0;
        for w in waypoints {
            let d = p.dist(w.position).0;
            let dt = d / w.speed.0;
            legs.push(Leg {
                t0: t,
                t1: t + dt,
                p0: p,
                p1: w.position,
                odo0: odo,
            });
            t += dt;
            odo += d;
            p = w.position;
            if w.pause > SimTime::ZERO {
                let dt = w.pause.as_secs_f64();
                legs.push(Leg {
                    t0: t,
                    t1: t + dt,
                    p0: p,
                    p1: p,
                    odo0: odo,
                });
                t += dt;
            }
        }
        Trajectory {
            start,
            legs,
            tail_velocity: Vec2::default(),
            hint: LegHint::default(),
        }
    }

    /// Passes through each `(time, position)` sample in turn, moving
    /// linearly between consecutive ones (times strictly increasing); waits
    /// at the first before it and stays at the last after it.
    pub fn timed(samples: &[(SimTime, Vec2)]) -> Self {
        let mut legs = Vec::with_capacity(samples.len().saturating_sub(1));
        let mut odo = 0.0;
        for w in samples.windows(2) {
            let ((t0, p0), (t1, p1)) = (w[0], w[1]);
            legs.push(Leg {
                t0: t0.as_secs_f64(),
                t1: t1.as_secs_f64(),
                p0,
                p1,
                odo0: odo,
            });
            odo += p0.dist(p1).0;
        }
        let start = samples.first().map_or(Vec2::default(), |s| s.1);
        Trajectory {
            start,
            legs,
            tail_velocity: Vec2::default(),
            hint: LegHint::default(),
        }
    }

    /// The leg at `t`: the first whose end is not before `t`, if it has
    /// begun by then.
    fn leg_at(&self, t: f64) -> Option<&Leg> {
        let legs = &self.legs;
        // The first leg ending at `t` or later is `h` if `h` ends then and
        // the one before it earlier.
        let first = |h: usize| legs[h].t1 >= t && (h == 0 || legs[h - 1].t1 < t);
        let h = self.hint.0.load(Relaxed);
        let i = if h < legs.len() && first(h) {
            h
        } else if h + 1 < legs.len() && first(h + 1) {
            h + 1
        } else {
            legs.partition_point(|l| l.t1 < t)
        };
        self.hint.0.store(i, Relaxed);
        legs.get(i).filter(|l| l.t0 <= t)
    }

    fn last(&self) -> Option<&Leg> {
        self.legs.last()
    }
}

impl Mobility for Trajectory {
    fn max_speed(&self) -> f64 {
        let legs = self
            .legs
            .iter()
            .filter(|l| l.t1 > l.t0)
            .map(|l| l.p0.dist(l.p1).0 / (l.t1 - l.t0));
        legs.fold(self.tail_velocity.norm(), f64::max)
    }

    fn position(&self, t: SimTime) -> Vec2 {
        let t = t.as_secs_f64();
        let Some(last) = self.last() else {
            return self.start;
        };
        if t <= self.legs[0].t0 {
            return self.start;
        }
        if t >= last.t1 {
            let dt = t - last.t1;
            return Vec2::new(
                last.p1.x + self.tail_velocity.x * dt,
                last.p1.y + self.tail_velocity.y * dt,
            );
        }
        match self.leg_at(t) {
            Some(l) if l.t1 > l.t0 => l.p0.lerp(l.p1, (t - l.t0) / (l.t1 - l.t0)),
            Some(l) => l.p1,
            None => self.start,
        }
    }

    fn velocity(&self, t: SimTime) -> Vec2 {
        let t = t.as_secs_f64();
        let Some(last) = self.last() else {
            return Vec2::default();
        };
        if t < self.legs[0].t0 {
            return Vec2::default();
        }
        if t >= last.t1 {
            return self.tail_velocity;
        }
        match self.leg_at(t) {
            Some(l) if l.t1 > l.t0 => {
                let dt = l.t1 - l.t0;
                Vec2::new((l.p1.x - l.p0.x) / dt, (l.p1.y - l.p0.y) / dt)
            }
            _ => Vec2::default(),
        }
    }

    fn odometer(&self, t: SimTime) -> Meters {
        let t = t.as_secs_f64();
        let Some(last) = self.last() else {
            return Meters(0.0);
        };
        if t <= self.legs[0].t0 {
            return Meters(0.0);
        }
        if t >= last.t1 {
            let leg = last.p0.dist(last.p1).0;
            return Meters(last.odo0 + leg + self.tail_velocity.norm() * (t - last.t1));
        }
        match self.leg_at(t) {
            Some(l) if l.t1 > l.t0 => {
                Meters(l.odo0 + l.p0.dist(l.p1).0 * (t - l.t0) / (l.t1 - l.t0))
            }
            Some(l) => Meters(l.odo0),
            None => Meters(0.0),
        }
    }
}

/// The mobility models, dispatched as an enum.
#[derive(Clone, Debug, PartialEq)]
pub enum MobilityModel {
    Trajectory(Trajectory),
}

impl Mobility for MobilityModel {
    fn position(&self, t: SimTime) -> Vec2 {
        match self {
            MobilityModel::Trajectory(m) => m.position(t),
        }
    }
    fn velocity(&self, t: SimTime) -> Vec2 {
        match self {
            MobilityModel::Trajectory(m) => m.velocity(t),
        }
    }
    fn odometer(&self, t: SimTime) -> Meters {
        match self {
            MobilityModel::Trajectory(m) => m.odometer(t),
        }
    }
    fn max_speed(&self) -> f64 {
        match self {
            MobilityModel::Trajectory(m) => m.max_speed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> SimTime {
        SimTime::from_secs_f64(x)
    }

    #[test]
    fn static_node_never_moves() {
        let m = Trajectory::fixed(Vec2::new(3.0, 4.0));
        assert_eq!(m.position(s(100.0)), Vec2::new(3.0, 4.0));
        assert_eq!(m.velocity(s(1.0)), Vec2::default());
        assert_eq!(m.odometer(s(100.0)).0, 0.0);
    }

    #[test]
    fn line_moves_at_constant_velocity_after_departure() {
        let m = Trajectory::line(Vec2::new(-1000.0, 5.0), 0.0, Mps(80.0 / 3.6), s(2.0));
        assert_eq!(m.position(s(1.0)), Vec2::new(-1000.0, 5.0));
        let p = m.position(s(47.0));
        assert!((p.x - (-1000.0 + 45.0 * 80.0 / 3.6)).abs() < 1e-6 && (p.y - 5.0).abs() < 1e-9);
        assert!((m.velocity(s(10.0)).x - 22.2222).abs() < 1e-3);
        assert!((m.odometer(s(12.0)).0 - 10.0 * 80.0 / 3.6).abs() < 1e-6);
    }

    #[test]
    fn waypoints_follow_leg_speeds_and_pauses() {
        let wps = [
            Waypoint {
                position: Vec2::new(100.0, 0.0),
                speed: Mps(10.0),
                pause: s(5.0),
            },
            Waypoint {
                position: Vec2::new(100.0, 40.0),
                speed: Mps(20.0),
                pause: SimTime::ZERO,
            },
        ];
        let m = Trajectory::waypoints(Vec2::new(0.0, 0.0), &wps, SimTime::ZERO);
        assert_eq!(m.position(s(5.0)), Vec2::new(50.0, 0.0));
        assert_eq!(m.position(s(12.0)), Vec2::new(100.0, 0.0)); // pausing
        assert_eq!(m.velocity(s(12.0)), Vec2::default());
        assert_eq!(m.position(s(16.0)), Vec2::new(100.0, 20.0));
        assert_eq!(m.position(s(100.0)), Vec2::new(100.0, 40.0)); // stays at the end
        assert!((m.odometer(s(100.0)).0 - 140.0).abs() < 1e-9);
    }

    #[test]
    fn the_leg_found_does_not_depend_on_the_times_asked_before() {
        // Legs with pauses and samples at equal times: times asked forwards,
        // backwards and jumping give what a trajectory asked for the first
        // time gives (its hint at the first leg).
        let wps: Vec<Waypoint> = (1..=6)
            .map(|i| Waypoint {
                position: Vec2::new(10.0 * f64::from(i), f64::from(i % 2)),
                speed: Mps(5.0),
                pause: s(f64::from(i % 3)),
            })
            .collect();
        let m = Trajectory::waypoints(Vec2::new(0.0, 0.0), &wps, s(1.0));
        let times = (0..200).map(|k| f64::from((k * 37) % 101) * 0.2);
        for t in times.chain((0..101).map(|k| f64::from(k) * 0.2)) {
            let fresh = Trajectory::waypoints(Vec2::new(0.0, 0.0), &wps, s(1.0));
            assert_eq!(m.position(s(t)), fresh.position(s(t)), "t = {t}");
            assert_eq!(m.odometer(s(t)), fresh.odometer(s(t)), "t = {t}");
            assert_eq!(m.velocity(s(t)), fresh.velocity(s(t)), "t = {t}");
        }
    }

    #[test]
    fn timed_samples_are_interpolated_and_held_at_the_ends() {
        let m = Trajectory::timed(&[
            (s(2.0), Vec2::new(0.0, 0.0)),
            (s(3.0), Vec2::new(30.0, 0.0)),
            (s(5.0), Vec2::new(30.0, 4.0)),
        ]);
        assert_eq!(m.position(s(0.0)), Vec2::new(0.0, 0.0));
        assert_eq!(m.position(s(2.5)), Vec2::new(15.0, 0.0));
        assert_eq!(m.velocity(s(2.5)), Vec2::new(30.0, 0.0));
        assert_eq!(m.position(s(4.0)), Vec2::new(30.0, 2.0));
        assert_eq!(m.position(s(9.0)), Vec2::new(30.0, 4.0));
        assert!((m.odometer(s(9.0)).0 - 34.0).abs() < 1e-9);
        assert_eq!(m.max_speed(), 30.0);
    }

    #[test]
    fn polyline_is_continuous_at_corners() {
        let m = Trajectory::polyline(
            &[
                Vec2::new(0.0, 0.0),
                Vec2::new(10.0, 0.0),
                Vec2::new(10.0, 10.0),
            ],
            Mps(1.0),
            SimTime::ZERO,
        );
        let before = m.position(s(9.999_999));
        let after = m.position(s(10.000_001));
        assert!(before.dist(after).0 < 1e-5);
    }
}
