//! ARF, Auto Rate Fallback: the algorithm of Lucent's WaveLAN-II cards,
//! the Orinoco's forerunners (Kamerman and Monteban, "WaveLAN-II: a
//! high-performance wireless LAN for the unlicensed band", Bell Labs
//! Technical Journal, 1997), as ns-3's `ArfWifiManager` runs it.
//!
//! # How it works
//!
//! One current rate per link, starting at the highest. Every attempt counts,
//! within a frame's retries and across frames:
//! - two failed attempts in a row (no ACK) → **down** one rate;
//! - `success_threshold` (10) acknowledged attempts in a row, or an
//!   acknowledged attempt when `timer_threshold` (15) attempts have passed
//!   since the last change → **up** one rate. The next attempt is a probe:
//!   if it fails, ARF goes back down at once.
//!
//! WaveLAN-II's timer ran on time; like ns-3 we count it in attempts (its
//! `TimerThreshold` default, 15).
//!
//! # Retry chain
//!
//! The rates ARF would use for this frame if every attempt failed, over
//! `tries` attempts (7, 802.11's `dot11ShortRetryLimit`), as stages: from
//! 11 Mbps `[11 ×2, 5.5 ×2, 2 ×2, 1 ×1]`, right after a step up
//! `[11 ×1, 5.5 ×2, 2 ×2, 1 ×2]`. Seven tries reach at most four rates, so
//! the chain fits the hardware's four stages. The report replays the frame's
//! attempts, so after each frame the state is ARF's after each attempt.

use super::common::chain_of;
use super::{RateControl, RetryChain, TxRequest, TxStatus, MAX_STAGES};
use crate::phy::mode::Mode;

#[derive(Clone, Debug, PartialEq)]
pub struct ArfParams {
    /// Acknowledged attempts in a row that raise the rate.
    pub success_threshold: u32,
    /// Attempts since the last change after which a success raises it.
    pub timer_threshold: u32,
    /// Attempts per frame.
    pub tries: u8,
}

impl super::Params for ArfParams {}

impl Default for ArfParams {
    fn default() -> Self {
        ArfParams {
            success_threshold: 10,
            timer_threshold: 15,
            tries: 7,
        }
    }
}

/// Where ARF stands between attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    rate: usize,
    successes: u32,
    failures: u32,
    /// Attempts since the last change of rate.
    since_change: u32,
    /// The last change was up and no attempt has been made since.
    probing: bool,
}

impl State {
    fn change(&mut self, rate: usize, probing: bool) {
        self.rate = rate;
        self.successes = 0;
        self.failures = 0;
        self.since_change = 0;
        self.probing = probing;
    }

    /// One attempt's outcome, with `top` the highest rate index.
    fn attempt(&mut self, acked: bool, top: usize, p: &ArfParams) {
        self.since_change += 1;
        if acked {
            self.successes += 1;
            self.failures = 0;
            self.probing = false;
            let due =
                self.successes >= p.success_threshold || self.since_change >= p.timer_threshold;
            if due && self.rate < top {
                self.change(self.rate + 1, true);
            }
        } else {
            self.successes = 0;
            self.failures += 1;
            if self.probing || self.failures >= 2 {
                self.change(self.rate.saturating_sub(1), false);
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Arf {
    modes: &'static [Mode],
    params: ArfParams,
    state: State,
}

impl Arf {
    pub fn new(modes: &'static [Mode], params: ArfParams) -> Self {
        assert!(!modes.is_empty(), "ARF needs at least one mode");
        Arf {
            modes,
            state: State {
                rate: modes.len() - 1,
                successes: 0,
                failures: 0,
                since_change: 0,
                probing: false,
            },
            params,
        }
    }

    /// The current rate.
    pub fn current(&self) -> Mode {
        self.modes[self.state.rate]
    }

    fn top(&self) -> usize {
        self.modes.len() - 1
    }
}

impl RateControl for Arf {
    fn retry_chain(&mut self, _req: &TxRequest) -> RetryChain {
        let mut s = self.state;
        let mut stages: Vec<(usize, u8)> = Vec::with_capacity(MAX_STAGES);
        for _ in 0..self.params.tries {
            let full = stages.len() == MAX_STAGES;
            match stages.last_mut() {
                Some((rate, tries)) if *rate == s.rate => *tries += 1,
                _ if full => break,
                _ => stages.push((s.rate, 1)),
            }
            s.attempt(false, self.top(), &self.params);
        }
        chain_of(self.modes, &stages)
    }

    fn report(&mut self, status: &TxStatus) {
        let top = self.top();
        for i in 0..status.attempts {
            let acked = status.acked && i + 1 == status.attempts;
            self.state.attempt(acked, top, &self.params);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{mbps, Channel};
    use super::*;
    use crate::phy::mode::Standard;

    fn b() -> &'static [Mode] {
        Standard::B.modes()
    }

    fn arf() -> Arf {
        Arf::new(b(), ArfParams::default())
    }

    #[test]
    fn starts_at_the_top_and_falls_back_every_two_tries() {
        let mut a = arf();
        let ch = Channel::new(b(), vec![1.0; 4]);
        assert_eq!(
            mbps(&a.retry_chain(&ch.request())),
            [(11.0, 2), (5.5, 2), (2.0, 2), (1.0, 1)]
        );
        // 802.11g: seven tries reach four rates.
        let mut g = Arf::new(Standard::G.modes(), ArfParams::default());
        assert_eq!(
            mbps(&g.retry_chain(&ch.request())),
            [(54.0, 2), (48.0, 2), (36.0, 2), (24.0, 1)]
        );
    }

    #[test]
    fn two_failures_in_a_row_step_down_even_across_frames() {
        let mut a = arf();
        let p = a.params.clone();
        // A frame acked on its second try, then one failing its first: the
        // failures are not in a row, the rate stays.
        a.state.attempt(false, 3, &p);
        a.state.attempt(true, 3, &p);
        a.state.attempt(false, 3, &p);
        assert_eq!(a.current().rate.mbps(), 11.0);
        // Its second try fails too: two in a row.
        a.state.attempt(false, 3, &p);
        assert_eq!(a.current().rate.mbps(), 5.5);
        // The same through reports: a frame given up after its seven tries
        // ends three steps down, at 1 Mbps.
        let mut a = arf();
        let chain = a.retry_chain(&Channel::new(b(), vec![0.0; 4]).request());
        a.report(&TxStatus {
            now: crate::units::SimTime::ZERO,
            bytes: 1528,
            chain,
            attempts: 7,
            acked: false,
            ampdu: None,
        });
        assert_eq!(a.current().rate.mbps(), 1.0);
    }

    #[test]
    fn ten_successes_step_up_and_a_failed_probe_steps_back_at_once() {
        let mut a = arf();
        let mut ch = Channel::new(b(), vec![1.0, 1.0, 1.0, 0.0]);
        // 11 Mbps never works: the first frame goes at 5.5 on its third try.
        let (_, s) = ch.send(&mut a);
        assert_eq!(
            (s.attempts, s.acked, a.current().rate.mbps()),
            (3, true, 5.5)
        );
        // Nine more successes at 5.5 Mbps: ten in a row, up to 11 (a probe).
        for _ in 0..9 {
            ch.send(&mut a);
        }
        assert_eq!(a.current().rate.mbps(), 11.0);
        assert_eq!(
            mbps(&a.retry_chain(&ch.request())),
            [(11.0, 1), (5.5, 2), (2.0, 2), (1.0, 2)]
        );
        // The probe fails: back to 5.5 Mbps after one try, not two.
        let (_, s) = ch.send(&mut a);
        assert_eq!((s.attempts, a.current().rate.mbps()), (2, 5.5));
    }

    #[test]
    fn the_timer_steps_up_despite_scattered_failures() {
        let mut a = arf();
        let p = a.params.clone();
        // At 2 Mbps, failure and success alternate: never ten successes in a
        // row, never two failures; the fifteenth attempt (a success) is the
        // timer's.
        a.state.change(1, false);
        for i in 0..14 {
            a.state.attempt(i % 2 == 1, 3, &p);
        }
        assert_eq!(a.current().rate.mbps(), 2.0);
        a.state.attempt(true, 3, &p);
        assert_eq!(a.current().rate.mbps(), 5.5);
    }

    #[test]
    fn the_report_replays_what_the_chain_predicted() {
        // Whatever the channel, after each frame the rate is the chain's
        // stage the frame ended in, or the next one up or down from it.
        let mut a = arf();
        let mut ch = Channel::new(b(), vec![0.9, 0.7, 0.4, 0.1]);
        for _ in 0..500 {
            let (chain, s) = ch.send(&mut a);
            assert!(s.attempts >= 1 && s.attempts <= 7);
            let rates: Vec<f64> = chain
                .stages
                .iter()
                .flat_map(|st| std::iter::repeat_n(st.mode.rate.mbps(), st.tries as usize))
                .collect();
            let last = rates[s.attempts as usize - 1];
            let now = a.current().rate.mbps();
            let near = |x: f64, y: f64| {
                let i = b().iter().position(|m| m.rate.mbps() == x).unwrap() as i64;
                let j = b().iter().position(|m| m.rate.mbps() == y).unwrap() as i64;
                (i - j).abs() <= 1
            };
            assert!(near(last, now), "{rates:?} {s:?} -> {now}");
        }
    }
}
