//! The world: the nodes' stacks in an arena, what surrounds them (the
//! air: their bodies and the radio medium; the event queue, the wired
//! links, the experiment's script and the trace), and the event loop that
//! hands each event to the node it is for ([`crate::node`]) and applies
//! what the node wants done ([`effects`]).
//!
//! **Undetectable arrivals.** A frame whose preamble a radio cannot detect
//! ([`crate::air::UNDETECTABLE`]) only adds to what the radio hears, and
//! takes the draw a detection would: it changes nothing the radio does
//! until its next event. So its start and end at that radio are not put in
//! the queue: each takes the key it would have had there
//! ([`EventQueue::reserve`]) and waits in the radio's own queue of such
//! arrivals, and the radio runs them in key order just before its next
//! event, before the end of the run, or when many are waiting. What they
//! add to the interference a receiver decodes against, and the draws they
//! take, are then exactly those of a run that queues them, and their
//! drops are counted ([`crate::trace::Undetectable`]) instead of written
//! as `frames` rows. `radio.undetectable_rows` queues them as any
//! other arrival and keeps the rows.

mod attach;
mod effects;
mod stream;
mod undetectable;

pub use attach::{Attachment, Refused, REAL_APP};

use crate::air::Air;
use crate::apps::broadside::BroadsideEnd;
use crate::config::SimConfig;
use crate::event::{Event, EventQueue, Key};
use crate::ids::{NodeId, TxId};
use crate::node::effects::Effects;
use crate::node::Node;
use crate::pcap::Capture;
use crate::ratectl::SnrMap;
use crate::rng::Stream;
use crate::script::Script;
use crate::trace::{ConnEvent, Trace};
use crate::units::SimTime;
use crate::wire::WiredLink;
use std::sync::Arc;

/// Counters a run reports besides its trace.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    pub transmissions: u64,
    pub simulated: SimTime,
    /// Each node's data-queue counters, in node order.
    pub queues: Vec<crate::mac::queue::QueueStats>,
}

pub struct World {
    nodes: Vec<Node>,
    air: Air,
    queue: EventQueue,
    trace: Trace,
    wires: Vec<WiredLink>,
    script: Script,
    /// The pcap files the frame rows also go to, if any.
    pub(crate) capture: Option<Capture>,
    /// The node that records every frame it hears, if any.
    sniffer: Option<NodeId>,
    /// Each node's `frames` row of the transmission now awaiting its ACK or
    /// CTS, to fill in its outcome (numbered from the run's first row).
    awaiting: Vec<Option<usize>>,
    /// Where the trace streams to, if anywhere ([`stream`]).
    stream: Option<stream::Stream>,
    /// `frames` rows already streamed.
    flushed_frames: usize,
    /// What the node handling the current event wants done (reused).
    effects: Effects,
    /// Scratch: the radios a transmission reaches, with their delays and
    /// whether the preamble is undetectable there.
    reached: Vec<(NodeId, SimTime, bool)>,
    /// Per node, the arrivals of undetectable preambles still to run
    /// (empty when the rows are kept).
    waiting: Vec<undetectable::Waiting>,
    /// Undetectable arrivals are queued and their rows kept.
    undetectable_rows: bool,
    duration: SimTime,
    /// The real hosts' packets and flows, when real hosts are attached.
    attachment: Attachment,
}

impl World {
    pub fn new(cfg: &SimConfig) -> World {
        let nodes = Node::all(cfg);
        let script = Script::new(
            &cfg.apps,
            cfg.mgmt.beacon_interval,
            Stream::new("run", cfg.seed, cfg.run, "script"),
        );
        let mut w = World {
            awaiting: vec![None; nodes.len()],
            nodes,
            air: Air::new(cfg),
            queue: EventQueue::new(),
            trace: Trace::default(),
            wires: cfg.wires.clone(),
            script,
            capture: None,
            sniffer: cfg.pcap.sniffer,
            effects: Effects::default(),
            reached: Vec::new(),
            waiting: Vec::new(),
            stream: None,
            flushed_frames: 0,
            undetectable_rows: cfg.radio.undetectable_rows,
            duration: cfg.duration,
            attachment: Attachment::default(),
        };
        w.waiting.resize_with(w.nodes.len(), Default::default);
        w.trace.undetectable.drops = vec![[0; 3]; w.nodes.len()];
        for i in 0..w.nodes.len() {
            let n = &mut w.nodes[i];
            n.apps.listen(&mut n.sockets);
            n.apps.start_sources();
            n.pump_apps(&mut w.effects, SimTime::ZERO);
            w.apply(NodeId(i as u32), SimTime::ZERO);
        }
        for s in w.script.timed() {
            w.schedule_start(s);
        }
        for i in 0..w.nodes.len() {
            w.nodes[i].power_schedule(&mut w.effects);
            w.apply(NodeId(i as u32), SimTime::ZERO);
        }
        w
    }

    /// Starts each node whose rate control learns from the map given for
    /// it (what earlier passes learned).
    pub(crate) fn set_priors(&mut self, maps: &[Option<Arc<SnrMap>>]) {
        for (n, map) in self.nodes.iter_mut().zip(maps) {
            if let Some(map) = map {
                n.dcf.links_mut().set_prior(Arc::clone(map));
            }
        }
    }

    /// What each node's rate control knows after this pass (`None` where it
    /// does not learn).
    pub(crate) fn learned(&self) -> Vec<Option<Arc<SnrMap>>> {
        self.nodes
            .iter()
            .map(|n| n.dcf.links().learned().map(Arc::new))
            .collect()
    }

    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.cfg.name.clone()).collect()
    }

    /// Ends the run where it stands and returns the trace (and the
    /// capture).
    pub fn finish(
        mut self,
    ) -> (
        Trace,
        RunStats,
        Option<crate::pcap::Capture>,
        Vec<BroadsideEnd>,
    ) {
        let end = Key::after(self.duration);
        for i in 0..self.nodes.len() {
            self.run_undetectable(NodeId(i as u32), end);
        }
        self.sockets_finish();
        self.hosts_finish();
        self.stream_batches(true);
        let ends = self
            .nodes
            .iter_mut()
            .flat_map(|n| n.apps.finish_broadside())
            .collect();
        let stats = RunStats {
            events: self.queue.processed(),
            transmissions: self.air.medium.transmissions(),
            simulated: self.duration,
            queues: self.nodes.iter().map(|n| n.dcf.queue_stats().clone()).collect(),
        };
        (self.trace, stats, self.capture, ends)
    }

    /// Processes events up to the configured duration.
    pub(crate) fn run_events(&mut self) {
        while self.step().is_some() {}
    }

    /// Hands `ev` to the node it is for, which leaves what it wants done
    /// in the effects. Returns the node, and the transmission the event
    /// referred to (the medium releases it once the effects are applied).
    fn dispatch(&mut self, now: SimTime, ev: Event) -> (NodeId, Option<TxId>) {
        let (air, fx) = (&mut self.air, &mut self.effects);
        let node = ev.node();
        let n = &mut self.nodes[node.index()];
        // A radio that is off hears nothing and its timers are void.
        let on = n.radio().is_some();
        match ev {
            Event::RxStart { tx, .. } | Event::RxEnd { tx, .. } | Event::TxEnd { tx, .. }
                if !on =>
            {
                return (node, Some(tx))
            }
            Event::Mac { .. }
            | Event::Mgmt { .. }
            | Event::Adhoc { .. }
            | Event::Net { .. }
            | Event::WireArrive { .. }
                if !on => {}
            Event::RxStart { tx, .. } => {
                n.on_rx_start(air, fx, now, tx);
                return (node, Some(tx));
            }
            Event::RxEnd { tx, .. } => {
                n.on_rx_end(air, fx, now, tx);
                return (node, Some(tx));
            }
            Event::TxEnd { tx, .. } => {
                n.on_tx_end(fx, now, &air.medium.tx(tx).frame);
                return (node, Some(tx));
            }
            Event::Mac {
                timer, generation, ..
            } => n.on_mac_timer(air, fx, now, timer, generation),
            Event::Traffic { source, .. } => n.on_emit(fx, now, source),
            Event::Mgmt {
                timer, generation, ..
            } => n.on_mgmt_timer(fx, now, timer, generation),
            Event::Adhoc {
                timer, generation, ..
            } => n.on_adhoc_timer(fx, now, timer, generation),
            Event::Net {
                timer, generation, ..
            } => n.on_net_timer(fx, now, timer, generation),
            Event::WireArrive { link, frame, .. } => {
                n.on_wire_arrive(fx, now, link as usize, *frame)
            }
            Event::Tcp {
                socket, generation, ..
            } => n.on_tcp_timer(fx, now, socket, generation),
            Event::App { app, .. } => n.on_app(fx, now, app),
            Event::Power { on, .. } => n.on_power(fx, now, on),
        }
        (node, None)
    }

    /// At the end of a run: each receiving socket's last data byte, in time
    /// order.
    fn sockets_finish(&mut self) {
        let mut last: Vec<(SimTime, NodeId, NodeId, u64)> = Vec::new();
        for n in &self.nodes {
            last.extend(
                n.sockets
                    .last_data()
                    .map(|(t, peer, bytes)| (t, n.id, peer, bytes)),
            );
        }
        last.sort_by_key(|&(t, node, peer, _)| (t, node.0, peer.0));
        for (t, node, peer, bytes) in last {
            self.conn_event(t, node, peer.0, ConnEvent::LastData, bytes as f64);
        }
    }
}
