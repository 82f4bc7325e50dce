//! Loopback goodput benchmark: Broadside (two in-process nodes, one UDP
//! socket each) against a TCP baseline (one connection per file, same files,
//! same store semantics: write to a temp file, fsync, rename, hash check).
//! Prints MB/s and CPU seconds per MB for both, and their ratio.
//!
//! Usage: `cargo run --release -p broadside-node --example goodput [FILES] [MB] [SEND_RATE_MB_S]`
//! (defaults 50 files of 10 MB, 400 MB/s pacing). Linux only (CPU time from /proc).

use broadside::{Config, ContentHasher, ProviderKey};
use broadside_node::node::{Node, NodeOptions};
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

fn broadside_run(a: &Path, b: &Path, key: &ProviderKey, files: usize, rate: u64) -> (f64, f64) {
    let (pa, pb) = (free_port(), free_port());
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
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let mut threads = Vec::new();
    for o in [opts(a, pa, pb, 1), opts(b, pb, pa, 2)] {
        let mut node = Node::new(o).expect("node");
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            node.run(&stop, None).expect("run")
        }));
    }
    let done = || {
        DiskStore::open_read_only(b)
            .map(|s| s.certificates().iter().filter(|c| c.version() == 2).count() == files)
            .unwrap_or(false)
    };
    while !done() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    (wall, cpu)
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
    let (files, mb, rate) = (arg(1, 50.0) as usize, arg(2, 10.0), arg(3, 400.0));
    let size = (mb * 1e6) as usize;
    let root = std::env::temp_dir().join(format!("broadside-goodput-{}", std::process::id()));
    let key = ProviderKey::from_seed([3; 32]);
    let (a, b) = prepare(&root, &key, files, size);
    let total_mb = (files * size) as f64 / 1e6;
    let (bw, bc) = broadside_run(&a, &b, &key, files, (rate * 1e6) as u64);
    let (tw, tc) = tcp_run(&a, &root.join("tcp"), files);
    println!("transport,files,mb_total,seconds,goodput_mb_s,cpu_s_per_mb");
    println!(
        "broadside,{files},{total_mb:.1},{bw:.2},{:.1},{:.4}",
        total_mb / bw,
        bc / total_mb
    );
    println!(
        "tcp,{files},{total_mb:.1},{tw:.2},{:.1},{:.4}",
        total_mb / tw,
        tc / total_mb
    );
    println!(
        "# goodput ratio broadside/tcp = {:.2}; cpu-per-MB ratio broadside/tcp = {:.2}",
        tw / bw,
        (bc / total_mb) / (tc / total_mb)
    );
    let _ = std::fs::remove_dir_all(&root);
}
