//! `[environment]` and `[[obstacle]]`: the channel every link shares (path
//! loss, shadowing, fading, noise) and the buildings on the lines of sight,
//! parsed and lowered into a [`ChannelConfig`]: the chain of loss stages
//! this scenario asks for ([`crate::channel`]).
//!
//! ```toml
//! [environment]
//! path_loss = "log-distance"
//! path_loss_exponent = 2.7
//! shadowing_sigma = "4 dB"
//!
//! [[obstacle]]
//! outline = [[10, 5], [40, 5], [40, 30], [10, 30]]
//! ```

use super::common::{check_range, err, one, zero_db, LengthQ, PowerQ, RatioQ, ScenarioError};
use crate::channel::building_entry::sommer_at;
use crate::channel::obstacles::{read_sumo_polygons, Obstacle, Obstacles, PER_METRE, PER_WALL};
use crate::channel::{
    Chain, ChannelConfig, FadingKind, FrozenShadowing, PathLoss, PathLossStage, RunShadowing,
    Stage, SPEED_OF_LIGHT,
};
use crate::geometry::Vec2;
use crate::units::{Db, Dbm, Hertz, Meters};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum PathLossName {
    FreeSpace,
    TwoRay,
    LogDistance,
    ThreeLogDistance,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub enum FadingName {
    None,
    Rayleigh,
    Rician,
}

#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Seed of the environment (shadowing map): the same road on every pass.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default = "default_noise")]
    pub noise_floor: PowerQ,
    #[serde(default = "default_path_loss")]
    pub path_loss: PathLossName,
    #[serde(default)]
    pub path_loss_exponent: Option<f64>,
    /// three-log-distance: the three exponents.
    #[serde(default)]
    pub path_loss_exponents: Option<[f64; 3]>,
    /// three-log-distance: where the second and third slopes begin.
    #[serde(default)]
    pub path_loss_breakpoints: Option<[LengthQ; 2]>,
    #[serde(default)]
    pub reference_distance: Option<LengthQ>,
    /// A fixed loss on every link on top of the path loss (cables,
    /// connectors, mounting); default 0 dB.
    #[serde(default = "zero_db")]
    pub system_loss: RatioQ,
    #[serde(default = "zero_db")]
    pub shadowing_sigma: RatioQ,
    #[serde(default = "default_decorrelation")]
    pub shadowing_decorrelation: LengthQ,
    /// Spread of the per-run offset of every link (lane, direction, traffic).
    #[serde(default = "zero_db")]
    pub run_shadowing_sigma: RatioQ,
    #[serde(default = "default_fading")]
    pub fading: FadingName,
    #[serde(default)]
    pub rician_k: Option<RatioQ>,
    /// The default losses of buildings: Sommer et al.'s 5.9 GHz fit at any
    /// frequency, or carried to the radio's by ITU-R P.2109.
    #[serde(default)]
    pub building_loss: BuildingLossName,
    /// Whether the buildings' edges diffract (ITU-R P.526's knife edge,
    /// [`crate::channel::diffraction`]); default none.
    #[serde(default)]
    pub diffraction: DiffractionName,
}

/// `environment.diffraction`.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DiffractionName {
    /// Buildings attenuate the line of sight only (walls and metres).
    #[default]
    None,
    /// And their corners diffract as single knife edges.
    KnifeEdge,
}

/// `environment.building_loss` ([`crate::channel::building_entry::sommer_at`]).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BuildingLossName {
    /// 9 dB per wall and 0.4 dB/m whatever the frequency.
    #[default]
    Sommer,
    /// Those, scaled from 5.9 GHz to the radio's frequency by P.2109.
    SommerP2109,
}

fn default_noise() -> PowerQ {
    PowerQ(Dbm(-95.0))
}
fn default_path_loss() -> PathLossName {
    PathLossName::TwoRay
}

fn default_decorrelation() -> LengthQ {
    LengthQ(Meters(20.0))
}
fn default_fading() -> FadingName {
    FadingName::None
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            seed: 1,
            noise_floor: default_noise(),
            path_loss: default_path_loss(),
            path_loss_exponent: None,
            path_loss_exponents: None,
            path_loss_breakpoints: None,
            reference_distance: None,
            system_loss: zero_db(),
            shadowing_sigma: zero_db(),
            shadowing_decorrelation: default_decorrelation(),
            run_shadowing_sigma: zero_db(),
            fading: default_fading(),
            rician_k: None,
            building_loss: BuildingLossName::default(),
            diffraction: DiffractionName::default(),
        }
    }
}

/// A building: its outline, and its losses (defaults: Sommer et al. 2011,
/// as Veins ships them; [`crate::channel::obstacles`]).
#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ObstacleSection {
    #[serde(default)]
    pub name: Option<String>,
    /// Corners in metres, `[[x, y], ...]`, in order around the outline.
    #[serde(default)]
    pub outline: Option<Vec<[f64; 2]>>,
    /// Or: every `<poly>` of a SUMO polygon file (`polyconvert`'s output),
    /// each a building with this section's losses. A relative path is from
    /// the working directory (`wayside run` makes it relative to the
    /// scenario file).
    #[serde(default)]
    pub sumo: Option<String>,
    /// With `sumo`: only polygons of these types (e.g. `["building"]`).
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(default)]
    pub per_wall: Option<RatioQ>,
    #[serde(default)]
    pub per_metre: Option<RatioQ>,
}

/// Most buildings a scenario may hold (a city district from OpenStreetMap
/// has tens of thousands).
const MAX_OBSTACLES: usize = 200_000;
/// Most corners of one building's outline.
const MAX_OUTLINE: usize = 10_000;

impl Environment {
    /// The channel at carrier `frequency` (the radio's), with the
    /// buildings of the `[[obstacle]]` sections.
    pub(super) fn lower(
        &self,
        frequency: Hertz,
        obstacles: &[ObstacleSection],
    ) -> Result<ChannelConfig, ScenarioError> {
        let env = self;
        check_range(
            "environment.noise_floor",
            env.noise_floor.0 .0,
            &format!("{} dBm", env.noise_floor.0 .0),
            -130.0,
            -30.0,
            "-130 dBm to -30 dBm",
        )?;
        if let Some(n) = env.path_loss_exponent {
            check_range(
                "environment.path_loss_exponent",
                n,
                &n.to_string(),
                1.0,
                8.0,
                "1 to 8",
            )?;
            if env.path_loss != PathLossName::LogDistance {
                return err(
                    "environment.path_loss_exponent: only used with path_loss = \"log-distance\"",
                );
            }
        }
        if let Some(r) = env.reference_distance {
            check_range(
                "environment.reference_distance",
                r.0 .0,
                &format!("{} m", r.0 .0),
                0.01,
                10_000.0,
                "0.01 m to 10 km",
            )?;
        }
        let reference = env.reference_distance.map_or(Meters(1.0), |r| r.0);
        let path_loss = match (env.path_loss, env.path_loss_exponents, env.path_loss_breakpoints) {
            (PathLossName::ThreeLogDistance, Some(exponents), Some(bs)) => {
                for (i, n) in exponents.iter().enumerate() {
                    check_range(&format!("environment.path_loss_exponents[{i}]"), *n, &n.to_string(), 1.0, 20.0, "1 to 20")?;
                }
                for (i, b) in bs.iter().enumerate() {
                    check_range(&format!("environment.path_loss_breakpoints[{i}]"), b.0 .0, &format!("{} m", b.0 .0), 1.0, 1e5, "1 m to 100 km")?;
                }
                if bs[1].0 .0 <= bs[0].0 .0 {
                    return err("environment.path_loss_breakpoints: the second must be farther than the first");
                }
                PathLoss::ThreeLogDistance { exponents, breakpoints: [bs[0].0, bs[1].0], reference }
            }
            (PathLossName::ThreeLogDistance, _, _) => {
                return err("environment: path_loss = \"three-log-distance\" needs path_loss_exponents = [n0, n1, n2] and path_loss_breakpoints = [d1, d2]");
            }
            (_, Some(_), _) | (_, _, Some(_)) => {
                return err("environment.path_loss_exponents and path_loss_breakpoints: only used with path_loss = \"three-log-distance\"")
            }
            (PathLossName::FreeSpace, None, None) => PathLoss::FreeSpace,
            (PathLossName::TwoRay, None, None) => PathLoss::TwoRayGround,
            (PathLossName::LogDistance, None, None) => PathLoss::LogDistance { exponent: env.path_loss_exponent.unwrap_or(3.0), reference },
        };
        let s = env.shadowing_sigma.0 .0;
        check_range(
            "environment.shadowing_sigma",
            s,
            &format!("{s} dB"),
            0.0,
            20.0,
            "0 dB to 20 dB",
        )?;
        let r = env.run_shadowing_sigma.0 .0;
        check_range(
            "environment.run_shadowing_sigma",
            r,
            &format!("{r} dB"),
            0.0,
            20.0,
            "0 dB to 20 dB",
        )?;
        let dc = env.shadowing_decorrelation.0 .0;
        check_range(
            "environment.shadowing_decorrelation",
            dc,
            &format!("{dc} m"),
            0.1,
            10_000.0,
            "0.1 m to 10 km",
        )?;
        let fading = match (env.fading, env.rician_k) {
            (FadingName::Rician, k) => {
                if let Some(k) = k {
                    check_range(
                        "environment.rician_k",
                        k.0 .0,
                        &format!("{} dB", k.0 .0),
                        -30.0,
                        40.0,
                        "-30 dB to 40 dB",
                    )?;
                }
                FadingKind::Rician {
                    k: k.map_or(Db(6.0), |k| k.0),
                }
            }
            (_, Some(_)) => return err("environment.rician_k: only used with fading = \"rician\""),
            (FadingName::None, None) => FadingKind::None,
            (FadingName::Rayleigh, None) => FadingKind::Rayleigh,
        };
        let system_loss = env.system_loss.0;
        check_range(
            "environment.system_loss",
            system_loss.0,
            &format!("{} dB", system_loss.0),
            0.0,
            60.0,
            "0 dB to 60 dB",
        )?;
        // The chain, in order; what the section does not ask for is left out.
        let wavelength = SPEED_OF_LIGHT / frequency.0;
        let mut chain: Vec<Arc<dyn Stage>> = vec![Arc::new(PathLossStage {
            model: path_loss,
            wavelength,
        })];
        let mut buildings = lower_obstacles(obstacles, self.building_loss, frequency)?;
        if self.diffraction == DiffractionName::KnifeEdge {
            if buildings.is_empty() {
                return err("environment.diffraction: there are no [[obstacle]] buildings to diffract at");
            }
            buildings = buildings.with_diffraction(wavelength);
        }
        if !buildings.is_empty() {
            chain.push(Arc::new(buildings));
        }
        if s > 0.0 {
            chain.push(Arc::new(FrozenShadowing {
                sigma: env.shadowing_sigma.0,
                decorrelation: env.shadowing_decorrelation.0,
                environment_seed: env.seed,
            }));
        }
        if r > 0.0 {
            chain.push(Arc::new(RunShadowing {
                sigma: env.run_shadowing_sigma.0,
            }));
        }
        Ok(ChannelConfig {
            chain: Chain::new(chain),
            system_loss,
            fading,
            frequency,
            noise_floor: env.noise_floor.0,
        })
    }
}

/// The buildings of the `[[obstacle]]` sections, whose losses default to
/// those `building_loss` gives at `frequency`.
fn lower_obstacles(
    sections: &[ObstacleSection],
    building_loss: BuildingLossName,
    frequency: Hertz,
) -> Result<Obstacles, ScenarioError> {
    let (default_wall, default_metre) = match building_loss {
        BuildingLossName::Sommer => (PER_WALL, PER_METRE),
        BuildingLossName::SommerP2109 => sommer_at(frequency),
    };
    if sections.len() > MAX_OBSTACLES {
        return err(format!(
            "obstacle: {} buildings; at most {MAX_OBSTACLES} are allowed",
            sections.len()
        ));
    }
    let mut list = Vec::with_capacity(sections.len());
    for (i, o) in sections.iter().enumerate() {
        let key = |k: &str| format!("obstacle[{i}].{k}");
        let outlines: Vec<Vec<Vec2>> = match (&o.outline, &o.sumo) {
            (Some(outline), None) => {
                if !o.types.is_empty() {
                    return err(format!("{}: only used with sumo", key("types")));
                }
                vec![outline.iter().map(|p| Vec2::new(p[0], p[1])).collect()]
            }
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    ScenarioError(format!("{}: cannot read '{path}': {e}", key("sumo")))
                })?;
                read_sumo_polygons(&text, path, &o.types)
                    .map_err(|e| ScenarioError(format!("{}: {e}", key("sumo"))))?
            }
            _ => {
                return err(format!(
                "{}: give an outline = [[x, y], ...] or a sumo = \"file.poly.xml\", one of them",
                key("outline")
            ))
            }
        };
        let loss = |k: &str, v: Option<RatioQ>, default: Db| -> Result<Db, ScenarioError> {
            let d = v.map_or(default, |q| q.0);
            check_range(
                &key(k),
                d.0,
                &format!("{} dB", d.0),
                0.0,
                100.0,
                "0 dB to 100 dB",
            )?;
            Ok(d)
        };
        let (per_wall, per_metre) = (
            loss("per_wall", o.per_wall, default_wall)?,
            loss("per_metre", o.per_metre, default_metre)?,
        );
        for outline in outlines {
            if !(3..=MAX_OUTLINE).contains(&outline.len()) {
                return err(format!(
                    "{}: {} corners; an outline has 3 to {MAX_OUTLINE}",
                    key("outline"),
                    outline.len()
                ));
            }
            if let Some(p) = outline.iter().find(|p| {
                !(p.x.is_finite() && p.y.is_finite() && p.x.abs() <= 1e7 && p.y.abs() <= 1e7)
            }) {
                return err(format!(
                    "{}: corner ({}, {}): coordinates are metres within ±10,000 km",
                    key("outline"),
                    p.x,
                    p.y
                ));
            }
            if list.len() == MAX_OBSTACLES {
                return err(format!("obstacle: more than {MAX_OBSTACLES} buildings; at most {MAX_OBSTACLES} are allowed"));
            }
            list.push(Obstacle {
                outline,
                per_wall,
                per_metre,
            });
        }
    }
    Ok(Obstacles::new(list))
}
