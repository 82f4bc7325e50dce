//! Per-component random streams.
//!
//! Every component (a node's MAC backoff, a link's fading, a traffic source…)
//! draws from its own stream, so adding a vehicle never changes the draws of
//! the others. A stream's seed is specified, not left to `DefaultHasher`:
//!
//! `seed = SHA-256("wayside-rng-v1" ‖ domain ‖ 0x00 ‖ master_seed (u64 LE) ‖ run (u64 LE) ‖ name)`
//!
//! and the 32-byte digest seeds a xoshiro256++ generator. The environment
//! (shadowing map) uses the domain `"env"` with the environment seed, so the
//! same road looks the same on every pass; everything else uses `"run"`.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use sha2::{Digest, Sha256};

/// A deterministic random stream for one named component.
#[derive(Clone, Debug)]
pub struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// The stream for component `name` in `domain` ("run" or "env").
    pub fn new(domain: &str, master_seed: u64, run: u64, name: &str) -> Stream {
        let mut h = Sha256::new();
        h.update(b"wayside-rng-v1");
        h.update(domain.as_bytes());
        h.update([0u8]);
        h.update(master_seed.to_le_bytes());
        h.update(run.to_le_bytes());
        h.update(name.as_bytes());
        let seed: [u8; 32] = h.finalize().into();
        Stream(Xoshiro256PlusPlus::from_seed(seed))
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }

    /// Uniform integer in [0, n]; `n` inclusive.
    pub fn integer_inclusive(&mut self, n: u32) -> u32 {
        self.0.random_range(0..=n)
    }

    /// Standard normal draw.
    pub fn normal(&mut self) -> f64 {
        StandardNormal.sample(&mut self.0)
    }

    /// Exponential draw with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_inputs_same_stream_and_names_separate_streams() {
        let a: Vec<f64> = (0..4)
            .map({
                let mut s = Stream::new("run", 1, 0, "mac/car");
                move |_| s.uniform()
            })
            .collect();
        let b: Vec<f64> = (0..4)
            .map({
                let mut s = Stream::new("run", 1, 0, "mac/car");
                move |_| s.uniform()
            })
            .collect();
        let c: Vec<f64> = (0..4)
            .map({
                let mut s = Stream::new("run", 1, 0, "mac/ap");
                move |_| s.uniform()
            })
            .collect();
        let d: Vec<f64> = (0..4)
            .map({
                let mut s = Stream::new("run", 1, 1, "mac/car");
                move |_| s.uniform()
            })
            .collect();
        let e: Vec<f64> = (0..4)
            .map({
                let mut s = Stream::new("env", 1, 0, "mac/car");
                move |_| s.uniform()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_ne!(a, e);
    }

    #[test]
    fn seed_derivation_is_fixed_by_specification() {
        // Pinned value: changing the derivation silently would change every
        // published result, so it must be a deliberate, visible change.
        let mut s = Stream::new("run", 42, 0, "x");
        assert_eq!(s.uniform(), 0.5891225943615944);
    }
}
