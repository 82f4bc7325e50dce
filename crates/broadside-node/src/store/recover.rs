//! Crash recovery of a store directory at open, and the tidying a
//! serving node repeats at each rescan (see the store docs).

use super::*;

impl DiskStore {
    pub(super) fn recover(&mut self) -> Result<(), StorageError> {
        let _commit = self.dirs.commit_lock()?;
        self.migrate_flat_layout()?;
        self.dirs.remove_orphans(true)?;
        let q = self.dirs.meta.join(QUARANTINE);
        if q.exists() {
            fs::remove_dir_all(&q).map_err(io(format!("remove {}", q.display())))?;
        }
        self.dirs.settle_versions()?;
        // Partials of versions no newer than the current one, and stray pieces.
        for n in file_names(&self.dirs.partial_dir) {
            let p = self.dirs.partial_dir.join(&n);
            let Some((id, ext)) = n.split_once('.') else {
                remove_if_exists(&p)?;
                continue;
            };
            let cert = read_cert(&self.dirs.partial_dir.join(format!("{id}.cert")));
            let keep = matches!(ext, "cert" | "data" | "vec")
                && cert.is_some_and(|c| self.current(c.name()).is_none_or(|h| c.supersedes(&h)));
            if !keep {
                remove_if_exists(&p)?;
            }
        }
        sync_dir(&self.dirs.partial_dir)
    }

    /// While a node serves: removes what killed publishers left (their
    /// private copies, version directories never made current) and makes
    /// current a complete version a publisher installed but did not swap
    /// in. Runs on the helper thread, in order with commits and removals,
    /// and only if no publisher holds the commit lock (else at the next
    /// call). Failures are logged: the next call or open tries again.
    pub fn tidy(&mut self) {
        let dirs = self.dirs.clone();
        self.writeback.run(move || {
            let Some(_commit) = dirs.try_commit_lock() else {
                return;
            };
            if let Err(e) = dirs
                .remove_orphans(false)
                .and_then(|()| dirs.settle_versions())
            {
                tracing::warn!("store: tidying up: {e}");
            }
        });
    }

    /// Moves files of the older flat layout (`NAME` and `NAME.bscert` as
    /// regular files) into version directories. Restartable: the content is
    /// hard-linked, and the regular certificate is replaced last.
    pub(super) fn migrate_flat_layout(&mut self) -> Result<(), StorageError> {
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
}
