//! The contact experiment at small scale, through the packet relay between
//! two network namespaces: Broadside at 30% loss and kernel TCP without loss
//! each move files both ways within a short contact, the relay applies the
//! configured loss to IP packets, and the namespaces are gone afterwards.
//! Needs root, `ip` and /dev/net/tun; without them it says so and passes.
#![cfg(target_os = "linux")]

use broadside_node::contact::{run_broadside, run_tcp, ContactOptions};
use broadside_node::netlab::Lab;
use std::time::Duration;

fn namespaces() -> String {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn broadside_and_tcp_cross_a_short_lossy_contact_through_the_packet_relay() {
    if let Some(why) = Lab::available() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("wst{}", std::process::id() % 100_000);
    let o = ContactOptions {
        lead: Duration::from_millis(500),
        contact: Duration::from_secs(3),
        files_per_side: 1,
        file_size: 1_000_000,
        prefix: prefix.clone(),
        ..ContactOptions::paper(dir.path().to_path_buf())
    };
    let rows = run_broadside(&o).unwrap();
    for r in &rows {
        assert!(
            r.files_complete >= 1 && r.bytes_received >= 1_000_000,
            "{r:?}"
        );
        // Loss is applied to the IP packets that carry the datagrams.
        let rate = r.relay.lost as f64 / (r.relay.received - r.relay.down) as f64;
        assert!((0.22..0.38).contains(&rate), "loss {rate}: {r:?}");
    }
    let rows = run_tcp(&ContactOptions { loss: 0.0, ..o }).unwrap();
    for r in &rows {
        assert!(
            r.files_complete >= 1 && r.bytes_complete >= 1_000_000 && r.relay.lost == 0,
            "{r:?}"
        );
        assert!(
            r.relay.down > 0,
            "SYNs before the contact are dropped: {r:?}"
        );
    }
    assert!(!namespaces().contains(&prefix), "{}", namespaces());
}
