//! Store-carry-forward routing of many messages over a vehicle trace, as
//! The ONE (Keränen et al. 2009) models it: its routers (`router`), its
//! messages and generator (`message`), its per-host buffers, and its
//! `MessageStatsReport` (`stats`).
//!
//! The rules, each The ONE's (`routing/ActiveRouter.java`,
//! `core/CBRConnection.java`, `interfaces/SimpleBroadcastInterface.java`):
//! - Every vehicle of the trace is a host, numbered in order of first
//!   appearance (the numbering `one::write` gives The ONE). Two present
//!   hosts within range have a link; links come up and go down at trace
//!   steps, and each host keeps its links in the order they came up
//!   (`links`).
//! - A host takes part in one transfer at a time, sending or receiving. A
//!   transfer of `size` bytes takes `size / speed` seconds; when its time
//!   is up it completes, whatever the link does at that step; a link that
//!   goes down before aborts it, and the partial copy is lost.
//! - At every step the hosts update in an order shuffled for the step.
//!   A host first finishes or aborts its transfer, drops expired messages
//!   (every 60 s, when not sending), then, when idle, asks its router for
//!   a transfer (see `router`). Messages are tried in a random order
//!   shuffled for the step (The ONE's default `sendQueue`) or oldest
//!   first.
//! - Buffers: a host makes room for an incoming or new message by
//!   dropping the copies it received longest ago (not the one it is
//!   sending); a message larger than the buffer is refused.
//! - A message reaching its destination is delivered, not buffered; a
//!   host never takes a message it holds or has had delivered.
//!
//! Where we differ: links come up for all hosts before any host updates
//! (The ONE interleaves each host's link scan with its update), and
//! draws are ours, not Java's `Random`.

pub mod message;
pub mod router;
pub mod stats;

use std::collections::HashSet;

use wayside_sim::rng::Stream;

use crate::links::Links;
use crate::trace::{Step, Trace};
use message::Message;
use router::{Predictabilities, Router};
use stats::{HostStats, MessageFate, Stats};

/// The ONE's `ActiveRouter.TTL_CHECK_INTERVAL`, s.
pub const TTL_CHECK_S: f64 = 60.0;

/// In which order a host tries its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// Shuffled at every step (The ONE's default).
    Random,
    /// Oldest received first.
    Fifo,
}

/// Settings of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub router: Router,
    pub range_m: f64,
    /// Link speed, bytes per second.
    pub speed: f64,
    /// Buffer size per host, bytes.
    pub buffer: u64,
    pub queue: Queue,
    pub seed: u64,
    pub run: u64,
}

/// A run that cannot be made; the message names the setting.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DtnError(pub String);

#[derive(Clone, Debug)]
struct Held {
    msg: u32,
    received: f64,
    copies: u32,
    /// Hosts the copy has visited, the source first.
    path: Vec<u32>,
}

#[derive(Debug)]
struct Transfer {
    to: u32,
    copy: Held,
    done_at: f64,
}

#[derive(Debug, Default)]
struct Host {
    buffer: Vec<Held>,
    /// The messages in `buffer`, for quick look-up.
    held: HashSet<u32>,
    used: u64,
    delivered: HashSet<u32>,
    sending: Option<Transfer>,
    receiving_from: Option<u32>,
    last_ttl_check: f64,
    preds: Predictabilities,
}

impl Host {
    fn busy(&self) -> bool {
        self.sending.is_some() || self.receiving_from.is_some()
    }
    fn holds(&self, msg: u32) -> bool {
        self.held.contains(&msg)
    }
}

enum Start {
    Ok,
    Busy,
    Denied,
}

/// The engine: feed [`Dtn::step`] in time order, then [`Dtn::finish`].
#[derive(Debug)]
pub struct Dtn {
    s: Settings,
    messages: Vec<Message>,
    next_msg: usize,
    hosts: Vec<Host>,
    points: Vec<(f32, f32)>,
    links: Links,
    order: Vec<u32>,
    /// Buffered copies, anywhere, per destination host.
    for_dest: Vec<u32>,
    rng: Stream,
    now: f64,
    stats: Stats,
}

impl Dtn {
    /// A run over `hosts` hosts with `messages` (in creation order).
    pub fn new(hosts: usize, messages: Vec<Message>, s: Settings) -> Result<Self, DtnError> {
        if !(s.range_m > 0.0 && s.range_m.is_finite() && s.speed > 0.0 && s.speed.is_finite()) {
            return Err(DtnError(format!(
                "range {} m and speed {} B/s must be positive",
                s.range_m, s.speed
            )));
        }
        if let Some(m) = messages.iter().find(|m| {
            m.from as usize >= hosts
                || m.to as usize >= hosts
                || m.also_at.iter().any(|&h| h as usize >= hosts)
        }) {
            return Err(DtnError(format!(
                "a message from host {} (also at {:?}) to host {}: the trace has {hosts} hosts (0 to {})",
                m.from,
                m.also_at,
                m.to,
                hosts.saturating_sub(1)
            )));
        }
        if messages.windows(2).any(|w| w[1].created < w[0].created) {
            return Err(DtnError("messages must come in order of creation".into()));
        }
        let stats = Stats {
            hosts: vec![HostStats::default(); hosts],
            messages: vec![
                MessageFate {
                    delivered_at: None,
                    hops: None,
                    relayed: 0
                };
                messages.len()
            ],
            ..Stats::default()
        };
        Ok(Dtn {
            links: Links::new(hosts, s.range_m),
            rng: Stream::new("run", s.seed, s.run, "dtn/order"),
            s,
            messages,
            next_msg: 0,
            hosts: (0..hosts).map(|_| Host::default()).collect(),
            points: Vec::new(),
            order: (0..hosts as u32).collect(),
            for_dest: vec![0; hosts],
            now: 0.0,
            stats,
        })
    }

    /// Advances to the trace step `st`.
    pub fn step(&mut self, st: Step<'_>) {
        self.now = st.time;
        self.update_links(st);
        while let Some(m) = self
            .messages
            .get(self.next_msg)
            .filter(|m| m.created <= self.now)
        {
            let (size, to) = (m.size, m.to);
            let at: Vec<u32> = std::iter::once(m.from)
                .chain(m.also_at.iter().copied())
                .collect();
            let id = self.next_msg as u32;
            self.next_msg += 1;
            self.stats.created += 1;
            for from in at {
                if self.hosts[from as usize].holds(id) {
                    continue;
                }
                self.make_room(from, size);
                self.for_dest[to as usize] += 1;
                let h = &mut self.hosts[from as usize];
                h.held.insert(id);
                h.buffer.push(Held {
                    msg: id,
                    received: self.now,
                    copies: self.s.router.initial_copies(),
                    path: vec![from],
                });
                h.used += size;
                self.stats.hosts[from as usize].created += 1;
            }
        }
        let n = self.order.len();
        for i in (1..n).rev() {
            let j = self.rng.integer_inclusive(i as u32) as usize;
            self.order.swap(i, j);
        }
        for i in 0..n {
            let h = self.order[i];
            self.update_host(h);
        }
    }

    fn update_links(&mut self, st: Step<'_>) {
        self.points.clear();
        self.points
            .extend(st.x.iter().copied().zip(st.y.iter().copied()));
        self.links.update(st.vehicle, &self.points);
        if let Router::Prophet(q) = &self.s.router {
            for &(a, b) in self.links.came_up() {
                for (x, y) in [(a, b), (b, a)] {
                    let mut theirs = std::mem::take(&mut self.hosts[y as usize].preds);
                    self.hosts[x as usize]
                        .preds
                        .encounter(x, y, &mut theirs, self.now, q);
                    self.hosts[y as usize].preds = theirs;
                }
            }
        }
    }

    fn update_host(&mut self, h: u32) {
        let hi = h as usize;
        if let Some(t) = self.hosts[hi].sending.take() {
            if self.now >= t.done_at - 1e-9 {
                self.transfer_done(h, t);
            } else if !self.links.linked(h, t.to) {
                self.hosts[t.to as usize].receiving_from = None;
                self.stats.aborted += 1;
                self.stats.hosts[t.to as usize].aborted += 1;
            } else {
                self.hosts[hi].sending = Some(t);
            }
        }
        let host = &self.hosts[hi];
        if self.now - host.last_ttl_check >= TTL_CHECK_S && host.sending.is_none() {
            self.drop_expired(h);
        }
        let host = &self.hosts[hi];
        if host.busy() || host.buffer.is_empty() || self.links.of(h).is_empty() {
            return;
        }
        self.route(h);
    }

    fn transfer_done(&mut self, from: u32, t: Transfer) {
        let to = t.to;
        let mut copy = t.copy;
        let msg = copy.msg;
        self.hosts[to as usize].receiving_from = None;
        self.stats.relayed += 1;
        self.stats.messages[msg as usize].relayed += 1;
        self.stats.hosts[from as usize].sent += 1;
        let got = &mut self.stats.hosts[to as usize];
        got.received += 1;
        got.first_received.get_or_insert(self.now);
        let m = &self.messages[msg as usize];
        if m.to == to {
            if self.hosts[to as usize].delivered.insert(msg) {
                self.stats.delivered += 1;
                self.stats.hosts[to as usize].delivered_to += 1;
                let hops = copy.path.len() as u32 - 1;
                self.stats.latencies.push(self.now - m.created);
                self.stats.hop_counts.push(hops);
                let fate = &mut self.stats.messages[msg as usize];
                fate.delivered_at = Some(self.now);
                fate.hops = Some(hops);
            }
        } else {
            let size = m.size;
            if let Router::SprayAndWait { .. } = self.s.router {
                copy.copies /= 2;
            }
            copy.received = self.now;
            self.for_dest[m.to as usize] += 1;
            let r = &mut self.hosts[to as usize];
            r.held.insert(copy.msg);
            r.buffer.push(copy);
            r.used += size;
        }
        let s = &mut self.hosts[from as usize];
        match self.s.router {
            Router::SprayAndWait { .. } => {
                if let Some(own) = s.buffer.iter_mut().find(|c| c.msg == msg) {
                    own.copies = own.copies.div_ceil(2);
                }
            }
            Router::FirstContact => {
                self.remove(from, msg, false);
            }
            _ => {}
        }
    }

    /// Removes `msg` from `h`'s buffer, counted as dropped or removed.
    fn remove(&mut self, h: u32, msg: u32, dropped: bool) {
        let host = &mut self.hosts[h as usize];
        let Some(k) = host.buffer.iter().position(|c| c.msg == msg) else {
            return;
        };
        let c = host.buffer.remove(k);
        host.held.remove(&msg);
        host.used -= self.messages[msg as usize].size;
        self.for_dest[self.messages[msg as usize].to as usize] -= 1;
        self.stats.buffer_times.push(self.now - c.received);
        if dropped {
            self.stats.dropped += 1;
            self.stats.hosts[h as usize].dropped += 1;
        } else {
            self.stats.removed += 1;
        }
    }

    fn drop_expired(&mut self, h: u32) {
        let expired: Vec<u32> = self.hosts[h as usize]
            .buffer
            .iter()
            .filter(|c| self.messages[c.msg as usize].expired(self.now))
            .map(|c| c.msg)
            .collect();
        for m in expired {
            self.remove(h, m, true);
        }
        self.hosts[h as usize].last_ttl_check = self.now;
    }

    /// Drops the oldest copies (not the one being sent) until `size` fits;
    /// false when it cannot.
    fn make_room(&mut self, h: u32, size: u64) -> bool {
        if size > self.s.buffer {
            return false;
        }
        loop {
            let host = &self.hosts[h as usize];
            if self.s.buffer - host.used.min(self.s.buffer) >= size {
                return true;
            }
            let sending = host.sending.as_ref().map(|t| t.copy.msg);
            let oldest = host
                .buffer
                .iter()
                .filter(|c| Some(c.msg) != sending)
                .min_by(|a, b| a.received.total_cmp(&b.received))
                .map(|c| c.msg);
            match oldest {
                Some(m) => self.remove(h, m, true),
                None => return false,
            }
        }
    }

    /// The buffer of `h` in the order its router tries it.
    fn queue(&mut self, h: u32) -> Vec<usize> {
        let host = &self.hosts[h as usize];
        let mut idx: Vec<usize> = (0..host.buffer.len()).collect();
        match self.s.queue {
            Queue::Fifo => {
                idx.sort_by(|&a, &b| host.buffer[a].received.total_cmp(&host.buffer[b].received))
            }
            Queue::Random => {
                for i in (1..idx.len()).rev() {
                    idx.swap(i, self.rng.integer_inclusive(i as u32) as usize);
                }
            }
        }
        idx
    }

    fn start(&mut self, from: u32, to: u32, k: usize) -> Start {
        let (fi, ti) = (from as usize, to as usize);
        if self.hosts[ti].busy() || self.hosts[fi].busy() {
            return Start::Busy;
        }
        let c = &self.hosts[fi].buffer[k];
        let m = &self.messages[c.msg as usize];
        let r = &self.hosts[ti];
        if r.holds(c.msg)
            || r.delivered.contains(&c.msg)
            || (self.s.router == Router::FirstContact && c.path.contains(&to))
            || (m.expired(self.now) && m.to != to)
        {
            return Start::Denied;
        }
        let (msg, size) = (c.msg, m.size);
        // The ONE makes room even for a message to its destination.
        if !self.make_room(to, size) {
            return Start::Denied;
        }
        let mut copy = self.hosts[fi].buffer[k].clone();
        copy.path.push(to);
        self.hosts[fi].sending = Some(Transfer {
            to,
            copy,
            done_at: self.now + size as f64 / self.s.speed,
        });
        self.hosts[ti].receiving_from = Some(from);
        self.stats.started += 1;
        debug_assert_eq!(self.hosts[fi].buffer[k].msg, msg);
        Start::Ok
    }

    fn route(&mut self, h: u32) {
        let queue = self.queue(h);
        let links = self.links.of(h).to_vec();
        // Messages for a neighbour first, ours then theirs.
        for &k in &queue {
            let to = self.messages[self.hosts[h as usize].buffer[k].msg as usize].to;
            if links.contains(&to) && matches!(self.start(h, to, k), Start::Ok) {
                return;
            }
        }
        let wanted = if self.for_dest[h as usize] > 0 {
            &links[..]
        } else {
            &[]
        };
        for &p in wanted {
            let theirs: Vec<usize> = (0..self.hosts[p as usize].buffer.len())
                .filter(|&k| self.messages[self.hosts[p as usize].buffer[k].msg as usize].to == h)
                .collect();
            for k in theirs {
                if matches!(self.start(p, h, k), Start::Ok) {
                    return;
                }
            }
        }
        match self.s.router.clone() {
            Router::DirectDelivery => {}
            Router::Epidemic | Router::FirstContact => self.try_all(h, &queue, &links),
            Router::SprayAndWait { .. } => {
                let left: Vec<usize> = queue
                    .into_iter()
                    .filter(|&k| self.hosts[h as usize].buffer[k].copies > 1)
                    .collect();
                self.try_all(h, &left, &links);
            }
            Router::Prophet(q) => {
                let now = self.now;
                let mut tuples: Vec<(f64, usize, u32)> = Vec::new();
                for &p in &links {
                    if self.hosts[p as usize].busy() {
                        continue;
                    }
                    for &k in &queue {
                        let msg = self.hosts[h as usize].buffer[k].msg;
                        if self.hosts[p as usize].holds(msg) {
                            continue;
                        }
                        let dest = self.messages[msg as usize].to;
                        let theirs = self.hosts[p as usize].preds.of(dest, now, &q);
                        if theirs > self.hosts[h as usize].preds.of(dest, now, &q) {
                            tuples.push((theirs, k, p));
                        }
                    }
                }
                // Highest predictability first; ties keep the queue's order.
                tuples.sort_by(|a, b| b.0.total_cmp(&a.0));
                for (_, k, p) in tuples {
                    if matches!(self.start(h, p, k), Start::Ok) {
                        return;
                    }
                }
            }
        }
    }

    /// Every link in order, every message in queue order, until one starts;
    /// a busy neighbour is skipped.
    fn try_all(&mut self, h: u32, queue: &[usize], links: &[u32]) {
        for &p in links {
            for &k in queue {
                match self.start(h, p, k) {
                    Start::Ok => return,
                    Start::Busy => break,
                    Start::Denied => {}
                }
            }
        }
    }

    /// The counts of the run; transfers still under way are left out.
    pub fn finish(self) -> Stats {
        self.stats
    }
}

/// One run over a whole trace.
pub fn run(trace: &Trace, messages: Vec<Message>, s: Settings) -> Result<Stats, DtnError> {
    let mut d = Dtn::new(trace.vehicles(), messages, s)?;
    for st in trace.iter() {
        d.step(st);
    }
    Ok(d.finish())
}

#[cfg(test)]
mod tests;
