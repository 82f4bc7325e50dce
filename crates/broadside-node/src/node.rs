//! The UDP driver: one socket, one [`DiskStore`], one sans-IO endpoint.
//! Beacons go to the configured broadcast (or unicast) addresses; everything
//! else is unicast to the peer's source address. The loop feeds datagrams and
//! timeouts in, drains transmits and events out, logs every event, and writes
//! a status report to the store now and then.

use crate::store::DiskStore;
use crate::NodeError;
use broadside::endpoint::{Destination, Event};
use broadside::{Config, Endpoint, Instant, PublicKey, TrustedKeys};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    /// Protocol tunables.
    pub config: Config,
    /// How often to write the status file.
    pub status_interval: Duration,
    /// Socket buffer size to request, bytes.
    pub socket_buffer: usize,
}

/// A running node.
pub struct Node {
    socket: UdpSocket,
    endpoint: Endpoint<SocketAddr>,
    store: DiskStore,
    opts: NodeOptions,
    clock: std::time::Instant,
    log: Box<dyn FnMut(&str) + Send>,
    last_status: std::time::Instant,
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

/// The status of a store read from disk: files (certificates that verify;
/// contents not re-hashed) and partial transfers; no peers or counters.
pub fn offline_status(store: &DiskStore) -> Status {
    let certs = store.certificates();
    Status {
        store: store.root().display().to_string(),
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
        other => format!("{other:?}"),
    }
}

impl Node {
    /// Opens the store, loads and verifies its files, binds the socket.
    /// `log` receives one line per event or load issue.
    pub fn new(opts: NodeOptions, mut log: Box<dyn FnMut(&str) + Send>) -> Result<Node, NodeError> {
        opts.config
            .validate()
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        if opts.trusted.is_empty() {
            return Err(NodeError::Usage(
                "no trusted provider keys: give at least one with --trust KEY or --trust-file FILE"
                    .into(),
            ));
        }
        let trusted = TrustedKeys::new(opts.trusted.iter().copied());
        let mut store = DiskStore::open(&opts.store)?;
        let (certs, issues) = store.load(&trusted)?;
        for i in issues {
            log(&format!("store: {}: {}", i.path.display(), i.problem));
        }
        let socket = bind_udp(opts.bind, opts.socket_buffer)?;
        let clock = std::time::Instant::now();
        let endpoint = Endpoint::new(opts.config.clone(), trusted, certs, Instant::ZERO)
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        log(&format!(
            "serving {} files from {} on {}",
            endpoint.files().count(),
            opts.store.display(),
            socket
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default()
        ));
        Ok(Node {
            socket,
            endpoint,
            store,
            opts,
            clock,
            log,
            last_status: clock,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, NodeError> {
        self.socket
            .local_addr()
            .map_err(|e| NodeError::Runtime(e.to_string()))
    }

    /// The protocol state.
    pub fn endpoint(&self) -> &Endpoint<SocketAddr> {
        &self.endpoint
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
            (self.log)(&format!("cannot write status {}: {e}", path.display()));
        }
    }

    fn transmit_some(&mut self) -> usize {
        let mut sent = 0;
        while sent < 256 {
            let now = self.now();
            let Some(t) = self.endpoint.poll_transmit(now, &mut self.store) else {
                break;
            };
            sent += 1;
            let targets = match t.destination {
                Destination::Peer(a) => vec![a],
                Destination::Broadcast => self.opts.beacon_to.clone(),
            };
            for to in targets {
                if let Err(e) = self.socket.send_to(&t.payload, to) {
                    if e.kind() != ErrorKind::WouldBlock {
                        (self.log)(&format!("send to {to}: {e}"));
                    }
                }
            }
        }
        sent
    }

    fn receive(&mut self, buf: &mut [u8], wait: Duration) -> Result<usize, NodeError> {
        let rt = |e: std::io::Error| NodeError::Runtime(format!("socket: {e}"));
        let mut got = 0;
        self.socket.set_nonblocking(true).map_err(rt)?;
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    got += 1;
                    let now = self.now();
                    self.endpoint
                        .handle_datagram(now, from, &buf[..n], &mut self.store);
                    if got >= 256 {
                        return Ok(got);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // ICMP errors from earlier sends (peer not listening) surface here: ignore.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(rt(e)),
            }
        }
        if got == 0 && !wait.is_zero() && wait < Duration::from_millis(2) {
            // Socket timeouts are rounded to scheduler ticks; a paced sender
            // needs finer waits, and the socket buffer holds what arrives meanwhile.
            std::thread::sleep(wait);
        } else if got == 0 && !wait.is_zero() {
            self.socket.set_nonblocking(false).map_err(rt)?;
            self.socket.set_read_timeout(Some(wait)).map_err(rt)?;
            match self.socket.recv_from(buf) {
                Ok((n, from)) => {
                    got += 1;
                    let now = self.now();
                    self.endpoint
                        .handle_datagram(now, from, &buf[..n], &mut self.store);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock
                            | ErrorKind::TimedOut
                            | ErrorKind::ConnectionRefused
                            | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(rt(e)),
            }
        }
        Ok(got)
    }

    /// Runs until `stop` is set or `until` passes.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        until: Option<std::time::Instant>,
    ) -> Result<(), NodeError> {
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) && until.is_none_or(|u| std::time::Instant::now() < u) {
            let now = self.now();
            if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
                self.endpoint.handle_timeout(now, &mut self.store);
            }
            let sent = self.transmit_some();
            while let Some(e) = self.endpoint.poll_event() {
                (self.log)(&describe(&e));
            }
            if self.last_status.elapsed() >= self.opts.status_interval {
                self.last_status = std::time::Instant::now();
                self.write_status();
            }
            let now = self.now();
            let wait = match self.endpoint.poll_timeout() {
                _ if sent > 0 => Duration::ZERO,
                Some(t) => t.saturating_since(now).min(Duration::from_millis(50)),
                None => Duration::from_millis(50),
            };
            self.receive(&mut buf, wait)?;
        }
        self.write_status();
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
