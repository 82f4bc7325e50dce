//! Address validation before data, as QUIC does it (RFC 9000 §8): a
//! stateless token proves that a peer receives at the address it sends from
//! before the endpoint keeps any state for it or sends it more than a small
//! reply.
//!
//! A token is `HMAC-SHA256(key, address ‖ time bucket ‖ bound)` truncated
//! to [`TOKEN_LEN`] bytes, where `bound` is the peer's token it answers
//! (all zero for a challenge). The endpoint sends it in a *Token* packet
//! and keeps nothing; the peer echoes it; the echo verifies against the
//! sender's address, the current or previous time bucket and the bound. A
//! spoofed source never sees the token, so it never becomes a peer; and
//! every reply to an address not yet validated is at most as large as the
//! packet that caused it (so well under the 3× anti-amplification bound).
//!
//! The exchange also sets up each pair's session secrets, in the same three
//! packets and with no field added (`c` a challenge, `a` an answer bound
//! to the challenge it answers):
//!
//! | packet | from | echo | token | the receiver then |
//! |---|---|---|---|---|
//! | 1 | B | – | c_B | answers |
//! | 2 | A | c_B | a_A = T(c_B) | admits A: A's Wants carry c_B, B's carry a_A |
//! | 3 | B | a_A | c_B | admits B likewise; replies nothing |
//!
//! The echo's bound tells its kind: an echo of a challenge (bound zero)
//! asks for a reply, an echo of an answer (bound to the token field, which
//! the echoing side echoed itself) completes the exchange. A node accepts
//! the last few secrets its peer proved to know (echoed), since both sides
//! may challenge at once or run the exchange again after a restart.
//!
//! [`PeerAddr`] is what the endpoint needs of an address: bytes to MAC and
//! the network prefix (IPv4 /24, IPv6 /64) that per-prefix peer limits count.

use crate::time::Instant;
use core::fmt::Debug;
use core::time::Duration;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::net::{IpAddr, SocketAddr};

/// Bytes of a validation token on the wire.
pub const TOKEN_LEN: usize = 16;
/// A validation token.
pub type Token = [u8; TOKEN_LEN];

/// An address a peer is known by.
pub trait PeerAddr: Clone + Ord + Debug {
    /// Bytes that identify the address exactly (fed to the token MAC).
    fn addr_bytes(&self) -> [u8; 19];
    /// The network the address belongs to, for per-prefix limits.
    fn prefix(&self) -> [u8; 9];
}

impl PeerAddr for SocketAddr {
    fn addr_bytes(&self) -> [u8; 19] {
        let mut b = [0u8; 19];
        match self.ip() {
            IpAddr::V4(ip) => {
                b[0] = 4;
                b[1..5].copy_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                b[0] = 6;
                b[1..17].copy_from_slice(&ip.octets());
            }
        }
        b[17..].copy_from_slice(&self.port().to_be_bytes());
        b
    }
    /// IPv4 /24 or IPv6 /64.
    fn prefix(&self) -> [u8; 9] {
        let b = self.addr_bytes();
        let mut p = [0u8; 9];
        p[0] = b[0];
        let n = if b[0] == 4 { 3 } else { 8 };
        p[1..1 + n].copy_from_slice(&b[1..1 + n]);
        p
    }
}

macro_rules! int_addr {
    ($($t:ty),*) => {$(
        /// An integer address (simulations): each address is its own prefix.
        impl PeerAddr for $t {
            fn addr_bytes(&self) -> [u8; 19] {
                let mut b = [0u8; 19];
                let v = u64::from(*self).to_be_bytes();
                b[0] = 1;
                b[1..9].copy_from_slice(&v);
                b
            }
            fn prefix(&self) -> [u8; 9] {
                let mut p = [0u8; 9];
                p.copy_from_slice(&self.addr_bytes()[..9]);
                p
            }
        }
    )*};
}
int_addr!(u8, u16, u32, u64);

/// Issues and checks tokens with one secret key.
#[derive(Clone)]
pub struct Tokens {
    key: [u8; 32],
    period: Duration,
}

impl Tokens {
    /// Tokens keyed by `key`, valid for one to two `period`s.
    pub fn new(key: [u8; 32], period: Duration) -> Self {
        Tokens {
            key,
            period: period.max(Duration::from_millis(1)),
        }
    }

    fn bucket(&self, now: Instant) -> u64 {
        now.as_micros() / (self.period.as_micros() as u64).max(1)
    }

    fn mac<A: PeerAddr>(&self, addr: &A, bucket: u64, bound: &Token) -> Hmac<Sha256> {
        // HMAC accepts keys of any length.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("any key length");
        m.update(&addr.addr_bytes());
        m.update(&bucket.to_be_bytes());
        m.update(bound);
        m
    }

    /// The token for `addr` at `now`, answering the peer's token `bound`
    /// (all zero: a challenge).
    pub fn issue<A: PeerAddr>(&self, addr: &A, now: Instant, bound: &Token) -> Token {
        let tag = self
            .mac(addr, self.bucket(now), bound)
            .finalize()
            .into_bytes();
        let mut t = [0u8; TOKEN_LEN];
        t.copy_from_slice(&tag[..TOKEN_LEN]);
        t
    }

    /// Whether `token` was issued for `addr` and `bound` in this or the
    /// previous period (compared in constant time).
    pub fn check<A: PeerAddr>(&self, addr: &A, now: Instant, token: &Token, bound: &Token) -> bool {
        let b = self.bucket(now);
        [b, b.saturating_sub(1)].iter().any(|&x| {
            self.mac(addr, x, bound)
                .verify_truncated_left(token)
                .is_ok()
        })
    }
}

/// Whether two secrets are equal, compared in constant time.
pub fn same_secret(a: &Token, b: &Token) -> bool {
    a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn token_binds_address_and_expires() {
        let t = Tokens::new([7; 32], Duration::from_secs(10));
        let a = sa("192.0.2.1:4000");
        let now = Instant::from_micros(25_000_000);
        let z = [0; TOKEN_LEN];
        let tok = t.issue(&a, now, &z);
        assert!(t.check(&a, now, &tok, &z));
        assert!(t.check(&a, Instant::from_micros(39_000_000), &tok, &z));
        assert!(!t.check(&a, Instant::from_micros(40_000_000), &tok, &z));
        assert!(!t.check(&sa("192.0.2.1:4001"), now, &tok, &z));
        assert!(!t.check(&sa("192.0.2.2:4000"), now, &tok, &z));
        let other = Tokens::new([8; 32], Duration::from_secs(10));
        assert!(!other.check(&a, now, &tok, &z));
        let mut bad = tok;
        bad[0] ^= 1;
        assert!(!t.check(&a, now, &bad, &z));
        // An answer is bound to the token it answers.
        let answer = t.issue(&a, now, &[5; TOKEN_LEN]);
        assert!(t.check(&a, now, &answer, &[5; TOKEN_LEN]));
        assert!(!t.check(&a, now, &answer, &z));
        assert!(!t.check(&a, now, &tok, &[5; TOKEN_LEN]));
        assert!(same_secret(&tok, &tok) && !same_secret(&tok, &bad));
    }

    #[test]
    fn prefixes_are_v4_24_and_v6_64() {
        assert_eq!(
            sa("10.1.2.3:1").prefix(),
            sa("10.1.2.200:9").prefix(),
            "same /24"
        );
        assert_ne!(sa("10.1.2.3:1").prefix(), sa("10.1.3.3:1").prefix());
        assert_eq!(
            sa("[2001:db8::1]:1").prefix(),
            sa("[2001:db8::ffff:1]:2").prefix()
        );
        assert_ne!(
            sa("[2001:db8::1]:1").prefix(),
            sa("[2001:db8:0:1::1]:1").prefix()
        );
        assert_ne!(sa("0.0.0.0:1").prefix(), sa("[::]:1").prefix());
        assert_ne!(3u8.prefix(), 4u8.prefix());
    }
}
