//! Congestion-window growth and the slow-start threshold at congestion
//! events, dispatched over [`Congestion`]: Reno (RFC 5681, as Linux 2.6.16's
//! `tcp_reno_cong_avoid` without ABC) and CUBIC (RFC 9438, as Linux's
//! `tcp_cubic.c`). Windows are in segments. Loss recovery (NewReno, rate
//! halving, PRR) lives in the connection, which calls [`Cc::on_ack`] only
//! outside fast recovery.

use super::profile::Congestion;
use crate::units::SimTime;

/// Upper bound on cwnd, segments (Linux's `snd_cwnd_clamp` is similar).
pub(crate) const CWND_CLAMP: u32 = 1 << 20;

/// CUBIC's constant C (RFC 9438 §5).
const CUBIC_C: f64 = 0.4;
/// CUBIC's multiplicative decrease factor (RFC 9438 §4.6).
const CUBIC_BETA: f64 = 0.7;

#[derive(Clone, Debug)]
pub(crate) enum Cc {
    Reno {
        /// ACKs counted towards the next +1 in congestion avoidance.
        cnt: u32,
    },
    Cubic(Cubic),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Cubic {
    /// Window before the last reduction (after fast convergence), segments.
    w_max: f64,
    /// Time from epoch start to reach `origin`, seconds.
    k: f64,
    /// Plateau of the cubic function, segments.
    origin: f64,
    epoch: Option<SimTime>,
    /// Reno-friendly estimate (RFC 9438 §4.3), segments.
    w_est: f64,
    /// Fractional segments of growth not yet added to cwnd.
    acc: f64,
}

impl Cc {
    pub fn new(kind: Congestion) -> Cc {
        match kind {
            Congestion::Reno => Cc::Reno { cnt: 0 },
            Congestion::Cubic => Cc::Cubic(Cubic::default()),
        }
    }

    /// Grows `cwnd` for an ACK of `acked` new segments outside fast recovery
    /// (the caller checks that the sender was cwnd-limited).
    pub fn on_ack(
        &mut self,
        cwnd: &mut u32,
        ssthresh: u32,
        acked: u32,
        now: SimTime,
        min_rtt: Option<SimTime>,
    ) {
        if acked == 0 {
            return;
        }
        match self {
            Cc::Reno { cnt } => {
                if *cwnd < ssthresh {
                    *cwnd += 1;
                } else {
                    *cnt += 1;
                    if *cnt >= *cwnd {
                        *cwnd += 1;
                        *cnt = 0;
                    }
                }
            }
            Cc::Cubic(c) => {
                let mut left = acked;
                if *cwnd < ssthresh {
                    let inc = left.min(ssthresh - *cwnd);
                    *cwnd += inc;
                    left -= inc;
                }
                if left > 0 {
                    c.avoid(cwnd, left, now, min_rtt.unwrap_or(SimTime::ZERO));
                }
            }
        }
        *cwnd = (*cwnd).min(CWND_CLAMP);
    }

    /// The new ssthresh at a congestion event (fast retransmit, or the first
    /// RTO of an episode), given cwnd and the flight size in segments.
    pub fn ssthresh(&mut self, cwnd: u32, flight: u32) -> u32 {
        match self {
            Cc::Reno { cnt } => {
                *cnt = 0;
                (flight / 2).max(2)
            }
            Cc::Cubic(c) => {
                let w = cwnd as f64;
                c.epoch = None;
                c.w_max = if w < c.w_max {
                    w * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    w
                };
                ((w * CUBIC_BETA) as u32).max(2)
            }
        }
    }

    /// On a retransmission timeout Linux's CUBIC forgets its history
    /// (`bictcp_state` → `bictcp_reset` on entering Loss).
    pub fn on_rto(&mut self) {
        if let Cc::Cubic(c) = self {
            *c = Cubic::default();
        }
    }
}

impl Cubic {
    /// Congestion avoidance (RFC 9438 §4.2–4.4).
    fn avoid(&mut self, cwnd: &mut u32, acked: u32, now: SimTime, min_rtt: SimTime) {
        let w = *cwnd as f64;
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                self.epoch = Some(now);
                self.acc = 0.0;
                self.w_est = w;
                if w < self.w_max {
                    self.k = ((self.w_max - w) / CUBIC_C).cbrt();
                    self.origin = self.w_max;
                } else {
                    self.k = 0.0;
                    self.origin = w;
                }
                now
            }
        };
        let t = (now.saturating_sub(epoch) + min_rtt).as_secs_f64();
        let target = (self.origin + CUBIC_C * (t - self.k).powi(3)).clamp(w, 1.5 * w);
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        self.w_est += alpha * acked as f64 / w;
        if self.w_est > target && self.w_est >= w + 1.0 {
            // Reno-friendly region.
            *cwnd = self.w_est as u32;
            self.acc = 0.0;
            return;
        }
        self.acc += if target > w {
            acked as f64 * (target - w) / w
        } else {
            // Linux grows by 1 per 100·cwnd ACKs at the plateau.
            acked as f64 / (100.0 * w)
        };
        while self.acc >= 1.0 {
            *cwnd += 1;
            self.acc -= 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_reno_slow_start_and_avoidance() {
        let mut cc = Cc::new(Congestion::Reno);
        let mut cwnd = 2;
        let t = SimTime::ZERO;
        for _ in 0..8 {
            cc.on_ack(&mut cwnd, 10, 2, t, None);
        }
        // +1 per ACK up to ssthresh, then +1 per cwnd ACKs.
        assert_eq!(cwnd, 10);
        for _ in 0..10 {
            cc.on_ack(&mut cwnd, 10, 1, t, None);
        }
        assert_eq!(cwnd, 11);
        assert_eq!(cc.ssthresh(11, 11), 5);
        assert_eq!(cc.ssthresh(11, 1), 2);
    }

    #[test]
    fn test_cubic_growth_curve() {
        // After a reduction from 100 segments, cwnd is concave up to W_max
        // near t = K, flat around it, then convex beyond it.
        let mut cc = Cc::new(Congestion::Cubic);
        let ssthresh = cc.ssthresh(100, 100);
        assert_eq!(ssthresh, 70);
        let mut cwnd = ssthresh;
        let rtt = SimTime::from_ms(100);
        let k = ((100.0 - 70.0) / CUBIC_C).cbrt();
        assert!((k - 4.217).abs() < 0.01);
        let mut at = Vec::new();
        let mut now = SimTime::ZERO;
        for step in 0..120 {
            // One RTT: one ACK per segment in the window.
            let w = cwnd;
            for _ in 0..w {
                cc.on_ack(&mut cwnd, ssthresh, 1, now, Some(rtt));
            }
            now += rtt;
            at.push((step, cwnd));
        }
        let cwnd_at = |s: usize| at[s].1 as f64;
        // Concave: fast growth first, slow near W_max.
        assert!(cwnd_at(10) - cwnd_at(0) > cwnd_at(40) - cwnd_at(30));
        assert!((cwnd_at(42) - 100.0).abs() <= 3.0, "{}", cwnd_at(42));
        // Convex beyond: growth accelerates again.
        assert!(cwnd_at(80) - cwnd_at(70) > cwnd_at(50) - cwnd_at(40));
        assert!(cwnd_at(119) > 130.0);
    }

    #[test]
    fn test_cubic_fast_convergence() {
        let mut cc = Cc::new(Congestion::Cubic);
        cc.ssthresh(100, 100);
        // A second loss below W_max lowers W_max further.
        cc.ssthresh(80, 80);
        match &cc {
            Cc::Cubic(c) => assert!((c.w_max - 68.0).abs() < 1e-9),
            Cc::Reno { .. } => unreachable!(),
        }
    }
}
