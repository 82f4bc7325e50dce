//! The trace streamed while the run goes on: once a table holds a batch's
//! worth of rows, they go to the run's [`TraceSink`], so that the trace in
//! memory is bounded by the batch, not by the run. `frames` rows go only up
//! to the oldest one still waiting for its transmission's outcome
//! ([`World::outcome`]); rows are numbered from the run's first either way.

use super::World;
use crate::trace::TraceSink;

/// A run's sink and its batch size.
pub(crate) struct Stream {
    sink: Box<dyn TraceSink>,
    rows: usize,
    /// The number of `frames` rows in memory at which to send again.
    due: usize,
}

impl World {
    /// Sends the trace's rows to `sink` in batches of `rows` while the run
    /// goes on, and the rest at its end.
    pub fn stream_to(&mut self, sink: Box<dyn TraceSink>, rows: usize) {
        let rows = rows.max(1);
        self.stream = Some(Stream {
            sink,
            rows,
            due: rows,
        });
    }

    /// Sends each table that holds a batch's worth of rows (every table,
    /// and every row, at the end: `finish`).
    pub(super) fn stream_batches(&mut self, finish: bool) {
        let Some(stream) = &mut self.stream else {
            return;
        };
        let (rows, t) = (stream.rows, &mut self.trace);
        if finish || t.frames.len() >= stream.due {
            let flushed = self.flushed_frames;
            let waiting = self.awaiting.iter().flatten().map(|&r| r - flushed).min();
            let cut = match waiting {
                Some(w) if !finish => w.min(t.frames.len()),
                _ => t.frames.len(),
            };
            if cut > 0 || finish {
                self.flushed_frames += cut;
                let front = t.frames.take_front(cut);
                stream.sink.write("frames", front.into_columns());
            }
            stream.due = t.frames.len() + rows;
        }
        macro_rules! send {
            ($($table:ident),+) => {$(
                if finish || t.$table.len() >= rows {
                    let all = std::mem::take(&mut t.$table);
                    stream.sink.write(stringify!($table), all.into_columns());
                }
            )+};
        }
        send!(mac, events, tcp, transport);
    }
}
