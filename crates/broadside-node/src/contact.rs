//! The contact experiment: how many file bytes cross one short contact
//! through a lossy link, both ways at once, with Broadside against TCP.
//!
//! Two hosts in a [`Lab`] (two network namespaces joined by TUN devices) and
//! the packet [`Relay`] between them with the shared impairment model: link
//! down for `lead`, up for `contact` (the paper's 20 s), down again. Host A
//! holds the newer version of half the files, host B of the other half.
//!
//! - **Broadside**: one [`Node`] per host over UDP, datagrams sized to the
//!   MTU, paced just under the link bandwidth.
//! - **TCP** (like Broadside-IP's transfers): the kernel's TCP, one stream per
//!   file, each side pushing its newer files in turn; a connection attempt is
//!   restarted after one second (Broadside-IP's fix for Windows XP's 3/9/21 s
//!   SYN retries), a broken stream after one second too, from the start of
//!   the file. The file list is given (no discovery over TCP), which favours
//!   TCP. The receiver keeps a file only when it is complete: certificate
//!   verified, content hash checked, temp file fsynced and renamed.
//!
//! Both runs get a fresh lab and relay with the same seed and schedule; bytes
//! are counted when the contact ends (plus `grace` for packets in flight).

use crate::netlab::{spawn_in_netns, Lab};
use crate::node::{Node, NodeOptions};
use crate::relay::{DirectionStats, Impairment, LossModel, Relay, Schedule};
use crate::store::DiskStore;
use crate::NodeError;
use broadside::{Certificate, Config, ContentHasher, ProviderKey, TrustedKeys};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Experiment settings.
#[derive(Clone, Debug)]
pub struct ContactOptions {
    /// Random loss probability per packet, each direction.
    pub loss: f64,
    /// Link down before the contact (nodes start, beacons go nowhere).
    pub lead: Duration,
    /// Contact length.
    pub contact: Duration,
    /// Counted after the contact ends, for packets in flight.
    pub grace: Duration,
    /// Link bandwidth per direction, bytes of IP packets per second.
    pub bandwidth: u64,
    /// One-way delay.
    pub delay: Duration,
    /// Files each side holds a newer version of.
    pub files_per_side: usize,
    /// Bytes per file.
    pub file_size: usize,
    /// Link MTU.
    pub mtu: u32,
    /// Loss seed.
    pub seed: u64,
    /// Scratch directory for the stores (created; emptied per run).
    pub work_dir: PathBuf,
    /// Namespace and device name prefix (at most 12 characters).
    pub prefix: String,
}

impl ContactOptions {
    /// The paper's contact: 20 s at 30% loss, 2.5 MB/s, 2 ms, 10 MB files.
    pub fn paper(work_dir: PathBuf) -> ContactOptions {
        ContactOptions {
            loss: 0.3,
            lead: Duration::from_secs(2),
            contact: Duration::from_secs(20),
            grace: Duration::from_millis(300),
            bandwidth: 2_500_000,
            delay: Duration::from_millis(2),
            files_per_side: 8,
            file_size: 10_000_000,
            mtu: 1500,
            seed: 1,
            work_dir,
            prefix: format!("wsbd{}", std::process::id() % 100_000),
        }
    }

    fn impairment(&self) -> Impairment {
        let (a, b) = (self.lead, self.lead + self.contact);
        Impairment {
            loss: LossModel::Random(self.loss),
            delay: self.delay,
            bandwidth: Some(self.bandwidth),
            max_queue: Duration::from_millis(100),
            schedule: Schedule(vec![(a, b)]),
            seed: self.seed,
        }
    }
}

/// One line of the result table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Loss probability.
    pub loss: f64,
    /// `"A->B"` or `"B->A"`.
    pub direction: &'static str,
    /// `"broadside"` or `"tcp"`.
    pub protocol: &'static str,
    /// New file bytes that arrived within the contact (Broadside keeps
    /// partial files and resumes them; TCP's partial streams are lost).
    pub bytes_received: u64,
    /// Files complete and verified at the receiver.
    pub files_complete: usize,
    /// Their bytes.
    pub bytes_complete: u64,
    /// Relay counts for this direction.
    pub relay: DirectionStats,
}

impl Row {
    /// CSV header matching [`Row::csv`].
    pub const CSV_HEADER: &'static str = "loss,direction,protocol,contact_s,bytes_received,files_complete,bytes_complete,relay_received,relay_lost,relay_queue_full";

    /// One CSV line.
    pub fn csv(&self, contact: Duration) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{}",
            self.loss,
            self.direction,
            self.protocol,
            contact.as_secs_f64(),
            self.bytes_received,
            self.files_complete,
            self.bytes_complete,
            self.relay.received,
            self.relay.lost,
            self.relay.queue_full
        )
    }
}

const PORT: u16 = 47_474;
const TCP_PORT: u16 = 47_475;

fn addrs() -> (Ipv4Addr, Ipv4Addr) {
    (Ipv4Addr::new(10, 200, 0, 1), Ipv4Addr::new(10, 200, 0, 2))
}

fn key() -> ProviderKey {
    ProviderKey::from_seed([0xb5; 32])
}

fn name(i: usize) -> String {
    format!("map{i:03}")
}

fn rt<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> NodeError + '_ {
    move |e| NodeError::Runtime(format!("{what}: {e}"))
}

/// Fresh stores `a` and `b` under `dir`: file i < n newer (version 2) on A,
/// i >= n newer on B; the other side has version 1.
fn prepare(dir: &Path, o: &ContactOptions) -> Result<(PathBuf, PathBuf), NodeError> {
    let _ = std::fs::remove_dir_all(dir);
    let (a, b, scratch) = (dir.join("a"), dir.join("b"), dir.join("scratch"));
    std::fs::create_dir_all(&scratch).map_err(rt("scratch"))?;
    let (mut sa, mut sb) = (DiskStore::open(&a)?, DiskStore::open(&b)?);
    let k = key();
    // v2 blocks as large as the node's datagrams (one UDP/IP packet) carry.
    let block = (o.mtu as usize - 28 - broadside::wire::DATA_HEADER_LEN) as u32;
    let mut data = vec![0u8; o.file_size];
    for i in 0..2 * o.files_per_side {
        let n = name(i);
        let (newer, older) = if i < o.files_per_side {
            (&mut sa, &mut sb)
        } else {
            (&mut sb, &mut sa)
        };
        for v in 1..=2u64 {
            Xoshiro256PlusPlus::seed_from_u64(i as u64 * 1000 + v).fill_bytes(&mut data);
            let src = scratch.join(&n);
            std::fs::write(&src, &data).map_err(rt("write source"))?;
            newer.publish_blocks(&k, &src, &n, block)?;
            if v == 1 {
                older.publish_blocks(&k, &src, &n, block)?;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok((a, b))
}

/// Files newer on the sender that the receiver's store (or TCP directory) holds
/// complete at version 2, and their bytes.
fn complete_in(store: &Path, names: &[String]) -> (usize, u64) {
    let Ok(s) = DiskStore::open_read_only(store) else {
        return (0, 0);
    };
    let mut s = s;
    let Ok((certs, _)) = s.load(&TrustedKeys::new([key().public()])) else {
        return (0, 0);
    };
    let done: Vec<&Certificate> = certs
        .iter()
        .filter(|c| c.version() == 2 && names.iter().any(|n| n == c.name()))
        .collect();
    (done.len(), done.iter().map(|c| c.size()).sum())
}

fn sent_by(side: usize, o: &ContactOptions) -> Vec<String> {
    let n = o.files_per_side;
    (side * n..(side + 1) * n).map(name).collect()
}

/// Runs Broadside through a fresh lab; rows for A->B and B->A.
pub fn run_broadside(o: &ContactOptions) -> Result<Vec<Row>, NodeError> {
    let dir = o.work_dir.join("broadside");
    let (sa, sb) = prepare(&dir, o)?;
    let (ia, ib) = addrs();
    let mut lab = Lab::create(&o.prefix, ia, ib, o.mtu)?;
    let payload = o.mtu as usize - 28;
    // Pace data (payload bytes) at 95% of the link's IP-packet bandwidth.
    let rate = (o.bandwidth as f64 * 0.95 * payload as f64 / o.mtu as f64) as u64;
    let stop = Arc::new(AtomicBool::new(false));
    let mut nodes = Vec::new();
    for (store, me, peer, ns, seed) in [
        (&sa, ia, ib, &lab.a.netns, 1),
        (&sb, ib, ia, &lab.b.netns, 2),
    ] {
        let opts = NodeOptions {
            store: store.clone(),
            bind: SocketAddr::from((me, PORT)),
            beacon_to: vec![SocketAddr::from((peer, PORT))],
            trusted: vec![key().public()],
            config: Config {
                packet_size: payload,
                send_rate: rate,
                seed,
                ..Config::default()
            },
            status_interval: Duration::from_secs(3600),
            socket_buffer: 4 << 20,
            ..NodeOptions::default()
        };
        let stop = stop.clone();
        nodes.push(spawn_in_netns(ns, move || {
            let mut node = Node::new(opts)?;
            node.run(&stop, None)?;
            Ok::<_, NodeError>(node.endpoint().counters().file_bytes_received)
        })?);
    }
    let relay = Relay::start_tun(&mut lab, &o.impairment())?;
    std::thread::sleep(o.lead + o.contact + o.grace);
    stop.store(true, Ordering::Relaxed);
    let stats = relay.stop();
    let mut received = Vec::new();
    for n in nodes {
        received.push(
            n.join()
                .map_err(|_| NodeError::Runtime("node thread panicked".into()))???,
        );
    }
    drop(lab);
    let row = |direction, bytes_received, to: &Path, from_side, relay| {
        let (files_complete, bytes_complete) = complete_in(to, &sent_by(from_side, o));
        Row {
            loss: o.loss,
            direction,
            protocol: "broadside",
            bytes_received,
            files_complete,
            bytes_complete,
            relay,
        }
    };
    Ok(vec![
        row("A->B", received[1], &sb, 0, stats.a_to_b),
        row("B->A", received[0], &sa, 1, stats.b_to_a),
    ])
}

#[derive(Default)]
struct TcpCounts {
    received: AtomicU64,
    files: AtomicU64,
    bytes_complete: AtomicU64,
}

fn tcp_send(
    store: PathBuf,
    names: Vec<String>,
    peer: SocketAddr,
    stop: Arc<AtomicBool>,
) -> Result<(), NodeError> {
    let s = DiskStore::open_read_only(&store)?;
    for n in names {
        let cert = s
            .current(&n)
            .ok_or_else(|| NodeError::Runtime(format!("{n} missing")))?;
        let data = std::fs::read(store.join(&n)).map_err(rt("read"))?;
        let mut head = (cert.encoded().len() as u32).to_be_bytes().to_vec();
        head.extend_from_slice(cert.encoded());
        let msg = [head, data].concat();
        // One stream per file; restarted from the beginning until acknowledged.
        while !stop.load(Ordering::Relaxed) {
            if tcp_push(&msg, peer, &stop) {
                break;
            }
            if !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
    Ok(())
}

/// One attempt: connect (1 s timeout, like Broadside-IP), send, wait for the
/// receiver's one-byte acknowledgement. True when acknowledged.
fn tcp_push(msg: &[u8], peer: SocketAddr, stop: &AtomicBool) -> bool {
    let mut s = loop {
        match TcpStream::connect_timeout(&peer, Duration::from_secs(1)) {
            Ok(s) => break s,
            // Timed out: restart at once (the second passed). Refused: after 1 s.
            Err(e) if e.kind() == ErrorKind::TimedOut => {}
            Err(_) => std::thread::sleep(Duration::from_secs(1)),
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
    };
    let tick = Some(Duration::from_millis(100));
    if s.set_write_timeout(tick).is_err() || s.set_read_timeout(tick).is_err() {
        return false;
    }
    let _ = s.set_nodelay(true);
    let mut off = 0;
    while off < msg.len() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match s.write(&msg[off..]) {
            Ok(0) => return false,
            Ok(n) => off += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return false,
        }
    }
    let mut ack = [0u8; 1];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut ack) {
            Ok(1) => return true,
            Ok(_) => return false,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return false,
        }
    }
    false
}

fn tcp_receive_one(
    mut s: TcpStream,
    dir: &Path,
    counts: &TcpCounts,
    stop: &AtomicBool,
) -> Option<()> {
    s.set_read_timeout(Some(Duration::from_millis(100))).ok()?;
    let mut read_exact = |buf: &mut [u8], count: bool| -> Option<()> {
        let mut off = 0;
        while off < buf.len() {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            match s.read(&mut buf[off..]) {
                Ok(0) => return None,
                Ok(n) => {
                    off += n;
                    if count {
                        counts.received.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => return None,
            }
        }
        Some(())
    };
    let mut len = [0u8; 4];
    read_exact(&mut len, false)?;
    let mut cert = vec![0u8; (u32::from_be_bytes(len) as usize).min(1 << 16)];
    read_exact(&mut cert, false)?;
    let cert = Certificate::decode(&cert).ok()?;
    cert.check_trusted(&TrustedKeys::new([key().public()]))
        .ok()?;
    let mut data = vec![0u8; usize::try_from(cert.size()).ok()?];
    // Counted as it arrives, in chunks, so a stream cut short still counts.
    for chunk in data.chunks_mut(64 << 10) {
        read_exact(chunk, true)?;
    }
    let mut h = ContentHasher::new();
    h.update(&data);
    if h.finish() != cert.content_hash() {
        return None;
    }
    let tmp = dir.join(format!(".tmp-{}", cert.name()));
    let mut f = std::fs::File::create(&tmp).ok()?;
    f.write_all(&data).ok()?;
    f.sync_all().ok()?;
    std::fs::rename(&tmp, dir.join(cert.name())).ok()?;
    std::fs::write(dir.join(format!("{}.bscert", cert.name())), cert.encoded()).ok()?;
    counts.files.fetch_add(1, Ordering::Relaxed);
    counts
        .bytes_complete
        .fetch_add(cert.size(), Ordering::Relaxed);
    s.set_write_timeout(Some(Duration::from_secs(1))).ok()?;
    s.write_all(&[1]).ok()
}

fn tcp_listen(
    listener: TcpListener,
    dir: PathBuf,
    counts: Arc<TcpCounts>,
    stop: Arc<AtomicBool>,
) -> Result<(), NodeError> {
    listener.set_nonblocking(true).map_err(rt("listener"))?;
    let mut handlers = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).map_err(rt("stream"))?;
                let (dir, counts, stop) = (dir.clone(), counts.clone(), stop.clone());
                handlers.push(std::thread::spawn(move || {
                    tcp_receive_one(s, &dir, &counts, &stop)
                }));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => return Err(rt("accept")(e)),
        }
    }
    for h in handlers {
        let _ = h.join();
    }
    Ok(())
}

/// Runs the TCP baseline through a fresh lab; rows for A->B and B->A.
pub fn run_tcp(o: &ContactOptions) -> Result<Vec<Row>, NodeError> {
    let dir = o.work_dir.join("tcp");
    let (sa, sb) = prepare(&dir, o)?;
    let (ia, ib) = addrs();
    let mut lab = Lab::create(&o.prefix, ia, ib, o.mtu)?;
    let stop = Arc::new(AtomicBool::new(false));
    let counts = [
        Arc::new(TcpCounts::default()),
        Arc::new(TcpCounts::default()),
    ];
    let mut threads = Vec::new();
    // Listeners first (receivers into DIR/recv-a, DIR/recv-b), then senders.
    for (i, (me, ns)) in [(ia, &lab.a.netns), (ib, &lab.b.netns)]
        .into_iter()
        .enumerate()
    {
        let out = dir.join(["recv-a", "recv-b"][i]);
        std::fs::create_dir_all(&out).map_err(rt("recv dir"))?;
        let listener = crate::netlab::in_netns(ns, move || {
            TcpListener::bind(SocketAddr::from((me, TCP_PORT)))
        })?
        .map_err(rt("tcp bind"))?;
        let (c, st) = (counts[i].clone(), stop.clone());
        threads.push(std::thread::spawn(move || tcp_listen(listener, out, c, st)));
    }
    for (i, (store, peer, ns)) in [(&sa, ib, &lab.a.netns), (&sb, ia, &lab.b.netns)]
        .into_iter()
        .enumerate()
    {
        let (store, names, st) = (store.clone(), sent_by(i, o), stop.clone());
        let h = spawn_in_netns(ns, move || {
            tcp_send(store, names, SocketAddr::from((peer, TCP_PORT)), st)
        })?;
        threads.push(std::thread::spawn(move || {
            h.join()
                .map_err(|_| NodeError::Runtime("sender panicked".into()))?
                .and_then(|r| r)
        }));
    }
    let relay = Relay::start_tun(&mut lab, &o.impairment())?;
    std::thread::sleep(o.lead + o.contact + o.grace);
    let snapshot: Vec<(u64, u64, u64)> = counts
        .iter()
        .map(|c| {
            (
                c.received.load(Ordering::Relaxed),
                c.files.load(Ordering::Relaxed),
                c.bytes_complete.load(Ordering::Relaxed),
            )
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    let stats = relay.stop();
    for t in threads {
        t.join()
            .map_err(|_| NodeError::Runtime("tcp thread panicked".into()))??;
    }
    drop(lab);
    let row = |direction, (received, files, complete): (u64, u64, u64), relay| Row {
        loss: o.loss,
        direction,
        protocol: "tcp",
        bytes_received: received,
        files_complete: files as usize,
        bytes_complete: complete,
        relay,
    };
    Ok(vec![
        row("A->B", snapshot[1], stats.a_to_b),
        row("B->A", snapshot[0], stats.b_to_a),
    ])
}

/// Runs both protocols at each loss rate; Broadside then TCP per rate.
pub fn run(o: &ContactOptions, losses: &[f64]) -> Result<Vec<Row>, NodeError> {
    std::fs::create_dir_all(&o.work_dir).map_err(rt("work dir"))?;
    let mut rows = Vec::new();
    for &loss in losses {
        let o = ContactOptions { loss, ..o.clone() };
        let started = Instant::now();
        rows.extend(run_broadside(&o)?);
        rows.extend(run_tcp(&o)?);
        eprintln!(
            "contact: loss {loss}: both runs in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(rows)
}

/// The table as aligned text.
pub fn table(rows: &[Row], contact: Duration) -> String {
    let mut s = format!(
        "{:>5}  {:<5}  {:<9}  {:>12}  {:>14}  {:>15}\n",
        "loss", "dir", "protocol", "received MB", "complete files", "complete MB"
    );
    for r in rows {
        s += &format!(
            "{:>4.0}%  {:<5}  {:<9}  {:>12.2}  {:>14}  {:>15.2}\n",
            r.loss * 100.0,
            r.direction,
            r.protocol,
            r.bytes_received as f64 / 1e6,
            r.files_complete,
            r.bytes_complete as f64 / 1e6
        );
    }
    s + &format!(
        "(file bytes within one {:.0} s contact)\n",
        contact.as_secs_f64()
    )
}
