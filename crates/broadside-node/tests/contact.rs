//! The contact experiment at small scale, through the packet relay between
//! two network namespaces: Broadside at 30% loss and kernel TCP without loss
//! each move data both ways within a short contact, the relay applies the
//! configured loss to IP packets, nothing crosses while the link is down,
//! and the namespaces are gone afterwards, also when an assertion fails.
//! Needs root, `ip` and /dev/net/tun; without them it says so and passes.
//!
//! The machine may be busy (other builds, other tests on 2 cores): the
//! assertions are on what must hold however the threads are scheduled —
//! data crossed each way, the loss rate measured over enough packets, drops
//! while the link is down — not on amounts or completed files, which
//! depend on how much CPU the nodes and the relay got in the contact.
#![cfg(target_os = "linux")]

use broadside_node::contact::{run_broadside, run_tcp, ContactOptions, Row};
use broadside_node::netlab::Lab;
use std::time::{Duration, Instant};

fn namespaces() -> String {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Deletes the lab's namespaces when dropped, on success or panic (a [`Lab`]
/// already does when it drops; this also covers a run that fails between
/// creating a namespace and building its `Lab`).
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for side in ["a", "b"] {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &format!("{}{side}", self.0)])
                .output();
        }
    }
}

/// Loss measured by the relay over the packets offered while the link was up.
fn measured_loss(r: &Row) -> Option<f64> {
    let offered = r.relay.received - r.relay.down;
    // Fewer packets than this (a starved node) say little about the rate.
    (offered >= 200).then(|| r.relay.lost as f64 / offered as f64)
}

#[test]
fn broadside_and_tcp_cross_a_short_lossy_contact_through_the_packet_relay() {
    if let Some(why) = Lab::available() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("wst{}", std::process::id() % 100_000);
    let guard = Cleanup(prefix.clone());
    let o = ContactOptions {
        // Beacons and the first SYN go out at once: a second of link down
        // catches some even if the threads start late.
        lead: Duration::from_secs(1),
        // At 30% loss a lost discovery packet costs a 1 s timeout, and one
        // lost again another: 5 s leave room for that on a busy machine.
        contact: Duration::from_secs(5),
        files_per_side: 1,
        file_size: 1_000_000,
        prefix: prefix.clone(),
        ..ContactOptions::paper(dir.path().to_path_buf())
    };
    let start = Instant::now();
    let rows = run_broadside(&o).unwrap();
    eprintln!(
        "broadside: {:.1} s, {rows:?}",
        start.elapsed().as_secs_f64()
    );
    for r in &rows {
        assert!(r.bytes_received > 0, "nothing crossed: {r:?}");
        // Loss is applied to the IP packets that carry the datagrams.
        if let Some(rate) = measured_loss(r) {
            assert!((0.2..0.4).contains(&rate), "loss {rate}: {r:?}");
        }
    }
    assert!(
        rows.iter().any(|r| measured_loss(r).is_some()),
        "too few packets to measure the loss: {rows:?}"
    );
    assert!(
        rows.iter().map(|r| r.relay.down).sum::<u64>() > 0,
        "beacons before the contact are dropped: {rows:?}"
    );

    let start = Instant::now();
    // Without loss TCP needs one connection attempt (restarted each second)
    // and 0.4 s per file at 2.5 MB/s.
    let rows = run_tcp(&ContactOptions {
        loss: 0.0,
        lead: Duration::from_millis(500),
        contact: Duration::from_secs(2),
        ..o
    })
    .unwrap();
    eprintln!("tcp: {:.1} s, {rows:?}", start.elapsed().as_secs_f64());
    for r in &rows {
        assert!(r.bytes_received > 0 && r.relay.lost == 0, "{r:?}");
    }
    assert!(
        rows.iter().map(|r| r.relay.down).sum::<u64>() > 0,
        "SYNs before the contact are dropped: {rows:?}"
    );
    drop(guard);
    assert!(!namespaces().contains(&prefix), "{}", namespaces());
}
