//! RRAA-BASIC, Robust Rate Adaptation Algorithm (Wong, Yang, Lu,
//! Bharghavan, "Robust Rate Adaptation for 802.11 Wireless Networks",
//! MobiCom 2006), in the per-attempt form of ns-3's `RraaWifiManager`.
//!
//! # How it works
//!
//! RRAA counts transmission *attempts* (each retry is one) at the current
//! rate in a short estimation window of `ewnd` attempts and compares the
//! window's loss ratio with two per-rate thresholds:
//! - **P_MTL** (maximum tolerable loss) = α · P*, where the critical loss
//!   ratio P*(r) = 1 − T(r)/T(r−1) is the loss at which rate r delivers no
//!   more than the next lower rate does losslessly (T: the lossless time of
//!   a `frame_bytes` frame, DIFS + backoff + data + SIFS + ACK);
//! - **P_ORI** (opportunistic rate increase) = P_MTL(r+1) / β.
//!
//! After every attempt: if the losses so far already give a ratio ≥ P_MTL
//! even if the rest of the window succeeds (`failed/ewnd ≥ P_MTL`), go
//! **down** one rate now; if the ratio stays ≤ P_ORI even if the rest of the
//! window fails (`(failed + left)/ewnd ≤ P_ORI`), go **up** one rate now.
//! A change, a finished window, or `window_timeout` since the window began
//! (checked at the start of each frame) starts a new window.
//!
//! Defaults α = 1.25, β = 2 (the paper's; the thresholds it lists for
//! 802.11a come out of this rule, as ns-3's attribute defaults show:
//! P_MTL 9.4/23/33.6/26.5 % at 54/48/36/24 Mbps. With this simulator's
//! time estimate the rule gives 8.3/21.6/31.0/25.8 % for 1528-byte frames.) `ewnd` is the paper's per-rate
//! window by 20 MHz-equivalent rate: 6 below 9 Mbps, 10 at 9–11 Mbps, 20 at
//! 12–18 Mbps, 40 from 24 Mbps (802.11p rates count double).
//!
//! The rate ladder is the mode list with every mode dropped whose lossless
//! time is not below that of the previous kept mode — in 802.11g, 11 Mbps
//! CCK (slower than 9 Mbps OFDM once the DSSS preamble, timing and ACK are
//! counted), so RRAA climbs 9 → 12 Mbps.
//!
//! **Retry chain.** RRAA picks the rate per attempt; the hardware wants the
//! chain up front, so the chain is RRAA's own prediction: the rate it would
//! use for each of `max_tries` attempts if all of them failed (compressed to
//! at most four stages, the last taking the remaining tries), e.g.
//! `[54 × 4, 48 × 3]` from a fresh window at 54 Mbps. Reports are replayed
//! attempt by attempt through the same rules, so the state matches what
//! per-attempt RRAA would have done.
//!
//! **Initial rate** (Hadaller Table 5): the highest rate (54 Mbps in a/g).
//!
//! # Simplifications
//!
//! RRAA's adaptive RTS filter (A-RTS) is not modelled (the MAC decides RTS
//! by frame size); only RRAA-BASIC's loss estimation and rate change.
//!
//! # Parameters ([`RraaParams`])
//! `alpha` 1.25, `beta` 2, `frame_bytes` 1528 (1500 B IP packet),
//! `window_timeout` 50 ms (ns-3), `max_tries` 7.

use super::common::{self, index_of, stages_used};
use super::{RateControl, RetryChain, Stage, TxRequest, TxStatus, MAX_STAGES};
use crate::phy::mode::{ModClass, Mode};
use crate::units::SimTime;

#[derive(Clone, Debug, PartialEq)]
pub struct RraaParams {
    /// P_MTL = alpha × critical loss ratio.
    pub alpha: f64,
    /// P_ORI(r) = P_MTL(r+1) / beta.
    pub beta: f64,
    /// Frame length the thresholds are computed for.
    pub frame_bytes: u32,
    /// A window older than this is restarted at the next frame.
    pub window_timeout: SimTime,
    /// Tries per frame (the chain's total).
    pub max_tries: u8,
}

impl super::Params for RraaParams {}

impl Default for RraaParams {
    fn default() -> Self {
        RraaParams {
            alpha: 1.25,
            beta: 2.0,
            frame_bytes: 1528,
            window_timeout: SimTime::from_ms(50),
            max_tries: 7,
        }
    }
}

/// Per-rung thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    pub mode: Mode,
    pub p_mtl: f64,
    pub p_ori: f64,
    pub ewnd: u32,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    pos: usize,
    left: u32,
    failed: u32,
    started: SimTime,
}

#[derive(Clone, Debug)]
pub struct Rraa {
    modes: &'static [Mode],
    params: RraaParams,
    /// Mode indices of the ladder, ascending.
    ladder: Vec<usize>,
    thresholds: Vec<Thresholds>,
    w: Window,
}

/// The paper's estimation window by (20 MHz-equivalent) rate.
fn ewnd_for(mode: &Mode) -> u32 {
    let mbps = match mode.class {
        ModClass::Ofdm => mode.rate.mbps() * 20.0 / f64::from(mode.bandwidth_mhz.max(1)),
        ModClass::Dsss => mode.rate.mbps(),
    };
    if mbps < 9.0 {
        6
    } else if mbps < 12.0 {
        10
    } else if mbps < 24.0 {
        20
    } else {
        40
    }
}

impl Rraa {
    pub fn new(modes: &'static [Mode], params: RraaParams) -> Self {
        assert!(!modes.is_empty(), "RRAA needs at least one mode");
        let standard = common::standard_of(modes);
        let time = |i: usize| {
            common::tx_time_us(
                common::Estimate::Standard,
                standard,
                modes[i],
                params.frame_bytes,
                1,
            )
        };
        let mut ladder: Vec<usize> = Vec::with_capacity(modes.len());
        for i in 0..modes.len() {
            if ladder.last().is_none_or(|&j| time(i) < time(j)) {
                ladder.push(i);
            }
        }
        let p_mtl: Vec<f64> = (0..ladder.len())
            .map(|k| {
                if k == 0 {
                    f64::INFINITY
                } else {
                    params.alpha * (1.0 - time(ladder[k]) / time(ladder[k - 1]))
                }
            })
            .collect();
        let thresholds = (0..ladder.len())
            .map(|k| Thresholds {
                mode: modes[ladder[k]],
                p_mtl: p_mtl[k],
                p_ori: if k + 1 < ladder.len() {
                    p_mtl[k + 1] / params.beta
                } else {
                    f64::NEG_INFINITY
                },
                ewnd: ewnd_for(&modes[ladder[k]]),
            })
            .collect::<Vec<_>>();
        let top = ladder.len() - 1;
        let w = Window {
            pos: top,
            left: thresholds[top].ewnd,
            failed: 0,
            started: SimTime::ZERO,
        };
        Rraa {
            modes,
            params,
            ladder,
            thresholds,
            w,
        }
    }

    /// The ladder with its thresholds, ascending.
    pub fn thresholds(&self) -> &[Thresholds] {
        &self.thresholds
    }

    pub fn current(&self) -> Mode {
        self.modes[self.ladder[self.w.pos]]
    }

    fn reset(&self, w: &mut Window, now: SimTime) {
        w.left = self.thresholds[w.pos].ewnd;
        w.failed = 0;
        w.started = now;
    }

    /// One attempt at the current rung: update the window and apply the
    /// RRAA-BASIC rules.
    fn attempt(&self, w: &mut Window, failed: bool, now: SimTime) {
        let t = self.thresholds[w.pos];
        w.left = w.left.saturating_sub(1);
        if failed {
            w.failed += 1;
        }
        let ewnd = f64::from(t.ewnd);
        let best = f64::from(w.failed) / ewnd;
        let worst = f64::from(w.failed + w.left) / ewnd;
        if best >= t.p_mtl && w.pos > 0 {
            w.pos -= 1;
            self.reset(w, now);
        } else if worst <= t.p_ori && w.pos + 1 < self.ladder.len() {
            w.pos += 1;
            self.reset(w, now);
        } else if w.left == 0 {
            self.reset(w, now);
        }
    }
}

impl RateControl for Rraa {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        if req.now.saturating_sub(self.w.started) >= self.params.window_timeout {
            let mut w = self.w;
            self.reset(&mut w, req.now);
            self.w = w;
        }
        // Predict the rate of each attempt if every attempt failed.
        let mut chain = RetryChain {
            stages: Vec::with_capacity(MAX_STAGES),
        };
        let mut w = self.w;
        for _ in 0..self.params.max_tries.max(1) {
            let mode = self.modes[self.ladder[w.pos]];
            let full = chain.stages.len() == MAX_STAGES;
            match chain.stages.last_mut() {
                Some(s) if s.mode == mode || full => s.tries += 1,
                _ => chain.stages.push(Stage { mode, tries: 1 }),
            }
            self.attempt(&mut w, true, req.now);
        }
        chain
    }

    fn report(&mut self, status: &TxStatus) {
        let mut w = self.w;
        let mut left = status.attempts;
        for (_, mode, n) in stages_used(&status.chain, status.attempts) {
            let Some(i) = index_of(self.modes, mode) else {
                left -= n;
                continue;
            };
            for _ in 0..n {
                left -= 1;
                let failed = !(left == 0 && status.acked);
                if self.ladder[w.pos] == i {
                    self.attempt(&mut w, failed, status.now);
                }
            }
        }
        self.w = w;
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

    fn rung(r: &Rraa, mbps: f64) -> usize {
        r.thresholds
            .iter()
            .position(|t| (t.mode.rate.mbps() - mbps).abs() < 1e-9)
            .unwrap()
    }

    #[test]
    fn starts_at_the_highest_rate() {
        for s in [Standard::G, Standard::A] {
            assert_eq!(
                Rraa::new(s.modes(), RraaParams::default())
                    .current()
                    .rate
                    .mbps(),
                54.0
            );
        }
        assert_eq!(
            Rraa::new(Standard::P.modes(), RraaParams::default())
                .current()
                .rate
                .mbps(),
            27.0
        );
    }

    #[test]
    fn thresholds_follow_the_paper_rule() {
        let r = Rraa::new(Standard::A.modes(), RraaParams::default());
        for t in r.thresholds() {
            println!(
                "{:>4} Mbps  P_MTL {:6.3}  P_ORI {:6.3}  ewnd {}",
                t.mode.rate.mbps(),
                t.p_mtl,
                t.p_ori,
                t.ewnd
            );
        }
        let t = r.thresholds();
        assert_eq!(
            t.iter().map(|t| t.ewnd).collect::<Vec<_>>(),
            [6, 10, 20, 20, 40, 40, 40, 40]
        );
        for k in 1..t.len() {
            assert!(t[k].p_mtl > 0.0 && t[k].p_mtl < 0.6, "{:?}", t[k]);
            assert!((t[k - 1].p_ori - t[k].p_mtl / 2.0).abs() < 1e-12);
        }
        // The paper's (and ns-3's) 802.11a values are of the same size:
        // P_MTL(54) = 9.4 %, P_MTL(48) = 23 %, P_MTL(36) = 33.6 %.
        assert!((0.05..0.15).contains(&t[7].p_mtl), "{}", t[7].p_mtl);
        assert!((0.12..0.30).contains(&t[6].p_mtl), "{}", t[6].p_mtl);
        assert!((0.20..0.40).contains(&t[5].p_mtl), "{}", t[5].p_mtl);
        // 802.11g: 11 Mbps CCK is off the ladder.
        let r = Rraa::new(g(), RraaParams::default());
        let ladder: Vec<f64> = r.thresholds().iter().map(|t| t.mode.rate.mbps()).collect();
        assert_eq!(
            ladder,
            [1.0, 2.0, 5.5, 6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0]
        );
    }

    /// Down as soon as failures/ewnd reaches P_MTL, not one failure earlier.
    #[test]
    fn steps_down_at_the_maximum_tolerable_loss() {
        let r = Rraa::new(g(), RraaParams::default());
        let top = rung(&r, 54.0);
        let t = r.thresholds()[top];
        let needed = (t.p_mtl * f64::from(t.ewnd)).ceil() as u32;
        let mut w = r.w;
        for k in 1..=needed {
            r.attempt(&mut w, true, SimTime::ZERO);
            if k < needed {
                assert_eq!(w.pos, top, "down after {k} < {needed} failures");
            }
        }
        assert_eq!(w.pos, top - 1);
        // The chain from a fresh window predicts exactly that.
        let mut r = Rraa::new(g(), RraaParams::default());
        let ch = Channel::new(g(), vec![1.0; 12]);
        let c = r.retry_chain(&ch.request());
        assert_eq!(c.stages[0].tries as u32, needed);
        assert_eq!(c.stages[1].mode.rate.mbps(), 48.0);
        assert_eq!(c.total_tries(), 7);
    }

    /// Up once even all-failing remaining attempts would keep the loss
    /// under P_ORI.
    #[test]
    fn steps_up_at_the_opportunistic_threshold() {
        let mut r = Rraa::new(g(), RraaParams::default());
        let k48 = rung(&r, 48.0);
        r.w.pos = k48;
        let mut w = r.w;
        r.reset(&mut w, SimTime::ZERO);
        let t = r.thresholds()[k48];
        let needed = (f64::from(t.ewnd) * (1.0 - t.p_ori)).ceil() as u32;
        for k in 1..=needed {
            r.attempt(&mut w, false, SimTime::ZERO);
            if k < needed {
                assert_eq!(w.pos, k48, "up after {k} < {needed} successes");
            }
        }
        assert_eq!(w.pos, k48 + 1);
    }

    #[test]
    fn settles_on_the_highest_rate_the_channel_carries() {
        let mut r = Rraa::new(g(), RraaParams::default());
        let mut ch = Channel::new(g(), Channel::cliff(g(), 36.0));
        let mut first = Vec::new();
        for _ in 0..2000 {
            let (c, _) = ch.send(&mut r);
            first.push(c.stages[0].mode.rate.mbps());
        }
        let at36 = first[1000..].iter().filter(|&&m| m == 36.0).count();
        assert!(at36 > 900, "{at36}");
        assert!(first[1000..].iter().all(|&m| m == 36.0 || m == 48.0));
        assert_eq!(mbps(&r.retry_chain(&ch.request()))[0].0, 36.0);
    }
}
