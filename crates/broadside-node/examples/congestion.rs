//! Congestion control bench: one 10 MB update between two nodes with their
//! default configuration (no `send_rate` set: each finds the link's rate
//! itself), through the userspace UDP relay with a drop-tail queue of
//! 100 ms and 2 ms one-way delay:
//!
//! - 2 MB/s with 10% random loss, and 20 MB/s without loss. Prints data
//!   bytes sent per file byte and goodput over the bottleneck rate. Goodput
//!   is the file's bytes after the first 64 kB over the time from the relay
//!   forwarding 64 kB towards the receiver (discovery and offer are a few
//!   hundred bytes) until the new version is committed.
//! - a TCP flow sharing a 2 MB/s bottleneck with Broadside (needs root,
//!   `ip` and /dev/net/tun: two network namespaces joined by the packet
//!   relay; otherwise skipped): kernel TCP alone for `SECS` seconds, then
//!   TCP and a 10 MB Broadside update together. Prints each one's rate.
//!
//! Usage: `cargo run --release -p broadside-node --example congestion [SECS]`
//! (default 8). Loopback goodput against plain UDP is the `goodput`
//! example's first table (same run, side by side).

use broadside::{Config, ProviderKey};
use broadside_node::node::{Node, NodeOptions};
use broadside_node::relay::{DirectionStats, Impairment, LossModel, Relay, RelayConfig};
use broadside_node::store::DiskStore;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZE: usize = 10_000_000;
const HEAD: u64 = 64_000;

fn free_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("loopback port")
}

/// Stores `a` (versions 1 and 2 of "update") and `b` (version 1) under
/// `root`, for datagrams of `packet` bytes; and `b`'s current instance.
fn prepare(root: &Path, key: &ProviderKey, packet: usize) -> (PathBuf, PathBuf, Option<String>) {
    let block = (packet - broadside::wire::DATA_HEADER_LEN) as u32;
    let _ = std::fs::remove_dir_all(root);
    let (a, b, scratch) = (root.join("a"), root.join("b"), root.join("scratch"));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let (mut sa, mut sb) = (
        DiskStore::open(&a).expect("a"),
        DiskStore::open(&b).expect("b"),
    );
    let mut data = vec![0u8; SIZE];
    for v in 1..=2u64 {
        Xoshiro256PlusPlus::seed_from_u64(v).fill_bytes(&mut data);
        let src = scratch.join("update");
        std::fs::write(&src, &data).expect("source");
        sa.publish_blocks(key, &src, "update", block)
            .expect("publish a");
        if v == 1 {
            sb.publish_blocks(key, &src, "update", block)
                .expect("publish b");
        }
    }
    let before = DiskStore::open_read_only(&b)
        .expect("b")
        .current_instances()
        .get("update")
        .cloned();
    (a, b, before)
}

/// The bottleneck: `rate` bytes/s behind a 100 ms drop-tail queue, random
/// `loss` ahead of it, 2 ms one-way delay.
fn link(rate: u64, loss: f64) -> Impairment {
    Impairment {
        loss: LossModel::Random(loss),
        delay: Duration::from_millis(2),
        bandwidth: Some(rate),
        max_queue: Duration::from_millis(100),
        ..Impairment::none(1)
    }
}

/// Node settings: the defaults, or (`hand_set`) congestion control off and
/// the data paced at that many bytes per second.
fn options(
    store: &Path,
    (me, peer): (SocketAddr, SocketAddr),
    key: &ProviderKey,
    packet: usize,
    seed: u64,
    hand_set: Option<u64>,
) -> NodeOptions {
    let c = Config::default();
    NodeOptions {
        store: store.to_path_buf(),
        bind: me,
        beacon_to: vec![peer],
        trusted: vec![key.public()],
        config: Config {
            packet_size: packet,
            seed,
            congestion: hand_set.is_none(),
            send_rate: hand_set.unwrap_or(c.send_rate),
            ..c
        },
        status_interval: Duration::from_secs(3600),
        socket_buffer: 4 << 20,
        ..NodeOptions::default()
    }
}

/// Whether `b` holds a version of "update" other than `before`.
fn updated(b: &Path, before: &Option<String>) -> bool {
    DiskStore::open_read_only(b)
        .map(|s| s.current_instances().get("update").cloned())
        .is_ok_and(|now| now.is_some() && now != *before)
}

/// What one transfer measured.
struct Transfer {
    /// Data bytes the sender sent.
    data_bytes: u64,
    /// File bytes per second after the first [`HEAD`] bytes.
    goodput: f64,
}

/// Runs the two nodes until `b` holds the new version; `head` tells when
/// the relay has forwarded [`HEAD`] bytes towards `b`.
fn transfer(
    nodes: Vec<std::thread::JoinHandle<u64>>,
    stop: &AtomicBool,
    b: &Path,
    before: &Option<String>,
    mut head: impl FnMut() -> u64,
) -> Transfer {
    let mut started = None;
    let t0 = Instant::now();
    while !updated(b, before) {
        if started.is_none() && head() >= HEAD {
            started = Some(Instant::now());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no update in 300 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let secs = started.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
    stop.store(true, Ordering::Relaxed);
    let data_bytes = nodes.into_iter().map(|n| n.join().expect("node")).sum();
    Transfer {
        data_bytes,
        goodput: (SIZE as u64 - HEAD) as f64 / secs,
    }
}

/// 10 MB through the UDP relay at `rate` bytes/s with `loss`.
fn relayed(
    root: &Path,
    key: &ProviderKey,
    rate: u64,
    loss: f64,
    hand_set: Option<u64>,
) -> (Transfer, DirectionStats) {
    let packet = Config::default().packet_size;
    let (a, b, before) = prepare(root, key, packet);
    let (pa, pb, ra, rb) = (free_port(), free_port(), free_port(), free_port());
    let relay = Relay::start(RelayConfig {
        listen_a: ra,
        listen_b: rb,
        a: pa,
        b: pb,
        impairment: link(rate, loss),
    })
    .expect("relay");
    let stop = Arc::new(AtomicBool::new(false));
    let nodes = [
        options(&a, (pa, ra), key, packet, 1, hand_set),
        options(&b, (pb, rb), key, packet, 2, hand_set),
    ]
    .map(|o| {
        let mut n = Node::new(o).expect("node");
        let stop = stop.clone();
        std::thread::spawn(move || {
            n.run(&stop, None).expect("run");
            n.endpoint().counters().tx.data.bytes
        })
    });
    let t = transfer(nodes.into(), &stop, &b, &before, || {
        relay.stats().a_to_b.forwarded_bytes
    });
    let stats = relay.stop().a_to_b;
    (t, stats)
}

#[cfg(target_os = "linux")]
mod shared {
    //! Kernel TCP and Broadside through one bottleneck of the packet relay.
    use super::*;
    use broadside_node::netlab::{in_netns, spawn_in_netns, Lab};
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};
    use std::sync::atomic::AtomicU64;

    const PORT: u16 = 47_484;
    const TCP_PORT: u16 = 47_485;

    /// Bytes a TCP receiver in `lab.b` got, counted as they arrive, from a
    /// sender in `lab.a` writing until `stop`.
    fn tcp_flow(lab: &Lab, stop: Arc<AtomicBool>) -> Arc<AtomicU64> {
        let got = Arc::new(AtomicU64::new(0));
        let to = SocketAddr::from((lab.b.addr, TCP_PORT));
        let listener = in_netns(&lab.b.netns, move || TcpListener::bind(to))
            .expect("netns")
            .expect("tcp bind");
        let (g, s) = (got.clone(), stop.clone());
        std::thread::spawn(move || {
            if let Ok((mut c, _)) = listener.accept() {
                let _ = c.set_read_timeout(Some(Duration::from_millis(100)));
                let mut buf = vec![0u8; 1 << 16];
                while !s.load(Ordering::Relaxed) {
                    if let Ok(n) = c.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        g.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
            }
        });
        spawn_in_netns(&lab.a.netns, move || {
            let Ok(mut c) = TcpStream::connect_timeout(&to, Duration::from_secs(5)) else {
                return;
            };
            let _ = c.set_write_timeout(Some(Duration::from_millis(100)));
            let buf = vec![0x5au8; 1 << 16];
            while !stop.load(Ordering::Relaxed) {
                let _ = c.write(&buf);
            }
        })
        .expect("netns");
        got
    }

    /// TCP alone for `secs`, then TCP and a 10 MB update together.
    pub fn run(root: &Path, key: &ProviderKey, rate: u64, loss: f64, secs: f64) {
        if let Some(why) = Lab::available() {
            println!("shared bottleneck skipped: {why}");
            return;
        }
        let (ia, ib) = (Ipv4Addr::new(10, 201, 0, 1), Ipv4Addr::new(10, 201, 0, 2));
        let mtu = 1500;
        let mut lab = Lab::create(
            &format!("wscc{}", std::process::id() % 100_000),
            ia,
            ib,
            mtu,
        )
        .expect("lab");
        let packet = mtu as usize - 28;
        let (a, b, before) = prepare(root, key, packet);
        let relay = Relay::start_tun(&mut lab, &link(rate, loss)).expect("relay");
        let stop_tcp = Arc::new(AtomicBool::new(false));
        let got = tcp_flow(&lab, stop_tcp.clone());
        std::thread::sleep(Duration::from_secs(1));
        let (g0, t0) = (got.load(Ordering::Relaxed), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(secs));
        let alone = (got.load(Ordering::Relaxed) - g0) as f64 / t0.elapsed().as_secs_f64();
        let stop = Arc::new(AtomicBool::new(false));
        let mut nodes = Vec::new();
        for (store, me, peer, ns, seed) in
            [(&a, ia, ib, &lab.a.netns, 1), (&b, ib, ia, &lab.b.netns, 2)]
        {
            let ends = (SocketAddr::from((me, PORT)), SocketAddr::from((peer, PORT)));
            let o = options(store, ends, key, packet, seed, None);
            let stop = stop.clone();
            let h = spawn_in_netns(ns, move || {
                let mut n = Node::new(o).expect("node");
                n.run(&stop, None).expect("run");
                n.endpoint().counters().tx.data.bytes
            })
            .expect("netns");
            nodes.push(std::thread::spawn(move || {
                h.join().expect("node").expect("netns")
            }));
        }
        let (g1, t1) = (got.load(Ordering::Relaxed), Instant::now());
        let t = transfer(nodes, &stop, &b, &before, || {
            // Time from the start: the TUN relay counts TCP's bytes too.
            if t1.elapsed() > Duration::from_millis(600) {
                HEAD
            } else {
                0
            }
        });
        let shared = (got.load(Ordering::Relaxed) - g1) as f64 / t1.elapsed().as_secs_f64();
        stop_tcp.store(true, Ordering::Relaxed);
        drop(relay);
        drop(lab);
        println!(
            "{:.1} MB/s, {:.0}% loss: TCP alone {:.2} MB/s; sharing: TCP {:.2} MB/s ({:.2} of the link), \
             Broadside {:.2} MB/s, {:.3} data bytes per file byte",
            rate as f64 / 1e6,
            loss * 100.0,
            alone / 1e6,
            shared / 1e6,
            shared / rate as f64,
            t.goodput / 1e6,
            t.data_bytes as f64 / SIZE as f64
        );
    }
}

fn main() {
    broadside_node::init_logging("warn").expect("log filter");
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8.0);
    let root = std::env::temp_dir().join(format!("broadside-cc-{}", std::process::id()));
    let key = ProviderKey::from_seed([4; 32]);
    println!(
        "link,loss,sender,data_bytes_per_file_byte,goodput_mb_s,goodput_over_link,\
         relay_queue_full,relay_lost"
    );
    for (rate, loss) in [(2_000_000u64, 0.1), (20_000_000, 0.0)] {
        // Congestion control, then a hand-matched rate as the issue did it:
        // 95% of the link's payload rate, over 1 − loss (the relay drops
        // at random before its queue).
        let payload = Config::default().packet_size as f64;
        let hand = (rate as f64 * 0.95 / (1.0 - loss) * payload / (payload + 28.0)) as u64;
        for (sender, hand_set) in [("congestion", None), ("hand_set", Some(hand))] {
            let (t, s) = relayed(&root, &key, rate, loss, hand_set);
            println!(
                "{:.0} MB/s,{:.0}%,{sender},{:.3},{:.2},{:.2},{},{}",
                rate as f64 / 1e6,
                loss * 100.0,
                t.data_bytes as f64 / SIZE as f64,
                t.goodput / 1e6,
                t.goodput / rate as f64,
                s.queue_full,
                s.lost
            );
        }
    }
    #[cfg(target_os = "linux")]
    for loss in [0.0, 0.1] {
        shared::run(&root, &key, 2_000_000, loss, secs);
    }
    let _ = std::fs::remove_dir_all(&root);
}
