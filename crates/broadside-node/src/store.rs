//! The store directory: each file `NAME` sits beside its certificate
//! `NAME.bscert`; partial transfers and bookkeeping live under `.broadside/`.
//!
//! ```text
//! DIR/NAME                          current content (what readers see)
//! DIR/NAME.bscert                   its signed certificate
//! DIR/.broadside/partial/ID.cert    certificate of an incoming version (ID = instanceId)
//! DIR/.broadside/partial/ID.data    its content so far (blocks at their offsets)
//! DIR/.broadside/partial/ID.vec     its receive vector (block size + bits), durable
//! DIR/.broadside/partial/ID.commit  marker: the verified data is being moved in
//! DIR/.broadside/status.json        written by a running node
//! ```
//!
//! Replacement is atomic: content is written to a temporary file, fsynced
//! and renamed over `NAME`, so a reader sees the old or the new file, never a
//! mix. A commit marker makes the two renames (content, certificate)
//! restartable: [`DiskStore::open`] finishes any commit a crash interrupted.
//! The receive vector is written (temp + rename) only after the data it
//! covers was written, so a restarted process never believes it holds a
//! block it does not (see `partial_persist` for power loss).

use crate::NodeError;
use broadside::cert::validate_name;
use broadside::{
    BitVec, Certificate, ContentHasher, InstanceId, Partial, ProviderKey, Storage, StorageError,
    TrustedKeys,
};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const CERT_EXT: &str = "bscert";
const VEC_MAGIC: &[u8; 4] = b"BSV1";

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

/// A store directory.
pub struct DiskStore {
    root: PathBuf,
    partial_dir: PathBuf,
    readers: BTreeMap<InstanceId, File>,
    writers: BTreeMap<InstanceId, File>,
    /// Held (flock) while this process may write the store; released on exit, even on kill -9.
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

/// Writes `bytes` to `path` atomically: temp file, fsync, rename, fsync dir.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    write_replace(path, bytes, true)
}

/// Temp file + rename (a reader or a restarted process sees the old or the
/// new bytes, never a mix); with `durable`, fsync the file and the directory too.
fn write_replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), StorageError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("x")
    ));
    let mut f = File::create(&tmp).map_err(io(format!("create {}", tmp.display())))?;
    f.write_all(bytes)
        .map_err(io(format!("write {}", tmp.display())))?;
    if durable {
        f.sync_all()
            .map_err(io(format!("fsync {}", tmp.display())))?;
    }
    fs::rename(&tmp, path).map_err(io(format!("rename to {}", path.display())))?;
    if durable {
        sync_dir(dir)?;
    }
    Ok(())
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

impl DiskStore {
    /// Opens (creating if needed) a store directory for writing: takes the
    /// store's lock (one writer at a time: a serving node, or `publish`) and
    /// finishes any commit that a crash interrupted.
    pub fn open(root: &Path) -> Result<Self, NodeError> {
        let partial_dir = root.join(".broadside").join("partial");
        fs::create_dir_all(&partial_dir).map_err(|e| {
            NodeError::Usage(format!(
                "cannot create store directory {}: {e}",
                root.display()
            ))
        })?;
        let lock_path = root.join(".broadside").join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| NodeError::Runtime(format!("cannot open {}: {e}", lock_path.display())))?;
        lock.try_lock().map_err(|_| {
            NodeError::Usage(format!(
                "store {} is in use by another process (a running node?); stop it first",
                root.display()
            ))
        })?;
        let mut s = DiskStore {
            root: root.to_path_buf(),
            partial_dir,
            readers: BTreeMap::new(),
            writers: BTreeMap::new(),
            _lock: Some(lock),
        };
        s.recover()
            .map_err(|e| NodeError::Runtime(format!("recovering store {}: {e}", root.display())))?;
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
        let partial_dir = root.join(".broadside").join("partial");
        Ok(DiskStore {
            root: root.to_path_buf(),
            partial_dir,
            readers: BTreeMap::new(),
            writers: BTreeMap::new(),
            _lock: None,
        })
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a running node writes its status.
    pub fn status_path(&self) -> PathBuf {
        self.root.join(".broadside").join("status.json")
    }

    fn partial_path(&self, inst: &InstanceId, ext: &str) -> PathBuf {
        self.partial_dir.join(format!("{}.{ext}", inst.to_hex()))
    }

    fn content_path(&self, cert: &Certificate) -> PathBuf {
        self.root.join(cert.name())
    }

    fn cert_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.{CERT_EXT}"))
    }

    fn recover(&mut self) -> Result<(), StorageError> {
        for entry in fs::read_dir(&self.partial_dir).map_err(io("list partials"))? {
            let path = entry.map_err(io("list partials"))?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("commit") {
                continue;
            }
            let cert_path = path.with_extension("cert");
            match fs::read(&cert_path)
                .ok()
                .and_then(|b| Certificate::decode(&b).ok())
            {
                Some(cert) => self.finish_commit(&cert)?,
                None => fs::remove_file(&path).map_err(io("remove stale commit marker"))?,
            }
        }
        Ok(())
    }

    /// Steps 3–5 of a commit; each is idempotent, so a crash anywhere is
    /// repaired by running them again.
    fn finish_commit(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let inst = cert.instance_id();
        let data = self.partial_path(&inst, "data");
        if data.exists() {
            fs::rename(&data, self.content_path(cert))
                .map_err(io(format!("rename into {}", cert.name())))?;
            sync_dir(&self.root)?;
        }
        write_atomic(&self.cert_path(cert.name()), cert.encoded())?;
        for ext in ["vec", "cert", "commit"] {
            let p = self.partial_path(&inst, ext);
            if p.exists() {
                fs::remove_file(&p).map_err(io(format!("remove {}", p.display())))?;
            }
        }
        sync_dir(&self.partial_dir)?;
        self.writers.remove(&inst);
        self.readers.clear();
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
        let mut certs = Vec::new();
        let mut issues = Vec::new();
        let entries = fs::read_dir(&self.root).map_err(|e| {
            NodeError::Runtime(format!("cannot list store {}: {e}", self.root.display()))
        })?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.extension().and_then(|e| e.to_str()) != Some(CERT_EXT) {
                continue;
            }
            let issue = |problem: String| LoadIssue {
                path: path.clone(),
                problem,
            };
            let cert = match fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| Certificate::decode(&b).map_err(|e| e.to_string()))
            {
                Ok(c) => c,
                Err(e) => {
                    issues.push(issue(format!("certificate refused: {e}")));
                    continue;
                }
            };
            if let Err(e) = cert.check_trusted(trusted) {
                issues.push(issue(e.to_string()));
                continue;
            }
            if path != self.cert_path(cert.name()) {
                issues.push(issue(format!(
                    "certificate is for {:?}, not this file name",
                    cert.name()
                )));
                continue;
            }
            match hash_file(&self.content_path(&cert)) {
                Ok((h, n)) if n == cert.size() && h == cert.content_hash() => certs.push(cert),
                Ok((_, n)) => issues.push(issue(format!(
                    "content of {} does not match its certificate (size {n}, expected {}); not served",
                    cert.name(),
                    cert.size()
                ))),
                Err(e) => issues.push(issue(format!("cannot read {}: {e}", cert.name()))),
            }
        }
        Ok((certs, issues))
    }

    /// Certificates beside files whose signature verifies (trust and
    /// content not checked: for status reports).
    pub fn certificates(&self) -> Vec<Certificate> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut certs: Vec<Certificate> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some(CERT_EXT))
            .filter_map(|p| {
                fs::read(&p)
                    .ok()
                    .and_then(|b| Certificate::decode(&b).ok())
                    .filter(|c| p == self.cert_path(c.name()))
            })
            .collect();
        certs.sort_by(|a, b| a.name().cmp(b.name()));
        certs
    }

    /// The current certificate of `name`, if any (not verified for trust).
    pub fn current(&self, name: &str) -> Option<Certificate> {
        fs::read(self.cert_path(name))
            .ok()
            .and_then(|b| Certificate::decode(&b).ok())
    }

    /// Partial transfers on disk.
    pub fn partials(&self) -> Vec<PartialInfo> {
        let Ok(entries) = fs::read_dir(&self.partial_dir) else {
            return Vec::new();
        };
        let mut out: Vec<PartialInfo> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("cert"))
            .filter_map(|p| fs::read(&p).ok().and_then(|b| Certificate::decode(&b).ok()))
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
        let b = fs::read(self.partial_path(inst, "vec")).ok()?;
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

    /// Signs and stores a new version of `name` with the content of `src`:
    /// version 1, or one more than the current version.
    pub fn publish(
        &mut self,
        key: &ProviderKey,
        src: &Path,
        name: &str,
    ) -> Result<Certificate, NodeError> {
        validate_name(name).map_err(|e| NodeError::Usage(e.to_string()))?;
        if name.ends_with(&format!(".{CERT_EXT}")) {
            return Err(NodeError::Usage(format!("invalid file name {name:?}: names ending in .{CERT_EXT} are reserved for certificates")));
        }
        let version = match self.current(name) {
            None => 1,
            Some(c) if c.provider() != key.public() => {
                return Err(NodeError::Usage(format!(
                "{name:?} in this store belongs to provider {}; a name is owned by one provider",
                c.provider()
            )))
            }
            Some(c) => c.version().checked_add(1).ok_or_else(|| {
                NodeError::Usage(format!(
                    "{name:?} is at version {}, the last one",
                    c.version()
                ))
            })?,
        };
        let rt = |e: StorageError| NodeError::Runtime(e.to_string());
        // Copy into a private temp file first so the hash covers exactly the bytes stored.
        let tmp = self
            .partial_dir
            .join(format!(".publish-{}", std::process::id()));
        fs::copy(src, &tmp)
            .map_err(|e| NodeError::Usage(format!("cannot read {}: {e}", src.display())))?;
        let (hash, size) = hash_file(&tmp)
            .map_err(|e| NodeError::Runtime(format!("hashing {}: {e}", tmp.display())))?;
        let cert = Certificate::issue(key, name, version, size, hash)
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        let inst = cert.instance_id();
        write_atomic(&self.partial_path(&inst, "cert"), cert.encoded()).map_err(rt)?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| NodeError::Runtime(format!("fsync: {e}")))?;
        fs::rename(&tmp, self.partial_path(&inst, "data"))
            .map_err(|e| NodeError::Runtime(format!("rename: {e}")))?;
        self.partial_commit(&cert).map_err(rt)?;
        Ok(cert)
    }

    fn writer(&mut self, cert: &Certificate) -> Result<&File, StorageError> {
        let inst = cert.instance_id();
        if !self.writers.contains_key(&inst) {
            let cert_path = self.partial_path(&inst, "cert");
            if !cert_path.exists() {
                write_atomic(&cert_path, cert.encoded())?;
            }
            let path = self.partial_path(&inst, "data");
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
}

impl Storage for DiskStore {
    fn read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        let inst = cert.instance_id();
        if !self.readers.contains_key(&inst) {
            let path = self.content_path(cert);
            let f = File::open(&path).map_err(io(format!("open {}", path.display())))?;
            self.readers.insert(inst, f);
        }
        let f = self
            .readers
            .get(&inst)
            .ok_or_else(|| StorageError("reader vanished".into()))?;
        f.read_exact_at(buf, offset)
            .map_err(io(format!("read {}", cert.name())))
    }

    fn partial_load(&mut self, cert: &Certificate) -> Result<Option<Partial>, StorageError> {
        let inst = cert.instance_id();
        // A vector without its data file would claim blocks we do not hold.
        if !self.partial_path(&inst, "data").exists() {
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
        self.writer(cert)?
            .write_all_at(data, offset)
            .map_err(io(format!("write {}", cert.name())))
    }

    fn partial_read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        self.writer(cert)?
            .read_exact_at(buf, offset)
            .map_err(io(format!("read back {}", cert.name())))
    }

    /// Writes the vector after the blocks it covers (both through the page
    /// cache, without fsync: fsync on the receive path stalls the socket and
    /// turns into loss). This survives a process crash (kill -9) exactly.
    /// After a power loss the vector may claim blocks whose bytes were lost;
    /// the content hash check before commit then discards the partial, so a
    /// stored file is never corrupted, only the transfer repeated.
    fn partial_persist(
        &mut self,
        cert: &Certificate,
        partial: &Partial,
    ) -> Result<(), StorageError> {
        self.writer(cert)?;
        let mut b = VEC_MAGIC.to_vec();
        b.extend_from_slice(&partial.block_size.to_be_bytes());
        partial.received.encode(&mut b);
        write_replace(&self.partial_path(&cert.instance_id(), "vec"), &b, false)
    }

    fn partial_commit(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let inst = cert.instance_id();
        if let Some(f) = self.writers.get(&inst) {
            f.sync_all().map_err(io(format!("fsync {}", cert.name())))?;
        }
        write_atomic(&self.partial_path(&inst, "commit"), b"")?;
        self.finish_commit(cert)
    }

    fn partial_discard(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        let inst = cert.instance_id();
        self.writers.remove(&inst);
        for ext in ["vec", "data", "cert"] {
            let p = self.partial_path(&inst, ext);
            if p.exists() {
                fs::remove_file(&p).map_err(io(format!("remove {}", p.display())))?;
            }
        }
        Ok(())
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

    #[test]
    fn partial_survives_reopen_and_interrupted_commit_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let k = ProviderKey::from_seed([1; 32]);
        let content = vec![7u8; 3000];
        let mut h = ContentHasher::new();
        h.update(&content);
        let cert = Certificate::issue(&k, "f", 3, 3000, h.finish()).unwrap();
        {
            let mut s = DiskStore::open(&root).unwrap();
            s.partial_write(&cert, 0, &content[..1000]).unwrap();
            let mut v = BitVec::new(3);
            v.set(0);
            s.partial_persist(
                &cert,
                &Partial {
                    block_size: 1000,
                    received: v,
                },
            )
            .unwrap();
            assert!(s.partial_write(&cert, 2500, &content[..1000]).is_err());
        }
        let mut s = DiskStore::open(&root).unwrap();
        let p = s.partial_load(&cert).unwrap().unwrap();
        assert_eq!((p.block_size, p.received.count_ones()), (1000, 1));
        assert_eq!(s.partials()[0].received_blocks, 1);
        s.partial_write(&cert, 1000, &content[1000..]).unwrap();
        // Simulate a crash right after the commit marker was written.
        write_atomic(&s.partial_path(&cert.instance_id(), "commit"), b"").unwrap();
        drop(s);
        let mut s = DiskStore::open(&root).unwrap();
        assert_eq!(fs::read(root.join("f")).unwrap(), content);
        assert_eq!(s.current("f"), Some(cert.clone()));
        assert!(s.partials().is_empty());
        assert_eq!(s.load(&trusted(&k)).unwrap().0, vec![cert]);
    }
}
