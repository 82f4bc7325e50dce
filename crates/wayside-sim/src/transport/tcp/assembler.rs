//! The receiver's out-of-order queue: sequence ranges received above
//! `RCV.NXT`, merged, and the SACK blocks reported from them (RFC 2018 §4:
//! the first block holds the most recently received segment, the others the
//! most recently changed ranges).

use super::seq::SeqNum;
use crate::packet::MAX_SACK_BLOCKS;

/// Most disjoint ranges kept; further holes drop the segment (it will be
/// retransmitted), which bounds memory against hostile input.
const MAX_RANGES: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: SeqNum,
    end: SeqNum,
    /// Insertion counter of the latest change, for SACK block order.
    stamp: u64,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Assembler {
    /// Disjoint, non-adjacent, sorted by start.
    ranges: Vec<Range>,
    stamp: u64,
}

impl Assembler {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Adds `[start, end)`, which lies above `RCV.NXT` and inside the window.
    /// Returns false if the segment was dropped for lack of room.
    pub fn insert(&mut self, start: SeqNum, end: SeqNum) -> bool {
        if start >= end {
            return true;
        }
        self.stamp += 1;
        let first = self.ranges.partition_point(|r| r.end < start);
        let mut last = first;
        let (mut s, mut e) = (start, end);
        while last < self.ranges.len() && self.ranges[last].start <= end {
            s = s.min(self.ranges[last].start);
            e = e.max(self.ranges[last].end);
            last += 1;
        }
        if first == last && self.ranges.len() >= MAX_RANGES {
            return false;
        }
        let merged = Range {
            start: s,
            end: e,
            stamp: self.stamp,
        };
        self.ranges.splice(first..last, [merged]);
        true
    }

    /// Consumes the ranges that `rcv_nxt` has reached; returns the new
    /// `RCV.NXT`.
    pub fn advance(&mut self, mut rcv_nxt: SeqNum) -> SeqNum {
        let n = self
            .ranges
            .iter()
            .take_while(|r| r.start <= rcv_nxt)
            .count();
        for r in self.ranges.drain(..n) {
            rcv_nxt = rcv_nxt.max(r.end);
        }
        rcv_nxt
    }

    /// SACK blocks, most recently changed range first.
    pub fn sack_blocks(&self) -> [Option<(u32, u32)>; MAX_SACK_BLOCKS] {
        let mut by_recency: Vec<&Range> = self.ranges.iter().collect();
        by_recency.sort_by_key(|r| std::cmp::Reverse(r.stamp));
        let mut out = [None; MAX_SACK_BLOCKS];
        for (slot, r) in out.iter_mut().zip(by_recency) {
            *slot = Some((r.start.0, r.end.0));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_assembler_merge_advance_and_sack_order() {
        let base = SeqNum(u32::MAX - 1000);
        let mut a = Assembler::default();
        assert!(a.insert(base + 2000, base + 3000));
        assert!(a.insert(base + 4000, base + 5000));
        assert!(a.insert(base + 6000, base + 7000));
        assert!(a.insert(base + 8000, base + 9000));
        // Most recent first, three blocks at most.
        let b = a.sack_blocks();
        assert_eq!(b[0], Some(((base + 8000).0, (base + 9000).0)));
        assert_eq!(b[2], Some(((base + 4000).0, (base + 5000).0)));
        // Filling 3000..4000 merges two ranges and makes that one the newest.
        assert!(a.insert(base + 3000, base + 4000));
        assert_eq!(a.sack_blocks()[0], Some(((base + 2000).0, (base + 5000).0)));
        assert_eq!(a.advance(base + 1000), base + 1000);
        assert_eq!(a.advance(base + 2000), base + 5000);
        assert_eq!(a.advance(base + 7500), base + 7500);
        assert!(!a.is_empty());
        assert_eq!(a.advance(base + 9000), base + 9000);
        assert!(a.is_empty());
    }

    #[test]
    fn test_assembler_bounded() {
        let mut a = Assembler::default();
        for i in 0..MAX_RANGES as u32 {
            assert!(a.insert(SeqNum(i * 10), SeqNum(i * 10 + 5)));
        }
        assert!(!a.insert(SeqNum(100_000), SeqNum(100_005)));
        // Extending an existing range is still accepted.
        assert!(a.insert(SeqNum(5), SeqNum(10)));
    }
}
