//! The saturating frame source between two ad hoc cars, as Zahn et al.
//! (2009, §5.2) measured packet sizes: frames of the set size, sent only
//! while the link is up, with always one waiting at the MAC.

mod common;
use common::{events, id, run};
use wayside_sim::trace::{ConnEvent, FrameKind, MacEvent, PhyEvent};
use wayside_sim::{run_scenario, RunOutput};

const PASS: &str = r#"
duration = "60 s"
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
position = [-300, 0]
mobility = { model = "line", speed = "25 mph", heading = 0 }
adhoc = {}
[[traffic]]
kind = "saturate"
from = "moving"
to = "parked"
payload = "1000 B"
"#;

/// (time s, PSDU bytes) of the data frames `node` put on the air to `peer`.
fn data_tx(out: &RunOutput, node: &str, peer: &str) -> Vec<(f64, u32)> {
    let (n, p, f) = (id(out, node), id(out, peer), &out.trace.frames);
    (0..f.len())
        .filter(|&i| f.node[i] == n && f.peer[i] == p && f.event[i] == PhyEvent::Tx as u8 && f.kind[i] == FrameKind::Data as u8)
        .map(|i| (f.time_ns[i] as f64 * 1e-9, f.bytes[i]))
        .collect()
}

/// Rows of `node`'s `mac` table with `event`: (time s, bytes).
fn mac(out: &RunOutput, node: &str, event: MacEvent) -> Vec<(f64, u32)> {
    let (n, m) = (id(out, node), &out.trace.mac);
    (0..m.len()).filter(|&i| m.node[i] == n && m.event[i] == event as u8).map(|i| (m.time_ns[i] as f64 * 1e-9, m.bytes[i])).collect()
}

#[test]
fn frames_of_the_set_size_go_out_only_while_the_link_is_up() {
    for payload in [500u32, 2304] {
        let set = format!("traffic.0.payload=\"{payload} B\"");
        let out = run(PASS, &[&set], 1);
        let tx = data_tx(&out, "moving", "parked");
        assert!(tx.len() > 1000, "{payload} B: only {} frames on the air", tx.len());
        let sizes: std::collections::BTreeSet<u32> = tx.iter().map(|&(_, b)| b).collect();
        assert_eq!(sizes.len(), 1, "{payload} B: one size on the air, got {sizes:?}");
        let received = mac(&out, "parked", MacEvent::Received);
        assert!(!received.is_empty() && received.iter().all(|&(_, b)| b == payload), "{payload} B: MSDUs handed up");
        // Nothing was offered to a MAC without the link ...
        assert!(mac(&out, "moving", MacEvent::NoLink).iter().all(|&(_, b)| b != payload), "{payload} B: a frame refused for want of a link");
        // ... and nothing left before it first came up.
        let up = events(&out, "moving", ConnEvent::LinkUp)[0].0;
        assert!(tx[0].0 >= up, "{payload} B: first frame at {} s, link up at {up} s", tx[0].0);
    }
}

#[test]
fn the_sender_keeps_a_frame_waiting_while_linked() {
    let out = run(PASS, &[], 2);
    let ups = events(&out, "moving", ConnEvent::LinkUp);
    let downs = events(&out, "moving", ConnEvent::LinkDown);
    assert!(!ups.is_empty() && downs.len() == ups.len(), "{ups:?} {downs:?}");
    // Saturated: the sender's MAC is never idle between MSDUs, so each
    // MSDU's time at the MAC spans at least its predecessor's service.
    let (n, m) = (id(&out, "moving"), &out.trace.mac);
    let done: Vec<(f64, f64)> = (0..m.len())
        .filter(|&i| m.node[i] == n && (m.event[i] == MacEvent::Delivered as u8 || m.event[i] == MacEvent::Failed as u8) && m.bytes[i] == 1000)
        .map(|i| (m.time_ns[i] as f64 * 1e-9, m.delay_ns[i] as f64 * 1e-9))
        .collect();
    let (up, down) = (ups[0].0, downs[0].0);
    let inside: Vec<&(f64, f64)> = done.iter().filter(|&&(t, _)| t > up + 0.1 && t < down).collect();
    assert!(inside.len() > 500, "{} MSDUs finished while linked", inside.len());
    for w in inside.windows(2) {
        let (prev_done, (t, delay)) = (w[0].0, *w[1]);
        assert!(t - delay <= prev_done + 1e-9, "MSDU done at {t} s was queued at {} s, after the MAC went idle at {prev_done} s", t - delay);
    }
}

#[test]
fn a_disabled_source_sends_nothing() {
    let out = run(PASS, &["traffic.0.enabled=false"], 1);
    assert!(data_tx(&out, "moving", "parked").is_empty());
}

#[test]
fn sizes_outside_the_msdu_are_refused_by_name() {
    for bad in ["0 B", "2305 B"] {
        let e = run_scenario(PASS, &[format!("traffic.0.payload=\"{bad}\"")], Some(1), 0).err().expect("refused").to_string();
        assert!(e.contains("traffic[0].payload") && e.contains(bad) && e.contains("1 B to 2304 B"), "{e}");
    }
}
