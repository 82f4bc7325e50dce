//! The event queue: typed events addressed to components, ordered by
//! (time, rank, source node, per-source sequence) so that simultaneous events
//! always run in the same order, and time never goes backwards.

use crate::ids::{NodeId, TxId};
use crate::mac::adhoc::AdhocTimer;
use crate::mac::dcf::MacTimer;
use crate::mac::mgmt::MgmtTimer;
use crate::net::NetTimer;
use crate::units::SimTime;
use crate::wire::WireFrame;

/// Everything that can happen in a simulation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A management timer of `node` (beacons, scanning, timeouts).
    Mgmt {
        node: NodeId,
        timer: MgmtTimer,
        generation: u32,
    },
    /// An ad hoc (IBSS) timer of `node` (beacons, join probes, the
    /// disconnection watchdog).
    Adhoc {
        node: NodeId,
        timer: AdhocTimer,
        generation: u32,
    },
    /// A network-layer timer of `node` (ARP, DHCP).
    Net {
        node: NodeId,
        timer: NetTimer,
        generation: u32,
    },
    /// A frame reaches `node` over wired link `link`.
    /// (Boxed: every event in the queue would otherwise be the size of a packet.)
    WireArrive {
        node: NodeId,
        link: u32,
        frame: Box<WireFrame>,
    },
    /// The timer of socket `socket` of `node`.
    Tcp {
        node: NodeId,
        socket: u32,
        generation: u32,
    },
    /// Application `app` wants to act at `node` (start, next datagram).
    App { node: NodeId, app: u32 },
    /// The first energy of transmission `tx` reaches `node`.
    RxStart { node: NodeId, tx: TxId },
    /// The last energy of transmission `tx` leaves `node`.
    RxEnd { node: NodeId, tx: TxId },
    /// `node` finished sending transmission `tx`.
    TxEnd { node: NodeId, tx: TxId },
    /// A MAC timer of `node`.
    Mac {
        node: NodeId,
        timer: MacTimer,
        generation: u32,
    },
    /// Frame source number `source` of `node` wants to emit.
    Traffic { node: NodeId, source: u32 },
    /// `node`'s radio is switched on (it appears) or off (it disappears).
    Power { node: NodeId, on: bool },
}

impl Event {
    /// The node the event is for.
    pub fn node(&self) -> NodeId {
        match *self {
            Event::Mgmt { node, .. }
            | Event::Adhoc { node, .. }
            | Event::Net { node, .. }
            | Event::WireArrive { node, .. }
            | Event::Tcp { node, .. }
            | Event::App { node, .. }
            | Event::RxStart { node, .. }
            | Event::RxEnd { node, .. }
            | Event::TxEnd { node, .. }
            | Event::Mac { node, .. }
            | Event::Traffic { node, .. }
            | Event::Power { node, .. } => node,
        }
    }

    /// Rank among events at the same instant: ends before starts, so that a
    /// signal that ends exactly when another begins does not interfere with it,
    /// and the medium is seen idle before the next access decision.
    fn rank(&self) -> u8 {
        match self {
            Event::TxEnd { .. } => 0,
            Event::RxEnd { .. } => 1,
            Event::Mac { .. } => 2,
            Event::RxStart { .. } => 3,
            Event::Mgmt { .. }
            | Event::Adhoc { .. }
            | Event::Net { .. }
            | Event::WireArrive { .. }
            | Event::Tcp { .. }
            | Event::Power { .. } => 4,
            Event::Traffic { .. } | Event::App { .. } => 5,
        }
    }
}

/// Where an event falls in the order of a run: events run in ascending
/// (time, rank, source, sequence), the last three packed into one word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) time: SimTime,
    /// Rank (3 bits), source (27), per-source sequence (34).
    order: u64,
}

const SOURCE_BITS: u32 = 27;
const SEQ_BITS: u32 = 34;

impl Key {
    fn new(time: SimTime, rank: u8, source: u32, seq: u64) -> Key {
        assert!(
            source < 1 << SOURCE_BITS && seq < 1 << SEQ_BITS,
            "event source {source} or its sequence {seq} out of range"
        );
        let order = (u64::from(rank) << (SOURCE_BITS + SEQ_BITS))
            | (u64::from(source) << SEQ_BITS)
            | seq;
        Key { time, order }
    }

    /// A key after that of every event at `time`.
    pub(crate) fn after(time: SimTime) -> Key {
        Key {
            time,
            order: u64::MAX,
        }
    }
}

/// Children per node of the queue's heap: a wider heap is shallower, and
/// its children sit side by side in memory.
const ARITY: usize = 4;

/// A monotonic priority queue of events: a 4-ary min-heap of keyed events.
#[derive(Default)]
pub struct EventQueue {
    heap: Vec<(Key, Event)>,
    now: SimTime,
    /// Per-source sequence counters; index = source id.
    seqs: Vec<u64>,
    popped: u64,
    /// The key of the event popped last.
    last: Key,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    /// Schedules `event` at `time` on behalf of `source` (a node index, or a
    /// traffic-source id offset past the nodes). Panics if `time` is in the past:
    /// that is a model bug, never an input error.
    pub fn schedule(&mut self, time: SimTime, source: u32, event: Event) {
        let key = self.reserve(time, source, &event);
        self.heap.push((key, event));
        self.sift_up(self.heap.len() - 1);
    }

    /// The key `event` would have if scheduled at `time` by `source` now,
    /// taken as if it were (later events of `source` order after it), for
    /// an event that is run outside the queue.
    pub(crate) fn reserve(&mut self, time: SimTime, source: u32, event: &Event) -> Key {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        let s = source as usize;
        if s >= self.seqs.len() {
            self.seqs.resize(s + 1, 0);
        }
        let seq = self.seqs[s];
        self.seqs[s] += 1;
        Key::new(time, event.rank(), source, seq)
    }

    /// The key of the event popped last (the one being handled).
    pub(crate) fn current(&self) -> Key {
        self.last
    }

    /// Removes the earliest event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let last = self.heap.pop()?;
        let (key, event) = if self.heap.is_empty() {
            last
        } else {
            let top = std::mem::replace(&mut self.heap[0], last);
            self.sift_down(0);
            top
        };
        assert!(key.time >= self.now, "time went backwards");
        self.now = key.time;
        self.last = key;
        self.popped += 1;
        Some((key.time, event))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| e.0.time)
    }

    /// Moves the entry at `i` up to its place.
    fn sift_up(&mut self, mut i: usize) {
        let h = &mut self.heap;
        let key = h[i].0;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if h[parent].0 <= key {
                break;
            }
            h.swap(parent, i);
            i = parent;
        }
    }

    /// Moves the entry at `i` down to its place.
    fn sift_down(&mut self, mut i: usize) {
        let h = &mut self.heap;
        let n = h.len();
        let key = h[i].0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                return;
            }
            let last = (first + ARITY).min(n);
            let mut least = first;
            let mut least_key = h[first].0;
            for (c, e) in h[first + 1..last].iter().enumerate() {
                if e.0 < least_key {
                    least = first + 1 + c;
                    least_key = e.0;
                }
            }
            if key <= least_key {
                return;
            }
            h.swap(i, least);
            i = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_rank_then_source_then_sequence() {
        let mut q = EventQueue::new();
        let t = SimTime::from_us(5);
        q.schedule(
            t,
            2,
            Event::Traffic {
                node: NodeId(0),
                source: 9,
            },
        );
        q.schedule(
            t,
            1,
            Event::RxStart {
                node: NodeId(1),
                tx: TxId(0),
            },
        );
        q.schedule(
            t,
            0,
            Event::RxStart {
                node: NodeId(0),
                tx: TxId(0),
            },
        );
        q.schedule(
            t,
            3,
            Event::TxEnd {
                node: NodeId(3),
                tx: TxId(1),
            },
        );
        q.schedule(
            SimTime::from_us(1),
            7,
            Event::Traffic {
                node: NodeId(0),
                source: 7,
            },
        );
        q.schedule(
            t,
            0,
            Event::RxStart {
                node: NodeId(0),
                tx: TxId(5),
            },
        );
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            vec![
                Event::Traffic {
                    node: NodeId(0),
                    source: 7
                },
                Event::TxEnd {
                    node: NodeId(3),
                    tx: TxId(1)
                },
                Event::RxStart {
                    node: NodeId(0),
                    tx: TxId(0)
                },
                Event::RxStart {
                    node: NodeId(0),
                    tx: TxId(5)
                },
                Event::RxStart {
                    node: NodeId(1),
                    tx: TxId(0)
                },
                Event::Traffic {
                    node: NodeId(0),
                    source: 9
                },
            ]
        );
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn refuses_to_schedule_in_the_past() {
        let mut q = EventQueue::new();
        q.schedule(
            SimTime::from_us(10),
            0,
            Event::Traffic {
                node: NodeId(0),
                source: 0,
            },
        );
        q.pop();
        q.schedule(
            SimTime::from_us(9),
            0,
            Event::Traffic {
                node: NodeId(0),
                source: 0,
            },
        );
    }
}
