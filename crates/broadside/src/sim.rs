//! An in-memory network of endpoints that drives time: seeded random loss,
//! fixed delay, links that can be cut, and raw datagrams injected from any
//! address (spoofed sources, floods). For tests, examples and simulations
//! (the `quinn-proto` style harness). Node `i` has address `i`; a datagram
//! to an address that is no node is recorded in [`Net::stray`].

use crate::counters::PacketKind;
use crate::endpoint::{Destination, Endpoint, Event};
use crate::storage::MemStore;
use crate::time::Instant;
use core::time::Duration;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Node addresses: a node's index.
pub type Addr = u8;

/// One datagram sent: time, source, destination, class, bytes.
pub type Sent = (Instant, Addr, Addr, PacketKind, usize);

/// Endpoints, their stores and the medium between them.
pub struct Net {
    /// The endpoints; node `i` has address `i`.
    pub nodes: Vec<Endpoint<Addr>>,
    /// Their stores.
    pub stores: Vec<MemStore>,
    /// Current time.
    pub now: Instant,
    /// Probability that a datagram sent by node `i` is lost.
    pub loss: Vec<f64>,
    /// One-way delay.
    pub delay: Duration,
    /// Whether the medium carries anything at all.
    pub up: bool,
    /// Nodes cut off from everyone.
    pub down: Vec<bool>,
    /// Every event so far, with the node that emitted it.
    pub events: Vec<(Addr, Event<Addr>)>,
    /// Datagrams dropped by the medium.
    pub dropped: u64,
    /// Datagrams sent to addresses that are no node.
    pub stray: Vec<Sent>,
    /// Every datagram a node sent, when `Some`.
    pub log: Option<Vec<Sent>>,
    /// Rewrites (or drops, by returning `false`) each datagram a node sends:
    /// `(from, to, bytes)`. Models a lying peer or a selective loss.
    pub tamper: Option<Tamper>,
    rng: Xoshiro256PlusPlus,
    in_flight: BinaryHeap<InFlight>,
    seq: u64,
}

/// A hook on sent datagrams: see [`Net::tamper`].
pub type Tamper = Box<dyn FnMut(Addr, Addr, &mut Vec<u8>) -> bool>;

/// Two endpoints: the common case.
pub type Pair = Net;

/// A datagram on the wire: arrival time, sequence (FIFO tie-break), source,
/// destination, bytes.
type InFlight = Reverse<(Instant, u64, Addr, Addr, Vec<u8>)>;

/// Datagrams each node may emit per step before time moves on.
const BURST: usize = 64;

impl Net {
    /// Nodes on a loss-free medium with 1 ms delay.
    pub fn new(
        nodes: impl Into<Vec<Endpoint<Addr>>>,
        stores: impl Into<Vec<MemStore>>,
        seed: u64,
    ) -> Self {
        let nodes = nodes.into();
        let n = nodes.len();
        Net {
            nodes,
            stores: stores.into(),
            now: Instant::ZERO,
            loss: vec![0.0; n],
            delay: Duration::from_millis(1),
            up: true,
            down: vec![false; n],
            events: Vec::new(),
            dropped: 0,
            stray: Vec::new(),
            log: None,
            tamper: None,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            in_flight: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Puts a datagram from any address on the wire, arriving after the delay.
    pub fn inject(&mut self, from: Addr, to: Addr, bytes: Vec<u8>) {
        self.seq += 1;
        self.in_flight
            .push(Reverse((self.now + self.delay, self.seq, from, to, bytes)));
    }

    fn is_node(&self, a: Addr) -> bool {
        usize::from(a) < self.nodes.len()
    }

    fn emit(&mut self, from: usize) {
        for _ in 0..BURST {
            let Some(t) = self.nodes[from].poll_transmit(self.now, &mut self.stores[from]) else {
                break;
            };
            let targets: Vec<Addr> = match t.destination {
                Destination::Broadcast => (0..self.nodes.len())
                    .filter(|&j| j != from)
                    .map(|j| j as Addr)
                    .collect(),
                Destination::Peer(p) => vec![p],
            };
            for to in targets {
                let sent = (self.now, from as Addr, to, t.kind, t.payload.len());
                if let Some(log) = &mut self.log {
                    log.push(sent);
                }
                if !self.is_node(to) {
                    self.stray.push(sent);
                    continue;
                }
                let cut = !self.up || self.down[from] || self.down[usize::from(to)];
                if cut || self.rng.random::<f64>() < self.loss[from] {
                    self.dropped += 1;
                    continue;
                }
                let mut bytes = t.payload.clone();
                if let Some(hook) = &mut self.tamper {
                    if !hook(from as Addr, to, &mut bytes) {
                        self.dropped += 1;
                        continue;
                    }
                }
                self.seq += 1;
                self.in_flight.push(Reverse((
                    self.now + self.delay,
                    self.seq,
                    from as Addr,
                    to,
                    bytes,
                )));
            }
        }
        while let Some(e) = self.nodes[from].poll_event() {
            self.events.push((from as Addr, e));
        }
    }

    /// Advances until `done` holds (returns `true`) or `until` passes (`false`).
    pub fn run_until(&mut self, until: Instant, mut done: impl FnMut(&Net) -> bool) -> bool {
        loop {
            for i in 0..self.nodes.len() {
                self.emit(i);
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
                let Some(Reverse((_, _, from, to, bytes))) = self.in_flight.pop() else {
                    break;
                };
                if !self.is_node(to) {
                    continue;
                }
                let to = usize::from(to);
                self.nodes[to].handle_datagram(self.now, from, &bytes, &mut self.stores[to]);
            }
            for i in 0..self.nodes.len() {
                if self.nodes[i].poll_timeout().is_some_and(|t| t <= self.now) {
                    self.nodes[i].handle_timeout(self.now, &mut self.stores[i]);
                }
            }
        }
    }
}
