//! How late each event ran against the wall clock: every lateness kept
//! (nanoseconds, saturating at about 4 s), its distribution at the end,
//! and a warning on standard error, at most once a second, while the
//! simulation runs behind by more than the tolerance.

use std::time::{Duration, Instant};
use wayside_sim::units::SimTime;

/// The lateness of a run's events.
pub struct Lateness {
    tolerance: SimTime,
    samples: Vec<u32>,
    late: u64,
    worst: SimTime,
    worst_at: SimTime,
    warned: Option<Instant>,
}

/// The distribution at the end of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatenessSummary {
    pub events: u64,
    pub p50: SimTime,
    pub p99: SimTime,
    pub max: SimTime,
    /// The simulated time of the latest event.
    pub max_at: SimTime,
    /// Events that ran later than the tolerance.
    pub late: u64,
    pub tolerance: SimTime,
}

impl LatenessSummary {
    /// Whether the run fell behind: some event ran later than the tolerance.
    pub fn behind(&self) -> bool {
        self.late > 0
    }
}

impl Lateness {
    pub fn new(tolerance: SimTime) -> Lateness {
        Lateness {
            tolerance,
            samples: Vec::new(),
            late: 0,
            worst: SimTime::ZERO,
            worst_at: SimTime::ZERO,
            warned: None,
        }
    }

    /// Event `at` ran `late` after its wall-clock time.
    pub fn record(&mut self, at: SimTime, late: SimTime) {
        self.samples
            .push(late.as_ns().min(u64::from(u32::MAX)) as u32);
        if late > self.worst {
            (self.worst, self.worst_at) = (late, at);
        }
        if late > self.tolerance {
            self.late += 1;
            let quiet = self
                .warned
                .is_some_and(|w| w.elapsed() < Duration::from_secs(1));
            if !quiet {
                self.warned = Some(Instant::now());
                eprintln!(
                    "warning: emulation behind the wall clock: the event at {:.3} s ran \
                     {:.3} ms late (tolerance {:.3} ms)",
                    at.as_secs_f64(),
                    late.as_secs_f64() * 1e3,
                    self.tolerance.as_secs_f64() * 1e3
                );
            }
        }
    }

    pub fn summary(&mut self) -> LatenessSummary {
        let n = self.samples.len();
        let mut pick = |q: f64| -> SimTime {
            if n == 0 {
                return SimTime::ZERO;
            }
            let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            SimTime::from_ns(u64::from(*self.samples.select_nth_unstable(k).1))
        };
        let (p50, p99) = (pick(0.50), pick(0.99));
        LatenessSummary {
            events: n as u64,
            p50,
            p99,
            max: self.worst,
            max_at: self.worst_at,
            late: self.late,
            tolerance: self.tolerance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_percentiles_and_lateness_beyond_the_tolerance() {
        let mut l = Lateness::new(SimTime::from_us(500));
        for i in 1..=100u64 {
            l.record(SimTime::from_ms(i), SimTime::from_us(i * 10));
        }
        let s = l.summary();
        assert_eq!(s.events, 100);
        assert_eq!(s.p50, SimTime::from_us(500));
        assert_eq!(s.p99, SimTime::from_us(990));
        assert_eq!(
            (s.max, s.max_at),
            (SimTime::from_us(1000), SimTime::from_ms(100))
        );
        assert_eq!(s.late, 50);
        assert!(s.behind());
    }

    #[test]
    fn test_an_empty_or_punctual_run_is_not_behind() {
        let mut l = Lateness::new(SimTime::from_ms(1));
        assert!(!l.summary().behind());
        l.record(SimTime::ZERO, SimTime::from_ms(1));
        assert!(!l.summary().behind());
    }
}
