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
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// Where an event falls in the order of a run: events run in ascending key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) time: SimTime,
    rank: u8,
    source: u32,
    seq: u64,
}

impl Key {
    /// A key after that of every event at `time`.
    pub(crate) fn after(time: SimTime) -> Key {
        Key {
            time,
            rank: u8::MAX,
            source: u32::MAX,
            seq: u64::MAX,
        }
    }
}

struct Entry {
    key: Key,
    event: Event,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// A monotonic priority queue of events.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
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
        self.heap.push(Reverse(Entry { key, event }));
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
        Key {
            time,
            rank: event.rank(),
            source,
            seq,
        }
    }

    /// The key of the event popped last (the one being handled).
    pub(crate) fn current(&self) -> Key {
        self.last
    }

    /// Removes the earliest event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let Reverse(e) = self.heap.pop()?;
        assert!(e.key.time >= self.now, "time went backwards");
        self.now = e.key.time;
        self.last = e.key;
        self.popped += 1;
        Some((e.key.time, e.event))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse(e)| e.key.time)
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
