//! 802.11 management in infrastructure mode: the access point (beacons,
//! probe responses, open authentication, association, inactivity) and the
//! station (passive and active scanning, AP selection on a filtered RSSI,
//! authentication and association with a driver's management timeouts,
//! disassociation after missed beacons).
//!
//! Driver profiles (`DriverProfile`):
//! - `madwifi` (0.9.1, as Hadaller et al. 2007 used it, §6.2.1–6.2.2): each
//!   scan entry keeps a low-pass-filtered RSSI seeded by the first sample
//!   (`avg = (avg·(L−1) + new)/L`, L = 10), and an entry unheard for three
//!   scan cycles is purged and re-seeded by its next sample, so at the fringe,
//!   where beacons get through only now and then, one strong sample can
//!   trigger selection early; the candidate is chosen at the end of each scan cycle
//!   when its filtered RSSI reaches the selection threshold — by default the
//!   scan module's STA_RSSI_MIN, 8 units ≈ −87 dBm (the paper names rssi11g,
//!   24 units ≈ −71 dBm, which madwifi 0.9 applies only when roaming);
//!   a lost authentication or association exchange waits a hard-coded 5 s and
//!   is retransmitted once, then AP selection restarts.
//! - `tuned`: the same selection, but 200 ms management timeouts and up to
//!   four retransmissions.
//!
//! An associated station remembers when it heard its AP's beacons (the last
//! [`BEACON_HISTORY`]) so that applications can wait for the production
//! phase: a run of good beacon delivery ([`crate::apps::ip::AppStart`]).
//!
//! A station does not scan while associated (no background scan): like the
//! cards of Ott & Kutscher (2004, §IV-C) it stays with its AP until it misses
//! `beacon_miss_limit` beacons, which is why a second AP on another channel
//! 100 m away never sees a handover.

use crate::event::{Event, NodeId};
use crate::mac::{Dst, Msdu, Payload};
use crate::rng::Stream;
use crate::sim::World;
use crate::trace::{ConnEvent, FrameKind};
use crate::units::{Dbm, SimTime};
use std::collections::VecDeque;

/// A management frame body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mgmt {
    Beacon,
    ProbeReq,
    ProbeResp,
    /// Open system authentication, transaction sequence 1 (request) or 2 (response).
    Auth { seq: u8 },
    AssocReq,
    AssocResp,
    Disassoc,
}

impl Mgmt {
    pub fn kind(self) -> FrameKind {
        match self {
            Mgmt::Beacon => FrameKind::Beacon,
            Mgmt::ProbeReq => FrameKind::ProbeReq,
            Mgmt::ProbeResp => FrameKind::ProbeResp,
            Mgmt::Auth { .. } => FrameKind::Auth,
            Mgmt::AssocReq => FrameKind::AssocReq,
            Mgmt::AssocResp => FrameKind::AssocResp,
            Mgmt::Disassoc => FrameKind::Disassoc,
        }
    }

    /// Frame body bytes (typical 802.11g information elements).
    pub fn body_bytes(self) -> u32 {
        match self {
            Mgmt::Beacon | Mgmt::ProbeResp => 80,
            Mgmt::ProbeReq => 40,
            Mgmt::Auth { .. } => 6,
            Mgmt::AssocReq => 50,
            Mgmt::AssocResp => 30,
            Mgmt::Disassoc => 2,
        }
    }
}

/// Management timers; each carries a generation so re-arming cancels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MgmtTimer {
    /// AP: target beacon transmission time.
    Beacon,
    /// STA: move to the next scan channel.
    ScanDwell,
    /// STA: no authentication or association response in time.
    Response,
    /// STA: check for missed beacons; AP: check station inactivity.
    Watchdog,
}

fn timer_slot(t: MgmtTimer) -> usize {
    t as usize
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverProfile {
    Madwifi,
    Tuned,
}

/// Management settings shared by every AP and station.
#[derive(Clone, Debug)]
pub struct MgmtConfig {
    pub beacon_interval: SimTime,
    pub scan_channels: Vec<u32>,
    pub scan_dwell: SimTime,
    /// Send a probe request on entering each channel.
    pub active_scan: bool,
    pub selection_threshold: Dbm,
    /// Length L of the RSSI low-pass filter.
    pub rssi_filter: u32,
    pub driver: DriverProfile,
    pub beacon_miss_limit: u32,
    pub inactivity_timeout: SimTime,
}

impl MgmtConfig {
    fn response_timeout(&self) -> SimTime {
        match self.driver {
            DriverProfile::Madwifi => SimTime::from_ms(5000),
            DriverProfile::Tuned => SimTime::from_ms(200),
        }
    }
    fn retransmissions(&self) -> u32 {
        match self.driver {
            DriverProfile::Madwifi => 1,
            DriverProfile::Tuned => 4,
        }
    }
}

/// A scan entry not heard for more than this many scan cycles is purged, so
/// the next sample seeds a fresh filter (madwifi: purged when unseen for more
/// than two scans).
const SCAN_PURGE_CYCLES: u64 = 3;

/// How far back an associated station remembers its AP's beacons.
pub const BEACON_HISTORY: SimTime = SimTime::from_ms(10_000);

/// What a station has heard of one AP while scanning.
#[derive(Clone, Debug)]
struct ScanEntry {
    ap: NodeId,
    channel: u32,
    rssi: f64,
    last_heard: SimTime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum StaState {
    Scanning { index: usize },
    Authenticating { ap: NodeId, attempt: u32 },
    Associating { ap: NodeId, attempt: u32 },
    Associated { ap: NodeId, last_beacon: SimTime },
}

/// Station management state.
#[derive(Clone, Debug)]
pub struct Station {
    state: StaState,
    entries: Vec<ScanEntry>,
    /// When beacons from the associated AP arrived since association, within
    /// the last [`BEACON_HISTORY`], oldest first.
    beacons: VecDeque<SimTime>,
}

impl Station {
    /// Beacons from the associated AP heard after `since`.
    pub fn beacons_after(&self, since: SimTime) -> usize {
        self.beacons.iter().rev().take_while(|&&t| t > since).count()
    }
    /// The filtered RSSI of `ap`'s beacons, dBm.
    pub fn filtered_rssi(&self, ap: NodeId) -> Option<Dbm> {
        self.entries.iter().find(|e| e.ap == ap).map(|e| Dbm(e.rssi))
    }
}

/// Access point management state.
#[derive(Clone, Debug, Default)]
pub struct AccessPoint {
    /// Associated stations and when each was last heard from.
    stations: Vec<(NodeId, SimTime)>,
}

/// A node's role in the BSS.
#[derive(Clone, Debug)]
pub enum Role {
    /// No association: frames go straight to any node (ad hoc / OCB).
    Independent,
    Ap(AccessPoint),
    Sta(Station),
}

impl Role {
    pub fn station() -> Role {
        Role::Sta(Station { state: StaState::Scanning { index: 0 }, entries: Vec::new(), beacons: VecDeque::new() })
    }
    pub fn access_point() -> Role {
        Role::Ap(AccessPoint::default())
    }
    /// The AP a station is associated with.
    pub fn associated_ap(&self) -> Option<NodeId> {
        match self {
            Role::Sta(Station { state: StaState::Associated { ap, .. }, .. }) => Some(*ap),
            _ => None,
        }
    }
    /// Whether an AP has `sta` associated.
    pub fn has_station(&self, sta: NodeId) -> bool {
        matches!(self, Role::Ap(a) if a.stations.iter().any(|s| s.0 == sta))
    }
}

/// Per-node management timers' generations.
#[derive(Clone, Debug, Default)]
pub struct MgmtTimers([u32; 4]);

impl World {
    fn schedule_mgmt(&mut self, at: SimTime, node: NodeId, timer: MgmtTimer) {
        let g = &mut self.nodes[node.index()].mgmt_timers.0[timer_slot(timer)];
        *g = g.wrapping_add(1);
        let generation = *g;
        self.queue.schedule(at, node.0, Event::Mgmt { node, timer, generation });
    }

    fn send_mgmt(&mut self, now: SimTime, node: NodeId, dst: Dst, body: Mgmt, front: bool) {
        let mode = self.radio.standard.basic_rates()[0];
        let msdu = Msdu { dst, bytes: body.body_bytes(), enqueued: now, mode: Some(mode), source: None, payload: Payload::Mgmt(body) };
        self.mac_enqueue_mgmt(now, node, msdu, front);
    }

    /// Starts management at time zero: APs beacon (the first target beacon
    /// time at a random phase of the interval, as for APs that booted at
    /// unrelated times), stations scan.
    pub(crate) fn mgmt_start(&mut self, node: NodeId) {
        match &self.nodes[node.index()].role {
            Role::Ap(_) => {
                let name = format!("beacon/{}", self.nodes[node.index()].cfg.name);
                let phase = Stream::new("run", self.seed, self.run_index, &name).uniform();
                let first = SimTime::from_secs_f64(phase * self.mgmt.beacon_interval.as_secs_f64());
                self.schedule_mgmt(first, node, MgmtTimer::Beacon);
                let t = self.mgmt.inactivity_timeout;
                self.schedule_mgmt(t, node, MgmtTimer::Watchdog);
            }
            Role::Sta(_) => self.scan_channel(SimTime::ZERO, node, 0),
            Role::Independent => {}
        }
    }

    pub(crate) fn on_mgmt_timer(&mut self, now: SimTime, node: NodeId, timer: MgmtTimer, generation: u32) {
        if self.nodes[node.index()].mgmt_timers.0[timer_slot(timer)] != generation {
            return;
        }
        match timer {
            MgmtTimer::Beacon => {
                self.send_mgmt(now, node, Dst::Broadcast, Mgmt::Beacon, true);
                let next = now + self.mgmt.beacon_interval;
                self.schedule_mgmt(next, node, MgmtTimer::Beacon);
            }
            MgmtTimer::ScanDwell => {
                let Role::Sta(sta) = &self.nodes[node.index()].role else { return };
                let StaState::Scanning { index } = sta.state else { return };
                let next = index + 1;
                if next < self.mgmt.scan_channels.len() {
                    self.scan_channel(now, node, next);
                } else {
                    self.select_ap(now, node);
                }
            }
            MgmtTimer::Response => self.sta_response_timeout(now, node),
            MgmtTimer::Watchdog => self.watchdog(now, node),
        }
    }

    fn sta_mut(&mut self, node: NodeId) -> &mut Station {
        match &mut self.nodes[node.index()].role {
            Role::Sta(s) => s,
            _ => unreachable!("station timer on a non-station"),
        }
    }

    /// Tunes to scan channel `index`, probes, and arms the dwell timer.
    fn scan_channel(&mut self, now: SimTime, node: NodeId, index: usize) {
        self.sta_mut(node).state = StaState::Scanning { index };
        let channel = self.mgmt.scan_channels[index];
        self.retune(now, node, channel);
        if self.mgmt.active_scan {
            self.send_mgmt(now, node, Dst::Broadcast, Mgmt::ProbeReq, true);
        }
        let dwell = self.mgmt.scan_dwell;
        self.schedule_mgmt(now + dwell, node, MgmtTimer::ScanDwell);
    }

    /// End of a scan cycle: pick the strongest AP whose filtered RSSI reaches
    /// the threshold and that was heard in this cycle, or scan again.
    fn select_ap(&mut self, now: SimTime, node: NodeId) {
        let cycle = self.mgmt.scan_dwell * self.mgmt.scan_channels.len() as u64;
        let threshold = self.mgmt.selection_threshold.0;
        let sta = self.sta_mut(node);
        let best = sta
            .entries
            .iter()
            .filter(|e| e.rssi >= threshold && now.saturating_sub(e.last_heard) <= cycle)
            .max_by(|a, b| a.rssi.total_cmp(&b.rssi).then(b.ap.cmp(&a.ap)))
            .map(|e| (e.ap, e.channel, e.rssi));
        match best {
            Some((ap, channel, rssi)) => {
                self.conn_event(now, node, ap.0, ConnEvent::ApSelected, rssi);
                self.retune(now, node, channel);
                self.sta_authenticate(now, node, ap, 0);
            }
            None => self.scan_channel(now, node, 0),
        }
    }

    fn sta_authenticate(&mut self, now: SimTime, node: NodeId, ap: NodeId, attempt: u32) {
        self.sta_mut(node).state = StaState::Authenticating { ap, attempt };
        self.conn_event(now, node, ap.0, ConnEvent::AuthRequest, attempt as f64);
        self.send_mgmt(now, node, Dst::Node(ap), Mgmt::Auth { seq: 1 }, false);
        let t = self.mgmt.response_timeout();
        self.schedule_mgmt(now + t, node, MgmtTimer::Response);
    }

    fn sta_associate(&mut self, now: SimTime, node: NodeId, ap: NodeId, attempt: u32) {
        self.sta_mut(node).state = StaState::Associating { ap, attempt };
        self.conn_event(now, node, ap.0, ConnEvent::AssocRequest, attempt as f64);
        self.send_mgmt(now, node, Dst::Node(ap), Mgmt::AssocReq, false);
        let t = self.mgmt.response_timeout();
        self.schedule_mgmt(now + t, node, MgmtTimer::Response);
    }

    fn sta_response_timeout(&mut self, now: SimTime, node: NodeId) {
        let state = self.sta_mut(node).state.clone();
        let retries = self.mgmt.retransmissions();
        match state {
            StaState::Authenticating { ap, attempt } => {
                self.conn_event(now, node, ap.0, ConnEvent::AuthTimeout, attempt as f64);
                if attempt < retries {
                    self.sta_authenticate(now, node, ap, attempt + 1);
                } else {
                    self.scan_channel(now, node, 0);
                }
            }
            StaState::Associating { ap, attempt } => {
                self.conn_event(now, node, ap.0, ConnEvent::AssocTimeout, attempt as f64);
                if attempt < retries {
                    self.sta_associate(now, node, ap, attempt + 1);
                } else {
                    self.scan_channel(now, node, 0);
                }
            }
            _ => {}
        }
    }

    fn watchdog(&mut self, now: SimTime, node: NodeId) {
        match &mut self.nodes[node.index()].role {
            Role::Sta(sta) => {
                let StaState::Associated { ap, last_beacon } = sta.state else { return };
                let limit = self.mgmt.beacon_interval * self.mgmt.beacon_miss_limit as u64;
                if now.saturating_sub(last_beacon) >= limit {
                    self.conn_event(now, node, ap.0, ConnEvent::Disassociated, 0.0);
                    self.net_link_down(node, ap);
                    self.scan_channel(now, node, 0);
                } else {
                    let interval = self.mgmt.beacon_interval;
                    self.schedule_mgmt(now + interval, node, MgmtTimer::Watchdog);
                }
            }
            Role::Ap(ap) => {
                let timeout = self.mgmt.inactivity_timeout;
                let (gone, kept): (Vec<_>, Vec<_>) = ap.stations.iter().partition(|s| now.saturating_sub(s.1) >= timeout);
                ap.stations = kept;
                for (sta, _) in gone {
                    self.conn_event(now, node, sta.0, ConnEvent::Disassociated, 1.0);
                    self.net_link_down(node, sta);
                }
                self.schedule_mgmt(now + SimTime(timeout.as_ns() / 4), node, MgmtTimer::Watchdog);
            }
            Role::Independent => {}
        }
    }

    /// A management frame was received correctly at `node` from `from`.
    pub(crate) fn mgmt_rx(&mut self, now: SimTime, node: NodeId, from: NodeId, body: Mgmt, rssi: Dbm) {
        let channel = self.nodes[node.index()].channel;
        match &mut self.nodes[node.index()].role {
            Role::Ap(ap) => {
                let reply = match body {
                    Mgmt::ProbeReq => Some(Mgmt::ProbeResp),
                    Mgmt::Auth { seq: 1 } => Some(Mgmt::Auth { seq: 2 }),
                    Mgmt::AssocReq => {
                        if !ap.stations.iter().any(|s| s.0 == from) {
                            ap.stations.push((from, now));
                        }
                        Some(Mgmt::AssocResp)
                    }
                    Mgmt::Disassoc => {
                        ap.stations.retain(|s| s.0 != from);
                        None
                    }
                    _ => None,
                };
                if let Some(r) = reply {
                    self.send_mgmt(now, node, Dst::Node(from), r, false);
                }
                if body == Mgmt::AssocReq {
                    self.conn_event(now, node, from.0, ConnEvent::Associated, rssi.0);
                    self.net_link_up(now, node, from);
                }
            }
            Role::Sta(sta) => {
                if matches!(body, Mgmt::Beacon | Mgmt::ProbeResp) {
                    let filter = self.mgmt.rssi_filter as f64;
                    let purge_after = self.mgmt.scan_dwell * (self.mgmt.scan_channels.len() as u64 * SCAN_PURGE_CYCLES);
                    match sta.entries.iter_mut().find(|e| e.ap == from) {
                        Some(e) if now.saturating_sub(e.last_heard) > purge_after => {
                            // The driver purged the stale entry; this sample starts a new one.
                            e.rssi = rssi.0;
                            e.last_heard = now;
                            e.channel = channel;
                        }
                        Some(e) => {
                            e.rssi = (e.rssi * (filter - 1.0) + rssi.0) / filter;
                            e.last_heard = now;
                            e.channel = channel;
                        }
                        None => {
                            sta.entries.push(ScanEntry { ap: from, channel, rssi: rssi.0, last_heard: now });
                            self.conn_event(now, node, from.0, ConnEvent::FirstBeacon, rssi.0);
                        }
                    }
                }
                let Role::Sta(sta) = &mut self.nodes[node.index()].role else { unreachable!() };
                match (sta.state.clone(), body) {
                    (StaState::Associated { ap, .. }, Mgmt::Beacon) if ap == from => {
                        sta.state = StaState::Associated { ap, last_beacon: now };
                        sta.beacons.push_back(now);
                        while sta.beacons.front().is_some_and(|&t| now.saturating_sub(t) > BEACON_HISTORY) {
                            sta.beacons.pop_front();
                        }
                        self.mac_beacon_hint(node, ap);
                        self.apps_beacon(now, node, ap);
                    }
                    (StaState::Authenticating { ap, .. }, Mgmt::Auth { seq: 2 }) if ap == from => {
                        self.conn_event(now, node, ap.0, ConnEvent::AuthOk, rssi.0);
                        self.sta_associate(now, node, ap, 0);
                    }
                    (StaState::Associating { ap, .. }, Mgmt::AssocResp) if ap == from => {
                        sta.state = StaState::Associated { ap, last_beacon: now };
                        sta.beacons.clear();
                        self.conn_event(now, node, ap.0, ConnEvent::Associated, rssi.0);
                        let interval = self.mgmt.beacon_interval;
                        self.schedule_mgmt(now + interval, node, MgmtTimer::Watchdog);
                        let g = &mut self.nodes[node.index()].mgmt_timers.0[timer_slot(MgmtTimer::Response)];
                        *g = g.wrapping_add(1);
                        self.net_link_up(now, node, ap);
                    }
                    _ => {}
                }
            }
            Role::Independent => {}
        }
    }

    /// The AP heard from station `from` (any frame): keeps it from timing out.
    pub(crate) fn mgmt_heard(&mut self, now: SimTime, node: NodeId, from: NodeId) {
        if let Role::Ap(ap) = &mut self.nodes[node.index()].role {
            if let Some(s) = ap.stations.iter_mut().find(|s| s.0 == from) {
                s.1 = now;
            }
        }
    }
}
