//! Who carries a device and who is a seed: drawn for a run, or given (so
//! that a run can be matched with another simulator's, or repeated).
//!
//! Draws come from per-vehicle streams keyed by the vehicle's id
//! (`rng::Stream`, domain "run", names `epidemic/device/ID` and
//! `epidemic/seed/ID`): the devices are the vehicles with the smallest
//! draws, so the same (seed, run) equips a superset of vehicles at a higher
//! penetration, and nothing depends on the order of the trace. The seeds
//! are drawn the same way among the vehicles left. When the penetration
//! leaves fewer vehicles than seeds (e.g. every vehicle equipped), the
//! seeds come first: the devices are every vehicle but the seeds.

use std::collections::HashMap;

use wayside_sim::rng::Stream;

/// The equipped vehicles of a run, as indices into the trace's vehicles,
/// each list sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    /// Vehicles carrying a device that starts without the file.
    pub devices: Vec<u32>,
    /// Vehicles carrying a seed device that starts with the file.
    pub seeds: Vec<u32>,
}

/// Roles that cannot be drawn or are inconsistent; the message says why
/// and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RolesError(pub String);

/// Indices of the `k` entries of `eligible` with the smallest draws from
/// each vehicle's stream `prefix/ID`, sorted by index.
fn smallest_draws(
    names: &[String],
    eligible: &[u32],
    k: usize,
    seed: u64,
    run: u64,
    prefix: &str,
) -> Vec<u32> {
    let mut draws: Vec<(f64, u32)> = eligible
        .iter()
        .map(|&v| {
            let name = format!("{prefix}/{}", names[v as usize]);
            (Stream::new("run", seed, run, &name).uniform(), v)
        })
        .collect();
    draws.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<u32> = draws[..k].iter().map(|d| d.1).collect();
    chosen.sort_unstable();
    chosen
}

impl Roles {
    /// Draws `penetration` of the vehicles `names` as devices and `seeds`
    /// further vehicles as seeds (see the module doc).
    pub fn draw(
        names: &[String],
        penetration: f64,
        seeds: usize,
        seed: u64,
        run: u64,
    ) -> Result<Roles, RolesError> {
        let n = names.len();
        if !(0.0..=1.0).contains(&penetration) {
            return Err(RolesError(format!(
                "penetration {penetration}: give a fraction from 0 to 1 (e.g. 0.125 for 12.5%)"
            )));
        }
        if seeds == 0 || seeds >= n {
            return Err(RolesError(format!(
                "{seeds} seeds: the trace has {n} vehicles; give 1 to {} seeds",
                n.saturating_sub(1)
            )));
        }
        let devices = ((penetration * n as f64).round() as usize).min(n - seeds);
        if devices == 0 {
            return Err(RolesError(format!(
                "penetration {}% of {n} vehicles equips no vehicle: give at least {:.3}%",
                penetration * 100.0,
                50.0 / n.max(1) as f64
            )));
        }
        let all: Vec<u32> = (0..n as u32).collect();
        let devices = smallest_draws(names, &all, devices, seed, run, "epidemic/device");
        let mut is_device = vec![false; n];
        for &d in &devices {
            is_device[d as usize] = true;
        }
        let rest: Vec<u32> = all
            .into_iter()
            .filter(|&v| !is_device[v as usize])
            .collect();
        let seeds = smallest_draws(names, &rest, seeds, seed, run, "epidemic/seed");
        Ok(Roles { devices, seeds })
    }

    /// Roles given by vehicle id; every id must be in `names`, no vehicle
    /// in both lists, and at least one device and one seed.
    pub fn from_ids(
        names: &[String],
        devices: &[String],
        seeds: &[String],
    ) -> Result<Roles, RolesError> {
        let index: HashMap<&str, u32> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let look = |what: &str, ids: &[String]| -> Result<Vec<u32>, RolesError> {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let &v = index.get(id.as_str()).ok_or_else(|| {
                    RolesError(format!(
                        "{what} '{id}': no vehicle of the trace has this id"
                    ))
                })?;
                out.push(v);
            }
            out.sort_unstable();
            if let Some(w) = out.windows(2).find(|w| w[0] == w[1]) {
                return Err(RolesError(format!(
                    "{what} '{}' is listed twice",
                    names[w[0] as usize]
                )));
            }
            Ok(out)
        };
        let r = Roles {
            devices: look("device", devices)?,
            seeds: look("seed", seeds)?,
        };
        if r.devices.is_empty() || r.seeds.is_empty() {
            return Err(RolesError(format!(
                "{} devices and {} seeds given: give at least one of each",
                r.devices.len(),
                r.seeds.len()
            )));
        }
        if let Some(&v) = r.seeds.iter().find(|s| r.devices.binary_search(s).is_ok()) {
            return Err(RolesError(format!(
                "vehicle '{}' is given as both a device and a seed",
                names[v as usize]
            )));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("v{i}")).collect()
    }

    #[test]
    fn draws_are_deterministic_nested_across_penetrations_and_independent_of_order() {
        let n = names(1000);
        let a = Roles::draw(&n, 0.05, 4, 7, 3).unwrap();
        assert_eq!(a, Roles::draw(&n, 0.05, 4, 7, 3).unwrap());
        assert_eq!((a.devices.len(), a.seeds.len()), (50, 4));
        let big = Roles::draw(&n, 0.10, 4, 7, 3).unwrap();
        assert!(a.devices.iter().all(|d| big.devices.contains(d)));
        assert_ne!(a, Roles::draw(&n, 0.05, 4, 7, 4).unwrap());
        let mut rev = n.clone();
        rev.reverse();
        let r = Roles::draw(&rev, 0.05, 4, 7, 3).unwrap();
        let back = |v: &Vec<u32>| {
            let mut m: Vec<u32> = v.iter().map(|&i| 999 - i).collect();
            m.sort_unstable();
            m
        };
        assert_eq!((back(&r.devices), back(&r.seeds)), (a.devices, a.seeds));
    }

    #[test]
    fn every_vehicle_can_be_equipped() {
        let n = names(519);
        let r = Roles::draw(&n, 1.0, 1, 1, 0).unwrap();
        assert_eq!((r.devices.len(), r.seeds.len()), (518, 1));
        assert!(!r.devices.contains(&r.seeds[0]));
        // Below full, the seeds still come in addition.
        let r = Roles::draw(&n, 0.5, 12, 1, 0).unwrap();
        assert_eq!((r.devices.len(), r.seeds.len()), (260, 12));
    }

    #[test]
    fn impossible_draws_and_bad_lists_are_clear_errors() {
        let n = names(100);
        let e = Roles::draw(&n, 0.001, 4, 1, 0).unwrap_err().0;
        assert!(e.contains("equips no vehicle"), "{e}");
        let e = Roles::draw(&n, 0.9, 100, 1, 0).unwrap_err().0;
        assert!(e.contains("give 1 to 99 seeds"), "{e}");
        let e = Roles::draw(&n, 1.5, 4, 1, 0).unwrap_err().0;
        assert!(e.contains("from 0 to 1"), "{e}");
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = Roles::from_ids(&n, &ids(&["v1", "x"]), &ids(&["v2"]))
            .unwrap_err()
            .0;
        assert!(e.contains("device 'x'"), "{e}");
        let e = Roles::from_ids(&n, &ids(&["v1"]), &ids(&["v1"]))
            .unwrap_err()
            .0;
        assert!(e.contains("both a device and a seed"), "{e}");
        let e = Roles::from_ids(&n, &ids(&["v1", "v1"]), &ids(&["v2"]))
            .unwrap_err()
            .0;
        assert!(e.contains("twice"), "{e}");
        let r = Roles::from_ids(&n, &ids(&["v9", "v1"]), &ids(&["v2"])).unwrap();
        assert_eq!((r.devices, r.seeds), (vec![1, 9], vec![2]));
    }
}
