//! TCP sequence numbers: 32-bit values compared modulo 2^32 (RFC 793 §3.3,
//! RFC 1982 serial-number arithmetic). Two numbers compare correctly as long
//! as they are less than 2^31 apart, which every window in this crate is.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Sub};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SeqNum(pub u32);

impl SeqNum {
    /// The larger of two sequence numbers (modulo 2^32).
    pub fn max(self, other: SeqNum) -> SeqNum {
        if self > other {
            self
        } else {
            other
        }
    }
    /// The smaller of two sequence numbers (modulo 2^32).
    pub fn min(self, other: SeqNum) -> SeqNum {
        if self < other {
            self
        } else {
            other
        }
    }
}

impl PartialOrd for SeqNum {
    fn partial_cmp(&self, other: &SeqNum) -> Option<Ordering> {
        Some((self.0.wrapping_sub(other.0) as i32).cmp(&0))
    }
}

impl Add<u32> for SeqNum {
    type Output = SeqNum;
    fn add(self, n: u32) -> SeqNum {
        SeqNum(self.0.wrapping_add(n))
    }
}

impl Sub<u32> for SeqNum {
    type Output = SeqNum;
    fn sub(self, n: u32) -> SeqNum {
        SeqNum(self.0.wrapping_sub(n))
    }
}

/// Distance `self - other`, for `self >= other`; zero otherwise.
impl Sub<SeqNum> for SeqNum {
    type Output = u32;
    fn sub(self, other: SeqNum) -> u32 {
        if self >= other {
            self.0.wrapping_sub(other.0)
        } else {
            0
        }
    }
}

impl fmt::Display for SeqNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_seq_wrap_compare() {
        let a = SeqNum(u32::MAX - 10);
        let b = a + 20;
        assert_eq!(b.0, 9);
        assert!(a < b);
        assert!(b > a);
        assert_eq!(b - a, 20);
        assert_eq!(a - b, 0);
        assert_eq!(b - 20, a);
        assert_eq!(a.max(b), b);
        assert_eq!(a.min(b), a);
    }
}
