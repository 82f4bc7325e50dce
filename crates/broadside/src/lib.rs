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
//! - [`sim`]: a two-node in-memory link that drives time (tests, experiments).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod beacon;
pub mod bitvec;
pub mod bloom;
pub mod cert;
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
    CloseStatus, Config, ConfigError, Destination, Endpoint, Event, RejectReason, Transmit,
};
pub use id::{ContentHasher, FileId, Id160, InstanceId};
pub use storage::{MemStore, Partial, Storage, StorageError};
pub use time::Instant;
