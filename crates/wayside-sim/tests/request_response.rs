//! The tcpx-like request-response application: a multicast trigger from a
//! server behind the AP, then request→response exchanges over TCP.

mod common;
use common::{events, id};
use wayside_sim::trace::{ConnEvent, FrameKind, PhyEvent, Proto};
use wayside_sim::{run_scenario, RunOutput};

fn run(text: &str, overrides: &[&str]) -> RunOutput {
    common::run(text, overrides, 5)
}

/// Bytes received in order over TCP at `node` by the end.
fn tcp_received(out: &RunOutput, node: &str) -> u64 {
    let (n, t) = (id(out, node), &out.trace.transport);
    (0..t.len())
        .filter(|&i| t.node[i] == n && t.proto[i] == Proto::Tcp as u8)
        .map(|i| t.bytes[i] as u64)
        .sum()
}

const TCPX: &str = r#"
duration = "10 s"
[environment]
path_loss = "free-space"
[radio]
standard = "802.11g"
channel = 6
[mac]
rate = "24 Mbps"
[management]
scan_channels = [1, 6, 11]
scan_dwell = "50 ms"
[[node]]
name = "ap"
role = "ap"
[[node]]
name = "car"
role = "sta"
position = [20, 0]
[[node]]
name = "other"
role = "sta"
position = [0, 20]
[[node]]
name = "server"
radio = false
[[link]]
a = "ap"
b = "server"
bandwidth = "100 Mbps"
delay = "10 ms"
[[app]]
kind = "request-response"
from = "server"
to = "car"
request = "200 B"
response = "20 kB"
exchanges = 5
trigger_interval = "500 ms"
"#;

#[test]
fn a_trigger_starts_one_connection_and_the_exchanges_complete() {
    let out = run(TCPX, &[]);
    let assoc = events(&out, "car", ConnEvent::Associated);
    let heard = events(&out, "car", ConnEvent::TriggerHeard);
    assert_eq!(assoc.len(), 1);
    // Triggers every 500 ms from t = 0; the car hears every one after it associates.
    assert!(
        heard[0].0 > assoc[0].0 && heard[0].0 < assoc[0].0 + 0.5 + 0.02,
        "{heard:?} {assoc:?}"
    );
    assert!(heard.len() >= 18, "{}", heard.len());
    for w in heard.windows(2) {
        assert_eq!(w[1].1, w[0].1 + 1.0);
        assert!((w[1].0 - w[0].0 - 0.5).abs() < 0.01);
    }
    // The first trigger heard opens the connection; later ones do not.
    let syn = events(&out, "car", ConnEvent::Syn);
    assert_eq!(syn.len(), 1);
    assert_eq!(syn[0].0, heard[0].0);
    // Five exchanges, each at least one wired round trip (20 ms), in sequence.
    let ex = events(&out, "car", ConnEvent::Exchange);
    assert_eq!(ex.len(), 5, "{ex:?}");
    for (t, took) in &ex {
        assert!(*took > 0.02 && *took < 0.5, "{ex:?}");
        assert!(*t > syn[0].0);
    }
    // The first includes the handshake: one more round trip than the others.
    assert!(ex[0].1 > ex[1].1 + 0.015, "{ex:?}");
    assert_eq!(tcp_received(&out, "server"), 5 * 200);
    assert_eq!(tcp_received(&out, "car"), 5 * 20_000);
    // A station that does not run the application takes no trigger.
    assert!(events(&out, "other", ConnEvent::TriggerHeard).is_empty());
    let t = &out.trace.transport;
    assert!((0..t.len()).all(|i| t.node[i] != id(&out, "other")));
}

#[test]
fn triggers_are_broadcast_frames_at_the_basic_rate_without_retries() {
    let out = run(TCPX, &["app.0.from=\"ap\"", "app.0.trigger_size=\"200 B\""]);
    assert_eq!(events(&out, "car", ConnEvent::Exchange).len(), 5);
    let f = &out.trace.frames;
    let ap = id(&out, "ap");
    let tx = |kind: FrameKind| -> Vec<usize> {
        (0..f.len())
            .filter(|&i| {
                f.node[i] == ap
                    && f.event[i] == PhyEvent::Tx as u8
                    && f.peer[i] == u32::MAX
                    && f.kind[i] == kind as u8
            })
            .collect()
    };
    let beacons = tx(FrameKind::Beacon);
    // Trigger frames: 200 B + UDP 8 + IP 20 + LLC/SNAP 8 + MAC 28 (the other
    // broadcast data frame is the AP's ARP request).
    let data: Vec<usize> = tx(FrameKind::Data)
        .into_iter()
        .filter(|&i| f.bytes[i] == 264)
        .collect();
    // One broadcast data frame per trigger, all at the beacons' (basic) rate, never retried.
    // Triggers at 0, 0.5, ..., 10 s (the run includes its last instant).
    assert_eq!(data.len(), 21, "{}", data.len());
    for &i in &data {
        assert_eq!(f.rate_mbps[i], f.rate_mbps[beacons[0]]);
        assert_eq!(f.attempt[i], 0);
    }
}

#[test]
fn without_triggers_reaching_the_car_there_is_no_exchange() {
    // Triggers stop before the car can associate (it starts 0.15 s in).
    let out = run(TCPX, &["app.0.stop=\"0.1 s\""]);
    assert!(events(&out, "car", ConnEvent::TriggerHeard).is_empty());
    assert!(events(&out, "car", ConnEvent::Syn).is_empty());
    assert_eq!(tcp_received(&out, "car"), 0);
}

#[test]
fn request_response_keys_are_checked() {
    for (o, want) in [
        (
            "app.0.request=\"0 B\"",
            "app[0].request: 0 B is out of range; allowed: 1 B to 1 GB",
        ),
        (
            "app.0.payload=\"10 B\"",
            "app[0].payload: not used with kind = \"request-response\"",
        ),
        (
            "app.0.trigger_interval=\"0 s\"",
            "app[0].trigger_interval: 0 s is out of range",
        ),
        ("app.0.exchanges=0", "app[0].exchanges: 0 is out of range"),
        (
            "app.0.kind=\"tcp-bulk\"",
            "app[0].request: only used with kind = \"request-response\"",
        ),
        ("app.0.kind=\"tcpx\"", "unknown variant `tcpx`"),
    ] {
        let e = run_scenario(TCPX, &[o.to_string()], None, 0)
            .err()
            .unwrap_or_else(|| panic!("{o} accepted"))
            .0;
        assert!(e.contains(want), "{o}: {e}");
    }
    let text = TCPX.replace("response = \"20 kB\"\n", "");
    let e = run_scenario(&text, &[], None, 0).err().unwrap().0;
    assert!(
        e.contains("app[0].kind: kind = \"request-response\" needs request and response"),
        "{e}"
    );
}

/// The car leaves mid-request, its TCP gives up, and when it is back a
/// trigger starts a new connection that carries on with the exchanges.
const AWAY_AND_BACK: &str = r#"
duration = "40 s"
[environment]
path_loss = "log-distance"
path_loss_exponent = 4.0
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
position = [10, 0]
tcp_params = { data_retries = 3 }
mobility = { model = "waypoints", depart = "3 s", waypoints = [
  { position = [2000, 0], speed = "200 m/s", pause = "8 s" },
  { position = [10, 0], speed = "200 m/s" },
] }
[[node]]
name = "server"
radio = false
[[link]]
a = "ap"
b = "server"
delay = "5 ms"
[[app]]
kind = "request-response"
from = "server"
to = "car"
request = "50 kB"
response = "100 B"
trigger_interval = "500 ms"
"#;

#[test]
fn a_lost_connection_is_reopened_at_the_next_trigger() {
    let out = run(AWAY_AND_BACK, &[]);
    let gave_up = events(&out, "car", ConnEvent::TcpGaveUp);
    let assoc = events(&out, "car", ConnEvent::Associated);
    let syn = events(&out, "car", ConnEvent::Syn);
    let heard = events(&out, "car", ConnEvent::TriggerHeard);
    let ex = events(&out, "car", ConnEvent::Exchange);
    assert_eq!(gave_up.len(), 1, "{gave_up:?}");
    assert_eq!(assoc.len(), 2, "{assoc:?}");
    assert_eq!(syn.len(), 2, "{syn:?}");
    // The second connection opens at the first trigger after re-association.
    let first_back = heard.iter().find(|h| h.0 > assoc[1].0).unwrap();
    assert_eq!(syn[1].0, first_back.0);
    // Exchanges before leaving and after coming back, none in between.
    let before = ex.iter().filter(|e| e.0 < 3.5).count();
    let after = ex.iter().filter(|e| e.0 > syn[1].0).count();
    assert!(
        before >= 3 && after >= 3 && before + after == ex.len(),
        "{ex:?}"
    );
}

#[test]
fn exchanges_cross_a_split_tcp_ap_in_both_directions() {
    let plain = run(TCPX, &[]);
    let split = run(TCPX, &["node.ap.split_tcp=true", "app.0.request=\"30 kB\""]);
    let ex = events(&split, "car", ConnEvent::Exchange);
    assert_eq!(ex.len(), 5, "{ex:?}");
    assert_eq!(tcp_received(&split, "server"), 5 * 30_000);
    assert_eq!(tcp_received(&split, "car"), 5 * 20_000);
    // The AP held both halves: it sent to the car and to the server.
    let t = &split.trace.tcp;
    let ap = id(&split, "ap");
    for peer in ["car", "server"] {
        assert!(
            (0..t.len()).any(|i| t.node[i] == ap && t.peer[i] == id(&split, peer)),
            "no AP sender towards {peer}"
        );
    }
    assert!((0..plain.trace.tcp.len()).all(|i| plain.trace.tcp.node[i] != ap));
}
