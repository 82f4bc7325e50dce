//! Broadside: content discovery and bit-vector bulk transfer between devices that
//! meet for a few seconds (Zahn, O'Shea, Rowstron, CoNEXT 2009).
//!
//! This crate is *sans-IO*: it owns no socket, no clock and no file. The caller
//! feeds it datagrams and the current [`Instant`] and drains what it wants to
//! send, in the style of `quinn-proto`:
//!
//! ```text
//! handle_datagram(now, from, bytes, storage)   handle_timeout(now, storage)
//! poll_transmit(now, storage) -> Transmit       poll_timeout() -> Instant
//! poll_event() -> Event
//! ```
//!
//! File bytes are read and written through the [`Storage`] trait, which the
//! caller implements (an on-disk store in `broadside-node`, [`MemStore`] in
//! tests and simulations).
//!
//! Module map (one concern each):
//! - [`time`]: the caller-supplied [`Instant`].
//! - [`id`]: 160-bit identifiers and the hash `H` (SHA-256 truncated).
//! - [`cert`]: provider keys and signed file certificates (§3).
//! - [`merkle`]: the per-block hash tree a v2 certificate commits to.
//! - [`bloom`]: Bloom filters for the file, version and match filters.
//! - [`bitvec`]: send/receive vectors.
//! - [`wire`]: packet formats (raw view + validated representation).
//! - [`beacon`]: content hash, beacon schedule, sync cache, who initiates (§4.1).
//! - [`discovery`]: the group/filter/match/records/plan exchange (§4.1).
//! - [`transfer`]: block layout, the sender and receiver of a segment, the ack policy (§4.2).
//! - [`validate`]: address validation tokens, peer address prefixes.
//! - [`ratelimit`]: token buckets against floods.
//! - [`counters`]: packets and bytes by kind.
//! - [`storage`]: the storage trait and an in-memory store.
//! - [`endpoint`]: the state machine that ties them together.
//! - [`sim`]: an in-memory network of endpoints that drives time (tests, experiments).
//!
//! # Where this departs from the paper
//!
//! - **Hashes.** `H` is SHA-256 truncated to 160 bits, not SHA-1 (see [`id`]).
//! - **Per-block integrity.** The paper's certificate carries the SHA-1 of
//!   the whole file, so a receiver learns that a block was bad only after
//!   the last one, and must then throw the whole file away: one peer
//!   holding the (public) certificate and sending garbage for some blocks
//!   costs every honest block too, and the file never updates while that
//!   peer is around. A v2 certificate ([`cert`]) commits to a SHA-256 hash
//!   tree over the blocks ([`merkle`]); each block is checked on arrival, a
//!   peer that sends a bad one is dropped and ignored for a while, and the
//!   verified partial survives for the next source. The tree replaces the
//!   read-back of the whole file at the end. Its leaf hashes travel in
//!   block-sized chunks at the front of each segment's receive vector
//!   (about 1.4% more bytes at 2294-byte blocks). v1 certificates are still
//!   read and transferred, with the whole-file check.
//! - **Address validation.** A sender's address is proven with a stateless
//!   token before any state is kept or more than a same-size reply is sent
//!   ([`validate`]): the paper's protocol would let a spoofed Want reflect a
//!   whole file at a victim.
//! - **Finishing.** A sync is recorded as done only when every file it found
//!   was completed or refused for a stated reason; otherwise it is retried
//!   with back-off, resuming from the stored receive vector.
//! - **Flow.** The paper's sender cycles through its missing blocks with no
//!   limit but its pacing. Here a pass that has ended waits for the vector
//!   that reflects it (the receiver sends it when the pass's last block
//!   arrives; the sender probes with that block if it or the vector is
//!   lost), and at most [`Config::window`] blocks go to a peer unanswered,
//!   the receiver acking at least every `window / 4` new blocks besides the
//!   paper's O(log p) policy: a sender faster than its receiver no longer
//!   overflows the receiver's socket and sends blocks two or more times.
//!   `window = 0` gives the paper's behaviour with the pass-end wait.
//! - **Interest.** Beyond the paper's common files, a node can
//!   [`want`](Endpoint::want) a fileId or [`subscribe`](Endpoint::subscribe)
//!   to a provider, for files it does not hold yet (§5.6's file required by
//!   all devices).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod beacon;
pub mod bitvec;
pub mod bloom;
pub mod cert;
pub mod congestion;
pub mod counters;
pub mod discovery;
pub mod endpoint;
pub mod id;
pub mod merkle;
pub mod ratelimit;
pub mod sim;
pub mod storage;
pub mod time;
pub mod transfer;
pub mod validate;
pub mod wire;

pub use bitvec::BitVec;
pub use cert::{CertError, Certificate, ProviderKey, PublicKey, TrustedKeys};
pub use counters::{Counters, PacketKind};
pub use endpoint::{
    Batch, CloseStatus, Config, ConfigError, Destination, Endpoint, Event, RejectReason, Transmit,
};
pub use id::{ContentHasher, FileId, Id160, InstanceId};
pub use storage::{MemStore, Partial, Storage, StorageError};
pub use time::Instant;
pub use validate::PeerAddr;
