//! Two real nodes over loopback UDP: direct, and through the lossy relay.

mod common;
use broadside_node::relay::{Impairment, LossModel, Relay, RelayConfig, Schedule};
use common::*;
use std::time::Duration;

/// A temporary directory with store paths `a` and `b` and a `scratch` directory.
fn stores() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n| dir.path().join(n);
    let (sa, sb, scratch) = (p("a"), p("b"), p("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    (dir, sa, sb, scratch)
}

#[test]
fn two_nodes_sync_fifty_files_both_ways() {
    let (_dir, sa, sb, scratch) = stores();
    let k = key();
    let mut want = std::collections::BTreeMap::new();
    for i in 0..50 {
        let name = format!("file{i:02}");
        let (va, vb) = match i % 3 {
            0 => (2, 1),
            1 => (1, 3),
            _ => (1, 1),
        };
        publish_to(&sa, &scratch, &k, &name, va, 64 * 1024 + i * 100);
        publish_to(&sb, &scratch, &k, &name, vb, 64 * 1024 + i * 100);
        want.insert(name, va.max(vb));
    }
    let (pa, pb) = (free_port(), free_port());
    let a = spawn(options(sa.clone(), pa, pb, &k, 1));
    let b = spawn(options(sb.clone(), pb, pa, &k, 2));
    let done = || {
        let cur = |s: &std::path::Path| {
            broadside_node::store::DiskStore::open_read_only(s)
                .unwrap()
                .certificates()
                .iter()
                .map(|c| (c.name().to_string(), c.version()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        cur(&sa) == want && cur(&sb) == want
    };
    assert!(
        wait_for(Duration::from_secs(60), done),
        "stores did not converge"
    );
    let (na, nb) = (a.stop(), b.stop());
    // Every file verified: signature, trusted provider, size and content hash.
    assert_eq!(verified_versions(&sa, &k), want);
    assert_eq!(verified_versions(&sb, &k), want);
    for n in [&na, &nb] {
        let c = n.endpoint().counters();
        assert_eq!(c.malformed, 0);
        assert!(
            c.tx.ack.bytes * 100 < c.tx.data.bytes.max(c.rx.data.bytes),
            "{c:?}"
        );
    }
    assert!(broadside_node::store::DiskStore::open_read_only(&sa)
        .unwrap()
        .partials()
        .is_empty());
}

#[test]
fn transfer_completes_through_relay_with_thirty_percent_loss() {
    let (_dir, sa, sb, scratch) = stores();
    let k = key();
    let size = 3 << 20;
    publish_to(&sa, &scratch, &k, "map", 1, size);
    publish_to(&sb, &scratch, &k, "map", 2, size);
    let (pa, pb, ra, rb) = (free_port(), free_port(), free_port(), free_port());
    let relay = Relay::start(RelayConfig {
        listen_a: ra,
        listen_b: rb,
        a: pa,
        b: pb,
        impairment: Impairment {
            loss: LossModel::Random(0.3),
            delay: Duration::from_millis(2),
            bandwidth: Some(20_000_000),
            max_queue: Duration::from_millis(100),
            schedule: Schedule::default(),
            seed: 7,
        },
    })
    .unwrap();
    let mut oa = options(sa.clone(), pa, ra, &k, 3);
    let mut ob = options(sb.clone(), pb, rb, &k, 4);
    oa.config.send_rate = 15_000_000;
    ob.config.send_rate = 15_000_000;
    let (a, b) = (spawn(oa), spawn(ob));
    let done = || {
        broadside_node::store::DiskStore::open_read_only(&sa)
            .unwrap()
            .current("map")
            .is_some_and(|c| c.version() == 2)
    };
    assert!(
        wait_for(Duration::from_secs(60), done),
        "transfer did not complete"
    );
    let (na, nb) = (a.stop(), b.stop());
    let stats = relay.stop();
    assert_eq!(verified_versions(&sa, &k)["map"], 2);
    let (rx, tx) = (na.endpoint().counters(), nb.endpoint().counters());
    let lost = stats.a_to_b.lost + stats.b_to_a.lost;
    println!(
        "relay lost {lost} packets; data sent {} packets / {} bytes; acks {} packets / {} bytes ({:.3}% of data bytes)",
        tx.tx.data.packets,
        tx.tx.data.bytes,
        rx.tx.ack.packets,
        rx.tx.ack.bytes,
        100.0 * rx.tx.ack.bytes as f64 / tx.tx.data.bytes as f64
    );
    assert!(lost > 300, "the relay must actually have lost packets");
    assert!(rx.tx.ack.bytes * 100 < tx.tx.data.bytes);
    let blocks = (size as f64 / 2294.0).ceil();
    assert!(
        (rx.tx.ack.packets as f64) < 4.0 * blocks.log2(),
        "{} acks for {blocks} blocks",
        rx.tx.ack.packets
    );
}

/// A v1 certificate (whole-file hash, as older publishers made) in the
/// flat layout: `NAME` and `NAME.bscert`.
fn write_v1(store: &std::path::Path, k: &broadside::ProviderKey, name: &str, v: u16, data: &[u8]) {
    let mut h = broadside::ContentHasher::new();
    h.update(data);
    let c = broadside::Certificate::issue(k, name, v, data.len() as u64, h.finish()).unwrap();
    std::fs::create_dir_all(store).unwrap();
    std::fs::write(store.join(name), data).unwrap();
    std::fs::write(store.join(format!("{name}.bscert")), c.encoded()).unwrap();
}

#[test]
fn publish_issues_v2_and_v1_certificates_are_still_read_and_transferred() {
    let (_dir, sa, sb, scratch) = stores();
    let k = key();
    // "new": v2 from publish, version 2 on A. "old": v1, version 2 on A.
    publish_to(&sa, &scratch, &k, "new", 2, 300_000);
    publish_to(&sb, &scratch, &k, "new", 1, 300_000);
    let old: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
    write_v1(&sa, &k, "old", 2, &old);
    write_v1(&sb, &k, "old", 1, &old[..1000]);
    let store = |s: &std::path::Path| {
        broadside_node::store::DiskStore::open_read_only(s)
            .unwrap()
            .certificates()
            .into_iter()
            .map(|c| (c.name().to_string(), (c.version(), c.tree().is_some())))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    // Opening migrates the flat files; the published file is v2.
    drop(broadside_node::store::DiskStore::open(&sa).unwrap());
    drop(broadside_node::store::DiskStore::open(&sb).unwrap());
    let want = std::collections::BTreeMap::from([
        ("new".to_string(), (2, true)),
        ("old".to_string(), (2, false)),
    ]);
    assert_eq!(store(&sa), want);
    let (pa, pb) = (free_port(), free_port());
    let a = spawn(options(sa.clone(), pa, pb, &k, 1));
    let b = spawn(options(sb.clone(), pb, pa, &k, 2));
    let arrived = wait_for(Duration::from_secs(30), || store(&sb) == want);
    let (_, nb) = (a.stop(), b.stop());
    assert!(arrived, "B holds {:?}", store(&sb));
    assert_eq!(std::fs::read(sb.join("old")).unwrap(), old);
    assert_eq!(verified_versions(&sb, &k).len(), 2);
    assert_eq!(nb.endpoint().counters().malformed, 0);
}

#[test]
fn an_empty_node_subscribed_to_a_provider_receives_its_files() {
    let (_dir, sa, sb, scratch) = stores();
    let k = key();
    publish_to(&sa, &scratch, &k, "map", 3, 200_000);
    drop(broadside_node::store::DiskStore::open(&sb).unwrap());
    let (pa, pb) = (free_port(), free_port());
    let a = spawn(options(sa.clone(), pa, pb, &k, 1));
    let b = spawn(broadside_node::node::NodeOptions {
        subscribe: vec![k.public()],
        ..options(sb.clone(), pb, pa, &k, 2)
    });
    let arrived = wait_for(Duration::from_secs(30), || {
        broadside_node::store::DiskStore::open_read_only(&sb)
            .unwrap()
            .current("map")
            .is_some_and(|c| c.version() == 3)
    });
    a.stop();
    b.stop();
    assert!(arrived, "the subscribed node received nothing");
    assert_eq!(verified_versions(&sb, &k).get("map"), Some(&3));
}
