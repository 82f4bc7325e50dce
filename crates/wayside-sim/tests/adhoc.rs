//! Ad hoc mode as the Broadside prototype's driver ran it (Zahn et al.
//! 2009, §4), through whole runs: a car drives past a parked car, both in
//! one IBSS, Broadside-Raw between them. The link comes up and goes down
//! with range, join probes go out every 100 ms while there is no link, and
//! no Broadside datagram crosses while the receiver has no link.

mod common;
use common::{events, id, run};
use wayside_sim::trace::{ConnEvent, FrameKind, MacEvent, PhyEvent, Proto};
use wayside_sim::RunOutput;

const PASS: &str = r#"
duration = "90 s"
[environment]
path_loss = "log-distance"
path_loss_exponent = 3.5
[radio]
standard = "802.11g"
channel = 1
[mac]
rate_control = { algorithm = "minstrel" }
[[node]]
name = "parked"
position = [0, 5]
adhoc = {}
[[node]]
name = "moving"
position = [-500, 0]
mobility = { model = "line", speed = "25 mph", heading = 0 }
adhoc = {}
[[app]]
kind = "broadside"
transport = "raw"
from = "moving"
to = "parked"
bytes = "2 MB"
start = "0 s"
"#;

/// The (up, down) intervals of `node`'s link, in seconds; a link still up
/// at the end closes at `f64::INFINITY`.
fn intervals(out: &RunOutput, node: &str) -> Vec<(f64, f64)> {
    let ups = events(out, node, ConnEvent::LinkUp);
    let downs = events(out, node, ConnEvent::LinkDown);
    ups.iter().enumerate().map(|(i, u)| (u.0, downs.get(i).map_or(f64::INFINITY, |d| d.0))).collect()
}

#[test]
fn the_link_follows_range_and_gates_broadside() {
    let out = run(PASS, &[], 1);
    for node in ["parked", "moving"] {
        let iv = intervals(&out, node);
        assert!(!iv.is_empty(), "{node}: the link never came up");
        let (up, down) = (iv[0].0, iv.last().unwrap().1);
        // 500 m away at 11 m/s: not at the start, and gone before the end.
        assert!(up > 1.0 && down < 90.0, "{node}: {iv:?}");
        assert!(iv.windows(2).all(|w| w[0].1 <= w[1].0), "{node}: intervals overlap: {iv:?}");
        // Every Broadside datagram handed up arrived while the link was up.
        let (n, t) = (id(&out, node), &out.trace.transport);
        let times: Vec<f64> = (0..t.len()).filter(|&i| t.node[i] == n && t.proto[i] == Proto::Raw as u8).map(|i| t.time_ns[i] as f64 * 1e-9).collect();
        assert!(!times.is_empty(), "{node} received no datagram");
        for s in times {
            assert!(iv.iter().any(|&(a, b)| s >= a && s <= b), "{node}: datagram at {s} s outside {iv:?}");
        }
    }
    let updated = events(&out, "parked", ConnEvent::FileUpdated);
    assert_eq!(updated.len(), 1, "the parked car commits the file");
    // Before the link, the endpoint's beacons go nowhere: dropped at the MAC.
    let (n, m) = (id(&out, "moving"), &out.trace.mac);
    let first_up = intervals(&out, "moving")[0].0;
    let refused = (0..m.len()).filter(|&i| m.node[i] == n && m.event[i] == MacEvent::NoLink as u8 && (m.time_ns[i] as f64) * 1e-9 < first_up).count();
    assert!(refused >= 5, "{refused} sends refused before the link came up at {first_up} s");
}

#[test]
fn join_probes_go_out_every_100_ms_until_the_link_is_up() {
    let out = run(PASS, &[], 1);
    let (n, f) = (id(&out, "moving"), &out.trace.frames);
    let up = intervals(&out, "moving")[0].0;
    let probes: Vec<f64> = (0..f.len())
        .filter(|&i| f.node[i] == n && f.event[i] == PhyEvent::Tx as u8 && f.kind[i] == FrameKind::ProbeReq as u8)
        .map(|i| f.time_ns[i] as f64 * 1e-9)
        .filter(|&t| t < up)
        .collect();
    let expected = (up / 0.1).floor() as usize;
    assert!(probes.len() + 1 >= expected && probes.len() <= expected + 1, "{} probes in {up} s", probes.len());
    assert!(probes.windows(2).all(|w| (w[1] - w[0] - 0.1).abs() < 0.005), "spacing: {probes:?}");
}

#[test]
fn nodes_of_another_bssid_never_link() {
    let out = run(PASS, &["node.parked.adhoc.bssid=\"02:00:00:00:00:02\""], 1);
    for node in ["parked", "moving"] {
        assert!(events(&out, node, ConnEvent::LinkUp).is_empty(), "{node} linked across networks");
    }
    assert!(out.trace.transport.is_empty(), "no Broadside datagram crosses");
}

#[test]
fn a_bad_adhoc_table_is_named() {
    let o = vec!["node.parked.role=\"ap\"".to_string()];
    let e = wayside_sim::run_scenario(PASS, &o, Some(1), 0).err().expect("an error").to_string();
    assert!(e.contains("node[0].adhoc") && e.contains("independent"), "{e}");
}
