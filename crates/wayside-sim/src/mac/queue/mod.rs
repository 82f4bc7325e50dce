//! The data queue in front of a radio's channel access: which MSDU the
//! DCF sends next, what is dropped on the way, and the counters of it.
//!
//! Three kinds, one per node ([`QueueKind`]):
//! - `fifo`: madwifi's drop-tail queue of `queue_limit` frames, one per
//!   access category (everything here is best effort);
//! - `fq_codel`: Linux's fq_codel qdisc on the interface ([`fq`]) with its
//!   defaults (`fq_codel_init`: 1024 flows, quantum 1514 B, 10240 packets,
//!   32 MB, drop batch 64; CoDel target 5 ms, interval 100 ms) over a
//!   driver without TXQs: ath9k's own FIFO of up to `ATH_MAX_QDEPTH` (123)
//!   frames, refilled from the qdisc whenever it has room;
//! - `airtime`: mac80211's per-station TXQs with the airtime-fairness
//!   scheduler ([`txqs`]).
//!
//! Management frames bypass all three (the DCF's own queue ahead of data,
//! as madwifi and mac80211 send them). Broadcast data (ARP requests) joins
//! the FIFO, hashes to a flow of its own in fq_codel, and goes to the
//! interface's TXQ in mac80211.

pub mod codel;
pub mod fq;
pub mod txqs;

use super::{Msdu, Payload};
use crate::ids::NodeId;
use crate::packet::{Body, Packet};
use crate::units::SimTime;
use codel::CodelParams;
use fq::{Fq, FqParams, Item, Overflow};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use txqs::Txqs;

/// Which queue a node runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueKind {
    #[default]
    Fifo,
    FqCodel,
    Airtime,
}

impl QueueKind {
    pub const NAMES: [&'static str; 3] = ["fifo", "fq_codel", "airtime"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// fq_codel's defaults (`fq_codel_init`, Linux 5.4), on a device of
/// 1500-byte MTU with a 14-byte link header.
const FQ_CODEL: FqParams = FqParams {
    buckets: 1024,
    quantum: 1514,
    limit: 10240,
    memory_limit: 32 << 20,
    overflow: Overflow::HalfFattest { batch: 64 },
    codel_on_total: true,
};
const FQ_CODEL_CODEL: CodelParams = CodelParams {
    target: SimTime::from_ms(5),
    interval: SimTime::from_ms(100),
    mtu: 1514,
};
/// What a packet counts as in the qdisc (an Ethernet header on it) and in
/// a TXQ (802.11 header and LLC/SNAP on it).
const QDISC_HEADER: u32 = 14;
/// ath9k's `ATH_MAX_QDEPTH` (`ATH_TXBUF / 4 - ATH_TXBUF_RESERVE`): the
/// frames the driver takes per hardware queue before mac80211 stops the
/// interface's queue (and the qdisc holds the rest).
const DRIVER_DEPTH: usize = 512 / 4 - 5;
const TXQ_HEADER: u32 = 24 + 8;

/// A data MSDU waiting for the channel.
#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub msdu: Msdu,
    /// It arrived with at least `ATH_FF_TXQMIN` frames ahead of it, so
    /// madwifi would have staged it to wait for a fast-frame partner.
    pub stageable: bool,
}

/// Why the queue let an MSDU go unsent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue was full.
    Overflow,
    /// CoDel dropped it at dequeue.
    Codel,
    /// The radio changed channel or went off.
    Flush,
}

/// Sojourn-time histogram edges, ms: bucket `i` counts sojourns below
/// `SOJOURN_EDGES_MS[i]` (and at or above the edge before); the last
/// bucket counts the rest.
pub const SOJOURN_EDGES_MS: [u64; 9] = [1, 5, 20, 50, 100, 200, 500, 1000, 5000];

/// A node's queue counters over the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub kind: QueueKind,
    pub enqueued: u64,
    /// Handed to the DCF.
    pub dequeued: u64,
    pub drops_overflow: u64,
    pub drops_codel: u64,
    /// From enqueue to dequeue, of the dequeued.
    pub sojourn_total: SimTime,
    pub sojourn_max: SimTime,
    pub sojourn_hist: [u64; SOJOURN_EDGES_MS.len() + 1],
    /// Airtime of frames sent to and received from each peer (every
    /// attempt, management too), in first-seen order.
    pub airtime: Vec<(NodeId, Airtime)>,
}

/// Airtime to and from one peer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Airtime {
    pub tx: SimTime,
    pub rx: SimTime,
}

impl QueueStats {
    fn sojourn(&mut self, s: SimTime) {
        self.dequeued += 1;
        self.sojourn_total = self.sojourn_total + s;
        self.sojourn_max = self.sojourn_max.max(s);
        let ms = s.as_ns() / 1_000_000;
        let i = SOJOURN_EDGES_MS.iter().position(|&e| ms < e);
        self.sojourn_hist[i.unwrap_or(SOJOURN_EDGES_MS.len())] += 1;
    }

    fn airtime_of(&mut self, peer: NodeId) -> &mut Airtime {
        let i = match self.airtime.iter().position(|(p, _)| *p == peer) {
            Some(i) => i,
            None => {
                self.airtime.push((peer, Airtime::default()));
                self.airtime.len() - 1
            }
        };
        &mut self.airtime[i].1
    }
}

enum Inner {
    Fifo(VecDeque<(Queued, SimTime)>),
    /// The qdisc, and the driver's FIFO under it.
    FqCodel(Fq, VecDeque<(Queued, SimTime)>),
    Airtime(Txqs),
}

/// One node's data queue.
pub struct TxQueue {
    inner: Inner,
    /// fifo: the frames it holds.
    limit: usize,
    /// The packet the TXQ scheduler picked for the DCF before the DCF took
    /// it (to ask rate control for its receiver).
    staged: Option<Item>,
    dropped: Vec<(Msdu, DropCause)>,
    stats: QueueStats,
    scratch: Vec<Item>,
}

/// A flow hash of what `msdu` carries (the kernel's flow dissector sees
/// addresses, protocol and ports; here, node ids stand for addresses):
/// FNV-1a, fixed, so that runs repeat.
fn flow_hash(msdu: &Msdu) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    mix(u64::from(msdu.dst.trace_id()));
    let packet = |p: &Packet, mix: &mut dyn FnMut(u64)| {
        mix(u64::from(p.src.0));
        mix(u64::from(p.dst.0));
        match &p.body {
            Body::Tcp(s) => {
                mix(6);
                mix((u64::from(s.src_port) << 16) | u64::from(s.dst_port));
            }
            Body::Udp { datagram, .. } => {
                mix(17);
                mix((u64::from(datagram.src_port) << 16) | u64::from(datagram.dst_port));
            }
            Body::Arp { .. } => mix(0x0806),
            Body::Dhcp { .. } => mix(67),
            Body::Beacon { .. } => mix(0xbeac),
            // An emulated host's IPv4 packet: its protocol and ports, as
            // the flow dissector reads them from the headers.
            Body::Real(bytes) => {
                mix(u64::from(bytes.get(9).copied().unwrap_or(0)));
                let ihl = usize::from(bytes.first().map_or(0, |b| b & 0x0f)) * 4;
                if let Some(ports) = bytes.get(ihl..ihl + 4) {
                    mix(u64::from(u32::from_be_bytes([ports[0], ports[1], ports[2], ports[3]])));
                }
            }
        }
    };
    match &msdu.payload {
        Payload::Packet(p) => packet(p, &mut mix),
        Payload::FastFrame(pair) => packet(&pair[0], &mut mix),
        Payload::Datagram { app, .. } => mix(u64::from(*app)),
        Payload::Raw
        | Payload::Mgmt(_)
        | Payload::Aggregate(..)
        | Payload::BlockAck { .. }
        | Payload::BlockAckReq { .. } => {}
    }
    h
}

impl TxQueue {
    /// A queue of `kind`; `limit` bounds a fifo (the flow queues have
    /// their kernels' own limits).
    pub fn new(kind: QueueKind, limit: usize) -> TxQueue {
        let inner = match kind {
            QueueKind::Fifo => Inner::Fifo(VecDeque::new()),
            QueueKind::FqCodel => {
                let mut fq = Fq::new(FQ_CODEL);
                fq.add_tin();
                Inner::FqCodel(fq, VecDeque::new())
            }
            QueueKind::Airtime => Inner::Airtime(Txqs::default()),
        };
        TxQueue {
            inner,
            limit,
            staged: None,
            dropped: Vec::new(),
            stats: QueueStats {
                kind,
                ..QueueStats::default()
            },
            scratch: Vec::new(),
        }
    }

    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }

    pub fn len(&self) -> usize {
        usize::from(self.staged.is_some())
            + match &self.inner {
                Inner::Fifo(q) => q.len(),
                Inner::FqCodel(fq, driver) => fq.len() + driver.len(),
                Inner::Airtime(t) => t.len(),
            }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many more MSDUs the queue takes before its limit.
    pub fn room(&self) -> usize {
        let limit = match self.inner {
            Inner::Fifo(_) => self.limit,
            Inner::FqCodel(..) => FQ_CODEL.limit + DRIVER_DEPTH,
            Inner::Airtime(_) => txqs::FQ.limit,
        };
        limit.saturating_sub(self.len())
    }

    /// Queues `q`; false if the fifo was full (the MSDU is then among the
    /// dropped). A flow queue takes every MSDU and drops from its fattest
    /// flow when over its limits.
    pub fn push(&mut self, now: SimTime, q: Queued) -> bool {
        if self.room() == 0 && matches!(self.inner, Inner::Fifo(_)) {
            self.stats.drops_overflow += 1;
            self.dropped.push((q.msdu, DropCause::Overflow));
            return false;
        }
        self.stats.enqueued += 1;
        let hash = flow_hash(&q.msdu);
        let dst = q.msdu.dst;
        let bytes = q.msdu.bytes;
        match &mut self.inner {
            Inner::Fifo(fifo) => fifo.push_back((q, now)),
            Inner::FqCodel(fq, _) => {
                let item = Item {
                    queued: q,
                    at: now,
                    len: bytes + QDISC_HEADER,
                };
                fq.enqueue(0, hash, item, &mut self.scratch);
            }
            Inner::Airtime(t) => {
                let item = Item {
                    queued: q,
                    at: now,
                    len: bytes + TXQ_HEADER,
                };
                t.enqueue(dst, hash, item, &mut self.scratch);
            }
        }
        self.collect(DropCause::Overflow);
        self.refill_driver(now);
        true
    }

    /// fq_codel: the driver takes frames from the qdisc while it has room
    /// (what CoDel drops on the way is among the dropped).
    fn refill_driver(&mut self, now: SimTime) {
        if let Inner::FqCodel(fq, driver) = &mut self.inner {
            while driver.len() < DRIVER_DEPTH {
                let Some(item) = fq.dequeue(now, 0, &FQ_CODEL_CODEL, &mut self.scratch) else {
                    break;
                };
                driver.push_back((item.queued, item.at));
            }
            self.collect(DropCause::Codel);
        }
    }

    fn collect(&mut self, cause: DropCause) {
        for item in self.scratch.drain(..) {
            match cause {
                DropCause::Overflow => self.stats.drops_overflow += 1,
                DropCause::Codel => self.stats.drops_codel += 1,
                DropCause::Flush => {}
            }
            self.dropped.push((item.queued.msdu, cause));
        }
    }

    /// What the queue dropped since last asked, oldest first.
    pub fn take_dropped(&mut self) -> std::vec::Drain<'_, (Msdu, DropCause)> {
        self.dropped.drain(..)
    }

    /// The MSDU that goes next, without taking it. mac80211's scheduler
    /// decides here (and CoDel may drop); the MSDU then waits for
    /// [`Self::pop`].
    pub fn peek(&mut self, now: SimTime) -> Option<&Queued> {
        if !matches!(self.inner, Inner::Airtime(_)) {
            return self.head();
        }
        if self.staged.is_none() {
            self.staged = match &mut self.inner {
                Inner::Airtime(t) => t.dequeue(now, &mut self.scratch),
                _ => None,
            };
            self.collect(DropCause::Codel);
        }
        self.staged.as_ref().map(|i| &i.queued)
    }

    /// The head of the fifo, or of the driver's FIFO under fq_codel.
    fn head(&self) -> Option<&Queued> {
        match &self.inner {
            Inner::Fifo(q) | Inner::FqCodel(_, q) => q.front().map(|(q, _)| q),
            Inner::Airtime(_) => None,
        }
    }

    /// The fifo's head (for joining a fast frame); `None` for a flow queue,
    /// which madwifi's fast frames do not apply to.
    pub fn fifo_front(&self) -> Option<&Queued> {
        match &self.inner {
            Inner::Fifo(q) => q.front().map(|(q, _)| q),
            _ => None,
        }
    }

    /// madwifi's staging flush at a completion (`ath_tx_processq`), for
    /// the fifo: a packet at the tail still held for a fast-frame partner
    /// goes alone if fewer than `min` frames are ahead of it (a held
    /// packet and the one behind it counting as one fast frame). Flow
    /// queues hold nothing back.
    pub fn flush_staged(&mut self, min: usize) {
        let Inner::Fifo(q) = &mut self.inner else {
            return;
        };
        let (mut ahead, mut i) = (0, 0);
        while i + 1 < q.len() {
            i += if q[i].0.stageable { 2 } else { 1 };
            ahead += 1;
        }
        if i + 1 == q.len() && q[i].0.stageable && ahead < min {
            q[i].0.stageable = false;
        }
    }

    /// Takes the MSDU that goes next.
    pub fn pop(&mut self, now: SimTime) -> Option<Queued> {
        let (q, at) = match &mut self.inner {
            Inner::Fifo(fifo) => fifo.pop_front()?,
            Inner::FqCodel(_, driver) => {
                let next = driver.pop_front()?;
                self.refill_driver(now);
                next
            }
            Inner::Airtime(_) => {
                self.peek(now)?;
                let item = self.staged.take()?;
                (item.queued, item.at)
            }
        };
        self.stats.sojourn(now - at);
        Some(q)
    }

    /// Empties the queue (the radio changes channel or goes off); what it
    /// held is among the dropped.
    pub fn flush(&mut self) {
        let items: Vec<Queued> = match &mut self.inner {
            Inner::Fifo(q) => q.drain(..).map(|(q, _)| q).collect(),
            Inner::FqCodel(fq, driver) => {
                let mut all: Vec<Queued> = driver.drain(..).map(|(q, _)| q).collect();
                all.extend(fq.drain().into_iter().map(|i| i.queued));
                all
            }
            Inner::Airtime(t) => t.drain().into_iter().map(|i| i.queued).collect(),
        };
        let staged = self.staged.take().map(|i| i.queued);
        for q in staged.into_iter().chain(items) {
            self.dropped.push((q.msdu, DropCause::Flush));
        }
    }

    /// Airtime spent sending to `peer` (every attempt of one MSDU).
    pub fn charge_tx(&mut self, peer: NodeId, airtime: SimTime) {
        let a = self.stats.airtime_of(peer);
        a.tx = a.tx + airtime;
        if let Inner::Airtime(t) = &mut self.inner {
            t.charge(peer, airtime);
        }
    }

    /// Airtime of a frame received from `peer`.
    pub fn charge_rx(&mut self, peer: NodeId, airtime: SimTime) {
        let a = self.stats.airtime_of(peer);
        a.rx = a.rx + airtime;
        if let Inner::Airtime(t) = &mut self.inner {
            t.charge(peer, airtime);
        }
    }
}
