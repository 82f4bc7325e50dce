//! AMRR, Adaptive Multi Rate Retry (Lacage, Manshaei, Turletti, "IEEE 802.11
//! Rate Adaptation: A Practical Approach", MSWiM 2004), as in madwifi 0.9.x
//! (`ath_rate/amrr/amrr.c`).
//!
//! # How it works
//!
//! Per frame the driver counts `try0` (frames) and `try1` (frames that
//! needed at least one retry). Every `interval` (madwifi's timer: 1000 ms,
//! halved in station mode) it decides, with integer division as in the C:
//! - *success* = `try1 < try0 / 10` and *enough* = `try0 > 10`: the success
//!   count goes up; when it reaches the **success threshold** (and the rate
//!   is not the highest) the rate goes **up** one, the count resets and the
//!   link enters *recovery* (a probe of the new rate); otherwise recovery
//!   ends;
//! - *failure* = `try1 > try0 / 3`: the success count resets and (if not at
//!   the lowest rate) the rate goes **down** one. If this failure ends a
//!   recovery — the rate just raised did not hold — the success threshold
//!   **doubles** (binary backoff, capped at `max_success_threshold`),
//!   otherwise it returns to `min_success_threshold`.
//!
//! The counters reset after an interval with enough frames or a rate
//! change. So after a failed probe it takes 2, 4, 8, … good intervals to
//! try again.
//!
//! madwifi 0.9.x quirk: its `ath_rate_update`, called on every rate change,
//! also resets the success threshold to the minimum and clears recovery,
//! which disables the backoff (the rate is probed up every good interval).
//! That behaviour is available with `reset_threshold_on_rate_change`;
//! the default follows the algorithm as published (and FreeBSD's
//! `ieee80211_amrr`).
//!
//! Lazy timer as in [`super::Onoe`].
//!
//! **Initial rate** (madwifi `ath_rate_ctl_start`, Hadaller Table 5): the
//! highest rate of at most 36 Mbps in 802.11a/g (27 Mbps in p), the highest
//! in 802.11b.
//!
//! **Retry chain** (`ath_rate_update` with multi-rate retry):
//! `[r × 1, r−1 × 1, r−2 × 1, lowest × 1]`, stages below the lowest rate
//! omitted and the last only if r−2 is above the lowest (madwifi fills the
//! missing stages with rate code 0, which the hardware skips): 4 tries at
//! most; at the lowest rate a single try.
//!
//! # Parameters ([`AmrrParams`], madwifi defaults)
//! `interval` 1000 ms, `min_success_threshold` 1, `max_success_threshold`
//! 10, `reset_threshold_on_rate_change` false.

use super::common::Periodic;
use super::onoe::{madwifi_start_rate, step_down_chain};
use super::{RateControl, RetryChain, TxRequest, TxStatus};
use crate::phy::mode::Mode;
use crate::units::SimTime;

#[derive(Clone, Debug, PartialEq)]
pub struct AmrrParams {
    pub interval: SimTime,
    pub min_success_threshold: u32,
    pub max_success_threshold: u32,
    /// Reproduce madwifi 0.9.x's reset of the threshold on every rate change.
    pub reset_threshold_on_rate_change: bool,
}

impl super::Params for AmrrParams {}

impl Default for AmrrParams {
    fn default() -> Self {
        AmrrParams {
            interval: SimTime::from_ms(1_000),
            min_success_threshold: 1,
            max_success_threshold: 10,
            reset_threshold_on_rate_change: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Amrr {
    modes: &'static [Mode],
    params: AmrrParams,
    rate: usize,
    try0: u32,
    try1: u32,
    success: u32,
    success_threshold: u32,
    recovery: bool,
    timer: Periodic,
    chain: RetryChain,
}

impl Amrr {
    pub fn new(modes: &'static [Mode], params: AmrrParams) -> Self {
        assert!(!modes.is_empty(), "AMRR needs at least one mode");
        let rate = madwifi_start_rate(modes);
        Amrr {
            modes,
            success_threshold: params.min_success_threshold,
            params,
            rate,
            try0: 0,
            try1: 0,
            success: 0,
            recovery: false,
            timer: Periodic::default(),
            chain: step_down_chain(modes, rate, 1, 1),
        }
    }

    pub fn current(&self) -> Mode {
        self.modes[self.rate]
    }

    pub fn success_threshold(&self) -> u32 {
        self.success_threshold
    }

    fn tick(&mut self, now: SimTime) {
        if self.timer.due(now, self.params.interval) {
            self.decide();
        }
    }

    /// madwifi `ath_rate_ctl`.
    fn decide(&mut self) {
        let old = self.rate;
        let success = self.try1 < self.try0 / 10;
        let enough = self.try0 > 10;
        let failure = self.try1 > self.try0 / 3;
        if success && enough {
            self.success += 1;
            if self.success == self.success_threshold && self.rate + 1 < self.modes.len() {
                self.recovery = true;
                self.success = 0;
                self.rate += 1;
            } else {
                self.recovery = false;
            }
        } else if failure {
            self.success = 0;
            if self.rate > 0 {
                self.success_threshold = if self.recovery {
                    (self.success_threshold * 2).min(self.params.max_success_threshold)
                } else {
                    self.params.min_success_threshold
                };
                self.recovery = false;
                self.rate -= 1;
            } else {
                self.recovery = false;
            }
        }
        if enough || old != self.rate {
            self.try0 = 0;
            self.try1 = 0;
        }
        if old != self.rate {
            self.chain = step_down_chain(self.modes, self.rate, 1, 1);
            if self.params.reset_threshold_on_rate_change {
                self.success = 0;
                self.recovery = false;
                self.success_threshold = self.params.min_success_threshold;
            }
        }
    }
}

impl RateControl for Amrr {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        self.tick(req.now);
        self.chain.clone()
    }

    fn report(&mut self, status: &TxStatus) {
        self.tick(status.now);
        self.try0 += 1;
        if status.attempts > 1 || !status.acked {
            self.try1 += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{mbps, Channel};
    use super::*;
    use crate::phy::mode::Standard;

    fn g() -> &'static [Mode] {
        Standard::G.modes()
    }

    fn run(a: &mut Amrr, ch: &mut Channel, until_ms: u64) -> Vec<(u64, f64)> {
        let mut changes = Vec::new();
        while ch.now < SimTime::from_ms(until_ms) {
            let before = a.current();
            ch.send(a);
            if a.current() != before {
                changes.push((ch.now.as_ns() / 1_000_000, a.current().rate.mbps()));
            }
        }
        changes
    }

    #[test]
    fn starts_at_36_with_a_1_1_1_1_chain() {
        let mut a = Amrr::new(g(), AmrrParams::default());
        let ch = Channel::new(g(), vec![1.0; 12]);
        assert_eq!(
            mbps(&a.retry_chain(&ch.request())),
            [(36.0, 1), (24.0, 1), (18.0, 1), (1.0, 1)]
        );
        assert_eq!(
            Amrr::new(Standard::B.modes(), AmrrParams::default())
                .current()
                .rate
                .mbps(),
            11.0
        );
    }

    #[test]
    fn success_threshold_one_steps_up_every_good_interval() {
        let mut a = Amrr::new(g(), AmrrParams::default());
        let mut ch = Channel::new(g(), vec![1.0; 12]);
        ch.gap = SimTime::from_ms(10);
        let changes = run(&mut a, &mut ch, 3_500);
        assert_eq!(
            changes.iter().map(|c| c.1).collect::<Vec<_>>(),
            [48.0, 54.0]
        );
        // Ten frames in an interval are not "enough" (> 10); the counters
        // carry over, so the decision comes after the second interval.
        let mut a = Amrr::new(g(), AmrrParams::default());
        let mut ch = Channel::new(g(), vec![1.0; 12]);
        ch.gap = SimTime::from_ms(100);
        assert!(run(&mut a, &mut ch, 1_500).is_empty());
        let later = run(&mut a, &mut ch, 2_500);
        assert_eq!(later.len(), 1);
        assert_eq!((later[0].0 / 1000, later[0].1), (2, 48.0));
    }

    /// A channel that supports 36 but not 48 Mbps: every probe of 48 fails,
    /// and the threshold doubles each time (1 → 2 → 4 → 8 → 10), so the
    /// probes get 3, 5, 9, 11, 11 intervals apart.
    #[test]
    fn failed_probes_double_the_success_threshold() {
        let mut a = Amrr::new(g(), AmrrParams::default());
        let mut ch = Channel::new(g(), Channel::cliff(g(), 36.0));
        ch.gap = SimTime::from_ms(10);
        let changes = run(&mut a, &mut ch, 45_500);
        let probes: Vec<u64> = changes
            .iter()
            .filter(|c| c.1 == 48.0)
            .map(|c| c.0 / 1000)
            .collect();
        assert_eq!(probes, [1, 4, 9, 18, 29, 40], "{changes:?}");
        assert_eq!(a.success_threshold(), 10);
        // madwifi's reset on rate change: a probe every other interval.
        let mut a = Amrr::new(
            g(),
            AmrrParams {
                reset_threshold_on_rate_change: true,
                ..AmrrParams::default()
            },
        );
        let mut ch = Channel::new(g(), Channel::cliff(g(), 36.0));
        ch.gap = SimTime::from_ms(10);
        let changes = run(&mut a, &mut ch, 10_500);
        let probes: Vec<u64> = changes
            .iter()
            .filter(|c| c.1 == 48.0)
            .map(|c| c.0 / 1000)
            .collect();
        assert_eq!(probes, [1, 3, 5, 7, 9]);
    }

    #[test]
    fn a_simple_failure_resets_the_threshold_and_steps_down() {
        let mut a = Amrr::new(g(), AmrrParams::default());
        a.success_threshold = 8;
        a.try0 = 30;
        a.try1 = 11; // > 30 / 3
        a.decide();
        assert_eq!((a.current().rate.mbps(), a.success_threshold()), (24.0, 1));
        // Between the thresholds: nothing changes.
        a.try0 = 30;
        a.try1 = 5; // not < 3, not > 10
        a.decide();
        assert_eq!(a.current().rate.mbps(), 24.0);
    }
}
