//! Identifiers shared by every layer: a node's index in the world's arena,
//! where a frame is going (a node or every node), and an in-flight
//! transmission's index in the medium's slab.

/// Index of a node in the world's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a frame is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    Node(NodeId),
    Broadcast,
}

impl Dst {
    /// Whether a radio at `n` should take this frame as its own.
    pub fn is_for(self, n: NodeId) -> bool {
        match self {
            Dst::Node(d) => d == n,
            Dst::Broadcast => true,
        }
    }
    /// The node index recorded in traces; `u32::MAX` stands for broadcast.
    pub fn trace_id(self) -> u32 {
        match self {
            Dst::Node(d) => d.0,
            Dst::Broadcast => u32::MAX,
        }
    }
}

/// Index of an in-flight transmission in the medium's slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxId(pub u32);
