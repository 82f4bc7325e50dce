//! Send and receive vectors (§4.2): a fixed-length bit set that keeps its
//! population count, and its wire encoding (`u32` bit count, then the bytes).

use crate::wire::WireError;

/// A fixed-length vector of bits, bit `i` at byte `i / 8`, mask `1 << (i % 8)`.
#[derive(Clone, PartialEq, Eq)]
pub struct BitVec {
    len: u32,
    bytes: Vec<u8>,
    ones: u32,
}

impl std::fmt::Debug for BitVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BitVec({}/{})", self.ones, self.len)
    }
}

fn byte_len(bits: u32) -> usize {
    (bits as usize).div_ceil(8)
}

impl BitVec {
    /// All-zero vector of `len` bits.
    pub fn new(len: u32) -> Self {
        BitVec {
            len,
            bytes: vec![0; byte_len(len)],
            ones: 0,
        }
    }
    /// Number of bits.
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the vector has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Number of set bits.
    pub fn count_ones(&self) -> u32 {
        self.ones
    }
    /// Whether every bit is set.
    pub fn is_full(&self) -> bool {
        self.ones == self.len
    }
    /// Bit `i`; out-of-range bits read as unset.
    pub fn get(&self, i: u32) -> bool {
        i < self.len && self.bytes[(i / 8) as usize] & (1 << (i % 8)) != 0
    }
    /// Sets bit `i`; returns whether it was newly set. Out-of-range is ignored.
    pub fn set(&mut self, i: u32) -> bool {
        if i >= self.len || self.get(i) {
            return false;
        }
        self.bytes[(i / 8) as usize] |= 1 << (i % 8);
        self.ones += 1;
        true
    }
    /// ORs `other` into `self` (bits past `self.len()` are ignored).
    pub fn union_with(&mut self, other: &BitVec) {
        for i in other.iter_ones() {
            self.set(i);
        }
    }
    /// Indices of set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .flat_map(move |(bi, b)| {
                (0..8u32)
                    .filter(move |j| b & (1 << j) != 0)
                    .map(move |j| bi as u32 * 8 + j)
            })
    }
    /// The first unset bit at or after `from`, wrapping around once.
    pub fn next_zero(&self, from: u32) -> Option<u32> {
        if self.is_full() {
            return None;
        }
        let start = if from >= self.len { 0 } else { from };
        (start..self.len).chain(0..start).find(|&i| !self.get(i))
    }
    /// Copy of bits `[start, start + len)`.
    pub fn slice(&self, start: u32, len: u32) -> BitVec {
        let mut v = BitVec::new(len);
        for i in 0..len {
            if self.get(start + i) {
                v.set(i);
            }
        }
        v
    }
    /// Sets the bits of `part` at offset `start`.
    pub fn set_from(&mut self, start: u32, part: &BitVec) {
        for i in part.iter_ones() {
            self.set(start + i);
        }
    }
    /// The raw bytes (unused high bits of the last byte are zero).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        4 + self.bytes.len()
    }
    /// Appends `len: u32 BE` and the bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.bytes);
    }
    /// Decodes a vector that must fill `bytes` exactly and hold at most
    /// `max_bits` bits. A vector that *claims* more bits than that (say a
    /// billion blocks) is refused before anything is allocated.
    pub fn decode(bytes: &[u8], max_bits: u32) -> Result<BitVec, WireError> {
        let head: [u8; 4] = bytes
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(WireError::Truncated)?;
        let len = u32::from_be_bytes(head);
        if len > max_bits {
            return Err(WireError::BitVecTooLong {
                claimed: len,
                max: max_bits,
            });
        }
        let body = &bytes[4..];
        if body.len() != byte_len(len) {
            return Err(WireError::BitVecLength {
                claimed: len,
                bytes: body.len(),
            });
        }
        if !len.is_multiple_of(8) {
            if let Some(last) = body.last() {
                if last >> (len % 8) != 0 {
                    return Err(WireError::BitVecPadding);
                }
            }
        }
        let ones = body.iter().map(|b| b.count_ones()).sum();
        Ok(BitVec {
            len,
            bytes: body.to_vec(),
            ones,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_count_next_zero() {
        let mut v = BitVec::new(10);
        assert!(v.set(3));
        assert!(!v.set(3));
        assert!(!v.set(10));
        assert_eq!(v.count_ones(), 1);
        assert_eq!(v.next_zero(3), Some(4));
        for i in 0..10 {
            v.set(i);
        }
        assert!(v.is_full());
        assert_eq!(v.next_zero(0), None);
    }

    #[test]
    fn billion_block_claim_is_refused_without_allocation() {
        let mut b = 1_000_000_000u32.to_be_bytes().to_vec();
        b.extend_from_slice(&[0xff; 16]);
        assert_eq!(
            BitVec::decode(&b, 65_536),
            Err(WireError::BitVecTooLong {
                claimed: 1_000_000_000,
                max: 65_536
            })
        );
        assert!(matches!(
            BitVec::decode(&b, u32::MAX),
            Err(WireError::BitVecLength { .. })
        ));
    }

    #[test]
    fn padding_bits_must_be_zero() {
        let b = [0, 0, 0, 3, 0b1000];
        assert_eq!(BitVec::decode(&b, 100), Err(WireError::BitVecPadding));
    }
}
