//! Flow queueing with CoDel per flow, the core that Linux's fq_codel qdisc
//! (`net/sched/sch_fq_codel.c`) and mac80211's TXQs (`include/net/fq.h`,
//! `fq_impl.h`) share: packets hash into a fixed number of flow buckets;
//! each "tin" (the qdisc; a station's TXQ) serves its new flows ahead of
//! its old ones by deficit round robin with a byte quantum, and runs CoDel
//! on the flow it takes from. A full queue drops from the flow with the
//! largest backlog. Kernel 5.4.

use super::codel::{CodelParams, CodelVars, Head};
use super::Queued;
use crate::units::SimTime;
use std::collections::VecDeque;

/// A packet waiting in a flow.
#[derive(Debug)]
pub struct Item {
    pub queued: Queued,
    /// When it entered the queue.
    pub at: SimTime,
    /// Its length as the queue counts it.
    pub len: u32,
}

#[derive(Debug, Default)]
struct Flow {
    items: VecDeque<Item>,
    backlog: u32,
    deficit: i64,
    codel: CodelVars,
    /// On its tin's new or old list.
    listed: bool,
    /// The tin that owns the bucket while the flow is listed.
    tin: Option<usize>,
}

#[derive(Debug, Default)]
struct Tin {
    new: VecDeque<usize>,
    old: VecDeque<usize>,
    packets: usize,
    /// The flow a packet goes to when its bucket belongs to another tin
    /// (`fq_tin.default_flow`).
    default_flow: usize,
}

/// How the queue drops when it is over its limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Overflow {
    /// fq_codel: from the fattest flow's head until half its bytes or
    /// `drop_batch_size` packets are gone.
    HalfFattest { batch: usize },
    /// mac80211 (`fq_tin_enqueue`): one packet at a time from the fattest
    /// flow, until back within the limits.
    OneAtATime,
}

/// The settings of one flow queue.
#[derive(Clone, Copy, Debug)]
pub struct FqParams {
    pub buckets: usize,
    pub quantum: u32,
    pub limit: usize,
    /// Bytes the queue may hold (`memory_limit`, counted on packet length).
    pub memory_limit: u64,
    pub overflow: Overflow,
    /// CoDel judges the whole queue's backlog (fq_codel) rather than the
    /// flow's (mac80211) against its MTU.
    pub codel_on_total: bool,
}

/// Flow buckets shared by the tins of one queue.
#[derive(Debug)]
pub struct Fq {
    p: FqParams,
    flows: Vec<Flow>,
    tins: Vec<Tin>,
    packets: usize,
    bytes: u64,
}

impl Fq {
    pub fn new(p: FqParams) -> Fq {
        Fq {
            flows: (0..p.buckets).map(|_| Flow::default()).collect(),
            tins: Vec::new(),
            packets: 0,
            bytes: 0,
            p,
        }
    }

    /// A new tin, by index.
    pub fn add_tin(&mut self) -> usize {
        self.flows.push(Flow::default());
        self.tins.push(Tin {
            default_flow: self.flows.len() - 1,
            ..Tin::default()
        });
        self.tins.len() - 1
    }

    pub(super) fn len(&self) -> usize {
        self.packets
    }

    pub fn tin_len(&self, tin: usize) -> usize {
        self.tins[tin].packets
    }

    /// Queues `item` in `tin` under flow `hash`; what the limits then drop
    /// goes to `dropped`.
    pub fn enqueue(&mut self, tin: usize, hash: u64, item: Item, dropped: &mut Vec<Item>) {
        let bucket = (hash % self.p.buckets as u64) as usize;
        let f = match self.flows[bucket].tin {
            Some(t) if t != tin => self.tins[tin].default_flow,
            _ => bucket,
        };
        let flow = &mut self.flows[f];
        flow.tin = Some(tin);
        flow.backlog += item.len;
        self.bytes += u64::from(item.len);
        flow.items.push_back(item);
        if !flow.listed {
            flow.listed = true;
            flow.deficit = i64::from(self.p.quantum);
            self.tins[tin].new.push_back(f);
        }
        self.tins[tin].packets += 1;
        self.packets += 1;
        self.enforce_limits(dropped);
    }

    fn over(&self) -> bool {
        self.packets > self.p.limit || self.bytes > self.p.memory_limit
    }

    fn enforce_limits(&mut self, dropped: &mut Vec<Item>) {
        if !self.over() {
            return;
        }
        match self.p.overflow {
            Overflow::HalfFattest { batch } => {
                let f = self.fattest();
                let threshold = self.flows[f].backlog / 2;
                let mut gone = 0;
                for _ in 0..batch {
                    let Some(item) = self.take(f) else { break };
                    gone += item.len;
                    dropped.push(item);
                    if gone >= threshold {
                        break;
                    }
                }
            }
            Overflow::OneAtATime => {
                while self.over() {
                    let f = self.fattest();
                    let Some(item) = self.take(f) else { break };
                    dropped.push(item);
                }
            }
        }
    }

    /// The flow with the most bytes queued (the first of equals).
    fn fattest(&self) -> usize {
        let mut best = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > self.flows[best].backlog {
                best = i;
            }
        }
        best
    }

    /// Takes flow `f`'s head packet, keeping the counts.
    fn take(&mut self, f: usize) -> Option<Item> {
        let flow = &mut self.flows[f];
        let item = flow.items.pop_front()?;
        flow.backlog -= item.len;
        self.bytes -= u64::from(item.len);
        self.packets -= 1;
        let tin = flow.tin.expect("a queued flow has a tin");
        self.tins[tin].packets -= 1;
        Some(item)
    }

    /// The next packet of `tin` (`fq_codel_dequeue`, `fq_tin_dequeue`),
    /// running CoDel with `codel` on the flow it comes from; CoDel's drops
    /// go to `dropped`.
    pub fn dequeue(
        &mut self,
        now: SimTime,
        tin: usize,
        codel: &CodelParams,
        dropped: &mut Vec<Item>,
    ) -> Option<Item> {
        loop {
            let t = &self.tins[tin];
            let (f, new) = match (t.new.front(), t.old.front()) {
                (Some(&f), _) => (f, true),
                (None, Some(&f)) => (f, false),
                (None, None) => return None,
            };
            if self.flows[f].deficit <= 0 {
                self.flows[f].deficit += i64::from(self.p.quantum);
                let t = &mut self.tins[tin];
                if new { t.new.pop_front() } else { t.old.pop_front() };
                t.old.push_back(f);
                continue;
            }
            let mut vars = self.flows[f].codel;
            let on_total = self.p.codel_on_total;
            let item = vars.dequeue(
                now,
                codel,
                || {
                    let item = self.take(f)?;
                    let backlog = if on_total {
                        self.bytes.min(u64::from(u32::MAX)) as u32
                    } else {
                        self.flows[f].backlog
                    };
                    let head = Head {
                        enqueued: item.at,
                        backlog,
                    };
                    Some((item, head))
                },
                dropped,
            );
            self.flows[f].codel = vars;
            match item {
                Some(item) => {
                    self.flows[f].deficit -= i64::from(item.len);
                    return Some(item);
                }
                None => {
                    let t = &mut self.tins[tin];
                    if new { t.new.pop_front() } else { t.old.pop_front() };
                    if new && !t.old.is_empty() {
                        t.old.push_back(f);
                    } else {
                        self.flows[f].listed = false;
                        self.flows[f].tin = None;
                    }
                }
            }
        }
    }

    /// Everything queued, tin by tin and flow by flow, leaving it empty.
    pub fn drain(&mut self) -> Vec<Item> {
        let mut out = Vec::new();
        for tin in 0..self.tins.len() {
            let t = std::mem::take(&mut self.tins[tin].new);
            let o = std::mem::take(&mut self.tins[tin].old);
            for f in t.into_iter().chain(o) {
                while let Some(item) = self.take(f) {
                    out.push(item);
                }
                self.flows[f].listed = false;
                self.flows[f].tin = None;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Dst;
    use crate::mac::{Msdu, Payload};

    fn item(at_ms: u64, bytes: u32) -> Item {
        let msdu = Msdu {
            dst: Dst::Broadcast,
            bytes,
            enqueued: SimTime::from_ms(at_ms),
            fixed: None,
            source: None,
            payload: Payload::Raw,
        };
        Item {
            queued: Queued {
                msdu,
                stageable: false,
            },
            at: SimTime::from_ms(at_ms),
            len: bytes,
        }
    }

    const CODEL: CodelParams = CodelParams {
        target: SimTime::from_ms(5),
        interval: SimTime::from_ms(100),
        mtu: 1514,
    };

    fn fq(limit: usize, overflow: Overflow) -> Fq {
        let mut fq = Fq::new(FqParams {
            buckets: 1024,
            quantum: 1514,
            limit,
            memory_limit: u64::MAX,
            overflow,
            codel_on_total: true,
        });
        fq.add_tin();
        fq
    }

    /// Queues `n` packets of `bytes` under flow `hash`.
    fn fill(q: &mut Fq, hash: u64, n: usize, bytes: u32, dropped: &mut Vec<Item>) {
        for _ in 0..n {
            q.enqueue(0, hash, item(0, bytes), dropped);
        }
    }

    #[test]
    fn flows_take_turns_and_a_new_flow_goes_first() {
        let mut q = fq(100, Overflow::HalfFattest { batch: 64 });
        let mut dropped = Vec::new();
        fill(&mut q, 1, 4, 1500, &mut dropped);
        fill(&mut q, 2, 4, 1000, &mut dropped);
        let now = SimTime::ZERO;
        let mut order = Vec::new();
        while let Some(it) = q.dequeue(now, 0, &CODEL, &mut dropped) {
            order.push(it.len);
            if order.len() == 2 {
                // A sparse flow arrives: it is served ahead of the old ones.
                q.enqueue(0, 3, item(0, 100), &mut dropped);
            }
        }
        assert_eq!(order, [1500, 1500, 1000, 1000, 100, 1500, 1000, 1000, 1500]);
        assert!(dropped.is_empty());
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn overflow_halves_the_fattest_flow() {
        let mut q = fq(10, Overflow::HalfFattest { batch: 64 });
        let mut dropped = Vec::new();
        fill(&mut q, 1, 8, 1500, &mut dropped);
        fill(&mut q, 2, 3, 1500, &mut dropped);
        // 11 packets > 10: flow 1 (8 packets) loses half its bytes.
        assert_eq!(dropped.len(), 4);
        assert_eq!(q.len(), 7);
        let mut q = fq(10, Overflow::OneAtATime);
        dropped.clear();
        fill(&mut q, 1, 11, 1500, &mut dropped);
        assert_eq!((dropped.len(), q.len()), (1, 10));
    }

    #[test]
    fn codel_drops_from_a_standing_queue() {
        let mut q = fq(1000, Overflow::HalfFattest { batch: 64 });
        let mut dropped = Vec::new();
        fill(&mut q, 1, 200, 1500, &mut dropped);
        let mut sent = 0;
        for ms in (10..1000).step_by(10) {
            if q
                .dequeue(SimTime::from_ms(ms), 0, &CODEL, &mut dropped)
                .is_some()
            {
                sent += 1;
            }
        }
        assert!(!dropped.is_empty(), "a standing queue is dropped from");
        assert_eq!(sent + dropped.len() + q.len(), 200);
    }
}
