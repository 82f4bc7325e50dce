//! Time as the caller tells it: an opaque monotonic [`Instant`] in microseconds.
//!
//! The protocol never reads a clock; every entry point takes `now`. The epoch
//! is whatever the caller chooses (process start, simulation start).

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time, in microseconds since a caller-chosen epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros)
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(micros(d)))
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(micros(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_micros(5);
        assert_eq!((t + Duration::from_micros(7)).as_micros(), 12);
        assert_eq!((t - Duration::from_secs(1)).as_micros(), 0);
        assert_eq!(t.saturating_since(Instant::from_micros(9)), Duration::ZERO);
        assert_eq!(
            Instant::from_micros(u64::MAX) + Duration::from_secs(1),
            Instant::from_micros(u64::MAX)
        );
    }
}
