//! Split TCP at the AP (I-TCP): the remote server's connection ends at the
//! AP and sees only the wired path; the car still gets every byte in order.

mod common;
use common::id;
use wayside_sim::trace::{ConnEvent, Proto};
use wayside_sim::RunOutput;

fn run(text: &str, overrides: &[&str]) -> RunOutput {
    common::run(text, overrides, 4)
}

/// Smoothed RTTs (ms) a node's TCP sender reported, towards `peer`.
fn srtt(out: &RunOutput, node: &str, peer: &str) -> Vec<f32> {
    let (n, p, t) = (id(out, node), id(out, peer), &out.trace.tcp);
    (0..t.len())
        .filter(|&i| t.node[i] == n && t.peer[i] == p && !t.srtt_ms[i].is_nan())
        .map(|i| t.srtt_ms[i])
        .collect()
}

fn events(out: &RunOutput, node: &str, ev: ConnEvent) -> Vec<(f64, u32)> {
    let n = id(out, node);
    let e = &out.trace.events;
    (0..e.len())
        .filter(|&i| e.node[i] == n && e.event[i] == ev as u8)
        .map(|i| (e.time_ns[i] as f64 * 1e-9, e.peer[i]))
        .collect()
}

/// A server 50 ms RTT behind the AP on a 100 Mb/s backhaul; the car at
/// 6 Mb/s, so that a 64 KB window queues at the AP without a split.
const REMOTE: &str = r#"
duration = "8 s"
[environment]
path_loss = "free-space"
[radio]
standard = "802.11g"
channel = 6
[mac]
rate = "6 Mbps"
[management]
scan_channels = [6]
scan_dwell = "50 ms"
[[node]]
name = "ap"
role = "ap"
[[node]]
name = "car"
role = "sta"
position = [30, 0]
[[node]]
name = "server"
radio = false
[[link]]
a = "ap"
b = "server"
bandwidth = "100 Mbps"
delay = "25 ms"
[[app]]
kind = "tcp-bulk"
from = "server"
to = "car"
bytes = "2 MB"
start = "on-association"
"#;

#[test]
fn with_split_the_server_sees_wired_rtts_and_the_car_gets_every_byte_in_order() {
    let plain = run(REMOTE, &[]);
    let split = run(REMOTE, &["node.ap.split_tcp=true"]);
    let (p, s) = (srtt(&plain, "server", "car"), srtt(&split, "server", "car"));
    // Without a split the server's RTT includes the AP's queue and the 6 Mb/s
    // hop; with it, only the 50 ms wire (plus serialisation and delayed ACKs).
    let median = |v: &[f32]| {
        let mut v = v.to_vec();
        v.sort_by(f32::total_cmp);
        v[v.len() / 2]
    };
    assert!(median(&p) > 100.0, "{}", median(&p));
    assert!(
        s.len() > 100 && s.iter().all(|&r| (50.0..60.0).contains(&r)),
        "{:?}",
        s.iter().cloned().fold(0.0f32, f32::max)
    );
    // The AP runs the wireless half: its own sender towards the car, opened
    // when it intercepted the server's SYN.
    assert!(srtt(&plain, "ap", "car").is_empty());
    assert!(srtt(&split, "ap", "car").len() > 100);
    let ap_syn = events(&split, "ap", ConnEvent::Syn);
    let server_syn = events(&split, "server", ConnEvent::Syn);
    assert_eq!(ap_syn.len(), 1);
    assert_eq!(ap_syn[0].1, id(&split, "car"));
    assert!(
        (ap_syn[0].0 - server_syn[0].0 - 0.025).abs() < 1e-3,
        "{ap_syn:?} {server_syn:?}"
    );
    // The server's handshake completes one wired round trip after its SYN.
    let est = events(&split, "server", ConnEvent::Established);
    assert!((est[0].0 - server_syn[0].0 - 0.050).abs() < 1e-3, "{est:?}");
    for out in [&plain, &split] {
        let (car, t) = (id(out, "car"), &out.trace.transport);
        let rows: Vec<usize> = (0..t.len())
            .filter(|&i| t.node[i] == car && t.proto[i] == Proto::Tcp as u8)
            .collect();
        let mut seen = 0;
        for &i in &rows {
            assert_eq!(t.seq[i], seen + t.bytes[i] as u64);
            assert_eq!(t.peer[i], id(out, "server"));
            seen = t.seq[i];
        }
        assert_eq!(seen, 2_000_000);
    }
}

/// `hadaller-highway-remote` must drive the same road, radios and
/// management as `hadaller-highway`: only the server, its link, the
/// application and the split switch may differ.
#[test]
fn hadaller_highway_remote_keeps_hadaller_highway_settings() {
    use wayside_sim::scenario::builtin;
    let parse = |name: &str| builtin(name).unwrap().parse::<toml::Table>().unwrap();
    let (base, remote) = (parse("hadaller-highway"), parse("hadaller-highway-remote"));
    for table in ["environment", "radio", "mac", "management"] {
        assert_eq!(base.get(table), remote.get(table), "[{table}] differs");
    }
    assert_eq!(base.get("duration"), remote.get("duration"));
    let node = |doc: &toml::Table, name: &str| {
        let nodes = doc["node"].as_array().unwrap();
        let mut t = nodes
            .iter()
            .find(|n| n["name"].as_str() == Some(name))
            .unwrap()
            .as_table()
            .unwrap()
            .clone();
        t.remove("split_tcp");
        t
    };
    for name in ["ap", "car"] {
        assert_eq!(
            node(&base, name),
            node(&remote, name),
            "node {name} differs"
        );
    }
    let server = remote["node"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"].as_str() == Some("server"))
        .unwrap();
    assert_eq!(server["radio"].as_bool(), Some(false));
    let link = &remote["link"].as_array().unwrap()[0];
    assert_eq!(
        (
            link["a"].as_str(),
            link["b"].as_str(),
            link["delay"].as_str(),
            link["bandwidth"].as_str()
        ),
        (Some("ap"), Some("server"), Some("25 ms"), Some("100 Mbps"))
    );
    let ap = remote["node"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"].as_str() == Some("ap"))
        .unwrap();
    assert_eq!(ap["split_tcp"].as_bool(), Some(false));
}

#[test]
fn split_runs_are_deterministic() {
    let text = wayside_sim::scenario::builtin("hadaller-highway-remote").unwrap();
    let o = ["node.ap.split_tcp=true", "duration=\"70 s\""];
    let (a, b) = (run(text, &o), run(text, &o));
    assert!(a.trace.tcp.len() > 1000);
    assert_eq!(a.trace.events.time_ns, b.trace.events.time_ns);
    assert_eq!(a.trace.events.value, b.trace.events.value);
    assert_eq!(a.trace.transport.time_ns, b.trace.transport.time_ns);
    assert_eq!(a.trace.transport.seq, b.trace.transport.seq);
    assert_eq!(a.trace.tcp.cwnd, b.trace.tcp.cwnd);
    assert_eq!(a.trace.frames.time_ns, b.trace.frames.time_ns);
}
