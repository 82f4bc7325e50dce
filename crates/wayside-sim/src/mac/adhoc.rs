//! 802.11 ad hoc (IBSS) membership as a sans-IO state machine ([`Adhoc`]),
//! configured as the Broadside prototype ran its Atheros reference driver
//! (Zahn et al. 2009, §4): ad hoc mode on a static channel with a static
//! SSID and BSSID, a network join probe every 100 ms (the stock driver
//! probes once a second), a two-second disconnection timeout, and — the
//! paper's driver modification — no disconnection while unicast frames
//! from the peer still arrive, even when its beacons are lost.
//!
//! Beacons follow the IBSS rule (802.11-2007 §11.1.2.2): the members share
//! target beacon transmission times (multiples of the beacon interval of
//! the synchronised TSF); at each, every member draws a delay in
//! `[0, beacon_window]` and sends its beacon only if it heard none of the
//! IBSS's since the target time. A member answers probe requests for its
//! BSSID.
//!
//! The link to a peer comes up when a beacon or probe response of the IBSS
//! from it is heard, and goes down when nothing that keeps it alive was
//! heard from it for `disconnect_timeout`: its beacons and probe responses,
//! and with `unicast_keepalive` also unicast data frames addressed to this
//! node. While no link is up the node probes every `join_probe`.
//!
//! Inputs: [`Adhoc::start`], [`Adhoc::handle_frame`] (an ad hoc management
//! frame heard intact), [`Adhoc::handle_data`] (a data frame from a peer),
//! [`Adhoc::handle_timeout`]. Outputs, drained after every input: frames
//! ([`Adhoc::poll_transmit`]), timers ([`Adhoc::poll_timer`]) and link
//! events ([`Adhoc::poll_event`]). Whether a peer is linked
//! ([`Adhoc::is_linked`]) is what the driver lets data through for: with
//! no link, frames to or from a peer go nowhere, as a card reporting
//! "media disconnected" neither sends nor indicates them.

use crate::ids::{Dst, NodeId};
use crate::rng::Stream;
use crate::trace::FrameKind;
use crate::units::{Dbm, SimTime};
use std::collections::VecDeque;

/// An ad hoc management frame: which kind, and the IBSS it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdhocFrame {
    pub kind: AdhocKind,
    pub bssid: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdhocKind {
    Beacon,
    /// The network join probe.
    ProbeReq,
    ProbeResp,
}

impl AdhocKind {
    pub fn frame_kind(self) -> FrameKind {
        match self {
            AdhocKind::Beacon => FrameKind::Beacon,
            AdhocKind::ProbeReq => FrameKind::ProbeReq,
            AdhocKind::ProbeResp => FrameKind::ProbeResp,
        }
    }

    /// Frame body bytes, as infrastructure beacons and probes
    /// ([`crate::mac::mgmt::MgmtBody::body_bytes`]).
    pub fn body_bytes(self) -> u32 {
        match self {
            AdhocKind::Beacon | AdhocKind::ProbeResp => 80,
            AdhocKind::ProbeReq => 40,
        }
    }
}

/// One node's IBSS settings. The static SSID and BSSID name one network;
/// frames carry the BSSID, which is what a member matches.
#[derive(Clone, Debug, PartialEq)]
pub struct AdhocConfig {
    /// The static BSSID (48 bits).
    pub bssid: u64,
    /// Probe period while no link is up (the paper's driver: 100 ms).
    pub join_probe: SimTime,
    pub beacon_interval: SimTime,
    /// Longest delay after a target beacon time (2·CWmin slots).
    pub beacon_window: SimTime,
    /// A peer unheard this long is disconnected (the paper: 2 s).
    pub disconnect_timeout: SimTime,
    /// Unicast data from a peer keeps its link alive (the paper's driver
    /// modification); without it only beacons and probe responses do.
    pub unicast_keepalive: bool,
}

/// Ad hoc timers; each carries a generation so re-arming cancels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdhocTimer {
    /// A target beacon transmission time.
    Tbtt,
    /// This node's beacon, after its random delay.
    Beacon,
    /// The next join probe.
    Probe,
    /// Check the peers for the disconnection timeout.
    Watchdog,
}

/// A link to a peer came up or went down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdhocEvent {
    /// `rssi`: of the frame that brought it up, dBm.
    LinkUp {
        peer: NodeId,
        rssi: Dbm,
    },
    LinkDown(NodeId),
}

/// One node's IBSS membership.
#[derive(Debug)]
pub struct Adhoc {
    cfg: AdhocConfig,
    /// Linked peers and when each was last heard.
    peers: Vec<(NodeId, SimTime)>,
    /// A beacon of the IBSS was heard since the last target beacon time.
    beacon_heard: bool,
    rng: Stream,
    generation: [u32; 4],
    transmits: VecDeque<(Dst, AdhocFrame)>,
    timers: VecDeque<(AdhocTimer, SimTime, u32)>,
    events: VecDeque<AdhocEvent>,
}

impl Adhoc {
    pub fn new(cfg: AdhocConfig, rng: Stream) -> Adhoc {
        Adhoc {
            cfg,
            peers: Vec::new(),
            beacon_heard: false,
            rng,
            generation: [0; 4],
            transmits: VecDeque::new(),
            timers: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Whether the link to `peer` is up.
    pub fn is_linked(&self, peer: NodeId) -> bool {
        self.peers.iter().any(|p| p.0 == peer)
    }

    /// Whether a frame to `dst` may leave: a unicast needs its peer's link,
    /// a broadcast any link.
    pub fn admits(&self, dst: Dst) -> bool {
        match dst {
            Dst::Node(p) => self.is_linked(p),
            Dst::Broadcast => !self.peers.is_empty(),
        }
    }

    pub fn poll_transmit(&mut self) -> Option<(Dst, AdhocFrame)> {
        self.transmits.pop_front()
    }

    pub fn poll_timer(&mut self) -> Option<(AdhocTimer, SimTime, u32)> {
        self.timers.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<AdhocEvent> {
        self.events.pop_front()
    }

    /// Whether an expiry of `timer` armed with `generation` is current.
    pub fn is_current(&self, timer: AdhocTimer, generation: u32) -> bool {
        self.generation[timer as usize] == generation
    }

    fn arm(&mut self, at: SimTime, timer: AdhocTimer) {
        let g = &mut self.generation[timer as usize];
        *g = g.wrapping_add(1);
        self.timers.push_back((timer, at, *g));
    }

    fn cancel(&mut self, timer: AdhocTimer) {
        let g = &mut self.generation[timer as usize];
        *g = g.wrapping_add(1);
    }

    fn send(&mut self, dst: Dst, kind: AdhocKind) {
        self.transmits.push_back((
            dst,
            AdhocFrame {
                kind,
                bssid: self.cfg.bssid,
            },
        ));
    }

    /// The first target beacon time after `now`.
    fn next_tbtt(&self, now: SimTime) -> SimTime {
        let bi = self.cfg.beacon_interval.as_ns();
        SimTime::from_ns((now.as_ns() / bi + 1) * bi)
    }

    /// The radio comes on: the node probes for its IBSS at once and beacons
    /// from the next target time.
    pub fn start(&mut self, now: SimTime) {
        self.send(Dst::Broadcast, AdhocKind::ProbeReq);
        self.arm(now + self.cfg.join_probe, AdhocTimer::Probe);
        self.arm(self.next_tbtt(now), AdhocTimer::Tbtt);
    }

    pub fn handle_timeout(&mut self, now: SimTime, timer: AdhocTimer) {
        match timer {
            AdhocTimer::Tbtt => {
                self.beacon_heard = false;
                let delay = self.rng.uniform() * self.cfg.beacon_window.as_secs_f64();
                self.arm(now + SimTime::from_secs_f64(delay), AdhocTimer::Beacon);
                self.arm(self.next_tbtt(now), AdhocTimer::Tbtt);
            }
            AdhocTimer::Beacon => {
                if !self.beacon_heard {
                    self.send(Dst::Broadcast, AdhocKind::Beacon);
                }
            }
            AdhocTimer::Probe => {
                if self.peers.is_empty() {
                    self.send(Dst::Broadcast, AdhocKind::ProbeReq);
                    self.arm(now + self.cfg.join_probe, AdhocTimer::Probe);
                }
            }
            AdhocTimer::Watchdog => self.watchdog(now),
        }
    }

    /// An ad hoc management frame from `from` was received intact at `rssi`.
    pub fn handle_frame(&mut self, now: SimTime, from: NodeId, frame: AdhocFrame, rssi: Dbm) {
        if frame.bssid != self.cfg.bssid {
            return; // another network
        }
        match frame.kind {
            AdhocKind::Beacon => {
                self.beacon_heard = true;
                self.heard(now, from, rssi);
            }
            AdhocKind::ProbeResp => self.heard(now, from, rssi),
            AdhocKind::ProbeReq => self.send(Dst::Node(from), AdhocKind::ProbeResp),
        }
    }

    /// A data frame from `from` was received; `unicast`: addressed to this
    /// node, not broadcast.
    pub fn handle_data(&mut self, now: SimTime, from: NodeId, unicast: bool) {
        if unicast && self.cfg.unicast_keepalive {
            if let Some(p) = self.peers.iter_mut().find(|p| p.0 == from) {
                p.1 = now;
            }
        }
    }

    /// A beacon or probe response of the IBSS from `from`: its link comes
    /// up, or stays up.
    fn heard(&mut self, now: SimTime, from: NodeId, rssi: Dbm) {
        if let Some(p) = self.peers.iter_mut().find(|p| p.0 == from) {
            p.1 = now;
            return;
        }
        if self.peers.is_empty() {
            self.cancel(AdhocTimer::Probe);
            self.arm(now + self.cfg.beacon_interval, AdhocTimer::Watchdog);
        }
        self.peers.push((from, now));
        self.events
            .push_back(AdhocEvent::LinkUp { peer: from, rssi });
    }

    fn watchdog(&mut self, now: SimTime) {
        let timeout = self.cfg.disconnect_timeout;
        let (gone, kept): (Vec<_>, Vec<_>) = self
            .peers
            .iter()
            .partition(|p| now.saturating_sub(p.1) >= timeout);
        self.peers = kept;
        for (peer, _) in gone {
            self.events.push_back(AdhocEvent::LinkDown(peer));
        }
        if self.peers.is_empty() {
            self.send(Dst::Broadcast, AdhocKind::ProbeReq);
            self.arm(now + self.cfg.join_probe, AdhocTimer::Probe);
        } else {
            self.arm(now + self.cfg.beacon_interval, AdhocTimer::Watchdog);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: NodeId = NodeId(1);
    const BSSID: u64 = 0x0200_0000_0001;
    const RSSI: Dbm = Dbm(-70.0);

    fn ms(n: u64) -> SimTime {
        SimTime::from_ms(n)
    }

    fn cfg(unicast_keepalive: bool) -> AdhocConfig {
        AdhocConfig {
            bssid: BSSID,
            join_probe: ms(100),
            beacon_interval: ms(100),
            beacon_window: SimTime::from_ns(270_000),
            disconnect_timeout: ms(2000),
            unicast_keepalive,
        }
    }

    fn started(unicast_keepalive: bool) -> Adhoc {
        let mut a = Adhoc::new(cfg(unicast_keepalive), Stream::new("run", 1, 0, "t"));
        a.start(ms(30));
        a
    }

    fn sent(a: &mut Adhoc) -> Vec<(Dst, AdhocKind)> {
        std::iter::from_fn(|| a.poll_transmit())
            .map(|(d, f)| (d, f.kind))
            .collect()
    }

    fn timers(a: &mut Adhoc) -> Vec<(AdhocTimer, SimTime)> {
        std::iter::from_fn(|| a.poll_timer())
            .map(|(t, at, _)| (t, at))
            .collect()
    }

    fn events(a: &mut Adhoc) -> Vec<AdhocEvent> {
        std::iter::from_fn(|| a.poll_event()).collect()
    }

    fn frame(kind: AdhocKind) -> AdhocFrame {
        AdhocFrame { kind, bssid: BSSID }
    }

    fn linked() -> Adhoc {
        let mut a = started(true);
        a.handle_frame(ms(50), PEER, frame(AdhocKind::Beacon), RSSI);
        sent(&mut a);
        timers(&mut a);
        events(&mut a);
        a
    }

    #[test]
    fn test_start_probes_and_aligns_beacons_to_the_tsf() {
        let mut a = started(true);
        assert_eq!(sent(&mut a), vec![(Dst::Broadcast, AdhocKind::ProbeReq)]);
        assert_eq!(
            timers(&mut a),
            vec![(AdhocTimer::Probe, ms(130)), (AdhocTimer::Tbtt, ms(100))]
        );
        assert!(!a.admits(Dst::Broadcast), "no link yet");
    }

    #[test]
    fn test_disconnected_probe_every_100_ms() {
        let mut a = started(true);
        sent(&mut a);
        timers(&mut a);
        a.handle_timeout(ms(130), AdhocTimer::Probe);
        assert_eq!(sent(&mut a), vec![(Dst::Broadcast, AdhocKind::ProbeReq)]);
        assert_eq!(timers(&mut a), vec![(AdhocTimer::Probe, ms(230))]);
    }

    #[test]
    fn test_beacon_of_the_ibss_brings_the_link_up_and_stops_probing() {
        let mut a = started(true);
        let probe = std::iter::from_fn(|| a.poll_timer())
            .find(|t| t.0 == AdhocTimer::Probe)
            .expect("a probe timer");
        a.handle_frame(ms(50), PEER, frame(AdhocKind::Beacon), RSSI);
        assert_eq!(
            events(&mut a),
            vec![AdhocEvent::LinkUp {
                peer: PEER,
                rssi: RSSI
            }]
        );
        assert!(a.admits(Dst::Node(PEER)) && a.admits(Dst::Broadcast));
        assert!(!a.admits(Dst::Node(NodeId(7))));
        assert_eq!(
            timers(&mut a).last(),
            Some(&(AdhocTimer::Watchdog, ms(150)))
        );
        assert!(
            !a.is_current(AdhocTimer::Probe, probe.2),
            "a linked node does not probe"
        );
    }

    #[test]
    fn test_frame_of_another_bssid_is_ignored() {
        let mut a = started(true);
        sent(&mut a);
        a.handle_frame(
            ms(50),
            PEER,
            AdhocFrame {
                kind: AdhocKind::Beacon,
                bssid: 7,
            },
            RSSI,
        );
        a.handle_frame(
            ms(50),
            PEER,
            AdhocFrame {
                kind: AdhocKind::ProbeReq,
                bssid: 7,
            },
            RSSI,
        );
        assert!(events(&mut a).is_empty() && sent(&mut a).is_empty());
    }

    #[test]
    fn test_probe_request_is_answered() {
        let mut a = started(true);
        sent(&mut a);
        a.handle_frame(ms(50), PEER, frame(AdhocKind::ProbeReq), RSSI);
        assert_eq!(sent(&mut a), vec![(Dst::Node(PEER), AdhocKind::ProbeResp)]);
        assert!(
            events(&mut a).is_empty(),
            "a probe request alone does not join"
        );
    }

    #[test]
    fn test_tbtt_beacon_suppressed_when_a_member_beaconed_first() {
        let mut a = linked();
        a.handle_timeout(ms(100), AdhocTimer::Tbtt);
        let t = timers(&mut a);
        assert_eq!(t[0].0, AdhocTimer::Beacon);
        assert!(t[0].1 >= ms(100) && t[0].1 <= ms(100) + SimTime::from_ns(270_000));
        assert_eq!(t[1], (AdhocTimer::Tbtt, ms(200)));
        a.handle_timeout(t[0].1, AdhocTimer::Beacon);
        assert_eq!(sent(&mut a), vec![(Dst::Broadcast, AdhocKind::Beacon)]);
        a.handle_timeout(ms(200), AdhocTimer::Tbtt);
        a.handle_frame(ms(200), PEER, frame(AdhocKind::Beacon), RSSI);
        a.handle_timeout(ms(200) + SimTime::from_ns(100_000), AdhocTimer::Beacon);
        assert!(sent(&mut a).is_empty(), "the peer's beacon won this TBTT");
    }

    #[test]
    fn test_linked_disconnects_after_2_s_of_silence_and_probes_again() {
        let mut a = linked();
        a.handle_timeout(ms(2000), AdhocTimer::Watchdog);
        assert!(events(&mut a).is_empty(), "heard 1.95 s ago");
        assert_eq!(timers(&mut a), vec![(AdhocTimer::Watchdog, ms(2100))]);
        a.handle_timeout(ms(2100), AdhocTimer::Watchdog);
        assert_eq!(events(&mut a), vec![AdhocEvent::LinkDown(PEER)]);
        assert_eq!(sent(&mut a), vec![(Dst::Broadcast, AdhocKind::ProbeReq)]);
        assert_eq!(timers(&mut a), vec![(AdhocTimer::Probe, ms(2200))]);
        assert!(!a.admits(Dst::Node(PEER)));
    }

    #[test]
    fn test_linked_unicast_keeps_the_link_with_the_modified_driver() {
        let mut a = linked();
        a.handle_data(ms(1500), PEER, true);
        a.handle_timeout(ms(2100), AdhocTimer::Watchdog);
        assert!(events(&mut a).is_empty(), "unicast 0.6 s ago keeps it");
        a.handle_timeout(ms(3500), AdhocTimer::Watchdog);
        assert_eq!(events(&mut a), vec![AdhocEvent::LinkDown(PEER)]);
    }

    #[test]
    fn test_linked_unicast_does_not_keep_the_link_with_the_stock_driver() {
        let mut a = started(false);
        a.handle_frame(ms(50), PEER, frame(AdhocKind::Beacon), RSSI);
        events(&mut a);
        a.handle_data(ms(1500), PEER, true);
        a.handle_timeout(ms(2100), AdhocTimer::Watchdog);
        assert_eq!(events(&mut a), vec![AdhocEvent::LinkDown(PEER)]);
    }

    #[test]
    fn test_linked_broadcast_data_does_not_keep_the_link() {
        let mut a = linked();
        a.handle_data(ms(1500), PEER, false);
        a.handle_timeout(ms(2100), AdhocTimer::Watchdog);
        assert_eq!(events(&mut a), vec![AdhocEvent::LinkDown(PEER)]);
    }
}
