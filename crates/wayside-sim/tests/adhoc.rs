//! Ad hoc mode as the Broadside prototype's driver ran it (Zahn et al.
//! 2009, §4), through whole runs: a car drives past a parked car, both in
//! one IBSS, Broadside-Raw between them. The link comes up and goes down
//! with range, join probes go out every 100 ms while there is no link, and
//! no Broadside datagram crosses while the receiver has no link; a
//! saturating frame source sends only while the link is up.

mod common;
use common::{events, id, run};
use wayside_sim::trace::{ConnEvent, FrameKind, MacEvent, PhyEvent, Proto};
use wayside_sim::{run_scenario, RunOutput};

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
    ups.iter()
        .enumerate()
        .map(|(i, u)| (u.0, downs.get(i).map_or(f64::INFINITY, |d| d.0)))
        .collect()
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
        assert!(
            iv.windows(2).all(|w| w[0].1 <= w[1].0),
            "{node}: intervals overlap: {iv:?}"
        );
        // Every Broadside datagram handed up arrived while the link was up.
        let (n, t) = (id(&out, node), &out.trace.transport);
        let times: Vec<f64> = (0..t.len())
            .filter(|&i| t.node[i] == n && t.proto[i] == Proto::Raw as u8)
            .map(|i| t.time_ns[i] as f64 * 1e-9)
            .collect();
        assert!(!times.is_empty(), "{node} received no datagram");
        for s in times {
            assert!(
                iv.iter().any(|&(a, b)| s >= a && s <= b),
                "{node}: datagram at {s} s outside {iv:?}"
            );
        }
    }
    let updated = events(&out, "parked", ConnEvent::FileUpdated);
    assert_eq!(updated.len(), 1, "the parked car commits the file");
    // Before the link, the endpoint's beacons go nowhere: dropped at the MAC.
    let (n, m) = (id(&out, "moving"), &out.trace.mac);
    let first_up = intervals(&out, "moving")[0].0;
    let refused = (0..m.len())
        .filter(|&i| {
            m.node[i] == n
                && m.event[i] == MacEvent::NoLink as u8
                && (m.time_ns[i] as f64) * 1e-9 < first_up
        })
        .count();
    assert!(
        refused >= 5,
        "{refused} sends refused before the link came up at {first_up} s"
    );
}

#[test]
fn join_probes_go_out_every_100_ms_until_the_link_is_up() {
    let out = run(PASS, &[], 1);
    let (n, f) = (id(&out, "moving"), &out.trace.frames);
    let up = intervals(&out, "moving")[0].0;
    let probes: Vec<f64> = (0..f.len())
        .filter(|&i| {
            f.node[i] == n
                && f.event[i] == PhyEvent::Tx as u8
                && f.kind[i] == FrameKind::ProbeReq as u8
        })
        .map(|i| f.time_ns[i] as f64 * 1e-9)
        .filter(|&t| t < up)
        .collect();
    let expected = (up / 0.1).floor() as usize;
    assert!(
        probes.len() + 1 >= expected && probes.len() <= expected + 1,
        "{} probes in {up} s",
        probes.len()
    );
    assert!(
        probes.windows(2).all(|w| (w[1] - w[0] - 0.1).abs() < 0.005),
        "spacing: {probes:?}"
    );
}

#[test]
fn nodes_of_another_bssid_never_link() {
    let out = run(PASS, &["node.parked.adhoc.bssid=\"02:00:00:00:00:02\""], 1);
    for node in ["parked", "moving"] {
        assert!(
            events(&out, node, ConnEvent::LinkUp).is_empty(),
            "{node} linked across networks"
        );
    }
    assert!(
        out.trace.transport.is_empty(),
        "no Broadside datagram crosses"
    );
}

#[test]
fn a_bad_adhoc_table_is_named() {
    let o = vec!["node.parked.role=\"ap\"".to_string()];
    let e = wayside_sim::run_scenario(PASS, &o, Some(1), 0)
        .err()
        .expect("an error")
        .to_string();
    assert!(
        e.contains("node.parked.adhoc") && e.contains("independent"),
        "{e}"
    );
}

// The saturating frame source between the same two cars, as Zahn et al.
// (2009, §5.2) measured packet sizes: frames of the set size, sent only
// while the link is up, with always one waiting at the MAC.

/// The pass with a saturating source from the moving car to the parked one.
fn saturating() -> String {
    format!("{PASS}\n[[traffic]]\nkind = \"saturate\"\nfrom = \"moving\"\nto = \"parked\"\npayload = \"1000 B\"\n")
}

/// Broadside off, the source alone, on a shorter pass; then `extra`.
fn run_saturating(extra: &[&str], seed: u64) -> RunOutput {
    let mut o = vec![
        "app.0.enabled=false",
        "duration=\"60 s\"",
        "node.moving.position=[-300, 0]",
    ];
    o.extend_from_slice(extra);
    run(&saturating(), &o, seed)
}

/// (time s, PSDU bytes) of the data frames `node` put on the air to `peer`.
fn data_tx(out: &RunOutput, node: &str, peer: &str) -> Vec<(f64, u32)> {
    let (n, p, f) = (id(out, node), id(out, peer), &out.trace.frames);
    (0..f.len())
        .filter(|&i| {
            f.node[i] == n
                && f.peer[i] == p
                && f.event[i] == PhyEvent::Tx as u8
                && f.kind[i] == FrameKind::Data as u8
        })
        .map(|i| (f.time_ns[i] as f64 * 1e-9, f.bytes[i]))
        .collect()
}

/// Rows of `node`'s `mac` table with `event`: (time s, bytes).
fn mac(out: &RunOutput, node: &str, event: MacEvent) -> Vec<(f64, u32)> {
    let (n, m) = (id(out, node), &out.trace.mac);
    (0..m.len())
        .filter(|&i| m.node[i] == n && m.event[i] == event as u8)
        .map(|i| (m.time_ns[i] as f64 * 1e-9, m.bytes[i]))
        .collect()
}

#[test]
fn frames_of_the_set_size_go_out_only_while_the_link_is_up() {
    for payload in [500u32, 2304] {
        let set = format!("traffic.0.payload=\"{payload} B\"");
        let out = run_saturating(&[&set], 1);
        let tx = data_tx(&out, "moving", "parked");
        assert!(
            tx.len() > 1000,
            "{payload} B: only {} frames on the air",
            tx.len()
        );
        let sizes: std::collections::BTreeSet<u32> = tx.iter().map(|&(_, b)| b).collect();
        assert_eq!(
            sizes.len(),
            1,
            "{payload} B: one size on the air, got {sizes:?}"
        );
        let received = mac(&out, "parked", MacEvent::Received);
        assert!(
            !received.is_empty() && received.iter().all(|&(_, b)| b == payload),
            "{payload} B: MSDUs handed up"
        );
        // Nothing was offered to a MAC without the link ...
        assert!(
            mac(&out, "moving", MacEvent::NoLink)
                .iter()
                .all(|&(_, b)| b != payload),
            "{payload} B: a frame refused for want of a link"
        );
        // ... and nothing left before it first came up.
        let up = events(&out, "moving", ConnEvent::LinkUp)[0].0;
        assert!(
            tx[0].0 >= up,
            "{payload} B: first frame at {} s, link up at {up} s",
            tx[0].0
        );
    }
}

#[test]
fn the_sender_keeps_a_frame_waiting_while_linked() {
    let out = run_saturating(&[], 2);
    let ups = events(&out, "moving", ConnEvent::LinkUp);
    let downs = events(&out, "moving", ConnEvent::LinkDown);
    assert!(
        !ups.is_empty() && downs.len() == ups.len(),
        "{ups:?} {downs:?}"
    );
    // Saturated: the sender's MAC is never idle between MSDUs, so each
    // MSDU's time at the MAC spans at least its predecessor's service.
    let (n, m) = (id(&out, "moving"), &out.trace.mac);
    let done: Vec<(f64, f64)> = (0..m.len())
        .filter(|&i| {
            m.node[i] == n
                && (m.event[i] == MacEvent::Delivered as u8 || m.event[i] == MacEvent::Failed as u8)
                && m.bytes[i] == 1000
        })
        .map(|i| (m.time_ns[i] as f64 * 1e-9, m.delay_ns[i] as f64 * 1e-9))
        .collect();
    let (up, down) = (ups[0].0, downs[0].0);
    let inside: Vec<&(f64, f64)> = done
        .iter()
        .filter(|&&(t, _)| t > up + 0.1 && t < down)
        .collect();
    assert!(
        inside.len() > 500,
        "{} MSDUs finished while linked",
        inside.len()
    );
    for w in inside.windows(2) {
        let (prev_done, (t, delay)) = (w[0].0, *w[1]);
        assert!(
            t - delay <= prev_done + 1e-9,
            "MSDU done at {t} s was queued at {} s, after the MAC went idle at {prev_done} s",
            t - delay
        );
    }
}

#[test]
fn a_disabled_source_sends_nothing() {
    let out = run_saturating(&["traffic.0.enabled=false"], 1);
    assert!(data_tx(&out, "moving", "parked").is_empty());
}

#[test]
fn sizes_outside_the_msdu_are_refused_by_name() {
    for bad in ["0 B", "2305 B"] {
        let e = run_scenario(
            &saturating(),
            &[format!("traffic.0.payload=\"{bad}\"")],
            Some(1),
            0,
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(
            e.contains("traffic[0].payload") && e.contains(bad) && e.contains("1 B to 2304 B"),
            "{e}"
        );
    }
}
