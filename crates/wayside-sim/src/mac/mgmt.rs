//! 802.11 management in infrastructure mode, as a sans-IO state machine
//! ([`Mgmt`]): the access point (beacons, probe responses, open
//! authentication, association, inactivity) and the station (passive and
//! active scanning, AP selection on a filtered RSSI, authentication and
//! association with a driver's management timeouts, disassociation after
//! missed beacons).
//!
//! Inputs: [`Mgmt::start`], [`Mgmt::handle_frame`] (a management frame
//! heard intact), [`Mgmt::handle_heard`] (any frame from a peer),
//! [`Mgmt::handle_timeout`]. Outputs, drained after every input: the
//! channel the radio should be on ([`Mgmt::channel`]), frames to send
//! ([`Mgmt::poll_transmit`]), timers to arm ([`Mgmt::poll_timer`]) and
//! events ([`Mgmt::poll_event`]).
//!
//! Driver profiles (`DriverProfile`):
//! - `madwifi` (0.9.1, as Hadaller et al. 2007 used it, §6.2.1–6.2.2),
//!   scanning as net80211's station scanner of that release does: the
//!   channel list in the driver's order (b/g: 1, 6, 11, 7, then 2–5 and
//!   8–10), a probe request on entering each channel when scanning actively,
//!   and a dwell of at most `scan_dwell` (the driver's 200 ms maximum) that
//!   ends early — once the [`MIN_DWELL`] of 20 ms is over — on the first
//!   beacon or probe response heard, so a channel with an AP on it costs
//!   tens of milliseconds and an empty one the full 200. Each scan entry
//!   keeps a low-pass-filtered RSSI seeded by the first sample
//!   (`avg = (avg·(L−1) + new)/L`, L = 10); an entry not heard in more than
//!   two scans ([`SCAN_PURGE_SCANS`]) is purged and re-seeded by its next
//!   sample, so at the fringe, where beacons get through only now and then,
//!   one strong sample can trigger selection early. At the end of each pass
//!   over the channel list the driver picks, of the entries heard in this
//!   pass or the one before and with fewer than [`STA_FAILS_MAX`] failed
//!   joins, the one with the strongest filtered RSSI. madwifi 0.9's scan
//!   module (`ieee80211_scan_sta.c`, `match_bss`) has no RSSI floor: a
//!   beacon heard once is enough, however weak. The STA_RSSI_MIN floor of 8
//!   units came to FreeBSD's net80211 later; `selection_threshold` models
//!   it, or any other floor, when set. (Hadaller et al. name rssi11g, 24
//!   units, which madwifi 0.9 applies only when roaming, and its roaming
//!   check is compiled out.) A lost authentication or association exchange
//!   waits a hard-coded 5 s and is retransmitted once; then the join has
//!   failed: the entry's failure count goes up and the driver picks again at
//!   once from its scan cache (`ieee80211_check_scan`), scanning only if
//!   nothing qualifies; the cache counts as fresh for 60 s after a pass
//!   (SCAN_VALID_DEFAULT), and two joins take at most 40 s. A pick that
//!   finds nothing takes one failure off every entry (`sta_dec_fails`), so
//!   an AP that failed twice sits out one pass.
//!
//! The scan runs at a phase unrelated to the road: a car's card has been
//! scanning since long before the AP came into range, so a station starts
//! its first pass at a time drawn uniformly over one pass over empty
//! channels (`scan_phase`).
//! - `tuned`: the same selection, but 200 ms management timeouts and up to
//!   four retransmissions.
//!
//! A dual-band (a/b/g) card in madwifi's default mode (`AUTO`) scans both
//! bands in one pass (`sta_start` walks the scan table through the 2.4 and
//! 5 GHz lists). In a 2.4 GHz scenario its 5 GHz channels are
//! `listen_only`: the station dwells there the longest dwell and hears
//! nothing, since no node of the scenario can be there, and sends no probe,
//! which would need the 802.11a PHY its b/g radio does not model (the DFS
//! channels are scanned passively by the driver anyway).
//!
//! An associated station remembers when it heard its AP's beacons (the last
//! [`BEACON_HISTORY`]) so that applications can wait for the production
//! phase: a run of good beacon delivery ([`crate::apps::ip::AppStart`]).
//!
//! With madwifi's roaming (the default) a station does not scan while
//! associated: like the cards of Ott & Kutscher (2004, §IV-C) it stays with
//! its AP until it misses `beacon_miss_limit` beacons, which is why a second
//! AP on another channel 100 m away never sees a handover. A station may
//! roam as later clients do instead ([`roam`]: wpa_supplicant's bgscan, or
//! an explicit roam threshold), with reassociation.

mod roam;
use roam::RoamState;
pub use roam::{wpa_need_to_roam, Roaming, REASON_INACTIVITY, REASON_LEAVING};

use crate::ids::{Dst, NodeId};
use crate::ratectl::SnrMap;
use crate::rng::Stream;
use crate::trace::{ConnEvent, FrameKind};
use crate::units::{Dbm, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

/// A node's part in a BSS: the one type the scenario file, the
/// configuration and management share (management keeps its state per role in
/// its private `Bss`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// No association: frames go straight to any node (ad hoc / OCB).
    Independent,
    /// An access point: beacons, answers probes, authenticates, associates.
    Ap,
    /// A station: scans, selects an AP, authenticates and associates.
    Sta,
}

impl Role {
    /// The role as messages name it, with its spelling in a scenario file.
    pub fn described(self) -> &'static str {
        match self {
            Role::Independent => "an independent node (role = \"independent\")",
            Role::Ap => "an access point (role = \"ap\")",
            Role::Sta => "a station (role = \"sta\")",
        }
    }
}

/// Tries of a unicast management frame, all at the lowest basic rate.
/// madwifi 0.9 (`ath_tx_start`) sends management frames at rate index 0
/// with `try0 = ATH_TXMAXTRY` (11) and no multi-rate series, on the
/// highest-priority hardware queue; broadcast frames go out once.
pub const MGMT_TRIES: u8 = 11;

/// A management frame body.
#[derive(Clone, Debug, PartialEq)]
pub enum MgmtBody {
    /// `map`: an environment-aware AP's SNR map, in a vendor element.
    Beacon {
        map: Option<Arc<SnrMap>>,
    },
    ProbeReq,
    ProbeResp,
    /// Open system authentication, transaction sequence 1 (request) or 2 (response).
    Auth {
        seq: u8,
    },
    AssocReq,
    AssocResp,
    /// A roaming station's association request to a new AP, naming the
    /// AP it leaves.
    ReassocReq {
        current: NodeId,
    },
    ReassocResp,
    /// With an 802.11 reason code.
    Disassoc {
        reason: u16,
    },
    Deauth {
        reason: u16,
    },
    /// An ad hoc (IBSS) frame ([`crate::mac::adhoc`]).
    Adhoc(crate::mac::adhoc::AdhocFrame),
}

impl MgmtBody {
    pub fn kind(&self) -> FrameKind {
        match self {
            MgmtBody::Beacon { .. } => FrameKind::Beacon,
            MgmtBody::ProbeReq => FrameKind::ProbeReq,
            MgmtBody::ProbeResp => FrameKind::ProbeResp,
            MgmtBody::Auth { .. } => FrameKind::Auth,
            MgmtBody::AssocReq => FrameKind::AssocReq,
            MgmtBody::AssocResp => FrameKind::AssocResp,
            MgmtBody::ReassocReq { .. } => FrameKind::ReassocReq,
            MgmtBody::ReassocResp => FrameKind::ReassocResp,
            MgmtBody::Disassoc { .. } => FrameKind::Disassoc,
            MgmtBody::Deauth { .. } => FrameKind::Deauth,
            MgmtBody::Adhoc(f) => f.kind.frame_kind(),
        }
    }

    /// Frame body bytes (typical 802.11g information elements).
    pub fn body_bytes(&self) -> u32 {
        match self {
            MgmtBody::Beacon { .. } | MgmtBody::ProbeResp => 80,
            MgmtBody::ProbeReq => 40,
            MgmtBody::Auth { .. } => 6,
            MgmtBody::AssocReq => 50,
            MgmtBody::AssocResp | MgmtBody::ReassocResp => 30,
            // An association request's body and the current AP's address.
            MgmtBody::ReassocReq { .. } => 56,
            MgmtBody::Disassoc { .. } | MgmtBody::Deauth { .. } => 2,
            MgmtBody::Adhoc(f) => f.kind.body_bytes(),
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
    /// STA: bgscan's next background scan.
    Bgscan,
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
    /// Scan channels the station only listens on, whatever `active_scan`
    /// says: a dual-band card's channels in the band the scenario's radios
    /// do not use (see the module doc).
    pub listen_only: Vec<u32>,
    /// A station starts scanning at a random time within one pass over the
    /// channel list at the longest dwell (see the module doc), not at zero.
    pub scan_phase: bool,
    /// A floor on the filtered RSSI of a candidate AP; `None`: madwifi
    /// 0.9's rule, any AP heard (see the module doc).
    pub selection_threshold: Option<Dbm>,
    /// Length L of the RSSI low-pass filter.
    pub rssi_filter: u32,
    pub driver: DriverProfile,
    pub beacon_miss_limit: u32,
    pub inactivity_timeout: SimTime,
    /// How a station roams while associated; a roaming station joins
    /// with mac80211's timeouts ([`roam`]).
    pub roaming: Roaming,
}

impl MgmtConfig {
    fn response_timeout(&self) -> SimTime {
        if self.roaming != Roaming::None {
            return roam::MAC80211_TIMEOUT;
        }
        match self.driver {
            DriverProfile::Madwifi => SimTime::from_ms(5000),
            DriverProfile::Tuned => SimTime::from_ms(200),
        }
    }
    fn retransmissions(&self) -> u32 {
        if self.roaming != Roaming::None {
            return roam::MAC80211_RETRANSMISSIONS;
        }
        match self.driver {
            DriverProfile::Madwifi => 1,
            DriverProfile::Tuned => 4,
        }
    }
}

/// A scan entry not heard in this many passes over the channel list is no
/// longer a candidate, and one not heard in more is purged, so that the
/// next sample seeds a fresh filter (net80211's STA_PURGE_SCANS).
const SCAN_PURGE_SCANS: u32 = 2;

/// A scan entry whose joins failed this many times is not a candidate
/// (net80211's STA_FAILS_MAX).
const STA_FAILS_MAX: u32 = 2;

/// The least time a station stays on a channel while scanning; after it, a
/// beacon or probe response moves it to the next channel (net80211's
/// station scanner: `ss_mindwell` = 20 ms).
pub const MIN_DWELL: SimTime = SimTime::from_ms(20);

/// How far back an associated station remembers its AP's beacons.
pub const BEACON_HISTORY: SimTime = SimTime::from_ms(10_000);

/// What a station has heard of one AP while scanning.
#[derive(Clone, Debug)]
struct ScanEntry {
    ap: NodeId,
    channel: u32,
    rssi: f64,
    /// The last sample and when it was heard (a background scan's result).
    level: f64,
    heard: SimTime,
    /// Heard during the current pass over the channel list.
    seen: bool,
    /// Passes over the channel list that ended without hearing it.
    notseen: u32,
    /// Failed joins (authentication or association), less one for each
    /// pick that found no candidate.
    fails: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum StaState {
    /// Not scanning yet: waiting for its scan's phase ([`MgmtConfig::scan_phase`]).
    Waiting,
    /// On scan channel `index` since `since`.
    Scanning {
        index: usize,
        since: SimTime,
    },
    Authenticating {
        ap: NodeId,
        attempt: u32,
    },
    Associating {
        ap: NodeId,
        attempt: u32,
    },
    Associated {
        ap: NodeId,
        last_beacon: SimTime,
    },
    /// Sending a farewell (deauthentication or disassociation) to the AP
    /// left, on its channel; then joining `next` (AP, channel) or scanning.
    Leaving {
        next: Option<(NodeId, u32)>,
    },
}

/// Station management state.
#[derive(Clone, Debug)]
struct Station {
    state: StaState,
    entries: Vec<ScanEntry>,
    /// When beacons from the associated AP arrived since association, within
    /// the last [`BEACON_HISTORY`], oldest first.
    beacons: VecDeque<SimTime>,
    roam: RoamState,
}

/// Access point management state.
#[derive(Clone, Debug, Default)]
struct AccessPoint {
    /// Associated stations and when each was last heard from.
    stations: Vec<(NodeId, SimTime)>,
}

/// Management state of a node, by its role in the BSS.
#[derive(Clone, Debug)]
enum Bss {
    /// No association: frames go straight to any node (ad hoc / OCB).
    Independent,
    Ap(AccessPoint),
    Sta(Station),
}

/// What management tells the rest of the node and the trace.
#[derive(Clone, Debug, PartialEq)]
pub enum MgmtEvent {
    /// A connection event concerning `peer`, for the trace.
    Conn {
        peer: NodeId,
        event: ConnEvent,
        value: f64,
    },
    /// Association with `peer` came up.
    LinkUp(NodeId),
    /// Association with `peer` was lost.
    LinkDown(NodeId),
    /// An associated station heard its AP's beacon, which carried `map`.
    Beacon {
        ap: NodeId,
        map: Option<Arc<SnrMap>>,
    },
}

/// A management frame to send: destination, body, and whether it goes
/// ahead of everything queued (beacons, probe requests).
#[derive(Clone, Debug, PartialEq)]
pub struct MgmtFrame {
    pub dst: Dst,
    pub body: MgmtBody,
    pub front: bool,
}

/// One node's management.
#[derive(Debug)]
pub struct Mgmt {
    cfg: MgmtConfig,
    bss: Bss,
    /// The channel the radio should be tuned to.
    channel: u32,
    /// First target beacon transmission time (an AP's phase), or when a
    /// station starts scanning.
    first_beacon: SimTime,
    generation: [u32; 5],
    transmits: VecDeque<MgmtFrame>,
    timers: VecDeque<(MgmtTimer, SimTime, u32)>,
    events: VecDeque<MgmtEvent>,
}

impl Mgmt {
    /// Management for a node of `role` on `channel`. An AP's first target
    /// beacon time is drawn from `rng` at a random phase of the interval
    /// (APs booted at unrelated times); so is a station's scan phase, if
    /// [`MgmtConfig::scan_phase`].
    pub fn new(role: Role, cfg: MgmtConfig, channel: u32, mut rng: Stream) -> Mgmt {
        let bss = match role {
            Role::Independent => Bss::Independent,
            Role::Ap => Bss::Ap(AccessPoint::default()),
            Role::Sta => Bss::Sta(Station {
                state: StaState::Waiting,
                entries: Vec::new(),
                beacons: VecDeque::new(),
                roam: RoamState::default(),
            }),
        };
        let first_beacon = match role {
            Role::Ap => SimTime::from_secs_f64(rng.uniform() * cfg.beacon_interval.as_secs_f64()),
            Role::Sta if cfg.scan_phase => {
                let pass = cfg.scan_dwell * cfg.scan_channels.len() as u64;
                SimTime::from_secs_f64(rng.uniform() * pass.as_secs_f64())
            }
            _ => SimTime::ZERO,
        };
        Mgmt {
            cfg,
            bss,
            channel,
            first_beacon,
            generation: [0; 5],
            transmits: VecDeque::new(),
            timers: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    // ------------------------------------------------------------ queries

    /// The channel the radio should be tuned to.
    pub fn channel(&self) -> u32 {
        self.channel
    }

    /// The AP a station is associated with.
    pub fn associated_ap(&self) -> Option<NodeId> {
        match &self.bss {
            Bss::Sta(Station {
                state: StaState::Associated { ap, .. },
                ..
            }) => Some(*ap),
            _ => None,
        }
    }

    /// Whether this is an AP with `sta` associated.
    pub fn has_station(&self, sta: NodeId) -> bool {
        matches!(&self.bss, Bss::Ap(a) if a.stations.iter().any(|s| s.0 == sta))
    }

    pub fn is_ap(&self) -> bool {
        matches!(self.bss, Bss::Ap(_))
    }

    pub fn is_station(&self) -> bool {
        matches!(self.bss, Bss::Sta(_))
    }

    /// A station's beacons from its AP heard after `since`.
    pub fn beacons_after(&self, since: SimTime) -> usize {
        match &self.bss {
            Bss::Sta(sta) => sta.beacons.iter().rev().take_while(|&&t| t > since).count(),
            _ => 0,
        }
    }

    /// A station's filtered RSSI of `ap`'s beacons.
    pub fn filtered_rssi(&self, ap: NodeId) -> Option<Dbm> {
        match &self.bss {
            Bss::Sta(sta) => sta.entries.iter().find(|e| e.ap == ap).map(|e| Dbm(e.rssi)),
            _ => None,
        }
    }

    // ------------------------------------------------------------ outputs

    pub fn poll_transmit(&mut self) -> Option<MgmtFrame> {
        self.transmits.pop_front()
    }

    /// A timer to arm at a time, with the generation its expiry must carry.
    pub fn poll_timer(&mut self) -> Option<(MgmtTimer, SimTime, u32)> {
        self.timers.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<MgmtEvent> {
        self.events.pop_front()
    }

    /// Whether an expiry of `timer` armed with `generation` is still current.
    pub fn is_current(&self, timer: MgmtTimer, generation: u32) -> bool {
        self.generation[timer_slot(timer)] == generation
    }

    fn arm(&mut self, at: SimTime, timer: MgmtTimer) {
        let g = &mut self.generation[timer_slot(timer)];
        *g = g.wrapping_add(1);
        self.timers.push_back((timer, at, *g));
    }

    fn cancel(&mut self, timer: MgmtTimer) {
        let g = &mut self.generation[timer_slot(timer)];
        *g = g.wrapping_add(1);
    }

    fn send(&mut self, dst: Dst, body: MgmtBody, front: bool) {
        self.transmits.push_back(MgmtFrame { dst, body, front });
    }

    fn conn(&mut self, peer: NodeId, event: ConnEvent, value: f64) {
        self.events
            .push_back(MgmtEvent::Conn { peer, event, value });
    }

    fn sta(&mut self) -> &mut Station {
        match &mut self.bss {
            Bss::Sta(s) => s,
            _ => unreachable!("station state on a non-station"),
        }
    }

    // ------------------------------------------------------------ inputs

    /// Starts management at time zero: APs beacon, stations scan.
    pub fn start(&mut self, now: SimTime) {
        match self.bss {
            Bss::Ap(_) => {
                self.arm(self.first_beacon, MgmtTimer::Beacon);
                self.arm(self.cfg.inactivity_timeout, MgmtTimer::Watchdog);
            }
            Bss::Sta(_) if self.first_beacon > SimTime::ZERO => {
                self.arm(now + self.first_beacon, MgmtTimer::ScanDwell)
            }
            Bss::Sta(_) => self.scan_channel(now, 0),
            Bss::Independent => {}
        }
    }

    /// A timer armed with a current generation expired. `map`: what an AP
    /// advertises in its beacons.
    pub fn handle_timeout(&mut self, now: SimTime, timer: MgmtTimer, map: Option<Arc<SnrMap>>) {
        match timer {
            MgmtTimer::Beacon => {
                self.send(Dst::Broadcast, MgmtBody::Beacon { map }, true);
                self.arm(now + self.cfg.beacon_interval, MgmtTimer::Beacon);
            }
            MgmtTimer::ScanDwell => {
                let Bss::Sta(sta) = &self.bss else { return };
                match sta.state {
                    StaState::Waiting => self.scan_channel(now, 0),
                    StaState::Scanning { index, .. } => self.next_channel(now, index),
                    StaState::Associated { .. } => self.bg_scan_step(now),
                    _ => {}
                }
            }
            MgmtTimer::Response => self.response_timeout(now),
            MgmtTimer::Watchdog => self.watchdog(now),
            MgmtTimer::Bgscan => self.bgscan_timeout(now),
        }
    }

    /// Any frame from `from` was received: an AP keeps the station from
    /// timing out.
    pub fn handle_heard(&mut self, now: SimTime, from: NodeId) {
        if let Bss::Ap(ap) = &mut self.bss {
            if let Some(s) = ap.stations.iter_mut().find(|s| s.0 == from) {
                s.1 = now;
            }
        }
    }

    /// A management frame `body` from `from` was received intact at `rssi`
    /// on the radio's current `channel`.
    pub fn handle_frame(
        &mut self,
        now: SimTime,
        from: NodeId,
        body: MgmtBody,
        rssi: Dbm,
        channel: u32,
    ) {
        match &mut self.bss {
            Bss::Ap(ap) => {
                let known = ap.stations.iter().any(|s| s.0 == from);
                let reply = match body {
                    MgmtBody::ProbeReq => Some(MgmtBody::ProbeResp),
                    MgmtBody::Auth { seq: 1 } => Some(MgmtBody::Auth { seq: 2 }),
                    MgmtBody::AssocReq | MgmtBody::ReassocReq { .. } => {
                        if !known {
                            ap.stations.push((from, now));
                        }
                        Some(match body {
                            MgmtBody::AssocReq => MgmtBody::AssocResp,
                            _ => MgmtBody::ReassocResp,
                        })
                    }
                    MgmtBody::Disassoc { .. } | MgmtBody::Deauth { .. } => {
                        ap.stations.retain(|s| s.0 != from);
                        None
                    }
                    _ => None,
                };
                if let Some(r) = reply {
                    self.send(Dst::Node(from), r, false);
                }
                match body {
                    MgmtBody::AssocReq | MgmtBody::ReassocReq { .. } => {
                        self.conn(from, ConnEvent::Associated, rssi.0);
                        self.events.push_back(MgmtEvent::LinkUp(from));
                    }
                    MgmtBody::Disassoc { reason } | MgmtBody::Deauth { reason } if known => {
                        let event = match body {
                            MgmtBody::Deauth { .. } => ConnEvent::Deauthenticated,
                            _ => ConnEvent::Disassociated,
                        };
                        self.conn(from, event, f64::from(reason));
                        self.events.push_back(MgmtEvent::LinkDown(from));
                    }
                    _ => {}
                }
            }
            Bss::Sta(sta) => {
                if matches!(body, MgmtBody::Beacon { .. } | MgmtBody::ProbeResp) {
                    let filter = f64::from(self.cfg.rssi_filter);
                    match sta.entries.iter_mut().find(|e| e.ap == from) {
                        Some(e) => {
                            e.rssi = if e.notseen > SCAN_PURGE_SCANS {
                                rssi.0 // the driver purged the stale entry; this sample starts a new one
                            } else {
                                (e.rssi * (filter - 1.0) + rssi.0) / filter
                            };
                            (e.seen, e.notseen, e.channel) = (true, 0, channel);
                            (e.level, e.heard) = (rssi.0, now);
                        }
                        None => {
                            sta.entries.push(ScanEntry {
                                ap: from,
                                channel,
                                rssi: rssi.0,
                                level: rssi.0,
                                heard: now,
                                seen: true,
                                notseen: 0,
                                fails: 0,
                            });
                            self.events.push_back(MgmtEvent::Conn {
                                peer: from,
                                event: ConnEvent::FirstBeacon,
                                value: rssi.0,
                            });
                        }
                    }
                    // Past the least dwell, what is heard ends the channel's dwell.
                    if let StaState::Scanning { index, since } = sta.state {
                        if now >= since + MIN_DWELL {
                            self.next_channel(now, index);
                            return;
                        }
                    }
                }
                let sta = self.sta();
                match (sta.state.clone(), body) {
                    (StaState::Associated { ap, .. }, MgmtBody::Beacon { map }) if ap == from => {
                        sta.state = StaState::Associated {
                            ap,
                            last_beacon: now,
                        };
                        sta.beacons.push_back(now);
                        while sta
                            .beacons
                            .front()
                            .is_some_and(|&t| now.saturating_sub(t) > BEACON_HISTORY)
                        {
                            sta.beacons.pop_front();
                        }
                        self.events.push_back(MgmtEvent::Beacon { ap, map });
                        self.roam_beacon(now, rssi.0);
                    }
                    (StaState::Authenticating { ap, .. }, MgmtBody::Auth { seq: 2 })
                        if ap == from =>
                    {
                        self.conn(ap, ConnEvent::AuthOk, rssi.0);
                        self.associate(now, ap, 0);
                    }
                    (
                        StaState::Associating { ap, .. },
                        MgmtBody::AssocResp | MgmtBody::ReassocResp,
                    ) if ap == from => {
                        sta.state = StaState::Associated {
                            ap,
                            last_beacon: now,
                        };
                        sta.beacons.clear();
                        self.conn(ap, ConnEvent::Associated, rssi.0);
                        self.arm(now + self.cfg.beacon_interval, MgmtTimer::Watchdog);
                        self.cancel(MgmtTimer::Response);
                        self.events.push_back(MgmtEvent::LinkUp(ap));
                        self.roam_start(now, channel, rssi.0);
                    }
                    _ => {}
                }
            }
            Bss::Independent => {}
        }
    }

    // ------------------------------------------------------------ station

    /// Tunes to scan channel `index`, probes, and arms the dwell timer.
    fn scan_channel(&mut self, now: SimTime, index: usize) {
        self.sta().state = StaState::Scanning { index, since: now };
        self.channel = self.cfg.scan_channels[index];
        if self.cfg.active_scan && !self.cfg.listen_only.contains(&self.channel) {
            self.send(Dst::Broadcast, MgmtBody::ProbeReq, true);
        }
        self.arm(now + self.cfg.scan_dwell, MgmtTimer::ScanDwell);
    }

    /// The dwell on scan channel `index` is over: the next channel, or the
    /// pick at the end of the list.
    fn next_channel(&mut self, now: SimTime, index: usize) {
        if index + 1 < self.cfg.scan_channels.len() {
            self.scan_channel(now, index + 1);
        } else {
            self.select_ap(now);
        }
    }

    /// End of a pass over the channel list: age the entries, then pick.
    fn select_ap(&mut self, now: SimTime) {
        self.cancel(MgmtTimer::ScanDwell);
        for e in &mut self.sta().entries {
            if e.seen {
                e.seen = false;
            } else {
                e.notseen += 1;
            }
        }
        self.pick(now);
    }

    /// Join the candidate with the strongest filtered RSSI: heard in this
    /// pass or the one before, fewer than [`STA_FAILS_MAX`] failed joins,
    /// and at or above the threshold if there is one. With none, every
    /// entry gets one failure back and the station scans again.
    fn pick(&mut self, now: SimTime) {
        let floor = self
            .cfg
            .selection_threshold
            .map_or(f64::NEG_INFINITY, |t| t.0);
        let best = self
            .sta()
            .entries
            .iter()
            .filter(|e| e.rssi >= floor && e.notseen < SCAN_PURGE_SCANS && e.fails < STA_FAILS_MAX)
            .max_by(|a, b| a.rssi.total_cmp(&b.rssi).then(b.ap.cmp(&a.ap)))
            .map(|e| (e.ap, e.channel, e.rssi));
        match best {
            Some((ap, channel, rssi)) => {
                self.conn(ap, ConnEvent::ApSelected, rssi);
                self.channel = channel;
                self.authenticate(now, ap, 0);
            }
            None => {
                for e in &mut self.sta().entries {
                    e.fails = e.fails.saturating_sub(1);
                }
                self.scan_channel(now, 0);
            }
        }
    }

    /// A join with `ap` failed: count it and pick again from the cache.
    fn join_failed(&mut self, now: SimTime, ap: NodeId) {
        if let Some(e) = self.sta().entries.iter_mut().find(|e| e.ap == ap) {
            e.fails += 1;
        }
        self.pick(now);
    }

    fn authenticate(&mut self, now: SimTime, ap: NodeId, attempt: u32) {
        self.sta().state = StaState::Authenticating { ap, attempt };
        self.conn(ap, ConnEvent::AuthRequest, f64::from(attempt));
        self.send(Dst::Node(ap), MgmtBody::Auth { seq: 1 }, false);
        self.arm(now + self.cfg.response_timeout(), MgmtTimer::Response);
    }

    /// Associates with `ap`, or reassociates if the station left an AP
    /// for it ([`roam`]).
    fn associate(&mut self, now: SimTime, ap: NodeId, attempt: u32) {
        let sta = self.sta();
        sta.state = StaState::Associating { ap, attempt };
        let (event, body) = match sta.roam.prev {
            Some(current) => (ConnEvent::ReassocRequest, MgmtBody::ReassocReq { current }),
            None => (ConnEvent::AssocRequest, MgmtBody::AssocReq),
        };
        self.conn(ap, event, f64::from(attempt));
        self.send(Dst::Node(ap), body, false);
        self.arm(now + self.cfg.response_timeout(), MgmtTimer::Response);
    }

    fn response_timeout(&mut self, now: SimTime) {
        let retries = self.cfg.retransmissions();
        match self.sta().state.clone() {
            StaState::Authenticating { ap, attempt } => {
                self.conn(ap, ConnEvent::AuthTimeout, f64::from(attempt));
                if attempt < retries {
                    self.authenticate(now, ap, attempt + 1);
                } else {
                    self.join_failed(now, ap);
                }
            }
            StaState::Associating { ap, attempt } => {
                self.conn(ap, ConnEvent::AssocTimeout, f64::from(attempt));
                if attempt < retries {
                    self.associate(now, ap, attempt + 1);
                } else {
                    self.join_failed(now, ap);
                }
            }
            _ => {}
        }
    }

    fn watchdog(&mut self, now: SimTime) {
        let interval = self.cfg.beacon_interval;
        match &mut self.bss {
            Bss::Sta(sta) => {
                let StaState::Associated { ap, last_beacon } = sta.state else {
                    return;
                };
                let limit = interval * u64::from(self.cfg.beacon_miss_limit);
                if now.saturating_sub(last_beacon) >= limit {
                    self.conn(ap, ConnEvent::Disassociated, 0.0);
                    self.connection_lost(now, ap);
                } else {
                    self.arm(now + interval, MgmtTimer::Watchdog);
                }
            }
            Bss::Ap(ap) => {
                let timeout = self.cfg.inactivity_timeout;
                let (gone, kept): (Vec<_>, Vec<_>) = ap
                    .stations
                    .iter()
                    .partition(|s| now.saturating_sub(s.1) >= timeout);
                ap.stations = kept;
                for (sta, _) in gone {
                    self.conn(sta, ConnEvent::Disassociated, 1.0);
                    self.events.push_back(MgmtEvent::LinkDown(sta));
                }
                self.arm(now + SimTime(timeout.as_ns() / 4), MgmtTimer::Watchdog);
            }
            Bss::Independent => {}
        }
    }
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
