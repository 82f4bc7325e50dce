//! Same scenario and seed: identical traces. Another seed or run index:
//! different fading and backoff.

use sha2::{Digest, Sha256};
use wayside_sim::scenario::builtin;
use wayside_sim::run_scenario;
use wayside_sim::trace::Column;

fn trace_hash(seed: u64, run: u64) -> [u8; 32] {
    let out = run_scenario(builtin("drive-by").unwrap(), &["duration=\"100 s\"".into()], Some(seed), run).unwrap();
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
