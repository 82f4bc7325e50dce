//! What the tests of management and of roaming share: a station's
//! configuration and draining a `Mgmt`'s transmissions and timers.

use super::*;

pub(super) fn ms(n: u64) -> SimTime {
    SimTime::from_ms(n)
}

/// Three channels, 100 ms beacons and active scans, madwifi's filters.
pub(super) fn config(
    driver: DriverProfile,
    selection_threshold: Option<Dbm>,
    roaming: Roaming,
) -> MgmtConfig {
    MgmtConfig {
        beacon_interval: ms(100),
        scan_channels: vec![1, 6, 11],
        listen_only: Vec::new(),
        scan_dwell: ms(100),
        active_scan: true,
        scan_phase: false,
        selection_threshold,
        rssi_filter: 10,
        driver,
        beacon_miss_limit: 7,
        inactivity_timeout: SimTime::from_secs_f64(300.0),
        roaming,
    }
}

pub(super) fn sent(m: &mut Mgmt) -> Vec<(Dst, MgmtBody)> {
    std::iter::from_fn(|| m.poll_transmit())
        .map(|f| (f.dst, f.body))
        .collect()
}

pub(super) fn timers(m: &mut Mgmt) -> Vec<(MgmtTimer, SimTime)> {
    std::iter::from_fn(|| m.poll_timer())
        .map(|(t, at, _)| (t, at))
        .collect()
}
