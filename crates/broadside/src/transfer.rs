//! Bit-vector bulk transfer (§4.2): how a file is cut into blocks and
//! segments, the receiving side of a segment with its ack policy, and the
//! sending side that cycles through its send vector.
//!
//! A file is cut into fixed-size blocks. A receive vector must fit in one
//! packet and block ids are 2 bytes, so a large file is split into
//! *segments* of at most [`wire::MAX_SEGMENT_BLOCKS`] blocks that are
//! transferred one after another, each with its own vector, as the paper
//! suggests for large files ("decomposed into multiple smaller files").

use crate::bitvec::BitVec;
use crate::time::Instant;
use crate::wire;
use core::time::Duration;

/// How a file of `size` bytes is cut into blocks and segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    size: u64,
    block_size: u32,
    segment_blocks: u32,
}

impl Layout {
    /// `None` if the block size is zero, the segment size is outside
    /// `1..=MAX_SEGMENT_BLOCKS`, or the file needs more than `u32::MAX` blocks.
    pub fn new(size: u64, block_size: u32, segment_blocks: u32) -> Option<Self> {
        if block_size == 0 || segment_blocks == 0 || segment_blocks > wire::MAX_SEGMENT_BLOCKS {
            return None;
        }
        let l = Layout {
            size,
            block_size,
            segment_blocks,
        };
        u32::try_from(size.div_ceil(u64::from(block_size)))
            .ok()
            .map(|_| l)
    }
    /// Bytes per block.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }
    /// Number of blocks; an empty file has one empty block.
    pub fn blocks(&self) -> u32 {
        // `new` checked that this fits.
        (self.size.div_ceil(u64::from(self.block_size)) as u32).max(1)
    }
    /// Blocks `[first, first + count)` of segment `s`, if it exists.
    pub fn segment(&self, s: u32) -> Option<(u32, u32)> {
        let first = s
            .checked_mul(self.segment_blocks)
            .filter(|&f| f < self.blocks())?;
        Some((first, self.segment_blocks.min(self.blocks() - first)))
    }
    /// The segment holding `block`.
    pub fn segment_of(&self, block: u32) -> u32 {
        block / self.segment_blocks
    }
    /// Byte offset and length of `block`.
    pub fn block_range(&self, block: u32) -> (u64, usize) {
        let off = u64::from(block) * u64::from(self.block_size);
        (
            off,
            self.size
                .saturating_sub(off)
                .min(u64::from(self.block_size)) as usize,
        )
    }
}

/// When the receiver sends its receive vector back.
///
/// §4.2 prints the condition as `b_set − b_sent ≤ (p − b_sent)/2`. Read
/// literally it holds right after every ack (0 ≤ anything), so it would
/// acknowledge every packet: O(p) acks. The paper's stated intent — "this
/// increases the number of ack packets as more of the file packets are
/// transferred … O(log p) acknowledgement packets" — needs the inequality
/// the other way round, which is what this implements: send when the bits set
/// since the last ack reach half of what was still missing then,
/// `b_set − b_sent ≥ (p − b_sent)/2`. Each ack halves the remainder, so a
/// loss-free transfer of `p` blocks takes about `log2 p` acks.
///
/// It also sends the vector every `every` new blocks (at least), so that a
/// sender that keeps at most a window of blocks unanswered (see
/// [`Config::window`](crate::Config::window)) hears often enough to keep
/// sending: `p / every` more acks, a few per segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPolicy {
    p: u32,
    sent: u32,
    every: u32,
}

impl AckPolicy {
    /// A policy for `p` blocks of which `already` were held (and announced)
    /// at the start, acking at least every `every` new blocks (0: never for that reason).
    pub fn new(p: u32, already: u32, every: u32) -> Self {
        AckPolicy {
            p,
            sent: already,
            every,
        }
    }
    /// Whether a vector with `set` bits should be sent now.
    pub fn due(&self, set: u32) -> bool {
        set > self.sent
            && (2 * u64::from(set - self.sent) >= u64::from(self.p - self.sent)
                || self.every > 0 && set - self.sent >= self.every)
    }
    /// Records that a vector with `set` bits was sent.
    pub fn sent(&mut self, set: u32) {
        self.sent = set;
    }
}

/// What a received block means for the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// Not yet held: store it, then call [`SegmentReceiver::mark`].
    New,
    /// Already held; `resumed` if it was held when the transfer (re)started.
    Duplicate {
        /// Held since the transfer started from a stored vector.
        resumed: bool,
    },
    /// Outside the segment.
    OutOfRange,
}

/// The receiving side of one segment.
#[derive(Clone, Debug)]
pub struct SegmentReceiver {
    /// Transfer id chosen by this receiver.
    pub transfer: u32,
    first: u32,
    vector: BitVec,
    at_start: BitVec,
    policy: AckPolicy,
    /// Last time a data packet arrived (or the segment started).
    pub last_data: Instant,
    /// Last time the vector was sent.
    pub last_ack: Instant,
    /// Vectors sent since the last data packet (for idle back-off).
    pub idle_acks: u32,
    /// The last block of the sender's pass, as far as this side knows: the
    /// highest block missing from the vector when it was last sent.
    tail: Option<u32>,
}

/// The highest index not set in `v`.
fn last_zero(v: &BitVec) -> Option<u32> {
    (0..v.len()).rev().find(|&i| !v.get(i))
}

impl SegmentReceiver {
    /// Segment `[first, first + count)` of a file whose blocks held so far
    /// are `held`, acking at least every `ack_every` new blocks.
    pub fn new(
        transfer: u32,
        first: u32,
        count: u32,
        held: &BitVec,
        ack_every: u32,
        now: Instant,
    ) -> Self {
        Self::with_vector(transfer, first, held.slice(first, count), ack_every, now)
    }
    /// A segment starting at block `first` whose receive vector is `vector`
    /// (for v2 files it starts with the bits of the hash chunks).
    pub fn with_vector(
        transfer: u32,
        first: u32,
        vector: BitVec,
        ack_every: u32,
        now: Instant,
    ) -> Self {
        let policy = AckPolicy::new(vector.len(), vector.count_ones(), ack_every);
        SegmentReceiver {
            transfer,
            first,
            at_start: vector.clone(),
            tail: last_zero(&vector),
            vector,
            policy,
            last_data: now,
            last_ack: now,
            idle_acks: 0,
        }
    }
    /// First block (absolute).
    pub fn first(&self) -> u32 {
        self.first
    }
    /// The segment's receive vector.
    pub fn vector(&self) -> &BitVec {
        &self.vector
    }
    /// Classifies segment-relative block `block`.
    pub fn classify(&self, block: u32) -> BlockKind {
        if block >= self.vector.len() {
            BlockKind::OutOfRange
        } else if self.vector.get(block) {
            BlockKind::Duplicate {
                resumed: self.at_start.get(block),
            }
        } else {
            BlockKind::New
        }
    }
    /// Whether segment-relative `block` ends the sender's pass: a sender
    /// sends the blocks missing from the last vector it got in ascending
    /// order, so the highest of them is the last before it waits for the
    /// next vector. The vector is worth sending at once then (if it got a
    /// vector older than the last one sent, its pass ends later, and this
    /// acks a little early: one more ack, no stall).
    pub fn ends_pass(&self, block: u32) -> bool {
        self.tail.is_some_and(|t| block >= t)
    }
    /// Marks a stored block; returns whether the vector should be sent now:
    /// the ack policy wants it, or the block ends the sender's pass.
    pub fn mark(&mut self, block: u32, now: Instant) -> bool {
        self.vector.set(block);
        self.last_data = now;
        self.idle_acks = 0;
        self.policy.due(self.vector.count_ones()) || self.ends_pass(block)
    }
    /// Marks a block another source delivered (or a hash chunk no longer
    /// needed); returns whether the ack policy wants the vector sent, so
    /// that this segment's sender stops sending what is held. The sender's
    /// silence is still measured from its own last block.
    pub fn held_elsewhere(&mut self, block: u32) -> bool {
        self.vector.set(block) && self.policy.due(self.vector.count_ones())
    }
    /// Notes a duplicate; returns whether to send the vector (at most once per `holdoff`).
    pub fn duplicate(&mut self, now: Instant, holdoff: Duration) -> bool {
        self.last_data = now;
        self.idle_acks = 0;
        now.saturating_since(self.last_ack) >= holdoff
    }
    /// Records that the vector was sent.
    pub fn acked(&mut self, now: Instant) {
        self.policy.sent(self.vector.count_ones());
        self.tail = last_zero(&self.vector);
        self.last_ack = now;
    }
    /// When to re-send the vector if the sender stays silent: doubling
    /// back-off from `idle`, but never more than `cap` apart. The cap keeps a
    /// transfer that waits its turn behind another file of the same sender
    /// alive at the sender (which drops a transfer it has not heard about for
    /// its `transfer_timeout`) at the cost of one small vector per `cap`.
    pub fn idle_deadline(&self, idle: Duration, cap: Duration) -> Instant {
        let wait = (idle * (1u32 << self.idle_acks.min(6))).min(cap.max(idle));
        self.last_data.max(self.last_ack) + wait
    }
    /// Whether every block is held.
    pub fn is_complete(&self) -> bool {
        self.vector.is_full()
    }
}

/// The sending side of one segment.
///
/// Blocks are sent in *passes*: one pass sends every block not set in the
/// send vector once, in order. A pass that has ended is not followed by
/// another until the receiver's vector arrives ([`Self::in_pass`] is false
/// until then), so blocks still in flight or queued at the receiver are not
/// sent twice. The receiver sends its vector when the pass's last block
/// arrives ([`SegmentReceiver::ends_pass`]); if that block or the vector is
/// lost, the sender re-sends the last block ([`Self::probe`]) now and then,
/// which draws the vector whether it arrives new or duplicate.
#[derive(Clone, Debug)]
pub struct SegmentSender {
    first: u32,
    send: BitVec,
    /// Next index this pass considers.
    cursor: u32,
    /// The next unacknowledged block at or after `cursor` (this pass), if any.
    pending: Option<u32>,
    /// A vector that reflects the whole current pass arrived: a new pass may start.
    rearmed: bool,
    /// The last block sent in the current pass.
    last: Option<u32>,
    /// Last time the receiver's vector arrived.
    pub last_heard: Instant,
}

impl SegmentSender {
    /// Sends blocks `[first, first + vector.len())` not set in `vector`.
    pub fn new(first: u32, vector: BitVec, now: Instant) -> Self {
        let mut s = SegmentSender {
            first,
            send: vector,
            cursor: 0,
            pending: None,
            rearmed: false,
            last: None,
            last_heard: now,
        };
        s.rescan();
        s
    }
    fn rescan(&mut self) {
        // Each bit is scanned at most once per pass (the cursor only advances).
        self.pending = (self.cursor..self.send.len()).find(|&i| !self.send.get(i));
        if let Some(i) = self.pending {
            self.cursor = i;
        } else {
            self.cursor = self.send.len();
        }
    }
    /// Adopts the receiver's vector as send vector (bits only ever get set).
    /// Returns `false` if its length does not match the segment.
    ///
    /// An acknowledgement lets the next pass start only if it reflects the
    /// whole pass: it holds the pass's last block (blocks arrive in order,
    /// so the receiver has seen all of the pass that was not lost). One sent
    /// earlier — at the ack policy's thresholds while the rest of the pass
    /// was still on its way or queued at the receiver — only removes blocks
    /// from the current pass: starting the next pass on it would send the
    /// blocks in flight again. See [`Self::on_request`] for the other kind.
    pub fn on_vector(&mut self, v: &BitVec, now: Instant) -> bool {
        self.adopt(v, now, false)
    }
    /// As [`Self::on_vector`] for a vector the receiver asks with (it
    /// heard nothing for a while, or holds the pass's last block but
    /// cannot verify it yet): the next pass starts on it at once.
    pub fn on_request(&mut self, v: &BitVec, now: Instant) -> bool {
        self.adopt(v, now, true)
    }
    fn adopt(&mut self, v: &BitVec, now: Instant, rearm: bool) -> bool {
        if v.len() != self.send.len() {
            return false;
        }
        self.send.union_with(v);
        self.last_heard = now;
        self.rescan();
        // Only a pass that has ended is rearmed: a request that comes
        // mid-pass (an idle Want of a file that waited its turn) says
        // nothing of the blocks this pass sends after it, and must not
        // start the next pass the moment this one ends, sending its blocks
        // still in flight again.
        if self.pending.is_none() && (rearm || self.last.is_none_or(|i| v.get(i))) {
            self.rearmed = true;
        }
        true
    }
    /// The next block to send, cycling through the unacknowledged ones:
    /// `(segment-relative index, absolute block)`. Starts a new pass when the
    /// current one has ended, whether or not [`Self::in_pass`].
    pub fn next_block(&mut self) -> Option<(u16, u32)> {
        if self.pending.is_none() {
            self.cursor = 0;
            self.rearmed = false;
            self.rescan();
        }
        let i = self.pending?;
        self.cursor = i + 1;
        self.last = Some(i);
        self.rescan();
        Some(self.entry(i))
    }
    fn entry(&self, i: u32) -> (u16, u32) {
        // Segments have at most 2^16 blocks, so a relative index fits in u16.
        (i as u16, self.first + i)
    }
    /// The block to re-send as a probe while waiting for a vector (the
    /// pass has ended, or the sender holds back): the last block sent.
    pub fn probe(&self) -> Option<(u16, u32)> {
        let i = self.last.filter(|_| !self.is_complete())?;
        Some(self.entry(i))
    }
    /// Whether the current pass has no block left (the next one starts a new pass).
    pub fn at_pass_end(&self) -> bool {
        self.pending.is_none()
    }
    /// Whether the current pass has blocks left, or the receiver's vector
    /// arrived since it began (so a new pass is worth starting).
    pub fn in_pass(&self) -> bool {
        !self.is_complete() && (self.pending.is_some() || self.rearmed)
    }
    /// Blocks of the file from this segment's start to its end that the
    /// receiver has not acknowledged (later segments count as missing).
    /// A v2 vector also holds hash-chunk bits, so the count of set bits
    /// may exceed the blocks: then nothing is left (0, not an underflow).
    pub fn remaining(&self, file_blocks: u32) -> u32 {
        file_blocks
            .saturating_sub(self.first)
            .saturating_sub(self.send.count_ones())
    }
    /// Whether the receiver holds every block.
    pub fn is_complete(&self) -> bool {
        self.send.is_full()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_counts_hash_chunk_bits_without_underflow() {
        // A v2 vector of 2 hash-chunk bits and 3 blocks, all acknowledged.
        let mut v = BitVec::new(5);
        (0..5).for_each(|i| {
            v.set(i);
        });
        let s = SegmentSender::new(0, v, Instant::ZERO);
        assert_eq!(s.remaining(3), 0);
        let mut half = BitVec::new(5);
        half.set(0);
        assert_eq!(SegmentSender::new(0, half, Instant::ZERO).remaining(3), 2);
    }

    #[test]
    fn layout_blocks_segments_ranges() {
        let l = Layout::new(10_000, 1000, 4).unwrap();
        assert_eq!(l.blocks(), 10);
        assert_eq!(l.segment(0), Some((0, 4)));
        assert_eq!(l.segment(2), Some((8, 2)));
        assert_eq!(l.segment(3), None);
        assert_eq!(l.block_range(9), (9000, 1000));
        let odd = Layout::new(10_001, 1000, 4).unwrap();
        assert_eq!(odd.blocks(), 11);
        assert_eq!(odd.block_range(10), (10_000, 1));
        assert_eq!(Layout::new(0, 1000, 4).unwrap().blocks(), 1);
        assert!(Layout::new(u64::MAX, 1, 4).is_none());
        assert!(Layout::new(1, 1, wire::MAX_SEGMENT_BLOCKS + 1).is_none());
    }

    #[test]
    fn ack_policy_is_logarithmic_without_loss() {
        for p in [1u32, 2, 10, 1000, 4600, 65_536] {
            let mut pol = AckPolicy::new(p, 0, 0);
            let mut acks = 0;
            for set in 1..=p {
                if pol.due(set) {
                    pol.sent(set);
                    acks += 1;
                }
            }
            let bound = (f64::from(p).log2().ceil() as u32) + 1;
            assert!(acks <= bound, "p={p}: {acks} acks > {bound}");
            assert!(acks >= 1);
        }
    }

    #[test]
    fn ack_policy_final_block_always_acked() {
        let mut pol = AckPolicy::new(100, 0, 0);
        pol.sent(99);
        assert!(pol.due(100));
        assert!(!AckPolicy::new(100, 100, 0).due(100));
    }

    #[test]
    fn sender_cycles_through_unacked_blocks() {
        let mut s = SegmentSender::new(10, BitVec::new(4), Instant::ZERO);
        let order: Vec<u32> = (0..6).filter_map(|_| s.next_block().map(|b| b.1)).collect();
        assert_eq!(order, vec![10, 11, 12, 13, 10, 11]);
        let mut v = BitVec::new(4);
        v.set(0);
        v.set(2);
        v.set(3);
        assert!(s.on_vector(&v, Instant::ZERO));
        assert_eq!(s.next_block(), Some((1, 11)));
        assert_eq!(s.next_block(), Some((1, 11)));
        assert!(!s.on_vector(&BitVec::new(5), Instant::ZERO));
    }

    #[test]
    fn sender_pass_ends_until_a_vector_arrives() {
        let mut s = SegmentSender::new(0, BitVec::new(3), Instant::ZERO);
        assert!(s.in_pass());
        assert_eq!(s.probe(), None, "nothing sent yet");
        assert_eq!(s.remaining(5), 5);
        for b in 0..3 {
            assert_eq!(s.next_block(), Some((b, u32::from(b))));
        }
        // Everything sent once and no vector yet: the pass has ended, and
        // the probe is its last block.
        assert!(!s.in_pass());
        assert_eq!(s.probe(), Some((2, 2)));
        // A vector sent before the pass's last block arrived (block 2 is
        // still on its way) does not start a new pass.
        let mut v = BitVec::new(3);
        v.set(0);
        assert!(s.on_vector(&v, Instant::ZERO));
        assert!(!s.in_pass());
        assert_eq!(s.remaining(5), 4);
        // One holding the last block does: block 1 was lost.
        v.set(2);
        assert!(s.on_vector(&v, Instant::ZERO));
        assert!(s.in_pass());
        assert_eq!(s.next_block(), Some((1, 1)));
        assert!(!s.in_pass());
        // A request (an idle vector) starts the next pass without it.
        assert!(s.on_request(&v, Instant::ZERO));
        assert!(s.in_pass());
        assert_eq!(s.next_block(), Some((1, 1)));
        v.set(1);
        assert!(s.on_vector(&v, Instant::ZERO));
        assert!(!s.in_pass() && s.is_complete());
        assert_eq!(s.next_block(), None);
        assert_eq!(s.probe(), None);
    }

    #[test]
    fn a_request_mid_pass_does_not_start_the_next_pass_early() {
        // A file that waited its turn: its idle Want came before its pass
        // began, or in the middle of it.
        let mut s = SegmentSender::new(0, BitVec::new(4), Instant::ZERO);
        assert!(s.on_request(&BitVec::new(4), Instant::ZERO));
        assert_eq!(s.next_block(), Some((0, 0)));
        assert!(s.on_request(&BitVec::new(4), Instant::ZERO));
        for b in 1..4 {
            assert_eq!(s.next_block(), Some((b, u32::from(b))));
        }
        // Blocks 1..3 may still be on their way: wait for the vector.
        assert!(!s.in_pass());
        assert_eq!(s.probe(), Some((3, 3)));
    }

    #[test]
    fn a_vector_mid_pass_only_removes_blocks() {
        let mut s = SegmentSender::new(0, BitVec::new(6), Instant::ZERO);
        assert_eq!(s.next_block(), Some((0, 0)));
        assert_eq!(s.next_block(), Some((1, 1)));
        let mut v = BitVec::new(6);
        v.set(0);
        v.set(3);
        assert!(s.on_vector(&v, Instant::ZERO));
        // The pass goes on from where it was, skipping the acknowledged block.
        let rest: Vec<u32> = (0..3).filter_map(|_| s.next_block().map(|b| b.1)).collect();
        assert_eq!(rest, vec![2, 4, 5]);
        assert!(!s.in_pass());
    }

    #[test]
    fn receiver_acks_at_the_end_of_the_senders_pass() {
        let mut r = SegmentReceiver::new(1, 0, 8, &BitVec::new(8), 0, Instant::ZERO);
        // Blocks 0..4 arrive, 5..8 are lost but 7, the pass's last, arrives.
        for b in 0..3 {
            assert!(!r.mark(b, Instant::ZERO), "block {b}");
        }
        assert!(
            r.mark(3, Instant::ZERO),
            "half of the segment: the policy acks"
        );
        r.acked(Instant::ZERO);
        assert!(!r.ends_pass(6));
        assert!(r.mark(7, Instant::ZERO), "the pass's last block");
        r.acked(Instant::ZERO);
        // The next pass sends 4, 5 and 6: 6 ends it.
        assert!(!r.mark(4, Instant::ZERO));
        assert!(r.ends_pass(6) && !r.ends_pass(5));
    }

    #[test]
    fn ack_policy_acks_every_so_many_blocks() {
        let pol = AckPolicy::new(4096, 0, 128);
        assert!(!pol.due(127));
        assert!(pol.due(128));
        let mut pol = AckPolicy::new(4096, 0, 128);
        let acks = (1..=4096)
            .filter(|&set| {
                let due = pol.due(set);
                if due {
                    pol.sent(set);
                }
                due
            })
            .count();
        // Every 128 blocks, and the halving acks of the last 128 (log2 128 + 1 at most).
        assert!((4096 / 128..=4096 / 128 + 8).contains(&acks), "{acks} acks");
    }

    #[test]
    fn receiver_classifies_and_resumes() {
        let mut held = BitVec::new(8);
        held.set(5);
        let mut r = SegmentReceiver::new(1, 4, 4, &held, 0, Instant::ZERO);
        assert_eq!(r.classify(1), BlockKind::Duplicate { resumed: true });
        assert_eq!(r.classify(0), BlockKind::New);
        assert_eq!(r.classify(4), BlockKind::OutOfRange);
        r.mark(0, Instant::ZERO);
        assert_eq!(r.classify(0), BlockKind::Duplicate { resumed: false });
    }
}
