//! A run whose trace comes out while it goes on: the simulator runs on a
//! thread of its own and hands each batch of trace rows over a channel that
//! holds one, so that the rows in memory are bounded by two batches; Python
//! takes them one at a time (to write them as Parquet row groups) and the
//! run's counters at the end.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use arrow_array::ArrayRef;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wayside_sim::scenario::{self, ScenarioError};
use wayside_sim::trace::{Column, TraceSink};
use wayside_sim::{run_scenario_streaming, RunOutput};

use crate::arrow::{self, Table};

type Batch = (&'static str, Vec<(&'static str, Column<'static>)>);

/// Sends each batch over the channel; a receiver gone (Python stopped
/// reading) leaves the run to finish unread.
struct Channel(SyncSender<Batch>);

impl TraceSink for Channel {
    fn write(&mut self, table: &'static str, columns: Vec<(&'static str, Column<'static>)>) {
        let _ = self.0.send((table, columns));
    }
}

/// A run in progress: iterate for `(table name, Table)` batches in the
/// order they are made, then call `finish` for the rest of the output.
#[pyclass(name = "StreamedRun", module = "wayside._native")]
pub struct StreamedRun {
    batches: Mutex<Receiver<Batch>>,
    run: Mutex<Option<JoinHandle<Result<RunOutput, ScenarioError>>>>,
    nodes: ArrayRef,
}

#[pymethods]
impl StreamedRun {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(&'static str, Table)>> {
        let batches = &self.batches;
        match py.detach(|| batches.lock().expect("batch channel").recv()) {
            Ok((name, columns)) => Ok(Some((name, arrow::table(columns, &self.nodes)?))),
            Err(_) => Ok(None), // the run is over
        }
    }

    /// Waits for the run's end; returns what `run` returns, with empty
    /// tables (their rows came out as batches).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let handle = self.run.lock().expect("run handle").take();
        let Some(handle) = handle else {
            return Err(PyRuntimeError::new_err("the run was already finished"));
        };
        let out = py
            .detach(|| handle.join())
            .map_err(|_| PyRuntimeError::new_err("the run's thread panicked"))?
            .map_err(crate::scenario_err)?;
        crate::output_to_py(py, out)
    }
}

/// Starts running a scenario (TOML text) whose trace comes out in batches
/// of `rows` rows ([`StreamedRun`]).
pub fn start(
    scenario_text: String,
    overrides: Vec<String>,
    (seed, run): (Option<u64>, u64),
    pcap: Option<std::path::PathBuf>,
    rows: usize,
) -> PyResult<StreamedRun> {
    let (_, cfg) =
        scenario::load(&scenario_text, &overrides, seed, run).map_err(crate::scenario_err)?;
    let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    let (tx, rx) = sync_channel(1);
    let handle = std::thread::spawn(move || {
        let sink = Box::new(Channel(tx));
        let pcap = pcap.as_deref();
        run_scenario_streaming(&scenario_text, &overrides, (seed, run), pcap, (sink, rows))
    });
    Ok(StreamedRun {
        batches: Mutex::new(rx),
        run: Mutex::new(Some(handle)),
        nodes: arrow::node_dictionary(&names),
    })
}
