//! Bindings for emulation (`wayside-emulate`): run a scenario in real
//! time with real hosts attached; the result is a run's dict with the
//! emulation's own figures added under `stats["emulation"]`.

use crate::{output_to_py, ScenarioError};
use pyo3::exceptions::{PyOSError, PyPermissionError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use wayside_emulate::{Error, Host, Options, Report};
use wayside_sim::units::SimTime;

fn emulate_err(e: Error) -> PyErr {
    match e {
        Error::Scenario(m) => ScenarioError::new_err(m),
        e @ Error::NotRoot => PyPermissionError::new_err(e.to_string()),
        e => PyOSError::new_err(e.to_string()),
    }
}

/// Runs `scenario` paced to the wall clock, each `(node, netns)` of
/// `hosts` a real host behind TUN device `device` in that namespace,
/// until its end or SIGINT/SIGTERM; `tolerance_s`: an event later than
/// this makes the run one that fell behind.
#[pyfunction]
#[pyo3(signature = (scenario, hosts, overrides=Vec::new(), seed=None, device=None, tolerance_s=0.001, pcap=None))]
#[allow(clippy::too_many_arguments)]
fn emulate<'py>(
    py: Python<'py>,
    scenario: String,
    hosts: Vec<(String, String)>,
    overrides: Vec<String>,
    seed: Option<u64>,
    device: Option<String>,
    tolerance_s: f64,
    pcap: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = Options {
        hosts: hosts
            .into_iter()
            .map(|(node, netns)| Host { node, netns })
            .collect(),
        device: device.unwrap_or_else(|| wayside_emulate::DEVICE.to_string()),
        tolerance: SimTime::from_secs_f64(tolerance_s),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let ids = [SIGINT, SIGTERM]
        .iter()
        .map(|&s| signal_hook::flag::register(s, Arc::clone(&stop)))
        .collect::<Result<Vec<_>, _>>()?;
    let result = py.detach(|| {
        wayside_emulate::emulate(&scenario, &overrides, seed, pcap.as_deref(), &opts, stop)
    });
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    let (out, report) = result.map_err(emulate_err)?;
    let d = output_to_py(py, out)?;
    let stats = d.get_item("stats")?.expect("a run's dict has stats");
    stats.set_item("emulation", report_to_py(py, &report)?)?;
    Ok(d)
}

fn report_to_py<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let ms = |t: SimTime| t.as_secs_f64() * 1e3;
    let l = &r.lateness;
    let d = PyDict::new(py);
    d.set_item("events", l.events)?;
    d.set_item("lateness_p50_ms", ms(l.p50))?;
    d.set_item("lateness_p99_ms", ms(l.p99))?;
    d.set_item("lateness_max_ms", ms(l.max))?;
    d.set_item("lateness_max_at_s", l.max_at.as_secs_f64())?;
    d.set_item("late_events", l.late)?;
    d.set_item("tolerance_ms", ms(l.tolerance))?;
    d.set_item("behind", l.behind())?;
    let c = &r.counters;
    d.set_item("packets_from_hosts", c.from_hosts)?;
    d.set_item("packets_refused", c.refused)?;
    d.set_item("packets_to_hosts", c.to_hosts)?;
    d.set_item("packets_undelivered", c.undelivered)?;
    d.set_item("max_entry_lag_ms", ms(c.max_entry_lag))?;
    d.set_item("stopped_at_s", r.stopped_at.map(|t| t.as_secs_f64()))?;
    let hosts: Vec<(String, String, String)> = r
        .hosts
        .iter()
        .map(|(n, ns, a)| {
            (
                n.clone(),
                ns.clone(),
                format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
            )
        })
        .collect();
    d.set_item("hosts", hosts)?;
    Ok(d)
}

/// The address the real host in place of each node takes: `{node: ip}`.
#[pyfunction]
#[pyo3(signature = (scenario, overrides=Vec::new()))]
fn emulate_addresses(scenario: &str, overrides: Vec<String>) -> PyResult<Vec<(String, String)>> {
    let (_, cfg) =
        wayside_sim::scenario::load(scenario, &overrides, None, 0).map_err(crate::scenario_err)?;
    Ok(cfg
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let a = wayside_emulate::address(wayside_sim::ids::NodeId(i as u32));
            (
                n.name.clone(),
                format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
            )
        })
        .collect())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(emulate_addresses, m)?)?;
    Ok(())
}
