//! Same scenario and seed: identical traces. Another seed or run index:
//! different fading and backoff.

use sha2::{Digest, Sha256};
use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;
use wayside_sim::trace::Column;

fn trace_hash(seed: u64, run: u64) -> [u8; 32] {
    let out = run_scenario(
        builtin("drive-by").unwrap(),
        &["duration=\"100 s\"".into()],
        Some(seed),
        run,
    )
    .unwrap();
    let mut h = Sha256::new();
    for (name, col) in out.trace.tables().into_iter().flat_map(|(_, cols)| cols) {
        h.update(name.as_bytes());
        match col {
            Column::U8(v) | Column::Category(v, _) => h.update(v),
            Column::U16(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::U32(v) | Column::Node(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::U64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::F32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            Column::F64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        }
    }
    h.finalize().into()
}

#[test]
fn same_seed_same_trace_other_seed_or_run_differs() {
    let a = trace_hash(7, 0);
    assert_eq!(a, trace_hash(7, 0));
    assert_ne!(a, trace_hash(8, 0));
    assert_ne!(a, trace_hash(7, 1));
}

/// Digest of every row of every table recorded at a node with index below
/// `nodes` (a table without a `node` column is taken whole).
fn rows_of_first_nodes(out: &wayside_sim::RunOutput, nodes: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    for (table, cols) in out.trace.tables() {
        let keep: Vec<bool> = match cols.iter().find(|(n, _)| *n == "node") {
            Some((_, Column::Node(v))) => v.iter().map(|n| *n < nodes).collect(),
            _ => continue,
        };
        h.update(table.as_bytes());
        for (name, col) in cols {
            h.update(name.as_bytes());
            let rows = keep.iter().enumerate().filter(|(_, k)| **k).map(|(i, _)| i);
            match col {
                Column::U8(v) | Column::Category(v, _) => rows.for_each(|i| h.update([v[i]])),
                Column::U16(v) => rows.for_each(|i| h.update(v[i].to_le_bytes())),
                Column::U32(v) | Column::Node(v) => rows.for_each(|i| h.update(v[i].to_le_bytes())),
                Column::U64(v) => rows.for_each(|i| h.update(v[i].to_le_bytes())),
                Column::F32(v) => rows.for_each(|i| h.update(v[i].to_le_bytes())),
                Column::F64(v) => rows.for_each(|i| h.update(v[i].to_le_bytes())),
            }
        }
    }
    h.finalize().into()
}

#[test]
fn adding_a_vehicle_out_of_reach_leaves_every_other_node_unchanged() {
    // Each node draws from streams keyed by its own name, so a vehicle that
    // never comes within reach changes nothing for the others: not their
    // fading, backoff, preamble detection or beacon jitter.
    let base = builtin("hadaller-highway").unwrap();
    let overrides = ["duration=\"60 s\"".to_string()];
    let a = run_scenario(base, &overrides, Some(3), 0).unwrap();
    let far = "\n[[node]]\nname = \"far-car\"\nrole = \"sta\"\nposition = [-5000000, 0]\n\
               mobility = { model = \"line\", speed = \"80 km/h\", heading = 0 }\n";
    let b = run_scenario(&format!("{base}{far}"), &overrides, Some(3), 0).unwrap();
    let n = a.node_names.len() as u32;
    assert_eq!(b.node_names.len() as u32, n + 1);
    let far_id = n;
    assert!(
        b.trace.frames.node.contains(&far_id),
        "the new vehicle transmits (it scans)"
    );
    assert_eq!(rows_of_first_nodes(&a, n), rows_of_first_nodes(&b, n));
}
