//! The saturating frame source (`[[traffic]] kind = "saturate"`): raw
//! 802.11 data frames of one set size to one peer, with always a frame
//! waiting at the MAC — [`BACKLOG`] MSDUs handed to it at the start and one
//! more each time it finishes one — so the sender contends for every
//! transmission opportunity (line rate). A MAC that sends A-MPDUs is kept
//! [`AGGREGATE_BACKLOG`] MSDUs, so that every aggregate can fill up.
//!
//! On an ad hoc node the source sends only while its node has a link to
//! the destination, and picks up again when the link comes back: Zahn et
//! al. (2009, §5.2) measured packet sizes with "one node [that]
//! transmitted packets of a specific size at line rate, saturating the
//! link, whenever the link was connected". A card reporting media
//! disconnected takes no frame, so without the gate the source's frames
//! would be refused and it would never refill.

use super::{Apps, SourceKind};
use crate::ids::{Dst, NodeId};
use crate::units::SimTime;

/// MSDUs a saturating source keeps at its MAC.
pub const BACKLOG: usize = 2;
/// MSDUs a saturating source keeps at a MAC that aggregates: twice the
/// block-ack window, a full aggregate's worth waiting behind the one on
/// the air.
pub const AGGREGATE_BACKLOG: usize = 128;

impl Apps {
    /// Whether this node may send to `dst` now: always, except on an ad
    /// hoc node without a link to it.
    fn linked(&self, dst: Dst) -> bool {
        match (&self.links, dst) {
            (Some(links), Dst::Node(peer)) => links.contains(&peer),
            _ => true,
        }
    }

    /// Tops saturating source `id` up to its backlog at the MAC, if
    /// it is running and its destination is linked.
    pub(super) fn saturate_fill(&mut self, now: SimTime, id: u32) {
        let s = self.source(id);
        let (to, running) = (s.cfg.to, s.cfg.start <= now && now < s.cfg.stop);
        if !running || !self.linked(to) {
            return;
        }
        while self.source(id).queued < self.backlog {
            self.source(id).queued += 1;
            self.source_emit(now, id);
        }
    }

    /// The MAC finished an MSDU of saturating source `id`.
    pub(super) fn saturate_done(&mut self, now: SimTime, id: u32) {
        let s = self.source(id);
        s.queued = s.queued.saturating_sub(1);
        self.saturate_fill(now, id);
    }

    /// An ad hoc node's link to `peer` came up: saturating sources to it
    /// start again.
    pub fn handle_link_up(&mut self, now: SimTime, peer: NodeId) {
        let Some(links) = self.links.as_mut() else {
            return;
        };
        if !links.contains(&peer) {
            links.push(peer);
        }
        let waiting: Vec<u32> = self
            .sources
            .iter()
            .filter(|s| s.cfg.kind == SourceKind::Saturate && s.cfg.to == Dst::Node(peer))
            .map(|s| s.id)
            .collect();
        for id in waiting {
            self.saturate_fill(now, id);
        }
    }

    /// An ad hoc node's link to `peer` went down: what its MAC holds still
    /// goes out, nothing more is queued for `peer`.
    pub fn handle_link_down(&mut self, peer: NodeId) {
        if let Some(links) = self.links.as_mut() {
            links.retain(|&p| p != peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::{AppOutput, SourceConfig};
    use crate::mac::Payload;

    const ME: NodeId = NodeId(0);
    const PEER: NodeId = NodeId(1);

    fn source(payload: u32, stop: SimTime) -> SourceConfig {
        SourceConfig {
            kind: SourceKind::Saturate,
            from: ME,
            to: Dst::Node(PEER),
            payload,
            start: SimTime::ZERO,
            stop,
        }
    }

    /// The frames the applications handed the MAC, drained.
    fn frames(a: &mut Apps) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(o) = a.poll() {
            if let AppOutput::Frame(m) = o {
                assert_eq!(
                    (m.dst, m.source, matches!(m.payload, Payload::Raw)),
                    (Dst::Node(PEER), Some(0), true)
                );
                out.push(m.bytes);
            }
        }
        out
    }

    fn apps(adhoc: bool, stop: SimTime) -> Apps {
        let mut a = Apps::new(ME, &[], &[source(1500, stop)], (1, 0), adhoc);
        a.start_sources();
        while a.poll().is_some() {} // the first Emit
        a
    }

    #[test]
    fn test_running_emit_fills_the_backlog_of_the_set_size() {
        let mut a = apps(false, SimTime::MAX);
        a.handle_emit(SimTime::ZERO, 0);
        assert_eq!(frames(&mut a), vec![1500; BACKLOG]);
    }

    #[test]
    fn test_running_mac_done_keeps_the_queue_full() {
        let mut a = apps(false, SimTime::MAX);
        a.handle_emit(SimTime::ZERO, 0);
        frames(&mut a);
        for i in 1..=50u64 {
            a.handle_mac_done(SimTime::from_ms(i), Some(0));
            assert_eq!(frames(&mut a), vec![1500], "one out, one in");
        }
        assert_eq!(
            a.sources[0].queued, BACKLOG,
            "the MAC always holds the backlog"
        );
    }

    #[test]
    fn test_stopped_mac_done_adds_nothing() {
        let mut a = apps(false, SimTime::from_ms(10));
        a.handle_emit(SimTime::ZERO, 0);
        frames(&mut a);
        a.handle_mac_done(SimTime::from_ms(10), Some(0));
        assert!(frames(&mut a).is_empty());
    }

    #[test]
    fn test_adhoc_unlinked_emit_waits_for_the_link() {
        let mut a = apps(true, SimTime::MAX);
        a.handle_emit(SimTime::ZERO, 0);
        assert!(
            frames(&mut a).is_empty(),
            "no link: nothing for the MAC to refuse"
        );
        a.handle_link_up(SimTime::from_ms(5), NodeId(7));
        assert!(frames(&mut a).is_empty(), "a link to another node");
        a.handle_link_up(SimTime::from_ms(6), PEER);
        assert_eq!(frames(&mut a), vec![1500; BACKLOG]);
    }

    #[test]
    fn test_adhoc_link_down_drains_then_link_up_refills_to_the_backlog() {
        let mut a = apps(true, SimTime::MAX);
        a.handle_link_up(SimTime::ZERO, PEER);
        frames(&mut a);
        a.handle_link_down(PEER);
        a.handle_mac_done(SimTime::from_ms(1), Some(0));
        assert!(frames(&mut a).is_empty(), "no refill without the link");
        // Back with one MSDU still at the MAC: one more tops it up.
        a.handle_link_up(SimTime::from_ms(2), PEER);
        assert_eq!(frames(&mut a), vec![1500]);
        a.handle_link_up(SimTime::from_ms(3), PEER);
        assert!(frames(&mut a).is_empty(), "a repeated link-up adds nothing");
    }

    #[test]
    fn test_adhoc_link_up_before_start_sends_at_start() {
        let mut a = Apps::new(
            ME,
            &[],
            &[SourceConfig {
                start: SimTime::from_ms(5_000),
                ..source(500, SimTime::MAX)
            }],
            (1, 0),
            true,
        );
        a.handle_link_up(SimTime::from_ms(1_000), PEER);
        assert!(frames(&mut a).is_empty());
        a.handle_emit(SimTime::from_ms(5_000), 0);
        assert_eq!(frames(&mut a), vec![500; BACKLOG]);
    }
}
