//! CoDel, the controlled-delay AQM, per flow as Linux runs it
//! (`include/net/codel_impl.h`, kernel 5.4): a packet is dropped at dequeue
//! once every packet of a flow has waited `target` or more for a whole
//! `interval`; while in that state the next drop comes `interval / √count`
//! after the last. No ECN: wayside's TCP does not negotiate it, so Linux
//! drops where it would mark.

use crate::units::SimTime;

/// What a CoDel instance is set to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    pub target: SimTime,
    pub interval: SimTime,
    /// A queue holding no more than this many bytes is never dropped from
    /// (fq_codel: the device MTU with its link header; mac80211: 0).
    pub mtu: u32,
}

/// One flow's CoDel state (`struct codel_vars`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelVars {
    count: u32,
    lastcount: u32,
    dropping: bool,
    /// When the sojourn time first stayed above target long enough; zero
    /// if it is below.
    first_above: Option<SimTime>,
    drop_next: SimTime,
}

/// The control law: the next drop `interval / √count` after `t`. Linux
/// keeps 1/√count in fixed point by Newton steps; this computes it exactly.
fn control_law(t: SimTime, interval: SimTime, count: u32) -> SimTime {
    let gap = interval.as_ns() as f64 / f64::from(count.max(1)).sqrt();
    t + SimTime::from_ns(gap as u64)
}

/// A packet just taken from the head of a flow: when it was enqueued, and
/// the flow's (fq_codel: the whole queue's) backlog in bytes left behind.
#[derive(Clone, Copy, Debug)]
pub struct Head {
    pub enqueued: SimTime,
    pub backlog: u32,
}

impl CodelVars {
    /// `codel_should_drop`: whether the head packet has waited too long.
    fn should_drop(&mut self, now: SimTime, head: Option<Head>, p: &CodelParams) -> bool {
        let Some(head) = head else {
            self.first_above = None;
            return false;
        };
        let sojourn = now - head.enqueued;
        if sojourn < p.target || head.backlog <= p.mtu {
            self.first_above = None;
            return false;
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + p.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// `codel_dequeue`: takes packets through `pop` (which also reports the
    /// next head) until one may go; the ones CoDel drops go to `dropped`.
    /// Returns the packet to send, if any.
    pub fn dequeue<T>(
        &mut self,
        now: SimTime,
        p: &CodelParams,
        mut pop: impl FnMut() -> Option<(T, Head)>,
        dropped: &mut Vec<T>,
    ) -> Option<T> {
        let mut item = pop();
        let drop = self.should_drop(now, item.as_ref().map(|(_, h)| *h), p);
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count += 1;
                    if let Some((t, _)) = item.take() {
                        dropped.push(t);
                    }
                    item = pop();
                    if !self.should_drop(now, item.as_ref().map(|(_, h)| *h), p) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    }
                }
            }
        } else if drop {
            if let Some((t, _)) = item.take() {
                dropped.push(t);
            }
            item = pop();
            // Only for its bookkeeping (Linux uses the answer to mark ECN).
            self.should_drop(now, item.as_ref().map(|(_, h)| *h), p);
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = now.saturating_sub(self.drop_next) < p.interval * 16;
            self.count = if delta > 1 && delta < u32::MAX / 2 && recent {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.count);
        }
        item.map(|(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: CodelParams = CodelParams {
        target: SimTime::from_ms(5),
        interval: SimTime::from_ms(100),
        mtu: 1514,
    };

    /// A queue of packets all enqueued at time zero, 1500 bytes each.
    fn stale(n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    fn take(q: &mut Vec<u32>) -> Option<(u32, Head)> {
        let backlog = 1500 * q.len().saturating_sub(1) as u32;
        (!q.is_empty()).then(|| {
            (
                q.remove(0),
                Head {
                    enqueued: SimTime::ZERO,
                    backlog,
                },
            )
        })
    }

    #[test]
    fn drops_only_after_a_whole_interval_above_target() {
        let mut v = CodelVars::default();
        let mut q = stale(100);
        let mut dropped = Vec::new();
        // 10 ms: above target, the interval starts.
        let t = SimTime::from_ms(10);
        assert_eq!(v.dequeue(t, &P, || take(&mut q), &mut dropped), Some(0));
        // 100 ms later it is still above: one drop, then the next packet.
        let t = SimTime::from_ms(111);
        assert_eq!(v.dequeue(t, &P, || take(&mut q), &mut dropped), Some(2));
        assert_eq!(dropped, vec![1]);
        // The next drop is due interval/√1 later, not before.
        let t = SimTime::from_ms(150);
        assert_eq!(v.dequeue(t, &P, || take(&mut q), &mut dropped), Some(3));
        assert_eq!(dropped.len(), 1);
        let t = SimTime::from_ms(212);
        assert_eq!(v.dequeue(t, &P, || take(&mut q), &mut dropped), Some(5));
        assert_eq!(dropped, vec![1, 4]);
        // The law tightens: the third drop comes 100/√2 ms after the second.
        let t = SimTime::from_ms(211 + 71);
        assert_eq!(v.dequeue(t, &P, || take(&mut q), &mut dropped), Some(7));
        assert_eq!(dropped, vec![1, 4, 6]);
    }

    #[test]
    fn a_queue_of_one_mtu_is_never_dropped_from() {
        let mut v = CodelVars::default();
        let mut dropped = Vec::new();
        for ms in [10, 200, 400] {
            let mut q = stale(1);
            let got = v.dequeue(SimTime::from_ms(ms), &P, || take(&mut q), &mut dropped);
            assert_eq!(got, Some(0));
        }
        assert!(dropped.is_empty());
    }
}
