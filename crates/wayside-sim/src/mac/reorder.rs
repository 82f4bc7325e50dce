//! The recipient's side of a block-ack session: the reorder buffer as
//! Linux's mac80211 runs it (`net/mac80211/rx.c` of the 3.x kernels,
//! `ieee80211_sta_manage_reorder_buf`, `ieee80211_sta_reorder_release`,
//! `ieee80211_release_reorder_frames`; a BAR through
//! `ieee80211_rx_h_ctrl`), and the scoreboard a Block Ack's bitmap is
//! read from.
//!
//! MPDUs arriving out of order wait in a 64-slot buffer from the head
//! sequence number; in-order ones are handed up at once. An MPDU older
//! than the head, or already waiting, is a duplicate. One beyond the
//! window moves the head so it fits, handing up whatever the head passes.
//! A gap that has held back a waiting MPDU for [`REORDER_TIMEOUT`]
//! (`HT_RX_REORDER_BUF_TIMEOUT`, HZ/10) is skipped. A BAR moves the head
//! to its starting sequence number, handing up what it passes.

use super::ampdu::{seq_offset, BA_WINDOW};
use super::Frame;
use crate::units::{Dbm, SimTime};

/// How long a gap may hold back the MPDUs after it.
pub const REORDER_TIMEOUT: SimTime = SimTime::from_ms(100);

/// A frame handed up, with the signal it arrived at.
pub type Arrived = (Frame, Dbm);

/// One originator's reorder buffer and scoreboard.
#[derive(Clone, Debug)]
pub struct Reorder {
    head: u16,
    /// Slot `seq % 64`: the MPDU waiting there and when it arrived.
    slots: Vec<Option<(SimTime, Arrived)>>,
    stored: usize,
    /// Sequence numbers received (4096 bits).
    seen: Vec<u64>,
}

impl Reorder {
    /// A session whose first MPDU is `ssn` (the ADDBA's starting
    /// sequence number).
    pub fn new(ssn: u16) -> Reorder {
        Reorder {
            head: ssn % 4096,
            slots: vec![None; usize::from(BA_WINDOW)],
            stored: 0,
            seen: vec![0; 64],
        }
    }

    fn slot(seq: u16) -> usize {
        usize::from(seq % BA_WINDOW)
    }

    fn mark_seen(&mut self, seq: u16) {
        self.seen[usize::from(seq / 64)] |= 1 << (seq % 64);
        // Sequence numbers 64 to 127 ahead cannot have been sent since
        // they were last used: forget them before they come round again.
        for k in 64..128u16 {
            let s = (seq + k) % 4096;
            self.seen[usize::from(s / 64)] &= !(1 << (s % 64));
        }
    }

    fn was_seen(&self, seq: u16) -> bool {
        self.seen[usize::from(seq / 64)] & (1 << (seq % 64)) != 0
    }

    /// The Block Ack bitmap from `ssn`: bit i set if `ssn + i` arrived.
    pub fn bitmap(&self, ssn: u16) -> u64 {
        (0..BA_WINDOW)
            .filter(|&i| self.was_seen((ssn + i) % 4096))
            .fold(0, |b, i| b | (1 << i))
    }

    /// Hands up the MPDU at the head, if any, and moves the head on.
    fn release_head(&mut self, out: &mut Vec<Arrived>) {
        let i = Self::slot(self.head);
        if let Some((_, a)) = self.slots[i].take() {
            self.stored -= 1;
            out.push(a);
        }
        self.head = (self.head + 1) % 4096;
    }

    /// Moves the head to `to`, handing up what it passes.
    fn release_to(&mut self, to: u16, out: &mut Vec<Arrived>) {
        while self.head != to && seq_offset(self.head, to) < 2048 {
            self.release_head(out);
        }
    }

    /// MPDU `frame` (sequence number `frame.seq`) arrived intact at
    /// `now`: whether it is a duplicate, and what is handed up.
    pub fn receive(&mut self, now: SimTime, frame: Frame, rssi: Dbm) -> (bool, Vec<Arrived>) {
        let seq = frame.seq;
        let mut out = Vec::new();
        let ahead = seq_offset(self.head, seq);
        if ahead >= 2048 {
            return (true, out); // older than the head
        }
        self.mark_seen(seq);
        if ahead >= BA_WINDOW {
            let head = (seq + 4096 - BA_WINDOW + 1) % 4096;
            self.release_to(head, &mut out);
        }
        let i = Self::slot(seq);
        if self.slots[i].is_some() {
            return (true, out);
        }
        if seq == self.head && self.stored == 0 {
            self.head = (self.head + 1) % 4096;
            out.push((frame, rssi));
            return (false, out);
        }
        self.slots[i] = Some((now, (frame, rssi)));
        self.stored += 1;
        self.release(now, &mut out);
        (false, out)
    }

    /// A BAR starting at `ssn`: the head moves there.
    pub fn bar(&mut self, now: SimTime, ssn: u16) -> Vec<Arrived> {
        let mut out = Vec::new();
        self.release_to(ssn % 4096, &mut out);
        self.release(now, &mut out);
        out
    }

    /// Hands up what is in order from the head, and past each gap before
    /// an MPDU that has waited [`REORDER_TIMEOUT`] (mac80211 releases
    /// those when its timer fires, at once if already due).
    pub fn release(&mut self, now: SimTime, out: &mut Vec<Arrived>) {
        loop {
            while self.slots[Self::slot(self.head)].is_some() {
                self.release_head(out);
            }
            if self.stored == 0 {
                return;
            }
            let (k, at) = (1..BA_WINDOW)
                .find_map(|k| {
                    let at = self.slots[Self::slot(self.head + k)].as_ref()?.0;
                    Some((k, at))
                })
                .expect("a stored MPDU in the window");
            if now < at + REORDER_TIMEOUT {
                return;
            }
            // The gap's slots; the loop then hands up the MPDU after it.
            for _ in 0..k {
                self.release_head(out);
            }
        }
    }

    /// When the oldest MPDU held back by a gap times out, if any waits.
    pub fn deadline(&self) -> Option<SimTime> {
        (0..BA_WINDOW)
            .filter_map(|k| self.slots[Self::slot(self.head + k)].as_ref())
            .map(|(at, _)| *at + REORDER_TIMEOUT)
            .next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Dst, NodeId};
    use crate::mac::Payload;
    use crate::trace::FrameKind;

    fn mpdu(seq: u16) -> Frame {
        Frame {
            kind: FrameKind::Data,
            src: NodeId(0),
            dst: Dst::Node(NodeId(1)),
            seq,
            retry: false,
            attempt: 0,
            psdu_bytes: 100,
            duration: SimTime::ZERO,
            payload: Payload::Raw,
            report: None,
        }
    }

    fn seqs(out: &[Arrived]) -> Vec<u16> {
        out.iter().map(|(f, _)| f.seq).collect()
    }

    fn rx(r: &mut Reorder, ms: u64, seq: u16) -> (bool, Vec<u16>) {
        let (dup, out) = r.receive(SimTime::from_ms(ms), mpdu(seq), Dbm(-50.0));
        (dup, seqs(&out))
    }

    #[test]
    fn in_order_passes_and_a_gap_holds_back_until_filled() {
        let mut r = Reorder::new(10);
        assert_eq!(rx(&mut r, 0, 10), (false, vec![10]));
        assert_eq!(rx(&mut r, 0, 12), (false, vec![]));
        assert_eq!(rx(&mut r, 0, 13), (false, vec![]));
        assert_eq!(r.deadline(), Some(REORDER_TIMEOUT));
        assert_eq!(rx(&mut r, 1, 11), (false, vec![11, 12, 13]));
        assert_eq!(r.deadline(), None);
        // Old and repeated MPDUs are duplicates.
        assert_eq!(rx(&mut r, 2, 12), (true, vec![]));
        assert_eq!(rx(&mut r, 2, 15), (false, vec![]));
        assert_eq!(rx(&mut r, 2, 15), (true, vec![]));
    }

    #[test]
    fn a_gap_is_skipped_after_the_timeout() {
        let mut r = Reorder::new(0);
        assert_eq!(rx(&mut r, 0, 1), (false, vec![]));
        let mut out = Vec::new();
        r.release(SimTime::from_ms(99), &mut out);
        assert!(out.is_empty());
        r.release(SimTime::from_ms(100), &mut out);
        assert_eq!(seqs(&out), vec![1]);
        // The lost one, late, is now older than the head.
        assert_eq!(rx(&mut r, 101, 0), (true, vec![]));
    }

    #[test]
    fn a_timed_out_gap_behind_released_frames_is_skipped_too() {
        let mut r = Reorder::new(0);
        rx(&mut r, 0, 1);
        rx(&mut r, 0, 3);
        // At 150 ms 0 arrives: 0 and 1 go up, and the gap at 2 has held
        // 3 back for longer than the timeout.
        assert_eq!(rx(&mut r, 150, 0), (false, vec![0, 1, 3]));
        assert_eq!(r.deadline(), None);
    }

    #[test]
    fn beyond_the_window_moves_the_head_and_a_bar_moves_it_too() {
        let mut r = Reorder::new(0);
        rx(&mut r, 0, 2);
        rx(&mut r, 0, 3);
        // 70 needs the head at 7: 2 and 3 are handed up on the way.
        assert_eq!(rx(&mut r, 0, 70), (false, vec![2, 3]));
        rx(&mut r, 0, 72);
        let out = r.bar(SimTime::from_ms(1), 71);
        assert_eq!(seqs(&out), vec![70]);
        let out = r.bar(SimTime::from_ms(1), 72);
        assert_eq!(seqs(&out), vec![72]);
    }

    #[test]
    fn the_bitmap_names_what_arrived_across_the_wrap() {
        let mut r = Reorder::new(4094);
        for s in [4094, 4095, 1] {
            rx(&mut r, 0, s);
        }
        assert_eq!(r.bitmap(4094), 0b1011);
        // A later round of the same numbers starts clean.
        for s in (2..4094).step_by(40) {
            r.mark_seen(s);
        }
        assert_eq!(r.bitmap(4094) & 0b1000, 0);
    }
}
