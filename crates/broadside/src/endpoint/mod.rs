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
//!
//! This module keeps the state and routes each datagram, timer and poll;
//! the work is in one submodule per concern: `admission` (address
//! validation, peer table, rate limits), `sync` (beacons, discovery
//! sessions, offers), `fetch` (incoming files and their sources),
//! `receive` (blocks and hash chunks as they arrive) and `upload`
//! (outgoing files and which one sends next); `config` and `types` hold
//! the public tunables, events and snapshots.

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

mod admission;
mod config;
mod fetch;
mod receive;
mod sync;
mod types;
mod upload;

pub use crate::wire::CloseCode as CloseStatus;
pub use config::{Config, ConfigError};
pub use types::{Batch, Destination, Event, FetchStatus, PeerStatus, RejectReason, Transmit};

/// Session secrets of a peer kept at once: both sides may challenge at
/// once, and a restarted peer runs the exchange again.
const SECRETS_KEPT: usize = 4;

struct PeerState {
    last_seen: Instant,
    /// Secrets its Wants may carry: tokens of this node it proved to know
    /// (echoed in a valid Token packet), newest last.
    secrets: Vec<Token>,
    /// The secret this node's Wants to it carry (all zero: not known yet).
    theirs: Token,
    /// Bytes received from its address (spoofed or not), and bytes sent
    /// to it in data packets and discovery answers (Match, Records): the
    /// replies that can outgrow a request. The rest this node starts on
    /// its own timers (beacons, Filters, Plans, Offers) or sends one for one
    /// (Tokens, Wants, Closes), each rate-limited per peer.
    rx: u64,
    tx: u64,
    /// It acknowledged data (an Ack or a repeated Want under the transfer
    /// id of an upload, which only its authenticated Want carried): the 3×
    /// bound no longer applies.
    proven: bool,
    /// This node acknowledged data it sent.
    acked: bool,
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

impl PeerState {
    /// Keeps `secret` among those its Wants may carry (the newest
    /// [`SECRETS_KEPT`]).
    fn remember(&mut self, secret: Token) {
        if !self.secrets.contains(&secret) {
            if self.secrets.len() == SECRETS_KEPT {
                self.secrets.remove(0);
            }
            self.secrets.push(secret);
        }
    }
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
            if !cert.supersedes(old) {
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
        let kind = Message::parse(&payload).map(|m| m.msg_type());
        if let (Destination::Peer(a), Ok(MsgType::Match | MsgType::Records)) = (&to, &kind) {
            if let Some(p) = self.peers.get_mut(a) {
                p.tx += payload.len() as u64;
            }
        }
        let kind = kind.map_or(PacketKind::Control, MsgType::class);
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

    /// Whether `peer` may be sent `len` more bytes of data: until it has
    /// acknowledged data, at most three times the bytes received from its
    /// address in all (the anti-amplification bound of RFC 9000 §8.1,
    /// applied again after validation, since a validated address can be
    /// spoofed too).
    fn may_send(&self, peer: &A, len: usize) -> bool {
        self.peers
            .get(peer)
            .is_some_and(|p| p.proven || p.tx + len as u64 <= 3 * p.rx)
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
            Some(p) => {
                p.last_seen = now;
                p.rx += bytes.len() as u64;
                // More credit may let a waiting upload send.
                self.eligible_dirty |= !p.proven;
            }
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
        if let Message::Want { auth, .. } = &msg {
            let known = self.peers.get(&from).is_some_and(|p| {
                p.secrets
                    .iter()
                    .any(|s| crate::validate::same_secret(s, auth))
            });
            if !known {
                self.counters.unvalidated += 1;
                if self.take(now, &from, 1, None) {
                    self.reject(&from, RejectReason::Unauthenticated);
                }
                // The peer may have lost the exchange's last Token: a new
                // exchange gives it a secret (a Token, no larger than the Want).
                return self.challenge(now, &from, bytes.len());
            }
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
                auth: _,
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
                    && self.may_send(&k.0, self.cfg.packet_size)
            };
            if self.uploads.iter().any(active) {
                consider(ready);
            }
        }
        Some(t)
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
}

/// The first bit of `v` not set at or after `from` (no wrapping).
fn zero_from(v: &BitVec, from: u32) -> Option<u32> {
    (from..v.len()).find(|&i| !v.get(i))
}
