//! 160-bit identifiers (fileId, instanceId, content hash) and the hash `H`.
//!
//! The paper uses SHA-1. SHA-1 collisions are practical (SHAttered, 2017;
//! chosen-prefix collisions, 2020), so two different files or certificates
//! could share an id. `H` here is SHA-256 truncated to 160 bits: the same id
//! size on the wire as the paper, with ~80-bit collision resistance and no
//! known structural attack.

use core::fmt;
use sha2::{Digest, Sha256};

/// Length in bytes of every Broadside identifier.
pub const ID_LEN: usize = 20;

/// A 160-bit identifier produced by `H`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Id160(pub [u8; ID_LEN]);

/// Identifies a file independently of its version: `H(provider key ‖ name)`.
pub type FileId = Id160;
/// Identifies one version of a file: `H(encoded certificate)`.
pub type InstanceId = Id160;

impl Id160 {
    /// `H` over the concatenation of `parts`.
    pub fn hash(parts: &[&[u8]]) -> Id160 {
        let mut h = ContentHasher::new();
        for p in parts {
            h.update(p);
        }
        h.finish()
    }

    /// Reads an id from the first [`ID_LEN`] bytes, if there are that many.
    pub fn from_slice(b: &[u8]) -> Option<Id160> {
        b.get(..ID_LEN).and_then(|s| s.try_into().ok()).map(Id160)
    }

    /// The id as lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Id160 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &self.to_hex()[..12])
    }
}

impl fmt::Display for Id160 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Streaming `H`, for file contents.
#[derive(Clone, Default)]
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// An empty hasher.
    pub fn new() -> Self {
        ContentHasher(Sha256::new())
    }
    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    /// The truncated digest.
    pub fn finish(self) -> Id160 {
        let d = self.0.finalize();
        let mut id = [0u8; ID_LEN];
        id.copy_from_slice(&d[..ID_LEN]);
        Id160(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_truncated_sha256() {
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c ...
        let id = Id160::hash(&[b"a", b"bc"]);
        assert_eq!(id.to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a3");
        assert_eq!(Id160::from_slice(&id.0), Some(id));
        assert_eq!(Id160::from_slice(&[0u8; 19]), None);
    }
}
