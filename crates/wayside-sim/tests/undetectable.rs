//! Arrivals of undetectable preambles run outside the event queue: a run
//! that counts their drops is the run that keeps their rows
//! (`radio.undetectable_rows`), without those rows, and with fewer events.

mod common;

use wayside_sim::scenario::builtin;
use wayside_sim::trace::{Column, Trace};

/// Every column of every table, as bytes, leaving out the `frames` rows
/// `without`.
fn columns(trace: &Trace, without: &[u32]) -> Vec<(String, Vec<u8>)> {
    let mut keep = vec![true; trace.frames.len()];
    without.iter().for_each(|&r| keep[r as usize] = false);
    let mut out = Vec::new();
    for (table, cols) in trace.tables() {
        for (name, col) in cols {
            let mut bytes = Vec::new();
            let mut put = |i: usize, b: &[u8]| {
                if table != "frames" || keep[i] {
                    bytes.extend_from_slice(b)
                }
            };
            match col {
                Column::U8(v) | Column::Category(v, _) => {
                    v.iter().enumerate().for_each(|(i, x)| put(i, &[*x]))
                }
                Column::U16(v) => v.iter().enumerate().for_each(|(i, x)| put(i, &x.to_le_bytes())),
                Column::U32(v) | Column::Node(v) => {
                    v.iter().enumerate().for_each(|(i, x)| put(i, &x.to_le_bytes()))
                }
                Column::U64(v) => v.iter().enumerate().for_each(|(i, x)| put(i, &x.to_le_bytes())),
                Column::F32(v) => v.iter().enumerate().for_each(|(i, x)| put(i, &x.to_le_bytes())),
                Column::F64(v) => v.iter().enumerate().for_each(|(i, x)| put(i, &x.to_le_bytes())),
            }
            out.push((format!("{table}.{name}"), bytes));
        }
    }
    out
}

#[test]
fn counting_undetectable_drops_moves_nothing_else() {
    // The range walk: a station walks away from its AP, out of range.
    let text = builtin("range").unwrap();
    let rows = common::run(text, &["radio.undetectable_rows=true"], 1);
    let counted = common::run(text, &[], 1);
    let kept = &rows.trace.undetectable;
    let u = &counted.trace.undetectable;
    assert!(u.arrivals > 1000, "{} undetectable arrivals", u.arrivals);
    assert_eq!(u.divergent, 0);
    // Each kept row is a drop counted instead, and nothing else differs.
    let drops: u64 = u.drops.iter().flatten().sum();
    assert_eq!(drops, kept.rows.len() as u64);
    assert!(kept.rows.len() > 1000);
    assert!(counted.trace.undetectable.rows.is_empty());
    assert_eq!(columns(&rows.trace, &kept.rows), columns(&counted.trace, &[]));
    // Two events fewer per arrival (one, where it ends after the run).
    let fewer = rows.stats.events - counted.stats.events;
    assert!(fewer > u.arrivals && fewer <= 2 * u.arrivals, "{fewer} events fewer");
}
