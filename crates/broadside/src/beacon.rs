//! Beacons (§4.1): the content hash a node advertises, which side initiates a
//! sync, and the cache of hash pairs already synchronised.

use crate::id::{Id160, InstanceId};
use std::collections::{BTreeSet, VecDeque};

/// `H` over the instanceIds of all files, ordered by fileId (the caller
/// iterates a map keyed by fileId).
pub fn content_hash<'a>(instances_by_file_id: impl Iterator<Item = &'a InstanceId>) -> Id160 {
    let mut h = crate::id::ContentHasher::new();
    for i in instances_by_file_id {
        h.update(&i.0);
    }
    h.finish()
}

/// Whether this node initiates: the node with fewer files does (§4.1); ties
/// go to the lower content hash. Equal hashes mean equal content: no sync.
pub fn should_initiate(mine: (u32, Id160), theirs: (u32, Id160)) -> bool {
    mine.1 != theirs.1 && mine < theirs
}

/// A bounded set of `(their content hash, my content hash)` pairs already
/// synchronised; the oldest pair is evicted first.
#[derive(Clone, Debug)]
pub struct SyncCache {
    set: BTreeSet<(Id160, Id160)>,
    order: VecDeque<(Id160, Id160)>,
    capacity: usize,
}

impl SyncCache {
    /// An empty cache of at most `capacity` pairs.
    pub fn new(capacity: usize) -> Self {
        SyncCache {
            set: BTreeSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }
    /// Whether this pair was synchronised.
    pub fn contains(&self, theirs: Id160, mine: Id160) -> bool {
        self.set.contains(&(theirs, mine))
    }
    /// Remembers a synchronised pair.
    pub fn insert(&mut self, theirs: Id160, mine: Id160) {
        if self.set.insert((theirs, mine)) {
            self.order.push_back((theirs, mine));
            while self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_files_initiates_exactly_one_side() {
        let (a, b) = (Id160([1; 20]), Id160([2; 20]));
        assert!(should_initiate((3, b), (5, a)));
        assert!(!should_initiate((5, a), (3, b)));
        assert!(should_initiate((4, a), (4, b)) ^ should_initiate((4, b), (4, a)));
        assert!(!should_initiate((4, a), (4, a)));
    }

    #[test]
    fn cache_evicts_oldest() {
        let id = |n| Id160([n; 20]);
        let mut c = SyncCache::new(2);
        c.insert(id(1), id(0));
        c.insert(id(2), id(0));
        c.insert(id(3), id(0));
        assert!(!c.contains(id(1), id(0)));
        assert!(c.contains(id(2), id(0)) && c.contains(id(3), id(0)));
        assert!(!c.contains(id(0), id(3)));
    }

    #[test]
    fn content_hash_depends_on_order_and_members() {
        let (a, b) = (Id160([1; 20]), Id160([2; 20]));
        assert_ne!(content_hash([a, b].iter()), content_hash([b, a].iter()));
        assert_ne!(content_hash([a].iter()), content_hash([a, b].iter()));
    }
}
