//! A node's `range`: the transmit power at which two such nodes still
//! communicate with no interference at that distance (Chen et al.'s
//! definition, after SWANS): a 1500-byte frame at the lowest basic rate
//! through with probability 0.9 against the noise floor.

mod common;
use common::id;
use wayside_sim::trace::{MacEvent, PhyEvent};
use wayside_sim::{run_scenario, RunOutput};

const PAIR: &str = r#"
duration = "20 s"
[environment]
path_loss = "two-ray"
[radio]
standard = "802.11b"
[[node]]
name = "a"
range = "300 m"
[[node]]
name = "b"
range = "300 m"
position = [300, 0]
[[traffic]]
kind = "cbr"
from = "a"
to = "broadcast"
payload = "1500 B"
interval = "20 ms"
"#;

/// The fraction of `a`'s broadcasts that `b` received.
fn delivery(out: &RunOutput) -> f64 {
    let (a, b) = (id(out, "a"), id(out, "b"));
    let (f, m) = (&out.trace.frames, &out.trace.mac);
    let sent = (0..m.len())
        .filter(|&i| m.node[i] == a && m.event[i] == MacEvent::Delivered as u8)
        .count();
    let got = (0..f.len())
        .filter(|&i| f.node[i] == b && f.peer[i] == a && f.event[i] == PhyEvent::Rx as u8)
        .count();
    got as f64 / sent as f64
}

#[test]
fn at_the_range_nine_frames_in_ten_get_through_and_the_edge_is_sharp() {
    let at = delivery(&common::run(PAIR, &[], 1));
    assert!((0.8..=0.96).contains(&at), "delivery at the range: {at}");
    let near = delivery(&common::run(PAIR, &["node.b.position=[270, 0]"], 1));
    let far = delivery(&common::run(PAIR, &["node.b.position=[330, 0]"], 1));
    assert!(near > 0.97, "at 0.9 of the range: {near}");
    assert!(far < 0.6, "at 1.1 of the range: {far}");
}

#[test]
fn range_and_tx_power_are_exclusive_and_bounded() {
    let e = run_scenario(
        PAIR,
        &["node.a.tx_power=\"10 dBm\"".to_string()],
        Some(1),
        0,
    )
    .err()
    .expect("both");
    assert!(
        e.0.contains("node.a.range") && e.0.contains("not both"),
        "{}",
        e.0
    );
    let e = run_scenario(PAIR, &["node.a.range=\"90 km\"".to_string()], Some(1), 0)
        .err()
        .expect("too far");
    assert!(
        e.0.contains("node.a.range") && e.0.contains("dBm"),
        "{}",
        e.0
    );
}
