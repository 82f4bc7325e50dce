//! Tests of roaming: wpa_supplicant's roam decision, bgscan's background
//! scan and reassociation, farewells, and the AP's side.

use super::super::fixtures::{config, ms, sent, timers};
use super::super::*;
use super::*;
use crate::rng::Stream;

const AP: NodeId = NodeId(0);
const STA: NodeId = NodeId(1);
const AP2: NodeId = NodeId(2);

fn bgscan() -> Roaming {
    Roaming::BgscanSimple {
        short_interval: SimTime::from_secs_f64(30.0),
        long_interval: SimTime::from_secs_f64(300.0),
        signal_threshold: Some(Dbm(-65.0)),
    }
}

fn cfg(roaming: Roaming) -> MgmtConfig {
    config(DriverProfile::Madwifi, None, roaming)
}

fn conns(m: &mut Mgmt) -> Vec<(NodeId, ConnEvent)> {
    std::iter::from_fn(|| m.poll_event())
        .filter_map(|e| match e {
            MgmtEvent::Conn { peer, event, .. } => Some((peer, event)),
            _ => None,
        })
        .collect()
}

fn drain(m: &mut Mgmt) {
    sent(m);
    timers(m);
    conns(m);
}

fn beacon() -> MgmtBody {
    MgmtBody::Beacon { map: None }
}

/// A station of `roaming` associated with AP on channel 1 at 320 ms,
/// heard at -60 dBm.
fn associated(roaming: Roaming) -> Mgmt {
    let mut m = Mgmt::new(Role::Sta, cfg(roaming), 1, Stream::new("run", 1, 0, "t"));
    m.start(SimTime::ZERO);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-60.0), 1);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(200), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(300), MgmtTimer::ScanDwell, None);
    m.handle_frame(ms(310), AP, MgmtBody::Auth { seq: 2 }, Dbm(-60.0), 1);
    m.handle_frame(ms(320), AP, MgmtBody::AssocResp, Dbm(-60.0), 1);
    assert_eq!(m.associated_ap(), Some(AP));
    drain(&mut m);
    m
}

#[test]
fn test_need_to_roam_follows_wpa_supplicants_thresholds() {
    // Current SNR over 25 dB (−89 dBm floor): stay, however strong the other.
    assert!(!wpa_need_to_roam(-60.0, -50.0, None));
    // Equal throughput estimates (54 Mb/s from 21 dB): 5 dB needed at −66.
    assert!(!wpa_need_to_roam(-66.0, -62.0, None));
    assert!(wpa_need_to_roam(-66.0, -61.0, None));
    // Crossing bgscan's threshold takes 2 dB off.
    assert!(wpa_need_to_roam(-66.0, -63.0, Some(Dbm(-65.0))));
    // A better throughput estimate by over 5 Mb/s roams at once.
    assert!(wpa_need_to_roam(-80.0, -77.0, None));
    // A weaker AP is never chosen.
    assert!(!wpa_need_to_roam(-80.0, -82.0, None));
}

#[test]
fn test_bgscan_arms_its_interval_from_the_association_signal() {
    let mut m = Mgmt::new(Role::Sta, cfg(bgscan()), 1, Stream::new("run", 1, 0, "t"));
    m.start(SimTime::ZERO);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-60.0), 1);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(200), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(300), MgmtTimer::ScanDwell, None);
    m.handle_frame(ms(310), AP, MgmtBody::Auth { seq: 2 }, Dbm(-60.0), 1);
    timers(&mut m);
    m.handle_frame(ms(320), AP, MgmtBody::AssocResp, Dbm(-60.0), 1);
    let t = timers(&mut m);
    assert!(
        t.contains(&(MgmtTimer::Bgscan, ms(320) + SimTime::from_secs_f64(300.0))),
        "above the threshold: the long interval; {t:?}"
    );
}

#[test]
fn test_bgscan_signal_drop_scans_off_channel_with_mac80211_dwells() {
    let mut m = associated(bgscan());
    // Four beacons average in; the fourth, below −65 dBm, raises the event.
    for (i, rssi) in [-70.0, -70.0, -70.0, -70.0].into_iter().enumerate() {
        m.handle_frame(ms(2000 + 100 * i as u64), AP, beacon(), Dbm(rssi), 1);
    }
    let t = timers(&mut m);
    assert!(t.contains(&(MgmtTimer::Bgscan, ms(2300))), "{t:?}");
    assert!(conns(&mut m).is_empty());
    m.handle_timeout(ms(2300), MgmtTimer::Bgscan, None);
    assert_eq!(conns(&mut m), vec![(AP, ConnEvent::BackgroundScan)]);
    assert_eq!(m.channel(), 1, "the first scan channel");
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(2330))]);
    m.handle_timeout(ms(2330), MgmtTimer::ScanDwell, None);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(2360))]);
    m.handle_timeout(ms(2360), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 1, "home between channels");
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(2560))]);
    m.handle_timeout(ms(2560), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 6);
    assert_eq!(m.associated_ap(), Some(AP), "still associated off channel");
}

/// Runs a background scan from `at` over channels 1, 6 and 11, in which
/// AP2 on channel 6 is heard at `level`.
fn scan_hearing_ap2(m: &mut Mgmt, at: SimTime, level: f64) {
    m.handle_timeout(at, MgmtTimer::Bgscan, None);
    let mut now = at;
    for (step, wait) in [30, 30, 200, 30, 30, 200, 30, 30].into_iter().enumerate() {
        now = now + ms(wait);
        m.handle_timeout(now, MgmtTimer::ScanDwell, None);
        if step == 3 {
            assert_eq!(m.channel(), 6);
            m.handle_frame(now + ms(5), AP2, MgmtBody::ProbeResp, Dbm(level), 6);
        }
    }
}

#[test]
fn test_bgscan_roams_by_reassociation_without_a_frame_to_the_old_ap() {
    let mut m = associated(bgscan());
    for i in 0..4 {
        m.handle_frame(ms(2000 + 100 * i), AP, beacon(), Dbm(-75.0), 1);
    }
    drain(&mut m);
    scan_hearing_ap2(&mut m, ms(2300), -66.0);
    let c = conns(&mut m);
    assert!(c.contains(&(AP2, ConnEvent::Roam)), "{c:?}");
    assert_eq!(m.channel(), 6);
    assert_eq!(
        sent(&mut m).last(),
        Some(&(Dst::Node(AP2), MgmtBody::Auth { seq: 1 })),
        "mac80211 leaves the old AP as a local state change"
    );
    m.handle_frame(ms(3500), AP2, MgmtBody::Auth { seq: 2 }, Dbm(-66.0), 6);
    assert_eq!(
        sent(&mut m),
        vec![(Dst::Node(AP2), MgmtBody::ReassocReq { current: AP })]
    );
    m.handle_frame(ms(3510), AP2, MgmtBody::ReassocResp, Dbm(-66.0), 6);
    assert_eq!(m.associated_ap(), Some(AP2));
}

#[test]
fn test_bgscan_stays_when_the_other_ap_is_not_enough_better() {
    let mut m = associated(bgscan());
    for i in 0..4 {
        m.handle_frame(ms(2000 + 100 * i), AP, beacon(), Dbm(-68.0), 1);
    }
    drain(&mut m);
    scan_hearing_ap2(&mut m, ms(2300), -66.0);
    assert!(!conns(&mut m).contains(&(AP2, ConnEvent::Roam)));
    assert_eq!(m.associated_ap(), Some(AP));
    assert_eq!(m.channel(), 1);
}

#[test]
fn test_threshold_roam_disassociates_on_the_old_channel_first() {
    let roaming = Roaming::Threshold {
        threshold: Dbm(-70.0),
        delta: 8.0,
        rescan: SimTime::from_secs_f64(10.0),
    };
    let mut m = associated(roaming);
    for i in 0..4 {
        m.handle_frame(ms(2000 + 100 * i), AP, beacon(), Dbm(-78.0), 1);
    }
    let c = conns(&mut m);
    assert_eq!(c, vec![(AP, ConnEvent::BackgroundScan)]);
    drain(&mut m);
    // The scan started on the fourth beacon, at 2300 ms.
    let mut now = ms(2300);
    for (step, wait) in [30, 30, 200, 30, 30, 200, 30, 30].into_iter().enumerate() {
        now = now + ms(wait);
        m.handle_timeout(now, MgmtTimer::ScanDwell, None);
        if step == 3 {
            m.handle_frame(now + ms(5), AP2, MgmtBody::ProbeResp, Dbm(-69.0), 6);
        }
    }
    assert_eq!(
        sent(&mut m).last(),
        Some(&(
            Dst::Node(AP),
            MgmtBody::Disassoc {
                reason: REASON_LEAVING
            }
        ))
    );
    assert_eq!(m.channel(), 1, "on the old AP's channel until it is sent");
    m.handle_farewell_done(now + ms(2));
    assert_eq!(m.channel(), 6);
    assert_eq!(
        sent(&mut m),
        vec![(Dst::Node(AP2), MgmtBody::Auth { seq: 1 })]
    );
}

#[test]
fn test_roaming_station_deauthenticates_when_beacons_stop() {
    let mut m = associated(bgscan());
    m.handle_timeout(ms(1100), MgmtTimer::Watchdog, None);
    assert_eq!(
        sent(&mut m),
        vec![(
            Dst::Node(AP),
            MgmtBody::Deauth {
                reason: REASON_INACTIVITY
            }
        )]
    );
    assert_eq!(m.associated_ap(), None);
    assert_eq!(m.channel(), 1);
    m.handle_farewell_done(ms(1101));
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
}

#[test]
fn test_ap_answers_reassociation_and_drops_a_deauthenticated_station() {
    let mut ap = Mgmt::new(
        Role::Ap,
        cfg(Roaming::None),
        6,
        Stream::new("run", 1, 0, "a"),
    );
    ap.start(SimTime::ZERO);
    drain(&mut ap);
    ap.handle_frame(
        ms(10),
        STA,
        MgmtBody::ReassocReq { current: AP2 },
        Dbm(-60.0),
        6,
    );
    assert_eq!(sent(&mut ap), vec![(Dst::Node(STA), MgmtBody::ReassocResp)]);
    assert!(ap.has_station(STA));
    assert_eq!(conns(&mut ap), vec![(STA, ConnEvent::Associated)]);
    ap.handle_frame(ms(20), STA, MgmtBody::Deauth { reason: 4 }, Dbm(-60.0), 6);
    assert!(!ap.has_station(STA));
    assert_eq!(conns(&mut ap), vec![(STA, ConnEvent::Deauthenticated)]);
}
