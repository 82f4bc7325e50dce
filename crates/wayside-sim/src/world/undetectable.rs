//! Arrivals of frames whose preamble a radio cannot detect, run outside
//! the event queue ([`super`]): each radio's own queue of them, and
//! running them, in key order, up to a key.

use super::World;
use crate::event::{Event, Key};
use crate::ids::{NodeId, TxId};
use crate::trace::Undetectable;
use crate::units::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// When more arrivals than this wait at a radio, those whose time has come
/// are run at once (a radio that hears only these would keep them all).
const MANY: usize = 256;

/// One radio's waiting arrivals: the start (`true`) or the end of a
/// transmission there, by the key it would have had in the event queue.
pub(super) type Waiting = BinaryHeap<Reverse<(Key, u32, bool)>>;

impl World {
    /// Transmission `id` arrives at `rx` from `start` to `end`, its
    /// preamble undetectable there: its start and end wait at `rx`.
    pub(super) fn wait_undetectable(
        &mut self,
        rx: NodeId,
        id: TxId,
        (start, end): (SimTime, SimTime),
    ) {
        let q = &mut self.queue;
        let s = q.reserve(start, rx.0, &Event::RxStart { node: rx, tx: id });
        let e = q.reserve(end, rx.0, &Event::RxEnd { node: rx, tx: id });
        let waiting = &mut self.waiting[rx.index()];
        waiting.push(Reverse((s, id.0, true)));
        waiting.push(Reverse((e, id.0, false)));
        if waiting.len() > MANY {
            self.run_undetectable(rx, self.queue.current());
        }
    }

    /// Runs the arrivals waiting at `node` with keys before `key`, in key
    /// order, as the events they stand for would have run; counts the
    /// drops their rows would have recorded.
    pub(super) fn run_undetectable(&mut self, node: NodeId, key: Key) {
        let i = node.index();
        while let Some(&Reverse((k, tx, start))) = self.waiting[i].peek() {
            if k >= key {
                break;
            }
            self.waiting[i].pop();
            let tx = TxId(tx);
            let traced = self.traced_at(node, tx);
            let (n, u) = (&mut self.nodes[i], &mut self.trace.undetectable);
            u.arrivals += u64::from(start);
            // A radio that is off hears nothing.
            if n.radio().is_some() {
                if start {
                    let (reason, divergent) = n.on_undetectable_start(&self.air, k.time, tx);
                    u.divergent += u64::from(divergent);
                    let slot = Undetectable::REASONS.iter().position(|&r| Some(r) == reason);
                    if let (true, Some(slot)) = (traced, slot) {
                        u.drops[i][slot] += 1;
                    }
                } else {
                    let divergent = n.on_undetectable_end(&self.air, k.time, tx);
                    u.divergent += u64::from(divergent);
                }
            }
            self.air.medium.release(tx);
        }
    }
}
