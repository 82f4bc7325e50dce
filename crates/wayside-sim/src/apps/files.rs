//! The file sets Broadside ends hold in the simulator ([`FileSet`]): a
//! `broadside::Storage` whose published files are generated from the run's
//! seed on read instead of held in memory, so an end can hold the paper's
//! fifty 10 MB files (Zahn et al. 2009, §5) without 500 MB per end.
//! Content is a keyed SplitMix64 stream per file, addressable at any
//! offset; each file is read once when published, for its certificate's
//! hashes and hash tree, whose leaves the set keeps. What an end receives
//! is kept in a `MemStore` — real bytes, verified by the endpoint.

use broadside::merkle::{Hash, Tree, TreeBuilder};
use broadside::storage::{Partial, StorageError};
use broadside::{Certificate, MemStore, ProviderKey, Storage};
use std::collections::BTreeMap;

/// SplitMix64's output function (Steele, Lea & Flood 2014).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes `offset..offset + buf.len()` of the content keyed `key`.
fn content(key: u64, offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let at = offset + i as u64;
        *b = mix(key.wrapping_add((at / 8).wrapping_mul(0x9e37_79b9_7f4a_7c15))).to_le_bytes()
            [(at % 8) as usize];
    }
}

/// A generated file: its content key and the leaves of its hash tree.
struct Generated {
    cert: Certificate,
    key: u64,
    leaves: Vec<Hash>,
}

/// One end's files: generated ones it was given, and what it received.
#[derive(Default)]
pub struct FileSet {
    generated: BTreeMap<broadside::FileId, Generated>,
    received: MemStore,
}

/// Bytes generated at a time when a file is published.
const CHUNK: usize = 1 << 16;

impl FileSet {
    /// Publishes version `version` of file `name` by `provider`: `size`
    /// bytes of the content keyed `key`, in blocks of `block` bytes.
    pub fn publish(
        &mut self,
        provider: &ProviderKey,
        name: &str,
        version: u16,
        size: u64,
        key: u64,
        block: u32,
    ) -> Certificate {
        let mut tree = TreeBuilder::new(block);
        let mut buf = vec![0u8; CHUNK];
        let mut at = 0;
        while at < size {
            let n = (size - at).min(CHUNK as u64) as usize;
            content(key, at, &mut buf[..n]);
            tree.update(&buf[..n]);
            at += n as u64;
        }
        let (size, hash, leaves) = tree.finish();
        let root = Tree::new(leaves.clone(), block)
            .expect("a tree over the file's blocks")
            .root();
        let cert = Certificate::issue_v2(provider, name, version, size, hash, block, root)
            .expect("a valid certificate");
        self.generated.insert(
            cert.file_id(),
            Generated {
                cert: cert.clone(),
                key,
                leaves,
            },
        );
        cert
    }

    /// Certificates of every complete file.
    pub fn certificates(&self) -> Vec<Certificate> {
        let mut certs: Vec<Certificate> = self.generated.values().map(|g| g.cert.clone()).collect();
        certs.extend(
            self.received
                .certificates()
                .into_iter()
                .filter(|c| !self.generated.contains_key(&c.file_id())),
        );
        certs
    }

    fn generated(&self, cert: &Certificate) -> Option<&Generated> {
        self.generated
            .get(&cert.file_id())
            .filter(|g| g.cert.instance_id() == cert.instance_id())
    }
}

impl Storage for FileSet {
    fn read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        match self.generated(cert) {
            Some(g) => {
                if offset
                    .checked_add(buf.len() as u64)
                    .is_none_or(|end| end > g.cert.size())
                {
                    return Err(StorageError("read past end".into()));
                }
                content(g.key, offset, buf);
                Ok(())
            }
            None => self.received.read(cert, offset, buf),
        }
    }
    fn partial_load(&mut self, cert: &Certificate) -> Result<Option<Partial>, StorageError> {
        self.received.partial_load(cert)
    }
    fn partial_write(
        &mut self,
        cert: &Certificate,
        offset: u64,
        data: &[u8],
    ) -> Result<(), StorageError> {
        self.received.partial_write(cert, offset, data)
    }
    fn partial_read(
        &mut self,
        cert: &Certificate,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), StorageError> {
        self.received.partial_read(cert, offset, buf)
    }
    fn partial_persist(
        &mut self,
        cert: &Certificate,
        partial: &Partial,
    ) -> Result<(), StorageError> {
        self.received.partial_persist(cert, partial)
    }
    /// The received version replaces a generated one.
    fn partial_commit(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        self.received.partial_commit(cert)?;
        self.generated.remove(&cert.file_id());
        Ok(())
    }
    fn partial_discard(&mut self, cert: &Certificate) -> Result<(), StorageError> {
        self.received.partial_discard(cert)
    }
    fn tree_leaves(&mut self, cert: &Certificate) -> Option<Vec<Hash>> {
        self.generated(cert).map(|g| g.leaves.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_addressable_at_any_offset() {
        let mut whole = vec![0u8; 100];
        content(7, 0, &mut whole);
        let mut part = vec![0u8; 37];
        content(7, 13, &mut part);
        assert_eq!(part, whole[13..50]);
        let mut other = vec![0u8; 100];
        content(8, 0, &mut other);
        assert_ne!(other, whole, "another key, other content");
    }

    #[test]
    fn a_published_file_reads_back_and_a_received_version_replaces_it() {
        let key = ProviderKey::from_seed([3; 32]);
        let mut set = FileSet::default();
        let v1 = set.publish(&key, "f", 1, 5000, 11, 1024);
        let mut buf = vec![0u8; 100];
        set.read(&v1, 4900, &mut buf).unwrap();
        assert!(set.read(&v1, 4901, &mut buf).is_err(), "past the end");
        assert_eq!(set.tree_leaves(&v1).map(|l| l.len()), Some(5));
        let mut other = FileSet::default();
        let v2 = other.publish(&key, "f", 2, 3000, 12, 1024);
        let mut data = vec![0u8; 3000];
        other.read(&v2, 0, &mut data).unwrap();
        set.partial_write(&v2, 0, &data).unwrap();
        set.partial_commit(&v2).unwrap();
        assert_eq!(set.certificates(), vec![v2.clone()]);
        assert!(
            set.read(&v1, 0, &mut buf).is_err(),
            "the old version is gone"
        );
        let mut back = vec![0u8; 3000];
        set.read(&v2, 0, &mut back).unwrap();
        assert_eq!(back, data);
    }
}
