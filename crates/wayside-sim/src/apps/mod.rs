//! Applications. Here: frame sources that exercise the link directly on
//! the MAC — a saturating source (always a frame waiting), constant bit rate,
//! and a sounder that broadcasts probes cycling through a list of rates (to
//! measure delivery ratio per rate against distance, as measurement studies
//! do with broadcast probes). Applications over IP are in [`ip`] and
//! [`reqresp`]; the split-TCP proxy in [`split`].

pub mod ip;
pub mod reqresp;
pub mod split;

use crate::event::Event;
use crate::ids::NodeId;
use crate::mac::{Dst, Msdu, Payload};
use crate::phy::mode::Mode;
use crate::ratectl::Stage;
use crate::world::World;
use crate::units::SimTime;

/// Frames a saturating source keeps queued at its MAC.
const SATURATION_BACKLOG: usize = 2;

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

pub struct Source {
    cfg: SourceConfig,
    next_mode: usize,
}

impl World {
    pub(crate) fn add_source(&mut self, index: u32, cfg: &SourceConfig) {
        self.sources.push(Source { cfg: cfg.clone(), next_mode: 0 });
        let key = self.nodes.len() as u32 + index;
        self.queue.schedule(cfg.start, key, Event::Traffic { source: index });
    }

    fn source_emit(&mut self, now: SimTime, index: u32) -> bool {
        let s = &mut self.sources[index as usize];
        let fixed = match &s.cfg.kind {
            SourceKind::Sounder { modes, .. } => {
                let mode = modes[s.next_mode % modes.len()];
                s.next_mode += 1;
                Some(Stage { mode, tries: 1 })
            }
            _ => None,
        };
        let msdu = Msdu { dst: s.cfg.to, bytes: s.cfg.payload, enqueued: now, fixed, source: Some(index), payload: Payload::Raw };
        let from: NodeId = s.cfg.from;
        self.mac_enqueue(now, from, msdu)
    }

    pub(crate) fn on_source(&mut self, now: SimTime, index: u32) {
        let cfg = self.sources[index as usize].cfg.clone();
        if now >= cfg.stop {
            return;
        }
        match cfg.kind {
            SourceKind::Saturate => {
                for _ in 0..SATURATION_BACKLOG {
                    self.source_emit(now, index);
                }
            }
            SourceKind::Cbr { interval } | SourceKind::Sounder { interval, .. } => {
                self.source_emit(now, index);
                let key = self.nodes.len() as u32 + index;
                self.queue.schedule(now + interval, key, Event::Traffic { source: index });
            }
        }
    }

    /// The MAC is finished with an MSDU of source `index`.
    pub(crate) fn on_msdu_done(&mut self, now: SimTime, index: u32) {
        let s = &self.sources[index as usize];
        if s.cfg.kind == SourceKind::Saturate && now < s.cfg.stop {
            self.source_emit(now, index);
        }
    }
}
