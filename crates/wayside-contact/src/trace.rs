//! A vehicle trace in memory: time steps of (vehicle, x, y) samples, held
//! as flat columns (about 12 bytes a sample), and the builder every reader
//! feeds one sample at a time.
//!
//! A vehicle is present at the steps where the trace has a sample of it,
//! and absent elsewhere: vehicles appear and disappear as the trace says.
//! Vehicle indices are given in order of first appearance, so they do not
//! depend on any hash order.

use std::collections::HashMap;

/// What went wrong reading or building a trace; the message names the file
/// position or value and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TraceError(pub String);

/// Speed below which a vehicle counts as halting: SUMO's threshold for
/// "halting" (0.1 m/s, the `--waiting-time` and detector definition).
pub const HALTING_SPEED: f64 = 0.1;

/// A trace: `steps()` time steps, each a slice of samples.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    names: Vec<String>,
    times: Vec<f64>,
    /// Step `i` holds samples `offsets[i]..offsets[i + 1]`.
    offsets: Vec<usize>,
    vehicle: Vec<u32>,
    x: Vec<f32>,
    y: Vec<f32>,
}

/// One step of a trace.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    pub time: f64,
    pub vehicle: &'a [u32],
    pub x: &'a [f32],
    pub y: &'a [f32],
}

/// Bounding box of every sample, metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min_x: f64,
    pub max_x: f64,
    pub min_y: f64,
    pub max_y: f64,
}

/// Summary figures of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceStats {
    pub vehicles: usize,
    pub steps: usize,
    pub samples: usize,
    pub start: f64,
    pub end: f64,
    /// Most vehicles present at one step.
    pub peak_present: usize,
    /// Mean speed over the sample intervals in which a vehicle moved at
    /// least [`HALTING_SPEED`], m/s (from consecutive positions).
    pub mean_moving_speed: f64,
    /// Mean time a vehicle is in the trace, s (last minus first sample).
    pub mean_presence: f64,
}

impl Trace {
    pub fn names(&self) -> &[String] {
        &self.names
    }
    pub fn vehicles(&self) -> usize {
        self.names.len()
    }
    pub fn steps(&self) -> usize {
        self.times.len()
    }
    pub fn samples(&self) -> usize {
        self.vehicle.len()
    }
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    pub fn step(&self, i: usize) -> Step<'_> {
        let r = self.offsets[i]..self.offsets[i + 1];
        Step {
            time: self.times[i],
            vehicle: &self.vehicle[r.clone()],
            x: &self.x[r.clone()],
            y: &self.y[r],
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Step<'_>> {
        (0..self.steps()).map(|i| self.step(i))
    }

    /// Bounding box of all samples; `None` for an empty trace.
    pub fn bounds(&self) -> Option<Bounds> {
        if self.x.is_empty() {
            return None;
        }
        let mut b = Bounds {
            min_x: f64::INFINITY,
            max_x: f64::NEG_INFINITY,
            min_y: f64::INFINITY,
            max_y: f64::NEG_INFINITY,
        };
        for (&x, &y) in self.x.iter().zip(&self.y) {
            b.min_x = b.min_x.min(x as f64);
            b.max_x = b.max_x.max(x as f64);
            b.min_y = b.min_y.min(y as f64);
            b.max_y = b.max_y.max(y as f64);
        }
        Some(b)
    }

    /// Approximate heap size, bytes.
    pub fn heap_bytes(&self) -> usize {
        self.names
            .iter()
            .map(|n| n.capacity() + std::mem::size_of::<String>())
            .sum::<usize>()
            + self.times.capacity() * 8
            + self.offsets.capacity() * std::mem::size_of::<usize>()
            + self.vehicle.capacity() * 4
            + self.x.capacity() * 4
            + self.y.capacity() * 4
    }

    pub fn stats(&self) -> TraceStats {
        let n = self.vehicles();
        let mut last: Vec<Option<(f64, f32, f32)>> = vec![None; n];
        let mut first_seen = vec![f64::NAN; n];
        let mut last_seen = vec![f64::NAN; n];
        let (mut dist, mut time) = (0.0, 0.0);
        let mut peak = 0;
        for s in self.iter() {
            peak = peak.max(s.vehicle.len());
            for k in 0..s.vehicle.len() {
                let v = s.vehicle[k] as usize;
                if let Some((t0, x0, y0)) = last[v] {
                    let dt = s.time - t0;
                    let d = ((s.x[k] - x0) as f64).hypot((s.y[k] - y0) as f64);
                    if dt > 0.0 && d / dt >= HALTING_SPEED {
                        dist += d;
                        time += dt;
                    }
                } else {
                    first_seen[v] = s.time;
                }
                last[v] = Some((s.time, s.x[k], s.y[k]));
                last_seen[v] = s.time;
            }
        }
        let presence: f64 = (0..n).map(|v| last_seen[v] - first_seen[v]).sum();
        TraceStats {
            vehicles: n,
            steps: self.steps(),
            samples: self.samples(),
            start: self.times.first().copied().unwrap_or(0.0),
            end: self.times.last().copied().unwrap_or(0.0),
            peak_present: peak,
            mean_moving_speed: if time > 0.0 { dist / time } else { 0.0 },
            mean_presence: if n > 0 { presence / n as f64 } else { 0.0 },
        }
    }
}

/// Builds a [`Trace`] from samples in time order.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    trace: Trace,
    index: HashMap<String, u32>,
    /// The step at which each vehicle was last sampled (to catch duplicates).
    last_step: Vec<usize>,
    /// Samples outside `[from, to)` are dropped and times shifted by `-from`.
    window: Option<(f64, f64)>,
}

impl TraceBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps only samples with `from <= time < to` and shifts time so that
    /// `from` becomes 0 (e.g. to drop a simulation's warm-up).
    pub fn window(from: f64, to: f64) -> Self {
        TraceBuilder {
            window: Some((from, to)),
            ..Self::default()
        }
    }

    /// Makes room for `samples` more samples at once (a reader that knows
    /// the count avoids the doubling growth of the columns).
    pub fn reserve(&mut self, samples: usize) {
        self.trace.vehicle.reserve_exact(samples);
        self.trace.x.reserve_exact(samples);
        self.trace.y.reserve_exact(samples);
    }

    /// The index of vehicle `id`, interning it on first sight.
    pub fn intern(&mut self, id: &str) -> u32 {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.trace.names.len() as u32;
        self.index.insert(id.to_string(), i);
        self.trace.names.push(id.to_string());
        self.last_step.push(usize::MAX);
        i
    }

    /// Adds one sample; `where_` names the position in the input for errors.
    pub fn push(
        &mut self,
        time: f64,
        id: &str,
        x: f64,
        y: f64,
        where_: &dyn Fn() -> String,
    ) -> Result<(), TraceError> {
        if let Some((from, to)) = self.window {
            if time < from || time >= to {
                return Ok(());
            }
        }
        let v = self.intern(id);
        self.push_index(time, v, x, y, where_)
    }

    /// Adds one sample of an already interned vehicle.
    pub fn push_index(
        &mut self,
        time: f64,
        v: u32,
        x: f64,
        y: f64,
        where_: &dyn Fn() -> String,
    ) -> Result<(), TraceError> {
        let time = match self.window {
            Some((from, to)) if time < from || time >= to => return Ok(()),
            Some((from, _)) => time - from,
            None => time,
        };
        if !time.is_finite() || !x.is_finite() || !y.is_finite() {
            return Err(TraceError(format!(
                "{}: time {time}, x {x}, y {y}: every value must be a finite number",
                where_()
            )));
        }
        let t = &mut self.trace;
        match t.times.last() {
            Some(&last) if time < last => {
                return Err(TraceError(format!(
                    "{}: time {time} s comes after {last} s: samples must be in time order",
                    where_()
                )));
            }
            Some(&last) if time == last => {}
            _ => {
                t.times.push(time);
                t.offsets.push(t.vehicle.len());
            }
        }
        let step = t.times.len() - 1;
        let slot = &mut self.last_step[v as usize];
        if *slot == step {
            return Err(TraceError(format!(
                "{}: vehicle '{}' appears twice at {time} s",
                where_(),
                t.names[v as usize]
            )));
        }
        *slot = step;
        t.vehicle.push(v);
        t.x.push(x as f32);
        t.y.push(y as f32);
        Ok(())
    }

    /// Declares a step with no samples (a trace may have empty steps).
    pub fn empty_step(&mut self, time: f64) {
        let time = match self.window {
            Some((from, to)) if time < from || time >= to => return,
            Some((from, _)) => time - from,
            None => time,
        };
        let t = &mut self.trace;
        if t.times.last().is_none_or(|&last| time > last) {
            t.times.push(time);
            t.offsets.push(t.vehicle.len());
        }
    }

    /// The trace, with vehicles that had no sample inside the window dropped.
    pub fn finish(mut self) -> Trace {
        self.trace.offsets.push(self.trace.vehicle.len());
        if self.last_step.iter().all(|&s| s != usize::MAX) {
            return self.trace;
        }
        // Some interned vehicles had no sample: re-index densely in order
        // of first sample.
        let mut map = vec![u32::MAX; self.trace.names.len()];
        let mut names = Vec::new();
        for v in &mut self.trace.vehicle {
            let m = &mut map[*v as usize];
            if *m == u32::MAX {
                *m = names.len() as u32;
                names.push(std::mem::take(&mut self.trace.names[*v as usize]));
            }
            *v = *m;
        }
        self.trace.names = names;
        self.trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> String {
        "test".into()
    }

    #[test]
    fn steps_group_samples_and_vehicles_are_indexed_by_first_appearance() {
        let mut b = TraceBuilder::new();
        b.push(0.0, "b", 0.0, 0.0, &at).unwrap();
        b.push(0.0, "a", 5.0, 0.0, &at).unwrap();
        b.push(1.0, "a", 15.0, 0.0, &at).unwrap();
        b.empty_step(2.0);
        let t = b.finish();
        assert_eq!(t.names(), ["b", "a"]);
        assert_eq!(t.steps(), 3);
        assert_eq!(t.step(0).vehicle, [0, 1]);
        assert_eq!(t.step(1).vehicle, [1]);
        assert!(t.step(2).vehicle.is_empty());
        let s = t.stats();
        assert_eq!((s.vehicles, s.samples, s.peak_present), (2, 3, 2));
        assert!((s.mean_moving_speed - 10.0).abs() < 1e-9);
    }

    #[test]
    fn out_of_order_duplicate_and_nan_samples_are_errors() {
        let mut b = TraceBuilder::new();
        b.push(1.0, "a", 0.0, 0.0, &at).unwrap();
        assert!(b
            .push(0.5, "b", 0.0, 0.0, &at)
            .unwrap_err()
            .0
            .contains("time order"));
        assert!(b
            .push(1.0, "a", 1.0, 0.0, &at)
            .unwrap_err()
            .0
            .contains("twice"));
        assert!(b
            .push(2.0, "a", f64::NAN, 0.0, &at)
            .unwrap_err()
            .0
            .contains("finite"));
    }

    #[test]
    fn a_window_drops_and_shifts_time_and_reindexes() {
        let mut b = TraceBuilder::window(10.0, 20.0);
        b.push(5.0, "early", 0.0, 0.0, &at).unwrap();
        b.push(10.0, "a", 0.0, 0.0, &at).unwrap();
        b.push(20.0, "a", 0.0, 0.0, &at).unwrap();
        let t = b.finish();
        assert_eq!(t.names(), ["a"]);
        assert_eq!(t.times(), [0.0]);
        assert_eq!(t.step(0).vehicle, [0]);
    }
}
