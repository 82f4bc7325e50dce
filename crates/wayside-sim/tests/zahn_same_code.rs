//! The simulated node and the real one run the same `broadside` code: one
//! file set, newer versions on both sides, synced once between two
//! simulated hosts over 802.11g and UDP/IP and once between two real
//! `broadside-node` nodes over loopback UDP, ends in the same store at
//! each end (the same certificates, the same bytes) after the same
//! discovery exchange (the same number of discovery packets each way).

use broadside::{Certificate, Config, Storage, TrustedKeys};
use broadside_node::node::{Node, NodeOptions};
use broadside_node::store::DiskStore;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wayside_sim::apps::broadside::{file_set, Files, DATAGRAM};
use wayside_sim::apps::ip::AppKind;
use wayside_sim::ids::NodeId;

/// Two hosts 10 m apart; 70 common files of 1 kB, each end newer for
/// every other one. 70 file records take two records packets (66 fit in a
/// 1472-byte datagram), so the discovery count says how the set was split
/// into packets, not only that a sync happened.
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
name = "a"
role = "independent"
[[node]]
name = "b"
role = "independent"
position = [10, 0]
[[app]]
kind = "broadside"
from = "a"
to = "b"
files = 70
bytes = "1 kB"
common = true
both_ways = true
start = "1 s"
"#;

const SEED: u64 = 4;

/// (name, version) → SHA-256 of the bytes, of every file `store` holds.
fn contents(store: &mut dyn Storage, certs: &[Certificate]) -> BTreeMap<(String, u16), [u8; 32]> {
    certs
        .iter()
        .map(|c| {
            let mut buf = vec![0u8; c.size() as usize];
            store
                .read(c, 0, &mut buf)
                .unwrap_or_else(|e| panic!("{}: {e:?}", c.name()));
            (
                (c.name().to_string(), c.version()),
                Sha256::digest(&buf).into(),
            )
        })
        .collect()
}

/// Copies the certificates and bytes of `set` into a new disk store at `dir`.
fn fill(dir: &Path, set: &mut wayside_sim::apps::files::FileSet) {
    let mut disk = DiskStore::open(dir).unwrap();
    for cert in set.certificates() {
        let mut buf = vec![0u8; cert.size() as usize];
        set.read(&cert, 0, &mut buf).unwrap();
        disk.partial_write(&cert, 0, &buf).unwrap();
        disk.partial_commit(&cert).unwrap();
    }
}

fn free_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

struct Real {
    counters: broadside::Counters,
    store: BTreeMap<(String, u16), [u8; 32]>,
}

/// Runs two real nodes over loopback on `stores` until both hold
/// `want` (name → version), for at most two minutes (far more than they
/// need, on a loaded machine); their counters and stores.
fn run_real(
    stores: [&Path; 2],
    trusted: broadside::PublicKey,
    want: &BTreeMap<String, u16>,
) -> [Real; 2] {
    let ports = [free_port(), free_port()];
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let opts = NodeOptions {
                store: stores[i].to_path_buf(),
                bind: ports[i],
                beacon_to: vec![ports[1 - i]],
                trusted: vec![trusted],
                config: Config {
                    packet_size: DATAGRAM,
                    seed: 11 + i as u64,
                    beacon_interval: Duration::from_millis(200),
                    send_rate: 20_000_000,
                    ..Config::default()
                },
                status_interval: Duration::from_millis(200),
                socket_buffer: 8 << 20,
                ..NodeOptions::default()
            };
            let mut node = Node::new(opts).unwrap();
            let s = stop.clone();
            std::thread::spawn(move || {
                node.run(&s, Some(Instant::now() + Duration::from_secs(120)))
                    .unwrap();
                node
            })
        })
        .collect();
    let held = |dir: &Path| -> BTreeMap<String, u16> {
        DiskStore::open_read_only(dir)
            .unwrap()
            .certificates()
            .iter()
            .map(|c| (c.name().to_string(), c.version()))
            .collect()
    };
    let end = Instant::now() + Duration::from_secs(120);
    while Instant::now() < end && !(held(stores[0]) == *want && held(stores[1]) == *want) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let converged = held(stores[0]) == *want && held(stores[1]) == *want;
    // A beacon period more, so that a sync the last commit would start has begun.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let nodes: Vec<Node> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for n in &nodes {
        println!("{:?}", n.endpoint().counters());
    }
    assert!(converged, "the real nodes did not converge in 120 s");
    let real = |i: usize| {
        let mut disk = DiskStore::open_read_only(stores[i]).unwrap();
        let (certs, issues) = disk.load(&TrustedKeys::new([trusted])).unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        Real {
            counters: *nodes[i].endpoint().counters(),
            store: contents(&mut disk, &certs),
        }
    };
    [real(0), real(1)]
}

#[test]
fn a_file_set_synced_both_ways_ends_the_same_in_the_simulator_and_on_real_nodes() {
    // The simulated run.
    let (_, cfg) = wayside_sim::scenario::load(PAIR, &[], Some(SEED), 0).unwrap();
    let AppKind::Broadside { files, .. } = cfg.apps[0].kind else {
        panic!("broadside")
    };
    assert_eq!(
        files,
        Files {
            bytes: 1000,
            count: 70,
            common: true,
            both_ways: true
        }
    );
    let t0 = Instant::now();
    let mut out = wayside_sim::run_scenario(PAIR, &[], Some(SEED), 0).unwrap();
    println!("simulated in {:?}", t0.elapsed());
    assert_eq!(out.broadside.len(), 2);
    out.broadside.sort_by_key(|e| e.node.0);
    let want: BTreeMap<String, u16> = (0..70).map(|f| (format!("app-0-{f}"), 2)).collect();
    let sim: Vec<_> = out
        .broadside
        .iter_mut()
        .map(|e| {
            let held: BTreeMap<String, u16> = e
                .files
                .iter()
                .map(|c| (c.name().to_string(), c.version()))
                .collect();
            assert_eq!(
                held, want,
                "simulated end {} holds the newest version of every file",
                e.node.0
            );
            (e.counters, contents(&mut e.store, &e.files))
        })
        .collect();

    // The same starting stores on disk, and two real nodes.
    let dir = tempfile::tempdir().unwrap();
    let stores = [dir.path().join("a"), dir.path().join("b")];
    let mut trusted = None;
    for (i, store) in stores.iter().enumerate() {
        let (key, mut set) = file_set(
            (cfg.seed, cfg.run),
            0,
            NodeId(i as u32) == cfg.apps[0].from,
            files,
            DATAGRAM,
        );
        trusted = Some(key.public());
        fill(store, &mut set);
    }
    let t0 = Instant::now();
    let real = run_real(
        [&stores[0], &stores[1]],
        trusted.expect("a provider"),
        &want,
    );

    println!("real nodes in {:?}", t0.elapsed());
    for i in 0..2 {
        let (sim_counters, sim_store) = &sim[i];
        let (r, name) = (&real[i], ["a", "b"][i]);
        assert_eq!(r.store.len(), 70, "{name}");
        assert_eq!(
            *sim_store, r.store,
            "{name}: the same files with the same bytes"
        );
        assert_eq!(sim_counters.malformed + r.counters.malformed, 0);
        let (s, t) = (sim_counters.tx.discovery, r.counters.tx.discovery);
        println!(
            "{name}: discovery sent {} packets / {} B simulated, {} / {} B real",
            s.packets, s.bytes, t.packets, t.bytes
        );
        assert!(s.packets > 0, "{name} took part in discovery");
        assert_eq!(
            (s.packets, s.bytes),
            (t.packets, t.bytes),
            "{name}: discovery packets and bytes sent, simulated vs real"
        );
        assert_eq!(
            sim_counters.rx.discovery.packets, r.counters.rx.discovery.packets,
            "{name}: discovery packets received"
        );
        // Each end received the 35 files it lacked, and nothing more.
        assert_eq!(
            (
                sim_counters.file_bytes_received,
                r.counters.file_bytes_received
            ),
            (35 * 1000, 35 * 1000),
            "{name}"
        );
    }
}

#[test]
fn both_ways_needs_common_files() {
    let text = PAIR.replace("common = true\n", "");
    let e = wayside_sim::run_scenario(&text, &[], Some(1), 0)
        .err()
        .expect("an error")
        .to_string();
    assert!(
        e.contains("app[0].both_ways") && e.contains("common = true"),
        "{e}"
    );
}
