//! Broadside hosted in the simulator: the unchanged `broadside` library's
//! endpoint at two static nodes 50 m apart, syncing a file over simulated
//! 802.11 with real bytes in every datagram, over UDP/IP or raw frames.

mod common;
use common::{events, id};
use wayside_sim::trace::{ConnEvent, Proto};
use wayside_sim::RunOutput;

const PAIR: &str = r#"
duration = "20 s"
[environment]
path_loss = "log-distance"
[radio]
standard = "802.11g"
channel = 1
[mac]
rate_control = { algorithm = "minstrel" }
[[node]]
name = "holder"
role = "independent"
[[node]]
name = "fetcher"
role = "independent"
position = [50, 0]
[[app]]
kind = "broadside"
from = "holder"
to = "fetcher"
bytes = "1 MB"
start = "1 s"
"#;

fn run(overrides: &[&str], seed: u64) -> RunOutput {
    common::run(PAIR, overrides, seed)
}

/// Datagram payload bytes received at `node` over `proto`.
fn received(out: &RunOutput, node: &str, proto: Proto) -> u64 {
    let (n, t) = (id(out, node), &out.trace.transport);
    (0..t.len())
        .filter(|&i| t.node[i] == n && t.proto[i] == proto as u8)
        .map(|i| u64::from(t.bytes[i]))
        .sum()
}

#[test]
fn two_static_nodes_sync_a_file_over_simulated_80211() {
    let out = run(&[], 3);
    let updated = events(&out, "fetcher", ConnEvent::FileUpdated);
    assert_eq!(
        updated.len(),
        1,
        "the fetcher commits the file once: {updated:?}"
    );
    assert!(
        events(&out, "holder", ConnEvent::FileUpdated).is_empty(),
        "the holder has nothing to fetch"
    );
    let started = events(&out, "fetcher", ConnEvent::TransferStarted);
    assert_eq!(
        started.first().map(|s| s.1),
        Some(0.0),
        "a fresh transfer, nothing resumed"
    );
    assert!(
        started[0].0 > 1.0 && updated[0].0 > started[0].0,
        "{started:?} {updated:?}"
    );
    // The file's blocks, with their headers, all crossed the air.
    let bytes = received(&out, "fetcher", Proto::Udp);
    assert!(bytes >= 1_000_000, "{bytes} bytes received");
    // At 50 m on 802.11g the megabyte takes well under the run.
    assert!(updated[0].0 < 10.0, "committed at {} s", updated[0].0);
}

#[test]
fn a_node_out_of_reach_never_gets_the_file() {
    let out = run(&["node.fetcher.position=[5000, 0]"], 3);
    assert!(events(&out, "fetcher", ConnEvent::FileUpdated).is_empty());
    assert!(events(&out, "fetcher", ConnEvent::SyncStarted).is_empty());
}

#[test]
fn the_same_seed_gives_the_same_sync() {
    let (a, b) = (run(&[], 9), run(&[], 9));
    assert_eq!(
        events(&a, "fetcher", ConnEvent::FileUpdated),
        events(&b, "fetcher", ConnEvent::FileUpdated)
    );
    assert_eq!(a.trace.transport.time_ns, b.trace.transport.time_ns);
    assert_eq!(a.trace.frames.time_ns, b.trace.frames.time_ns);
}

#[test]
fn raw_frames_carry_the_file_without_ip() {
    let out = run(&["app[0].transport=\"raw\""], 3);
    assert_eq!(events(&out, "fetcher", ConnEvent::FileUpdated).len(), 1);
    assert!(received(&out, "fetcher", Proto::Raw) >= 1_000_000);
    assert_eq!(received(&out, "fetcher", Proto::Udp), 0);
    assert!(
        events(&out, "holder", ConnEvent::ArpRequest).is_empty(),
        "no IP, no ARP"
    );
    // The blocks travel in full 2304-byte MSDUs.
    let (n, m) = (id(&out, "fetcher"), &out.trace.mac);
    let biggest = (0..m.len())
        .filter(|&i| m.node[i] == n)
        .map(|i| m.bytes[i])
        .max();
    assert_eq!(biggest, Some(2304));
}

#[test]
fn common_files_with_newer_versions_on_one_side_all_move_to_the_other() {
    let out = run(
        &[
            "app[0].files=3",
            "app[0].common=true",
            "app[0].bytes=\"300 kB\"",
            "app[0].transport=\"raw\"",
        ],
        3,
    );
    let updated = events(&out, "fetcher", ConnEvent::FileUpdated);
    assert_eq!(
        updated.len(),
        3,
        "each of the three newer versions is committed once: {updated:?}"
    );
    assert!(
        events(&out, "holder", ConnEvent::FileUpdated).is_empty(),
        "the holder's versions are the newest"
    );
    assert!(received(&out, "fetcher", Proto::Raw) >= 900_000);
}

#[test]
fn files_and_common_are_only_for_broadside() {
    let text = PAIR.replace("kind = \"broadside\"", "kind = \"tcp-bulk\"");
    let e = wayside_sim::run_scenario(&text, &["app[0].files=2".to_string()], Some(1), 0)
        .err()
        .expect("an error")
        .to_string();
    assert!(e.contains("app[0].files") && e.contains("broadside"), "{e}");
}

#[test]
fn congestion_control_syncs_the_file_and_is_refused_over_tcp() {
    // With the node's controller the sender paces itself below line rate
    // and still commits the file; without it (the default) the MAC queue
    // alone paces it, as in Zahn et al.'s implementation.
    let paced = run(&["app[0].congestion=true"], 3);
    let updated = events(&paced, "fetcher", ConnEvent::FileUpdated);
    assert_eq!(updated.len(), 1, "{updated:?}");
    let line_rate = run(&[], 3);
    assert_ne!(
        paced.trace.transport.len(),
        line_rate.trace.transport.len(),
        "the controller changes what is sent"
    );
    let e = wayside_sim::run_scenario(
        PAIR,
        &[
            "app[0].transport=\"tcp\"".to_string(),
            "app[0].congestion=true".to_string(),
        ],
        Some(1),
        0,
    )
    .err()
    .expect("an error")
    .to_string();
    assert!(e.contains("app[0].congestion") && e.contains("tcp"), "{e}");
}
