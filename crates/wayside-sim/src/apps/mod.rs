//! A node's applications as a sans-IO layer ([`Apps`]). Frame sources
//! exercise the link directly on the MAC — a saturating source (always a
//! frame waiting, [`saturate`]), constant bit rate, and a sounder that broadcasts probes
//! cycling through a list of rates (to measure delivery ratio per rate
//! against distance, as measurement studies do with broadcast probes).
//! Applications over IP are in [`ip`] and [`reqresp`]; they use this node's
//! sockets ([`crate::sockets::Sockets`]) as a program uses its OS's. When
//! an application starts is the experiment's script ([`crate::script`]).
//!
//! Inputs are the application's own timer (`handle_app`), packets and
//! socket notices for this host, and the MAC finishing a frame; outputs come
//! out of [`Apps::poll`] in the order they were produced.

pub mod broadside;
pub mod broadside_ip;
pub mod files;
pub mod ip;
pub mod reqresp;
pub mod saturate;

use crate::ids::{Dst, NodeId};
use crate::mac::{Msdu, Payload};
use crate::packet::Packet;
use crate::phy::mode::Mode;
use crate::ratectl::Stage;
use crate::trace::{ConnEvent, Proto};
use crate::units::SimTime;
use ip::{App, AppConfig};
use std::collections::VecDeque;

#[derive(Clone, Debug, PartialEq)]
pub enum SourceKind {
    Saturate,
    Cbr { interval: SimTime },
    Sounder { interval: SimTime, modes: Vec<Mode> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct SourceConfig {
    pub kind: SourceKind,
    pub from: NodeId,
    pub to: Dst,
    /// MSDU bytes per frame.
    pub payload: u32,
    pub start: SimTime,
    pub stop: SimTime,
}

struct Source {
    /// Its index in the scenario.
    id: u32,
    cfg: SourceConfig,
    next_mode: usize,
    /// Saturating: its MSDUs the MAC holds.
    queued: usize,
}

/// Data that arrived at an application: one row of the `transport` trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    pub peer: NodeId,
    pub proto: Proto,
    pub app: u32,
    /// The datagram's sequence number, or a TCP stream's bytes so far.
    pub seq: u64,
    pub bytes: u32,
    /// Since it was sent (zero where unknown, as for TCP).
    pub delay: SimTime,
}

/// What the applications ask of the node around them.
#[derive(Debug)]
pub enum AppOutput {
    /// A packet for the network layer.
    Packet(Packet),
    /// A frame for the MAC (frame sources).
    Frame(Msdu),
    /// A connection event for the trace.
    Conn {
        peer: NodeId,
        event: ConnEvent,
        value: f64,
    },
    /// A datagram arrived, over UDP or straight over the link.
    Datagram(Arrival),
    /// Application `app` wants to act at `at`.
    Wake { app: u32, at: SimTime },
    /// Frame source `source` wants to emit at `at`.
    Emit { source: u32, at: SimTime },
}

/// A node's applications: the IP applications with an end here, and the
/// frame sources sending from here.
pub struct Apps {
    me: NodeId,
    ip: Vec<App>,
    sources: Vec<Source>,
    /// On an ad hoc node, the peers it has a link to (frames to others go
    /// nowhere); `None` elsewhere.
    links: Option<Vec<NodeId>>,
    /// MSDUs a saturating source keeps at the MAC ([`saturate::BACKLOG`]).
    backlog: usize,
    out: VecDeque<AppOutput>,
}

impl Apps {
    /// The applications of `me` among the scenario's; `seed`: the run's
    /// (seed, run); `adhoc`: whether `me` is in ad hoc mode (its links
    /// then come from [`Apps::handle_link_up`] and [`Apps::handle_link_down`]).
    pub fn new(
        me: NodeId,
        apps: &[AppConfig],
        sources: &[SourceConfig],
        seed: (u64, u64),
        adhoc: bool,
    ) -> Apps {
        let ip = apps
            .iter()
            .enumerate()
            .filter(|(_, a)| a.from == me || a.to == me)
            .map(|(i, a)| App::new(me, i as u32, a.clone(), seed))
            .collect();
        let sources = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.from == me)
            .map(|(i, s)| Source {
                id: i as u32,
                cfg: s.clone(),
                next_mode: 0,
                queued: 0,
            })
            .collect();
        let links = adhoc.then(Vec::new);
        Apps {
            me,
            ip,
            sources,
            links,
            backlog: saturate::BACKLOG,
            out: VecDeque::new(),
        }
    }

    /// The same, its saturating sources keeping [`saturate::AGGREGATE_BACKLOG`]
    /// MSDUs at a MAC that aggregates (`aggregates`).
    pub fn aggregating(mut self, aggregates: bool) -> Apps {
        if aggregates {
            self.backlog = saturate::AGGREGATE_BACKLOG;
        }
        self
    }

    /// The next output, oldest first.
    pub fn poll(&mut self) -> Option<AppOutput> {
        self.out.pop_front()
    }

    fn conn(&mut self, peer: NodeId, event: ConnEvent, value: f64) {
        self.out.push_back(AppOutput::Conn { peer, event, value });
    }

    /// The frame sources' first emissions.
    pub fn start_sources(&mut self) {
        for s in &self.sources {
            self.out.push_back(AppOutput::Emit {
                source: s.id,
                at: s.cfg.start,
            });
        }
    }

    fn source(&mut self, id: u32) -> &mut Source {
        self.sources
            .iter_mut()
            .find(|s| s.id == id)
            .expect("a source of this node")
    }

    fn source_emit(&mut self, now: SimTime, id: u32) {
        let s = self.source(id);
        let fixed = match &s.cfg.kind {
            SourceKind::Sounder { modes, .. } => {
                let mode = modes[s.next_mode % modes.len()];
                s.next_mode += 1;
                Some(Stage { mode, tries: 1 })
            }
            _ => None,
        };
        let msdu = Msdu {
            dst: s.cfg.to,
            bytes: s.cfg.payload,
            enqueued: now,
            fixed,
            source: Some(id),
            payload: Payload::Raw,
        };
        self.out.push_back(AppOutput::Frame(msdu));
    }

    /// Frame source `id`'s time to emit.
    pub fn handle_emit(&mut self, now: SimTime, id: u32) {
        let cfg = self.source(id).cfg.clone();
        if now >= cfg.stop {
            return;
        }
        match cfg.kind {
            SourceKind::Saturate => self.saturate_fill(now, id),
            SourceKind::Cbr { interval } | SourceKind::Sounder { interval, .. } => {
                self.source_emit(now, id);
                self.out.push_back(AppOutput::Emit {
                    source: id,
                    at: now + interval,
                });
            }
        }
    }

    /// The MAC is finished with an MSDU (of frame source `source`, if any):
    /// a saturating source refills, blocked senders resume.
    pub fn handle_mac_done(&mut self, now: SimTime, source: Option<u32>) {
        if let Some(id) = source {
            if self.source(id).cfg.kind == SourceKind::Saturate {
                self.saturate_done(now, id);
            }
        }
        self.resume_blocked(now);
    }
}

#[cfg(test)]
mod tests {
    //! The frame sources, one (state, event) pair per test.
    use super::*;
    use crate::phy::mode::Standard;
    use crate::units::Bitrate;

    const ME: NodeId = NodeId(0);
    const PEER: NodeId = NodeId(1);

    fn source(kind: SourceKind, stop: SimTime) -> SourceConfig {
        SourceConfig {
            kind,
            from: ME,
            to: Dst::Node(PEER),
            payload: 100,
            start: SimTime::from_ms(20),
            stop,
        }
    }

    fn cbr() -> SourceKind {
        SourceKind::Cbr {
            interval: SimTime::from_ms(10),
        }
    }

    fn outputs(a: &mut Apps) -> Vec<AppOutput> {
        std::iter::from_fn(|| a.poll()).collect()
    }

    /// The MSDUs among `out`, as (bytes, fixed stage's rate in Mbps).
    fn frames(out: &[AppOutput]) -> Vec<(u32, Option<f64>)> {
        out.iter()
            .filter_map(|o| match o {
                AppOutput::Frame(m) => {
                    assert_eq!((m.dst, m.source), (Dst::Node(PEER), Some(0)));
                    Some((m.bytes, m.fixed.map(|s| s.mode.rate.mbps())))
                }
                _ => None,
            })
            .collect()
    }

    fn wakes(out: &[AppOutput]) -> Vec<SimTime> {
        out.iter()
            .filter_map(|o| match o {
                AppOutput::Emit { source: 0, at } => Some(*at),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn test_idle_start_asks_to_emit_at_the_start() {
        let mut a = Apps::new(ME, &[], &[source(cbr(), SimTime::MAX)], (1, 0), false);
        a.start_sources();
        assert_eq!(wakes(&outputs(&mut a)), vec![SimTime::from_ms(20)]);
    }

    #[test]
    fn test_idle_start_of_another_node_asks_nothing() {
        let other = SourceConfig {
            from: PEER,
            ..source(cbr(), SimTime::MAX)
        };
        let mut a = Apps::new(ME, &[], &[other], (1, 0), false);
        a.start_sources();
        assert!(outputs(&mut a).is_empty());
    }

    #[test]
    fn test_running_cbr_emit_sends_one_frame_and_wakes_an_interval_later() {
        let mut a = Apps::new(ME, &[], &[source(cbr(), SimTime::MAX)], (1, 0), false);
        a.handle_emit(SimTime::from_ms(20), 0);
        let out = outputs(&mut a);
        assert_eq!(frames(&out), vec![(100, None)]);
        assert_eq!(wakes(&out), vec![SimTime::from_ms(30)]);
    }

    #[test]
    fn test_running_sounder_emit_cycles_through_its_rates() {
        let g = |mbps: u64| Standard::G.mode(Bitrate(mbps * 1_000_000)).unwrap();
        let kind = SourceKind::Sounder {
            interval: SimTime::from_ms(10),
            modes: vec![g(6), g(54)],
        };
        let mut a = Apps::new(ME, &[], &[source(kind, SimTime::MAX)], (1, 0), false);
        let mut sent = Vec::new();
        for i in 0..3 {
            a.handle_emit(SimTime::from_ms(20 + 10 * i), 0);
            sent.extend(frames(&outputs(&mut a)));
        }
        let rates = [6.0, 54.0, 6.0].map(|r| (100, Some(r)));
        assert_eq!(sent, rates.to_vec());
    }

    #[test]
    fn test_stopped_emit_sends_nothing_and_stops_waking() {
        let stop = SimTime::from_ms(30);
        let mut a = Apps::new(ME, &[], &[source(cbr(), stop)], (1, 0), false);
        a.handle_emit(stop, 0);
        assert!(outputs(&mut a).is_empty());
    }

    #[test]
    fn test_running_mac_done_of_a_cbr_frame_adds_nothing() {
        let mut a = Apps::new(ME, &[], &[source(cbr(), SimTime::MAX)], (1, 0), false);
        a.handle_emit(SimTime::from_ms(20), 0);
        outputs(&mut a);
        a.handle_mac_done(SimTime::from_ms(21), Some(0));
        assert!(outputs(&mut a).is_empty());
    }
}
