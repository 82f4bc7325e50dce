//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! `SRTT`/`RTTVAR` use alpha = 1/8 and beta = 1/4 and
//! `RTO = SRTT + max(G, 4·RTTVAR)`, clamped to `[min_rto, max_rto]`.
//! `G` is [`TcpConfig::rto_var_floor`]: Linux puts its `tcp_rto_min` (200 ms)
//! there rather than only clamping the sum (`tcp_set_rto`: the variance term
//! is `max(mdev, rto_min)`), so a Linux RTO is never below SRTT + 200 ms.
//! Karn's rule (no sample from retransmitted segments) is the caller's job.

use super::profile::TcpConfig;
use crate::units::SimTime;

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    srtt: Option<SimTime>,
    rttvar: SimTime,
    rto: SimTime,
    min_rtt: Option<SimTime>,
    min_rto: SimTime,
    max_rto: SimTime,
    var_floor: SimTime,
    backoff_limit: u32,
}

impl RttEstimator {
    pub fn new(cfg: &TcpConfig) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: SimTime::ZERO,
            rto: cfg.initial_rto,
            min_rtt: None,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            var_floor: cfg.rto_var_floor,
            backoff_limit: cfg.backoff_limit,
        }
    }

    /// Feeds one valid RTT measurement `r` (RFC 6298 §2.2–2.3).
    pub fn sample(&mut self, r: SimTime) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = SimTime(r.0 / 2);
            }
            Some(srtt) => {
                let err = srtt.0.abs_diff(r.0);
                self.rttvar = SimTime((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(SimTime((7 * srtt.0 + r.0) / 8));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let srtt = self.srtt.unwrap_or(r);
        let rto = srtt + self.var_floor.max(self.rttvar * 4);
        self.rto = rto.clamp(self.min_rto, self.max_rto);
    }

    /// Forgets nothing but sets the base RTO, e.g. to the 3 s fallback of
    /// RFC 6298 §5.7 after a retransmitted SYN.
    pub fn set_rto(&mut self, rto: SimTime) {
        self.rto = rto.clamp(self.min_rto, self.max_rto);
    }

    pub fn srtt(&self) -> Option<SimTime> {
        self.srtt
    }
    pub fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }
    /// The RTO after `backoff` doublings (at most `backoff_limit`), capped
    /// at the maximum.
    pub fn backed_off(&self, backoff: u32) -> SimTime {
        let factor = 1u64 << backoff.min(self.backoff_limit).min(32);
        SimTime(self.rto.0.saturating_mul(factor)).min(self.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::TcpProfile;

    #[test]
    fn test_rto_first_and_later_samples() {
        let mut cfg = TcpProfile::LinuxModern.config();
        cfg.rto_var_floor = SimTime::ZERO;
        cfg.min_rto = SimTime::ZERO;
        let mut e = RttEstimator::new(&cfg);
        assert_eq!(e.backed_off(0), SimTime::from_ms(1000));
        e.sample(SimTime::from_ms(100));
        // SRTT 100, RTTVAR 50, RTO 100 + 200.
        assert_eq!(e.backed_off(0), SimTime::from_ms(300));
        e.sample(SimTime::from_ms(100));
        // RTTVAR 37.5, SRTT 100 → RTO 250.
        assert_eq!(e.backed_off(0), SimTime::from_us(250_000));
        assert_eq!(e.srtt(), Some(SimTime::from_ms(100)));
    }

    #[test]
    fn test_linux_rto_floor_on_variance() {
        let cfg = TcpProfile::Linux26.config();
        let mut e = RttEstimator::new(&cfg);
        for _ in 0..50 {
            e.sample(SimTime::from_ms(20));
        }
        // Linux: SRTT + max(4·RTTVAR, 200 ms) = 220 ms, not 200.
        assert_eq!(e.backed_off(0), SimTime::from_ms(220));
        assert_eq!(e.backed_off(3), SimTime::from_ms(1760));
        assert_eq!(e.backed_off(40), cfg.max_rto);
    }

    #[test]
    fn test_backoff_limit_caps_doublings() {
        let mut cfg = TcpProfile::Linux26.config();
        cfg.backoff_limit = 1;
        let mut e = RttEstimator::new(&cfg);
        for _ in 0..50 {
            e.sample(SimTime::from_ms(20));
        }
        assert_eq!(e.backed_off(1), SimTime::from_ms(440));
        assert_eq!(e.backed_off(5), SimTime::from_ms(440));
        cfg.backoff_limit = 0;
        let e = RttEstimator::new(&cfg);
        assert_eq!(e.backed_off(7), cfg.initial_rto);
    }
}
