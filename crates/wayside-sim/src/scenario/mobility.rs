//! A node's `mobility` table: how the nodes of a `[[node]]` section move
//! (`static`, `line`, `polyline`, `waypoints`, or a Nagel–Schreckenberg
//! highway that makes its own vehicles), checked and lowered into their
//! [`Trajectory`] ([`crate::mobility`]).
//!
//! ```toml
//! mobility = { model = "line", speed = "80 km/h", heading = 0 }
//! ```

use super::common::{
    check_point, check_range, err, zero_time, Point, ScenarioError, SpeedQ, TimeQ, MAX_DURATION_S,
};
use crate::geometry::Vec2;
use crate::mobility::nasch::Highway;
use crate::mobility::{Trajectory, Waypoint};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct WaypointSection {
    pub position: Point,
    pub speed: SpeedQ,
    #[serde(default = "zero_time")]
    pub pause: TimeQ,
}

#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MobilitySection {
    /// Stays at the node's `position`.
    Static {},
    /// From `position`, moves forever at `speed` along `heading` (degrees, 0 = +x).
    Line {
        speed: SpeedQ,
        #[serde(default)]
        heading: f64,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
    /// Follows `points` at `speed`, starting from the first.
    Polyline {
        points: Vec<Point>,
        speed: SpeedQ,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
    /// From `position`, visits each waypoint at its speed, pausing there.
    Waypoints {
        waypoints: Vec<WaypointSection>,
        #[serde(default = "zero_time")]
        depart: TimeQ,
    },
    /// The vehicles of a Nagel–Schreckenberg highway whose lane 0 starts at
    /// `position` and runs along +x, lanes 3.5 m apart along +y
    /// ([`crate::mobility::nasch`]): one node per vehicle on the road during
    /// the run, named `name-0`, `name-1`… in order of entry, its radio on
    /// while it is on the road. The traffic follows the scenario's `seed`.
    Nasch {
        /// Fraction of cells occupied, kept for the whole run.
        density: f64,
        #[serde(default = "nasch_lanes")]
        lanes: u32,
        /// Road length in 1.5 m cells.
        #[serde(default = "nasch_cells")]
        cells: u32,
        /// Dawdling probability.
        #[serde(default = "nasch_dawdle")]
        dawdle: f64,
        /// Source vehicles, named `name-source-0`, `name-source-1`… in
        /// order of entry; a source that leaves is replaced by the vehicle
        /// entering in its place. An `[[app]]` whose `from` is
        /// `"name-source"` runs on each of them while it is on the road.
        #[serde(default)]
        sources: u32,
    },
}

fn nasch_lanes() -> u32 {
    crate::mobility::nasch::Highway::chen(0.0).lanes
}
fn nasch_cells() -> u32 {
    crate::mobility::nasch::Highway::chen(0.0).cells
}
fn nasch_dawdle() -> f64 {
    crate::mobility::nasch::Highway::chen(0.0).dawdle
}

/// Checks a mobility section once for a group of nodes.
pub(super) fn check_mobility(key: &str, m: &MobilitySection) -> Result<(), ScenarioError> {
    let speed = |k: &str, s: SpeedQ| {
        check_range(
            k,
            s.0 .0,
            &format!("{} m/s", s.0 .0),
            0.01,
            200.0,
            "0.01 m/s to 200 m/s (720 km/h)",
        )
    };
    let depart = |d: TimeQ| {
        check_range(
            &format!("{key}.depart"),
            d.0,
            &format!("{} s", d.0),
            0.0,
            MAX_DURATION_S,
            "0 s to 24 h",
        )
    };
    match m {
        MobilitySection::Static {} => Ok(()),
        MobilitySection::Line {
            speed: s,
            heading,
            depart: d,
        } => {
            depart(*d)?;
            speed(&format!("{key}.speed"), *s)?;
            check_range(
                &format!("{key}.heading"),
                *heading,
                &heading.to_string(),
                -360.0,
                360.0,
                "-360 to 360 degrees",
            )
        }
        MobilitySection::Polyline {
            points,
            speed: s,
            depart: d,
        } => {
            depart(*d)?;
            speed(&format!("{key}.speed"), *s)?;
            if points.len() < 2 {
                return err(format!(
                    "{key}.points: {} given; a polyline needs at least 2",
                    points.len()
                ));
            }
            for (i, p) in points.iter().enumerate() {
                check_point(&format!("{key}.points[{i}]"), *p)?;
            }
            Ok(())
        }
        MobilitySection::Waypoints {
            waypoints,
            depart: d,
        } => {
            depart(*d)?;
            if waypoints.is_empty() {
                return err(format!("{key}.waypoints: give at least one waypoint"));
            }
            for (i, w) in waypoints.iter().enumerate() {
                speed(&format!("{key}.waypoints[{i}].speed"), w.speed)?;
                check_point(&format!("{key}.waypoints[{i}].position"), w.position)?;
                let p = w.pause.0;
                check_range(
                    &format!("{key}.waypoints[{i}].pause"),
                    p,
                    &format!("{p} s"),
                    0.0,
                    MAX_DURATION_S,
                    "0 s to 24 h",
                )?;
            }
            Ok(())
        }
        MobilitySection::Nasch { lanes, cells, .. } => {
            check_range(
                &format!("{key}.lanes"),
                *lanes as f64,
                &lanes.to_string(),
                1.0,
                16.0,
                "1 to 16",
            )?;
            check_range(
                &format!("{key}.cells"),
                *cells as f64,
                &cells.to_string(),
                5.0,
                100_000.0,
                "5 to 100000 cells of 1.5 m",
            )?;
            highway(m, Vec2::default())
                .validate()
                .map_err(|e| ScenarioError(format!("{key}.{e}")))
        }
    }
}

/// The highway of a Nagel–Schreckenberg section, lane 0 starting at `at`.
pub(super) fn highway(m: &MobilitySection, at: Vec2) -> Highway {
    let MobilitySection::Nasch {
        density,
        lanes,
        cells,
        dawdle,
        sources,
    } = *m
    else {
        unreachable!("called for NaSch sections only")
    };
    Highway {
        lanes,
        cells,
        dawdle,
        sources,
        origin: at,
        ..Highway::chen(density)
    }
}

/// The trajectory of a (checked) mobility section starting at `at`, every
/// point shifted by `off` (the node's place in its group).
pub(super) fn trajectory(m: &MobilitySection, at: Vec2, off: Vec2) -> Trajectory {
    let shift = |p: &Point| Vec2::new(p.0.x + off.x, p.0.y + off.y);
    match m {
        MobilitySection::Static {} => Trajectory::fixed(at),
        MobilitySection::Line {
            speed,
            heading,
            depart,
        } => Trajectory::line(at, *heading, speed.0, depart.time()),
        MobilitySection::Polyline {
            points,
            speed,
            depart,
        } => {
            let pts: Vec<Vec2> = points.iter().map(shift).collect();
            Trajectory::polyline(&pts, speed.0, depart.time())
        }
        MobilitySection::Waypoints { waypoints, depart } => {
            let wps: Vec<Waypoint> = waypoints
                .iter()
                .map(|w| Waypoint {
                    position: shift(&w.position),
                    speed: w.speed.0,
                    pause: w.pause.time(),
                })
                .collect();
            Trajectory::waypoints(at, &wps, depart.time())
        }
        MobilitySection::Nasch { .. } => unreachable!("NaSch sections are expanded by members()"),
    }
}
