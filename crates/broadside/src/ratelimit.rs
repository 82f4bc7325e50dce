//! Token buckets: per-peer limits on beacons and requests, and data pacing.

use crate::time::Instant;

/// A token bucket refilled at `rate` tokens per second up to `burst`.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate: f64, burst: f64, now: Instant) -> Self {
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if now > self.last {
            self.last = now;
        }
    }

    /// Takes `n` tokens if available.
    pub fn try_take(&mut self, now: Instant, n: f64) -> bool {
        self.refill(now);
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }

    /// Changes the refill rate and the burst from `now` on (tokens gathered
    /// so far at the old rate are kept, up to the new burst).
    pub fn set_rate(&mut self, now: Instant, rate: f64, burst: f64) {
        self.refill(now);
        self.rate = rate;
        self.burst = burst;
        self.tokens = self.tokens.min(burst);
    }

    /// Takes `n` tokens even if that leaves the bucket in debt (a datagram
    /// already sent); the debt delays the next [`Self::ready_at`].
    pub fn take(&mut self, now: Instant, n: f64) {
        self.refill(now);
        self.tokens -= n;
    }

    /// When `n` tokens will be available (now if they are).
    pub fn ready_at(&self, n: f64) -> Instant {
        if self.tokens >= n || self.rate <= 0.0 {
            return self.last;
        }
        let wait = (n - self.tokens) / self.rate;
        self.last + core::time::Duration::from_secs_f64(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_then_refills() {
        let t0 = Instant::ZERO;
        let mut b = TokenBucket::new(10.0, 3.0, t0);
        assert!((0..3).all(|_| b.try_take(t0, 1.0)));
        assert!(!b.try_take(t0, 1.0));
        assert_eq!(b.ready_at(1.0), Instant::from_micros(100_000));
        assert!(b.try_take(Instant::from_micros(100_000), 1.0));
        assert!(!b.try_take(Instant::from_micros(100_000), 1.0));
    }

    #[test]
    fn debt_and_rate_changes() {
        let t0 = Instant::ZERO;
        let mut b = TokenBucket::new(10.0, 2.0, t0);
        b.take(t0, 4.0);
        assert_eq!(b.ready_at(1.0), Instant::from_micros(300_000));
        b.set_rate(t0, 20.0, 2.0);
        assert_eq!(b.ready_at(1.0), Instant::from_micros(150_000));
    }
}
