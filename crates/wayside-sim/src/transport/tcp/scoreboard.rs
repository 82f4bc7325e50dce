//! The sender's retransmission queue and SACK scoreboard: one entry per
//! transmitted segment (like Linux's skb write queue), each marked SACKed,
//! lost and/or retransmitted. `pipe` follows RFC 6675 §4 (SetPipe) and equals
//! Linux's `packets_out - (sacked_out + lost_out) + retrans_out`, counted in
//! segments. Loss marking follows RFC 6675 `IsLost` (DupThresh SACKed
//! segments above a hole).

use super::seq::SeqNum;
use crate::units::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxSeg {
    pub seq: SeqNum,
    /// Payload bytes.
    pub len: u32,
    pub fin: bool,
    /// Time of the latest (re)transmission.
    pub sent_at: SimTime,
    pub sacked: bool,
    pub lost: bool,
    /// Retransmitted since it was last marked lost.
    pub retrans: bool,
    /// Ever retransmitted (Karn's rule).
    pub ever_retrans: bool,
}

impl TxSeg {
    pub fn new(seq: SeqNum, len: u32, fin: bool, now: SimTime) -> TxSeg {
        TxSeg {
            seq,
            len,
            fin,
            sent_at: now,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
        }
    }
    /// One past the last sequence number the segment occupies.
    pub fn end(&self) -> SeqNum {
        self.seq + self.len + self.fin as u32
    }
    /// Whether the segment counts in the pipe (RFC 6675 SetPipe).
    fn in_pipe(&self) -> bool {
        !self.sacked && (!self.lost || self.retrans)
    }
    /// Lost and waiting to be retransmitted.
    fn pending(&self) -> bool {
        !self.sacked && self.lost && !self.retrans
    }
}

/// What a cumulative ACK removed from the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Acked {
    /// Payload bytes newly acknowledged.
    pub bytes: u64,
    /// Segments fully acknowledged (including a FIN-only segment).
    pub segs: u32,
    /// Of those, segments that had been SACKed already.
    pub sacked_segs: u32,
    pub fin: bool,
    /// Send time of the oldest acknowledged segment.
    pub oldest_sent: Option<SimTime>,
    /// Some acknowledged segment had been retransmitted (no RTT sample).
    pub retransmitted: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    q: VecDeque<TxSeg>,
    pipe: u32,
    sacked: u32,
    pending: u32,
}

impl Scoreboard {
    pub fn push(&mut self, seg: TxSeg) {
        self.count(&seg, 1);
        self.q.push_back(seg);
    }

    fn count(&mut self, s: &TxSeg, sign: i32) {
        let f = |v: &mut u32, on: bool| {
            if on {
                *v = v.wrapping_add_signed(sign);
            }
        };
        f(&mut self.pipe, s.in_pipe());
        f(&mut self.sacked, s.sacked);
        f(&mut self.pending, s.pending());
    }

    fn update(&mut self, i: usize, f: impl FnOnce(&mut TxSeg)) {
        let old = self.q[i];
        self.count(&old, -1);
        f(&mut self.q[i]);
        let new = self.q[i];
        self.count(&new, 1);
    }

    /// Segments outstanding (Linux `packets_out`).
    pub fn len(&self) -> u32 {
        self.q.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Segments in the network (RFC 6675 pipe).
    pub fn pipe(&self) -> u32 {
        self.pipe
    }

    /// Removes everything below `ack` (which the caller has validated to be
    /// within `(SND.UNA, SND.NXT]`); trims a partially acknowledged head.
    pub fn ack(&mut self, ack: SeqNum) -> Acked {
        let mut a = Acked::default();
        while let Some(head) = self.q.front().copied() {
            if head.end() <= ack {
                self.count(&head, -1);
                self.q.pop_front();
                a.bytes += head.len as u64;
                a.segs += 1;
                a.sacked_segs += head.sacked as u32;
                a.fin |= head.fin;
                a.oldest_sent.get_or_insert(head.sent_at);
                a.retransmitted |= head.ever_retrans;
            } else {
                if head.seq < ack {
                    let delta = ack - head.seq;
                    a.bytes += delta as u64;
                    a.oldest_sent.get_or_insert(head.sent_at);
                    a.retransmitted |= head.ever_retrans;
                    self.q[0].seq = ack;
                    self.q[0].len -= delta;
                }
                break;
            }
        }
        a
    }

    /// Marks segments lying entirely inside a SACK block; returns how many
    /// segments were newly SACKed. Blocks outside the queue are ignored.
    pub fn sack(&mut self, blocks: &[Option<(u32, u32)>]) -> u32 {
        let (Some(first), Some(last)) = (self.q.front(), self.q.back()) else {
            return 0;
        };
        let (lo, hi) = (first.seq, last.end());
        let mut newly = 0;
        for &(l, r) in blocks.iter().flatten() {
            let (l, r) = (SeqNum(l), SeqNum(r));
            if !(l < r && lo <= l && r <= hi) {
                continue;
            }
            // Entries are in sequence order: find the first one at/after l.
            let start = self.q.partition_point(|s| s.seq < l);
            for i in start..self.q.len() {
                let s = self.q[i];
                if s.end() > r {
                    break;
                }
                if !s.sacked {
                    self.update(i, |s| s.sacked = true);
                    newly += 1;
                }
            }
        }
        newly
    }

    /// Number of SACKed segments above the first un-SACKed one.
    pub fn sacked_above_head(&self) -> u32 {
        match self.q.iter().position(|s| !s.sacked) {
            Some(i) => self.q.iter().skip(i).filter(|s| s.sacked).count() as u32,
            None => 0,
        }
    }

    /// RFC 6675 `IsLost`: marks every un-SACKed segment with at least
    /// `dupthresh` SACKed segments above it as lost.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u32) {
        if self.sacked < dupthresh {
            return;
        }
        let mut above = 0;
        for i in (0..self.q.len()).rev() {
            let s = self.q[i];
            if s.sacked {
                above += 1;
            } else if above >= dupthresh && !s.lost {
                self.update(i, |s| s.lost = true);
            }
        }
    }

    /// Marks the first un-SACKed segment lost (fast retransmit, NewReno
    /// partial ACK). A head already marked lost is left as it is.
    pub fn mark_head_lost(&mut self) {
        if let Some(i) = self.q.iter().position(|s| !s.sacked) {
            if !self.q[i].lost {
                self.update(i, |s| s.lost = true);
            }
        }
    }

    /// Retransmission timeout: every un-SACKed segment is lost and will be
    /// retransmitted again (Linux `tcp_enter_loss`).
    pub fn mark_all_lost(&mut self) {
        for i in 0..self.q.len() {
            if !self.q[i].sacked {
                self.update(i, |s| {
                    s.lost = true;
                    s.retrans = false;
                });
            }
        }
    }

    /// The first segment waiting for retransmission.
    pub fn next_pending(&self) -> Option<usize> {
        if self.pending == 0 {
            return None;
        }
        self.q.iter().position(TxSeg::pending)
    }

    pub fn get(&self, i: usize) -> TxSeg {
        self.q[i]
    }

    pub fn on_retransmit(&mut self, i: usize, now: SimTime) {
        self.update(i, |s| {
            s.retrans = true;
            s.ever_retrans = true;
            s.sent_at = now;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(base: u32, n: u32) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(TxSeg::new(
                SeqNum(base) + i * 100,
                100,
                false,
                SimTime(i as u64),
            ));
        }
        b
    }

    #[test]
    fn test_scoreboard_sack_marks_and_pipe() {
        let base = u32::MAX - 250; // blocks straddle the wrap
        let mut b = board(base, 10);
        assert_eq!(b.pipe(), 10);
        // Segments 2..=5 SACKed (one block), 7 SACKed (another).
        let s = |i: u32| base.wrapping_add(i * 100);
        let blocks = [Some((s(2), s(6))), Some((s(7), s(8))), None];
        assert_eq!(b.sack(&blocks), 5);
        assert_eq!(b.sack(&blocks), 0, "idempotent");
        assert_eq!(b.pipe(), 5);
        assert_eq!(b.sacked_above_head(), 5);
        b.mark_lost_by_sack(3);
        // Segments 0, 1 have 5 SACKed above; 6 has only 1 above: not lost.
        assert_eq!(b.pipe(), 3);
        assert_eq!(b.next_pending(), Some(0));
        b.on_retransmit(0, SimTime(50));
        assert_eq!(b.next_pending(), Some(1));
        assert_eq!(b.pipe(), 4);
        // Cumulative ACK up to segment 6 removes 0..=5.
        let a = b.ack(SeqNum(s(6)));
        assert_eq!(a.segs, 6);
        assert_eq!(a.sacked_segs, 4);
        assert!(a.retransmitted);
        assert_eq!(a.bytes, 600);
        assert_eq!(b.len(), 4);
        assert_eq!(b.pipe(), 3);
        assert_eq!(b.next_pending(), None);
    }

    #[test]
    fn test_scoreboard_ignores_bogus_blocks() {
        let mut b = board(1000, 4);
        let blocks = [Some((900, 1100)), Some((1300, 1200)), Some((1350, 1450))];
        assert_eq!(b.sack(&blocks), 0);
        let a = b.ack(SeqNum(1150));
        assert_eq!((a.segs, a.bytes), (1, 150));
        assert_eq!(b.get(0).seq, SeqNum(1150));
        assert_eq!(b.get(0).len, 50);
    }

    #[test]
    fn test_scoreboard_rto_marks_all_but_sacked() {
        let mut b = board(0, 5);
        b.sack(&[Some((300, 400)), None, None]);
        b.mark_all_lost();
        assert_eq!(b.pipe(), 0);
        let order: Vec<_> = std::iter::from_fn(|| {
            let i = b.next_pending()?;
            b.on_retransmit(i, SimTime(9));
            Some(i)
        })
        .collect();
        assert_eq!(order, vec![0, 1, 2, 4]);
        assert_eq!(b.pipe(), 4);
    }
}
