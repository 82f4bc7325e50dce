//! Python bindings for wayside-sim. Thin: parse arguments, release the GIL
//! for the run, hand the trace tables over as Arrow streams (`arrow`).

mod arrow;
mod contact;
mod emulate;
mod stream;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wayside_sim::mac::queue;
use wayside_sim::phy::error::{snr_threshold, ErrorModelKind};
use wayside_sim::phy::mode::Standard;
use wayside_sim::scenario;
use wayside_sim::{run_scenario_pcap, RunOutput};

// Named and placed as Python sees them, so that pickle finds the class
// (errors raised in worker processes cross back to the parent).
create_exception!(
    wayside._native,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be used; the message names the key, the value and what is allowed."
);

pub(crate) fn scenario_err(e: scenario::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.0)
}

pub(crate) fn output_to_py<'py>(py: Python<'py>, out: RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("resolved", &out.resolved)?;
    d.set_item("nodes", &out.node_names)?;
    let stats = PyDict::new(py);
    stats.set_item("events", out.stats.events)?;
    stats.set_item("transmissions", out.stats.transmissions)?;
    stats.set_item("simulated_s", out.stats.simulated.as_secs_f64())?;
    // Drops of undetectable preambles, counted instead of written as rows.
    let u = &out.trace.undetectable;
    stats.set_item("undetectable_arrivals", u.arrivals)?;
    stats.set_item("undetectable_drops", u.drops.clone())?;
    stats.set_item("queues", queues_to_py(py, &out)?)?;
    d.set_item("stats", stats)?;
    let tables = PyDict::new(py);
    let nodes = arrow::node_dictionary(&out.node_names);
    for (tname, cols) in out.trace.into_tables() {
        tables.set_item(tname, arrow::table(cols, &nodes)?)?;
    }
    d.set_item("tables", tables)?;
    let pcaps: Vec<String> = out.pcaps.iter().map(|p| p.display().to_string()).collect();
    d.set_item("pcaps", pcaps)?;
    Ok(d)
}

/// Per node whose data queue saw traffic: its kind, counts, drops by
/// cause, sojourn times (mean, max, histogram over `sojourn_edges_ms`)
/// and airtime to and from each peer.
fn queues_to_py<'py>(py: Python<'py>, out: &RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let name = |i: u32| out.node_names.get(i as usize).cloned().unwrap_or_default();
    for (i, q) in out.stats.queues.iter().enumerate() {
        if q.enqueued == 0 && q.airtime.is_empty() {
            continue;
        }
        let n = PyDict::new(py);
        n.set_item("kind", q.kind.name())?;
        n.set_item("enqueued", q.enqueued)?;
        n.set_item("dequeued", q.dequeued)?;
        n.set_item("drops_overflow", q.drops_overflow)?;
        n.set_item("drops_codel", q.drops_codel)?;
        let mean = q.sojourn_total.as_secs_f64() / q.dequeued.max(1) as f64;
        n.set_item("sojourn_mean_s", mean)?;
        n.set_item("sojourn_max_s", q.sojourn_max.as_secs_f64())?;
        n.set_item("sojourn_edges_ms", queue::SOJOURN_EDGES_MS.to_vec())?;
        n.set_item("sojourn_hist", q.sojourn_hist.to_vec())?;
        let air = PyDict::new(py);
        for (peer, a) in &q.airtime {
            let p = PyDict::new(py);
            p.set_item("tx_s", a.tx.as_secs_f64())?;
            p.set_item("rx_s", a.rx.as_secs_f64())?;
            air.set_item(name(peer.0), p)?;
        }
        n.set_item("airtime", air)?;
        d.set_item(name(i as u32), n)?;
    }
    Ok(d)
}

/// Runs a scenario (TOML text) once; returns a dict with the resolved
/// scenario, node names, counters, the trace tables and the pcap files
/// written into `pcap` (a directory), if given.
#[pyfunction]
#[pyo3(signature = (scenario, overrides=Vec::new(), seed=None, run=0, pcap=None))]
fn run<'py>(
    py: Python<'py>,
    scenario: String,
    overrides: Vec<String>,
    seed: Option<u64>,
    run: u64,
    pcap: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = py
        .detach(move || run_scenario_pcap(&scenario, &overrides, seed, run, pcap.as_deref()))
        .map_err(scenario_err)?;
    output_to_py(py, out)
}

/// Starts a run of a scenario (TOML text) whose trace comes out in batches
/// of `rows` rows while it goes on: iterate the result for
/// `(table, batch)`, then call its `finish()` for what `run` returns.
#[pyfunction]
#[pyo3(signature = (scenario, overrides=Vec::new(), seed=None, run=0, pcap=None, rows=262_144))]
fn run_streaming(
    scenario: String,
    overrides: Vec<String>,
    seed: Option<u64>,
    run: u64,
    pcap: Option<std::path::PathBuf>,
    rows: usize,
) -> PyResult<stream::StreamedRun> {
    stream::start(scenario, overrides, (seed, run), pcap, rows)
}

/// Validates a scenario and returns it resolved (TOML), overrides applied.
#[pyfunction]
#[pyo3(signature = (scenario, overrides=Vec::new()))]
fn resolve(scenario: &str, overrides: Vec<String>) -> PyResult<String> {
    scenario::load(scenario, &overrides, None, 0)
        .map(|(r, _)| r)
        .map_err(scenario_err)
}

/// The scenario as it would run, overrides applied and every default
/// written out (TOML that reads back to the same scenario).
#[pyfunction]
#[pyo3(signature = (scenario, overrides=Vec::new()))]
fn resolve_defaults(scenario: &str, overrides: Vec<String>) -> PyResult<String> {
    scenario::resolve_defaults(scenario, &overrides).map_err(scenario_err)
}

/// Names of the built-in scenarios.
#[pyfunction]
fn builtin_names() -> Vec<&'static str> {
    scenario::BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// Text of a built-in scenario, or None.
#[pyfunction]
fn builtin_text(name: &str) -> Option<&'static str> {
    scenario::builtin(name)
}

/// Per rate of `standard`: (Mbps, SINR in dB at which a `payload`-byte frame
/// succeeds with probability 0.5, the standard's minimum sensitivity in dBm).
#[pyfunction]
#[pyo3(signature = (standard, psdu_bytes, implementation_loss_db=0.0))]
fn rate_thresholds(
    standard: &str,
    psdu_bytes: u32,
    implementation_loss_db: f64,
) -> PyResult<Vec<(f64, f64, f64)>> {
    let std: Standard = standard.parse().map_err(PyValueError::new_err)?;
    let model = ErrorModelKind::ClosedForm(wayside_sim::phy::error::ClosedForm {
        implementation_loss: wayside_sim::units::Db(implementation_loss_db),
        ..Default::default()
    });
    Ok(std
        .modes()
        .iter()
        .map(|m| {
            (
                m.rate.mbps(),
                snr_threshold(&model, m, psdu_bytes, 0.5).0,
                m.min_sensitivity().0,
            )
        })
        .collect())
}

/// Runs the Broadside node's command line (`keygen`, `publish`, `serve`,
/// `status`, `relay`) with `args` (without the program name); returns its
/// exit code. Releases the GIL: `serve` runs until stopped.
#[pyfunction]
fn broadside_cli(py: Python<'_>, args: Vec<String>) -> i32 {
    let mut argv = vec!["wayside broadside".to_string()];
    argv.extend(args);
    py.detach(move || broadside_node::run_cli(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_streaming, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_names, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_text, m)?)?;
    m.add_function(wrap_pyfunction!(rate_thresholds, m)?)?;
    m.add_function(wrap_pyfunction!(broadside_cli, m)?)?;
    m.add_class::<arrow::Table>()?;
    m.add_class::<stream::StreamedRun>()?;
    contact::register(m)?;
    emulate::register(m)?;
    Ok(())
}
