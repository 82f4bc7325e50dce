//! Where file bytes live: the [`Storage`] trait the caller implements, and
//! [`MemStore`], an in-memory implementation for tests and simulations.
//!
//! Complete files are addressed by certificate (the store keeps the content of
//! exactly the certificates the endpoint holds). A partial file is the content
//! of a certificate being received plus its receive vector; the endpoint
//! persists the vector every `persist_blocks` new blocks or
//! `persist_interval`, and whenever a transfer stops. After a crash, blocks
//! received since the last persist are asked for again; a block is in the
//! persisted vector only after it was written (and, for v2 files, verified).

use crate::bitvec::BitVec;
use crate::cert::Certificate;
use crate::id::{FileId, InstanceId};
use crate::merkle;
use std::collections::BTreeMap;

/// A storage failure, with a message for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("storage: {0}")]
pub struct StorageError(pub String);

/// A stored partial transfer: the block size it was started with and which
/// blocks are held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    /// Bytes per block.
    pub block_size: u32,
    /// One bit per block of the whole file.
    pub received: BitVec,
}

/// File bytes for an endpoint.
pub trait Storage {
    /// Reads `buf.len()` bytes at `offset` of the complete file `cert`.
    fn read(&mut self, cert: &Certificate, offset: u64, buf: &mut [u8])
        -> Result<(), StorageError>;
    /// The stored partial state of `cert`, if a transfer of it was started before.
    fn partial_load(&mut self, cert: &Certificate) -> Result<Option<Partial>, StorageError>;
    /// Writes received bytes of `cert` at `offset` (creating the partial file).
    fn partial_write(
        &mut self,
        cert: &Certificate,
        offset: u64,
        data: &[u8],
    ) -> Result<(), StorageError>;
    /// Reads back bytes of the partial file.
    fn partial_read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError>;
    /// Durably records `partial` (blocks written so far must be durable first).
    fn partial_persist(
        &mut self,
        cert: &Certificate,
        partial: &Partial,
    ) -> Result<(), StorageError>;
    /// Atomically makes the (verified) partial file the current version of its
    /// file, replacing any older version.
    fn partial_commit(&mut self, cert: &Certificate) -> Result<(), StorageError>;
    /// Starts making the (verified) partial file current, as
    /// [`partial_commit`](Self::partial_commit) does; returns whether it is
    /// done already. A store that finishes later (on another thread, so
    /// that the caller goes on receiving meanwhile) returns `false`, and
    /// the caller hands the result to
    /// [`Endpoint::commit_finished`](crate::Endpoint::commit_finished) when
    /// it comes. Until then the file is neither fetched again nor offered
    /// in its new version. The default commits at once.
    fn partial_commit_begin(&mut self, cert: &Certificate) -> Result<bool, StorageError> {
        self.partial_commit(cert).map(|()| true)
    }
    /// Forgets the partial file and its vector.
    fn partial_discard(&mut self, cert: &Certificate) -> Result<(), StorageError>;
    /// The leaf hashes of the hash tree of the complete v2 file `cert`
    /// ([`merkle::leaf`] of each block, in order), if the store keeps them
    /// (a store may compute them when the file is published or opened). The
    /// endpoint checks them against the certificate's root; without them
    /// (`None`, the default) it hashes the stored bytes at the file's first
    /// request, on the sender's critical path.
    fn tree_leaves(&mut self, cert: &Certificate) -> Option<Vec<merkle::Hash>> {
        let _ = cert;
        None
    }
}

/// An in-memory store.
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    files: BTreeMap<FileId, (Certificate, Vec<u8>)>,
    partials: BTreeMap<InstanceId, (Vec<u8>, Option<Partial>)>,
}

fn range(len: usize, offset: u64, n: usize) -> Result<std::ops::Range<usize>, StorageError> {
    let start = usize::try_from(offset).map_err(|_| StorageError("offset too large".into()))?;
    let end = start
        .checked_add(n)
        .filter(|&e| e <= len)
        .ok_or_else(|| StorageError("read past end".into()))?;
    Ok(start..end)
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
    /// Stores a complete file (no check: callers may store tampered bytes on purpose).
    pub fn insert(&mut self, cert: Certificate, content: Vec<u8>) {
        self.files.insert(cert.file_id(), (cert, content));
    }
    /// The current certificate and content of a file.
    pub fn get(&self, file: &FileId) -> Option<&(Certificate, Vec<u8>)> {
        self.files.get(file)
    }
    /// Certificates of all complete files.
    pub fn certificates(&self) -> Vec<Certificate> {
        self.files.values().map(|(c, _)| c.clone()).collect()
    }
    /// The persisted partial state of an instance.
    pub fn partial(&self, instance: &InstanceId) -> Option<&Partial> {
        self.partials.get(instance).and_then(|(_, p)| p.as_ref())
    }
    /// Number of partial files.
    pub fn partial_count(&self) -> usize {
        self.partials.len()
    }
}

impl Storage for MemStore {
    fn read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        let (c, data) = self
            .files
            .get(&cert.file_id())
            .ok_or_else(|| StorageError("no such file".into()))?;
        if c.instance_id() != cert.instance_id() {
            return Err(StorageError("version replaced".into()));
        }
        buf.copy_from_slice(&data[range(data.len(), offset, buf.len())?]);
        Ok(())
    }
    fn partial_load(&mut self, cert: &Certificate) -> Result<Option<Partial>, StorageError> {
        Ok(self.partial(&cert.instance_id()).cloned())
    }
    fn partial_write(
        &mut self,
        cert: &Certificate,
        offset: u64,
        data: &[u8],
    ) -> Result<(), StorageError> {
        let size =
            usize::try_from(cert.size()).map_err(|_| StorageError("file too large".into()))?;
        let entry = self
            .partials
            .entry(cert.instance_id())
            .or_insert_with(|| (vec![0; size], None));
        let r = range(entry.0.len(), offset, data.len())?;
        entry.0[r].copy_from_slice(data);
        Ok(())
    }
    fn partial_read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        let (data, _) = self
            .partials
            .get(&cert.instance_id())
            .ok_or_else(|| StorageError("no partial".into()))?;
        buf.copy_from_slice(&data[range(data.len(), offset, buf.len())?]);
        Ok(())
    }
    fn partial_persist(
        &mut self,
        cert: &Certificate,
        partial: &Partial,
    ) -> Result<(), StorageError> {
        let size =
            usize::try_from(cert.size()).map_err(|_| StorageError("file too large".into()))?;
        self.partials
            .entry(cert.instance_id())
            .or_insert_with(|| (vec![0; size], None))
            .1 = Some(partial.clone());
        Ok(())
    }
    fn partial_commit(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let (data, _) = self
            .partials
            .remove(&cert.instance_id())
            .ok_or_else(|| StorageError("no partial".into()))?;
        self.files.insert(cert.file_id(), (cert.clone(), data));
        Ok(())
    }
    fn partial_discard(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        self.partials.remove(&cert.instance_id());
        Ok(())
    }
}
