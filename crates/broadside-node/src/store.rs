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
//! and written (temp + rename, after the blocks they cover) by
//! [`DiskStore::flush_vectors`], which the node calls on a timer, and at once
//! whenever `persist_blocks` new blocks have arrived since the last write. A
//! kill -9 thus costs at most one interval of re-sent blocks, never a block
//! claimed but not held. Received blocks are written behind in contiguous
//! runs of up to 1 MiB (flushed before any vector write, read-back or
//! commit), and complete files are read ahead 1 MiB at a time, so a block
//! costs a memory copy rather than a system call.

use crate::writeback::Writeback;
use crate::NodeError;
use broadside::cert::validate_name;
use broadside::merkle::{Hash, Tree, TreeBuilder};
use broadside::{
    BitVec, Certificate, ContentHasher, InstanceId, Partial, ProviderKey, Storage, StorageError,
    TrustedKeys,
};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, FileExt};
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
    cert: Certificate,
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

fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> StorageError {
    move |e| StorageError(format!("{what}: {e}"))
}

fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(format!("fsync {}", dir.display())))
}

/// A fresh temporary name in `dir`; every temporary file starts with `.tmp-`.
fn tmp_path(dir: &Path, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".tmp-{}-{n}-{what}", std::process::id()))
}

/// Temp file + rename (a reader or a restarted process sees the old or the
/// new bytes, never a mix); with `durable`, fsync the file and the directory too.
fn write_replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), StorageError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    write_renamed(dir, path, bytes, durable)?;
    if durable {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Temp file in `dir` (fsynced if `synced`) renamed to `path`; the
/// directory itself is not synced (the caller does, once for several).
fn write_renamed(dir: &Path, path: &Path, bytes: &[u8], synced: bool) -> Result<(), StorageError> {
    let tmp = tmp_path(dir, "w");
    let mut f = File::create(&tmp).map_err(io(format!("create {}", tmp.display())))?;
    f.write_all(bytes)
        .map_err(io(format!("write {}", tmp.display())))?;
    if synced {
        f.sync_all()
            .map_err(io(format!("fsync {}", tmp.display())))?;
    }
    fs::rename(&tmp, path).map_err(io(format!("rename to {}", path.display())))
}

/// Points `link` at `target`, atomically replacing whatever `link` was;
/// returns whether it changed (it did not if it pointed there already).
fn symlink_replace(target: &Path, link: &Path) -> Result<bool, StorageError> {
    if fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(false);
    }
    let dir = link.parent().unwrap_or(Path::new("."));
    let tmp = tmp_path(dir, "link");
    symlink(target, &tmp).map_err(io(format!("symlink {}", tmp.display())))?;
    fs::rename(&tmp, link).map_err(io(format!("rename to {}", link.display())))?;
    Ok(true)
}

fn remove_if_exists(p: &Path) -> Result<(), StorageError> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io(format!("remove {}", p.display()))(e))
        }
        _ => Ok(()),
    }
}

fn hash_file(path: &Path) -> std::io::Result<(broadside::Id160, u64)> {
    let mut f = File::open(path)?;
    let mut h = ContentHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let r = f.read(&mut buf)?;
        if r == 0 {
            return Ok((h.finish(), n));
        }
        h.update(&buf[..r]);
        n += r as u64;
    }
}

/// Size, content hash and block-tree leaves of a file, in one pass.
fn tree_file(path: &Path, block_size: u32) -> std::io::Result<(u64, broadside::Id160, Vec<Hash>)> {
    let mut f = File::open(path)?;
    let mut b = TreeBuilder::new(block_size);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let r = f.read(&mut buf)?;
        if r == 0 {
            return Ok(b.finish());
        }
        b.update(&buf[..r]);
    }
}

/// The file of a version directory that caches its hash-tree leaves.
const LEAVES: &str = "leaves";

/// Writes the leaf cache (not fsynced: the endpoint checks it against the
/// certificate's root, and a missing one is rebuilt).
fn write_leaves(dir: &Path, leaves: &[Hash]) -> Result<(), StorageError> {
    write_replace(&dir.join(LEAVES), leaves.as_flattened(), false)
}

fn read_cert(path: &Path) -> Option<Certificate> {
    fs::read(path)
        .ok()
        .and_then(|b| Certificate::decode(&b).ok())
}

fn file_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

fn open_lock(path: &Path) -> Result<File, NodeError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| NodeError::Runtime(format!("cannot open {}: {e}", path.display())))
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
        file_names(&self.dirs.meta.join("current"))
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| {
                let t = fs::read_link(self.dirs.current_link(&n)).ok()?;
                let id = t.file_name()?.to_str()?.to_owned();
                Some((n, id))
            })
            .collect()
    }

    fn recover(&mut self) -> Result<(), StorageError> {
        let _commit = self.dirs.commit_lock()?;
        self.migrate_flat_layout()?;
        // Leftover temporary files; a publisher's copy only once its owner is gone.
        for dir in [
            self.dirs.root.clone(),
            self.dirs.meta.clone(),
            self.dirs.partial_dir.clone(),
            self.dirs.meta.join("current"),
            self.dirs.meta.join("versions"),
        ] {
            for n in file_names(&dir) {
                let p = dir.join(&n);
                let orphan = n.starts_with(".tmp-")
                    || (n.starts_with(".publish-")
                        && File::open(&p).is_ok_and(|f| f.try_lock().is_ok()));
                if orphan {
                    remove_if_exists(&p)?;
                }
            }
        }
        // Roll complete versions newer than the current one forward; drop the rest.
        let versions = self.dirs.meta.join("versions");
        let current = self.current_instances();
        for id in file_names(&versions) {
            let dir = versions.join(&id);
            if current.values().any(|c| *c == id) {
                continue;
            }
            let complete = read_cert(&dir.join("cert"))
                .filter(|c| c.instance_id().to_hex() == id && dir.join("content").is_file());
            match complete {
                Some(c)
                    if self
                        .current(c.name())
                        .is_none_or(|h| h.version() < c.version()) =>
                {
                    // Recovery finishes before the store opens: the
                    // superseded version goes now, not in the background.
                    if let Some(old) = self.dirs.make_current(&c)? {
                        fs::remove_dir_all(&old)
                            .map_err(io(format!("remove {}", old.display())))?;
                    }
                }
                _ => fs::remove_dir_all(&dir).map_err(io(format!("remove {}", dir.display())))?,
            }
        }
        // Partials of versions no newer than the current one, and stray pieces.
        for n in file_names(&self.dirs.partial_dir) {
            let p = self.dirs.partial_dir.join(&n);
            let Some((id, ext)) = n.split_once('.') else {
                remove_if_exists(&p)?;
                continue;
            };
            let cert = read_cert(&self.dirs.partial_dir.join(format!("{id}.cert")));
            let keep = matches!(ext, "cert" | "data" | "vec")
                && cert.is_some_and(|c| {
                    self.current(c.name())
                        .is_none_or(|h| h.version() < c.version())
                });
            if !keep {
                remove_if_exists(&p)?;
            }
        }
        sync_dir(&self.dirs.partial_dir)
    }

    /// Moves files of the older flat layout (`NAME` and `NAME.bscert` as
    /// regular files) into version directories. Restartable: the content is
    /// hard-linked, and the regular certificate is replaced last.
    fn migrate_flat_layout(&mut self) -> Result<(), StorageError> {
        for n in file_names(&self.dirs.root) {
            let cert_path = self.dirs.root.join(&n);
            let is_flat_cert = n.ends_with(&format!(".{CERT_EXT}"))
                && fs::symlink_metadata(&cert_path).is_ok_and(|m| m.is_file());
            let Some(cert) = is_flat_cert.then(|| read_cert(&cert_path)).flatten() else {
                continue;
            };
            if cert_path != self.dirs.cert_path(cert.name()) {
                continue; // misnamed: left alone, reported by `load`.
            }
            let content = self.dirs.root.join(cert.name());
            let dir = self.dirs.version_dir(&cert.instance_id());
            fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
            write_replace(&dir.join("cert"), cert.encoded(), true)?;
            if fs::symlink_metadata(&content).is_ok_and(|m| m.is_file())
                && !dir.join("content").exists()
            {
                fs::hard_link(&content, dir.join("content"))
                    .map_err(io(format!("link {}", content.display())))?;
            }
            sync_dir(&dir)?;
            if dir.join("content").exists() {
                self.make_current(&cert)?;
            }
        }
        Ok(())
    }

    /// Loads every certificate beside its file. Each certificate must decode,
    /// verify, come from a trusted provider, sit under its own name, and its
    /// file must have the right size and content hash; anything else is
    /// reported as a [`LoadIssue`] and not served (and left untouched).
    pub fn load(
        &mut self,
        trusted: &TrustedKeys,
    ) -> Result<(Vec<Certificate>, Vec<LoadIssue>), NodeError> {
        if !self.dirs.root.is_dir() {
            return Err(NodeError::Runtime(format!(
                "cannot list store {}",
                self.dirs.root.display()
            )));
        }
        let mut certs = Vec::new();
        let mut issues = Vec::new();
        for n in file_names(&self.dirs.root) {
            if n.ends_with(&format!(".{CERT_EXT}")) {
                match self.verify(&self.dirs.root.join(&n), trusted) {
                    Ok(c) => certs.push(c),
                    Err(i) => issues.push(i),
                }
            }
        }
        Ok((certs, issues))
    }

    /// Loads and verifies the current version of `name` (as [`DiskStore::load`] does).
    pub fn load_one(&self, name: &str, trusted: &TrustedKeys) -> Result<Certificate, LoadIssue> {
        self.verify(&self.dirs.cert_path(name), trusted)
    }

    fn verify(&self, path: &Path, trusted: &TrustedKeys) -> Result<Certificate, LoadIssue> {
        let issue = |problem: String| LoadIssue {
            path: path.to_path_buf(),
            problem,
        };
        let cert = fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| Certificate::decode(&b).map_err(|e| e.to_string()))
            .map_err(|e| issue(format!("certificate refused: {e}")))?;
        cert.check_trusted(trusted)
            .map_err(|e| issue(e.to_string()))?;
        if path != self.dirs.cert_path(cert.name()) {
            return Err(issue(format!(
                "certificate is for {:?}, not this file name",
                cert.name()
            )));
        }
        let content = self.dirs.root.join(cert.name());
        let dir = self.dirs.version_dir(&cert.instance_id());
        // A serving store keeps the leaves of a v2 file it received (or
        // that lost its cache) for serving, computed in the same read.
        let measured = match cert.tree() {
            Some((block_size, _)) if self._lock.is_some() && !dir.join(LEAVES).exists() => {
                tree_file(&content, block_size).map(|(n, h, l)| (h, n, Some(l)))
            }
            _ => hash_file(&content).map(|(h, n)| (h, n, None)),
        };
        match measured {
            Ok((h, n, leaves)) if n == cert.size() && h == cert.content_hash() => {
                if let Some(l) = leaves {
                    // Only a cache: serving rebuilds what is missing.
                    let _ = write_leaves(&dir, &l);
                }
                Ok(cert)
            }
            Ok((_, n, _)) => Err(issue(format!(
                "content of {} does not match its certificate (size {n}, expected {}); not served",
                cert.name(),
                cert.size()
            ))),
            Err(e) => Err(issue(format!("cannot read {}: {e}", cert.name()))),
        }
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
            .filter(|c| {
                self.current(c.name())
                    .is_none_or(|h| h.version() < c.version())
            })
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
        validate_name(name).map_err(|e| NodeError::Usage(e.to_string()))?;
        if name.ends_with(&format!(".{CERT_EXT}")) {
            return Err(NodeError::Usage(format!("invalid file name {name:?}: names ending in .{CERT_EXT} are reserved for certificates")));
        }
        if !broadside::cert::V2_BLOCK_SIZES.contains(&block_size) {
            return Err(NodeError::Usage(
                broadside::CertError::BadBlockSize(block_size).to_string(),
            ));
        }
        let rt = |e: StorageError| NodeError::Runtime(e.to_string());
        // A private copy, locked while we live, so the hash covers exactly the bytes stored.
        let tmp = self
            .dirs
            .meta
            .join(format!(".publish-{}-{}", std::process::id(), name));
        let mut copy = File::create(&tmp)
            .map_err(|e| NodeError::Runtime(format!("create {}: {e}", tmp.display())))?;
        copy.lock()
            .map_err(|e| NodeError::Runtime(format!("lock {}: {e}", tmp.display())))?;
        let mut input = File::open(src)
            .map_err(|e| NodeError::Usage(format!("cannot read {}: {e}", src.display())))?;
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

    fn write_vector(&mut self, inst: &InstanceId) -> Result<(), StorageError> {
        self.flush_writes()?;
        let Some(p) = self.pending.remove(inst) else {
            return Ok(());
        };
        let mut b = VEC_MAGIC.to_vec();
        b.extend_from_slice(&p.partial.block_size.to_be_bytes());
        p.partial.received.encode(&mut b);
        write_replace(
            &self.dirs.partial_path(&p.cert.instance_id(), "vec"),
            &b,
            false,
        )?;
        if let Some(f) = self.writers.get(inst) {
            self.writeback.sync_soon(f);
        }
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

impl Dirs {
    fn partial_path(&self, inst: &InstanceId, ext: &str) -> PathBuf {
        self.partial_dir.join(format!("{}.{ext}", inst.to_hex()))
    }

    fn version_dir(&self, inst: &InstanceId) -> PathBuf {
        self.meta.join("versions").join(inst.to_hex())
    }

    fn current_link(&self, name: &str) -> PathBuf {
        self.meta.join("current").join(name)
    }

    fn cert_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.{CERT_EXT}"))
    }

    fn current(&self, name: &str) -> Option<Certificate> {
        read_cert(&self.cert_path(name))
    }

    fn commit_lock(&self) -> Result<File, StorageError> {
        let f =
            open_lock(&self.meta.join("commit.lock")).map_err(|e| StorageError(e.to_string()))?;
        f.lock().map_err(io("lock commit.lock"))?;
        Ok(f)
    }

    /// Removes a partial's files (not durably: a partial of a version no
    /// newer than the current one is removed at the next open).
    fn remove_partial(&self, inst: &InstanceId) -> Result<(), StorageError> {
        for ext in ["vec", "data", "cert"] {
            remove_if_exists(&self.partial_path(inst, ext))?;
        }
        Ok(())
    }

    /// Makes the complete version directory of `cert` current: swap the
    /// `current/NAME` symlink, make sure `NAME` and `NAME.bscert` point
    /// through it (the store directory is synced only if they changed).
    /// Returns the superseded version directory, for the caller to remove.
    /// Idempotent.
    fn make_current(&self, cert: &Certificate) -> Result<Option<PathBuf>, StorageError> {
        let name = cert.name();
        let link = self.current_link(name);
        let old = fs::read_link(&link).ok();
        let target = Path::new("..")
            .join("versions")
            .join(cert.instance_id().to_hex());
        symlink_replace(&target, &link)?;
        sync_dir(&self.meta.join("current"))?;
        let via = Path::new(".broadside").join("current").join(name);
        let content = symlink_replace(&via.join("content"), &self.root.join(name))?;
        let cert_link = symlink_replace(&via.join("cert"), &self.cert_path(name))?;
        if content || cert_link {
            sync_dir(&self.root)?;
        }
        Ok(old
            .filter(|o| *o != target)
            .map(|o| self.meta.join("current").join(o))
            .filter(|d| d.is_dir()))
    }

    /// Writes the version directory of `cert` (certificate, then `content`
    /// renamed from `content_src`) and makes it current. Call under the commit lock.
    /// `leaves` (v2), when known, are kept beside them for serving.
    /// Returns the superseded version directory.
    fn install(
        &self,
        cert: &Certificate,
        content_src: &Path,
        leaves: Option<&[Hash]>,
    ) -> Result<Option<PathBuf>, StorageError> {
        let dir = self.version_dir(&cert.instance_id());
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(io(format!("remove {}", dir.display())))?;
        }
        fs::create_dir(&dir).map_err(io(format!("create {}", dir.display())))?;
        if let Some(l) = leaves {
            write_leaves(&dir, l)?;
        }
        // One directory sync covers both entries: the directory is not
        // current until `make_current`, so their order does not matter.
        write_renamed(&dir, &dir.join("cert"), cert.encoded(), true)?;
        fs::rename(content_src, dir.join("content"))
            .map_err(io(format!("move content of {}", cert.name())))?;
        sync_dir(&dir)?;
        self.make_current(cert)
    }

    /// Commits the received partial of `cert` (its bytes all written to
    /// `data`, its writer): sync, then install under the commit lock unless
    /// a version at least as new was published meanwhile; the partial's
    /// files go either way. Returns the superseded version directory.
    fn commit_partial(
        &self,
        cert: &Certificate,
        data: Option<&File>,
    ) -> Result<Option<PathBuf>, StorageError> {
        let inst = cert.instance_id();
        if let Some(f) = data {
            f.sync_data()
                .map_err(io(format!("fsync {}", cert.name())))?;
        }
        let _commit = self.commit_lock()?;
        if let Some(have) = self.current(cert.name()) {
            if have.version() >= cert.version() {
                self.remove_partial(&inst)?;
                return Err(StorageError(format!(
                    "{} version {} was superseded by version {} meanwhile",
                    cert.name(),
                    cert.version(),
                    have.version()
                )));
            }
        }
        let old = self.install(cert, &self.partial_path(&inst, "data"), None)?;
        self.remove_partial(&inst)?;
        Ok(old)
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
    /// (after the blocks it covers, both through the page cache: fsync on
    /// the receive path stalls the socket and turns into loss). Written at
    /// once when `persist_blocks` blocks arrived since the last write. This
    /// survives a process crash (kill -9) up to the last write. After a
    /// power loss the vector may claim blocks whose bytes were lost; the
    /// content hash check before commit then discards the partial, so a
    /// stored file is never corrupted, only the transfer repeated.
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
                cert: cert.clone(),
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
#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(k: &ProviderKey) -> TrustedKeys {
        TrustedKeys::new([k.public()])
    }

    #[test]
    fn publish_load_and_version_increments() {
        let dir = tempfile::tempdir().unwrap();
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src.bin");
        fs::write(&src, b"hello").unwrap();
        let mut s = DiskStore::open(&dir.path().join("store")).unwrap();
        assert_eq!(s.publish(&k, &src, "greeting").unwrap().version(), 1);
        fs::write(&src, b"hello again").unwrap();
        let c2 = s.publish(&k, &src, "greeting").unwrap();
        assert_eq!(c2.version(), 2);
        let (certs, issues) = s.load(&trusted(&k)).unwrap();
        assert_eq!(certs, vec![c2.clone()]);
        assert!(issues.is_empty());
        assert_eq!(fs::read(s.root().join("greeting")).unwrap(), b"hello again");
        assert!(s.partials().is_empty());
        assert!(matches!(
            s.publish(&k, &src, "../x"),
            Err(NodeError::Usage(_))
        ));
        assert!(matches!(
            s.publish(&ProviderKey::from_seed([2; 32]), &src, "greeting"),
            Err(NodeError::Usage(_))
        ));
    }

    #[test]
    fn tree_leaves_are_kept_at_publish_and_rebuilt_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src.bin");
        fs::write(&src, vec![7u8; 10_000]).unwrap();
        let root = dir.path().join("store");
        let mut s = DiskStore::open(&root).unwrap();
        let c = s.publish_blocks(&k, &src, "map", 1024).unwrap();
        let tree_root = |l: Vec<Hash>| Tree::new(l, 1024).map(|t| t.root());
        let leaves = s.tree_leaves(&c).expect("kept at publish");
        assert_eq!(leaves.len(), 10);
        assert_eq!(tree_root(leaves), c.tree().map(|t| t.1));
        // Lost (or received: commit does not write it): a serving store
        // writes it when it opens and verifies the file.
        let cache = s.dirs.version_dir(&c.instance_id()).join(LEAVES);
        fs::remove_file(&cache).unwrap();
        assert_eq!(s.tree_leaves(&c), None);
        drop(s);
        let read_only = DiskStore::open_read_only(&root).unwrap();
        read_only.load_one("map", &trusted(&k)).unwrap();
        assert!(!cache.exists(), "a read-only open writes nothing");
        let mut s = DiskStore::open(&root).unwrap();
        s.load(&trusted(&k)).unwrap();
        assert_eq!(tree_root(s.tree_leaves(&c).unwrap()), c.tree().map(|t| t.1));
        // A cut cache is no cache.
        fs::write(&cache, [0u8; 33]).unwrap();
        assert_eq!(s.tree_leaves(&c), None);
    }

    #[test]
    fn tampered_or_untrusted_files_are_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src.bin");
        fs::write(&src, b"content").unwrap();
        let mut s = DiskStore::open(&dir.path().join("store")).unwrap();
        s.publish(&k, &src, "a").unwrap();
        s.publish(&k, &src, "b").unwrap();
        fs::write(s.root().join("b"), b"CONTENT").unwrap();
        let (certs, issues) = s.load(&trusted(&k)).unwrap();
        assert_eq!(
            certs.iter().map(|c| c.name()).collect::<Vec<_>>(),
            vec!["a"]
        );
        assert!(issues[0].problem.contains("does not match"), "{issues:?}");
        let (certs, issues) = s.load(&TrustedKeys::default()).unwrap();
        assert!(certs.is_empty() && issues.len() == 2);
    }

    fn cert_of(k: &ProviderKey, name: &str, version: u16, content: &[u8]) -> Certificate {
        let mut h = ContentHasher::new();
        h.update(content);
        Certificate::issue(k, name, version, content.len() as u64, h.finish()).unwrap()
    }

    fn one_block(n: u32) -> Partial {
        let mut v = BitVec::new(3);
        for i in 0..n {
            v.set(i);
        }
        Partial {
            block_size: 1000,
            received: v,
        }
    }

    #[test]
    fn vectors_are_written_on_flush_or_every_n_blocks_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let content = vec![7u8; 3000];
        let cert = cert_of(&k, "f", 3, &content);
        {
            let mut s = DiskStore::open(&root).unwrap();
            s.set_persist_blocks(2);
            s.partial_write(&cert, 0, &content[..1000]).unwrap();
            s.partial_persist(&cert, &one_block(1)).unwrap();
            // Held in memory (and reported to the endpoint), not yet on disk.
            assert_eq!(
                s.partial_load(&cert)
                    .unwrap()
                    .unwrap()
                    .received
                    .count_ones(),
                1
            );
            assert_eq!(s.partials()[0].received_blocks, 0);
            s.flush_vectors().unwrap();
            assert_eq!(s.partials()[0].received_blocks, 1);
            s.partial_write(&cert, 1000, &content[1000..]).unwrap();
            s.partial_persist(&cert, &one_block(2)).unwrap();
            assert_eq!(s.partials()[0].received_blocks, 1, "one new block: not due");
            s.partial_persist(&cert, &one_block(3)).unwrap();
            assert_eq!(s.partials()[0].received_blocks, 3, "two new blocks: due");
            assert!(s.partial_write(&cert, 2500, &content[..1000]).is_err());
        }
        let mut s = DiskStore::open(&root).unwrap();
        let p = s.partial_load(&cert).unwrap().unwrap();
        assert_eq!((p.block_size, p.received.count_ones()), (1000, 3));
        s.partial_commit(&cert).unwrap();
        assert_eq!(fs::read(root.join("f")).unwrap(), content);
        assert_eq!(s.current("f"), Some(cert.clone()));
        assert!(s.partials().is_empty());
        assert_eq!(s.load(&trusted(&k)).unwrap().0, vec![cert]);
    }

    #[test]
    fn a_complete_version_left_by_a_crash_before_the_swap_is_made_current() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src");
        fs::write(&src, b"one").unwrap();
        let c1 = DiskStore::open(&root)
            .unwrap()
            .publish(&k, &src, "f")
            .unwrap();
        // A crash after version 2's directory was complete, before the swap.
        let c2 = cert_of(&k, "f", 2, b"two");
        let v2 = root
            .join(".broadside/versions")
            .join(c2.instance_id().to_hex());
        fs::create_dir(&v2).unwrap();
        fs::write(v2.join("cert"), c2.encoded()).unwrap();
        fs::write(v2.join("content"), b"two").unwrap();
        // And one whose content never arrived: dropped.
        let c3 = cert_of(&k, "f", 3, b"three");
        let v3 = root
            .join(".broadside/versions")
            .join(c3.instance_id().to_hex());
        fs::create_dir(&v3).unwrap();
        fs::write(v3.join("cert"), c3.encoded()).unwrap();
        assert_eq!(
            DiskStore::open_read_only(&root).unwrap().current("f"),
            Some(c1.clone())
        );
        let s = DiskStore::open(&root).unwrap();
        assert_eq!(s.current("f"), Some(c2.clone()));
        assert_eq!(fs::read(root.join("f")).unwrap(), b"two");
        let left = file_names(&root.join(".broadside/versions"));
        assert_eq!(
            left,
            vec![c2.instance_id().to_hex()],
            "superseded and incomplete removed"
        );
    }

    #[test]
    fn recovery_removes_temporary_files_orphan_copies_and_superseded_partials() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src");
        fs::write(&src, b"v1").unwrap();
        let mut s = DiskStore::open(&root).unwrap();
        s.publish(&k, &src, "f").unwrap();
        fs::write(&src, b"v2").unwrap();
        s.publish(&k, &src, "f").unwrap();
        // An old partial of version 2 (superseded) and a live one of version 3.
        let old = cert_of(&k, "f", 2, b"xx");
        s.partial_write(&old, 0, b"x").unwrap();
        let new = cert_of(&k, "f", 3, b"yyy");
        s.partial_write(&new, 0, b"y").unwrap();
        assert_eq!(s.partials().len(), 1, "superseded partial not reported");
        drop(s);
        let meta = root.join(".broadside");
        fs::write(root.join(".tmp-1-2-w"), b"junk").unwrap();
        fs::write(meta.join("partial/.tmp-1-3-w"), b"junk").unwrap();
        fs::write(meta.join(".publish-99-f"), b"orphan").unwrap();
        let held = meta.join(".publish-98-g");
        let live = File::create(&held).unwrap();
        live.lock().unwrap();
        // The lock is per open file: recovery's own open sees it held.
        let s = DiskStore::open(&root).unwrap();
        assert!(!root.join(".tmp-1-2-w").exists());
        assert!(!meta.join("partial/.tmp-1-3-w").exists());
        assert!(!meta.join(".publish-99-f").exists());
        assert!(held.exists(), "a live publisher's copy is kept");
        let left = file_names(&meta.join("partial"));
        assert!(
            left.iter()
                .all(|n| n.starts_with(&new.instance_id().to_hex())),
            "{left:?}"
        );
        assert_eq!(s.partials().len(), 1);
    }

    #[test]
    fn a_flat_layout_store_is_moved_into_version_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        fs::create_dir_all(&root).unwrap();
        let c = cert_of(&k, "old", 4, b"flat");
        fs::write(root.join("old"), b"flat").unwrap();
        fs::write(root.join("old.bscert"), c.encoded()).unwrap();
        let mut s = DiskStore::open(&root).unwrap();
        assert!(fs::symlink_metadata(root.join("old")).unwrap().is_symlink());
        assert_eq!(s.load(&trusted(&k)).unwrap().0, vec![c]);
        assert_eq!(fs::read(root.join("old")).unwrap(), b"flat");
    }

    /// Waits for the background commits begun so far.
    fn finished(s: &mut DiskStore) -> Vec<(Certificate, Result<(), StorageError>)> {
        let mut done = Vec::new();
        while s.commits_pending() > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            done.extend(s.finished_commits());
        }
        done
    }

    #[test]
    fn a_background_commit_makes_the_version_current_and_removes_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let src = dir.path().join("src");
        fs::write(&src, b"old").unwrap();
        let mut s = DiskStore::open(&root).unwrap();
        let old = s.publish(&k, &src, "f").unwrap();
        let new = cert_of(&k, "f", 2, b"received");
        s.partial_write(&new, 0, b"received").unwrap();
        assert_eq!(s.partial_commit_begin(&new), Ok(false));
        assert_eq!(s.commits_pending(), 1);
        assert_eq!(finished(&mut s), vec![(new.clone(), Ok(()))]);
        assert_eq!(fs::read(root.join("f")).unwrap(), b"received");
        assert_eq!(s.current("f"), Some(new.clone()));
        assert!(s.partials().is_empty());
        drop(s);
        // Dropping the store waited for the removal of the superseded version.
        let versions = root.join(".broadside").join("versions");
        assert!(!versions.join(old.instance_id().to_hex()).exists());
        assert!(versions.join(new.instance_id().to_hex()).is_dir());
    }

    /// A serving store with version 1 of "f" received as a partial, while
    /// a publisher put its own version 1 of "f" in the same store.
    fn partial_overtaken_by_a_publish(dir: &Path) -> (PathBuf, DiskStore, Certificate) {
        let root = dir.join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let mut server = DiskStore::open(&root).unwrap();
        let incoming = cert_of(&k, "f", 1, b"received");
        server.partial_write(&incoming, 0, b"received").unwrap();
        let src = dir.join("src");
        fs::write(&src, b"published").unwrap();
        let mut publisher = DiskStore::open_for_publish(&root).unwrap();
        assert_eq!(publisher.publish(&k, &src, "f").unwrap().version(), 1);
        (root, server, incoming)
    }

    #[test]
    fn a_background_commit_older_than_a_version_published_meanwhile_fails() {
        let dir = tempfile::tempdir().unwrap();
        let (root, mut server, incoming) = partial_overtaken_by_a_publish(dir.path());
        assert_eq!(server.partial_commit_begin(&incoming), Ok(false));
        let done = finished(&mut server);
        assert_eq!(done.len(), 1);
        assert!(done[0]
            .1
            .as_ref()
            .is_err_and(|e| e.0.contains("superseded")));
        assert_eq!(fs::read(root.join("f")).unwrap(), b"published");
        assert!(server.partials().is_empty());
    }

    #[test]
    fn a_commit_older_than_a_version_published_meanwhile_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (root, mut server, incoming) = partial_overtaken_by_a_publish(dir.path());
        assert!(server.partial_commit(&incoming).is_err());
        assert_eq!(fs::read(root.join("f")).unwrap(), b"published");
        assert!(server.serving_pid().is_some());
        drop(server);
        assert!(DiskStore::open_read_only(&root)
            .unwrap()
            .serving_pid()
            .is_none());
    }
}
