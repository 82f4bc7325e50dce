//! Roaming while associated: how a station decides to leave its AP for a
//! better one, a choice per station ([`Roaming`]).
//!
//! - `madwifi` ([`Roaming::None`]): madwifi 0.9 never scans while
//!   associated; it leaves only after `beacon_miss_limit` missed beacons
//!   (the papers' behaviour, and every scenario's default).
//! - `bgscan-simple` ([`Roaming::BgscanSimple`]): a Linux client,
//!   wpa_supplicant with `bgscan="simple:<short>:<threshold>:<long>"` over
//!   mac80211, as in hostap's `wpa_supplicant/bgscan_simple.c` and
//!   `events.c` (main branch of 2024, after release 2.11) and Linux's
//!   `net/mac80211/{mlme,scan}.c` (6.x):
//!   - mac80211 averages the AP's beacon signal (an EWMA of weight 1/4,
//!     `ave_beacon_signal`) and, from the 4th beacon on
//!     (`IEEE80211_SIGNAL_AVE_MIN_COUNT`), raises a signal-quality event
//!     when the average crosses the threshold, or moves 4 dB further from
//!     the last event (the hysteresis wpa_supplicant asks for);
//!   - bgscan scans every `short_interval` while the signal is below the
//!     threshold and every `long_interval` above it; a drop below it
//!     scans at once (unless it scanned in the last second), a further
//!     4 dB drop scans if the last scan is over 10 s old; after
//!     `long/short + 1` short scans it backs off to the long interval;
//!   - a background scan visits each scan channel for mac80211's active
//!     dwell — a probe delay of 30 ms (`IEEE80211_PROBE_DELAY`, HZ/33),
//!     the probe request, then 30 ms (`IEEE80211_CHANNEL_TIME`) — or
//!     111 ms listening (`IEEE80211_PASSIVE_CHANNEL_TIME`, HZ/9), and
//!     returns to its AP's channel for 200 ms (`HZ/5`, the scan's
//!     `SUSPEND` state) between channels, as it does while frames are
//!     pending;
//!   - on the scan's results wpa_supplicant picks the best AP by
//!     estimated throughput, then signal, and roams if
//!     `wpa_supplicant_need_to_roam_within_ess` allows: the selected AP's
//!     level must beat the current AP's averaged beacon signal by
//!     `min_diff` — 1 dB below −85 dBm, 2 below −80, 3 below −75, 4 below
//!     −70, else 5 — adjusted for the throughput estimates (802.11g's,
//!     from the SNR over wpa_supplicant's −89 dBm default noise floor) and
//!     2 dB less when the current AP is at or below the bgscan threshold
//!     and the selected one above it; no roam while the current SNR is
//!     over 25 dB (`GREAT_SNR`);
//!   - the roam authenticates and sends a Reassociation Request to the
//!     new AP. mac80211 drops the old association as a local state change
//!     (`ieee80211_mgd_auth` calls `ieee80211_set_disassoc` with
//!     `tx = false`): no frame goes to the old AP. Authentication and
//!     association wait 200 ms for a response and try 3 times
//!     (`IEEE80211_AUTH_TIMEOUT`, `IEEE80211_AUTH_MAX_TRIES`, and their
//!     `ASSOC` twins). When beacons stop instead, mac80211's connection
//!     loss sends a Deauthentication (reason 4, inactivity) before the
//!     station scans afresh.
//! - `threshold` ([`Roaming::Threshold`]): an explicit roam threshold as
//!   Apple documents for iOS ("Wi-Fi roaming support in Apple devices",
//!   Apple Platform Deployment): when the averaged signal falls below the
//!   trigger (−70 dBm by default) the station scans (the same dwells as
//!   above, again every `rescan` while it stays below), and roams to an AP
//!   at least `delta` stronger (8 dB, Apple's figure for a device passing
//!   data). It leaves its old AP with a Disassociation (reason 8, "leaving
//!   the BSS") before it reassociates.
//!
//! Not modelled: mac80211's null-data frame with the power-management bit
//! that asks the AP to buffer while the station is off channel (the AP's
//! frames for it are retried and lost meanwhile), and its probing of a
//! silent AP before declaring the connection lost.

use super::{Bss, Mgmt, MgmtBody, MgmtEvent, MgmtTimer, StaState};
use crate::ids::{Dst, NodeId};
use crate::trace::ConnEvent;
use crate::units::{Dbm, SimTime};

/// How a station roams while associated (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Roaming {
    /// madwifi 0.9: no scan while associated.
    None,
    /// wpa_supplicant's `bgscan="simple:…"` over mac80211.
    BgscanSimple {
        short_interval: SimTime,
        long_interval: SimTime,
        /// `None`: no signal monitoring (scans every `short_interval`).
        signal_threshold: Option<Dbm>,
    },
    /// Scan below `threshold`; roam to an AP `delta` dB stronger.
    Threshold {
        threshold: Dbm,
        delta: f64,
        rescan: SimTime,
    },
}

/// mac80211's beacon signal average weight (`ewma_beacon_signal`: 1/4).
const AVE_WEIGHT: f64 = 4.0;
/// Beacons averaged before signal events start (`IEEE80211_SIGNAL_AVE_MIN_COUNT`).
const AVE_MIN_COUNT: u32 = 4;
/// The hysteresis bgscan simple asks the driver for (`wpa_drv_signal_monitor(…, 4)`).
const CQM_HYSTERESIS: f64 = 4.0;
/// mac80211's active scan: probe delay, then listening after the probe.
const PROBE_DELAY: SimTime = SimTime::from_ms(30);
const CHANNEL_TIME: SimTime = SimTime::from_ms(30);
/// mac80211's passive dwell (HZ/9).
const PASSIVE_CHANNEL_TIME: SimTime = SimTime::from_ms(111);
/// Back on the operating channel between scan channels (HZ/5).
const SUSPEND_TIME: SimTime = SimTime::from_ms(200);
/// mac80211's authentication and association response timeout (HZ/5)
/// and tries (`IEEE80211_AUTH_MAX_TRIES`, `IEEE80211_ASSOC_MAX_TRIES`).
pub(super) const MAC80211_TIMEOUT: SimTime = SimTime::from_ms(200);
pub(super) const MAC80211_RETRANSMISSIONS: u32 = 2;
/// wpa_supplicant's noise floor when the driver gives none (2.4 GHz).
const DEFAULT_NOISE_FLOOR: f64 = -89.0;
/// wpa_supplicant's SNR above which the current AP is good enough.
const GREAT_SNR: f64 = 25.0;
/// 802.11 reason codes: inactivity (deauthentication on connection
/// loss), and leaving the BSS (disassociation before a roam).
pub const REASON_INACTIVITY: u16 = 4;
pub const REASON_LEAVING: u16 = 8;

/// Where a background scan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BgStep {
    /// On scan channel `index`, before the probe request.
    ProbeDelay,
    /// On scan channel `index`, listening.
    Listen,
    /// Back on the operating channel after scan channel `index`.
    Home,
}

/// A background scan in progress.
#[derive(Clone, Copy, Debug)]
pub(super) struct BgScan {
    index: usize,
    step: BgStep,
    start: SimTime,
}

/// What an associated, roaming station keeps.
#[derive(Clone, Debug, Default)]
pub(super) struct RoamState {
    /// mac80211's averaged beacon signal and the beacons behind it.
    avg: Option<f64>,
    count: u32,
    /// The average at the last signal event.
    last_event: Option<f64>,
    /// The AP's operating channel.
    home: u32,
    pub(super) scan: Option<BgScan>,
    /// bgscan simple's state.
    interval: SimTime,
    short_scans: u32,
    max_short_scans: u32,
    last_scan: SimTime,
    /// The AP left by a roam, while joining the next (a reassociation).
    pub(super) prev: Option<NodeId>,
}

/// wpa_supplicant's throughput estimate (kb/s) for an 802.11g AP (54
/// Mb/s) at `snr` dB (`wpas_get_est_tpt`, legacy rates).
fn est_throughput(snr: f64) -> u32 {
    let snr = snr.floor() as i32;
    const STEPS: [(i32, u32); 20] = [
        (1, 1),
        (4, 2),
        (5, 6),
        (6, 9),
        (7, 12),
        (8, 14),
        (9, 16),
        (10, 18),
        (11, 24),
        (12, 27),
        (13, 30),
        (14, 33),
        (15, 36),
        (16, 39),
        (17, 42),
        (18, 45),
        (19, 48),
        (20, 51),
        (21, 54),
        (i32::MAX, 54),
    ];
    let mbps = STEPS
        .iter()
        .find(|(below, _)| snr < *below)
        .map_or(54, |s| s.1);
    mbps * 1000
}

/// `wpa_supplicant_need_to_roam_within_ess` for two 2.4 GHz 802.11g APs:
/// whether to leave an AP heard at `cur` dBm for one at `sel` dBm.
pub fn wpa_need_to_roam(cur: f64, sel: f64, threshold: Option<Dbm>) -> bool {
    let (cur, sel) = (cur.round(), sel.round());
    let cur_snr = cur - DEFAULT_NOISE_FLOOR;
    let (cur_est, sel_est) = (
        f64::from(est_throughput(cur_snr)),
        f64::from(est_throughput(sel - DEFAULT_NOISE_FLOOR)),
    );
    if sel_est > cur_est + 5000.0 {
        return true;
    }
    if cur < 0.0 && cur > sel && sel_est < cur_est * 1.2 {
        return false;
    }
    if cur_est > sel_est + 5000.0 || cur_snr > GREAT_SNR {
        return false;
    }
    let mut min_diff: f64 = match cur {
        c if c < -85.0 => 1.0,
        c if c < -80.0 => 2.0,
        c if c < -75.0 => 3.0,
        c if c < -70.0 => 4.0,
        _ => 5.0,
    };
    min_diff += if cur_est > sel_est * 1.5 {
        10.0
    } else if cur_est > sel_est * 1.2 {
        5.0
    } else if cur_est > sel_est * 1.1 {
        2.0
    } else if cur_est > sel_est {
        1.0
    } else if sel_est > cur_est * 1.5 {
        -10.0
    } else if sel_est > cur_est * 1.2 {
        -5.0
    } else if sel_est > cur_est * 1.1 {
        -2.0
    } else if sel_est > cur_est {
        -1.0
    } else {
        0.0
    };
    if let Some(Dbm(t)) = threshold {
        if cur <= t && sel > t {
            min_diff -= 2.0;
        }
    }
    sel - cur >= min_diff
}

impl Mgmt {
    fn roam_state(&mut self) -> Option<&mut RoamState> {
        match &mut self.bss {
            Bss::Sta(s) => Some(&mut s.roam),
            _ => None,
        }
    }

    /// Association with an AP on `channel` came up at `rssi`: the
    /// roaming profile starts watching it.
    pub(super) fn roam_start(&mut self, now: SimTime, channel: u32, rssi: f64) {
        let roaming = self.cfg.roaming;
        let Some(r) = self.roam_state() else { return };
        *r = RoamState {
            home: channel,
            last_scan: now,
            ..RoamState::default()
        };
        if let Roaming::BgscanSimple {
            short_interval,
            long_interval,
            signal_threshold,
        } = roaming
        {
            r.max_short_scans = (long_interval.as_ns() / short_interval.as_ns().max(1)) as u32 + 1;
            r.interval = match signal_threshold {
                Some(t) if rssi >= t.0 => long_interval,
                _ => short_interval,
            };
            let at = now + r.interval;
            self.arm(at, MgmtTimer::Bgscan);
        }
    }

    /// A beacon of the associated AP at `rssi`: average it and raise the
    /// signal events of the roaming profile.
    pub(super) fn roam_beacon(&mut self, now: SimTime, rssi: f64) {
        let roaming = self.cfg.roaming;
        let threshold = match roaming {
            Roaming::None => return,
            Roaming::BgscanSimple {
                signal_threshold, ..
            } => signal_threshold.map(|t| t.0),
            Roaming::Threshold { threshold, .. } => Some(threshold.0),
        };
        let Some(r) = self.roam_state() else { return };
        let avg = r
            .avg
            .map_or(rssi, |a| (a * (AVE_WEIGHT - 1.0) + rssi) / AVE_WEIGHT);
        r.avg = Some(avg);
        r.count += 1;
        let Some(t) = threshold else { return };
        if r.count < AVE_MIN_COUNT {
            return;
        }
        let (last, scanning) = (r.last_event, r.scan.is_some());
        if let Roaming::Threshold { rescan, .. } = roaming {
            let due = r.last_event.is_none() || now.saturating_sub(r.last_scan) >= rescan;
            if avg < t && due && !scanning {
                r.last_event = Some(avg);
                self.bg_scan_start(now);
            }
            return;
        }
        let above = if avg < t && last.is_none_or(|l| avg < l - CQM_HYSTERESIS) {
            false
        } else if avg > t && last.is_none_or(|l| avg > l + CQM_HYSTERESIS) {
            true
        } else {
            return;
        };
        r.last_event = Some(avg);
        self.bgscan_signal_change(now, above);
    }

    /// bgscan simple's short and long scan intervals; `None` under the
    /// other roaming profiles.
    fn bgscan_intervals(&self) -> Option<(SimTime, SimTime)> {
        match self.cfg.roaming {
            Roaming::BgscanSimple {
                short_interval,
                long_interval,
                ..
            } => Some((short_interval, long_interval)),
            _ => None,
        }
    }

    /// bgscan simple's `notify_signal_change`.
    fn bgscan_signal_change(&mut self, now: SimTime, above: bool) {
        let Some((short_interval, long_interval)) = self.bgscan_intervals() else {
            return;
        };
        if short_interval == long_interval {
            return;
        }
        let secs = |t: SimTime| t.as_ns() / 1_000_000_000;
        let Some(r) = self.roam_state() else { return };
        let mut scan = false;
        let mut rearm = None;
        if r.interval == long_interval && !above {
            r.interval = short_interval;
            if secs(now) > secs(r.last_scan) + 1 && r.short_scans <= r.max_short_scans {
                scan = true;
            } else if secs(r.last_scan) + secs(long_interval) > secs(now) + secs(short_interval) {
                rearm = Some(now + short_interval);
            }
        } else if r.interval == short_interval && above {
            r.interval = long_interval;
            rearm = Some(now + long_interval);
        } else if !above && secs(now) > secs(r.last_scan) + 10 {
            scan = true;
        }
        if scan {
            rearm = Some(now);
        }
        if let Some(at) = rearm {
            self.arm(at, MgmtTimer::Bgscan);
        }
    }

    /// bgscan simple's interval timer.
    pub(super) fn bgscan_timeout(&mut self, now: SimTime) {
        let Some((short_interval, long_interval)) = self.bgscan_intervals() else {
            return;
        };
        if self.associated_ap().is_none() {
            return;
        }
        let Some(r) = self.roam_state() else { return };
        if r.scan.is_some() {
            let at = now + r.interval;
            self.arm(at, MgmtTimer::Bgscan);
            return;
        }
        if r.interval == short_interval {
            r.short_scans += 1;
            if r.short_scans >= r.max_short_scans {
                r.interval = long_interval;
            }
        } else if r.short_scans > 0 {
            r.short_scans -= 1;
        }
        self.bg_scan_start(now);
    }

    /// Leaves the operating channel for the first scan channel.
    fn bg_scan_start(&mut self, now: SimTime) {
        let ap = self.associated_ap();
        let avg = self.roam_state().and_then(|r| r.avg);
        if let Some(ap) = ap {
            self.conn(ap, ConnEvent::BackgroundScan, avg.unwrap_or(f64::NAN));
        }
        let Some(r) = self.roam_state() else { return };
        r.last_scan = now;
        r.scan = Some(BgScan {
            index: 0,
            step: BgStep::ProbeDelay,
            start: now,
        });
        self.bg_channel(now, 0);
    }

    /// Tunes to scan channel `index` and waits the probe delay (or the
    /// passive dwell).
    fn bg_channel(&mut self, now: SimTime, index: usize) {
        let channel = self.cfg.scan_channels[index];
        self.channel = channel;
        let active = self.cfg.active_scan && !self.cfg.listen_only.contains(&channel);
        let (step, dwell) = if active {
            (BgStep::ProbeDelay, PROBE_DELAY)
        } else {
            (BgStep::Listen, PASSIVE_CHANNEL_TIME)
        };
        if let Some(r) = self.roam_state() {
            if let Some(s) = &mut r.scan {
                (s.index, s.step) = (index, step);
            }
        }
        self.arm(now + dwell, MgmtTimer::ScanDwell);
    }

    /// The dwell timer of a background scan fired.
    pub(super) fn bg_scan_step(&mut self, now: SimTime) {
        let Some(r) = self.roam_state() else { return };
        let Some(scan) = r.scan else { return };
        let (home, last) = (r.home, scan.index + 1 == self.cfg.scan_channels.len());
        let step = |m: &mut Mgmt, step: Option<BgStep>| {
            if let Some(r) = m.roam_state() {
                r.scan = step.map(|step| BgScan { step, ..scan });
            }
        };
        match scan.step {
            BgStep::ProbeDelay => {
                step(self, Some(BgStep::Listen));
                self.send(Dst::Broadcast, MgmtBody::ProbeReq, true);
                self.arm(now + CHANNEL_TIME, MgmtTimer::ScanDwell);
            }
            BgStep::Listen => {
                self.channel = home;
                if last {
                    step(self, None);
                    self.bg_scan_done(now, scan.start);
                } else {
                    step(self, Some(BgStep::Home));
                    self.arm(now + SUSPEND_TIME, MgmtTimer::ScanDwell);
                }
            }
            BgStep::Home => self.bg_channel(now, scan.index + 1),
        }
    }

    /// A background scan that started at `start` is over: pick and
    /// perhaps roam.
    fn bg_scan_done(&mut self, now: SimTime, start: SimTime) {
        let roaming = self.cfg.roaming;
        if let Roaming::BgscanSimple { .. } = roaming {
            let at = now + self.roam_state().map_or(SimTime::ZERO, |r| r.interval);
            self.arm(at, MgmtTimer::Bgscan);
        }
        let Some(current) = self.associated_ap() else {
            return;
        };
        let Bss::Sta(sta) = &self.bss else { return };
        let cur = sta.roam.avg.unwrap_or(f64::NEG_INFINITY);
        let est = |level: f64| est_throughput(level - DEFAULT_NOISE_FLOOR);
        let best = sta
            .entries
            .iter()
            .filter(|e| e.heard >= start)
            .max_by(|a, b| {
                est(a.level)
                    .cmp(&est(b.level))
                    .then(a.level.total_cmp(&b.level))
                    .then(b.ap.cmp(&a.ap))
            })
            .map(|e| (e.ap, e.channel, e.level));
        let Some((ap, channel, level)) = best else {
            return;
        };
        if ap == current {
            return;
        }
        let go = match roaming {
            Roaming::None => false,
            Roaming::BgscanSimple {
                signal_threshold, ..
            } => wpa_need_to_roam(cur, level, signal_threshold),
            Roaming::Threshold { delta, .. } => level >= cur + delta,
        };
        if go {
            self.roam_to(now, current, ap, channel, level);
        }
    }

    /// Leaves `current` for `ap` on `channel`, heard at `level`.
    fn roam_to(&mut self, now: SimTime, current: NodeId, ap: NodeId, channel: u32, level: f64) {
        self.conn(ap, ConnEvent::Roam, level);
        self.leave(current);
        if let Some(r) = self.roam_state() {
            r.prev = Some(current);
        }
        self.conn(ap, ConnEvent::ApSelected, level);
        if let Roaming::Threshold { .. } = self.cfg.roaming {
            let reason = REASON_LEAVING;
            return self.farewell(current, MgmtBody::Disassoc { reason }, Some((ap, channel)));
        }
        self.channel = channel;
        self.authenticate(now, ap, 0);
    }

    /// The station is no longer with `ap`: its scan and timers stop.
    fn leave(&mut self, ap: NodeId) {
        self.cancel(MgmtTimer::Watchdog);
        self.cancel(MgmtTimer::Bgscan);
        self.cancel(MgmtTimer::ScanDwell);
        if let Some(r) = self.roam_state() {
            r.scan = None;
        }
        self.events.push_back(MgmtEvent::LinkDown(ap));
    }

    /// Beacons from `ap` stopped: a roaming (mac80211) station sends a
    /// Deauthentication before it scans; madwifi scans at once.
    pub(super) fn connection_lost(&mut self, now: SimTime, ap: NodeId) {
        if self.cfg.roaming == Roaming::None {
            self.events.push_back(MgmtEvent::LinkDown(ap));
            return self.scan_channel(now, 0);
        }
        self.leave(ap);
        let home = self.roam_state().map(|r| {
            r.prev = None;
            r.home
        });
        // Back from a background scan, if beacons stopped during one.
        self.channel = home.unwrap_or(self.channel);
        let reason = REASON_INACTIVITY;
        self.farewell(ap, MgmtBody::Deauth { reason }, None);
    }

    /// Sends `body` to the AP left, and stays on its channel until the
    /// MAC is done with it; then joins `next` (AP, channel) or scans.
    fn farewell(&mut self, ap: NodeId, body: MgmtBody, next: Option<(NodeId, u32)>) {
        self.send(Dst::Node(ap), body, true);
        if let Bss::Sta(s) = &mut self.bss {
            s.state = StaState::Leaving { next };
        }
    }

    /// The MAC is done with a farewell frame (delivered or not).
    pub fn handle_farewell_done(&mut self, now: SimTime) {
        let Bss::Sta(s) = &self.bss else { return };
        let StaState::Leaving { next } = s.state else {
            return;
        };
        match next {
            Some((ap, channel)) => {
                self.channel = channel;
                self.authenticate(now, ap, 0);
            }
            None => self.scan_channel(now, 0),
        }
    }
}

#[cfg(test)]
mod tests;
