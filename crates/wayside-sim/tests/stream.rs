//! A trace streamed in batches while the run goes on is the trace a run
//! keeps whole, row for row.

use std::sync::{Arc, Mutex};
use wayside_sim::scenario::builtin;
use wayside_sim::trace::{Column, TraceSink};
use wayside_sim::{run_scenario, run_scenario_streaming};

type Batches = Arc<Mutex<Vec<(&'static str, Vec<(&'static str, Column<'static>)>)>>>;

struct Collect(Batches);

impl TraceSink for Collect {
    fn write(&mut self, table: &'static str, columns: Vec<(&'static str, Column<'static>)>) {
        self.0.lock().unwrap().push((table, columns));
    }
}

/// A column's values as bytes.
fn bytes(col: &Column<'_>) -> Vec<u8> {
    match col {
        Column::U8(v) | Column::Category(v, _) => v.to_vec(),
        Column::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Column::U32(v) | Column::Node(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Column::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

#[test]
fn streamed_batches_are_the_whole_trace() {
    // A TCP download: `frames` rows wait for their ACKs' outcome.
    let text = builtin("drive-by").unwrap();
    let overrides = ["duration=\"40 s\"".to_string()];
    let whole = run_scenario(text, &overrides, Some(3), 0).unwrap();
    let batches: Batches = Arc::default();
    let sink = Box::new(Collect(Arc::clone(&batches)));
    let streamed =
        run_scenario_streaming(text, &overrides, (Some(3), 0), None, (sink, 500)).unwrap();
    assert!(streamed.trace.frames.is_empty(), "rows left in the trace");
    let batches = batches.lock().unwrap();
    for (table, cols) in whole.trace.tables() {
        let mine: Vec<_> = batches.iter().filter(|b| b.0 == table).collect();
        assert!(!mine.is_empty(), "no batch of {table}");
        for (i, (name, col)) in cols.iter().enumerate() {
            let joined: Vec<u8> = mine.iter().flat_map(|b| bytes(&b.1[i].1)).collect();
            assert_eq!(joined, bytes(col), "{table}.{name}");
        }
        if table == "frames" {
            assert!(mine.len() > 10, "{} batches of frames rows", mine.len());
        }
    }
}
