//! A two-node in-memory link that drives time: seeded random loss, fixed
//! delay, and a link that can be cut. For tests, examples and simulations
//! (the `quinn-proto` style "pair" harness).

use crate::endpoint::{Destination, Endpoint, Event};
use crate::storage::MemStore;
use crate::time::Instant;
use core::time::Duration;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Node addresses in a [`Pair`]: 0 and 1.
pub type Addr = u8;

/// Two endpoints, their stores and the link between them.
pub struct Pair {
    /// The endpoints, addressed 0 and 1.
    pub nodes: [Endpoint<Addr>; 2],
    /// Their stores.
    pub stores: [MemStore; 2],
    /// Current time.
    pub now: Instant,
    /// Probability that a datagram is lost, per direction (0 → 1, 1 → 0).
    pub loss: [f64; 2],
    /// One-way delay.
    pub delay: Duration,
    /// Whether the link carries anything.
    pub up: bool,
    /// Every event so far, with the node that emitted it.
    pub events: Vec<(Addr, Event<Addr>)>,
    /// Datagrams dropped by the link.
    pub dropped: u64,
    rng: Xoshiro256PlusPlus,
    in_flight: BinaryHeap<InFlight>,
    seq: u64,
}

/// A datagram on the wire: arrival time, sequence (FIFO tie-break), destination, bytes.
type InFlight = Reverse<(Instant, u64, Addr, Vec<u8>)>;

/// Datagrams each node may emit per step before time moves on.
const BURST: usize = 64;

impl Pair {
    /// A pair with a loss-free 1 ms link.
    pub fn new(nodes: [Endpoint<Addr>; 2], stores: [MemStore; 2], seed: u64) -> Self {
        Pair {
            nodes,
            stores,
            now: Instant::ZERO,
            loss: [0.0; 2],
            delay: Duration::from_millis(1),
            up: true,
            events: Vec::new(),
            dropped: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            in_flight: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Advances until `done` holds (returns `true`) or `until` passes (`false`).
    pub fn run_until(&mut self, until: Instant, mut done: impl FnMut(&Pair) -> bool) -> bool {
        loop {
            for i in 0..2 {
                for _ in 0..BURST {
                    let Some(t) = self.nodes[i].poll_transmit(self.now, &mut self.stores[i]) else {
                        break;
                    };
                    let to = match t.destination {
                        Destination::Broadcast => 1 - i as Addr,
                        Destination::Peer(p) => p,
                    };
                    if !self.up || self.rng.random::<f64>() < self.loss[i] {
                        self.dropped += 1;
                        continue;
                    }
                    self.seq += 1;
                    self.in_flight
                        .push(Reverse((self.now + self.delay, self.seq, to, t.payload)));
                }
                while let Some(e) = self.nodes[i].poll_event() {
                    self.events.push((i as Addr, e));
                }
            }
            if done(self) {
                return true;
            }
            let mut next = self
                .nodes
                .iter()
                .filter_map(|n| n.poll_timeout())
                .min()
                .unwrap_or(until);
            if let Some(Reverse((t, ..))) = self.in_flight.peek() {
                next = next.min(*t);
            }
            // A timer already due means a paced sender may go again: let time move.
            self.now = if next > self.now {
                next
            } else {
                self.now + Duration::from_micros(50)
            };
            if self.now > until {
                return false;
            }
            while self
                .in_flight
                .peek()
                .is_some_and(|Reverse((t, ..))| *t <= self.now)
            {
                let Some(Reverse((_, _, to, bytes))) = self.in_flight.pop() else {
                    break;
                };
                let to = usize::from(to);
                self.nodes[to].handle_datagram(
                    self.now,
                    1 - to as Addr,
                    &bytes,
                    &mut self.stores[to],
                );
            }
            for i in 0..2 {
                if self.nodes[i].poll_timeout().is_some_and(|t| t <= self.now) {
                    self.nodes[i].handle_timeout(self.now, &mut self.stores[i]);
                }
            }
        }
    }
}
