//! The routers, after The ONE's (`routing/*Router.java`), and PRoPHET's
//! delivery predictabilities.
//!
//! Every router first hands over messages whose destination is a
//! neighbour (`ActiveRouter.exchangeDeliverableMessages`), then:
//! - epidemic: any message the neighbour lacks;
//! - spray-and-wait (binary): only messages with more than one copy left;
//!   the receiver gets ⌊n/2⌋ copies and the sender keeps ⌈n/2⌉ (Spyropoulos
//!   et al. 2005; The ONE's `SprayAndWaitRouter` with `binaryMode`);
//! - PRoPHET: messages for which the neighbour's predictability of the
//!   destination is higher than ours, the highest first;
//! - direct delivery: nothing else (the source waits to meet the
//!   destination);
//! - first contact: any message, to a host the message has not visited,
//!   and the sender keeps no copy.
//!
//! PRoPHET's predictabilities follow The ONE's `ProphetRouter`, which is
//! the original PRoPHET (Lindgren et al. 2003, kept in RFC 6693 §2.1.1 as
//! the basic equations): on meeting b, P(a,b) += (1 − P(a,b)) · P_init;
//! transitively, for every c that b knows, P(a,c) += (1 − P(a,c)) ·
//! P(a,b) · P(b,c) · β; every P ages by γ^(Δt / time unit). The ONE's
//! defaults: P_init 0.75, β 0.25, γ 0.98, and the time unit is a setting
//! (30 s in its default settings). RFC 6693's refinements (δ, P_encounter
//! scaled by the time since the last encounter, transitivity by maximum)
//! are not modelled.

use std::collections::BTreeMap;

/// Which router every host runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Router {
    Epidemic,
    /// Binary spray-and-wait with this many copies per message.
    SprayAndWait {
        copies: u32,
    },
    Prophet(ProphetParams),
    DirectDelivery,
    FirstContact,
}

impl Router {
    /// Copies a new message starts with (spray-and-wait only counts them).
    pub fn initial_copies(&self) -> u32 {
        match self {
            Router::SprayAndWait { copies } => *copies,
            _ => 1,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Router::Epidemic => "epidemic",
            Router::SprayAndWait { .. } => "spray-and-wait",
            Router::Prophet(_) => "prophet",
            Router::DirectDelivery => "direct-delivery",
            Router::FirstContact => "first-contact",
        }
    }
}

/// PRoPHET's parameters (The ONE's names and defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct ProphetParams {
    pub p_init: f64,
    pub beta: f64,
    pub gamma: f64,
    /// Seconds in one aging time unit (`secondsInTimeUnit`).
    pub time_unit_s: f64,
}

impl Default for ProphetParams {
    fn default() -> Self {
        ProphetParams {
            p_init: 0.75,
            beta: 0.25,
            gamma: 0.98,
            time_unit_s: 30.0,
        }
    }
}

/// One host's delivery predictabilities, aged lazily.
#[derive(Clone, Debug, Default)]
pub struct Predictabilities {
    p: BTreeMap<u32, f64>,
    aged_at: f64,
}

impl Predictabilities {
    fn age(&mut self, now: f64, q: &ProphetParams) {
        let units = (now - self.aged_at) / q.time_unit_s;
        if units > 0.0 {
            let mult = q.gamma.powf(units);
            for v in self.p.values_mut() {
                *v *= mult;
            }
            self.aged_at = now;
        }
    }

    /// P(self, host) at `now`.
    pub fn of(&mut self, host: u32, now: f64, q: &ProphetParams) -> f64 {
        self.age(now, q);
        self.p.get(&host).copied().unwrap_or(0.0)
    }

    /// `me` meets `other` (whose table is `theirs`) at `now`.
    pub fn encounter(
        &mut self,
        me: u32,
        other: u32,
        theirs: &mut Predictabilities,
        now: f64,
        q: &ProphetParams,
    ) {
        let old = self.of(other, now, q);
        let pab = old + (1.0 - old) * q.p_init;
        self.p.insert(other, pab);
        theirs.age(now, q);
        for (&c, &pbc) in &theirs.p {
            if c == me {
                continue;
            }
            let pac = self.p.get(&c).copied().unwrap_or(0.0);
            self.p.insert(c, pac + (1.0 - pac) * pab * pbc * q.beta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encounters_raise_transitivity_spreads_and_aging_decays() {
        let q = ProphetParams::default();
        let (mut a, mut b) = (Predictabilities::default(), Predictabilities::default());
        // b has met c (host 2) once.
        let mut c = Predictabilities::default();
        b.encounter(1, 2, &mut c, 0.0, &q);
        assert!((b.of(2, 0.0, &q) - 0.75).abs() < 1e-12);
        a.encounter(0, 1, &mut b, 0.0, &q);
        assert!((a.of(1, 0.0, &q) - 0.75).abs() < 1e-12);
        // P(a,c) = 0.75 · 0.75 · 0.25.
        assert!((a.of(2, 0.0, &q) - 0.140625).abs() < 1e-12);
        a.encounter(0, 1, &mut b, 0.0, &q);
        assert!((a.of(1, 0.0, &q) - 0.9375).abs() < 1e-12);
        // One time unit later, every P is multiplied by γ.
        assert!((a.of(1, 30.0, &q) - 0.9375 * 0.98).abs() < 1e-12);
    }
}
