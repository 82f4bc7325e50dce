//! Loopback throughput benchmark, all in one run: Broadside (two in-process
//! nodes, one UDP socket each), plain UDP at the same datagram size (one
//! `send_to`/`recv_from` per 2304-byte datagram, unreliable: bytes that
//! arrived count), and TCP (one connection per file, same store semantics
//! as Broadside: temp file, fsync, rename, hash check). Prints MB/s and CPU
//! seconds per MB for each and the ratios; then Broadside through the
//! userspace relay at LOSS random loss, with data bytes sent per file byte
//! (ideal 1/(1-p) at the loss p the relay applied to the data, times the
//! loss-free figure, which counts headers and hash chunks).
//!
//! Usage: `cargo run --release -p broadside-node --example goodput [FILES] [MB] [SEND_RATE_MB_S] [LOSS] [LOSSY_RATE_MB_S]`
//! (defaults 50 files of 10 MB, 0 = unpaced, 0.3, 60). Linux only (CPU time from /proc).

use broadside::{Config, ContentHasher, ProviderKey};
use broadside_node::node::{Node, NodeOptions};
use broadside_node::relay::{Impairment, LossModel, Relay, RelayConfig};
use broadside_node::store::DiskStore;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Process CPU time (user + system) in seconds, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime, in clock ticks) are at 11 and 12 after the command name.
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (field(11) + field(12)) / 100.0
}

fn free_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("loopback port")
}

fn content(name: &str, version: u16, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    Xoshiro256PlusPlus::seed_from_u64(
        name.len() as u64 * 31 + u64::from(version) + name.bytes().map(u64::from).sum::<u64>(),
    )
    .fill_bytes(&mut v);
    v
}

fn prepare(root: &Path, key: &ProviderKey, files: usize, size: usize) -> (PathBuf, PathBuf) {
    let (a, b, scratch) = (root.join("a"), root.join("b"), root.join("scratch"));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let (mut sa, mut sb) = (
        DiskStore::open(&a).expect("store a"),
        DiskStore::open(&b).expect("store b"),
    );
    for i in 0..files {
        let name = format!("file{i:03}");
        for v in 1..=2u16 {
            let src = scratch.join(&name);
            std::fs::write(&src, content(&name, v, size)).expect("write source");
            sa.publish(key, &src, &name).expect("publish a");
            if v == 1 {
                sb.publish(key, &src, &name).expect("publish b");
            }
        }
    }
    (a, b)
}

/// What one Broadside run measured.
struct Run {
    wall: f64,
    cpu: f64,
    /// Data bytes the sender sent.
    data_bytes: u64,
    /// Share of the data datagrams the relay dropped (0 without one).
    data_loss: f64,
}

/// One Broadside run from `a` to `b` (through a relay at `loss` if > 0).
fn broadside_run(a: &Path, b: &Path, key: &ProviderKey, files: usize, rate: u64, loss: f64) -> Run {
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
                ..Impairment::none(1)
            },
        })
        .expect("relay");
        (Some(r), rb, ra)
    } else {
        (None, pa, pb)
    };
    let opts = |store: &Path, me, peer, seed| NodeOptions {
        store: store.to_path_buf(),
        bind: me,
        beacon_to: vec![peer],
        trusted: vec![key.public()],
        config: Config {
            seed,
            send_rate: rate,
            ..Config::default()
        },
        status_interval: Duration::from_secs(3600),
        socket_buffer: 16 << 20,
        ..NodeOptions::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    // Opening a store verifies every file (hashes it): not part of the transfer.
    let nodes = [opts(a, pa, to_b, 1), opts(b, pb, to_a, 2)].map(|o| Node::new(o).expect("node"));
    let instances = || DiskStore::open_read_only(b).map(|s| s.current_instances());
    let before = instances().expect("store b");
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let mut threads = Vec::new();
    for mut node in nodes {
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            node.run(&stop, None).expect("run");
            (node.endpoint().counters().tx.data.bytes, node.io_stats())
        }));
    }
    // Done when every file's current version changed: one readlink per
    // file (reading certificates would verify 50 signatures per poll, CPU
    // taken from the nodes on a small machine).
    let done = || {
        instances().is_ok_and(|now| {
            now.len() == files && now.iter().all(|(name, id)| before.get(name) != Some(id))
        })
    };
    while !done() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    stop.store(true, Ordering::Relaxed);
    let ends: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().expect("node"))
        .collect();
    let (tx, rx) = (ends[0].1, ends[1].1);
    println!(
        "# sender {} datagrams in {} send calls; receiver {} in {} receive calls",
        tx.sent, tx.send_calls, rx.received, rx.recv_calls
    );
    // A → B carries the data; B → A only vectors and control packets.
    let data_loss = relay.map_or(0.0, |r| {
        let s = r.stop().a_to_b;
        s.lost as f64 / s.received.max(1) as f64
    });
    Run {
        wall,
        cpu,
        data_bytes: ends.iter().map(|e| e.0).sum(),
        data_loss,
    }
}

/// Plain UDP: `total` bytes in `dgram`-byte datagrams, one system call
/// each way per datagram; the receiver stops 200 ms after the last arrival.
/// Returns wall seconds (first send to last arrival), CPU seconds, bytes received.
fn udp_run(total: usize, dgram: usize) -> (f64, f64, u64) {
    let rx = UdpSocket::bind("127.0.0.1:0").expect("udp bind");
    let to = rx.local_addr().expect("addr");
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(16 << 20);
    rx.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        let (mut got, mut last) = (0u64, Instant::now());
        while let Ok(n) = rx.recv(&mut buf) {
            got += n as u64;
            last = Instant::now();
        }
        (got, last)
    });
    let tx = UdpSocket::bind("127.0.0.1:0").expect("udp bind");
    let _ = socket2::SockRef::from(&tx).set_send_buffer_size(16 << 20);
    let block = vec![0x5au8; dgram];
    for _ in 0..total.div_ceil(dgram) {
        let _ = tx.send_to(&block, to);
    }
    let (got, last) = receiver.join().expect("receiver");
    let wall = last.duration_since(t0).as_secs_f64();
    // The receiver's 200 ms of final waiting is idle, not CPU.
    (wall, cpu_seconds() - cpu0, got)
}

fn tcp_run(a: &Path, out: &Path, files: usize) -> (f64, f64) {
    std::fs::create_dir_all(out).expect("tcp out dir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("tcp bind");
    let addr = listener.local_addr().expect("addr");
    let src = a.to_path_buf();
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let server = std::thread::spawn(move || {
        for i in 0..files {
            let (mut s, _) = listener.accept().expect("accept");
            let data = std::fs::read(src.join(format!("file{i:03}"))).expect("read");
            s.write_all(&data).expect("send");
        }
    });
    for i in 0..files {
        let mut s = TcpStream::connect(addr).expect("connect");
        let tmp = out.join(format!(".tmp{i}"));
        let mut f = std::fs::File::create(&tmp).expect("tmp");
        let mut h = ContentHasher::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = s.read(&mut buf).expect("recv");
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            f.write_all(&buf[..n]).expect("write");
        }
        f.sync_all().expect("fsync");
        std::fs::rename(&tmp, out.join(format!("file{i:03}"))).expect("rename");
        std::hint::black_box(h.finish());
    }
    server.join().expect("server");
    (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0)
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
    let (files, mb, rate, loss) = (
        arg(1, 50.0) as usize,
        arg(2, 10.0),
        arg(3, 0.0),
        arg(4, 0.3),
    );
    // Through the userspace relay the sender is paced (the relay forwards
    // one datagram per system call and would drop the rest).
    let lossy_rate = (arg(5, 60.0) * 1e6) as u64;
    let size = (mb * 1e6) as usize;
    let root = std::env::temp_dir().join(format!("broadside-goodput-{}", std::process::id()));
    let key = ProviderKey::from_seed([3; 32]);
    let total = files * size;
    let total_mb = total as f64 / 1e6;
    let rate = (rate * 1e6) as u64;
    let (a, b) = prepare(&root, &key, files, size);
    let clean = broadside_run(&a, &b, &key, files, rate, 0.0);
    let (bw, bc) = (clean.wall, clean.cpu);
    let (uw, uc, ugot) = udp_run(total, Config::default().packet_size);
    let (tw, tc) = tcp_run(&a, &root.join("tcp"), files);
    let _ = std::fs::remove_dir_all(&root);
    let umb = ugot as f64 / 1e6;
    println!("transport,mb,seconds,goodput_mb_s,cpu_s_per_mb");
    let row = |name: &str, mb: f64, wall: f64, cpu: f64| {
        println!("{name},{mb:.1},{wall:.2},{:.1},{:.4}", mb / wall, cpu / mb);
        mb / wall
    };
    let g_bs = row("broadside", total_mb, bw, bc);
    let g_udp = row("udp_2304B", umb, uw, uc);
    let g_tcp = row("tcp", total_mb, tw, tc);
    println!(
        "# goodput broadside/udp = {:.2}, broadside/tcp = {:.2}",
        g_bs / g_udp,
        g_bs / g_tcp
    );
    println!(
        "# cpu per MB broadside/udp = {:.2}, broadside/tcp = {:.2}",
        (bc / total_mb) / (uc / umb),
        (bc / total_mb) / (tc / total_mb)
    );
    println!(
        "# udp delivered {:.1}% of its bytes",
        100.0 * umb / total_mb
    );
    if loss > 0.0 {
        let (a, b) = prepare(&root, &key, files, size);
        let lossy = broadside_run(&a, &b, &key, files, lossy_rate, loss);
        let _ = std::fs::remove_dir_all(&root);
        row(
            &format!("broadside_loss{loss}"),
            total_mb,
            lossy.wall,
            lossy.cpu,
        );
        let per_byte = |r: &Run| r.data_bytes as f64 / total as f64;
        println!(
            "# loss {loss} (relay dropped {:.1}% of data): data sent per file byte = {:.3}",
            100.0 * lossy.data_loss,
            per_byte(&lossy),
        );
        println!(
            "#   ideal 1/(1-p) = {:.3}; x {:.3} loss-free (headers, hash chunks) = {:.3}",
            1.0 / (1.0 - lossy.data_loss),
            per_byte(&clean),
            per_byte(&clean) / (1.0 - lossy.data_loss)
        );
    }
}
