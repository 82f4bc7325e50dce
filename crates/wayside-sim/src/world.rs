//! The world: the nodes' stacks in an arena, what surrounds them
//! ([`Env`]: the event queue, their bodies, the radio medium, the wired
//! links, the experiment's script and the trace), and the event loop that
//! hands each event to the node it is for ([`crate::node`]).

use crate::apps::broadside::BroadsideEnd;
use crate::config::SimConfig;
use crate::env::{Body, Env};
use crate::event::{Event, EventQueue};
use crate::ids::NodeId;
use crate::medium::{Medium, RadioLimits};
use crate::mobility::Mobility;
use crate::net::route::AddressPlan;
use crate::node::Node;
use crate::ratectl::SnrMap;
use crate::rng::Stream;
use crate::script::Script;
use crate::trace::{ConnEvent, Trace};
use crate::units::{Db, Dbm, Meters, SimTime};
use std::sync::Arc;

/// Counters a run reports besides its trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    pub transmissions: u64,
    pub simulated: SimTime,
}

pub struct World {
    nodes: Vec<Node>,
    pub(crate) env: Env,
    duration: SimTime,
}

impl World {
    pub fn new(cfg: &SimConfig) -> World {
        let timing = cfg.radio.standard.timing(cfg.radio.b_compatible);
        let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        let bodies = cfg
            .nodes
            .iter()
            .map(|n| Body {
                mobility: n.mobility.clone(),
                antenna_height: n.antenna_height,
                antenna_gain: n.antenna_gain,
                tx_power: n.tx_power,
                radio: n.radio,
                channel: n.channel,
                on: n.appear == SimTime::ZERO,
            })
            .collect();
        let plan = Arc::new(AddressPlan::new(
            cfg.nodes.iter().map(|n| n.radio).collect(),
            cfg.nodes.iter().map(|n| n.dhcp).collect(),
        ));
        let nodes = cfg
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node::new(NodeId(i as u32), n, cfg, &timing, &plan))
            .collect();
        let radios = || cfg.nodes.iter().filter(|n| n.radio);
        let limits = RadioLimits {
            eirp: Dbm(radios()
                .map(|n| n.tx_power.0 + n.antenna_gain.0)
                .fold(f64::NEG_INFINITY, f64::max)),
            gain: Db(radios()
                .map(|n| n.antenna_gain.0)
                .fold(f64::NEG_INFINITY, f64::max)),
            height: Meters(radios().map(|n| n.antenna_height.0).fold(0.0, f64::max)),
            speed: radios().map(|n| n.mobility.max_speed()).fold(0.0, f64::max),
        };
        let medium = Medium::new(&cfg.channel, &names, cfg.seed, cfg.run, limits);
        let script = Script::new(
            &cfg.apps,
            cfg.mgmt.beacon_interval,
            Stream::new("run", cfg.seed, cfg.run, "script"),
        );
        let env = Env::new(
            EventQueue::new(),
            bodies,
            medium,
            cfg.radio.clone(),
            cfg.wires.clone(),
            script,
            cfg.pcap.sniffer,
        );
        let mut w = World {
            nodes,
            env,
            duration: cfg.duration,
        };
        for n in &mut w.nodes {
            n.apps.listen(&mut n.sockets);
            n.apps.start_sources();
            n.pump_apps(&mut w.env, SimTime::ZERO);
        }
        for s in w.env.script.timed() {
            w.env.schedule_start(s);
        }
        for n in &mut w.nodes {
            n.power_schedule(&mut w.env);
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

    /// Runs to the configured duration and returns the trace (and the capture).
    pub fn run(
        mut self,
    ) -> (
        Trace,
        RunStats,
        Option<crate::pcap::Capture>,
        Vec<BroadsideEnd>,
    ) {
        self.run_events();
        self.sockets_finish();
        let ends = self
            .nodes
            .iter_mut()
            .flat_map(|n| n.apps.finish_broadside())
            .collect();
        let env = self.env;
        let stats = RunStats {
            events: env.queue.processed(),
            transmissions: env.medium.transmissions(),
            simulated: self.duration,
        };
        (env.trace, stats, env.capture, ends)
    }

    /// Processes events up to the configured duration.
    pub(crate) fn run_events(&mut self) {
        while let Some(t) = self.env.queue.peek_time() {
            if t > self.duration {
                break;
            }
            let (now, ev) = self.env.queue.pop().expect("peeked");
            self.dispatch(now, ev);
        }
    }

    fn dispatch(&mut self, now: SimTime, ev: Event) {
        let env = &mut self.env;
        // A radio that is off hears nothing and its timers are void.
        let off = |env: &Env, n: NodeId| !env.bodies[n.index()].on;
        match ev {
            Event::RxStart { node, tx } | Event::RxEnd { node, tx } | Event::TxEnd { node, tx }
                if off(env, node) =>
            {
                env.medium.release(tx)
            }
            Event::Mac { node, .. }
            | Event::Mgmt { node, .. }
            | Event::Adhoc { node, .. }
            | Event::Net { node, .. }
            | Event::WireArrive { node, .. }
                if off(env, node) => {}
            Event::RxStart { node, tx } => self.nodes[node.index()].on_rx_start(env, now, tx),
            Event::RxEnd { node, tx } => self.nodes[node.index()].on_rx_end(env, now, tx),
            Event::TxEnd { node, tx } => self.nodes[node.index()].on_tx_end(env, now, tx),
            Event::Mac {
                node,
                timer,
                generation,
            } => self.nodes[node.index()].on_mac_timer(env, now, timer, generation),
            Event::Traffic { node, source } => self.nodes[node.index()].on_emit(env, now, source),
            Event::Mgmt {
                node,
                timer,
                generation,
            } => self.nodes[node.index()].on_mgmt_timer(env, now, timer, generation),
            Event::Adhoc {
                node,
                timer,
                generation,
            } => self.nodes[node.index()].on_adhoc_timer(env, now, timer, generation),
            Event::Net {
                node,
                timer,
                generation,
            } => self.nodes[node.index()].on_net_timer(env, now, timer, generation),
            Event::WireArrive { node, link, frame } => {
                self.nodes[node.index()].on_wire_arrive(env, now, link as usize, *frame)
            }
            Event::Tcp {
                node,
                socket,
                generation,
            } => self.nodes[node.index()].on_tcp_timer(env, now, socket, generation),
            Event::App { node, app } => self.nodes[node.index()].on_app(env, now, app),
            Event::Power { node, on } => self.nodes[node.index()].on_power(env, now, on),
        }
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
            self.env
                .conn_event(t, node, peer.0, ConnEvent::LastData, bytes as f64);
        }
    }
}
