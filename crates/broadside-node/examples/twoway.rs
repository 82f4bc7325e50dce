//! Two-way full-size sync: two nodes over loopback UDP (optionally through
//! the lossy relay), FILES files of MB megabytes each; a third of the files
//! are newer on A, a third newer on B, the rest equal. Runs until both stores
//! hold the newest version of every file, then checks every file on both
//! sides (signature, trusted provider, size, content hash) and prints the
//! wall time and goodput as CSV.
//!
//! Usage: `cargo run --release -p broadside-node --example twoway [FILES] [MB] [LOSS] [SEND_RATE_MB_S]`
//! (defaults 50 files of 10 MB, no relay, 300 MB/s pacing per node). With
//! LOSS > 0 the nodes talk through the relay (random loss, 1 ms delay).

use broadside::{Config, ProviderKey, TrustedKeys};
use broadside_node::node::{Node, NodeOptions};
use broadside_node::relay::{Impairment, LossModel, Relay, RelayConfig};
use broadside_node::store::DiskStore;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn free_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("loopback port")
}

fn versions(store: &Path) -> BTreeMap<String, u16> {
    DiskStore::open_read_only(store)
        .map(|s| {
            s.certificates()
                .iter()
                .map(|c| (c.name().to_string(), c.version()))
                .collect()
        })
        .unwrap_or_default()
}

fn main() {
    // RUST_LOG=info (or debug) shows the nodes' logs on stderr.
    broadside_node::init_logging("warn").expect("log filter");
    let arg = |i: usize, d: f64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (files, mb, loss, rate) = (
        arg(1, 50.0) as usize,
        arg(2, 10.0),
        arg(3, 0.0),
        arg(4, 300.0),
    );
    let size = (mb * 1e6) as usize;
    let root = std::env::temp_dir().join(format!("broadside-twoway-{}", std::process::id()));
    let (sa, sb, scratch) = (root.join("a"), root.join("b"), root.join("scratch"));
    std::fs::create_dir_all(&scratch).expect("scratch");
    let key = ProviderKey::from_seed([9; 32]);
    let t_prep = Instant::now();
    let (mut da, mut db) = (
        DiskStore::open(&sa).expect("store a"),
        DiskStore::open(&sb).expect("store b"),
    );
    let mut want = BTreeMap::new();
    let (mut bytes_ab, mut bytes_ba) = (0u64, 0u64);
    let mut data = vec![0u8; size];
    for i in 0..files {
        let name = format!("map{i:03}");
        // i % 3: 0 newer on A (v3 vs v1), 1 newer on B (v2 vs v1), 2 equal (v1).
        let (va, vb) = [(3u16, 1u16), (1, 2), (1, 1)][i % 3];
        for v in 1..=va.max(vb) {
            Xoshiro256PlusPlus::seed_from_u64((i as u64) << 8 | u64::from(v)).fill_bytes(&mut data);
            let src = scratch.join(&name);
            std::fs::write(&src, &data).expect("write source");
            if v <= va {
                da.publish(&key, &src, &name).expect("publish a");
            }
            if v <= vb {
                db.publish(&key, &src, &name).expect("publish b");
            }
        }
        match va.cmp(&vb) {
            std::cmp::Ordering::Greater => bytes_ab += size as u64,
            std::cmp::Ordering::Less => bytes_ba += size as u64,
            std::cmp::Ordering::Equal => {}
        }
        want.insert(name, va.max(vb));
    }
    drop((da, db)); // release the store locks for the nodes
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "twoway: prepared {files} files of {mb} MB in {:.1} s",
        t_prep.elapsed().as_secs_f64()
    );

    let (pa, pb) = (free_port(), free_port());
    let (relay, to_a, to_b) = if loss > 0.0 {
        let (ra, rb) = (free_port(), free_port());
        let r = Relay::start(RelayConfig {
            listen_a: ra,
            listen_b: rb,
            a: pa,
            b: pb,
            impairment: Impairment {
                loss: LossModel::Random(loss),
                delay: Duration::from_millis(1),
                ..Impairment::none(1)
            },
        })
        .expect("relay");
        (Some(r), rb, ra)
    } else {
        (None, pa, pb)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut threads = Vec::new();
    for (store, me, peer, seed) in [(&sa, pa, to_b, 1), (&sb, pb, to_a, 2)] {
        let opts = NodeOptions {
            store: store.clone(),
            bind: me,
            beacon_to: vec![peer],
            trusted: vec![key.public()],
            config: Config {
                seed,
                send_rate: (rate * 1e6) as u64,
                beacon_interval: Duration::from_millis(200),
                ..Config::default()
            },
            status_interval: Duration::from_secs(3600),
            socket_buffer: 16 << 20,
            ..NodeOptions::default()
        };
        let mut node = Node::new(opts).expect("node");
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            node.run(&stop, None).expect("run");
            node
        }));
    }
    let deadline = Duration::from_secs(1800);
    while !(versions(&sa) == want && versions(&sb) == want) {
        assert!(t0.elapsed() < deadline, "no convergence in {deadline:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let nodes: Vec<Node> = threads
        .into_iter()
        .map(|t| t.join().expect("node"))
        .collect();
    let relay_stats = relay.map(Relay::stop);

    // Every file on both sides: signature, trusted provider, size, content hash.
    let trusted = TrustedKeys::new([key.public()]);
    for store in [&sa, &sb] {
        let mut s = DiskStore::open_read_only(store).expect("reopen");
        let (certs, issues) = s.load(&trusted).expect("load");
        assert!(issues.is_empty(), "{}: {issues:?}", store.display());
        let got: BTreeMap<String, u16> = certs
            .iter()
            .map(|c| (c.name().to_string(), c.version()))
            .collect();
        assert_eq!(got, want, "{}", store.display());
        assert!(s.partials().is_empty(), "leftover partials");
    }
    let c: Vec<_> = nodes.iter().map(|n| *n.endpoint().counters()).collect();
    let moved = (bytes_ab + bytes_ba) as f64 / 1e6;
    println!("files,mb_each,loss,a_to_b_mb,b_to_a_mb,seconds,goodput_mb_s,dup_blocks,ack_bytes,data_bytes");
    println!(
        "{files},{mb},{loss},{:.1},{:.1},{wall:.2},{:.1},{},{},{}",
        bytes_ab as f64 / 1e6,
        bytes_ba as f64 / 1e6,
        moved / wall,
        c[0].duplicate_blocks + c[1].duplicate_blocks,
        c[0].tx.ack.bytes + c[1].tx.ack.bytes,
        c[0].tx.data.bytes + c[1].tx.data.bytes,
    );
    println!(
        "# both stores verified: {} files at the newest version",
        want.len()
    );
    if let Some(s) = relay_stats {
        println!("# relay a->b {:?}", s.a_to_b);
        println!("# relay b->a {:?}", s.b_to_a);
    }
    let _ = std::fs::remove_dir_all(&root);
}
