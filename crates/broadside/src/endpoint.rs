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
//! another). The sender then sends the blocks not set in its send vector in
//! passes, waiting at the end of each for the vector that reflects it, and
//! keeps at most [`Config::window`] blocks unanswered per peer; the receiver
//! sends *Ack*s (receive vectors) according to
//! [`AckPolicy`](crate::transfer::AckPolicy), at the end of the sender's
//! pass, on duplicates and when the sender falls silent. When the whole file is in, the receiver checks its
//! hash, commits it atomically through [`Storage`] and sends *Close*.
//!
//! Several peers that offer the same version send at once (up to
//! [`Config::sources`]), each its own range of blocks under its own transfer
//! id: see [`Config::sources`] and `Fetch::choose_range`.

use crate::beacon::{self, SyncCache};
use crate::bitvec::BitVec;
use crate::cert::{CertError, Certificate, PublicKey, TrustedKeys};
use crate::counters::{Counters, PacketKind};
use crate::discovery::{Initiator, LocalFile, Params, RecordsReply, Responder, Step};
use crate::id::{ContentHasher, FileId, Id160, InstanceId};
use crate::merkle::{self, Hash, Shape, Tree, TreeBuilder};
use crate::ratelimit::TokenBucket;
use crate::storage::{Partial, Storage, StorageError};
use crate::time::Instant;
use crate::transfer::{BlockKind, Layout, SegmentReceiver, SegmentSender};
use crate::validate::{PeerAddr, Token, Tokens, TOKEN_LEN};
use crate::wire::{self, Action, CloseCode, Message, MsgType, WireError};
use core::time::Duration;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
    /// Seed of all randomness (groups, salts, session and node ids) and of
    /// the address-validation key: a deployment must keep it secret (pick
    /// it at random), or anyone can forge validation tokens.
    pub seed: u64,
    /// Validation tokens stay valid for one to two of these.
    pub token_period: Duration,
    /// Most peers tracked from one network prefix (IPv4 /24, IPv6 /64).
    pub max_peers_per_prefix: usize,
    /// Token packets per second sent to addresses not validated yet (all
    /// together). Each is no larger than the packet it answers, so this
    /// bounds reflected bytes, not amplification.
    pub challenge_rate: f64,
    /// First wait before a sync that left files unfinished is tried again
    /// (doubling per failure up to 64 times this).
    pub retry_backoff: Duration,
    /// A source that delivered no new verified block for this long loses
    /// its slot to another peer that offered the same version.
    pub slow_peer_timeout: Duration,
    /// Most peers one file is fetched from at once (at least 1). Each
    /// sends a different range of blocks under its own transfer id; a
    /// source that finishes its range takes the first range nobody is
    /// sending, else the back half of what another source has left.
    pub sources: usize,
    /// How long a peer that sent a block failing verification is ignored.
    pub penalty: Duration,
    /// The receive vector is persisted after this many new blocks …
    pub persist_blocks: u32,
    /// … or this long after the last persist, whichever comes first.
    pub persist_interval: Duration,
    /// Data blocks a peer may be sent with no vector from it (0: no limit).
    /// A sender faster than its receiver (unpaced, or paced above what the
    /// receiver takes) otherwise overflows the receiver's socket buffer and
    /// sends most blocks twice or more; keep it below what that buffer
    /// holds. The receiver acks at least every `window / 4` new blocks (its
    /// own setting: a sender with half its window still never waits on a
    /// live link); when acks are lost and the window runs dry, the sender
    /// probes as at the end of a pass.
    pub window: u32,
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
            token_period: Duration::from_secs(10),
            max_peers_per_prefix: 16,
            challenge_rate: 10_000.0,
            retry_backoff: Duration::from_secs(1),
            slow_peer_timeout: Duration::from_secs(1),
            sources: 4,
            penalty: Duration::from_secs(60),
            persist_blocks: 256,
            persist_interval: Duration::from_secs(1),
            window: 512,
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
            ("token_period", self.token_period),
            ("retry_backoff", self.retry_backoff),
            ("slow_peer_timeout", self.slow_peer_timeout),
            ("persist_interval", self.persist_interval),
        ] {
            if d.is_zero() {
                return err(field, "0".into(), "a positive duration".into());
            }
        }
        for (field, r) in [
            ("beacon_rate", self.beacon_rate),
            ("request_rate", self.request_rate),
            ("transfer_rate", self.transfer_rate),
            ("challenge_rate", self.challenge_rate),
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
        if self.sources == 0 {
            return err("sources", "0".into(), "at least 1".into());
        }
        if self.max_peers_per_prefix == 0 {
            return err("max_peers_per_prefix", "0".into(), "at least 1".into());
        }
        if self.persist_blocks == 0 {
            return err("persist_blocks", "0".into(), "at least 1".into());
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
    /// A block or hash chunk that fails verification against the
    /// certificate's tree: the peer is dropped as a source and ignored for
    /// `penalty`; blocks verified before are kept.
    #[error("{what} {index} of {name} fails verification against its certificate; peer dropped")]
    Poisoned {
        /// File name.
        name: String,
        /// "block" or "hash chunk".
        what: &'static str,
        /// Its index.
        index: u32,
    },
    /// A v2 certificate whose block does not fit this node's packets.
    #[error("block size {block_size} of {name} does not fit packets of {packet_size} bytes")]
    BlockTooLarge {
        /// File name.
        name: String,
        /// The certificate's block size.
        block_size: u32,
        /// This node's packet size.
        packet_size: usize,
    },
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
    /// A source of a receive lost its slot (too slow, failed verification
    /// or went silent): `to` is the standby peer that takes the slot, or
    /// else a source still sending, which will take over its range.
    SourceSwitched {
        /// File name.
        name: String,
        /// Previous source.
        from: A,
        /// New source.
        to: A,
    },
    /// A sync ended with files unfinished; it is tried again after `after`.
    SyncRetry {
        /// Peer.
        peer: A,
        /// Back-off before the next attempt (at a beacon from any peer).
        after: Duration,
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
    /// Node id of its last beacon (a change means it restarted).
    node: Option<u64>,
    /// Ignored until then (it sent a block that failed verification).
    penalized_until: Instant,
    /// Next retry back-off after a sync that left files unfinished.
    backoff: Duration,
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

/// What a receiver of a v2 file knows of its tree for the current segment.
struct TreeRx {
    shape: Shape,
    root: Hash,
    /// Leaf hashes of the segment's blocks (valid where their chunk's bit is set).
    leaves: Vec<Hash>,
    /// Segment blocks stored before their chunk arrived, to verify when it does.
    unverified: Vec<bool>,
}

/// One source of a fetch: a peer sending one range of blocks under its
/// own transfer id, with its own receive vector.
struct Lane<A> {
    peer: A,
    segment: SegmentReceiver,
    /// v2 only: what is known of the tree for the lane's range.
    tree: Option<TreeRx>,
    /// Hash-chunk bits at the front of the lane's vector (v2; else 0).
    hdr: u32,
    /// Last new verified block or chunk from this source.
    last_progress: Instant,
}

impl<A> Lane<A> {
    /// Whether absolute block `abs` lies in the lane's range.
    fn covers(&self, abs: u32) -> bool {
        let first = self.segment.first();
        abs >= first && abs - first < self.segment.vector().len() - self.hdr
    }
    /// One past the lane's last block.
    fn end(&self) -> u32 {
        self.segment.first() + self.segment.vector().len() - self.hdr
    }
}

struct Fetch<A> {
    cert: Certificate,
    layout: Layout,
    received: BitVec,
    /// v2 only: the tree's shape and root.
    tree: Option<(Shape, Hash)>,
    /// The sources sending now, each a different range (at most
    /// [`Config::sources`]); never empty while the fetch exists.
    lanes: Vec<Lane<A>>,
    /// Peers that offered the same version while every source slot was taken.
    standby: Vec<A>,
    /// New blocks since the vector was last persisted, and when that was.
    unpersisted: u32,
    last_persist: Instant,
}

impl<A: PartialEq> Fetch<A> {
    fn lane(&self, peer: &A) -> Option<&Lane<A>> {
        self.lanes.iter().find(|l| l.peer == *peer)
    }
    fn lane_mut(&mut self, peer: &A) -> Option<&mut Lane<A>> {
        self.lanes.iter_mut().find(|l| l.peer == *peer)
    }
    /// Whether `peer` sends, or stands by to send, this fetch.
    fn has_source(&self, peer: &A) -> bool {
        self.lane(peer).is_some() || self.standby.contains(peer)
    }
    /// Chunk alignment of a lane's first block (1 for v1 files).
    fn align(&self) -> u32 {
        self.tree.map_or(1, |(s, _)| s.chunk_leaves())
    }
    /// The range of blocks a source (other than `except`) should ask for
    /// next: the first missing block no other source is sending, to the
    /// end of its segment; else the back half of what is missing in the
    /// range of the source with the most left to send (work stealing: the
    /// victim's sender learns from its acks that those blocks are held).
    fn choose_range(&self, except: Option<&A>) -> Option<(u32, u32)> {
        let others = || self.lanes.iter().filter(|l| Some(&l.peer) != except);
        let m = self.align();
        let mut at = 0;
        while let Some(b) = zero_from(&self.received, at) {
            if let Some(l) = others().find(|l| l.covers(b)) {
                at = l.end();
                continue;
            }
            let (seg_first, seg_count) = self.layout.segment(self.layout.segment_of(b))?;
            let first = b / m * m;
            // Up to the next source's range, if one starts within the segment.
            let end = others()
                .map(|l| l.segment.first())
                .filter(|&f| f > b)
                .fold(seg_first + seg_count, u32::min);
            return Some((first, end - first));
        }
        let (victim, missing) = others()
            .map(|l| {
                let first = l.segment.first();
                let n = l.end() - first;
                (l, n - self.received.slice(first, n).count_ones())
            })
            .max_by_key(|(_, n)| *n)?;
        if missing == 0 {
            return None;
        }
        let (first, end) = (victim.segment.first(), victim.end());
        let mut b = first;
        for _ in 0..=missing / 2 {
            b = zero_from(&self.received, b)? + 1;
        }
        let start = ((b - 1) / m * m).max(first);
        Some((start, end - start))
    }
}

struct Upload {
    cert: Certificate,
    layout: Layout,
    sender: SegmentSender,
    /// v2: hash-chunk bits at the front of the vector, and the first chunk.
    hdr: u32,
    first_chunk: u32,
    first_block: u32,
    /// Order in which the receiver asked (its Want arrived).
    seq: u64,
    /// When the first re-send pass or probe began (the first pass having ended).
    resending_since: Option<Instant>,
    /// While the pass has ended and no vector came: when to probe next.
    probe_at: Instant,
}

impl Upload {
    /// When a re-sent block stops being worth sending without news from
    /// the receiver: `silence` after the later of the first re-send and the
    /// last vector (none given while blocks are sent for the first time).
    fn quiet_until(&self, silence: Duration) -> Option<Instant> {
        self.resending_since
            .map(|t| t.max(self.sender.last_heard) + silence)
    }
    /// Whether the receiver seems gone: re-sent blocks draw acks at once
    /// from a live receiver (duplicates are acked within `dup_ack_holdoff`,
    /// and a silent sender is acked within `ack_idle`), so with no vector
    /// for `silence` the upload waits for one (or for its
    /// `transfer_timeout`) instead of sending into the void.
    fn paused(&self, now: Instant, silence: Duration) -> bool {
        self.quiet_until(silence).is_some_and(|t| now >= t)
    }
}

struct InitiatorSlot {
    initiator: Initiator,
    their_hash: Id160,
    my_hash: Id160,
    /// Some planned exchange ended neither completed nor refused for a reason.
    failed: bool,
}

/// How a planned exchange ended, for the sync it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Completed, or refused for a stated reason (nothing to retry).
    Done,
    /// Stalled, busy, unanswered or failed: try again later.
    Retry,
}

/// A fetch that ended recently: its last transfer id, so that a sender who
/// missed the Close and keeps sending gets it again.
struct Finished<A> {
    transfer: u32,
    peer: A,
    instance: InstanceId,
    status: CloseCode,
    last_close: Instant,
}

/// Recently ended fetches remembered for lost-Close recovery.
const FINISHED_KEPT: usize = 64;

/// A batch of datagrams written back to back into one buffer
/// ([`Endpoint::poll_transmits`]).
#[derive(Clone, Debug, Default)]
pub struct Batch<A> {
    /// The datagrams, back to back.
    pub buf: Vec<u8>,
    /// Each datagram: destination, byte range in `buf`, counter class.
    pub items: Vec<(Destination<A>, core::ops::Range<usize>, PacketKind)>,
}

impl<A> Batch<A> {
    /// An empty batch (keep it and pass it again: its buffers are reused).
    pub fn new() -> Self {
        Batch {
            buf: Vec::new(),
            items: Vec::new(),
        }
    }
    /// Empties the batch, keeping its capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.items.clear();
    }
    /// The datagrams.
    pub fn iter(&self) -> impl Iterator<Item = (&Destination<A>, &[u8], PacketKind)> {
        self.items
            .iter()
            .map(|(d, r, k)| (d, &self.buf[r.clone()], *k))
    }
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
    /// Complete fetches whose commit the store finishes later.
    committing: BTreeMap<FileId, Fetch<A>>,
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
    tokens: Tokens,
    /// Replies to addresses not validated yet (all of them together).
    challenges: TokenBucket,
    /// Files wanted though not held, and providers subscribed to.
    wanted: BTreeSet<FileId>,
    subscribed: BTreeSet<PublicKey>,
    finished: VecDeque<Finished<A>>,
    /// Trees of files being sent (v2), built once per version.
    trees: BTreeMap<InstanceId, Tree>,
    /// Uploads eligible to send (see `next_upload`); rebuilt when `dirty`.
    eligible: Vec<(A, u32)>,
    eligible_dirty: bool,
    /// The earliest probe of an upload left out of `eligible` for now.
    next_probe: Option<Instant>,
    /// Data blocks sent to each peer since its last vector (Ack or Want).
    unanswered: BTreeMap<A, u32>,
}

impl<A: PeerAddr> Endpoint<A> {
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
        let mut key = [0u8; 32];
        rng.fill(&mut key);
        let mut ep = Endpoint {
            tokens: Tokens::new(key, cfg.token_period),
            challenges: TokenBucket::new(cfg.challenge_rate, cfg.challenge_rate, now),
            wanted: BTreeSet::new(),
            subscribed: BTreeSet::new(),
            finished: VecDeque::new(),
            trees: BTreeMap::new(),
            eligible: Vec::new(),
            eligible_dirty: true,
            next_probe: None,
            unanswered: BTreeMap::new(),
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
            committing: BTreeMap::new(),
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
        self.wanted.remove(&cert.file_id());
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

    /// Asks for a file this node does not hold yet (by fileId): discovery
    /// then treats it as held at version 0, so any peer holding it offers
    /// it (the §5.6 "file required by all devices"). A no-op if it is held.
    pub fn want(&mut self, file: FileId) {
        if self.files.contains_key(&file) || !self.wanted.insert(file) {
            return;
        }
        self.local.insert(
            file,
            LocalFile {
                file_id: file,
                instance: Id160::hash(&[b"broadside want", &file.0]),
                version: 0,
            },
        );
        self.rehash();
    }

    /// Takes every file signed by `provider` (which must also be trusted),
    /// held or not: peers are told at each sync and offer what they hold.
    pub fn subscribe(&mut self, provider: PublicKey) {
        if self.subscribed.insert(provider) {
            self.rehash();
        }
    }

    /// Files wanted and not held yet.
    pub fn wanted(&self) -> impl Iterator<Item = &FileId> {
        self.wanted.iter()
    }

    /// The content hash covers the files held, the files wanted and the
    /// providers subscribed to: a new interest makes peers sync again.
    fn rehash(&mut self) {
        let subs: Vec<Id160> = self
            .subscribed
            .iter()
            .map(|k| Id160::hash(&[b"broadside subscribe", &k.0]))
            .collect();
        self.content_hash =
            beacon::content_hash(self.local.values().map(|f| &f.instance).chain(&subs));
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
                peer: f.lanes[0].peer.clone(),
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
            && self.committing.is_empty()
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
    ///
    /// Nothing is kept for a sender whose address is not validated yet, and
    /// all it can get back is a Token packet no larger than what it sent
    /// (see [`validate`](crate::validate)).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        store: &mut dyn Storage,
    ) {
        let msg = match Message::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                self.counters.malformed += 1;
                if self.peers.contains_key(&from) && self.take(now, &from, 1, None) {
                    self.reject(&from, RejectReason::Malformed(e));
                }
                return;
            }
        };
        let kind = msg.msg_type();
        if let Message::Token { echo, token } = msg {
            self.counters.rx.add(kind.class(), bytes.len());
            return self.on_token(now, &from, echo, token);
        }
        match self.peers.get_mut(&from) {
            Some(p) => p.last_seen = now,
            None => {
                let own = matches!(msg, Message::Beacon { node, .. } if node == self.node_id);
                self.counters.unvalidated += 1;
                if !own {
                    self.challenge(now, &from, bytes.len());
                }
                return;
            }
        }
        if self
            .peers
            .get(&from)
            .is_some_and(|p| now < p.penalized_until)
            && !matches!(kind, MsgType::Beacon | MsgType::Ack | MsgType::Close)
        {
            self.counters.rate_limited += 1;
            return;
        }
        let limited = match kind {
            MsgType::Beacon => !self.take(now, &from, 0, Some(kind)),
            MsgType::Filters | MsgType::Records | MsgType::Interest => {
                !self.take(now, &from, 1, Some(kind))
            }
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
            } => self.on_beacon(now, &from, node, file_count, content_hash, store),
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
            } => self.on_want(
                now, &from, transfer, instance, block_size, segment, vector, store,
            ),
            Message::Data {
                transfer,
                block,
                bytes,
            } => self.on_data(now, &from, transfer, block, bytes, store),
            Message::Ack { transfer, vector } => self.on_ack(now, &from, transfer, &vector),
            Message::Close { instance, status } => self.on_close(now, &from, instance, status),
            Message::Interest { keys } => self.on_interest(now, &from, keys),
            Message::Token { .. } => {}
        }
    }

    /// Asks an address that is not validated to echo a token, if the reply
    /// is at most three times what it sent (it is never larger, in fact:
    /// the smallest packet that gets one is a Token packet itself).
    fn challenge(&mut self, now: Instant, to: &A, received: usize) {
        if wire::TOKEN_PACKET_LEN > received || !self.challenges.try_take(now, 1.0) {
            return;
        }
        let token = self.tokens.issue(to, now);
        self.send_to(
            to,
            Message::Token {
                echo: [0; TOKEN_LEN],
                token,
            },
        );
    }

    /// A Token packet: an echo of ours validates the sender; a token of
    /// theirs is echoed (with ours if we have not validated them yet).
    fn on_token(&mut self, now: Instant, from: &A, echo: Token, token: Token) {
        let absent = [0u8; TOKEN_LEN];
        if echo != absent && !self.peers.contains_key(from) {
            if !self.tokens.check(from, now, &echo) {
                self.counters.unvalidated += 1;
                return;
            }
            if !self.admit_peer(now, from) {
                return;
            }
            // Let the new peer see our content at once, not at the next beacon.
            let beacon = self.beacon_message();
            self.send_to(from, beacon);
        }
        if token == absent {
            return;
        }
        if let Some(p) = self.peers.get_mut(from) {
            p.last_seen = now;
        } else if !self.challenges.try_take(now, 1.0) {
            return;
        }
        let mine = if self.peers.contains_key(from) {
            absent
        } else {
            self.tokens.issue(from, now)
        };
        self.send_to(
            from,
            Message::Token {
                echo: token,
                token: mine,
            },
        );
    }

    fn beacon_message(&self) -> Message<'static> {
        Message::Beacon {
            node: self.node_id,
            file_count: self.files.len() as u32,
            content_hash: self.content_hash,
        }
    }

    /// Whether a peer holds a sync, offer or transfer with this node.
    fn busy_with(&self, a: &A) -> bool {
        self.initiators.contains_key(a)
            || self.responders.contains_key(a)
            || self.offers.keys().any(|(p, _)| p == a)
            || self.fetches.values().any(|f| f.has_source(a))
            || self.uploads.keys().any(|(p, _)| p == a)
    }

    /// Creates the state of a validated peer, within the limits on peers in
    /// all and per network prefix; idle peers make room.
    fn admit_peer(&mut self, now: Instant, from: &A) -> bool {
        let prefix = from.prefix();
        let full = |ep: &Self| {
            ep.peers.len() >= ep.cfg.max_peers
                || ep.peers.keys().filter(|a| a.prefix() == prefix).count()
                    >= ep.cfg.max_peers_per_prefix
        };
        if full(self) {
            let idle = self.cfg.beacon_interval * 4;
            let gone: Vec<A> = self
                .peers
                .iter()
                .filter(|(a, p)| now.saturating_since(p.last_seen) >= idle && !self.busy_with(a))
                .map(|(a, _)| a.clone())
                .collect();
            for a in gone {
                self.peers.remove(&a);
            }
        }
        if full(self) {
            self.counters.rate_limited += 1;
            return false;
        }
        let c = &self.cfg;
        self.peers.insert(
            from.clone(),
            PeerState {
                last_seen: now,
                node: None,
                penalized_until: now,
                backoff: c.retry_backoff,
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

    fn on_beacon(
        &mut self,
        now: Instant,
        from: &A,
        node: u64,
        count: u32,
        hash: Id160,
        store: &mut dyn Storage,
    ) {
        if node == self.node_id {
            return; // our own broadcast, looped back
        }
        let Some(p) = self.peers.get_mut(from) else {
            return;
        };
        p.last_beacon = Some((count, hash));
        let restarted = p.node.is_some_and(|n| n != node);
        p.node = Some(node);
        if restarted {
            self.forget_sessions(now, from, store);
        }
        let Some(p) = self.peers.get(from) else {
            return;
        };
        let retry_after = p.retry_after.max(p.penalized_until);
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
        self.send_interest(from);
        self.initiators.insert(
            from.clone(),
            InitiatorSlot {
                initiator,
                their_hash: hash,
                my_hash: self.content_hash,
                failed: false,
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
                            self.resolve(now, peer, &file, Outcome::Done);
                        }
                    }
                }
            }
            Step::Done => {
                if let Some(slot) = self.initiators.remove(peer) {
                    self.events.push_back(Event::SyncFinished {
                        peer: peer.clone(),
                        rounds: slot.initiator.rounds(),
                    });
                    self.sync_ended(now, peer, &slot);
                }
            }
        }
    }

    /// Records a finished sync as done only if every exchange it planned
    /// ended completed or refused for a reason; otherwise schedules a retry
    /// with doubling back-off (at the next beacon from this or any peer
    /// whose content differs).
    fn sync_ended(&mut self, now: Instant, peer: &A, slot: &InitiatorSlot) {
        let Some(p) = self.peers.get_mut(peer) else {
            return;
        };
        if slot.failed {
            let after = p.backoff;
            p.retry_after = now + after;
            p.backoff = (after * 2).min(self.cfg.retry_backoff * 64);
            self.events.push_back(Event::SyncRetry {
                peer: peer.clone(),
                after,
            });
        } else {
            p.backoff = self.cfg.retry_backoff;
            self.sync_cache.insert(slot.their_hash, slot.my_hash);
        }
    }

    /// A peer restarted (its beacon carries a new node id): what it knew of
    /// our syncs, offers and transfers is gone, so they end now rather than
    /// at their timeouts; receives from it keep their partials.
    fn forget_sessions(&mut self, now: Instant, peer: &A, store: &mut dyn Storage) {
        self.initiators.remove(peer);
        self.responders.remove(peer);
        self.offers.retain(|(a, _), _| a != peer);
        self.uploads.retain(|(a, _), _| a != peer);
        self.eligible_dirty = true;
        let files: Vec<FileId> = self
            .fetches
            .iter()
            .filter(|(_, f)| f.lane(peer).is_some())
            .map(|(k, _)| *k)
            .collect();
        for file in files {
            self.drop_source(now, file, peer, None, store);
        }
        for f in self.fetches.values_mut() {
            f.standby.retain(|a| a != peer);
        }
    }

    /// One planned exchange with `peer` ended; the initiator may move on.
    fn resolve(&mut self, now: Instant, peer: &A, file: &FileId, outcome: Outcome) {
        let step = match self.initiators.get_mut(peer) {
            Some(s) => {
                s.failed |= outcome == Outcome::Retry;
                s.initiator.resolve(now, file)
            }
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
                self.send_interest(from);
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

    /// Offers `cert` to `peer`; an offer already open is sent again at once
    /// (the receiver may have restarted or lost it: no waiting for timeouts).
    fn start_offer(&mut self, now: Instant, peer: &A, cert: Certificate) {
        let key = (peer.clone(), cert.instance_id());
        self.send_to(
            peer,
            Message::Offer {
                cert: cert.encoded(),
            },
        );
        let deadline = now + self.cfg.offer_timeout;
        if let Some(o) = self.offers.get_mut(&key) {
            o.deadline = deadline;
            o.retries = 0;
            return;
        }
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

    /// Whether this node takes a file it does not hold: wanted by fileId or
    /// from a subscribed provider.
    fn wants(&self, cert: &Certificate) -> bool {
        self.wanted.contains(&cert.file_id()) || self.subscribed.contains(&cert.provider())
    }

    /// Block layout and tree shape a receive of `cert` uses.
    fn fetch_layout(&self, cert: &Certificate) -> Result<(Layout, Option<Shape>), RejectReason> {
        let too_large = || RejectReason::FileTooLarge {
            size: cert.size(),
            max: self.cfg.max_file_size,
        };
        let Some((block_size, _)) = cert.tree() else {
            let l = Layout::new(
                cert.size(),
                self.cfg.block_size(),
                self.cfg.segment_blocks(),
            );
            return l.map(|l| (l, None)).ok_or_else(too_large);
        };
        let too_big = || RejectReason::BlockTooLarge {
            name: cert.name().into(),
            block_size,
            packet_size: self.cfg.packet_size,
        };
        if block_size > self.cfg.block_size() {
            return Err(too_big());
        }
        // Segments hold whole chunks, and their vector holds the chunk bits too.
        let probe = Layout::new(cert.size(), block_size, 1).ok_or_else(too_large)?;
        let shape = Shape::new(probe.blocks(), block_size).ok_or_else(too_big)?;
        let m = shape.chunk_leaves();
        let seg = self.cfg.segment_blocks() / (m + 1) * m;
        let layout = Layout::new(cert.size(), block_size, seg).ok_or_else(too_big)?;
        Ok((layout, Some(shape)))
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
        match self.files.get(&file) {
            None if !self.wants(&cert) => {
                self.close(from, instance, CloseCode::NotCommon);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            None => {}
            Some(have) if have.instance_id() == instance => {
                self.close(from, instance, CloseCode::HaveNewer);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            Some(have) if have.version() >= cert.version() => {
                let reason = RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: have.version(),
                    offered: cert.version(),
                };
                self.reject(from, reason);
                self.close(from, instance, CloseCode::HaveNewer);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            Some(_) => {}
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
            return self.resolve(now, from, &file, Outcome::Done);
        }
        if self.committing.contains_key(&file) {
            // Answered after the commit (HaveNewer), when the offer comes again.
            return;
        }
        if let Some(f) = self.fetches.get_mut(&file) {
            if f.cert.instance_id() != instance {
                self.close(from, instance, CloseCode::Busy);
                return self.resolve(now, from, &file, Outcome::Retry);
            }
            if f.lane(from).is_some() {
                // A repeated offer: our Want may have been lost.
                if let Some(w) = self.want_message(&file, from) {
                    self.send_to(from, w);
                }
            } else if f.lanes.len() < self.cfg.sources {
                // Another source of the same version: it sends another
                // part of the file at the same time.
                self.events.push_back(Event::TransferStarted {
                    peer: from.clone(),
                    name: cert.name().into(),
                    version: cert.version(),
                    resumed_blocks: f.received.count_ones(),
                    total_blocks: f.received.len(),
                });
                self.start_lane(now, file, from.clone(), store);
            } else if !f.standby.contains(from) {
                // Every slot is taken: it takes over if a source turns out
                // slow, silent or lying.
                f.standby.push(from.clone());
            }
            return;
        }
        let (layout, shape) = match self.fetch_layout(&cert) {
            Ok(x) => x,
            Err(reason) => {
                self.reject(from, reason);
                self.close(from, instance, CloseCode::Refused);
                return self.resolve(now, from, &file, Outcome::Done);
            }
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
                return self.resolve(now, from, &file, Outcome::Retry);
            }
        };
        self.events.push_back(Event::TransferStarted {
            peer: from.clone(),
            name: cert.name().into(),
            version: cert.version(),
            resumed_blocks: received.count_ones(),
            total_blocks: layout.blocks(),
        });
        let tree = shape
            .zip(cert.tree())
            .map(|(shape, (_, root))| (shape, root));
        self.fetches.insert(
            file,
            Fetch {
                cert,
                layout,
                received,
                tree,
                lanes: Vec::new(),
                standby: Vec::new(),
                unpersisted: 0,
                last_persist: now,
            },
        );
        self.start_lane(now, file, from.clone(), store);
    }

    /// Makes `peer` a source of a fetch, asking it for the range
    /// [`Fetch::choose_range`] picks.
    fn start_lane(&mut self, now: Instant, file: FileId, peer: A, store: &mut dyn Storage) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        let tree = f.tree.map(|(shape, root)| TreeRx {
            shape,
            root,
            leaves: Vec::new(),
            unverified: Vec::new(),
        });
        let transfer = self.new_transfer_id(file);
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let placeholder = SegmentReceiver::new(transfer, 0, 0, &f.received, 0, now);
        f.lanes.push(Lane {
            peer: peer.clone(),
            segment: placeholder,
            tree,
            hdr: 0,
            last_progress: now,
        });
        self.next_segment(now, file, &peer, store);
    }

    fn new_transfer_id(&mut self, file: FileId) -> u32 {
        self.next_transfer = self.next_transfer.wrapping_add(1);
        self.transfer_ids.insert(self.next_transfer, file);
        self.next_transfer
    }

    /// Moves source `peer` of a fetch to the next range to ask it for
    /// (with a new transfer id), or finishes the file. A source left with
    /// nothing to send goes back to standby.
    fn next_segment(&mut self, now: Instant, file: FileId, peer: &A, store: &mut dyn Storage) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        if f.received.is_full() {
            return self.finish_fetch(now, file, store);
        }
        let Some((first, count)) = f.choose_range(Some(peer)) else {
            let Some(f) = self.fetches.get_mut(&file) else {
                return;
            };
            // (The last source stays: the fetch always has one.)
            let i = f.lanes.iter().position(|l| l.peer == *peer);
            if let Some(i) = i.filter(|_| f.lanes.len() > 1) {
                let lane = f.lanes.remove(i);
                self.transfer_ids.remove(&lane.segment.transfer);
                f.standby.push(lane.peer);
            }
            return;
        };
        let Some(old) = f.lane(peer).map(|l| l.segment.transfer) else {
            return;
        };
        self.transfer_ids.remove(&old);
        let transfer = self.new_transfer_id(file);
        let ack_every = self.cfg.window / 4;
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let held = f.received.slice(first, count);
        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *peer) else {
            return;
        };
        lane.segment = match &mut lane.tree {
            None => SegmentReceiver::new(transfer, first, count, &f.received, ack_every, now),
            Some(t) => {
                // Chunk bits first: a chunk is needed unless all its blocks are held.
                let m = t.shape.chunk_leaves();
                let hdr = count.div_ceil(m);
                let mut v = BitVec::new(hdr + count);
                for c in 0..hdr {
                    if (c * m..(c * m + m).min(count)).all(|i| held.get(i)) {
                        v.set(c);
                    }
                }
                for i in held.iter_ones() {
                    v.set(hdr + i);
                }
                t.leaves.clear();
                t.leaves.resize(count as usize, merkle::EMPTY);
                t.unverified.clear();
                t.unverified.resize(count as usize, false);
                lane.hdr = hdr;
                SegmentReceiver::with_vector(transfer, first, v, ack_every, now)
            }
        };
        if let Some(w) = self.want_message(&file, peer) {
            self.send_to(peer, w);
        }
    }

    fn want_message(&self, file: &FileId, peer: &A) -> Option<Message<'static>> {
        let f = self.fetches.get(file)?;
        let l = f.lane(peer)?;
        Some(Message::Want {
            transfer: l.segment.transfer,
            instance: f.cert.instance_id(),
            block_size: f.layout.block_size() as u16,
            segment: l.segment.first(),
            vector: l.segment.vector().clone(),
        })
    }

    /// Sends the segment's receive vector. The vector is persisted apart
    /// from acks (see `persist_due`): after a crash, blocks acknowledged
    /// but not persisted are simply asked for again.
    fn send_ack(&mut self, now: Instant, file: FileId, peer: &A) {
        let Some(l) = self.fetches.get_mut(&file).and_then(|f| f.lane_mut(peer)) else {
            return;
        };
        l.segment.acked(now);
        let msg = Message::Ack {
            transfer: l.segment.transfer,
            vector: l.segment.vector().clone(),
        };
        self.send_to(peer, msg);
    }

    /// Persists the whole-file receive vector through storage.
    fn persist(&mut self, file: FileId, now: Instant, store: &mut dyn Storage) -> bool {
        let Some(f) = self.fetches.get_mut(&file) else {
            return false;
        };
        let partial = Partial {
            block_size: f.layout.block_size(),
            received: f.received.clone(),
        };
        f.unpersisted = 0;
        f.last_persist = now;
        self.counters.persists += 1;
        match store.partial_persist(&f.cert, &partial) {
            Ok(()) => true,
            Err(e) => {
                self.fail_fetch(now, file, RejectReason::Storage(e));
                false
            }
        }
    }

    fn remove_fetch(&mut self, file: &FileId) -> Option<Fetch<A>> {
        let f = self.fetches.remove(file)?;
        for l in &f.lanes {
            self.transfer_ids.remove(&l.segment.transfer);
        }
        Some(f)
    }

    fn remember_finished(
        &mut self,
        now: Instant,
        lane: &Lane<A>,
        instance: InstanceId,
        status: CloseCode,
    ) {
        if self.finished.len() >= FINISHED_KEPT {
            self.finished.pop_front();
        }
        self.finished.push_back(Finished {
            transfer: lane.segment.transfer,
            peer: lane.peer.clone(),
            instance,
            status,
            last_close: now,
        });
    }

    fn fail_fetch(&mut self, now: Instant, file: FileId, reason: RejectReason) {
        if let Some(f) = self.remove_fetch(&file) {
            let instance = f.cert.instance_id();
            self.reject(&f.lanes[0].peer, reason);
            for l in &f.lanes {
                self.close(&l.peer, instance, CloseCode::Failed);
                self.remember_finished(now, l, instance, CloseCode::Failed);
            }
            for a in f.standby.iter().chain(f.lanes.iter().map(|l| &l.peer)) {
                self.resolve(now, a, &file, Outcome::Retry);
            }
        }
    }

    /// Source `peer` of a fetch is done with (silent, slow or lying): the
    /// partial is persisted and the source's range is left to the others
    /// (a source that finishes its own takes it: see
    /// [`Fetch::choose_range`]); a standby peer takes the free slot. With
    /// no source left the fetch stops (the partial is kept for a later
    /// contact).
    fn drop_source(
        &mut self,
        now: Instant,
        file: FileId,
        peer: &A,
        status: Option<CloseCode>,
        store: &mut dyn Storage,
    ) {
        if !self.persist(file, now, store) {
            return;
        }
        let peers = &self.peers;
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let Some(i) = f.lanes.iter().position(|l| l.peer == *peer) else {
            return;
        };
        let lane = f.lanes.remove(i);
        let instance = f.cert.instance_id();
        let name: String = f.cert.name().into();
        f.standby
            .retain(|a| peers.get(a).is_some_and(|p| now >= p.penalized_until));
        let next = (!f.standby.is_empty()).then(|| f.standby.remove(0));
        let to = next
            .clone()
            .or_else(|| f.lanes.first().map(|l| l.peer.clone()));
        self.transfer_ids.remove(&lane.segment.transfer);
        if let Some(code) = status {
            self.close(peer, instance, code);
        }
        self.remember_finished(now, &lane, instance, status.unwrap_or(CloseCode::Busy));
        match to {
            Some(to) => self.events.push_back(Event::SourceSwitched {
                name,
                from: peer.clone(),
                to,
            }),
            None => {
                if let Some(f) = self.remove_fetch(&file) {
                    self.events.push_back(Event::TransferStalled {
                        peer: peer.clone(),
                        name,
                        received_blocks: f.received.count_ones(),
                        total_blocks: f.received.len(),
                    });
                }
            }
        }
        if let Some(next) = next {
            self.start_lane(now, file, next, store);
        }
        self.resolve(now, peer, &file, Outcome::Retry);
    }

    /// A block or chunk from `peer` failed verification: the sender is
    /// penalised and dropped as a source; what was verified before stays.
    fn poisoned(
        &mut self,
        now: Instant,
        file: FileId,
        peer: &A,
        what: &'static str,
        index: u32,
        store: &mut dyn Storage,
    ) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        let name = f.cert.name().into();
        self.counters.poisoned_blocks += 1;
        self.reject(peer, RejectReason::Poisoned { name, what, index });
        if let Some(p) = self.peers.get_mut(peer) {
            p.penalized_until = now + self.cfg.penalty;
        }
        self.drop_source(now, file, peer, Some(CloseCode::Failed), store);
    }

    /// Every block is in: checks (v1) and commits the file, and closes
    /// every source (the one that sent the last block is named in the event).
    fn finish_fetch(&mut self, now: Instant, file: FileId, store: &mut dyn Storage) {
        let Some(mut f) = self.remove_fetch(&file) else {
            return;
        };
        if let Some(i) = f.lanes.iter().position(|l| l.segment.last_data == now) {
            f.lanes.swap(0, i);
        }
        // v2: every block was verified against the tree as it arrived. v1:
        // only the whole-file hash can tell, so read the file back.
        let verdict = match f.tree {
            Some(_) => Ok(true),
            None => hash_partial(store, &f.cert).map(|h| h == f.cert.content_hash()),
        };
        let cert = f.cert.clone();
        let outcome = match verdict {
            Ok(true) => match self.files.get(&file) {
                Some(have) if have.version() >= cert.version() => Err(RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: have.version(),
                    offered: cert.version(),
                }),
                _ => match store.partial_commit_begin(&cert) {
                    Ok(true) => Ok(()),
                    Ok(false) => {
                        self.committing.insert(file, f);
                        return;
                    }
                    Err(e) => Err(RejectReason::Storage(e)),
                },
            },
            Ok(false) => Err(RejectReason::ContentMismatch {
                name: cert.name().into(),
                version: cert.version(),
            }),
            Err(e) => Err(RejectReason::Storage(e)),
        };
        self.conclude_fetch(now, f, outcome, store);
    }

    /// The store finished the commit of `cert` that
    /// [`Storage::partial_commit_begin`] left pending: the file becomes
    /// held (or, on an error, the fetch fails) and its sources are closed.
    pub fn commit_finished(
        &mut self,
        now: Instant,
        cert: &Certificate,
        result: Result<(), StorageError>,
        store: &mut dyn Storage,
    ) {
        let file = cert.file_id();
        let ours = self
            .committing
            .get(&file)
            .is_some_and(|f| f.cert.instance_id() == cert.instance_id());
        if let Some(f) = ours.then(|| self.committing.remove(&file)).flatten() {
            self.conclude_fetch(now, f, result.map_err(RejectReason::Storage), store);
        }
    }

    /// Ends a complete fetch whose commit succeeded or failed.
    fn conclude_fetch(
        &mut self,
        now: Instant,
        f: Fetch<A>,
        outcome: Result<(), RejectReason>,
        store: &mut dyn Storage,
    ) {
        let file = f.cert.file_id();
        let cert = f.cert.clone();
        let peer = f.lanes[0].peer.clone();
        let (status, result) = match outcome {
            Ok(()) => {
                // Trust and version were checked on offer and just above.
                let _ = self.add_file(cert.clone());
                self.events.push_back(Event::FileUpdated {
                    peer: peer.clone(),
                    name: cert.name().into(),
                    version: cert.version(),
                    instance: cert.instance_id(),
                });
                (CloseCode::Complete, Outcome::Done)
            }
            Err(reason) => {
                // Discarding a partial is best effort; the committed file is untouched either way.
                let _ = store.partial_discard(&cert);
                self.reject(&peer, reason);
                (CloseCode::Failed, Outcome::Retry)
            }
        };
        for l in &f.lanes {
            self.close(&l.peer, cert.instance_id(), status);
            self.remember_finished(now, l, cert.instance_id(), status);
            self.resolve(now, &l.peer, &file, result);
        }
        for a in &f.standby {
            let code = if status == CloseCode::Complete {
                CloseCode::HaveNewer
            } else {
                CloseCode::Failed
            };
            self.close(a, cert.instance_id(), code);
            self.resolve(now, a, &file, result);
        }
    }

    /// Data for a transfer this node no longer runs: if it ended recently,
    /// the sender missed the Close; send it again (at most once per `ack_idle`).
    fn lost_close(&mut self, now: Instant, from: &A, transfer: u32) {
        let idle = self.cfg.ack_idle;
        let Some(f) = self
            .finished
            .iter_mut()
            .find(|f| f.transfer == transfer && f.peer == *from)
        else {
            return;
        };
        if now.saturating_since(f.last_close) < idle {
            return;
        }
        f.last_close = now;
        let (instance, status) = (f.instance, f.status);
        self.close(from, instance, status);
    }

    /// Builds (once per version) the tree of a v2 file this node sends,
    /// from the leaves the store keeps if they match the certificate's
    /// root, else from its stored bytes; refuses a file whose bytes do not
    /// match it.
    fn ensure_tree(
        &mut self,
        cert: &Certificate,
        store: &mut dyn Storage,
    ) -> Result<(), RejectReason> {
        let Some((block_size, root)) = cert.tree() else {
            return Ok(());
        };
        if self.trees.contains_key(&cert.instance_id()) {
            return Ok(());
        }
        // A list padded with empty leaves has the same root: check the count too.
        let blocks = cert.size().div_ceil(u64::from(block_size)).max(1);
        let kept = store
            .tree_leaves(cert)
            .filter(|l| l.len() as u64 == blocks)
            .and_then(|l| Tree::new(l, block_size))
            .filter(|t| t.root() == root);
        if let Some(t) = kept {
            self.trees.insert(cert.instance_id(), t);
            return Ok(());
        }
        let mut b = TreeBuilder::new(block_size);
        let mut buf = vec![0u8; 1 << 16];
        let mut off = 0u64;
        while off < cert.size() {
            let n = (cert.size() - off).min(buf.len() as u64) as usize;
            store
                .read(cert, off, &mut buf[..n])
                .map_err(RejectReason::Storage)?;
            b.update(&buf[..n]);
            off += n as u64;
        }
        let (_, _, leaves) = b.finish();
        match Tree::new(leaves, block_size) {
            Some(t) if t.root() == root => {
                self.trees.insert(cert.instance_id(), t);
                Ok(())
            }
            _ => Err(RejectReason::ContentMismatch {
                name: cert.name().into(),
                version: cert.version(),
            }),
        }
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
        store: &mut dyn Storage,
    ) {
        // The vector of a file being sent answers the blocks in flight, and
        // a new request starts afresh; an idle Want of a file waiting its
        // turn says nothing of them.
        let waiting = self
            .uploads
            .get(&(from.clone(), transfer))
            .is_some_and(|u| u.sender.probe().is_none());
        if !waiting {
            self.unanswered.remove(from);
        }
        if let Some(up) = self.uploads.get_mut(&(from.clone(), transfer)) {
            if !up.sender.on_request(&vector, now) {
                self.reject(from, RejectReason::InvalidVector("vector length changed"));
            }
            self.eligible_dirty = true;
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
        // v2: the vector is [hash chunks][blocks] over whole chunks.
        let (mut hdr, mut first_chunk, mut count) = (0, 0, vector.len());
        if let Some((tree_block, _)) = cert.tree() {
            let shape = Shape::new(layout.blocks(), tree_block);
            let Some(m) = shape
                .filter(|_| tree_block == u32::from(block_size))
                .map(|s| s.chunk_leaves())
            else {
                return self.reject(from, RejectReason::InvalidVector("block size"));
            };
            count = vector.len() - vector.len().div_ceil(m + 1);
            hdr = count.div_ceil(m);
            if first & (m - 1) != 0 || hdr + count != vector.len() {
                return self.reject(
                    from,
                    RejectReason::InvalidVector("segment not made of whole chunks"),
                );
            }
            first_chunk = first / m;
        }
        let fits = first
            .checked_add(count)
            .is_some_and(|end| end <= layout.blocks());
        if count == 0 || !fits {
            return self.reject(
                from,
                RejectReason::InvalidVector("segment outside the file"),
            );
        }
        if self.uploads.len() >= self.cfg.max_peers * 4 {
            return self.reject(from, RejectReason::RateLimited(MsgType::Want));
        }
        if let Err(reason) = self.ensure_tree(&cert, store) {
            self.reject(from, reason);
            self.close(from, instance, CloseCode::Gone);
            return;
        }
        // A new Want for the same version replaces an older transfer (the
        // receiver restarted, moved on to another segment, or switched to us).
        self.uploads
            .retain(|(a, _), u| !(a == from && u.cert.instance_id() == instance));
        if let Some(o) = self.offers.get_mut(&(from.clone(), instance)) {
            o.stage = OfferStage::Sending;
        }
        self.next_upload_seq += 1;
        self.eligible_dirty = true;
        self.uploads.insert(
            (from.clone(), transfer),
            Upload {
                cert,
                layout,
                sender: SegmentSender::new(first, vector, now),
                hdr,
                first_chunk,
                first_block: first,
                seq: self.next_upload_seq,
                resending_since: None,
                probe_at: now,
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
            return self.lost_close(now, from, transfer);
        };
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let Some(lane) = f
            .lanes
            .iter_mut()
            .find(|l| l.peer == *from && l.segment.transfer == transfer)
        else {
            return;
        };
        let rel = u32::from(block);
        match lane.segment.classify(rel) {
            BlockKind::OutOfRange => self.reject(from, RejectReason::BadBlock),
            BlockKind::Duplicate { resumed } => {
                // The peer is alive and serving us: fetches waiting their turn
                // behind this one stay open (see `fetch_timers`).
                self.data_from.insert(from.clone(), now);
                self.counters.duplicate_blocks += 1;
                if resumed {
                    self.counters.resumed_blocks_resent += 1;
                }
                if lane.segment.duplicate(now, self.cfg.dup_ack_holdoff) {
                    self.send_ack(now, file, from);
                }
            }
            BlockKind::New if rel < lane.hdr => {
                // A hash chunk of a v2 file.
                let Some(t) = &mut lane.tree else {
                    return;
                };
                let m = t.shape.chunk_leaves();
                let chunk = lane.segment.first() / m + rel;
                let Some(leaves) = t.shape.verify_chunk(&t.root, chunk, bytes) else {
                    return self.poisoned(now, file, from, "hash chunk", chunk, store);
                };
                let at = (rel * m) as usize;
                t.leaves[at..at + leaves.len()].copy_from_slice(&leaves);
                let early: Vec<u32> = (at..at + leaves.len())
                    .filter(|&i| t.unverified[i])
                    .map(|i| i as u32)
                    .collect();
                let held = !early.is_empty();
                for i in early {
                    match self.verify_stored(file, from, i, store) {
                        Ok(Some(abs)) => self.held_elsewhere(now, file, from, abs, store),
                        Ok(None) => {}
                        Err(bad) => return self.poisoned(now, file, from, "block", bad, store),
                    }
                }
                self.accept(now, file, from, rel, store);
                // Blocks held since their chunk was lost are in the vector
                // now: tell the sender before its pass sends them again.
                let acked = self
                    .fetches
                    .get(&file)
                    .and_then(|f| f.lane(from))
                    .is_none_or(|l| l.segment.last_ack == now);
                if held && !acked {
                    self.send_ack(now, file, from);
                }
            }
            BlockKind::New => {
                let i = rel - lane.hdr;
                let abs = lane.segment.first() + i;
                let (offset, len) = f.layout.block_range(abs);
                if let Some(t) = &mut lane.tree {
                    if bytes.len() != len {
                        return self.poisoned(now, file, from, "block", abs, store);
                    }
                    if !lane.segment.vector().get(i / t.shape.chunk_leaves()) {
                        // Its hash chunk was lost: keep the block, unmarked,
                        // and check it when the chunk comes (unless another
                        // source's copy waits there already: the first one
                        // stored is the one checked).
                        self.data_from.insert(from.clone(), now);
                        let taken = |l: &Lane<A>| {
                            l.covers(abs)
                                && l.tree.as_ref().is_some_and(|t| {
                                    t.unverified[(abs - l.segment.first()) as usize]
                                })
                        };
                        let free = !f.lanes.iter().any(taken);
                        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *from) else {
                            return;
                        };
                        let Some(t) = &mut lane.tree else {
                            return;
                        };
                        // A stored block is marked in this source's
                        // vector (not in the file's, nor persisted), so that
                        // its sender does not send it again: only the chunk
                        // must come again. The chunk's bit stays clear until
                        // then, so the source's range is not complete before.
                        let mut due = false;
                        if free {
                            if let Err(e) = store.partial_write(&f.cert, offset, bytes) {
                                return self.fail_fetch(now, file, RejectReason::Storage(e));
                            }
                            t.unverified[i as usize] = true;
                            self.counters.unverified_blocks += 1;
                            due = lane.segment.mark(rel, now);
                        }
                        // The pass is over, and the chunk must come again:
                        // the vector goes as a Want, which starts the next
                        // pass at once (an Ack without this block would not).
                        if lane.segment.ends_pass(rel) {
                            lane.segment.acked(now);
                            if let Some(w) = self.want_message(&file, from) {
                                self.send_to(from, w);
                            }
                        } else if due {
                            self.send_ack(now, file, from);
                        }
                        return;
                    }
                    if merkle::leaf(bytes) != t.leaves[i as usize] {
                        return self.poisoned(now, file, from, "block", abs, store);
                    }
                } else if bytes.len() != len {
                    return self.reject(from, RejectReason::BadBlock);
                }
                if let Err(e) = store.partial_write(&f.cert, offset, bytes) {
                    return self.fail_fetch(now, file, RejectReason::Storage(e));
                }
                self.counters.file_bytes_received += len as u64;
                f.received.set(abs);
                f.unpersisted += 1;
                self.accept(now, file, from, rel, store);
                self.held_elsewhere(now, file, from, abs, store);
            }
        }
    }

    /// Checks lane-relative block `i` of source `peer`, stored before its
    /// hash chunk came, against the chunk's leaf; marks it if it matches
    /// (returning its absolute index unless another source delivered it
    /// meanwhile), else returns its absolute index as an error (the source
    /// lied).
    fn verify_stored(
        &mut self,
        file: FileId,
        peer: &A,
        i: u32,
        store: &mut dyn Storage,
    ) -> Result<Option<u32>, u32> {
        let Some(f) = self.fetches.get_mut(&file) else {
            return Ok(None);
        };
        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *peer) else {
            return Ok(None);
        };
        let Some(t) = &mut lane.tree else {
            return Ok(None);
        };
        t.unverified[i as usize] = false;
        let abs = lane.segment.first() + i;
        if f.received.get(abs) {
            return Ok(None);
        }
        let (offset, len) = f.layout.block_range(abs);
        let mut buf = vec![0u8; len];
        let ok = store.partial_read(&f.cert, offset, &mut buf).is_ok()
            && merkle::leaf(&buf) == t.leaves[i as usize];
        if !ok {
            return Err(abs);
        }
        f.received.set(abs);
        f.unpersisted += 1;
        lane.segment.mark(lane.hdr + i, lane.segment.last_data);
        self.counters.file_bytes_received += len as u64;
        Ok(Some(abs))
    }

    /// Marks a new, verified block or chunk; acks, persists and moves to
    /// the next range as due.
    fn accept(&mut self, now: Instant, file: FileId, from: &A, rel: u32, store: &mut dyn Storage) {
        self.data_from.insert(from.clone(), now);
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let persist = f.unpersisted >= self.cfg.persist_blocks
            || (f.unpersisted > 0
                && now.saturating_since(f.last_persist) >= self.cfg.persist_interval);
        let Some(lane) = f.lane_mut(from) else {
            return;
        };
        lane.last_progress = now;
        let due = lane.segment.mark(rel, now);
        let complete = lane.segment.is_complete();
        if persist && !complete && !self.persist(file, now, store) {
            return;
        }
        if due {
            self.send_ack(now, file, from);
        }
        if complete {
            self.next_segment(now, file, from, store);
        }
    }

    /// Block `abs` arrived from `from`: the other sources whose range holds
    /// it mark it too (their senders learn it from their next vector); a
    /// source whose range is then complete moves on.
    fn held_elsewhere(
        &mut self,
        now: Instant,
        file: FileId,
        from: &A,
        abs: u32,
        store: &mut dyn Storage,
    ) {
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let mut due = Vec::new();
        let mut complete = Vec::new();
        for l in f
            .lanes
            .iter_mut()
            .filter(|l| l.peer != *from && l.covers(abs))
        {
            let i = abs - l.segment.first();
            let mut ack = l.segment.held_elsewhere(l.hdr + i);
            if let Some(t) = &mut l.tree {
                t.unverified[i as usize] = false;
                // A chunk whose blocks are all held is needed no more.
                let m = t.shape.chunk_leaves();
                let c = i / m;
                let count = l.segment.vector().len() - l.hdr;
                let v = l.segment.vector();
                // (Held and verified: a block of this source's kept
                // unverified still needs the chunk.)
                let held = |j: u32| v.get(l.hdr + j) && !t.unverified[j as usize];
                if (c * m..(c * m + m).min(count)).all(held) {
                    ack |= l.segment.held_elsewhere(c);
                }
            }
            if l.segment.is_complete() {
                complete.push(l.peer.clone());
            } else if ack {
                due.push(l.peer.clone());
            }
        }
        for p in due {
            self.send_ack(now, file, &p);
        }
        for p in complete {
            self.next_segment(now, file, &p, store);
        }
    }

    fn on_ack(&mut self, now: Instant, from: &A, transfer: u32, vector: &BitVec) {
        let key = (from.clone(), transfer);
        let Some(up) = self.uploads.get_mut(&key) else {
            return;
        };
        self.unanswered.remove(from);
        self.eligible_dirty = true;
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
        self.uploads
            .retain(|(a, _), u| !(a == from && u.cert.instance_id() == instance));
        self.eligible_dirty = true;
        let Some(offer) = self.offers.remove(&(from.clone(), instance)) else {
            return;
        };
        self.events.push_back(Event::OfferClosed {
            peer: from.clone(),
            name: offer.cert.name().into(),
            status: Some(status),
        });
        let outcome = match status {
            CloseCode::Complete
            | CloseCode::HaveNewer
            | CloseCode::Refused
            | CloseCode::NotCommon => Outcome::Done,
            CloseCode::Busy | CloseCode::Failed | CloseCode::Gone => Outcome::Retry,
        };
        self.resolve(now, from, &offer.cert.file_id(), outcome);
    }

    /// A peer's subscriptions: offer it every file held from those providers
    /// (it closes at once the ones it already has).
    fn on_interest(&mut self, now: Instant, from: &A, keys: &[u8]) {
        let offers: Vec<Certificate> = keys
            .chunks_exact(wire::KEY_LEN)
            .flat_map(|k| {
                self.files
                    .values()
                    .filter(move |c| c.provider().0 == k)
                    .cloned()
            })
            .collect();
        for cert in offers {
            self.start_offer(now, from, cert);
        }
    }

    /// Sends our subscriptions to a peer a sync just started with.
    fn send_interest(&mut self, peer: &A) {
        if self.subscribed.is_empty() {
            return;
        }
        let max = (self.cfg.packet_size - wire::HEADER_LEN) / wire::KEY_LEN;
        let keys: Vec<u8> = self.subscribed.iter().take(max).flat_map(|k| k.0).collect();
        self.send_to(peer, Message::Interest { keys: &keys });
    }

    // ---------------------------------------------------------------- timers

    /// The earliest time [`handle_timeout`](Self::handle_timeout) or
    /// [`poll_transmit`](Self::poll_transmit) has something to do (the
    /// epoch if datagrams are queued already).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.queue.is_empty() {
            return Some(Instant::ZERO);
        }
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
            let others = f.lanes.len() > 1 || !f.standby.is_empty();
            for l in &f.lanes {
                consider(l.segment.idle_deadline(self.cfg.ack_idle, self.ack_cap()));
                if others {
                    consider(l.last_progress + self.cfg.slow_peer_timeout);
                }
            }
            if f.unpersisted > 0 {
                consider(f.last_persist + self.cfg.persist_interval);
            }
        }
        for u in self.uploads.values() {
            consider(u.sender.last_heard + self.cfg.transfer_timeout);
        }
        if let Some(p) = self.next_probe {
            consider(p);
        }
        if let Some(p) = &self.pacer {
            let ready = p.ready_at(self.cfg.packet_size as f64);
            let silence = self.silence();
            // Uploads that may send (in a pass, not paused, their window
            // open) wait for the pacer; the others for a vector or a probe.
            let active = |(k, u): (&(A, u32), &Upload)| {
                u.sender.in_pass()
                    && u.quiet_until(silence).is_none_or(|q| ready < q)
                    && self.window_open(&k.0)
            };
            if self.uploads.iter().any(active) {
                consider(ready);
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

    /// How often a sender whose pass has ended re-sends its last block while
    /// no vector comes: the receiver acks a duplicate at most once per
    /// `dup_ack_holdoff`, so probing faster draws nothing more.
    fn probe_interval(&self) -> Duration {
        self.cfg.dup_ack_holdoff.max(Duration::from_millis(1))
    }

    /// Whether `peer` may be sent another block before a vector from it
    /// (see [`Config::window`]).
    fn window_open(&self, peer: &A) -> bool {
        self.cfg.window == 0
            || self
                .unanswered
                .get(peer)
                .is_none_or(|&n| n < self.cfg.window)
    }

    /// How long a re-send pass may go unanswered before the upload pauses.
    fn silence(&self) -> Duration {
        self.cfg.ack_idle * 4
    }

    fn offer_wait(&self) -> Duration {
        self.cfg.offer_timeout * (self.cfg.offer_retries + 2)
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, store: &mut dyn Storage) {
        if now >= self.next_beacon {
            let msg = self.beacon_message();
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
                self.eligible_dirty = true;
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
            .retain(|a, _| fetches.values().any(|f| f.lane(a).is_some()));
        let uploads = &self.uploads;
        self.unanswered
            .retain(|a, _| uploads.keys().any(|k| k.0 == *a));
        let live: BTreeSet<InstanceId> = (self.uploads.values())
            .map(|u| u.cert.instance_id())
            .chain(self.offers.keys().map(|(_, o)| *o))
            .collect();
        self.trees.retain(|i, _| live.contains(i));
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
                        && self.fetches.get(file).is_none_or(|f| !f.has_source(&peer))
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
                self.resolve(now, &peer, &file, Outcome::Retry);
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
                    self.resolve(now, &key.0, &o.cert.file_id(), Outcome::Retry);
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

    /// Idle acks, persists, slow sources and stalls. A fetch stalls when
    /// its *peer* has sent no data block for any of our fetches for
    /// `transfer_timeout`: a sender serves one file (or `uploads_per_peer`)
    /// at a time, so a fetch waiting its turn gets no data for as long as
    /// the files before it take, while the sender is alive and busy for us.
    /// Its idle acks (at least three per `transfer_timeout`) keep it alive
    /// at the sender meanwhile. Each source of a fetch is watched apart:
    /// one that makes no progress for `slow_peer_timeout` while another
    /// peer sends or offered the same version loses its slot (its range is
    /// left to the others, or to a standby peer).
    fn fetch_timers(&mut self, now: Instant, store: &mut dyn Storage) {
        let files: Vec<FileId> = self.fetches.keys().copied().collect();
        let cap = self.ack_cap();
        for file in files {
            let Some(f) = self.fetches.get(&file) else {
                continue;
            };
            let others = f.lanes.len() > 1 || !f.standby.is_empty();
            let (mut silent, mut slow) = (Vec::new(), Vec::new());
            for l in &f.lanes {
                let heard = self
                    .data_from
                    .get(&l.peer)
                    .map_or(l.segment.last_data, |&t| t.max(l.segment.last_data));
                if now.saturating_since(heard) >= self.cfg.transfer_timeout {
                    silent.push(l.peer.clone());
                } else if others
                    && now.saturating_since(l.last_progress) >= self.cfg.slow_peer_timeout
                {
                    slow.push(l.peer.clone());
                }
            }
            for p in &silent {
                self.drop_source(now, file, p, None, store);
            }
            for p in &slow {
                // The last source keeps its slot: there is no one to give it to.
                let alone = self
                    .fetches
                    .get(&file)
                    .is_none_or(|f| f.lanes.len() < 2 && f.standby.is_empty());
                if !alone {
                    self.drop_source(now, file, p, Some(CloseCode::Busy), store);
                }
            }
            let Some(f) = self.fetches.get(&file) else {
                continue;
            };
            if f.unpersisted > 0
                && now.saturating_since(f.last_persist) >= self.cfg.persist_interval
                && !self.persist(file, now, store)
            {
                continue;
            }
            let Some(f) = self.fetches.get_mut(&file) else {
                continue;
            };
            let mut idle = Vec::new();
            for l in &mut f.lanes {
                if now >= l.segment.idle_deadline(self.cfg.ack_idle, cap) {
                    // The idle vector goes as a Want: it also (re)creates the
                    // upload at a sender that lost the first Want.
                    l.segment.idle_acks += 1;
                    l.segment.acked(now);
                    idle.push(l.peer.clone());
                }
            }
            for p in idle {
                if let Some(w) = self.want_message(&file, &p) {
                    self.send_to(&p, w);
                }
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
    /// the blocks still in flight again; with nothing else to send it waits,
    /// re-sending the pass's last block every `dup_ack_holdoff` as a probe
    /// ([`SegmentSender::probe`]) in case that block or the vector was
    /// lost. Past [`Config::window`] blocks sent to a peer with no vector
    /// from it, all of that peer's files wait (and probe) the same way, so
    /// an unpaced sender does not overflow a slower receiver. Files waiting
    /// their turn stay alive on both sides: see `fetch_timers`.
    ///
    /// Each call allocates the returned payload;
    /// [`poll_transmit_into`](Self::poll_transmit_into) and
    /// [`poll_transmits`](Self::poll_transmits) write into the caller's
    /// buffers instead.
    pub fn poll_transmit(&mut self, now: Instant, store: &mut dyn Storage) -> Option<Transmit<A>> {
        let mut payload = Vec::new();
        let (destination, kind) = self.write_next(now, store, &mut payload)?;
        Some(Transmit {
            destination,
            payload,
            kind,
        })
    }

    /// As [`poll_transmit`](Self::poll_transmit), writing the datagram into
    /// `buf` (cleared first; no allocation once it has grown to a datagram).
    pub fn poll_transmit_into(
        &mut self,
        now: Instant,
        store: &mut dyn Storage,
        buf: &mut Vec<u8>,
    ) -> Option<(Destination<A>, PacketKind)> {
        buf.clear();
        self.write_next(now, store, buf)
    }

    /// Appends up to `max` datagrams to `batch` (for `sendmmsg`-style
    /// drivers); returns how many.
    pub fn poll_transmits(
        &mut self,
        now: Instant,
        store: &mut dyn Storage,
        batch: &mut Batch<A>,
        max: usize,
    ) -> usize {
        let mut n = 0;
        while n < max {
            let start = batch.buf.len();
            let Some((dest, kind)) = self.write_next(now, store, &mut batch.buf) else {
                break;
            };
            let end = batch.buf.len();
            batch.items.push((dest, start..end, kind));
            n += 1;
        }
        n
    }

    /// Appends the next datagram to `out`.
    fn write_next(
        &mut self,
        now: Instant,
        store: &mut dyn Storage,
        out: &mut Vec<u8>,
    ) -> Option<(Destination<A>, PacketKind)> {
        if let Some(t) = self.queue.pop_front() {
            self.counters.tx.add(t.kind, t.payload.len());
            out.extend_from_slice(&t.payload);
            return Some((t.destination, t.kind));
        }
        let silence = self.silence();
        loop {
            let key = self.next_upload(now)?;
            if self
                .uploads
                .get(&key)
                .is_some_and(|u| u.paused(now, silence))
            {
                self.eligible_dirty = true;
                continue;
            }
            if let Some(p) = &mut self.pacer {
                if !p.try_take(now, self.cfg.packet_size as f64) {
                    return None;
                }
            }
            let probe = self.probe_interval();
            let open = self.window_open(&key.0);
            let up = self.uploads.get_mut(&key)?;
            self.last_upload = Some(key.clone());
            let next = if up.sender.in_pass() && open {
                if up.sender.at_pass_end() && up.resending_since.is_none() {
                    up.resending_since = Some(now);
                }
                up.sender.next_block()
            } else {
                up.resending_since.get_or_insert(now);
                up.sender.probe()
            };
            let Some((rel, _)) = next else {
                self.eligible_dirty = true;
                continue;
            };
            if !up.sender.in_pass() || !open {
                // The pass has ended, or this was a probe: wait for the vector.
                up.probe_at = now + probe;
                self.eligible_dirty = true;
            }
            let start = out.len();
            wire::emit_data_header(out, key.1, rel);
            let rel = u32::from(rel);
            let len = if rel < up.hdr {
                let tree = self.trees.get(&up.cert.instance_id())?;
                tree.chunk(up.first_chunk + rel, out);
                out.len() - start - wire::DATA_HEADER_LEN
            } else {
                let abs = up.first_block + rel - up.hdr;
                let (offset, len) = up.layout.block_range(abs);
                let at = out.len();
                out.resize(at + len, 0);
                if let Err(e) = store.read(&up.cert, offset, &mut out[at..]) {
                    out.truncate(start);
                    self.uploads.remove(&key);
                    self.eligible_dirty = true;
                    self.reject(&key.0, RejectReason::Storage(e));
                    continue;
                }
                len
            };
            self.counters.tx.add(PacketKind::Data, out.len() - start);
            self.counters.file_bytes_sent += len as u64;
            let blind = self.unanswered.entry(key.0.clone()).or_insert(0);
            *blind += 1;
            if *blind == self.cfg.window {
                self.eligible_dirty = true;
            }
            return Some((Destination::Peer(key.0), PacketKind::Data));
        }
    }

    /// The key of the upload to send the next data block of: round-robin
    /// over the eligible uploads, which are recomputed (sorted) only when an
    /// ack, a want, a close or the end of a pass changed them, not per packet.
    fn next_upload(&mut self, now: Instant) -> Option<(A, u32)> {
        if self.eligible_dirty || self.next_probe.is_some_and(|t| now >= t) {
            self.eligible_dirty = false;
            self.rebuild_eligible(now);
        }
        // `eligible` is sorted: the next key after the last one served.
        let at = self
            .last_upload
            .as_ref()
            .map_or(0, |last| self.eligible.partition_point(|k| k <= last));
        self.eligible.get(at).or(self.eligible.first()).cloned()
    }

    fn rebuild_eligible(&mut self, now: Instant) {
        let silence = self.silence();
        // Uploads are keyed (peer, transfer): each peer's are contiguous.
        let mut chosen = std::mem::take(&mut self.eligible);
        chosen.clear();
        let mut next_probe: Option<Instant> = None;
        let mut peer: Vec<(&(A, u32), &Upload)> = Vec::new();
        let mut flush = |peer: &mut Vec<(&(A, u32), &Upload)>| {
            peer.sort_by_key(|(_, u)| (u.sender.remaining(u.layout.blocks()), u.seq));
            let n = self.cfg.uploads_per_peer;
            let before = chosen.len();
            // While a window is open, files whose pass waits for its vector
            // give way to the next ones; a closed window stops them all.
            let open = peer.first().is_some_and(|(k, _)| self.window_open(&k.0));
            chosen.extend(
                peer.iter()
                    .filter(|(_, u)| open && u.sender.in_pass())
                    .take(n)
                    .map(|(k, _)| (*k).clone()),
            );
            if chosen.len() == before {
                // Every pass has ended or the window is closed: probe those
                // due (the last block they sent), wait for the others.
                let sent = |u: &Upload| u.sender.probe().is_some();
                for (k, u) in peer.iter().filter(|(_, u)| sent(u)).take(n) {
                    if now >= u.probe_at {
                        chosen.push((*k).clone());
                    } else {
                        next_probe = Some(next_probe.map_or(u.probe_at, |t| t.min(u.probe_at)));
                    }
                }
            }
            peer.clear();
        };
        for (k, u) in &self.uploads {
            if u.sender.is_complete() || u.paused(now, silence) {
                continue;
            }
            if peer.first().is_some_and(|(p, _)| p.0 != k.0) {
                flush(&mut peer);
            }
            peer.push((k, u));
        }
        flush(&mut peer);
        chosen.sort();
        self.eligible = chosen;
        self.next_probe = next_probe;
    }
}

/// The first bit of `v` not set at or after `from` (no wrapping).
fn zero_from(v: &BitVec, from: u32) -> Option<u32> {
    (from..v.len()).find(|&i| !v.get(i))
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
