//! PinSketch (Dodis et al.; the BCH-syndrome set reconciliation used by
//! minisketch) over GF(2^64): the real set-reconciliation baseline of the
//! Figure 12 experiment. A sketch of capacity `t` is the odd power sums
//! `s_j = Σ x^j, j = 1, 3, …, 2t−1`; XOR of two sketches is the sketch of the
//! symmetric difference, decoded by Berlekamp–Massey and root finding.
//! Root finding here evaluates the locator over a caller-given candidate
//! set (Chien-style search), which is fine for an experiment whose universe
//! of files is known.

/// Multiplication in GF(2^64) modulo x^64 + x^4 + x^3 + x + 1.
pub fn mul(a: u64, b: u64) -> u64 {
    let mut r: u128 = 0;
    let mut b = b;
    let mut a = a as u128;
    while b != 0 {
        if b & 1 == 1 {
            r ^= a;
        }
        a <<= 1;
        b >>= 1;
    }
    let (hi, lo) = ((r >> 64) as u64, r as u64);
    let fold = |h: u64| h ^ (h << 1) ^ (h << 3) ^ (h << 4);
    let over = (hi >> 63) ^ (hi >> 61) ^ (hi >> 60);
    lo ^ fold(hi) ^ fold(over)
}

fn pow(mut a: u64, mut e: u128) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, a);
        }
        a = mul(a, a);
        e >>= 1;
    }
    r
}

fn inv(a: u64) -> u64 {
    pow(a, u128::from(u64::MAX) - 1)
}

/// A sketch of capacity `t`: `t` 64-bit syndromes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sketch(pub Vec<u64>);

impl Sketch {
    /// Sketch of `elements` (non-zero) with capacity `t`.
    pub fn new(t: usize, elements: impl Iterator<Item = u64>) -> Sketch {
        let mut s = vec![0u64; t];
        for x in elements {
            let x2 = mul(x, x);
            let mut p = x;
            for sj in s.iter_mut() {
                *sj ^= p;
                p = mul(p, x2);
            }
        }
        Sketch(s)
    }
    /// The sketch of the symmetric difference.
    pub fn merge(&self, other: &Sketch) -> Sketch {
        Sketch(self.0.iter().zip(&other.0).map(|(a, b)| a ^ b).collect())
    }
    /// The elements of the symmetric difference among `candidates`, or
    /// `None` if the difference exceeds the capacity.
    pub fn decode(&self, candidates: &[u64]) -> Option<Vec<u64>> {
        let t = self.0.len();
        // Full syndrome sequence s_1..s_2t: s_2j = s_j^2.
        let mut s = vec![0u64; 2 * t + 1];
        for j in 0..t {
            s[2 * j + 1] = self.0[j];
        }
        for j in 1..=t {
            s[2 * j] = mul(s[j], s[j]);
        }
        // Berlekamp–Massey.
        let (mut c, mut b) = (vec![1u64], vec![1u64]);
        let (mut l, mut m, mut bd) = (0usize, 1usize, 1u64);
        for n in 0..2 * t {
            let mut d = s[n + 1];
            for i in 1..=l.min(c.len() - 1) {
                d ^= mul(c[i], s[n + 1 - i]);
            }
            if d == 0 {
                m += 1;
                continue;
            }
            let coef = mul(d, inv(bd));
            let old = c.clone();
            if c.len() < b.len() + m {
                c.resize(b.len() + m, 0);
            }
            for (i, bi) in b.iter().enumerate() {
                c[i + m] ^= mul(coef, *bi);
            }
            if 2 * l <= n {
                l = n + 1 - l;
                b = old;
                bd = d;
                m = 1;
            } else {
                m += 1;
            }
        }
        c.truncate(l + 1);
        if l > t {
            return None;
        }
        // Roots of the reversed locator are the elements themselves.
        let found: Vec<u64> = candidates
            .iter()
            .copied()
            .filter(|&x| c.iter().fold(0u64, |acc, &ci| mul(acc, x) ^ ci) == 0)
            .collect();
        (found.len() == l).then_some(found)
    }
}
