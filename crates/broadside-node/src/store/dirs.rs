//! File-system steps of the store: durable writes, symlink swaps, and
//! the commit of a version directory ([`Dirs`]).

use super::*;

pub(super) fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> StorageError {
    move |e| StorageError(format!("{what}: {e}"))
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(format!("fsync {}", dir.display())))
}

/// A fresh temporary name in `dir`; every temporary file starts with `.tmp-`.
pub(super) fn tmp_path(dir: &Path, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".tmp-{}-{n}-{what}", std::process::id()))
}

/// Temp file + rename (a reader or a restarted process sees the old or the
/// new bytes, never a mix); with `durable`, fsync the file and the directory too.
pub(super) fn write_replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), StorageError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    write_renamed(dir, path, bytes, durable)?;
    if durable {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Temp file in `dir` (fsynced if `synced`) renamed to `path`; the
/// directory itself is not synced (the caller does, once for several).
pub(super) fn write_renamed(
    dir: &Path,
    path: &Path,
    bytes: &[u8],
    synced: bool,
) -> Result<(), StorageError> {
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
pub(super) fn symlink_replace(target: &Path, link: &Path) -> Result<bool, StorageError> {
    if fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(false);
    }
    let dir = link.parent().unwrap_or(Path::new("."));
    let tmp = tmp_path(dir, "link");
    symlink(target, &tmp).map_err(io(format!("symlink {}", tmp.display())))?;
    fs::rename(&tmp, link).map_err(io(format!("rename to {}", link.display())))?;
    Ok(true)
}

pub(super) fn remove_if_exists(p: &Path) -> Result<(), StorageError> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io(format!("remove {}", p.display()))(e))
        }
        _ => Ok(()),
    }
}

pub(super) fn hash_file(path: &Path) -> std::io::Result<(broadside::Id160, u64)> {
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
pub(super) fn tree_file(
    path: &Path,
    block_size: u32,
) -> std::io::Result<(u64, broadside::Id160, Vec<Hash>)> {
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

/// What a file's bytes measure, from one read: size, content hash and,
/// for a v2 certificate when asked for, the block-tree leaves.
pub(super) struct Measured {
    pub(super) size: u64,
    pub(super) hash: broadside::Id160,
    pub(super) leaves: Option<Vec<Hash>>,
}

/// Measures `path` for `cert` (the leaves only if `leaves` and `cert` is v2).
pub(super) fn measure(path: &Path, cert: &Certificate, leaves: bool) -> std::io::Result<Measured> {
    match cert.tree() {
        Some((block_size, _)) if leaves => {
            tree_file(path, block_size).map(|(size, hash, l)| Measured {
                size,
                hash,
                leaves: Some(l),
            })
        }
        _ => hash_file(path).map(|(hash, size)| Measured {
            size,
            hash,
            leaves: None,
        }),
    }
}

/// Why bytes measured as `m` are not the content of `cert`, naming the
/// check that failed (size, content hash, block-tree root); `None` if
/// they are.
pub(super) fn mismatch(cert: &Certificate, m: &Measured) -> Option<String> {
    if m.size != cert.size() {
        return Some(format!(
            "size {} bytes, the certificate says {}",
            m.size,
            cert.size()
        ));
    }
    if m.hash != cert.content_hash() {
        return Some(format!(
            "content hash {}, the certificate says {}",
            m.hash.to_hex(),
            cert.content_hash().to_hex()
        ));
    }
    let (Some((block_size, root)), Some(leaves)) = (cert.tree(), &m.leaves) else {
        return None;
    };
    let got = Tree::new(leaves.clone(), block_size).map(|t| t.root());
    (got != Some(root)).then(|| {
        format!(
            "block-tree root {}, the certificate says {}",
            got.map_or("none".into(), hex::encode),
            hex::encode(root)
        )
    })
}

/// The name of a publisher's private copy starts with this (flock'ed while
/// its publisher lives).
pub(super) const PUBLISH_PREFIX: &str = ".publish-";

/// Where versions that failed verification are kept until the next open.
pub(super) const QUARANTINE: &str = "quarantine";

/// The file of a version directory that caches its hash-tree leaves.
pub(super) const LEAVES: &str = "leaves";

/// Writes the leaf cache (not fsynced: the endpoint checks it against the
/// certificate's root, and a missing one is rebuilt).
pub(super) fn write_leaves(dir: &Path, leaves: &[Hash]) -> Result<(), StorageError> {
    write_replace(&dir.join(LEAVES), leaves.as_flattened(), false)
}

pub(super) fn read_cert(path: &Path) -> Option<Certificate> {
    fs::read(path)
        .ok()
        .and_then(|b| Certificate::decode(&b).ok())
}

pub(super) fn file_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

pub(super) fn open_lock(path: &Path) -> Result<File, NodeError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| NodeError::Runtime(format!("cannot open {}: {e}", path.display())))
}

impl Dirs {
    pub(super) fn partial_path(&self, inst: &InstanceId, ext: &str) -> PathBuf {
        self.partial_dir.join(format!("{}.{ext}", inst.to_hex()))
    }

    pub(super) fn version_dir(&self, inst: &InstanceId) -> PathBuf {
        self.meta.join("versions").join(inst.to_hex())
    }

    pub(super) fn current_link(&self, name: &str) -> PathBuf {
        self.meta.join("current").join(name)
    }

    pub(super) fn cert_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.{CERT_EXT}"))
    }

    pub(super) fn current(&self, name: &str) -> Option<Certificate> {
        read_cert(&self.cert_path(name))
    }

    pub(super) fn commit_lock(&self) -> Result<File, StorageError> {
        let f =
            open_lock(&self.meta.join("commit.lock")).map_err(|e| StorageError(e.to_string()))?;
        f.lock().map_err(io("lock commit.lock"))?;
        Ok(f)
    }

    /// Removes a partial's files (not durably: a partial of a version no
    /// newer than the current one is removed at the next open).
    pub(super) fn remove_partial(&self, inst: &InstanceId) -> Result<(), StorageError> {
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
    pub(super) fn make_current(&self, cert: &Certificate) -> Result<Option<PathBuf>, StorageError> {
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

    /// The commit lock if no other process holds it.
    pub(super) fn try_commit_lock(&self) -> Option<File> {
        let f = open_lock(&self.meta.join("commit.lock")).ok()?;
        f.try_lock().ok()?;
        Some(f)
    }

    /// The instanceId (hex) current on disk for each name.
    pub(super) fn current_instances(&self) -> BTreeMap<String, String> {
        file_names(&self.meta.join("current"))
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .filter_map(|n| {
                let t = fs::read_link(self.current_link(&n)).ok()?;
                let id = t.file_name()?.to_str()?.to_owned();
                Some((n, id))
            })
            .collect()
    }

    /// Removes publishers' private copies whose publisher is gone (their
    /// flock is free) and, with `tmp_too` (at open, when no write is under
    /// way), leftover temporary files. Call under the commit lock.
    pub(super) fn remove_orphans(&self, tmp_too: bool) -> Result<(), StorageError> {
        for dir in [
            self.root.clone(),
            self.meta.clone(),
            self.partial_dir.clone(),
            self.meta.join("current"),
            self.meta.join("versions"),
        ] {
            for n in file_names(&dir) {
                let p = dir.join(&n);
                let orphan = (tmp_too && n.starts_with(".tmp-"))
                    || (n.starts_with(PUBLISH_PREFIX)
                        && File::open(&p).is_ok_and(|f| f.try_lock().is_ok()));
                if orphan {
                    remove_if_exists(&p)?;
                }
            }
        }
        Ok(())
    }

    /// Rolls complete versions newer than the current one forward (a crash
    /// after the content was moved in, before the swap) and removes every
    /// other version directory that is not current. Call under the commit
    /// lock.
    pub(super) fn settle_versions(&self) -> Result<(), StorageError> {
        let versions = self.meta.join("versions");
        let current = self.current_instances();
        for id in file_names(&versions) {
            let dir = versions.join(&id);
            if current.values().any(|c| *c == id) {
                continue;
            }
            let complete = read_cert(&dir.join("cert"))
                .filter(|c| c.instance_id().to_hex() == id && dir.join("content").is_file());
            match complete {
                Some(c) if self.current(c.name()).is_none_or(|h| c.supersedes(&h)) => {
                    if let Some(old) = self.make_current(&c)? {
                        fs::remove_dir_all(&old)
                            .map_err(io(format!("remove {}", old.display())))?;
                    }
                }
                _ => fs::remove_dir_all(&dir).map_err(io(format!("remove {}", dir.display())))?,
            }
        }
        Ok(())
    }

    /// Takes the current version `cert`, which failed verification, out
    /// of service under the commit lock: `NAME`, `NAME.bscert` and
    /// `current/NAME` go, and its directory moves to `quarantine/` (kept
    /// for inspection until the next open). Returns `false`, doing
    /// nothing, if another version became current meanwhile.
    pub(super) fn quarantine(&self, cert: &Certificate) -> Result<bool, StorageError> {
        let _commit = self.commit_lock()?;
        let name = cert.name();
        let link = self.current_link(name);
        let id = cert.instance_id().to_hex();
        if fs::read_link(&link).ok() != Some(Path::new("..").join("versions").join(&id)) {
            return Ok(false);
        }
        remove_if_exists(&self.root.join(name))?;
        remove_if_exists(&self.cert_path(name))?;
        sync_dir(&self.root)?;
        remove_if_exists(&link)?;
        sync_dir(&self.meta.join("current"))?;
        let q = self.meta.join(QUARANTINE);
        fs::create_dir_all(&q).map_err(io(format!("create {}", q.display())))?;
        let to = q.join(&id);
        if to.exists() {
            fs::remove_dir_all(&to).map_err(io(format!("remove {}", to.display())))?;
        }
        let from = self.version_dir(&cert.instance_id());
        fs::rename(&from, &to).map_err(io(format!(
            "move {} to {}",
            from.display(),
            to.display()
        )))?;
        Ok(true)
    }

    /// Writes the version directory of `cert` (certificate, then `content`
    /// renamed from `content_src`) and makes it current. Call under the commit lock.
    /// `leaves` (v2), when known, are kept beside them for serving.
    /// Returns the superseded version directory.
    pub(super) fn install(
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
    /// `data`, its writer): sync, check the whole file against the
    /// certificate (size, content hash and, v2, block-tree root: blocks
    /// held since before a crash or a power loss were never checked in this
    /// run), then install under the commit lock unless a version at least
    /// as new was published meanwhile. The partial's files go either way;
    /// a partial that fails the check is discarded, so that the file is
    /// fetched again, and the current version stays. Returns the
    /// superseded version directory.
    pub(super) fn commit_partial(
        &self,
        cert: &Certificate,
        data: Option<&File>,
    ) -> Result<Option<PathBuf>, StorageError> {
        let inst = cert.instance_id();
        if let Some(f) = data {
            f.sync_data()
                .map_err(io(format!("fsync {}", cert.name())))?;
        }
        let path = self.partial_path(&inst, "data");
        let measured =
            measure(&path, cert, true).map_err(io(format!("read {}", path.display())))?;
        if let Some(why) = mismatch(cert, &measured) {
            self.remove_partial(&inst)?;
            return Err(StorageError(format!(
                "{} version {} as received fails verification ({why}); discarded, not committed",
                cert.name(),
                cert.version()
            )));
        }
        let _commit = self.commit_lock()?;
        if let Some(have) = self.current(cert.name()) {
            if !cert.supersedes(&have) {
                self.remove_partial(&inst)?;
                return Err(StorageError(format!(
                    "{} version {} was superseded by version {} meanwhile",
                    cert.name(),
                    cert.version(),
                    have.version()
                )));
            }
        }
        let old = self.install(cert, &path, measured.leaves.as_deref())?;
        self.remove_partial(&inst)?;
        Ok(old)
    }
}
