//! The hash tree a v2 certificate commits to: a binary Merkle tree
//! (SHA-256) over the file's blocks, so that each block is verified when it
//! arrives instead of the whole file after the last one.
//!
//! Leaves are `SHA-256(0x00 ‖ block)`, inner nodes `SHA-256(0x01 ‖ left ‖
//! right)`; a node whose subtree holds no block (the right edge of a file
//! whose block count is not a power of two) is the all-zero hash. The shape
//! is fixed by the block count, which the certificate fixes (size and block
//! size), so there is one tree per file.
//!
//! Leaf hashes travel in *chunks*: the `m` leaf hashes of one aligned subtree
//! (`m` a power of two) plus the sibling hashes from that subtree's root up
//! to the tree root, all in one block-sized packet. A chunk verifies on its
//! own against the root; the blocks it covers then verify against its
//! leaves. `m` is the largest power of two whose chunk fits a block, so the
//! leaf hashes cost about 32 bytes per block (1.4% at 2294-byte blocks).

use sha2::{Digest, Sha256};

/// Bytes of one tree hash.
pub const HASH_LEN: usize = 32;
/// One tree hash.
pub type Hash = [u8; HASH_LEN];
/// The hash of an empty subtree.
pub const EMPTY: Hash = [0; HASH_LEN];

/// The hash of a leaf (one block).
pub fn leaf(block: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(block);
    h.finalize().into()
}

fn node(l: &Hash, r: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

/// One level up: pairs of `level` hashed together (a missing right child is [`EMPTY`]).
fn parent_level(level: &[Hash]) -> Vec<Hash> {
    level
        .chunks(2)
        .map(|p| node(&p[0], p.get(1).unwrap_or(&EMPTY)))
        .collect()
}

/// The shape of the tree over `leaves` blocks of `block_size` bytes, and how
/// its leaf hashes are cut into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    leaves: u32,
    depth: u32,
    chunk_log: u32,
}

impl Shape {
    /// `None` if `leaves` is zero or a chunk of one leaf hash and its proof
    /// does not fit in `block_size` bytes.
    pub fn new(leaves: u32, block_size: u32) -> Option<Shape> {
        if leaves == 0 {
            return None;
        }
        let depth = u64::from(leaves).next_power_of_two().trailing_zeros();
        let fits = |j: u32| {
            (HASH_LEN as u64) * ((1u64 << j) + u64::from(depth - j)) <= u64::from(block_size)
        };
        let chunk_log = (0..=depth).rev().find(|&j| fits(j))?;
        Some(Shape {
            leaves,
            depth,
            chunk_log,
        })
    }
    /// Number of leaves (blocks).
    pub fn leaves(&self) -> u32 {
        self.leaves
    }
    /// Leaves per chunk, `m`.
    pub fn chunk_leaves(&self) -> u32 {
        1 << self.chunk_log
    }
    /// Number of chunks.
    pub fn chunks(&self) -> u32 {
        self.leaves.div_ceil(self.chunk_leaves())
    }
    /// First leaf and leaf count of chunk `c`.
    pub fn chunk_range(&self, c: u32) -> (u32, u32) {
        let first = c.saturating_mul(self.chunk_leaves()).min(self.leaves);
        (first, self.chunk_leaves().min(self.leaves - first))
    }
    /// Bytes of chunk `c` on the wire: its leaf hashes, then the proof.
    pub fn chunk_bytes(&self, c: u32) -> usize {
        HASH_LEN * (self.chunk_range(c).1 as usize + (self.depth - self.chunk_log) as usize)
    }

    /// Checks chunk `c` (as sent by [`Tree::chunk`]) against `root`; returns
    /// its leaf hashes if it verifies.
    pub fn verify_chunk(&self, root: &Hash, c: u32, bytes: &[u8]) -> Option<Vec<Hash>> {
        let (_, count) = self.chunk_range(c);
        if c >= self.chunks() || bytes.len() != self.chunk_bytes(c) {
            return None;
        }
        let hashes: Vec<Hash> = bytes
            .chunks_exact(HASH_LEN)
            .map(|h| h.try_into().unwrap_or(EMPTY))
            .collect();
        let (leaves, proof) = hashes.split_at(count as usize);
        let mut level = leaves.to_vec();
        for _ in 0..self.chunk_log {
            level = parent_level(&level);
        }
        let mut cur = level[0];
        let mut idx = c;
        for s in proof {
            cur = if idx & 1 == 0 {
                node(&cur, s)
            } else {
                node(s, &cur)
            };
            idx /= 2;
        }
        (cur == *root).then(|| leaves.to_vec())
    }
}

/// A whole tree, kept by a sender to cut chunks from.
#[derive(Clone, Debug)]
pub struct Tree {
    shape: Shape,
    /// `levels[0]` are the leaves, the last level is the root.
    levels: Vec<Vec<Hash>>,
}

impl Tree {
    /// The tree over `leaves` (one hash per block); `None` if the shape is impossible.
    pub fn new(leaves: Vec<Hash>, block_size: u32) -> Option<Tree> {
        let shape = Shape::new(u32::try_from(leaves.len()).ok()?, block_size)?;
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let next = parent_level(levels.last()?);
            levels.push(next);
        }
        Some(Tree { shape, levels })
    }
    /// Its shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The root.
    pub fn root(&self) -> Hash {
        self.levels.last().map_or(EMPTY, |l| l[0])
    }
    /// Appends chunk `c` (leaf hashes, then the proof of their subtree) to `out`.
    pub fn chunk(&self, c: u32, out: &mut Vec<u8>) {
        let (first, count) = self.shape.chunk_range(c);
        for h in &self.levels[0][first as usize..(first + count) as usize] {
            out.extend_from_slice(h);
        }
        let mut idx = c as usize;
        for level in &self.levels[self.shape.chunk_log as usize..self.shape.depth as usize] {
            out.extend_from_slice(level.get(idx ^ 1).unwrap_or(&EMPTY));
            idx /= 2;
        }
    }
}

/// Hashes a file as it streams past: the tree's leaves and the
/// whole-content hash `H` a certificate also carries.
pub struct TreeBuilder {
    block_size: usize,
    leaves: Vec<Hash>,
    block: Sha256,
    in_block: usize,
    content: crate::id::ContentHasher,
    size: u64,
}

impl TreeBuilder {
    /// A builder for blocks of `block_size` bytes (at least 1).
    pub fn new(block_size: u32) -> Self {
        let mut block = Sha256::new();
        block.update([0u8]);
        TreeBuilder {
            block_size: (block_size as usize).max(1),
            leaves: Vec::new(),
            block,
            in_block: 0,
            content: crate::id::ContentHasher::new(),
            size: 0,
        }
    }
    /// Feeds the next bytes of the file.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.content.update(bytes);
        self.size += bytes.len() as u64;
        while !bytes.is_empty() {
            let n = (self.block_size - self.in_block).min(bytes.len());
            self.block.update(&bytes[..n]);
            self.in_block += n;
            bytes = &bytes[n..];
            if self.in_block == self.block_size {
                self.end_block();
            }
        }
    }
    fn end_block(&mut self) {
        let mut fresh = Sha256::new();
        fresh.update([0u8]);
        let done = core::mem::replace(&mut self.block, fresh);
        self.leaves.push(done.finalize().into());
        self.in_block = 0;
    }
    /// Size, whole-content hash and leaf hashes (an empty file has one empty block).
    pub fn finish(mut self) -> (u64, crate::id::Id160, Vec<Hash>) {
        if self.in_block > 0 || self.leaves.is_empty() {
            self.end_block();
        }
        (self.size, self.content.finish(), self.leaves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u32, block: u32) -> Tree {
        let leaves = (0..n).map(|i| leaf(&i.to_be_bytes())).collect();
        Tree::new(leaves, block).unwrap()
    }

    #[test]
    fn every_chunk_verifies_and_any_change_is_caught() {
        for (n, block) in [
            (1u32, 64u32),
            (2, 64),
            (5, 160),
            (100, 2294),
            (4360, 2294),
            (33, 256),
        ] {
            let t = tree(n, block);
            let s = *t.shape();
            assert!(s.chunk_leaves() >= 1);
            for c in 0..s.chunks() {
                let mut b = Vec::new();
                t.chunk(c, &mut b);
                assert_eq!(b.len(), s.chunk_bytes(c));
                assert!(b.len() <= block as usize);
                let (first, count) = s.chunk_range(c);
                let got = s.verify_chunk(&t.root(), c, &b).expect("chunk verifies");
                assert_eq!(got, t.levels[0][first as usize..(first + count) as usize]);
                for i in [0, b.len() / 2, b.len() - 1] {
                    let mut bad = b.clone();
                    bad[i] ^= 0x10;
                    assert!(
                        s.verify_chunk(&t.root(), c, &bad).is_none(),
                        "n={n} c={c} i={i}"
                    );
                }
                if s.chunks() > 1 {
                    assert!(s
                        .verify_chunk(&t.root(), (c + 1) % s.chunks(), &b)
                        .is_none());
                }
            }
            assert!(s.verify_chunk(&t.root(), s.chunks(), &[]).is_none());
        }
    }

    #[test]
    fn chunk_size_uses_the_block() {
        // 4360 blocks: depth 13; 64 hashes + 7 proof hashes fit 2294 bytes.
        let s = Shape::new(4360, 2294).unwrap();
        assert_eq!(s.chunk_leaves(), 64);
        assert_eq!(s.chunk_bytes(0), 32 * (64 + 7));
        assert!(Shape::new(1 << 20, 32).is_none());
        assert!(Shape::new(0, 2294).is_none());
    }

    #[test]
    fn builder_matches_blockwise_hashing() {
        let data: Vec<u8> = (0..10_007u32).map(|i| (i * 7) as u8).collect();
        let mut b = TreeBuilder::new(1000);
        for part in data.chunks(333) {
            b.update(part);
        }
        let (size, h, leaves) = b.finish();
        assert_eq!(size, 10_007);
        assert_eq!(h, crate::id::Id160::hash(&[&data]));
        let want: Vec<Hash> = data.chunks(1000).map(leaf).collect();
        assert_eq!(leaves, want);
        assert_eq!(TreeBuilder::new(10).finish().2, vec![leaf(&[])]);
    }
}
