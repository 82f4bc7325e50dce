//! The UDP driver: one socket, one [`DiskStore`], one sans-IO endpoint.
//! Beacons go to the configured broadcast (or unicast) addresses; everything
//! else is unicast to the peer's source address. The loop feeds datagrams
//! (received in batches, see [`crate::udp`]) and timeouts in, drains
//! transmits (sent in batches) and events out, logs every event through
//! `tracing`, and on timers writes the status report, writes receive vectors
//! and rescans the store for versions published meanwhile. It waits in one
//! `ppoll`, never blocks otherwise, and stops (after sending what is queued,
//! writing every vector and a last status) when its stop flag is set; a set
//! reload flag makes it ask for new options and rescan the store.

use crate::store::{DiskStore, DEFAULT_PERSIST_BLOCKS};
use crate::udp::{BatchSocket, IoStats, SEND_BATCH};
use crate::NodeError;
use broadside::endpoint::Event;
use broadside::{Config, Endpoint, Instant, PublicKey, TrustedKeys};
use nix::poll::PollFlags;
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tracing::{debug, info, warn};

/// Longest wait for a datagram when the endpoint has no earlier deadline.
const MAX_WAIT: Duration = Duration::from_millis(50);
/// Shortest wait after an idle pass, when a deadline is already due.
const MIN_WAIT: Duration = Duration::from_micros(100);
/// Longest wait while a commit runs in the background: its result closes
/// the transfer.
const COMMIT_POLL: Duration = Duration::from_millis(2);

/// How to run a node.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Store directory.
    pub store: PathBuf,
    /// Address to bind.
    pub bind: SocketAddr,
    /// Where beacons go (broadcast or unicast addresses).
    pub beacon_to: Vec<SocketAddr>,
    /// Providers whose certificates are accepted.
    pub trusted: Vec<PublicKey>,
    /// Providers all of whose files are taken, held or not (must be trusted).
    pub subscribe: Vec<PublicKey>,
    /// Protocol tunables.
    pub config: Config,
    /// How often to write the status file.
    pub status_interval: Duration,
    /// Socket buffer size to request, bytes.
    pub socket_buffer: usize,
    /// How often receive vectors are written.
    pub persist_interval: Duration,
    /// Newly received blocks that force a receive-vector write at once.
    pub persist_blocks: u32,
    /// How often the store is checked for versions published meanwhile.
    pub rescan_interval: Duration,
    /// Use UDP GSO/GRO where the kernel has them.
    pub offload: bool,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            store: PathBuf::from("."),
            bind: SocketAddr::from(([0, 0, 0, 0], 47474)),
            beacon_to: Vec::new(),
            trusted: Vec::new(),
            subscribe: Vec::new(),
            // A random seed: a known one would let anyone forge validation tokens.
            config: Config {
                seed: rand::random(),
                ..Config::default()
            },
            status_interval: Duration::from_secs(1),
            socket_buffer: 8 << 20,
            persist_interval: Duration::from_millis(100),
            persist_blocks: DEFAULT_PERSIST_BLOCKS,
            rescan_interval: Duration::from_secs(1),
            offload: true,
        }
    }
}

/// A running node.
pub struct Node {
    socket: BatchSocket,
    endpoint: Endpoint<SocketAddr>,
    store: DiskStore,
    opts: NodeOptions,
    trusted: TrustedKeys,
    clock: std::time::Instant,
    last_status: std::time::Instant,
    last_persist: std::time::Instant,
    last_rescan: std::time::Instant,
    /// Versions on disk that failed verification (not retried until they change).
    refused: BTreeSet<(String, String)>,
}

/// One file in a status report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// Name.
    pub name: String,
    /// Version.
    pub version: u16,
    /// Size in bytes.
    pub size: u64,
    /// fileId, hex.
    pub file_id: String,
    /// instanceId, hex.
    pub instance_id: String,
    /// Provider key, hex.
    pub provider: String,
}

/// One partial transfer in a status report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct PartialStatus {
    /// Name.
    pub name: String,
    /// Version being received.
    pub version: u16,
    /// Blocks held.
    pub received_blocks: u32,
    /// Blocks in the file.
    pub total_blocks: u32,
    /// The sender, if the transfer is running.
    pub peer: Option<String>,
}

/// One peer in a status report.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PeerReport {
    /// Address.
    pub addr: String,
    /// Seconds since the last packet.
    pub last_seen_secs_ago: f64,
    /// File count from its last beacon.
    pub file_count: Option<u32>,
    /// Content hash from its last beacon, hex.
    pub content_hash: Option<String>,
}

/// Packets and bytes of one kind.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TallyReport {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Counters in a status report.
#[derive(Serialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct CounterReport {
    /// Sent, by kind.
    pub tx: std::collections::BTreeMap<String, TallyReport>,
    /// Received, by kind.
    pub rx: std::collections::BTreeMap<String, TallyReport>,
    /// Unparseable datagrams.
    pub malformed: u64,
    /// Datagrams dropped by rate limits.
    pub rate_limited: u64,
    /// New file bytes received.
    pub file_bytes_received: u64,
    /// File bytes sent.
    pub file_bytes_sent: u64,
    /// Duplicate blocks received.
    pub duplicate_blocks: u64,
    /// Blocks received again although held at resume (should be 0).
    pub resumed_blocks_resent: u64,
}

/// The status of a store and, if one is running, its node.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Status {
    /// Store directory.
    pub store: String,
    /// Whether a node serves the store now (its lock is held).
    pub running: bool,
    /// The serving node's process id.
    pub pid: Option<u32>,
    /// Bound address of the running node.
    pub addr: Option<String>,
    /// Complete files.
    pub files: Vec<FileStatus>,
    /// Partial transfers.
    pub partials: Vec<PartialStatus>,
    /// Known peers.
    pub peers: Vec<PeerReport>,
    /// Counters of the running node.
    pub counters: Option<CounterReport>,
}

fn counters_report(c: &broadside::Counters) -> CounterReport {
    use broadside::PacketKind::*;
    let by = |k: &broadside::counters::ByKind| {
        [
            ("beacon", Beacon),
            ("discovery", Discovery),
            ("control", Control),
            ("data", Data),
            ("ack", Ack),
        ]
        .into_iter()
        .map(|(n, kind)| {
            let t = k.get(kind);
            (
                n.to_string(),
                TallyReport {
                    packets: t.packets,
                    bytes: t.bytes,
                },
            )
        })
        .collect()
    };
    CounterReport {
        tx: by(&c.tx),
        rx: by(&c.rx),
        malformed: c.malformed,
        rate_limited: c.rate_limited,
        file_bytes_received: c.file_bytes_received,
        file_bytes_sent: c.file_bytes_sent,
        duplicate_blocks: c.duplicate_blocks,
        resumed_blocks_resent: c.resumed_blocks_resent,
    }
}

fn file_status(c: &broadside::Certificate) -> FileStatus {
    FileStatus {
        name: c.name().into(),
        version: c.version(),
        size: c.size(),
        file_id: c.file_id().to_hex(),
        instance_id: c.instance_id().to_hex(),
        provider: c.provider().to_hex(),
    }
}

/// The status of a store read from disk: whether a node serves it, files
/// (certificates that verify; contents not re-hashed) and partial transfers
/// of versions newer than the current ones; no peers or counters.
pub fn offline_status(store: &DiskStore) -> Status {
    let certs = store.certificates();
    let pid = store.serving_pid();
    Status {
        store: store.root().display().to_string(),
        running: pid.is_some(),
        pid,
        addr: None,
        files: certs.iter().map(file_status).collect(),
        partials: store
            .partials()
            .into_iter()
            .map(|p| PartialStatus {
                name: p.cert.name().into(),
                version: p.cert.version(),
                received_blocks: p.received_blocks,
                total_blocks: p.total_blocks,
                peer: None,
            })
            .collect(),
        peers: Vec::new(),
        counters: None,
    }
}

/// Describes an event as one log line.
pub fn describe(e: &Event<SocketAddr>) -> String {
    match e {
        Event::Rejected { peer, reason } => format!("rejected from {peer}: {reason}"),
        Event::FileUpdated {
            peer,
            name,
            version,
            ..
        } => format!("updated {name} to version {version} from {peer}"),
        Event::TransferStarted {
            peer,
            name,
            version,
            resumed_blocks,
            total_blocks,
        } => {
            format!("receiving {name} version {version} from {peer}: {resumed_blocks}/{total_blocks} blocks already held")
        }
        Event::TransferStalled {
            peer,
            name,
            received_blocks,
            total_blocks,
        } => {
            format!("transfer of {name} from {peer} stalled at {received_blocks}/{total_blocks} blocks; partial kept")
        }
        Event::SourceSwitched { name, from, to } => {
            format!("receiving {name} from {to} instead of {from}")
        }
        Event::ForkResolved {
            peer,
            name,
            version,
            kept,
            dropped,
        } => format!(
            "{name} version {version} forked (two signed contents) with {peer}: \
             keeping {kept} (the greater id), dropping {dropped}"
        ),
        Event::SyncRetry { peer, after } => format!(
            "sync with {peer} left files unfinished; retrying in {:.1} s",
            after.as_secs_f64()
        ),
        other => format!("{other:?}"),
    }
}

fn log_event(e: &Event<SocketAddr>) {
    match e {
        Event::Rejected { .. } | Event::TransferStalled { .. } | Event::ForkResolved { .. } => {
            warn!("{}", describe(e))
        }
        Event::FileUpdated { .. }
        | Event::TransferStarted { .. }
        | Event::SourceSwitched { .. }
        | Event::SyncRetry { .. } => info!("{}", describe(e)),
        _ => debug!("{}", describe(e)),
    }
}

impl Node {
    /// Opens the store (recovering it), loads and verifies its files, binds the socket.
    pub fn new(opts: NodeOptions) -> Result<Node, NodeError> {
        let trusted = Self::check(&opts)?;
        let mut store = DiskStore::open(&opts.store)?;
        store.set_persist_blocks(opts.persist_blocks);
        let endpoint = Self::load_endpoint(&opts, &trusted, &mut store)?;
        let socket = bind_udp(opts.bind, opts.socket_buffer)?;
        let socket = BatchSocket::new(socket, opts.config.packet_size, opts.offload)
            .map_err(|e| NodeError::Runtime(format!("socket setup: {e}")))?;
        let clock = std::time::Instant::now();
        let (gso, gro) = socket.offload();
        info!(
            files = endpoint.files().count(),
            gso,
            gro,
            "serving {} on {}",
            opts.store.display(),
            socket
                .socket()
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default()
        );
        Ok(Node {
            socket,
            endpoint,
            store,
            opts,
            trusted,
            clock,
            last_status: clock,
            last_persist: clock,
            last_rescan: clock,
            refused: BTreeSet::new(),
        })
    }

    /// Checks options: protocol ranges, trusted keys, positive intervals.
    pub fn check(opts: &NodeOptions) -> Result<TrustedKeys, NodeError> {
        opts.config
            .validate()
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        if let Some(k) = opts.subscribe.iter().find(|k| !opts.trusted.contains(k)) {
            return Err(NodeError::Usage(format!(
                "subscribed provider {k} is not trusted: give it with --trust too"
            )));
        }
        if opts.trusted.is_empty() {
            return Err(NodeError::Usage(
                "no trusted provider keys: give at least one with --trust KEY or --trust-file FILE"
                    .into(),
            ));
        }
        for (what, d) in [
            ("status_interval", opts.status_interval),
            ("persist_interval", opts.persist_interval),
            ("rescan_interval", opts.rescan_interval),
        ] {
            if d.is_zero() {
                return Err(NodeError::Usage(format!(
                    "invalid config {what} = 0: allowed a positive duration"
                )));
            }
        }
        Ok(TrustedKeys::new(opts.trusted.iter().copied()))
    }

    fn load_endpoint(
        opts: &NodeOptions,
        trusted: &TrustedKeys,
        store: &mut DiskStore,
    ) -> Result<Endpoint<SocketAddr>, NodeError> {
        let (certs, issues) = store.load(trusted)?;
        let mut e = Endpoint::new(opts.config.clone(), trusted.clone(), certs, Instant::ZERO)
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        for i in issues {
            warn!("store: {}: {}", i.path.display(), i.problem);
            i.refetch.into_iter().for_each(|f| e.want(f));
        }
        opts.subscribe.iter().for_each(|&k| e.subscribe(k));
        Ok(e)
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, NodeError> {
        self.socket
            .socket()
            .local_addr()
            .map_err(|e| NodeError::Runtime(e.to_string()))
    }

    /// The protocol state.
    pub fn endpoint(&self) -> &Endpoint<SocketAddr> {
        &self.endpoint
    }

    /// Socket counts (system calls, datagrams).
    pub fn io_stats(&self) -> IoStats {
        self.socket.stats()
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.clock.elapsed().as_micros() as u64)
    }

    /// The current status.
    pub fn status(&self) -> Status {
        let now = self.now();
        let fetches = self.endpoint.fetches();
        let mut partials: Vec<PartialStatus> = self
            .store
            .partials()
            .into_iter()
            .map(|p| {
                let live = fetches
                    .iter()
                    .find(|f| f.name == p.cert.name() && f.version == p.cert.version());
                PartialStatus {
                    name: p.cert.name().into(),
                    version: p.cert.version(),
                    received_blocks: live.map_or(p.received_blocks, |f| f.received_blocks),
                    total_blocks: live.map_or(p.total_blocks, |f| f.total_blocks),
                    peer: live.map(|f| f.peer.to_string()),
                }
            })
            .collect();
        partials.sort_by(|a, b| a.name.cmp(&b.name));
        Status {
            store: self.opts.store.display().to_string(),
            running: true,
            pid: Some(std::process::id()),
            addr: self.local_addr().ok().map(|a| a.to_string()),
            files: self.endpoint.files().map(file_status).collect(),
            partials,
            peers: self
                .endpoint
                .peers()
                .into_iter()
                .map(|p| PeerReport {
                    addr: p.peer.to_string(),
                    last_seen_secs_ago: now.saturating_since(p.last_seen).as_secs_f64(),
                    file_count: p.last_beacon.map(|b| b.0),
                    content_hash: p.last_beacon.map(|b| b.1.to_hex()),
                })
                .collect(),
            counters: Some(counters_report(self.endpoint.counters())),
        }
    }

    fn write_status(&mut self) {
        let path = self.store.status_path();
        let tmp = path.with_extension("json.tmp");
        let written = serde_json::to_vec_pretty(&self.status())
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            warn!("cannot write status {}: {e}", path.display());
        }
    }

    fn persist(&mut self) {
        if let Err(e) = self.store.flush_vectors() {
            warn!("cannot write receive vectors: {e}");
        }
    }

    /// Adds versions published into the store since it was loaded, and
    /// has the store remove what killed publishers left.
    fn rescan(&mut self) {
        self.store.tidy();
        for (name, inst) in self.store.current_instances() {
            let held = self
                .endpoint
                .files()
                .any(|c| c.name() == name && c.instance_id().to_hex() == inst);
            let key = (name, inst);
            if held || self.refused.contains(&key) {
                continue;
            }
            match self.store.load_one(&key.0, &self.trusted) {
                Ok(cert) => {
                    let v = cert.version();
                    match self.endpoint.add_file(cert) {
                        Ok(()) => info!("picked up {} version {v} from the store", key.0),
                        Err(e) => {
                            debug!("store: {} version {v} not added: {e}", key.0);
                            self.refused.insert(key);
                        }
                    }
                }
                Err(i) => {
                    warn!("store: {}: {}", i.path.display(), i.problem);
                    i.refetch.into_iter().for_each(|f| self.endpoint.want(f));
                    self.refused.insert(key);
                }
            }
        }
    }

    /// Applies new options: protocol settings and trust rebuild the endpoint
    /// (transfers resume from their stored vectors); the bind address needs a restart.
    fn reconfigure(&mut self, opts: NodeOptions) -> Result<(), NodeError> {
        let trusted = Self::check(&opts)?;
        if opts.bind != self.opts.bind {
            warn!(
                "bind address change to {} ignored: restart the node for it",
                opts.bind
            );
        }
        if opts.config != self.opts.config
            || opts.trusted != self.opts.trusted
            || opts.subscribe != self.opts.subscribe
        {
            self.persist();
            self.endpoint = Self::load_endpoint(&opts, &trusted, &mut self.store)?;
            self.trusted = trusted;
            self.refused.clear();
        }
        self.store.set_persist_blocks(opts.persist_blocks);
        self.opts = NodeOptions {
            bind: self.opts.bind,
            store: self.opts.store.clone(),
            ..opts
        };
        info!("configuration reloaded");
        Ok(())
    }

    /// Sends up to `4 × SEND_BATCH` datagrams, written by the endpoint
    /// straight into the socket's batch; returns how many.
    fn transmit_some(&mut self) -> usize {
        let mut sent = 0;
        while sent < 4 * SEND_BATCH {
            let now = self.now();
            let n =
                self.endpoint
                    .poll_transmits(now, &mut self.store, self.socket.batch(), SEND_BATCH);
            for e in self.socket.flush(&self.opts.beacon_to) {
                debug!("send: {e}");
            }
            sent += n;
            if n < SEND_BATCH {
                break;
            }
        }
        sent
    }

    /// Hands the commits the store finished in the background to the
    /// endpoint (which then closes the transfer and holds the new version).
    fn finish_commits(&mut self) {
        for (cert, result) in self.store.finished_commits() {
            let now = self.now();
            self.endpoint
                .commit_finished(now, &cert, result, &mut self.store);
        }
    }

    fn receive(&mut self) -> Result<usize, NodeError> {
        let now = self.now();
        let Node {
            socket,
            endpoint,
            store,
            ..
        } = self;
        socket
            .receive(|from, d| endpoint.handle_datagram(now, from, d, store))
            .map_err(|e| NodeError::Runtime(format!("socket: {e}")))
    }

    /// How long to wait for a datagram after a pass that sent and received
    /// nothing: until the endpoint's next deadline, at most [`MAX_WAIT`].
    /// A deadline that is already due (`poll_timeout` is the epoch while
    /// datagrams are queued, or a timer fell due meanwhile) is honoured
    /// after [`MIN_WAIT`]: the next pass runs it, and a deadline the
    /// endpoint keeps due without sending costs no busy spin.
    fn idle_wait(&self) -> Duration {
        let now = self.now();
        let max = if self.store.commits_pending() > 0 {
            COMMIT_POLL
        } else {
            MAX_WAIT
        };
        self.endpoint
            .poll_timeout()
            .map_or(max, |t| t.saturating_since(now))
            .clamp(MIN_WAIT, max)
    }

    /// Runs until `stop` is set or `until` passes.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        until: Option<std::time::Instant>,
    ) -> Result<(), NodeError> {
        let opts = self.opts.clone();
        self.run_daemon(
            stop,
            &AtomicBool::new(false),
            &mut || Ok(opts.clone()),
            until,
        )
    }

    /// Runs until `stop` is set or `until` passes; when `reload` is set,
    /// applies the options `reconfigure` returns (an error is logged and
    /// the old options kept) and rescans the store.
    pub fn run_daemon(
        &mut self,
        stop: &AtomicBool,
        reload: &AtomicBool,
        reconfigure: &mut dyn FnMut() -> Result<NodeOptions, NodeError>,
        until: Option<std::time::Instant>,
    ) -> Result<(), NodeError> {
        while !stop.load(Ordering::Relaxed) && until.is_none_or(|u| std::time::Instant::now() < u) {
            if reload.swap(false, Ordering::Relaxed) {
                match reconfigure().and_then(|o| self.reconfigure(o)) {
                    Ok(()) => self.rescan(),
                    Err(e) => warn!("reload failed, old configuration kept: {e}"),
                }
            }
            let now = self.now();
            if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
                self.endpoint.handle_timeout(now, &mut self.store);
            }
            self.finish_commits();
            let sent = self.transmit_some();
            while let Some(e) = self.endpoint.poll_event() {
                log_event(&e);
            }
            let wall = std::time::Instant::now();
            if wall - self.last_persist >= self.opts.persist_interval {
                self.last_persist = wall;
                self.persist();
            }
            if wall - self.last_rescan >= self.opts.rescan_interval {
                self.last_rescan = wall;
                self.rescan();
            }
            if wall - self.last_status >= self.opts.status_interval {
                self.last_status = wall;
                self.write_status();
            }
            let got = self.receive()?;
            if sent == 0 && got == 0 {
                let wait = self.idle_wait();
                self.socket.wait(PollFlags::POLLIN, wait);
            }
        }
        // Drain: commits finish, what the endpoint has queued goes out;
        // vectors and status are written.
        while self.store.commits_pending() > 0 {
            std::thread::sleep(COMMIT_POLL);
            self.finish_commits();
        }
        self.transmit_some();
        self.persist();
        self.write_status();
        info!("stopped; receive vectors and status written");
        Ok(())
    }
}

/// Binds a UDP socket with broadcast allowed and `buffer`-byte kernel buffers (as far as the kernel allows).
pub(crate) fn bind_udp(addr: SocketAddr, buffer: usize) -> Result<UdpSocket, NodeError> {
    let err = |what: &str, e: std::io::Error| {
        NodeError::Usage(format!("cannot {what} UDP socket on {addr}: {e}"))
    };
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| err("create", e))?;
    s.set_broadcast(true)
        .map_err(|e| err("enable broadcast on", e))?;
    // Larger buffers absorb bursts; the kernel may cap them, which is fine.
    let _ = s.set_recv_buffer_size(buffer);
    let _ = s.set_send_buffer_size(buffer);
    s.bind(&addr.into()).map_err(|e| err("bind", e))?;
    Ok(s.into())
}
