//! Identifiers shared by every layer: a node's index in the world's arena
//! and an in-flight transmission's index in the medium's slab.

/// Index of a node in the world's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of an in-flight transmission in the medium's slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxId(pub u32);
