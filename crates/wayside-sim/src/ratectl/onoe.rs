//! Onoe: Atsushi Onoe's credit-based algorithm, as in madwifi 0.9.x
//! (`ath_rate/onoe/onoe.c`, Sam Leffler's port from NetBSD).
//!
//! # How it works
//!
//! Every `interval` (madwifi's periodic `ath_rate_ctl` timer, 1000 ms; the
//! driver halves it in station mode, so use 500 ms for a client) it looks at
//! the frames finished since the last look: `ok` acknowledged, `err` given
//! up, `retr` retransmissions (attempts − 1 summed over frames). With
//! "enough" = at least 10 frames:
//! - no frame acked but some failed → **down** one rate;
//! - enough and `ok < retr` (on average every frame needed a retry) → down;
//! - enough, no failures and `retr < ok × raise / 100` (fewer than 10 % of
//!   frames retried) → one **credit**; at `raise_threshold` (10) credits the
//!   rate goes **up** one and the credits reset;
//! - otherwise, with enough frames, one credit is taken away.
//!
//! A change of rate resets the counters and the credits; otherwise the
//! counters reset whenever there were enough frames. Going down also resets
//! the credits. So it takes at least 10 good intervals (10 s by default) to
//! climb one rate, and one bad interval to drop one.
//!
//! The timer is evaluated lazily at the first `retry_chain`/`report` after
//! it is due (an interval with no traffic changes nothing in madwifi, so
//! skipped ticks are equivalent); deadlines stay on the `interval` grid
//! started when the link was created (its first frame).
//!
//! **Initial rate** (madwifi `ath_rate_ctl_start`; Hadaller Table 5): the
//! highest rate of at most 36 Mbps in 802.11a/g (and p: 27 Mbps), the
//! highest rate in 802.11b.
//!
//! **Retry chain** (`ath_rate_update`, `ath_rate_setupxtxdesc`):
//! `[r × 4, r−1 × 2, r−2 × 2, lowest × 2]` over the rate list, stages that
//! would fall below the lowest rate omitted, and the "lowest" stage only if
//! r−2 is above it (madwifi sets its try count to 0 otherwise) — at the
//! lowest rate the chain is `[lowest × 4]`.
//!
//! # Parameters ([`OnoeParams`], madwifi defaults)
//! `interval` 1000 ms, `raise` 10 (%), `raise_threshold` 10 (credits).

use super::common::{chain_of, highest_at_most, Periodic};
use super::{RateControl, RetryChain, TxRequest, TxStatus};
use crate::phy::mode::{Mode, Standard};
use crate::units::SimTime;

#[derive(Clone, Debug, PartialEq)]
pub struct OnoeParams {
    /// Period of the rate decision.
    pub interval: SimTime,
    /// Percentage of retried frames below which an interval earns a credit.
    pub raise: u32,
    /// Credits needed to go up one rate.
    pub raise_threshold: u32,
}

impl super::Params for OnoeParams {}

impl Default for OnoeParams {
    fn default() -> Self {
        OnoeParams {
            interval: SimTime::from_ms(1_000),
            raise: 10,
            raise_threshold: 10,
        }
    }
}

/// madwifi's start rate for Onoe and AMRR: the highest rate of at most
/// 36 Mbps, or the highest rate for 802.11b.
pub(crate) fn madwifi_start_rate(modes: &[Mode]) -> usize {
    if super::common::standard_of(modes) == Standard::B {
        modes.len() - 1
    } else {
        highest_at_most(modes, 36.0)
    }
}

/// madwifi's step-down chain for rate index `r`: `[r × t0, r−1 × t, r−2 × t,
/// lowest × t]` with the stages madwifi leaves out omitted.
pub(crate) fn step_down_chain(modes: &[Mode], r: usize, t0: u8, t: u8) -> RetryChain {
    let mut stages = [(r, t0), (0, 0), (0, 0), (0, 0)];
    if r >= 1 {
        stages[1] = (r - 1, t);
    }
    if r >= 2 {
        stages[2] = (r - 2, t);
    }
    if r >= 3 {
        stages[3] = (0, t);
    }
    chain_of(modes, &stages)
}

#[derive(Clone, Debug)]
pub struct Onoe {
    modes: &'static [Mode],
    params: OnoeParams,
    rate: usize,
    ok: u32,
    err: u32,
    retr: u32,
    upper: u32,
    timer: Periodic,
    chain: RetryChain,
}

impl Onoe {
    pub fn new(modes: &'static [Mode], params: OnoeParams) -> Self {
        assert!(!modes.is_empty(), "Onoe needs at least one mode");
        let rate = madwifi_start_rate(modes);
        Onoe {
            modes,
            params,
            rate,
            ok: 0,
            err: 0,
            retr: 0,
            upper: 0,
            timer: Periodic::default(),
            chain: step_down_chain(modes, rate, 4, 2),
        }
    }

    /// The current rate.
    pub fn current(&self) -> Mode {
        self.modes[self.rate]
    }

    fn tick(&mut self, now: SimTime) {
        if self.timer.due(now, self.params.interval) {
            self.decide();
        }
    }

    /// madwifi `ath_rate_ctl`.
    fn decide(&mut self) {
        let enough = self.ok + self.err >= 10;
        let mut dir = 0;
        if self.err > 0 && self.ok == 0 {
            dir = -1;
        }
        if enough && self.ok < self.retr {
            dir = -1;
        }
        if enough && self.err == 0 && self.retr < self.ok * self.params.raise / 100 {
            dir = 1;
        }
        let mut rate = self.rate;
        match dir {
            0 => {
                if enough && self.upper > 0 {
                    self.upper -= 1;
                }
            }
            -1 => {
                rate = rate.saturating_sub(1);
                self.upper = 0;
            }
            _ => {
                self.upper += 1;
                if self.upper >= self.params.raise_threshold {
                    self.upper = 0;
                    if rate + 1 < self.modes.len() {
                        rate += 1;
                    }
                }
            }
        }
        if rate != self.rate {
            self.rate = rate;
            self.chain = step_down_chain(self.modes, rate, 4, 2);
            self.ok = 0;
            self.err = 0;
            self.retr = 0;
            self.upper = 0;
        } else if enough {
            self.ok = 0;
            self.err = 0;
            self.retr = 0;
        }
    }
}

impl RateControl for Onoe {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        self.tick(req.now);
        self.chain.clone()
    }

    fn report(&mut self, status: &TxStatus) {
        self.tick(status.now);
        if status.acked {
            self.ok += 1;
        } else {
            self.err += 1;
        }
        self.retr += status.attempts.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{mbps, Channel};
    use super::*;

    fn g() -> &'static [Mode] {
        Standard::G.modes()
    }

    #[test]
    fn starts_at_36_with_a_4_2_2_2_chain() {
        let mut o = Onoe::new(g(), OnoeParams::default());
        let ch = Channel::new(g(), vec![1.0; 12]);
        assert_eq!(
            mbps(&o.retry_chain(&ch.request())),
            [(36.0, 4), (24.0, 2), (18.0, 2), (1.0, 2)]
        );
        assert_eq!(
            Onoe::new(Standard::A.modes(), OnoeParams::default())
                .current()
                .rate
                .mbps(),
            36.0
        );
        assert_eq!(
            Onoe::new(Standard::B.modes(), OnoeParams::default())
                .current()
                .rate
                .mbps(),
            11.0
        );
        assert_eq!(mbps(&step_down_chain(g(), 1, 4, 2)), [(2.0, 4), (1.0, 2)]);
        assert_eq!(
            mbps(&step_down_chain(g(), 2, 4, 2)),
            [(5.5, 4), (2.0, 2), (1.0, 2)]
        );
        assert_eq!(mbps(&step_down_chain(g(), 0, 4, 2)), [(1.0, 4)]);
    }

    /// Ten clean intervals earn ten credits and one step up — not nine.
    #[test]
    fn ten_credits_raise_the_rate_once() {
        let mut o = Onoe::new(g(), OnoeParams::default());
        let mut ch = Channel::new(g(), vec![1.0; 12]);
        ch.gap = SimTime::from_ms(10);
        let mut ups = Vec::new();
        while ch.now < SimTime::from_ms(25_500) {
            let before = o.current();
            ch.send(&mut o);
            if o.current() != before {
                ups.push((ch.now, o.current().rate.mbps()));
            }
        }
        // First decision at 1 s, credits at 1..=10 s: up at 10 s, then 20 s.
        assert_eq!(ups.len(), 2, "{ups:?}");
        assert_eq!(ups[0].1, 48.0);
        assert!(
            ups[0].0 >= SimTime::from_ms(10_000) && ups[0].0 < SimTime::from_ms(10_100),
            "{ups:?}"
        );
        assert_eq!(ups[1].1, 54.0);
    }

    /// Intervals without enough frames neither earn credit nor reset the
    /// counters: with 5 frames per interval, one credit every 2 s.
    #[test]
    fn too_few_frames_earn_no_credit() {
        let mut o = Onoe::new(g(), OnoeParams::default());
        let mut ch = Channel::new(g(), vec![1.0; 12]);
        ch.gap = SimTime::from_ms(200);
        while ch.now < SimTime::from_ms(19_500) {
            ch.send(&mut o);
        }
        assert_eq!((o.current().rate.mbps(), o.upper), (36.0, 9));
        while ch.now < SimTime::from_ms(20_500) {
            ch.send(&mut o);
        }
        assert_eq!(o.current().rate.mbps(), 48.0);
    }

    #[test]
    fn a_bad_interval_drops_one_rate_and_clears_credits() {
        let mut o = Onoe::new(g(), OnoeParams::default());
        let mut ch = Channel::new(g(), Channel::cliff(g(), 24.0));
        ch.gap = SimTime::from_ms(10);
        let mut seen = Vec::new();
        while ch.now < SimTime::from_ms(4_500) {
            ch.send(&mut o);
            if seen.last() != Some(&o.current().rate.mbps()) {
                seen.push(o.current().rate.mbps());
            }
        }
        // 36 fails every first try (all frames retried): down one per interval.
        assert_eq!(seen, [36.0, 24.0]);
        // Clean intervals at 2, 3 and 4 s earned three credits.
        assert_eq!(o.upper, 3);
        // Half the frames retried (ok < retr false, retr ≥ 10 %): no credit,
        // credits decay.
        o.upper = 3;
        o.ok = 10;
        o.retr = 5;
        o.decide();
        assert_eq!((o.upper, o.current().rate.mbps()), (2, 24.0));
        // Every frame lost: down even with few frames, credits cleared.
        o.err = 2;
        o.decide();
        assert_eq!((o.upper, o.current().rate.mbps()), (0, 18.0));
    }
}
