//! Bindings for wayside-contact: traces (read, write, columns, district
//! cuts) and epidemic runs. Thin: every call that reads a file or runs the
//! engine releases the GIL; columns cross as little-endian byte buffers.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use wayside_contact::district::{self, Area};
use wayside_contact::dtn::message::{Generator, Message};
use wayside_contact::dtn::router::{ProphetParams, Router};
use wayside_contact::dtn::{self, Queue, Settings};
use wayside_contact::epidemic::{self, Params, Roles, Rules};
use wayside_contact::rules::RulesError;
use wayside_contact::trace::{self, Trace, TraceBuilder};
use wayside_contact::{fcd, one, parquet_trace};

// Named and placed as Python sees them, so that pickle finds the class.
create_exception!(
    wayside._native,
    TraceError,
    PyValueError,
    "A trace that cannot be read or used; the message names the place and what is allowed."
);

fn trace_err(e: trace::TraceError) -> PyErr {
    TraceError::new_err(e.0)
}

fn builder(window: Option<(f64, f64)>) -> TraceBuilder {
    window.map_or_else(TraceBuilder::new, |(a, b)| TraceBuilder::window(a, b))
}

fn le<T: Copy, const N: usize>(v: impl Iterator<Item = T>, to: fn(T) -> [u8; N]) -> Vec<u8> {
    v.flat_map(to).collect()
}

fn from_le<T, const N: usize>(name: &str, b: &[u8], from: fn([u8; N]) -> T) -> PyResult<Vec<T>> {
    if !b.len().is_multiple_of(N) {
        return Err(PyValueError::new_err(format!(
            "{name}: {} bytes is not a whole number of {N}-byte values",
            b.len()
        )));
    }
    Ok(b.chunks_exact(N)
        .map(|c| from(c.try_into().expect("chunk of N")))
        .collect())
}

/// A vehicle trace held in Rust (compact columns).
#[pyclass(frozen, name = "Trace", module = "wayside._native")]
pub struct PyTrace(Arc<Trace>);

#[pymethods]
impl PyTrace {
    #[getter]
    fn vehicles(&self) -> usize {
        self.0.vehicles()
    }
    #[getter]
    fn steps(&self) -> usize {
        self.0.steps()
    }
    #[getter]
    fn samples(&self) -> usize {
        self.0.samples()
    }
    fn names(&self) -> Vec<String> {
        self.0.names().to_vec()
    }

    /// Summary figures (vehicles, steps, samples, start, end, peak_present,
    /// mean_moving_speed in m/s, mean_presence in s, heap_bytes, bounds).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.0.stats();
        let d = PyDict::new(py);
        d.set_item("vehicles", s.vehicles)?;
        d.set_item("steps", s.steps)?;
        d.set_item("samples", s.samples)?;
        d.set_item("start", s.start)?;
        d.set_item("end", s.end)?;
        d.set_item("peak_present", s.peak_present)?;
        d.set_item("mean_moving_speed", s.mean_moving_speed)?;
        d.set_item("mean_presence", s.mean_presence)?;
        d.set_item("heap_bytes", self.0.heap_bytes())?;
        if let Some(b) = self.0.bounds() {
            d.set_item("bounds", (b.min_x, b.min_y, b.max_x, b.max_y))?;
        }
        Ok(d)
    }

    /// Sample columns as little-endian buffers: (time f64, vehicle u32, x f32, y f32).
    fn columns<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
    ) {
        let t = &self.0;
        let time = le(
            t.iter()
                .flat_map(|s| std::iter::repeat_n(s.time, s.vehicle.len())),
            f64::to_le_bytes,
        );
        let veh = le(
            t.iter().flat_map(|s| s.vehicle.iter().copied()),
            u32::to_le_bytes,
        );
        let x = le(t.iter().flat_map(|s| s.x.iter().copied()), f32::to_le_bytes);
        let y = le(t.iter().flat_map(|s| s.y.iter().copied()), f32::to_le_bytes);
        (
            PyBytes::new(py, &time),
            PyBytes::new(py, &veh),
            PyBytes::new(py, &x),
            PyBytes::new(py, &y),
        )
    }

    /// Writes the trace in The ONE's external movement format.
    #[pyo3(signature = (path, park=true))]
    fn write_one(&self, py: Python<'_>, path: PathBuf, park: bool) -> PyResult<()> {
        let t = self.0.clone();
        py.detach(move || one::write_file(&t, &path, park))
            .map_err(trace_err)
    }

    /// A district cut: one dict per stay of a vehicle in the area and window
    /// (name, appear, disappear, depart, start, waypoints [(x, y, speed, pause)]).
    fn district<'py>(
        &self,
        py: Python<'py>,
        area: (f64, f64, f64, f64),
        start: f64,
        end: f64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let t = self.0.clone();
        let area = Area {
            min_x: area.0,
            min_y: area.1,
            max_x: area.2,
            max_y: area.3,
        };
        let paths = py.detach(move || district::cut(&t, area, start, end));
        paths
            .into_iter()
            .map(|p| {
                let d = PyDict::new(py);
                d.set_item("name", &p.name)?;
                d.set_item("appear", p.appear)?;
                d.set_item("disappear", p.disappear)?;
                d.set_item("depart", p.depart)?;
                d.set_item("start", (p.start.x, p.start.y))?;
                let wps: Vec<(f64, f64, f64, f64)> = p
                    .waypoints
                    .iter()
                    .map(|w| (w.position.x, w.position.y, w.speed.0, w.pause.as_secs_f64()))
                    .collect();
                d.set_item("waypoints", wps)?;
                Ok(d)
            })
            .collect()
    }
}

/// Reads SUMO FCD XML (plain or gzip), keeping `window` = (from, to) if given
/// (times shifted so that `from` is 0).
#[pyfunction]
#[pyo3(signature = (path, window=None))]
fn read_fcd(py: Python<'_>, path: PathBuf, window: Option<(f64, f64)>) -> PyResult<PyTrace> {
    let t = py
        .detach(move || fcd::read_file(&path, builder(window)))
        .map_err(trace_err)?;
    Ok(PyTrace(Arc::new(t)))
}

/// Reads a Parquet trace (ours, or SUMO's tabular FCD) row group by row
/// group, keeping `window` = (from, to) if given.
#[pyfunction]
#[pyo3(signature = (path, window=None))]
fn read_parquet(py: Python<'_>, path: PathBuf, window: Option<(f64, f64)>) -> PyResult<PyTrace> {
    let t = py
        .detach(move || parquet_trace::read(&path, builder(window)))
        .map_err(trace_err)?;
    Ok(PyTrace(Arc::new(t)))
}

/// The time, vehicle, x and y columns among a table's column `names`
/// (SUMO's or ours); `label` names the table in the error.
#[pyfunction]
fn trace_columns(label: &str, names: Vec<String>) -> PyResult<(&str, &str, &str, &str)> {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let [t, v, x, y] = parquet_trace::columns(label, &names).map_err(trace_err)?;
    Ok((t, v, x, y))
}

/// Reads The ONE's external movement format (plain or gzip); with
/// `as_the_one`, as The ONE sees it (hosts are the ids of the first time
/// instance, in file order, and stay where last placed).
#[pyfunction]
#[pyo3(signature = (path, window=None, as_the_one=false))]
fn read_one(
    py: Python<'_>,
    path: PathBuf,
    window: Option<(f64, f64)>,
    as_the_one: bool,
) -> PyResult<PyTrace> {
    if as_the_one && window.is_some() {
        return Err(PyValueError::new_err(
            "a time window cannot be cut from a trace read as The ONE sees it",
        ));
    }
    let t = py
        .detach(move || match as_the_one {
            true => one::read_file_as_the_one(&path),
            false => one::read_file(&path, builder(window)),
        })
        .map_err(trace_err)?;
    Ok(PyTrace(Arc::new(t)))
}

/// A trace built from column batches in time order, so that no more than
/// one batch is held outside the trace's own compact columns.
#[pyclass(name = "TraceStream", module = "wayside._native")]
pub struct PyTraceStream {
    builder: Option<TraceBuilder>,
    /// Builder index of each code of the current dictionary.
    index: Vec<u32>,
    label: String,
    rows: usize,
}

#[pymethods]
impl PyTraceStream {
    /// `samples`, when known, reserves the columns at once.
    #[new]
    #[pyo3(signature = (label, window=None, samples=0))]
    fn new(label: String, window: Option<(f64, f64)>, samples: usize) -> Self {
        let mut b = builder(window);
        b.reserve(samples);
        PyTraceStream {
            builder: Some(b),
            index: Vec::new(),
            label,
            rows: 0,
        }
    }

    /// Adds a batch: time (f64), vehicle codes (u32) into `names` (given
    /// when the dictionary changes, else the previous batch's), x and y
    /// (f64), as little-endian buffers.
    #[pyo3(signature = (time, vehicle, x, y, names=None))]
    fn push(
        &mut self,
        py: Python<'_>,
        time: &[u8],
        vehicle: &[u8],
        x: &[u8],
        y: &[u8],
        names: Option<Vec<String>>,
    ) -> PyResult<()> {
        let time = from_le("time", time, f64::from_le_bytes)?;
        let vehicle = from_le("vehicle", vehicle, u32::from_le_bytes)?;
        let x = from_le("x", x, f64::from_le_bytes)?;
        let y = from_le("y", y, f64::from_le_bytes)?;
        if [vehicle.len(), x.len(), y.len()]
            .iter()
            .any(|&n| n != time.len())
        {
            return Err(PyValueError::new_err(
                "time, vehicle, x and y must have the same length",
            ));
        }
        let Some(b) = self.builder.as_mut() else {
            return Err(PyValueError::new_err("the stream is finished"));
        };
        let (label, first, index) = (&self.label, self.rows, &mut self.index);
        py.detach(|| {
            if let Some(names) = names {
                *index = names.iter().map(|n| b.intern(n)).collect();
            }
            for i in 0..time.len() {
                let row = first + i;
                let v = *index.get(vehicle[i] as usize).ok_or_else(|| {
                    trace::TraceError(format!(
                        "{label}, row {row}: vehicle code {} has no name",
                        vehicle[i]
                    ))
                })?;
                b.push_index(time[i], v, x[i], y[i], &|| format!("{label}, row {row}"))?;
            }
            Ok(())
        })
        .map_err(trace_err)?;
        self.rows += time.len();
        Ok(())
    }

    /// The trace; the stream cannot be used afterwards.
    fn finish(&mut self) -> PyResult<PyTrace> {
        let b = self
            .builder
            .take()
            .ok_or_else(|| PyValueError::new_err("the stream is finished"))?;
        Ok(PyTrace(Arc::new(b.finish())))
    }
}

/// One epidemic run (Zahn et al. 2009 §5.6) under `rules` (`paper`,
/// `the-one`, or `SENDERS,PROGRESS,COMPLETION`), the roles drawn or given
/// as (device ids, seed ids); returns a dict with vehicles, devices,
/// device_ids, seeds (ids), rules, complete, fraction, broken, and the
/// timeline as buffers (times f64, complete u32).
#[pyfunction]
#[pyo3(signature = (trace, penetration, seeds, seed, run, range_m=epidemic::RANGE_M, transfer_s=epidemic::TRANSFER_S, rules="paper", roles=None))]
#[allow(clippy::too_many_arguments)]
fn epidemic_run<'py>(
    py: Python<'py>,
    trace: &PyTrace,
    penetration: f64,
    seeds: usize,
    seed: u64,
    run: u64,
    range_m: f64,
    transfer_s: f64,
    rules: &str,
    roles: Option<(Vec<String>, Vec<String>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let t = trace.0.clone();
    let rules: Rules = rules
        .parse()
        .map_err(|e: RulesError| PyValueError::new_err(e.0))?;
    let p = Params {
        penetration,
        seeds,
        range_m,
        transfer_s,
        rules,
        seed,
        run,
    };
    let out = py
        .detach(move || match roles {
            None => epidemic::run(&t, &p),
            Some((d, s)) => {
                let r = Roles::from_ids(t.names(), &d, &s)?;
                epidemic::run_roles(&t, r, &p)
            }
        })
        .map_err(|e| PyValueError::new_err(e.0))?;
    let ids = |v: &[u32]| -> Vec<&str> {
        v.iter()
            .map(|&s| trace.0.names()[s as usize].as_str())
            .collect()
    };
    let d = PyDict::new(py);
    d.set_item("vehicles", out.vehicles)?;
    d.set_item("devices", out.devices())?;
    d.set_item("device_ids", ids(&out.roles.devices))?;
    d.set_item("seeds", ids(&out.roles.seeds))?;
    d.set_item("rules", rules.to_string())?;
    d.set_item("complete", out.complete)?;
    d.set_item("fraction", out.fraction())?;
    d.set_item("broken", out.broken)?;
    d.set_item("receiving_steps", out.receiving_steps)?;
    d.set_item(
        "times",
        PyBytes::new(py, &le(out.times.iter().copied(), f64::to_le_bytes)),
    )?;
    d.set_item(
        "complete_over_time",
        PyBytes::new(
            py,
            &le(out.complete_over_time.iter().copied(), u32::to_le_bytes),
        ),
    )?;
    Ok(d)
}

/// A `MessageEventGenerator`: (interval lo, hi) s, (size lo, hi) B,
/// (hosts lo, hi), optional (tohosts lo, hi), optional (time from, to) s,
/// prefix.
type GeneratorArgs = (
    (u32, u32),
    (u64, u64),
    (u32, u32),
    Option<(u32, u32)>,
    Option<(f64, f64)>,
    String,
);

/// One DTN run (The ONE's routing and message model, wayside-contact's
/// `dtn` module): `router` is epidemic, spray-and-wait, prophet,
/// direct-delivery or first-contact; `prophet` = (P_init, beta, gamma,
/// seconds in a time unit); `messages` adds given messages (from, to,
/// size, created, further hosts creating it) to the generated ones. Returns a dict of the run's counts and summary,
/// and per-message and per-host columns as lists.
#[pyfunction]
#[pyo3(signature = (trace, router, generators, ttl_min=None, messages=vec![], copies=6, prophet=(0.75, 0.25, 0.98, 30.0), range_m=epidemic::RANGE_M, speed=250_000.0, buffer=5_000_000, queue="random", seed=1, run=0))]
#[allow(clippy::too_many_arguments)]
fn dtn_run<'py>(
    py: Python<'py>,
    trace: &PyTrace,
    router: &str,
    generators: Vec<GeneratorArgs>,
    ttl_min: Option<u32>,
    messages: Vec<(u32, u32, u64, f64, Vec<u32>)>,
    copies: u32,
    prophet: (f64, f64, f64, f64),
    range_m: f64,
    speed: f64,
    buffer: u64,
    queue: &str,
    seed: u64,
    run: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let err = |m: String| PyValueError::new_err(m);
    let router = match router {
        "epidemic" => Router::Epidemic,
        "spray-and-wait" => Router::SprayAndWait { copies },
        "prophet" => Router::Prophet(ProphetParams {
            p_init: prophet.0,
            beta: prophet.1,
            gamma: prophet.2,
            time_unit_s: prophet.3,
        }),
        "direct-delivery" => Router::DirectDelivery,
        "first-contact" => Router::FirstContact,
        other => {
            return Err(err(format!(
                "router '{other}': allowed: epidemic, spray-and-wait, prophet, direct-delivery, first-contact"
            )))
        }
    };
    let queue = match queue {
        "random" => Queue::Random,
        "fifo" => Queue::Fifo,
        other => return Err(err(format!("queue '{other}': allowed: random, fifo"))),
    };
    let t = trace.0.clone();
    let end = t.times().last().copied().unwrap_or(0.0) + 1.0;
    let mut messages: Vec<Message> = messages
        .into_iter()
        .map(|(from, to, size, created, also_at)| Message {
            from,
            to,
            size,
            created,
            ttl_min,
            also_at,
        })
        .collect();
    for (interval, size, hosts, to_hosts, time, prefix) in generators {
        let g = Generator {
            interval,
            size,
            hosts,
            to_hosts,
            time,
            prefix,
        };
        g.check(t.vehicles()).map_err(|e| err(e.0))?;
        messages.extend(g.messages(end, ttl_min, seed, run));
    }
    messages.sort_by(|a, b| a.created.total_cmp(&b.created));
    let created: Vec<(u32, u32, u64, f64, Vec<u32>)> = messages
        .iter()
        .map(|m| (m.from, m.to, m.size, m.created, m.also_at.clone()))
        .collect();
    let settings = Settings {
        router,
        range_m,
        speed,
        buffer,
        queue,
        seed,
        run,
    };
    let st = py
        .detach(move || dtn::run(&t, messages, settings))
        .map_err(|e| err(e.0))?;
    let m = st.summary();
    let d = PyDict::new(py);
    for (k, v) in [
        ("created", st.created),
        ("started", st.started),
        ("relayed", st.relayed),
        ("aborted", st.aborted),
        ("dropped", st.dropped),
        ("removed", st.removed),
        ("delivered", st.delivered),
    ] {
        d.set_item(k, v)?;
    }
    for (k, v) in [
        ("delivery_prob", m.delivery_prob),
        ("overhead_ratio", m.overhead_ratio),
        ("latency_avg", m.latency_avg),
        ("latency_med", m.latency_med),
        ("hopcount_avg", m.hopcount_avg),
        ("hopcount_med", m.hopcount_med),
        ("buffertime_avg", m.buffertime_avg),
        ("buffertime_med", m.buffertime_med),
    ] {
        d.set_item(k, v)?;
    }
    let msgs = PyDict::new(py);
    msgs.set_item("from", created.iter().map(|c| c.0).collect::<Vec<_>>())?;
    msgs.set_item("to", created.iter().map(|c| c.1).collect::<Vec<_>>())?;
    msgs.set_item("size", created.iter().map(|c| c.2).collect::<Vec<_>>())?;
    msgs.set_item("created", created.iter().map(|c| c.3).collect::<Vec<_>>())?;
    msgs.set_item(
        "also_at",
        created.iter().map(|c| c.4.clone()).collect::<Vec<_>>(),
    )?;
    let fates = &st.messages;
    msgs.set_item(
        "delivered_at",
        fates.iter().map(|f| f.delivered_at).collect::<Vec<_>>(),
    )?;
    msgs.set_item("hops", fates.iter().map(|f| f.hops).collect::<Vec<_>>())?;
    msgs.set_item(
        "relayed",
        fates.iter().map(|f| f.relayed).collect::<Vec<_>>(),
    )?;
    d.set_item("messages", msgs)?;
    let hosts = PyDict::new(py);
    hosts.set_item("host", trace.0.names().to_vec())?;
    let h = &st.hosts;
    hosts.set_item("created", h.iter().map(|x| x.created).collect::<Vec<_>>())?;
    hosts.set_item("sent", h.iter().map(|x| x.sent).collect::<Vec<_>>())?;
    hosts.set_item("received", h.iter().map(|x| x.received).collect::<Vec<_>>())?;
    hosts.set_item(
        "delivered_to",
        h.iter().map(|x| x.delivered_to).collect::<Vec<_>>(),
    )?;
    hosts.set_item("aborted", h.iter().map(|x| x.aborted).collect::<Vec<_>>())?;
    hosts.set_item("dropped", h.iter().map(|x| x.dropped).collect::<Vec<_>>())?;
    hosts.set_item(
        "first_received",
        h.iter().map(|x| x.first_received).collect::<Vec<_>>(),
    )?;
    d.set_item("hosts", hosts)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add_class::<PyTrace>()?;
    m.add_class::<PyTraceStream>()?;
    m.add_function(wrap_pyfunction!(read_fcd, m)?)?;
    m.add_function(wrap_pyfunction!(read_one, m)?)?;
    m.add_function(wrap_pyfunction!(read_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(trace_columns, m)?)?;
    m.add_function(wrap_pyfunction!(epidemic_run, m)?)?;
    m.add_function(wrap_pyfunction!(dtn_run, m)?)?;
    Ok(())
}
