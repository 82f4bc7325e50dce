//! Shared helpers for the node tests: stores with published versions, free
//! loopback ports, in-process nodes on threads, and the node binary.
#![allow(dead_code)]

use broadside::{Config, ProviderKey, TrustedKeys};
use broadside_node::node::{Node, NodeOptions};
use broadside_node::store::DiskStore;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub fn key() -> ProviderKey {
    ProviderKey::from_seed([5; 32])
}

pub fn free_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Publishes `name` up to `version` in `store` (content differs per version).
pub fn publish_to(
    store: &Path,
    scratch: &Path,
    k: &ProviderKey,
    name: &str,
    version: u16,
    size: usize,
) {
    let mut s = DiskStore::open(store).unwrap();
    let have = s.current(name).map_or(0, |c| c.version());
    for v in have + 1..=version {
        let mut data = vec![0u8; size];
        Xoshiro256PlusPlus::seed_from_u64(u64::from(v) ^ (name.len() as u64 * 7919))
            .fill_bytes(&mut data);
        let src = scratch.join(format!("{name}.v{v}"));
        std::fs::write(&src, &data).unwrap();
        s.publish(k, &src, name).unwrap();
    }
}

/// Versions of every file in a store whose content verifies.
pub fn verified_versions(store: &Path, k: &ProviderKey) -> std::collections::BTreeMap<String, u16> {
    let mut s = DiskStore::open_read_only(store).unwrap();
    let (certs, issues) = s.load(&TrustedKeys::new([k.public()])).unwrap();
    assert!(issues.is_empty(), "{issues:?}");
    certs
        .iter()
        .map(|c| (c.name().to_string(), c.version()))
        .collect()
}

pub fn options(
    store: PathBuf,
    bind: SocketAddr,
    peer: SocketAddr,
    k: &ProviderKey,
    seed: u64,
) -> NodeOptions {
    NodeOptions {
        store,
        bind,
        beacon_to: vec![peer],
        trusted: vec![k.public()],
        config: Config {
            seed,
            send_rate: 40_000_000,
            beacon_interval: Duration::from_millis(200),
            ..Config::default()
        },
        status_interval: Duration::from_millis(200),
        socket_buffer: 8 << 20,
        ..NodeOptions::default()
    }
}

pub struct Running {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Node>>,
}

impl Running {
    pub fn stop(mut self) -> Node {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

pub fn spawn(opts: NodeOptions) -> Running {
    // RUST_LOG=info (or debug) shows the nodes' logs.
    broadside_node::init_logging("warn").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let mut node = Node::new(opts).unwrap();
    let handle = std::thread::spawn(move || {
        node.run(&s, Some(Instant::now() + Duration::from_secs(120)))
            .unwrap();
        node
    });
    Running {
        stop,
        handle: Some(handle),
    }
}

pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// The node binary of this package.
pub const BIN: &str = env!("CARGO_BIN_EXE_broadside-node");

/// Runs the node binary with `args` to its end.
pub fn cli(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `args` must fail as a usage error: exit code 2, `needle` in the
/// message, no panic.
pub fn expect_usage_error(args: &[&str], needle: &str) {
    let out = cli(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
