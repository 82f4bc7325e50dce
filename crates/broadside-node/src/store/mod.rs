//! The store directory: what readers see, what a node serves, partial
//! transfers, and crash recovery.
//!
//! ```text
//! DIR/NAME                        -> .broadside/current/NAME/content  (symlink)
//! DIR/NAME.bscert                 -> .broadside/current/NAME/cert     (symlink)
//! DIR/.broadside/current/NAME     -> ../versions/ID   (the commit point)
//! DIR/.broadside/versions/ID/     content + cert of one version (ID = instanceId),
//!                                 and `leaves`, its hash-tree leaves (v2; a cache)
//! DIR/.broadside/partial/ID.cert  certificate of an incoming version
//! DIR/.broadside/partial/ID.data  its content so far (blocks at their offsets)
//! DIR/.broadside/partial/ID.vec   its receive vector (block size + bits)
//! DIR/.broadside/.publish-*       a publisher's private copy (flock'ed by it)
//! DIR/.broadside/lock             held (flock) by the serving node; holds its pid
//! DIR/.broadside/commit.lock      held while a version is committed or recovered
//! DIR/.broadside/status.json      written by a running node
//! DIR/.broadside/quarantine/ID/   a version that failed verification
//! ```
//!
//! **Content and certificate never disagree.** A version is written whole
//! into its own directory — certificate first, then the fsynced content
//! renamed in, so a version directory with content is complete — and made
//! current by renaming one symlink (`current/NAME`) over the old one. `NAME`
//! and `NAME.bscert` both resolve through that symlink, so at every instant
//! they name the same version, before and after a crash. Readers that open
//! both see one version unless a commit falls between their two opens (open
//! the directory `current/NAME` once to rule that out too).
//!
//! **Recovery** ([`DiskStore::open`], under `commit.lock`): a complete
//! version newer than the current one (a crash after its content was moved
//! in, before the swap) is made current; incomplete and superseded version
//! directories, `.tmp-*` files, `.publish-*` files whose publisher is gone
//! (their flock is free) and partials of versions no newer than the current
//! one are removed. A store written by the older flat layout (regular
//! `NAME` and `NAME.bscert`) is moved into version directories the same way.
//!
//! **Receive vectors** are kept in memory by [`Storage::partial_persist`]
//! and written (temp + rename, after an `fdatasync` of the blocks they
//! cover, on the helper thread) by [`DiskStore::flush_vectors`], which the
//! node calls on a timer, and at once whenever `persist_blocks` new blocks
//! have arrived since the last write. A kill -9 or a power loss thus costs
//! at most one interval of re-sent blocks, never a block claimed but not
//! held.
//!
//! **Nothing unverified is committed.** A commit checks the whole received
//! file against its certificate (size, content hash, block-tree root)
//! before anything is renamed; one that fails is discarded and fetched
//! again, and the current version stays until the new one is durable.
//! A current version whose bytes fail the check at load is moved to
//! `.broadside/quarantine/` (removed at the next open), never served, and
//! fetched again ([`LoadIssue::refetch`]).
//!
//! **Killed publishers** leave a private copy, and perhaps a version
//! directory never made current: a serving node removes them at each
//! rescan ([`DiskStore::tidy`]), recovery at the next open. Received blocks are written behind in contiguous
//! runs of up to 1 MiB (flushed before any vector write, read-back or
//! commit), and complete files are read ahead 1 MiB at a time, so a block
//! costs a memory copy rather than a system call.

mod dirs;
mod load;
mod recover;
#[cfg(test)]
mod tests;

use crate::writeback::Writeback;
use crate::NodeError;
use broadside::cert::validate_name;
use broadside::merkle::{Hash, Tree, TreeBuilder};
use broadside::{
    BitVec, Certificate, ContentHasher, FileId, InstanceId, Partial, ProviderKey, Storage,
    StorageError, TrustedKeys,
};
use dirs::*;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};

const CERT_EXT: &str = "bscert";
const VEC_MAGIC: &[u8; 4] = b"BSV1";
/// Block size of published (v2) certificates unless another is asked for:
/// the largest that the default 2304-byte packets carry.
pub const DEFAULT_BLOCK_SIZE: u32 = 2304 - broadside::wire::DATA_HEADER_LEN as u32;
/// Blocks received since the last vector write that force a write at once.
pub const DEFAULT_PERSIST_BLOCKS: u32 = 1024;

/// A problem found while loading the store; the file is left as it is and not served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadIssue {
    /// The path concerned.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: String,
    /// A version that failed verification was quarantined: this file is
    /// to be fetched again (the caller wants it from peers).
    pub refetch: Option<FileId>,
}

/// A partial transfer on disk, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialInfo {
    /// Its certificate.
    pub cert: Certificate,
    /// Blocks held per the durable receive vector (0 if none yet).
    pub received_blocks: u32,
    /// Blocks in the file (0 if no vector yet).
    pub total_blocks: u32,
}

/// A receive vector not yet written, and the block count last written.
struct PendingVector {
    partial: Partial,
    written_blocks: u32,
}

/// Bytes read ahead from a complete file, and written behind to a partial.
const IO_WINDOW: usize = 1 << 20;

/// A window of a complete file held in memory (blocks are read in order).
#[derive(Default)]
struct ReadAhead {
    inst: Option<InstanceId>,
    offset: u64,
    bytes: Vec<u8>,
}

/// Contiguous received bytes not yet written to their partial file.
#[derive(Default)]
struct WriteBehind {
    inst: Option<InstanceId>,
    offset: u64,
    bytes: Vec<u8>,
}

/// The paths of a store directory, and the steps of a commit (which the
/// store runs on its background thread as well as on its own).
#[derive(Clone)]
struct Dirs {
    root: PathBuf,
    meta: PathBuf,
    partial_dir: PathBuf,
}

/// A commit finished in the background: its certificate, result, and
/// the superseded version directory to remove.
type Committed = (Certificate, Result<(), StorageError>, Option<PathBuf>);

/// A store directory.
pub struct DiskStore {
    dirs: Dirs,
    readers: BTreeMap<InstanceId, File>,
    writers: BTreeMap<InstanceId, File>,
    pending: BTreeMap<InstanceId, PendingVector>,
    persist_blocks: u32,
    read_ahead: ReadAhead,
    write_behind: WriteBehind,
    /// Syncs partial data in the background as vectors are written,
    /// commits, removes superseded versions.
    writeback: Writeback,
    /// Commits begun on the background thread and not yet reported.
    committing: usize,
    done_tx: Sender<Committed>,
    done: Receiver<Committed>,
    /// Held (flock) while this process serves the store; released on exit, even on kill -9.
    _lock: Option<File>,
}

/// Checks the name and block size of a publish (before any store is
/// opened or created).
pub fn check_publish(name: &str, block_size: u32) -> Result<(), NodeError> {
    validate_name(name).map_err(|e| NodeError::Usage(e.to_string()))?;
    if name.ends_with(&format!(".{CERT_EXT}")) {
        return Err(NodeError::Usage(format!(
            "invalid file name {name:?}: names ending in .{CERT_EXT} are reserved for certificates"
        )));
    }
    if !broadside::cert::V2_BLOCK_SIZES.contains(&block_size) {
        return Err(NodeError::Usage(
            broadside::CertError::BadBlockSize(block_size).to_string(),
        ));
    }
    Ok(())
}

impl DiskStore {
    fn layout(root: &Path, lock: Option<File>) -> DiskStore {
        let meta = root.join(".broadside");
        let (done_tx, done) = channel();
        DiskStore {
            dirs: Dirs {
                root: root.to_path_buf(),
                partial_dir: meta.join("partial"),
                meta,
            },
            committing: 0,
            done_tx,
            done,
            readers: BTreeMap::new(),
            writers: BTreeMap::new(),
            pending: BTreeMap::new(),
            persist_blocks: DEFAULT_PERSIST_BLOCKS,
            read_ahead: ReadAhead::default(),
            write_behind: WriteBehind::default(),
            writeback: Writeback::default(),
            _lock: lock,
        }
    }

    fn create_dirs(root: &Path) -> Result<(), NodeError> {
        for d in ["partial", "versions", "current"] {
            fs::create_dir_all(root.join(".broadside").join(d)).map_err(|e| {
                NodeError::Usage(format!(
                    "cannot create store directory {}: {e}",
                    root.display()
                ))
            })?;
        }
        Ok(())
    }

    /// Opens (creating if needed) a store directory to serve it: takes the
    /// store's lock (one serving node at a time), writes this process's pid
    /// into it, and recovers from any crash (see the module docs).
    pub fn open(root: &Path) -> Result<Self, NodeError> {
        Self::create_dirs(root)?;
        let lock = open_lock(&root.join(".broadside").join("lock"))?;
        // A publisher holds the lock for the moment of its recovery: wait a little.
        let mut tries = 0;
        while lock.try_lock().is_err() {
            tries += 1;
            if tries > 40 {
                return Err(NodeError::Usage(format!(
                    "store {} is in use by another process (a running node?); stop it first",
                    root.display()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = lock
            .set_len(0)
            .and_then(|()| lock.write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0));
        let mut s = Self::layout(root, Some(lock));
        s.recover()
            .map_err(|e| NodeError::Runtime(format!("recovering store {}: {e}", root.display())))?;
        Ok(s)
    }

    /// Opens (creating if needed) a store to publish into, alongside a
    /// serving node or alone. Without a node, recovers first (under the
    /// node's lock, released again); with one, the node did at its start.
    pub fn open_for_publish(root: &Path) -> Result<Self, NodeError> {
        Self::create_dirs(root)?;
        let lock = open_lock(&root.join(".broadside").join("lock"))?;
        let mut s = Self::layout(root, None);
        if lock.try_lock().is_ok() {
            s.recover().map_err(|e| {
                NodeError::Runtime(format!("recovering store {}: {e}", root.display()))
            })?;
        }
        Ok(s)
    }

    /// Opens an existing store for reading only (status reports): no lock,
    /// no recovery, safe while a node serves it.
    pub fn open_read_only(root: &Path) -> Result<Self, NodeError> {
        if !root.is_dir() {
            return Err(NodeError::Usage(format!(
                "{} is not a store directory",
                root.display()
            )));
        }
        Ok(Self::layout(root, None))
    }

    /// The pid of the node serving this store, if one is running (its lock is held).
    pub fn serving_pid(&self) -> Option<u32> {
        let f = File::open(self.dirs.meta.join("lock")).ok()?;
        if f.try_lock_shared().is_ok() {
            return None;
        }
        let mut s = String::new();
        (&f).read_to_string(&mut s).ok()?;
        s.trim().parse().ok()
    }

    /// Sets how many newly received blocks force a receive-vector write.
    pub fn set_persist_blocks(&mut self, blocks: u32) {
        self.persist_blocks = blocks.max(1);
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.dirs.root
    }

    /// Where a running node writes its status.
    pub fn status_path(&self) -> PathBuf {
        self.dirs.meta.join("status.json")
    }

    /// Makes the complete version directory of `cert` current (see
    /// [`Dirs::make_current`]) and has the superseded one removed in the background.
    fn make_current(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let old = self.dirs.make_current(cert)?;
        self.superseded(old);
        Ok(())
    }

    /// After a commit: readers of replaced versions are closed, and the
    /// superseded version directory is removed in the background.
    fn superseded(&mut self, old: Option<PathBuf>) {
        if let Some(dir) = old {
            self.writeback.remove_dir_soon(dir);
        }
        self.readers.clear();
        self.read_ahead.inst = None;
    }

    /// The version of `name` that is current on disk, if any.
    pub fn current(&self, name: &str) -> Option<Certificate> {
        self.dirs.current(name)
    }

    /// The instanceId (hex) current on disk for each name: one `readlink`
    /// per file, cheap enough to poll for versions published meanwhile.
    pub fn current_instances(&self) -> BTreeMap<String, String> {
        self.dirs.current_instances()
    }

    /// Certificates beside files whose signature verifies (trust and
    /// content not checked: for status reports).
    pub fn certificates(&self) -> Vec<Certificate> {
        let mut certs: Vec<Certificate> = file_names(&self.dirs.root)
            .into_iter()
            .filter(|n| n.ends_with(&format!(".{CERT_EXT}")))
            .filter_map(|n| {
                let p = self.dirs.root.join(n);
                read_cert(&p).filter(|c| p == self.dirs.cert_path(c.name()))
            })
            .collect();
        certs.sort_by(|a, b| a.name().cmp(b.name()));
        certs
    }

    /// Partial transfers on disk of versions newer than the current one.
    pub fn partials(&self) -> Vec<PartialInfo> {
        let mut out: Vec<PartialInfo> = file_names(&self.dirs.partial_dir)
            .into_iter()
            .filter(|n| n.ends_with(".cert"))
            .filter_map(|n| read_cert(&self.dirs.partial_dir.join(n)))
            .filter(|c| self.current(c.name()).is_none_or(|h| c.supersedes(&h)))
            .map(|cert| {
                let v = self.read_vector(&cert.instance_id());
                PartialInfo {
                    received_blocks: v.as_ref().map_or(0, |p| p.received.count_ones()),
                    total_blocks: v.as_ref().map_or(0, |p| p.received.len()),
                    cert,
                }
            })
            .collect();
        out.sort_by(|a, b| a.cert.name().cmp(b.cert.name()));
        out
    }

    fn read_vector(&self, inst: &InstanceId) -> Option<Partial> {
        let b = fs::read(self.dirs.partial_path(inst, "vec")).ok()?;
        if b.len() < 8 || &b[..4] != VEC_MAGIC {
            return None;
        }
        let block_size = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        let received = BitVec::decode(&b[8..], u32::MAX).ok()?;
        Some(Partial {
            block_size,
            received,
        })
    }

    /// [`publish_blocks`](Self::publish_blocks) with blocks of
    /// [`DEFAULT_BLOCK_SIZE`] bytes.
    pub fn publish(
        &mut self,
        key: &ProviderKey,
        src: &Path,
        name: &str,
    ) -> Result<Certificate, NodeError> {
        self.publish_blocks(key, src, name, DEFAULT_BLOCK_SIZE)
    }

    /// Signs and stores a new version of `name` with the content of `src`:
    /// version 1, or one more than the current version. The certificate is
    /// v2: it commits to the hash tree over `block_size`-byte blocks, so
    /// receivers check every block on arrival (receivers whose packets
    /// cannot carry such a block refuse the file). Safe while a node serves
    /// the store (it picks the new version up when it rescans).
    pub fn publish_blocks(
        &mut self,
        key: &ProviderKey,
        src: &Path,
        name: &str,
        block_size: u32,
    ) -> Result<Certificate, NodeError> {
        check_publish(name, block_size)?;
        let rt = |e: StorageError| NodeError::Runtime(e.to_string());
        let mut input = File::open(src)
            .map_err(|e| NodeError::Usage(format!("cannot read {}: {e}", src.display())))?;
        // A private copy, locked while we live, so the hash covers exactly
        // the bytes stored. It takes its name once locked, so that a node
        // tidying up never mistakes it for a killed publisher's.
        let tmp = self
            .dirs
            .meta
            .join(format!("{PUBLISH_PREFIX}{}-{}", std::process::id(), name));
        let fresh = tmp_path(&self.dirs.meta, "publish");
        let mut copy = File::create(&fresh)
            .map_err(|e| NodeError::Runtime(format!("create {}: {e}", fresh.display())))?;
        copy.lock()
            .and_then(|()| fs::rename(&fresh, &tmp))
            .map_err(|e| NodeError::Runtime(format!("lock {}: {e}", tmp.display())))?;
        std::io::copy(&mut input, &mut copy)
            .and_then(|_| copy.sync_all())
            .map_err(|e| NodeError::Runtime(format!("copy {}: {e}", src.display())))?;
        let (size, hash, leaves) = tree_file(&tmp, block_size)
            .map_err(|e| NodeError::Runtime(format!("hashing {}: {e}", tmp.display())))?;
        let _commit = self.dirs.commit_lock().map_err(rt)?;
        let version = match self.current(name) {
            None => 1,
            Some(c) if c.provider() != key.public() => {
                let _ = fs::remove_file(&tmp);
                return Err(NodeError::Usage(format!(
                    "{name:?} in this store belongs to provider {}; a name is owned by one provider",
                    c.provider()
                )));
            }
            Some(c) => match c.version().checked_add(1) {
                Some(v) => v,
                None => {
                    let _ = fs::remove_file(&tmp);
                    return Err(NodeError::Usage(format!(
                        "{name:?} is at version {}, the last one",
                        c.version()
                    )));
                }
            },
        };
        let root = Tree::new(leaves.clone(), block_size)
            .map(|t| t.root())
            .ok_or_else(|| {
                let _ = fs::remove_file(&tmp);
                NodeError::Usage(format!(
                    "{name:?}: {size} bytes do not fit blocks of {block_size} bytes"
                ))
            })?;
        let cert = Certificate::issue_v2(key, name, version, size, hash, block_size, root)
            .map_err(|e| {
                let _ = fs::remove_file(&tmp);
                NodeError::Usage(e.to_string())
            })?;
        self.install(&cert, &tmp, Some(&leaves)).map_err(rt)?;
        Ok(cert)
    }

    /// Installs `cert` (see [`Dirs::install`]); the superseded version is
    /// removed in the background. Call under the commit lock.
    fn install(
        &mut self,
        cert: &Certificate,
        content_src: &Path,
        leaves: Option<&[Hash]>,
    ) -> Result<(), StorageError> {
        let old = self.dirs.install(cert, content_src, leaves)?;
        self.superseded(old);
        Ok(())
    }

    /// Waits until the background work queued so far (vector writes,
    /// commits, removals, tidying) is done.
    pub fn wait_background(&mut self) {
        self.writeback.wait();
    }

    /// Writes every receive vector not yet written (after the blocks it covers).
    pub fn flush_vectors(&mut self) -> Result<(), StorageError> {
        self.flush_writes()?;
        let ids: Vec<InstanceId> = self.pending.keys().copied().collect();
        ids.into_iter().try_for_each(|id| self.write_vector(&id))
    }

    /// Writes the received bytes held back (one `pwrite` per contiguous run).
    fn flush_writes(&mut self) -> Result<(), StorageError> {
        let Some(inst) = self.write_behind.inst.take() else {
            return Ok(());
        };
        let offset = self.write_behind.offset;
        let mut bytes = std::mem::take(&mut self.write_behind.bytes);
        let r = match self.writers.get(&inst) {
            Some(f) => f
                .write_all_at(&bytes, offset)
                .map_err(io(format!("write partial {}", inst.to_hex()))),
            None => Ok(()),
        };
        bytes.clear();
        self.write_behind.bytes = bytes;
        r
    }

    /// Queues the write of a receive vector behind the sync of the data it
    /// covers, on the helper thread: a vector on disk never names a block
    /// whose bytes are not durable (not even after a power loss), and the
    /// loop does not wait for the sync. A vector whose data file was
    /// removed or replaced meanwhile (a commit, a discard) is dropped.
    fn write_vector(&mut self, inst: &InstanceId) -> Result<(), StorageError> {
        self.flush_writes()?;
        let Some(p) = self.pending.remove(inst) else {
            return Ok(());
        };
        let Some(data) = self.writers.get(inst).and_then(|f| f.try_clone().ok()) else {
            return Ok(());
        };
        let mut b = VEC_MAGIC.to_vec();
        b.extend_from_slice(&p.partial.block_size.to_be_bytes());
        p.partial.received.encode(&mut b);
        let (data_path, vec_path) = (
            self.dirs.partial_path(inst, "data"),
            self.dirs.partial_path(inst, "vec"),
        );
        self.writeback.run(move || {
            let same = |f: &File| {
                let (a, b) = (f.metadata().ok()?, fs::metadata(&data_path).ok()?);
                Some(a.ino() == b.ino() && a.dev() == b.dev())
            };
            let written = data
                .sync_data()
                .map_err(io(format!("fsync {}", data_path.display())))
                .and_then(|()| match same(&data) {
                    Some(true) => write_replace(&vec_path, &b, false),
                    _ => Ok(()),
                });
            if let Err(e) = written {
                tracing::warn!("receive vector not written: {e}");
            }
        });
        Ok(())
    }

    fn writer(&mut self, cert: &Certificate) -> Result<&File, StorageError> {
        let inst = cert.instance_id();
        if !self.writers.contains_key(&inst) {
            let cert_path = self.dirs.partial_path(&inst, "cert");
            // Not fsynced: a partial is best effort like its vector (a
            // lost or torn one is removed at the next open and fetched again).
            if !cert_path.exists() {
                write_replace(&cert_path, cert.encoded(), false)?;
            }
            let path = self.dirs.partial_path(&inst, "data");
            if !path.exists() {
                // A vector left without its data names nothing held.
                remove_if_exists(&self.dirs.partial_path(&inst, "vec"))?;
            }
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(format!("open {}", path.display())))?;
            if f.metadata().map_err(io("stat"))?.len() != cert.size() {
                f.set_len(cert.size()).map_err(io("preallocate"))?;
            }
            self.writers.insert(inst, f);
        }
        self.writers
            .get(&inst)
            .ok_or_else(|| StorageError("writer vanished".into()))
    }

    fn forget_partial(&mut self, inst: &InstanceId) -> Result<(), StorageError> {
        if self.write_behind.inst == Some(*inst) {
            self.write_behind.inst = None;
            self.write_behind.bytes.clear();
        }
        self.writers.remove(inst);
        self.pending.remove(inst);
        self.dirs.remove_partial(inst)
    }

    /// Makes everything received of `cert` durable-ready for a commit:
    /// held-back bytes written, and its writer and vector taken out (the
    /// commit owns the partial from here on).
    fn take_for_commit(&mut self, cert: &Certificate) -> Result<Option<File>, StorageError> {
        let inst = cert.instance_id();
        self.flush_writes()?;
        self.pending.remove(&inst);
        Ok(self.writers.remove(&inst))
    }

    /// Results of the commits [`Storage::partial_commit_begin`] left
    /// pending that finished since the last call (for
    /// `Endpoint::commit_finished`).
    pub fn finished_commits(&mut self) -> Vec<(Certificate, Result<(), StorageError>)> {
        let done: Vec<_> = self.done.try_iter().collect();
        self.committing -= done.len();
        let old: Vec<_> = done.iter().map(|d| d.2.clone()).collect();
        for o in old {
            self.superseded(o);
        }
        done.into_iter().map(|(c, r, _)| (c, r)).collect()
    }

    /// Commits begun and not yet returned by [`Self::finished_commits`].
    pub fn commits_pending(&self) -> usize {
        self.committing
    }
}

impl Storage for DiskStore {
    fn read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        let inst = cert.instance_id();
        let ra = &self.read_ahead;
        let hit = ra.inst == Some(inst)
            && offset >= ra.offset
            && offset + buf.len() as u64 <= ra.offset + ra.bytes.len() as u64;
        if !hit {
            if !self.readers.contains_key(&inst) {
                let path = self.dirs.version_dir(&inst).join("content");
                let f = File::open(&path).map_err(io(format!("open {}", path.display())))?;
                self.readers.insert(inst, f);
            }
            let f = self
                .readers
                .get(&inst)
                .ok_or_else(|| StorageError("reader vanished".into()))?;
            let want = (cert.size().saturating_sub(offset) as usize)
                .min(IO_WINDOW)
                .max(buf.len());
            let ra = &mut self.read_ahead;
            ra.inst = None;
            ra.bytes.resize(want, 0);
            f.read_exact_at(&mut ra.bytes, offset)
                .map_err(io(format!("read {}", cert.name())))?;
            ra.inst = Some(inst);
            ra.offset = offset;
        }
        let ra = &self.read_ahead;
        let start = (offset - ra.offset) as usize;
        buf.copy_from_slice(&ra.bytes[start..start + buf.len()]);
        Ok(())
    }

    fn partial_load(&mut self, cert: &Certificate) -> Result<Option<Partial>, StorageError> {
        let inst = cert.instance_id();
        if let Some(p) = self.pending.get(&inst) {
            return Ok(Some(p.partial.clone()));
        }
        // A vector without its data file would claim blocks we do not hold.
        if !self.dirs.partial_path(&inst, "data").exists() {
            return Ok(None);
        }
        Ok(self.read_vector(&inst))
    }

    fn partial_write(
        &mut self,
        cert: &Certificate,
        offset: u64,
        data: &[u8],
    ) -> Result<(), StorageError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&e| e <= cert.size());
        if end.is_none() {
            return Err(StorageError(format!(
                "write past the end of {}",
                cert.name()
            )));
        }
        self.writer(cert)?;
        let inst = cert.instance_id();
        let wb = &self.write_behind;
        let contiguous = wb.inst == Some(inst)
            && wb.offset + wb.bytes.len() as u64 == offset
            && wb.bytes.len() + data.len() <= IO_WINDOW;
        if !contiguous {
            self.flush_writes()?;
            self.write_behind.inst = Some(inst);
            self.write_behind.offset = offset;
        }
        self.write_behind.bytes.extend_from_slice(data);
        Ok(())
    }

    fn partial_read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        self.flush_writes()?;
        self.writer(cert)?
            .read_exact_at(buf, offset)
            .map_err(io(format!("read back {}", cert.name())))
    }

    /// Records the vector in memory; [`DiskStore::flush_vectors`] writes it
    /// (on the helper thread, after an `fdatasync` of the blocks it covers:
    /// a sync on the receive path stalls the socket and turns into loss).
    /// Written at once when `persist_blocks` blocks arrived since the last
    /// write. A vector on disk thus names only durable blocks, after a kill
    /// -9 or a power loss. Blocks changed on disk behind the node's back
    /// are caught at the commit, which checks the whole file against the
    /// certificate: the partial is then discarded and fetched again, and a
    /// stored file is never corrupted.
    fn partial_persist(
        &mut self,
        cert: &Certificate,
        partial: &Partial,
    ) -> Result<(), StorageError> {
        self.writer(cert)?;
        let inst = cert.instance_id();
        let written_blocks = match self.pending.get(&inst) {
            Some(p) => p.written_blocks,
            None => self
                .read_vector(&inst)
                .map_or(0, |v| v.received.count_ones()),
        };
        let due =
            partial.received.count_ones().saturating_sub(written_blocks) >= self.persist_blocks;
        self.pending.insert(
            inst,
            PendingVector {
                partial: partial.clone(),
                written_blocks,
            },
        );
        if due {
            self.write_vector(&inst)?;
        }
        Ok(())
    }

    fn partial_commit(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let data = self.take_for_commit(cert)?;
        let old = self.dirs.commit_partial(cert, data.as_ref())?;
        self.superseded(old);
        Ok(())
    }

    /// Commits on the background thread (the fsyncs of a commit cost
    /// milliseconds, during which the node would not receive): the result
    /// comes from [`DiskStore::finished_commits`].
    fn partial_commit_begin(&mut self, cert: &Certificate) -> Result<bool, StorageError> {
        let data = self.take_for_commit(cert)?;
        let (dirs, cert, done) = (self.dirs.clone(), cert.clone(), self.done_tx.clone());
        self.committing += 1;
        self.writeback.run(move || {
            let r = dirs.commit_partial(&cert, data.as_ref());
            let (r, old) = match r {
                Ok(old) => (Ok(()), old),
                Err(e) => (Err(e), None),
            };
            let _ = done.send((cert, r, old));
        });
        Ok(false)
    }

    fn partial_discard(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        self.forget_partial(&cert.instance_id())
    }

    fn tree_leaves(&mut self, cert: &Certificate) -> Option<Vec<Hash>> {
        let bytes = fs::read(self.dirs.version_dir(&cert.instance_id()).join(LEAVES)).ok()?;
        let (leaves, rest) = bytes.as_chunks::<{ broadside::merkle::HASH_LEN }>();
        rest.is_empty().then(|| leaves.to_vec())
    }
}
