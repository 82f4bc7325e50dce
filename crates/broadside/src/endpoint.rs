//! The Broadside state machine: one [`Endpoint`] per node, talking to any
//! number of peers identified by a caller-chosen address type `A`.
//!
//! It ties beacons, discovery sessions (as initiator and responder), offers,
//! segment senders and receivers together, enforces the security rules
//! (trusted signatures, highest version wins, content hash checked before a
//! file is committed, rate limits) and reports everything as [`Event`]s.
//!
//! Exchange of one file: the side with the newer version sends an *Offer*
//! (its certificate). The receiver verifies it and answers with a *Want*
//! carrying its receive vector for the first incomplete segment (possibly
//! loaded from storage: that is how a transfer resumes, with the same peer or
//! another). The sender then cycles through the blocks not set in its send
//! vector; the receiver sends *Ack*s (receive vectors) according to
//! [`AckPolicy`](crate::transfer::AckPolicy), on duplicates and when the
//! sender falls silent. When the whole file is in, the receiver checks its
//! hash, commits it atomically through [`Storage`] and sends *Close*.

use crate::beacon::{self, SyncCache};
use crate::bitvec::BitVec;
use crate::cert::{CertError, Certificate, TrustedKeys};
use crate::counters::{Counters, PacketKind};
use crate::discovery::{Initiator, LocalFile, Params, RecordsReply, Responder, Step};
use crate::id::{ContentHasher, FileId, Id160, InstanceId};
use crate::ratelimit::TokenBucket;
use crate::storage::{Partial, Storage, StorageError};
use crate::time::Instant;
use crate::transfer::{BlockKind, Layout, SegmentReceiver, SegmentSender};
use crate::wire::{self, Action, CloseCode, Message, MsgType, WireError};
use core::fmt::Debug;
use core::time::Duration;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, VecDeque};

pub use crate::wire::CloseCode as CloseStatus;

/// Tunables. [`Config::default`] follows the paper where it says something.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Largest datagram, bytes (paper: 2304, the 802.11 frame payload).
    pub packet_size: usize,
    /// Files per discovery group `g` (paper: 500).
    pub group_size: usize,
    /// Hash functions per Bloom filter (paper: 12).
    pub hash_count: u8,
    /// Beacon period.
    pub beacon_interval: Duration,
    /// Discovery retransmission timeout (paper: restart after 1 s).
    pub discovery_timeout: Duration,
    /// Discovery retransmissions before a sync is abandoned.
    pub discovery_retries: u32,
    /// Offer retransmission timeout.
    pub offer_timeout: Duration,
    /// Offer retransmissions before an offer is abandoned.
    pub offer_retries: u32,
    /// The receiver re-sends its vector when the sender has been silent this long (doubling).
    pub ack_idle: Duration,
    /// A transfer whose peer is silent this long is stopped (the partial is kept).
    pub transfer_timeout: Duration,
    /// At most one duplicate-triggered ack per this interval.
    pub dup_ack_holdoff: Duration,
    /// Data pacing in bytes per second; 0 means unpaced.
    pub send_rate: u64,
    /// Largest file a node accepts.
    pub max_file_size: u64,
    /// Beacons accepted per peer per second (burst: twice that).
    pub beacon_rate: f64,
    /// Discovery requests (filters, records) accepted per peer per second (burst: twice that).
    pub request_rate: f64,
    /// Transfer requests (offers, wants) accepted per peer per second; the
    /// burst is twice that or two per group member, whichever is larger,
    /// since one round can plan up to `group_size` exchanges at once.
    pub transfer_rate: f64,
    /// Most peers tracked at once.
    pub max_peers: usize,
    /// Files sent to one peer at a time (at least 1). The others requested
    /// by that peer wait their turn: see [`Endpoint::poll_transmit`].
    pub uploads_per_peer: usize,
    /// Hash pairs remembered as synchronised.
    pub sync_cache: usize,
    /// Seed of all randomness (groups, salts, session and node ids).
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            packet_size: 2304,
            group_size: 500,
            hash_count: 12,
            beacon_interval: Duration::from_millis(500),
            discovery_timeout: Duration::from_secs(1),
            discovery_retries: 4,
            offer_timeout: Duration::from_secs(1),
            offer_retries: 4,
            ack_idle: Duration::from_millis(100),
            transfer_timeout: Duration::from_secs(5),
            dup_ack_holdoff: Duration::from_millis(20),
            send_rate: 50_000_000,
            max_file_size: 4 << 30,
            beacon_rate: 10.0,
            request_rate: 200.0,
            transfer_rate: 500.0,
            max_peers: 64,
            uploads_per_peer: 1,
            sync_cache: 1024,
            seed: 0,
        }
    }
}

/// A configuration value outside what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid config {field} = {value}: allowed {allowed}")]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// Its value.
    pub value: String,
    /// What is allowed.
    pub allowed: String,
}

impl Config {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value: String, allowed: String| {
            Err(ConfigError {
                field,
                value,
                allowed,
            })
        };
        if !(512..=65_507).contains(&self.packet_size) {
            return err(
                "packet_size",
                self.packet_size.to_string(),
                "512..=65507 bytes".into(),
            );
        }
        let max_group = (self.packet_size - wire::PLAN_HEADER_LEN) * 4;
        if !(1..=max_group.min(65_535)).contains(&self.group_size) {
            return err(
                "group_size",
                self.group_size.to_string(),
                format!("1..={}", max_group.min(65_535)),
            );
        }
        if !(1..=wire::MAX_HASH_COUNT).contains(&self.hash_count) {
            return err(
                "hash_count",
                self.hash_count.to_string(),
                format!("1..={}", wire::MAX_HASH_COUNT),
            );
        }
        for (field, d) in [
            ("beacon_interval", self.beacon_interval),
            ("discovery_timeout", self.discovery_timeout),
            ("offer_timeout", self.offer_timeout),
            ("ack_idle", self.ack_idle),
            ("transfer_timeout", self.transfer_timeout),
        ] {
            if d.is_zero() {
                return err(field, "0".into(), "a positive duration".into());
            }
        }
        for (field, r) in [
            ("beacon_rate", self.beacon_rate),
            ("request_rate", self.request_rate),
            ("transfer_rate", self.transfer_rate),
        ] {
            if !(r.is_finite() && r > 0.0) {
                return err(field, r.to_string(), "a positive number per second".into());
            }
        }
        if self.max_peers == 0 {
            return err("max_peers", "0".into(), "at least 1".into());
        }
        if self.uploads_per_peer == 0 {
            return err("uploads_per_peer", "0".into(), "at least 1".into());
        }
        Ok(())
    }

    fn params(&self) -> Params {
        Params {
            group_size: self.group_size,
            hash_count: self.hash_count,
            packet_size: self.packet_size,
        }
    }
    fn block_size(&self) -> u32 {
        (self.packet_size - wire::DATA_HEADER_LEN) as u32
    }
    fn segment_blocks(&self) -> u32 {
        (((self.packet_size - wire::ACK_HEADER_LEN) * 8) as u32).min(wire::MAX_SEGMENT_BLOCKS)
    }
}

/// Where a datagram goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination<A> {
    /// The beacon broadcast address(es) the driver is configured with.
    Broadcast,
    /// One peer.
    Peer(A),
}

/// A datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit<A> {
    /// Where to.
    pub destination: Destination<A>,
    /// The datagram.
    pub payload: Vec<u8>,
    /// Its counter class.
    pub kind: PacketKind,
}

/// Why something from a peer was refused. Every refusal leaves the node's
/// files and partial transfers as they were.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RejectReason {
    /// The datagram did not parse.
    #[error("malformed packet: {0}")]
    Malformed(WireError),
    /// The certificate did not decode, verify, or come from a trusted provider.
    #[error("certificate refused: {0}")]
    Certificate(CertError),
    /// An offer of a version not newer than the one held (a replay).
    #[error("offer of {name} version {offered} refused: version {have} held")]
    StaleVersion {
        /// File name.
        name: String,
        /// Version held.
        have: u16,
        /// Version offered.
        offered: u16,
    },
    /// An offered file exceeds the configured maximum.
    #[error("file of {size} bytes refused: at most {max} allowed")]
    FileTooLarge {
        /// Offered size.
        size: u64,
        /// Maximum.
        max: u64,
    },
    /// The received content does not hash to the certificate's content hash.
    #[error("content of {name} version {version} does not match its certificate; discarded")]
    ContentMismatch {
        /// File name.
        name: String,
        /// Version.
        version: u16,
    },
    /// A want or ack that does not fit the file (bad segment, vector length, block size).
    #[error("invalid receive vector: {0}")]
    InvalidVector(&'static str),
    /// A data packet whose length does not match its block.
    #[error("data block of wrong length")]
    BadBlock,
    /// Too many packets of this kind from this peer.
    #[error("rate limit exceeded for {0:?} packets")]
    RateLimited(MsgType),
    /// The peer table is full.
    #[error("peer table full")]
    PeerTableFull,
    /// Local storage failed.
    #[error("{0}")]
    Storage(StorageError),
}

/// Something that happened, for the log and for tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<A> {
    /// A synchronisation began.
    SyncStarted {
        /// Peer.
        peer: A,
        /// Whether this node initiated.
        initiator: bool,
    },
    /// The initiator processed every group.
    SyncFinished {
        /// Peer.
        peer: A,
        /// Groups processed.
        rounds: u16,
    },
    /// The initiator gave up after retransmissions.
    SyncAbandoned {
        /// Peer.
        peer: A,
        /// Round reached.
        round: u16,
    },
    /// The responder decided a file must move (discovery found it).
    Candidate {
        /// Peer.
        peer: A,
        /// File.
        file: FileId,
        /// Push (this node sends) or pull (this node receives).
        action: Action,
    },
    /// A file transfer started or resumed.
    TransferStarted {
        /// Sender.
        peer: A,
        /// File name.
        name: String,
        /// Version being received.
        version: u16,
        /// Blocks already held from a stored vector.
        resumed_blocks: u32,
        /// Blocks in the file.
        total_blocks: u32,
    },
    /// A newer version was received, verified and committed.
    FileUpdated {
        /// Sender.
        peer: A,
        /// File name.
        name: String,
        /// New version.
        version: u16,
        /// New instance.
        instance: InstanceId,
    },
    /// A receive stopped because the sender fell silent; the partial is kept.
    TransferStalled {
        /// Sender.
        peer: A,
        /// File name.
        name: String,
        /// Blocks held.
        received_blocks: u32,
        /// Blocks in the file.
        total_blocks: u32,
    },
    /// An offer this node made ended.
    OfferClosed {
        /// Receiver.
        peer: A,
        /// File name.
        name: String,
        /// How it ended; `None` if the receiver never answered.
        status: Option<CloseStatus>,
    },
    /// Something from a peer was refused, with the reason.
    Rejected {
        /// Peer.
        peer: A,
        /// Why.
        reason: RejectReason,
    },
}

struct PeerState {
    last_seen: Instant,
    /// Token buckets: beacons, discovery requests, transfer requests.
    buckets: [TokenBucket; 3],
    last_beacon: Option<(u32, Id160)>,
    /// Whether the current rate-limit episode was logged, per bucket.
    limited_reported: [bool; 3],
    retry_after: Instant,
}

enum OfferStage {
    AwaitWant,
    Sending,
}

struct Offer {
    cert: Certificate,
    stage: OfferStage,
    deadline: Instant,
    retries: u32,
}

struct Fetch<A> {
    peer: A,
    cert: Certificate,
    layout: Layout,
    received: BitVec,
    segment: SegmentReceiver,
}

struct Upload {
    cert: Certificate,
    layout: Layout,
    sender: SegmentSender,
    /// Order in which the receiver asked (its Want arrived).
    seq: u64,
}

struct InitiatorSlot {
    initiator: Initiator,
    their_hash: Id160,
    my_hash: Id160,
}

/// A snapshot of one incoming transfer, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchStatus<A> {
    /// Sender.
    pub peer: A,
    /// File name.
    pub name: String,
    /// Version being received.
    pub version: u16,
    /// Blocks held.
    pub received_blocks: u32,
    /// Blocks in the file.
    pub total_blocks: u32,
}

/// A snapshot of one peer, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerStatus<A> {
    /// Address.
    pub peer: A,
    /// Last packet from it.
    pub last_seen: Instant,
    /// Its last beacon: file count and content hash.
    pub last_beacon: Option<(u32, Id160)>,
}

/// A Broadside node's protocol state.
pub struct Endpoint<A> {
    cfg: Config,
    trusted: TrustedKeys,
    node_id: u64,
    rng: Xoshiro256PlusPlus,
    files: BTreeMap<FileId, Certificate>,
    local: BTreeMap<FileId, LocalFile>,
    by_instance: BTreeMap<InstanceId, FileId>,
    content_hash: Id160,
    peers: BTreeMap<A, PeerState>,
    sync_cache: SyncCache,
    initiators: BTreeMap<A, InitiatorSlot>,
    responders: BTreeMap<A, Responder>,
    offers: BTreeMap<(A, InstanceId), Offer>,
    fetches: BTreeMap<FileId, Fetch<A>>,
    transfer_ids: BTreeMap<u32, FileId>,
    uploads: BTreeMap<(A, u32), Upload>,
    last_upload: Option<(A, u32)>,
    next_upload_seq: u64,
    /// Last data block from each peer we fetch from, for any of our fetches.
    data_from: BTreeMap<A, Instant>,
    next_transfer: u32,
    queue: VecDeque<Transmit<A>>,
    events: VecDeque<Event<A>>,
    counters: Counters,
    next_beacon: Instant,
    pacer: Option<TokenBucket>,
}

impl<A: Clone + Ord + Debug> Endpoint<A> {
    /// A node holding `files` (already verified by the caller's store).
    /// Certificates from untrusted providers are left out.
    pub fn new(
        cfg: Config,
        trusted: TrustedKeys,
        files: Vec<Certificate>,
        now: Instant,
    ) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        let pacer = (cfg.send_rate > 0).then(|| {
            let burst = (cfg.send_rate as f64 * 0.005).max(8.0 * cfg.packet_size as f64);
            TokenBucket::new(cfg.send_rate as f64, burst, now)
        });
        let mut ep = Endpoint {
            node_id: rng.random(),
            next_transfer: rng.random(),
            rng,
            trusted,
            files: BTreeMap::new(),
            local: BTreeMap::new(),
            by_instance: BTreeMap::new(),
            content_hash: Id160::default(),
            peers: BTreeMap::new(),
            sync_cache: SyncCache::new(cfg.sync_cache),
            initiators: BTreeMap::new(),
            responders: BTreeMap::new(),
            offers: BTreeMap::new(),
            fetches: BTreeMap::new(),
            transfer_ids: BTreeMap::new(),
            uploads: BTreeMap::new(),
            last_upload: None,
            next_upload_seq: 0,
            data_from: BTreeMap::new(),
            queue: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            next_beacon: now,
            pacer,
            cfg,
        };
        for c in files {
            // A newer local version replaces an older one; others are ignored.
            let _ = ep.add_file(c);
        }
        ep.rehash();
        Ok(ep)
    }

    /// Adds or replaces a local file (e.g. one just published). Refused if
    /// its provider is untrusted or a version at least as new is held.
    pub fn add_file(&mut self, cert: Certificate) -> Result<(), RejectReason> {
        cert.check_trusted(&self.trusted)
            .map_err(RejectReason::Certificate)?;
        if let Some(old) = self.files.get(&cert.file_id()) {
            if old.version() >= cert.version() {
                return Err(RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: old.version(),
                    offered: cert.version(),
                });
            }
            self.by_instance.remove(&old.instance_id());
        }
        self.by_instance.insert(cert.instance_id(), cert.file_id());
        self.local.insert(
            cert.file_id(),
            LocalFile {
                file_id: cert.file_id(),
                instance: cert.instance_id(),
                version: cert.version(),
            },
        );
        self.files.insert(cert.file_id(), cert);
        self.rehash();
        Ok(())
    }

    fn rehash(&mut self) {
        self.content_hash = beacon::content_hash(self.local.values().map(|f| &f.instance));
    }

    /// The files held, by fileId.
    pub fn files(&self) -> impl Iterator<Item = &Certificate> {
        self.files.values()
    }
    /// The advertised content hash.
    pub fn content_hash(&self) -> Id160 {
        self.content_hash
    }
    /// Counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    /// The config.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// Incoming transfers in progress.
    pub fn fetches(&self) -> Vec<FetchStatus<A>> {
        self.fetches
            .values()
            .map(|f| FetchStatus {
                peer: f.peer.clone(),
                name: f.cert.name().into(),
                version: f.cert.version(),
                received_blocks: f.received.count_ones(),
                total_blocks: f.received.len(),
            })
            .collect()
    }
    /// Known peers.
    pub fn peers(&self) -> Vec<PeerStatus<A>> {
        self.peers
            .iter()
            .map(|(a, p)| PeerStatus {
                peer: a.clone(),
                last_seen: p.last_seen,
                last_beacon: p.last_beacon,
            })
            .collect()
    }
    /// Number of segments being sent.
    pub fn upload_count(&self) -> usize {
        self.uploads.len()
    }
    /// Whether a sync, offer or transfer is under way.
    pub fn is_busy(&self) -> bool {
        !(self.initiators.is_empty()
            && self.offers.is_empty()
            && self.fetches.is_empty()
            && self.uploads.is_empty())
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event<A>> {
        self.events.pop_front()
    }

    fn send(&mut self, to: Destination<A>, payload: Vec<u8>) {
        let kind = Message::parse(&payload)
            .map(|m| m.msg_type().class())
            .unwrap_or(PacketKind::Control);
        self.queue.push_back(Transmit {
            destination: to,
            payload,
            kind,
        });
    }

    fn send_to(&mut self, peer: &A, msg: Message<'_>) {
        self.send(Destination::Peer(peer.clone()), msg.to_vec());
    }

    fn reject(&mut self, peer: &A, reason: RejectReason) {
        self.events.push_back(Event::Rejected {
            peer: peer.clone(),
            reason,
        });
    }

    // ---------------------------------------------------------------- input

    /// Handles one datagram from `from`.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        store: &mut dyn Storage,
    ) {
        if !self.admit_peer(now, &from) {
            return;
        }
        let msg = match Message::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                self.counters.malformed += 1;
                if self.take(now, &from, 1, None) {
                    self.reject(&from, RejectReason::Malformed(e));
                }
                return;
            }
        };
        let kind = msg.msg_type();
        let limited = match kind {
            MsgType::Beacon => !self.take(now, &from, 0, Some(kind)),
            MsgType::Filters | MsgType::Records => !self.take(now, &from, 1, Some(kind)),
            MsgType::Offer | MsgType::Want => !self.take(now, &from, 2, Some(kind)),
            _ => false,
        };
        if limited {
            return;
        }
        self.counters.rx.add(kind.class(), bytes.len());
        match msg {
            Message::Beacon {
                node,
                file_count,
                content_hash,
            } => self.on_beacon(now, &from, node, file_count, content_hash),
            Message::Filters {
                session,
                round,
                salt,
                k,
                file_filter,
                version_filter,
                ..
            } => self.on_filters(
                now,
                &from,
                session,
                round,
                salt,
                k,
                file_filter,
                version_filter,
            ),
            Message::Match {
                session,
                round,
                salt,
                k,
                filter,
            } => {
                let step = match self.initiators.get_mut(&from) {
                    Some(s) => s.initiator.on_match(now, session, round, salt, k, filter),
                    None => Step::Ignored,
                };
                self.apply_step(now, &from, step);
            }
            Message::Records {
                session,
                round,
                seq,
                total,
                records,
            } => self.on_records(now, &from, session, round, seq, total, records),
            Message::Plan {
                session,
                round,
                count,
                codes,
            } => {
                let step = match self.initiators.get_mut(&from) {
                    Some(s) => s.initiator.on_plan(now, session, round, count, codes),
                    None => Step::Ignored,
                };
                self.apply_step(now, &from, step);
            }
            Message::Offer { cert } => self.on_offer(now, &from, cert, store),
            Message::Want {
                transfer,
                instance,
                block_size,
                segment,
                vector,
            } => self.on_want(now, &from, transfer, instance, block_size, segment, vector),
            Message::Data {
                transfer,
                block,
                bytes,
            } => self.on_data(now, &from, transfer, block, bytes, store),
            Message::Ack { transfer, vector } => self.on_ack(now, &from, transfer, &vector),
            Message::Close { instance, status } => self.on_close(now, &from, instance, status),
        }
    }

    fn admit_peer(&mut self, now: Instant, from: &A) -> bool {
        if let Some(p) = self.peers.get_mut(from) {
            p.last_seen = now;
            return true;
        }
        if self.peers.len() >= self.cfg.max_peers {
            let idle = self.cfg.transfer_timeout * 6;
            let busy: Vec<A> = self
                .initiators
                .keys()
                .chain(self.responders.keys())
                .cloned()
                .collect();
            self.peers
                .retain(|a, p| busy.contains(a) || now.saturating_since(p.last_seen) < idle);
        }
        if self.peers.len() >= self.cfg.max_peers {
            self.counters.rate_limited += 1;
            return false;
        }
        let c = &self.cfg;
        self.peers.insert(
            from.clone(),
            PeerState {
                last_seen: now,
                buckets: [
                    TokenBucket::new(c.beacon_rate, 2.0 * c.beacon_rate, now),
                    TokenBucket::new(c.request_rate, 2.0 * c.request_rate, now),
                    TokenBucket::new(
                        c.transfer_rate,
                        (2.0 * c.transfer_rate).max(2.0 * c.group_size as f64),
                        now,
                    ),
                ],
                last_beacon: None,
                limited_reported: [false; 3],
                retry_after: now,
            },
        );
        true
    }

    /// Takes a token from `bucket` (0 beacons, 1 discovery, 2 transfer);
    /// logs the first refusal of an episode. Malformed packets (`kind ==
    /// None`) draw from the discovery bucket and are never logged as limited.
    fn take(&mut self, now: Instant, from: &A, bucket: usize, kind: Option<MsgType>) -> bool {
        let ok = self
            .peers
            .get_mut(from)
            .is_some_and(|p| p.buckets[bucket].try_take(now, 1.0));
        match kind {
            Some(k) => self.after_limit(from, ok, k, bucket),
            None => ok,
        }
    }

    fn after_limit(&mut self, from: &A, ok: bool, kind: MsgType, bucket: usize) -> bool {
        let Some(p) = self.peers.get_mut(from) else {
            return ok;
        };
        if ok {
            p.limited_reported[bucket] = false;
        } else {
            self.counters.rate_limited += 1;
            if !p.limited_reported[bucket] {
                p.limited_reported[bucket] = true;
                self.reject(from, RejectReason::RateLimited(kind));
            }
        }
        ok
    }

    fn on_beacon(&mut self, now: Instant, from: &A, node: u64, count: u32, hash: Id160) {
        if node == self.node_id {
            return; // our own broadcast, looped back
        }
        let Some(p) = self.peers.get_mut(from) else {
            return;
        };
        p.last_beacon = Some((count, hash));
        let retry_after = p.retry_after;
        let mine = (self.files.len() as u32, self.content_hash);
        if hash == self.content_hash
            || self.sync_cache.contains(hash, self.content_hash)
            || self.initiators.contains_key(from)
            || self.responding_to(now, from)
            || now < retry_after
            || !beacon::should_initiate(mine, (count, hash))
        {
            return;
        }
        let session = self.rng.random();
        let files: Vec<LocalFile> = self.local.values().copied().collect();
        let mut initiator = Initiator::new(
            session,
            &files,
            self.cfg.params(),
            self.cfg.discovery_timeout,
            self.cfg.discovery_retries,
            &mut self.rng,
        );
        let step = initiator.start(now);
        self.events.push_back(Event::SyncStarted {
            peer: from.clone(),
            initiator: true,
        });
        self.initiators.insert(
            from.clone(),
            InitiatorSlot {
                initiator,
                their_hash: hash,
                my_hash: self.content_hash,
            },
        );
        self.apply_step(now, from, step);
    }

    /// Whether `peer` is running a sync with us as responder (then we do not
    /// start a second one the other way).
    fn responding_to(&self, now: Instant, peer: &A) -> bool {
        let live =
            self.cfg.discovery_timeout * (self.cfg.discovery_retries + 1) + self.offer_wait();
        self.responders
            .get(peer)
            .is_some_and(|r| now.saturating_since(r.last_active) < live)
    }

    fn apply_step(&mut self, now: Instant, peer: &A, step: Step) {
        match step {
            Step::Ignored => {}
            Step::Send(pkts) => {
                for p in pkts {
                    self.send(Destination::Peer(peer.clone()), p);
                }
            }
            Step::Exchange(list) => {
                for (file, action) in list {
                    if action == Action::Pull {
                        // The responder pulls: this node (initiator) offers.
                        if let Some(cert) = self.files.get(&file).cloned() {
                            self.start_offer(now, peer, cert);
                        } else {
                            self.resolve(now, peer, &file);
                        }
                    }
                }
            }
            Step::Done => {
                if let Some(slot) = self.initiators.remove(peer) {
                    self.sync_cache.insert(slot.their_hash, slot.my_hash);
                    self.events.push_back(Event::SyncFinished {
                        peer: peer.clone(),
                        rounds: slot.initiator.rounds(),
                    });
                }
            }
        }
    }

    /// One planned exchange with `peer` ended; the initiator may move on.
    fn resolve(&mut self, now: Instant, peer: &A, file: &FileId) {
        let step = match self.initiators.get_mut(peer) {
            Some(s) => s.initiator.resolve(now, file),
            None => return,
        };
        self.apply_step(now, peer, step);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_filters(
        &mut self,
        now: Instant,
        from: &A,
        session: u32,
        round: u16,
        salt: u32,
        k: u8,
        ff: &[u8],
        vf: &[u8],
    ) {
        let mut slot = self.responders.remove(from);
        let fresh = slot.as_ref().is_none_or(|r| !r.is_session(session));
        if let Some(reply) = Responder::on_filters(
            &mut slot,
            now,
            &self.local,
            self.cfg.params(),
            session,
            round,
            salt,
            k,
            ff,
            vf,
        ) {
            if fresh {
                self.events.push_back(Event::SyncStarted {
                    peer: from.clone(),
                    initiator: false,
                });
            }
            self.send(Destination::Peer(from.clone()), reply);
        }
        if let Some(r) = slot {
            self.responders.insert(from.clone(), r);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_records(
        &mut self,
        now: Instant,
        from: &A,
        session: u32,
        round: u16,
        seq: u16,
        total: u16,
        recs: &[u8],
    ) {
        let Some(r) = self.responders.get_mut(from) else {
            return;
        };
        let Some(RecordsReply::Plan(plan, pushes, decided)) =
            r.on_records(now, &self.local, session, round, seq, total, recs)
        else {
            return;
        };
        self.send(Destination::Peer(from.clone()), plan);
        for (file, action) in decided {
            self.events.push_back(Event::Candidate {
                peer: from.clone(),
                file,
                action,
            });
        }
        for file in pushes {
            if let Some(cert) = self.files.get(&file).cloned() {
                self.start_offer(now, from, cert);
            }
        }
    }

    fn start_offer(&mut self, now: Instant, peer: &A, cert: Certificate) {
        let key = (peer.clone(), cert.instance_id());
        if self.offers.contains_key(&key) {
            return;
        }
        self.send_to(
            peer,
            Message::Offer {
                cert: cert.encoded(),
            },
        );
        let deadline = now + self.cfg.offer_timeout;
        self.offers.insert(
            key,
            Offer {
                cert,
                stage: OfferStage::AwaitWant,
                deadline,
                retries: 0,
            },
        );
    }

    fn close(&mut self, peer: &A, instance: InstanceId, status: CloseCode) {
        self.send_to(peer, Message::Close { instance, status });
    }

    fn on_offer(&mut self, now: Instant, from: &A, bytes: &[u8], store: &mut dyn Storage) {
        let cert = match Certificate::decode(bytes)
            .and_then(|c| c.check_trusted(&self.trusted).map(|()| c))
        {
            Ok(c) => c,
            Err(e) => {
                self.reject(from, RejectReason::Certificate(e));
                self.close(from, Id160::hash(&[bytes]), CloseCode::Refused);
                return;
            }
        };
        let (file, instance) = (cert.file_id(), cert.instance_id());
        let Some(have) = self.files.get(&file) else {
            self.close(from, instance, CloseCode::NotCommon);
            return self.resolve(now, from, &file);
        };
        if have.instance_id() == instance {
            self.close(from, instance, CloseCode::HaveNewer);
            return self.resolve(now, from, &file);
        }
        if have.version() >= cert.version() {
            let reason = RejectReason::StaleVersion {
                name: cert.name().into(),
                have: have.version(),
                offered: cert.version(),
            };
            self.reject(from, reason);
            self.close(from, instance, CloseCode::HaveNewer);
            return self.resolve(now, from, &file);
        }
        if cert.size() > self.cfg.max_file_size {
            self.reject(
                from,
                RejectReason::FileTooLarge {
                    size: cert.size(),
                    max: self.cfg.max_file_size,
                },
            );
            self.close(from, instance, CloseCode::Refused);
            return self.resolve(now, from, &file);
        }
        if let Some(f) = self.fetches.get(&file) {
            if f.peer == *from && f.cert.instance_id() == instance {
                // A repeated offer: our Want may have been lost.
                let want = self.want_message(&file);
                if let Some(w) = want {
                    self.send_to(from, w);
                }
            } else {
                self.close(from, instance, CloseCode::Busy);
                self.resolve(now, from, &file);
            }
            return;
        }
        let Some(layout) = Layout::new(
            cert.size(),
            self.cfg.block_size(),
            self.cfg.segment_blocks(),
        ) else {
            self.reject(
                from,
                RejectReason::FileTooLarge {
                    size: cert.size(),
                    max: self.cfg.max_file_size,
                },
            );
            self.close(from, instance, CloseCode::Refused);
            return self.resolve(now, from, &file);
        };
        let received = match store.partial_load(&cert) {
            Ok(Some(p))
                if p.block_size == layout.block_size() && p.received.len() == layout.blocks() =>
            {
                p.received
            }
            Ok(_) => BitVec::new(layout.blocks()),
            Err(e) => {
                self.reject(from, RejectReason::Storage(e));
                self.close(from, instance, CloseCode::Failed);
                return self.resolve(now, from, &file);
            }
        };
        self.events.push_back(Event::TransferStarted {
            peer: from.clone(),
            name: cert.name().into(),
            version: cert.version(),
            resumed_blocks: received.count_ones(),
            total_blocks: layout.blocks(),
        });
        let transfer = self.new_transfer_id(file);
        let placeholder = SegmentReceiver::new(transfer, 0, 0, &received, now);
        self.fetches.insert(
            file,
            Fetch {
                peer: from.clone(),
                cert,
                layout,
                received,
                segment: placeholder,
            },
        );
        self.next_segment(now, file, store);
    }

    fn new_transfer_id(&mut self, file: FileId) -> u32 {
        self.next_transfer = self.next_transfer.wrapping_add(1);
        self.transfer_ids.insert(self.next_transfer, file);
        self.next_transfer
    }

    /// Starts the first incomplete segment of a fetch, or finishes the file.
    fn next_segment(&mut self, now: Instant, file: FileId, store: &mut dyn Storage) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        let next = (0..)
            .map_while(|s| f.layout.segment(s))
            .find(|&(first, count)| f.received.slice(first, count).count_ones() < count);
        match next {
            None => self.finish_fetch(now, file, store),
            Some((first, count)) => {
                self.transfer_ids.remove(&f.segment.transfer);
                let transfer = self.new_transfer_id(file);
                if let Some(f) = self.fetches.get_mut(&file) {
                    f.segment = SegmentReceiver::new(transfer, first, count, &f.received, now);
                }
                if let Some(w) = self.want_message(&file) {
                    let peer = self.fetches.get(&file).map(|f| f.peer.clone());
                    if let Some(p) = peer {
                        self.send_to(&p, w);
                    }
                }
            }
        }
    }

    fn want_message(&self, file: &FileId) -> Option<Message<'static>> {
        let f = self.fetches.get(file)?;
        Some(Message::Want {
            transfer: f.segment.transfer,
            instance: f.cert.instance_id(),
            block_size: f.layout.block_size() as u16,
            segment: f.segment.first(),
            vector: f.segment.vector().clone(),
        })
    }

    /// Persists the vector, then sends it (so whatever is acknowledged survives a crash).
    fn send_ack(&mut self, now: Instant, file: FileId, store: &mut dyn Storage) {
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let partial = Partial {
            block_size: f.layout.block_size(),
            received: f.received.clone(),
        };
        if let Err(e) = store.partial_persist(&f.cert, &partial) {
            return self.fail_fetch(now, file, RejectReason::Storage(e));
        }
        f.segment.acked(now);
        let (peer, msg) = (
            f.peer.clone(),
            Message::Ack {
                transfer: f.segment.transfer,
                vector: f.segment.vector().clone(),
            },
        );
        self.send_to(&peer, msg);
    }

    fn remove_fetch(&mut self, file: &FileId) -> Option<Fetch<A>> {
        let f = self.fetches.remove(file)?;
        self.transfer_ids.remove(&f.segment.transfer);
        Some(f)
    }

    fn fail_fetch(&mut self, now: Instant, file: FileId, reason: RejectReason) {
        if let Some(f) = self.remove_fetch(&file) {
            self.reject(&f.peer, reason);
            self.close(&f.peer, f.cert.instance_id(), CloseCode::Failed);
            self.resolve(now, &f.peer, &file);
        }
    }

    fn finish_fetch(&mut self, now: Instant, file: FileId, store: &mut dyn Storage) {
        let Some(f) = self.remove_fetch(&file) else {
            return;
        };
        let (peer, cert) = (f.peer, f.cert);
        let verdict = hash_partial(store, &cert).map(|h| h == cert.content_hash());
        let outcome = match verdict {
            Ok(true) => match self.files.get(&file) {
                Some(have) if have.version() >= cert.version() => Err(RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: have.version(),
                    offered: cert.version(),
                }),
                _ => store.partial_commit(&cert).map_err(RejectReason::Storage),
            },
            Ok(false) => Err(RejectReason::ContentMismatch {
                name: cert.name().into(),
                version: cert.version(),
            }),
            Err(e) => Err(RejectReason::Storage(e)),
        };
        match outcome {
            Ok(()) => {
                // Trust and version were checked on offer and just above.
                let _ = self.add_file(cert.clone());
                self.events.push_back(Event::FileUpdated {
                    peer: peer.clone(),
                    name: cert.name().into(),
                    version: cert.version(),
                    instance: cert.instance_id(),
                });
                self.close(&peer, cert.instance_id(), CloseCode::Complete);
            }
            Err(reason) => {
                // Discarding a partial is best effort; the committed file is untouched either way.
                let _ = store.partial_discard(&cert);
                self.reject(&peer, reason);
                self.close(&peer, cert.instance_id(), CloseCode::Failed);
            }
        }
        self.resolve(now, &peer, &file);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_want(
        &mut self,
        now: Instant,
        from: &A,
        transfer: u32,
        instance: InstanceId,
        block_size: u16,
        first: u32,
        vector: BitVec,
    ) {
        if let Some(up) = self.uploads.get_mut(&(from.clone(), transfer)) {
            if !up.sender.on_vector(&vector, now) {
                self.reject(from, RejectReason::InvalidVector("vector length changed"));
            }
            return;
        }
        let Some(cert) = self
            .by_instance
            .get(&instance)
            .and_then(|f| self.files.get(f))
            .cloned()
        else {
            self.close(from, instance, CloseCode::Gone);
            return;
        };
        if usize::from(block_size) > self.cfg.packet_size - wire::DATA_HEADER_LEN || block_size < 16
        {
            return self.reject(from, RejectReason::InvalidVector("block size"));
        }
        let Some(layout) =
            Layout::new(cert.size(), u32::from(block_size), wire::MAX_SEGMENT_BLOCKS)
        else {
            return self.reject(from, RejectReason::InvalidVector("block size"));
        };
        let fits = first
            .checked_add(vector.len())
            .is_some_and(|end| end <= layout.blocks());
        if vector.is_empty() || !fits {
            return self.reject(
                from,
                RejectReason::InvalidVector("segment outside the file"),
            );
        }
        if self.uploads.len() >= self.cfg.max_peers * 4 {
            return self.reject(from, RejectReason::RateLimited(MsgType::Want));
        }
        if let Some(o) = self.offers.get_mut(&(from.clone(), instance)) {
            o.stage = OfferStage::Sending;
        }
        self.next_upload_seq += 1;
        self.uploads.insert(
            (from.clone(), transfer),
            Upload {
                cert,
                layout,
                sender: SegmentSender::new(first, vector, now),
                seq: self.next_upload_seq,
            },
        );
    }

    fn on_data(
        &mut self,
        now: Instant,
        from: &A,
        transfer: u32,
        block: u16,
        bytes: &[u8],
        store: &mut dyn Storage,
    ) {
        let Some(&file) = self.transfer_ids.get(&transfer) else {
            return;
        };
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        if f.peer != *from || f.segment.transfer != transfer {
            return;
        }
        let rel = u32::from(block);
        // The peer is alive and serving us: fetches waiting their turn behind
        // this one stay open (see `fetch_timers`).
        self.data_from.insert(from.clone(), now);
        match f.segment.classify(rel) {
            BlockKind::OutOfRange => self.reject(from, RejectReason::BadBlock),
            BlockKind::Duplicate { resumed } => {
                self.counters.duplicate_blocks += 1;
                if resumed {
                    self.counters.resumed_blocks_resent += 1;
                }
                if f.segment.duplicate(now, self.cfg.dup_ack_holdoff) {
                    self.send_ack(now, file, store);
                }
            }
            BlockKind::New => {
                let abs = f.segment.first() + rel;
                let (offset, len) = f.layout.block_range(abs);
                if bytes.len() != len {
                    return self.reject(from, RejectReason::BadBlock);
                }
                if let Err(e) = store.partial_write(&f.cert, offset, bytes) {
                    return self.fail_fetch(now, file, RejectReason::Storage(e));
                }
                self.counters.file_bytes_received += len as u64;
                f.received.set(abs);
                let due = f.segment.mark(rel, now);
                let complete = f.segment.is_complete();
                if due {
                    self.send_ack(now, file, store);
                }
                if complete {
                    self.next_segment(now, file, store);
                }
            }
        }
    }

    fn on_ack(&mut self, now: Instant, from: &A, transfer: u32, vector: &BitVec) {
        let key = (from.clone(), transfer);
        let Some(up) = self.uploads.get_mut(&key) else {
            return;
        };
        if !up.sender.on_vector(vector, now) {
            return self.reject(
                from,
                RejectReason::InvalidVector("vector length does not match the segment"),
            );
        }
        if up.sender.is_complete() {
            let instance = up.cert.instance_id();
            self.uploads.remove(&key);
            // Wait for the receiver's next Want or its Close.
            if let Some(o) = self.offers.get_mut(&(from.clone(), instance)) {
                o.stage = OfferStage::AwaitWant;
                o.deadline = now + self.cfg.offer_timeout;
                o.retries = 0;
            }
        }
    }

    fn on_close(&mut self, now: Instant, from: &A, instance: InstanceId, status: CloseCode) {
        let Some(offer) = self.offers.remove(&(from.clone(), instance)) else {
            return;
        };
        self.uploads
            .retain(|(a, _), u| !(a == from && u.cert.instance_id() == instance));
        self.events.push_back(Event::OfferClosed {
            peer: from.clone(),
            name: offer.cert.name().into(),
            status: Some(status),
        });
        self.resolve(now, from, &offer.cert.file_id());
    }

    // ---------------------------------------------------------------- timers

    /// The earliest time [`handle_timeout`](Self::handle_timeout) or
    /// [`poll_transmit`](Self::poll_transmit) has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.next_beacon;
        let mut consider = |x: Instant| t = t.min(x);
        for s in self.initiators.values() {
            match s.initiator.deadline() {
                Some(d) => consider(d),
                None => {
                    if let Some((since, _)) = s.initiator.pending() {
                        consider(since + self.offer_wait());
                    }
                }
            }
        }
        for o in self.offers.values() {
            if matches!(o.stage, OfferStage::AwaitWant) {
                consider(o.deadline);
            }
        }
        for f in self.fetches.values() {
            consider(f.segment.idle_deadline(self.cfg.ack_idle, self.ack_cap()));
        }
        for u in self.uploads.values() {
            consider(u.sender.last_heard + self.cfg.transfer_timeout);
        }
        if self.uploads.values().any(|u| !u.sender.is_complete()) {
            if let Some(p) = &self.pacer {
                consider(p.ready_at(self.cfg.packet_size as f64));
            }
        }
        Some(t)
    }

    /// Longest interval between the idle acks of a fetch: three per
    /// `transfer_timeout`, so that a fetch waiting its turn stays alive at the
    /// sender even if one or two of them are lost.
    fn ack_cap(&self) -> Duration {
        self.cfg.transfer_timeout / 3
    }

    fn offer_wait(&self) -> Duration {
        self.cfg.offer_timeout * (self.cfg.offer_retries + 2)
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, store: &mut dyn Storage) {
        if now >= self.next_beacon {
            let msg = Message::Beacon {
                node: self.node_id,
                file_count: self.files.len() as u32,
                content_hash: self.content_hash,
            };
            self.send(Destination::Broadcast, msg.to_vec());
            self.next_beacon = now + self.cfg.beacon_interval;
        }
        self.initiator_timers(now);
        self.offer_timers(now);
        self.fetch_timers(now, store);
        let dead = self.cfg.transfer_timeout;
        let stale: Vec<(A, u32)> = self
            .uploads
            .iter()
            .filter(|(_, u)| now.saturating_since(u.sender.last_heard) >= dead)
            .map(|(k, _)| k.clone())
            .collect();
        for (peer, t) in stale {
            if let Some(u) = self.uploads.remove(&(peer.clone(), t)) {
                if let Some(o) = self.offers.get_mut(&(peer, u.cert.instance_id())) {
                    o.stage = OfferStage::AwaitWant;
                    o.deadline = now;
                }
            }
        }
        let idle = self.cfg.transfer_timeout * 6;
        self.responders
            .retain(|_, r| now.saturating_since(r.last_active) < idle);
        let fetches = &self.fetches;
        self.data_from
            .retain(|a, _| fetches.values().any(|f| f.peer == *a));
    }

    fn initiator_timers(&mut self, now: Instant) {
        let wait = self.offer_wait();
        let peers: Vec<A> = self.initiators.keys().cloned().collect();
        for peer in peers {
            let Some(slot) = self.initiators.get_mut(&peer) else {
                continue;
            };
            if let Some(d) = slot.initiator.deadline() {
                if now < d {
                    continue;
                }
                match slot.initiator.on_timeout(now) {
                    Some(pkts) => self.apply_step(now, &peer, Step::Send(pkts)),
                    None => {
                        let round = slot.initiator.round();
                        self.initiators.remove(&peer);
                        if let Some(p) = self.peers.get_mut(&peer) {
                            p.retry_after = now + self.cfg.discovery_timeout;
                        }
                        self.events.push_back(Event::SyncAbandoned { peer, round });
                    }
                }
                continue;
            }
            // Planned pushes whose offer never came (or whose fetch ended without resolving).
            let Some((since, pending)) = slot.initiator.pending() else {
                continue;
            };
            if now.saturating_since(since) < wait {
                continue;
            }
            let overdue: Vec<FileId> = pending
                .filter(|(file, action)| {
                    **action == Action::Push
                        && self.fetches.get(file).is_none_or(|f| f.peer != peer)
                        || **action == Action::Pull
                            && !self.files.get(file).is_some_and(|c| {
                                self.offers.contains_key(&(peer.clone(), c.instance_id()))
                            })
                })
                .map(|(f, _)| *f)
                .collect();
            if let Some(slot) = self.initiators.get_mut(&peer) {
                slot.initiator.recheck_after(now);
            }
            for file in overdue {
                self.resolve(now, &peer, &file);
            }
        }
    }

    fn offer_timers(&mut self, now: Instant) {
        let due: Vec<(A, InstanceId)> = self
            .offers
            .iter()
            .filter(|(_, o)| matches!(o.stage, OfferStage::AwaitWant) && now >= o.deadline)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let Some(o) = self.offers.get_mut(&key) else {
                continue;
            };
            if o.retries >= self.cfg.offer_retries {
                if let Some(o) = self.offers.remove(&key) {
                    self.events.push_back(Event::OfferClosed {
                        peer: key.0.clone(),
                        name: o.cert.name().into(),
                        status: None,
                    });
                    self.resolve(now, &key.0, &o.cert.file_id());
                }
                continue;
            }
            o.retries += 1;
            o.deadline = now + self.cfg.offer_timeout;
            let bytes = Message::Offer {
                cert: o.cert.encoded(),
            }
            .to_vec();
            self.send(Destination::Peer(key.0.clone()), bytes);
        }
    }

    /// Idle acks, and stalls. A fetch stalls when its *peer* has sent no
    /// data block for any of our fetches for `transfer_timeout`: a sender
    /// serves one file (or `uploads_per_peer`) at a time, so a fetch waiting
    /// its turn gets no data for as long as the files before it take, while
    /// the sender is alive and busy for us. Its idle acks (at least three per
    /// `transfer_timeout`) keep it alive at the sender meanwhile.
    fn fetch_timers(&mut self, now: Instant, store: &mut dyn Storage) {
        let files: Vec<FileId> = self.fetches.keys().copied().collect();
        let cap = self.ack_cap();
        for file in files {
            let Some(f) = self.fetches.get_mut(&file) else {
                continue;
            };
            let heard = self
                .data_from
                .get(&f.peer)
                .map_or(f.segment.last_data, |&t| t.max(f.segment.last_data));
            if now.saturating_since(heard) >= self.cfg.transfer_timeout {
                let Some(f) = self.remove_fetch(&file) else {
                    continue;
                };
                // Keep what we have for a later resume, with this or another peer.
                let _ = store.partial_persist(
                    &f.cert,
                    &Partial {
                        block_size: f.layout.block_size(),
                        received: f.received.clone(),
                    },
                );
                self.events.push_back(Event::TransferStalled {
                    peer: f.peer.clone(),
                    name: f.cert.name().into(),
                    received_blocks: f.received.count_ones(),
                    total_blocks: f.received.len(),
                });
                self.resolve(now, &f.peer, &file);
            } else if now >= f.segment.idle_deadline(self.cfg.ack_idle, cap) {
                f.segment.idle_acks += 1;
                self.send_ack(now, file, store);
            }
        }
    }

    // ---------------------------------------------------------------- output

    /// The next datagram to send: queued control packets first, then data
    /// blocks, paced by `send_rate`: round-robin over peers, and for each
    /// peer over at most `uploads_per_peer` of its files, chosen as below.
    ///
    /// A contact ends at a time nobody knows in advance. Serving the files
    /// of a peer round-robin spreads the contact over all of them and, with
    /// more requested than fit, completes none; serving them one after
    /// another completes as many as the contact allows and leaves at most
    /// `uploads_per_peer` partial (kept by the receiver for a later
    /// contact). The order is *fewest unacknowledged blocks first* (ties: the
    /// order the receiver asked in): for a single link this minimises the
    /// number of unfinished files at every instant (shortest remaining
    /// processing time), so whenever the contact ends it has completed the
    /// most files it could; it finishes a file resumed from an earlier
    /// contact before starting a fresh one; and it is sticky, since the file
    /// being served only gets shorter, and so picks up the next segment of a
    /// large file (a new transfer) ahead of files not started.
    ///
    /// A file whose pass over its missing blocks has ended
    /// ([`SegmentSender::in_pass`]) gives way to the next one until the
    /// receiver's vector says which blocks were lost, rather than sending
    /// the blocks still in flight again; with nothing else to send it
    /// starts its next pass at once. Files waiting their turn stay alive on
    /// both sides: see `fetch_timers`.
    pub fn poll_transmit(&mut self, now: Instant, store: &mut dyn Storage) -> Option<Transmit<A>> {
        if let Some(t) = self.queue.pop_front() {
            self.counters.tx.add(t.kind, t.payload.len());
            return Some(t);
        }
        loop {
            let key = self.next_upload()?;
            if let Some(p) = &mut self.pacer {
                if !p.try_take(now, self.cfg.packet_size as f64) {
                    return None;
                }
            }
            let up = self.uploads.get_mut(&key)?;
            self.last_upload = Some(key.clone());
            let Some((rel, abs)) = up.sender.next_block() else {
                continue;
            };
            let (offset, len) = up.layout.block_range(abs);
            let mut buf = vec![0u8; len];
            if let Err(e) = store.read(&up.cert, offset, &mut buf) {
                self.uploads.remove(&key);
                self.reject(&key.0, RejectReason::Storage(e));
                continue;
            }
            let payload = Message::Data {
                transfer: key.1,
                block: rel,
                bytes: &buf,
            }
            .to_vec();
            self.counters.tx.add(PacketKind::Data, payload.len());
            self.counters.file_bytes_sent += len as u64;
            return Some(Transmit {
                destination: Destination::Peer(key.0),
                payload,
                kind: PacketKind::Data,
            });
        }
    }

    /// The key of the upload to send the next data block of.
    fn next_upload(&self) -> Option<(A, u32)> {
        // Uploads are keyed (peer, transfer): each peer's are contiguous.
        let mut chosen: Vec<&(A, u32)> = Vec::new();
        let mut peer: Vec<(&(A, u32), &Upload)> = Vec::new();
        fn flush<'a, A: Ord>(
            n: usize,
            peer: &mut Vec<(&'a (A, u32), &'a Upload)>,
            chosen: &mut Vec<&'a (A, u32)>,
        ) {
            peer.sort_by_key(|(_, u)| (u.sender.remaining(u.layout.blocks()), u.seq));
            let before = chosen.len();
            chosen.extend(
                peer.iter()
                    .filter(|(_, u)| u.sender.in_pass())
                    .take(n)
                    .map(|(k, _)| *k),
            );
            if chosen.len() == before {
                // Every file's pass has ended: re-send rather than idle.
                chosen.extend(peer.iter().take(n).map(|(k, _)| *k));
            }
            peer.clear();
        }
        let n = self.cfg.uploads_per_peer;
        for (k, u) in &self.uploads {
            if u.sender.is_complete() {
                continue;
            }
            if peer.first().is_some_and(|(p, _)| p.0 != k.0) {
                flush(n, &mut peer, &mut chosen);
            }
            peer.push((k, u));
        }
        flush(n, &mut peer, &mut chosen);
        chosen.sort();
        let after = self
            .last_upload
            .as_ref()
            .and_then(|last| chosen.iter().find(|k| **k > last));
        after.or(chosen.first()).map(|k| (*k).clone())
    }
}

/// `H` over a partial file's bytes, read back from storage.
fn hash_partial(store: &mut dyn Storage, cert: &Certificate) -> Result<Id160, StorageError> {
    let mut h = ContentHasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut off = 0u64;
    while off < cert.size() {
        let n = (cert.size() - off).min(buf.len() as u64) as usize;
        store.partial_read(cert, off, &mut buf[..n])?;
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok(h.finish())
}
