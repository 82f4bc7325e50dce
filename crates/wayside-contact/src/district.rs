//! The bridge to the packet level: a district-sized cut of a trace (an area
//! and a time window) as per-vehicle waypoint paths for the simulator's
//! mobility interface (`wayside_sim::mobility::Trajectory`).
//!
//! Each time a vehicle is inside the area for consecutive trace steps gives
//! one path: it appears at its first sample, waits there until it first
//! moves, follows one waypoint per trace step at the speed that covers the
//! step, pauses where the trace has it stand still, and disappears after its
//! last sample. A vehicle that leaves the area and comes back gets a second
//! path, named `ID~1` (then `~2`, …). Times are relative to the window's
//! start and positions to the area's south-west corner.

use wayside_sim::geometry::Vec2;
use wayside_sim::mobility::{Trajectory, Waypoint};
use wayside_sim::units::{Mps, SimTime};

use crate::trace::Trace;

/// The slowest speed the scenario format accepts for a waypoint leg, m/s
/// (`scenario.rs`, mobility validation); slower movement becomes a pause.
pub const MIN_LEG_SPEED: f64 = 0.01;

/// An axis-aligned area, metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub min_x: f64,
    pub min_y: f64,
    pub max_x: f64,
    pub max_y: f64,
}

impl Area {
    fn contains(&self, x: f32, y: f32) -> bool {
        let (x, y) = (x as f64, y as f64);
        x >= self.min_x && x <= self.max_x && y >= self.min_y && y <= self.max_y
    }
}

/// One vehicle's stay in the cut.
#[derive(Clone, Debug, PartialEq)]
pub struct VehiclePath {
    pub name: String,
    /// First and last sample in the cut, s from the window's start.
    pub appear: f64,
    pub disappear: f64,
    pub start: Vec2,
    /// When it leaves `start` (it waits there from `appear`).
    pub depart: f64,
    pub waypoints: Vec<Waypoint>,
}

impl VehiclePath {
    /// The path for the simulator's mobility interface. A `Trajectory` has
    /// no notion of absence: before `depart` it waits at `start` and after
    /// the last waypoint it stays at the end.
    pub fn trajectory(&self) -> Trajectory {
        Trajectory::waypoints(
            self.start,
            &self.waypoints,
            SimTime::from_secs_f64(self.depart),
        )
    }
}

struct Open {
    path: VehiclePath,
    /// Where the last waypoint (or the start) is, and the last sample time.
    at: Vec2,
    last: f64,
}

/// Cuts `trace` to `area` and `[from, to)`; paths in order of appearance.
pub fn cut(trace: &Trace, area: Area, from: f64, to: f64) -> Vec<VehiclePath> {
    let n = trace.vehicles();
    let mut open: Vec<Option<Open>> = (0..n).map(|_| None).collect();
    let mut stays = vec![0u32; n];
    let mut seen = vec![usize::MAX; n];
    let mut done: Vec<(usize, VehiclePath)> = Vec::new();
    let mut order = 0usize;
    let mut orders = vec![0usize; n];
    let close = |o: Open, ord: usize, done: &mut Vec<(usize, VehiclePath)>| {
        let mut p = o.path;
        p.disappear = o.last;
        done.push((ord, p));
    };
    for (i, s) in trace.iter().enumerate() {
        if s.time < from || s.time >= to {
            continue;
        }
        let t = s.time - from;
        for k in 0..s.vehicle.len() {
            let v = s.vehicle[k] as usize;
            if !area.contains(s.x[k], s.y[k]) {
                continue;
            }
            seen[v] = i;
            let pos = Vec2::new(s.x[k] as f64 - area.min_x, s.y[k] as f64 - area.min_y);
            match &mut open[v] {
                Some(o) => {
                    let dt = t - o.last;
                    let d = o.at.dist(pos).0;
                    if d / dt >= MIN_LEG_SPEED {
                        if o.path.waypoints.is_empty() {
                            o.path.depart = o.last;
                        }
                        o.path.waypoints.push(Waypoint {
                            position: pos,
                            speed: Mps(d / dt),
                            pause: SimTime::ZERO,
                        });
                        o.at = pos;
                    } else if let Some(w) = o.path.waypoints.last_mut() {
                        w.pause = SimTime::from_secs_f64(w.pause.as_secs_f64() + dt);
                    }
                    o.last = t;
                }
                None => {
                    let name = match stays[v] {
                        0 => trace.names()[v].clone(),
                        k => format!("{}~{k}", trace.names()[v]),
                    };
                    stays[v] += 1;
                    orders[v] = order;
                    order += 1;
                    let path = VehiclePath {
                        name,
                        appear: t,
                        disappear: t,
                        start: pos,
                        depart: t,
                        waypoints: Vec::new(),
                    };
                    open[v] = Some(Open {
                        path,
                        at: pos,
                        last: t,
                    });
                }
            }
        }
        for v in 0..n {
            if seen[v] != i {
                if let Some(o) = open[v].take() {
                    close(o, orders[v], &mut done);
                }
            }
        }
    }
    for v in 0..n {
        if let Some(o) = open[v].take() {
            close(o, orders[v], &mut done);
        }
    }
    done.sort_unstable_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceBuilder;
    use wayside_sim::mobility::Mobility;

    #[test]
    fn a_cut_follows_the_trace_with_appearance_pauses_and_returns() {
        let at = || String::new();
        let mut b = TraceBuilder::new();
        // "a": stands 2 s, drives east at 10 m/s, stops 2 s, leaves the area, comes back.
        let xs = [10.0, 10.0, 10.0, 20.0, 30.0, 30.0, 30.0, 500.0, 40.0];
        for (t, &x) in xs.iter().enumerate() {
            b.push(100.0 + t as f64, "a", 1000.0 + x, 2000.0, &at)
                .unwrap();
        }
        let trace = b.finish();
        let area = Area {
            min_x: 1000.0,
            min_y: 1900.0,
            max_x: 1200.0,
            max_y: 2100.0,
        };
        let paths = cut(&trace, area, 100.0, 200.0);
        assert_eq!(paths.len(), 2);
        let p = &paths[0];
        assert_eq!(
            (p.name.as_str(), p.appear, p.depart, p.disappear),
            ("a", 0.0, 2.0, 6.0)
        );
        assert_eq!(p.waypoints.len(), 2);
        assert_eq!(p.waypoints[1].pause, SimTime::from_secs_f64(2.0));
        let m = p.trajectory();
        let s = SimTime::from_secs_f64;
        assert_eq!(m.position(s(1.0)), Vec2::new(10.0, 100.0));
        assert!((m.position(s(3.5)).x - 25.0).abs() < 1e-9);
        assert!((m.velocity(s(3.5)).x - 10.0).abs() < 1e-9);
        assert_eq!(m.position(s(5.5)), Vec2::new(30.0, 100.0));
        assert_eq!((paths[1].name.as_str(), paths[1].appear), ("a~1", 8.0));
    }
}
