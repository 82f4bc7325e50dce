//! Tests of `mgmt` per (state, event).

use super::fixtures::{config, ms, sent, timers};
use super::*;

const AP: NodeId = NodeId(0);
const STA: NodeId = NodeId(1);

fn cfg(driver: DriverProfile) -> MgmtConfig {
    config(driver, Some(Dbm(-87.0)), Roaming::None)
}

fn station(driver: DriverProfile) -> Mgmt {
    station_with(cfg(driver))
}

/// A station with these settings, started at zero.
fn station_with(cfg: MgmtConfig) -> Mgmt {
    let mut m = Mgmt::new(Role::Sta, cfg, 1, Stream::new("run", 1, 0, "t"));
    m.start(SimTime::ZERO);
    m
}

fn events(m: &mut Mgmt) -> Vec<MgmtEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

fn drain(m: &mut Mgmt) {
    sent(m);
    timers(m);
    events(m);
}

fn beacon() -> MgmtBody {
    MgmtBody::Beacon { map: None }
}

/// A station that has selected the AP on channel 6 (its beacon heard
/// within the least dwell there) and sent its authentication request
/// at 300 ms.
fn authenticating() -> Mgmt {
    let mut m = station(DriverProfile::Madwifi);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    m.handle_frame(ms(110), AP, beacon(), Dbm(-60.0), 6);
    m.handle_timeout(ms(200), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(300), MgmtTimer::ScanDwell, None);
    drain(&mut m);
    m
}

fn associated() -> Mgmt {
    let mut m = authenticating();
    m.handle_frame(ms(310), AP, MgmtBody::Auth { seq: 2 }, Dbm(-60.0), 6);
    m.handle_frame(ms(320), AP, MgmtBody::AssocResp, Dbm(-60.0), 6);
    drain(&mut m);
    m
}

#[test]
fn test_scanning_start_probes_the_first_channel() {
    let mut m = station(DriverProfile::Madwifi);
    assert_eq!(m.channel(), 1);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(100))]);
}

#[test]
fn test_scanning_dwell_moves_to_the_next_channel() {
    let mut m = station(DriverProfile::Madwifi);
    drain(&mut m);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 6);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(200))]);
}

#[test]
fn test_scanning_listens_only_on_the_other_band_and_dwells_there_in_full() {
    let mut m = station_with(MgmtConfig {
        scan_channels: vec![1, 36, 6],
        listen_only: vec![36],
        ..cfg(DriverProfile::Madwifi)
    });
    drain(&mut m);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 36);
    assert_eq!(sent(&mut m), vec![]);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(200))]);
    m.handle_timeout(ms(200), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 6);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
}

#[test]
fn test_scanning_beacon_creates_an_entry() {
    let mut m = station(DriverProfile::Madwifi);
    m.handle_frame(ms(50), AP, beacon(), Dbm(-70.0), 1);
    assert_eq!(
        events(&mut m),
        vec![MgmtEvent::Conn {
            peer: AP,
            event: ConnEvent::FirstBeacon,
            value: -70.0
        }]
    );
    assert_eq!(m.filtered_rssi(AP), Some(Dbm(-70.0)));
    m.handle_frame(ms(150), AP, beacon(), Dbm(-60.0), 1);
    assert_eq!(
        m.filtered_rssi(AP),
        Some(Dbm(-69.0)),
        "low-pass filtered with L = 10"
    );
}

#[test]
fn test_scanning_cycle_end_selects_the_ap_and_authenticates() {
    let mut m = station(DriverProfile::Madwifi);
    m.handle_timeout(ms(100), MgmtTimer::ScanDwell, None);
    m.handle_frame(ms(110), AP, beacon(), Dbm(-60.0), 6);
    m.handle_timeout(ms(200), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(300), MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 6, "back to the AP's channel");
    assert_eq!(
        sent(&mut m).last(),
        Some(&(Dst::Node(AP), MgmtBody::Auth { seq: 1 }))
    );
    let ev = events(&mut m);
    assert!(ev.contains(&MgmtEvent::Conn {
        peer: AP,
        event: ConnEvent::ApSelected,
        value: -60.0
    }));
    assert_eq!(
        timers(&mut m).last(),
        Some(&(MgmtTimer::Response, ms(5300)))
    );
}

#[test]
fn test_scanning_cycle_end_without_candidates_scans_again() {
    let mut m = station(DriverProfile::Madwifi);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-90.0), 1);
    drain(&mut m);
    for t in [100, 200, 300] {
        m.handle_timeout(ms(t), MgmtTimer::ScanDwell, None);
    }
    assert_eq!(m.channel(), 1);
    assert_eq!(
        sent(&mut m).last(),
        Some(&(Dst::Broadcast, MgmtBody::ProbeReq))
    );
}

#[test]
fn test_scanning_beacon_after_the_least_dwell_ends_the_dwell() {
    let mut m = station(DriverProfile::Madwifi);
    drain(&mut m);
    // Within the 20 ms least dwell: the station stays.
    m.handle_frame(ms(10), AP, beacon(), Dbm(-60.0), 1);
    assert_eq!(m.channel(), 1);
    assert_eq!(timers(&mut m), vec![]);
    // Past it: on to the next channel at once, probing there.
    m.handle_frame(ms(25), AP, MgmtBody::ProbeResp, Dbm(-60.0), 1);
    assert_eq!(m.channel(), 6);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::ScanDwell, ms(125))]);
}

#[test]
fn test_scanning_entry_unheard_for_more_than_two_passes_is_purged() {
    // Heard too weak to pick in the first pass, then strongly: filtered.
    let mut m = station(DriverProfile::Madwifi);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-90.0), 1);
    for t in [100, 200, 300] {
        m.handle_timeout(ms(t), MgmtTimer::ScanDwell, None);
    }
    m.handle_frame(ms(310), AP, beacon(), Dbm(-60.0), 1);
    assert_eq!(m.filtered_rssi(AP), Some(Dbm(-87.0)));
    // Heard again only after three silent passes: purged, seeded afresh.
    let mut m = station(DriverProfile::Madwifi);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-90.0), 1);
    for t in (1..=12).map(|k| 100 * k) {
        m.handle_timeout(ms(t), MgmtTimer::ScanDwell, None);
    }
    m.handle_frame(ms(1210), AP, beacon(), Dbm(-60.0), 1);
    assert_eq!(m.filtered_rssi(AP), Some(Dbm(-60.0)));
}

#[test]
fn test_scanning_starts_at_a_random_phase() {
    let mut cfg = cfg(DriverProfile::Madwifi);
    cfg.scan_phase = true;
    let mut m = station_with(cfg);
    assert_eq!(sent(&mut m), vec![], "silent until its phase");
    let t = timers(&mut m);
    assert_eq!(t.len(), 1);
    assert!(
        t[0].0 == MgmtTimer::ScanDwell && t[0].1 > SimTime::ZERO && t[0].1 < ms(300),
        "{t:?}"
    );
    m.handle_timeout(t[0].1, MgmtTimer::ScanDwell, None);
    assert_eq!(m.channel(), 1);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, MgmtBody::ProbeReq)]);
}

#[test]
fn test_authenticating_response_starts_association() {
    let mut m = authenticating();
    m.handle_frame(ms(310), AP, MgmtBody::Auth { seq: 2 }, Dbm(-60.0), 6);
    assert_eq!(sent(&mut m), vec![(Dst::Node(AP), MgmtBody::AssocReq)]);
    assert!(events(&mut m).contains(&MgmtEvent::Conn {
        peer: AP,
        event: ConnEvent::AuthOk,
        value: -60.0
    }));
}

#[test]
fn test_authenticating_timeout_retries_once_then_picks_again_from_the_cache() {
    let auth = (Dst::Node(AP), MgmtBody::Auth { seq: 1 });
    let mut m = authenticating();
    m.handle_timeout(ms(5300), MgmtTimer::Response, None);
    assert_eq!(sent(&mut m), vec![auth.clone()], "the one retransmission");
    // The join failed once; the fresh scan cache still offers the AP.
    m.handle_timeout(ms(10_300), MgmtTimer::Response, None);
    assert_eq!(sent(&mut m), vec![auth.clone()], "picked again at once");
    assert_eq!(m.channel(), 6);
    // Failed twice: the AP sits out a pass, which gives a failure back.
    m.handle_timeout(ms(15_300), MgmtTimer::Response, None);
    m.handle_timeout(ms(20_300), MgmtTimer::Response, None);
    assert_eq!(
        sent(&mut m),
        vec![auth.clone(), (Dst::Broadcast, MgmtBody::ProbeReq)]
    );
    assert_eq!(m.channel(), 1);
    m.handle_timeout(ms(20_400), MgmtTimer::ScanDwell, None);
    m.handle_frame(ms(20_410), AP, beacon(), Dbm(-60.0), 6);
    m.handle_timeout(ms(20_500), MgmtTimer::ScanDwell, None);
    m.handle_timeout(ms(20_600), MgmtTimer::ScanDwell, None);
    assert_eq!(sent(&mut m).last(), Some(&auth), "its next pass picks it");
}

#[test]
fn test_scanning_without_a_floor_picks_an_ap_heard_however_weak() {
    let mut cfg = cfg(DriverProfile::Madwifi);
    cfg.selection_threshold = None;
    let mut m = station_with(cfg);
    m.handle_frame(ms(10), AP, beacon(), Dbm(-100.0), 1);
    for t in [100, 200, 300] {
        m.handle_timeout(ms(t), MgmtTimer::ScanDwell, None);
    }
    assert_eq!(
        sent(&mut m).last(),
        Some(&(Dst::Node(AP), MgmtBody::Auth { seq: 1 }))
    );
}

#[test]
fn test_associating_response_brings_the_link_up() {
    let mut m = authenticating();
    m.handle_frame(ms(310), AP, MgmtBody::Auth { seq: 2 }, Dbm(-60.0), 6);
    drain(&mut m);
    m.handle_frame(ms(320), AP, MgmtBody::AssocResp, Dbm(-61.0), 6);
    assert_eq!(
        events(&mut m),
        vec![
            MgmtEvent::Conn {
                peer: AP,
                event: ConnEvent::Associated,
                value: -61.0
            },
            MgmtEvent::LinkUp(AP)
        ]
    );
    assert_eq!(m.associated_ap(), Some(AP));
    assert_eq!(timers(&mut m), vec![(MgmtTimer::Watchdog, ms(420))]);
}

#[test]
fn test_associated_beacon_is_remembered() {
    let mut m = associated();
    m.handle_frame(ms(400), AP, beacon(), Dbm(-60.0), 6);
    m.handle_frame(ms(500), AP, beacon(), Dbm(-60.0), 6);
    assert_eq!(m.beacons_after(ms(350)), 2);
    assert_eq!(
        events(&mut m).last(),
        Some(&MgmtEvent::Beacon { ap: AP, map: None })
    );
}

#[test]
fn test_associated_missed_beacons_disassociate() {
    let mut m = associated();
    m.handle_timeout(ms(420), MgmtTimer::Watchdog, None);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::Watchdog, ms(520))]);
    m.handle_timeout(ms(1020), MgmtTimer::Watchdog, None);
    let ev = events(&mut m);
    assert_eq!(
        ev[..2],
        [
            MgmtEvent::Conn {
                peer: AP,
                event: ConnEvent::Disassociated,
                value: 0.0
            },
            MgmtEvent::LinkDown(AP)
        ]
    );
    assert_eq!(m.associated_ap(), None);
    assert_eq!(m.channel(), 1, "scanning again");
}

#[test]
fn test_ap_start_beacons_at_a_random_phase() {
    let mut m = Mgmt::new(
        Role::Ap,
        cfg(DriverProfile::Madwifi),
        6,
        Stream::new("run", 1, 0, "t"),
    );
    m.start(SimTime::ZERO);
    let t = timers(&mut m);
    assert_eq!(t[0].0, MgmtTimer::Beacon);
    assert!(t[0].1 < ms(100));
    m.handle_timeout(t[0].1, MgmtTimer::Beacon, None);
    assert_eq!(sent(&mut m), vec![(Dst::Broadcast, beacon())]);
    assert_eq!(timers(&mut m), vec![(MgmtTimer::Beacon, t[0].1 + ms(100))]);
}

#[test]
fn test_ap_answers_probe_auth_and_association() {
    let mut m = Mgmt::new(
        Role::Ap,
        cfg(DriverProfile::Madwifi),
        6,
        Stream::new("run", 1, 0, "t"),
    );
    m.handle_frame(ms(1), STA, MgmtBody::ProbeReq, Dbm(-60.0), 6);
    m.handle_frame(ms(2), STA, MgmtBody::Auth { seq: 1 }, Dbm(-60.0), 6);
    m.handle_frame(ms(3), STA, MgmtBody::AssocReq, Dbm(-60.0), 6);
    let replies: Vec<MgmtBody> = sent(&mut m).into_iter().map(|(_, b)| b).collect();
    assert_eq!(
        replies,
        vec![
            MgmtBody::ProbeResp,
            MgmtBody::Auth { seq: 2 },
            MgmtBody::AssocResp
        ]
    );
    assert!(m.has_station(STA));
    assert_eq!(events(&mut m).last(), Some(&MgmtEvent::LinkUp(STA)));
}

#[test]
fn test_ap_inactive_station_is_dropped() {
    let mut m = Mgmt::new(
        Role::Ap,
        cfg(DriverProfile::Madwifi),
        6,
        Stream::new("run", 1, 0, "t"),
    );
    m.handle_frame(ms(3), STA, MgmtBody::AssocReq, Dbm(-60.0), 6);
    drain(&mut m);
    m.handle_timeout(SimTime::from_secs_f64(100.0), MgmtTimer::Watchdog, None);
    assert!(m.has_station(STA));
    m.handle_heard(SimTime::from_secs_f64(200.0), STA);
    m.handle_timeout(SimTime::from_secs_f64(400.0), MgmtTimer::Watchdog, None);
    assert!(
        m.has_station(STA),
        "heard 200 s ago, within the 300 s timeout"
    );
    m.handle_timeout(SimTime::from_secs_f64(600.0), MgmtTimer::Watchdog, None);
    assert!(!m.has_station(STA));
    assert_eq!(events(&mut m).last(), Some(&MgmtEvent::LinkDown(STA)));
}
