//! What the endpoint hands its driver: datagrams, events and refusals,
//! and status snapshots.

use super::*;

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
    /// A Want without the session secret of its address: spoofed from a
    /// validated address (or its sender lost the secret in a restart).
    #[error("Want without the session secret of its address; ignored")]
    Unauthenticated,
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
    /// Two validly signed certificates of one version of a file met: the
    /// one with the greater instance id is kept on every node (see
    /// [`Certificate::supersedes`]).
    ForkResolved {
        /// The peer holding the other one.
        peer: A,
        /// File name.
        name: String,
        /// The version both carry.
        version: u16,
        /// The instance kept (fetched if it was the peer's).
        kept: InstanceId,
        /// The instance dropped.
        dropped: InstanceId,
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
