//! Rate control at scenario level on `hadaller-highway`: the per-attempt
//! outcome in the frames trace, environment-aware selection trained on
//! earlier passes, beacon hints, and the scenario keys' errors.

use wayside_sim::scenario::{builtin, load};
use wayside_sim::trace::{FrameKind, MacEvent, PhyEvent, TxOutcome};
use wayside_sim::{run_scenario, RunOutput};

const AP: u32 = 0;
const CAR: u32 = 1;
const ENV_AP: &str = "node.ap.rate_control={algorithm=\"environment-aware\", training_passes=2}";
/// The map tests need a connection that starts where the trained map has
/// seen more than 1 Mbps work. With the scenario's dual-band scan the car
/// of seeds 4 and 6 joins so far out (seed 4: first data at -557 m) that
/// only 1 Mbps works there; with the 2.4 GHz scan it joins nearer (-395 m).
const SCAN_24: &str = "management.scan_channels=[1, 6, 11, 7, 2, 3, 4, 5, 8, 9, 10]";

fn run(overrides: &[&str], seed: u64) -> RunOutput {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    run_scenario(builtin("hadaller-highway").unwrap(), &o, Some(seed), 0).unwrap()
}

/// Rows of `node`'s unicast data transmissions to `peer`.
fn data_tx(out: &RunOutput, node: u32, peer: u32) -> Vec<usize> {
    let f = &out.trace.frames;
    (0..f.len())
        .filter(|&i| {
            f.node[i] == node
                && f.peer[i] == peer
                && f.event[i] == PhyEvent::Tx as u8
                && f.kind[i] == FrameKind::Data as u8
        })
        .collect()
}

#[test]
fn every_data_attempt_has_an_outcome_and_acks_match_the_mac() {
    let out = run(&["duration=\"80 s\""], 3);
    let f = &out.trace.frames;
    let rows = data_tx(&out, AP, CAR);
    assert!(rows.len() > 1000, "{}", rows.len());
    let acked = rows
        .iter()
        .filter(|&&i| f.outcome[i] == TxOutcome::Acked as u8)
        .count();
    let unacked = rows
        .iter()
        .filter(|&&i| f.outcome[i] == TxOutcome::Unacked as u8)
        .count();
    // Only a frame still in the air when the run ends may lack an outcome.
    assert!(rows.len() - acked - unacked <= 1);
    assert!(unacked > 0);
    let m = &out.trace.mac;
    let delivered = (0..m.len())
        .filter(|&i| m.node[i] == AP && m.peer[i] == CAR && m.event[i] == MacEvent::Delivered as u8)
        .count();
    assert_eq!(acked, delivered);
    // Receptions and other rows carry none; the peer's position is the car's.
    assert!((0..f.len())
        .filter(|&i| f.event[i] != PhyEvent::Tx as u8)
        .all(|i| f.outcome[i] == TxOutcome::None as u8));
    let i = rows[0];
    assert!(
        f.x[i] == 0.0 && f.peer_x[i] < -100.0,
        "{} {}",
        f.x[i],
        f.peer_x[i]
    );
}

#[test]
fn trained_map_sets_the_initial_rate_and_training_is_deterministic() {
    let untrained = run(
        &[
            "node.ap.rate_control={algorithm=\"environment-aware\"}",
            SCAN_24,
        ],
        4,
    );
    let trained = run(&[ENV_AP, SCAN_24], 4);
    let first = |out: &RunOutput| out.trace.frames.rate_mbps[data_tx(out, AP, CAR)[0]];
    // No map: start at the lowest rate. With the map the connection starts
    // at what the road supports there.
    assert_eq!(first(&untrained), 1.0);
    assert!(first(&trained) > 1.0, "{}", first(&trained));
    let again = run(&[ENV_AP, SCAN_24], 4);
    assert_eq!(again.trace.frames.rate_mbps, trained.trace.frames.rate_mbps);
    assert_eq!(again.trace.frames.time_ns, trained.trace.frames.time_ns);
}

#[test]
fn a_station_with_beacon_hints_uses_the_aps_map_for_its_own_frames() {
    let hints = "node.car.rate_control={algorithm=\"environment-aware\", beacon_hints=true}";
    let first_ack_rate = |out: &RunOutput| out.trace.frames.rate_mbps[data_tx(out, CAR, AP)[0]];
    // TCP ACKs from the car: with the trained AP's hints at a rate the road
    // supports; from an untrained AP (empty map) at the lowest.
    let with_map = run(&[ENV_AP, hints, SCAN_24], 6);
    assert!(
        first_ack_rate(&with_map) > 1.0,
        "{}",
        first_ack_rate(&with_map)
    );
    let empty = run(
        &[
            "node.ap.rate_control={algorithm=\"environment-aware\"}",
            hints,
            SCAN_24,
        ],
        6,
    );
    assert_eq!(first_ack_rate(&empty), 1.0);
}

#[test]
fn environment_aware_keys_are_checked() {
    let error = |o: &[&str]| {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        load(builtin("hadaller-highway").unwrap(), &o, None, 0)
            .expect_err("rejected")
            .0
    };
    let e = error(&["node.car.rate_control={algorithm=\"environment-aware\"}"]);
    assert!(
        e.contains("node.car.rate_control") && e.contains("beacon_hints"),
        "{e}"
    );
    let e = error(&["node.ap.rate_control={algorithm=\"environment-aware\", beacon_hints=true}"]);
    assert!(e.contains("beacon_hints") && e.contains("station"), "{e}");
    let e = error(&["node.ap.rate_control={algorithm=\"samplerate\", training_passes=2}"]);
    assert!(
        e.contains("training_passes") && e.contains("environment-aware"),
        "{e}"
    );
    let e =
        error(&["node.ap.rate_control={algorithm=\"environment-aware\", margin=\"3 furlongs\"}"]);
    assert!(e.contains("margin"), "{e}");
    let e =
        error(&["node.ap.rate_control={algorithm=\"environment-aware\", training_passes=1000}"]);
    assert!(
        e.contains("training_passes") && e.contains("0 to 100"),
        "{e}"
    );
    // The [mac] default reaches the station too.
    let e = error(&["mac.rate_control={algorithm=\"environment-aware\"}"]);
    assert!(
        e.contains("mac.rate_control (used by node.car)") && e.contains("beacon_hints"),
        "{e}"
    );
}
