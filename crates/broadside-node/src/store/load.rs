//! Loading and verifying the current versions of a store.

use super::*;

impl DiskStore {
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
            refetch: None,
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
        let serving = self._lock.is_some();
        let with_leaves = serving && !dir.join(LEAVES).exists();
        let m = measure(&content, &cert, with_leaves)
            .map_err(|e| issue(format!("cannot read {}: {e}", cert.name())))?;
        let Some(why) = mismatch(&cert, &m) else {
            if let Some(l) = m.leaves {
                // Only a cache: serving rebuilds what is missing.
                let _ = write_leaves(&dir, &l);
            }
            return Ok(cert);
        };
        let what = format!(
            "content of {} version {} fails verification ({why})",
            cert.name(),
            cert.version()
        );
        if !serving {
            return Err(issue(format!("{what}; not served")));
        }
        match self.dirs.quarantine(&cert) {
            Ok(true) => Err(LoadIssue {
                refetch: Some(cert.file_id()),
                ..issue(format!(
                    "{what}; moved to .broadside/quarantine, not served, to be fetched again"
                ))
            }),
            Ok(false) => Err(issue(format!("{what}; replaced meanwhile, not served"))),
            Err(e) => Err(issue(format!("{what}; not served, and {e}"))),
        }
    }
}
