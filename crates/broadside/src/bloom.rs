//! Bloom filters (§4.1): the file filter, the version filter and the match filter.
//!
//! Items are 160-bit ids that are already outputs of `H`, so the `k` bit
//! positions come from double hashing (Kirsch–Mitzenmacher,
//! `g_i = h1 + i·h2 mod m`) of two 64-bit words mixed with a per-round salt.
//! A fresh salt each round makes false positives independent across rounds,
//! which is what lets a file missed once be found in a later sync (§4.1).

use crate::id::Id160;

/// A Bloom filter of `m = 8 · bytes` bits with `k` hash functions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bloom {
    bits: Vec<u8>,
    k: u8,
    salt: u32,
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn word(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
}

impl Bloom {
    /// An empty filter of `bytes` bytes (must be > 0) with `k` hash functions (must be > 0).
    pub fn new(bytes: usize, k: u8, salt: u32) -> Self {
        assert!(
            bytes > 0 && k > 0,
            "Bloom filter needs bits and hash functions"
        );
        Bloom {
            bits: vec![0; bytes],
            k,
            salt,
        }
    }

    /// A filter over received bits; `None` if empty or `k == 0`.
    pub fn from_bytes(bits: &[u8], k: u8, salt: u32) -> Option<Self> {
        (!bits.is_empty() && k > 0).then(|| Bloom {
            bits: bits.to_vec(),
            k,
            salt,
        })
    }

    fn positions(&self, item: &Id160) -> impl Iterator<Item = usize> {
        let m = (self.bits.len() * 8) as u64;
        let s = u64::from(self.salt).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let c = word(&item.0[16..20]);
        let h1 = splitmix(word(&item.0[0..8]) ^ s ^ splitmix(c));
        let h2 = splitmix(word(&item.0[8..16]) ^ s.rotate_left(29) ^ c) | 1;
        (0..u64::from(self.k)).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m) as usize)
    }

    /// Adds an item.
    pub fn insert(&mut self, item: &Id160) {
        let pos: Vec<usize> = self.positions(item).collect();
        for p in pos {
            self.bits[p / 8] |= 1 << (p % 8);
        }
    }

    /// Whether the item may be in the set (no false negatives).
    pub fn contains(&self, item: &Id160) -> bool {
        self.positions(item)
            .all(|p| self.bits[p / 8] & (1 << (p % 8)) != 0)
    }

    /// The bit array.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bits
    }
    /// Number of bits `m`.
    pub fn bit_len(&self) -> usize {
        self.bits.len() * 8
    }
    /// Number of hash functions `k`.
    pub fn hash_count(&self) -> u8 {
        self.k
    }
    /// The salt mixed into every position.
    pub fn salt(&self) -> u32 {
        self.salt
    }
}

/// The classical false-positive rate `(1 - e^{-kn/m})^k` of a filter with
/// `m` bits and `k` hash functions holding `n` items.
pub fn false_positive_rate(n: usize, m: usize, k: u8) -> f64 {
    let k = f64::from(k);
    (1.0 - (-k * n as f64 / m as f64).exp()).powf(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_parameters_give_paper_rate() {
        // §4.1: g = 500, 9144 bits, 12 hash functions -> ~0.0154 %.
        let p = false_positive_rate(500, 9144, 12);
        assert!((p - 0.000154).abs() < 0.000005, "{p}");
    }

    #[test]
    fn no_false_negatives_and_salt_matters() {
        let ids: Vec<Id160> = (0..500u32)
            .map(|i| Id160::hash(&[&i.to_be_bytes()]))
            .collect();
        let mut a = Bloom::new(1143, 12, 1);
        let mut b = Bloom::new(1143, 12, 2);
        for id in &ids {
            a.insert(id);
            b.insert(id);
        }
        assert!(ids.iter().all(|id| a.contains(id) && b.contains(id)));
        assert_ne!(a.as_bytes(), b.as_bytes());
        assert_eq!(Bloom::from_bytes(a.as_bytes(), 12, 1).as_ref(), Some(&a));
        assert!(Bloom::from_bytes(&[], 12, 1).is_none());
    }
}
