//! Three real nodes over loopback UDP: one receiver fetches a file from two
//! senders that hold the same version, both sending at once.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn a_node_fetches_one_file_from_two_peers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n| dir.path().join(n);
    let (sr, s1, s2, scratch) = (p("r"), p("s1"), p("s2"), p("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    let k = key();
    let size = 8 << 20;
    publish_to(&sr, &scratch, &k, "map", 1, size);
    publish_to(&s1, &scratch, &k, "map", 2, size);
    publish_to(&s2, &scratch, &k, "map", 2, size);
    let (pr, p1, p2) = (free_port(), free_port(), free_port());
    // Each sender is paced below what one loopback link takes, so that the
    // receiver has a reason to use both.
    let paced = |mut o: broadside_node::node::NodeOptions| {
        o.config.send_rate = 10_000_000;
        o
    };
    let r = spawn(broadside_node::node::NodeOptions {
        beacon_to: vec![p1, p2],
        ..options(sr.clone(), pr, p1, &k, 1)
    });
    let a = spawn(paced(options(s1.clone(), p1, pr, &k, 2)));
    let b = spawn(paced(options(s2.clone(), p2, pr, &k, 3)));
    let done = || {
        broadside_node::store::DiskStore::open_read_only(&sr)
            .unwrap()
            .current("map")
            .is_some_and(|c| c.version() == 2)
    };
    let arrived = wait_for(Duration::from_secs(60), done);
    let (nr, na, nb) = (r.stop(), a.stop(), b.stop());
    assert!(arrived, "the file did not arrive");
    assert_eq!(verified_versions(&sr, &k)["map"], 2);
    let sent = |n: &broadside_node::node::Node| n.endpoint().counters().file_bytes_sent;
    let (from_a, from_b) = (sent(&na), sent(&nb));
    println!("file bytes sent: {from_a} by one sender, {from_b} by the other, for {size}");
    // Each sent a real share, and together not much more than the file.
    assert!(from_a.min(from_b) > size as u64 / 5, "{from_a} {from_b}");
    assert!(from_a + from_b < size as u64 * 3 / 2, "{from_a} + {from_b}");
    assert_eq!(nr.endpoint().counters().poisoned_blocks, 0);
    assert!(broadside_node::store::DiskStore::open_read_only(&sr)
        .unwrap()
        .partials()
        .is_empty());
}
