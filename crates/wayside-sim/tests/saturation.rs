//! Saturation throughput of one sender and one receiver at close range
//! against the closed-form single-station DCF figure:
//! payload / (DIFS + CWmin/2 · slot + data airtime + SIFS + ACK airtime).

mod common;

use wayside_sim::mac::{ACK_BYTES, DATA_OVERHEAD};
use wayside_sim::phy::mode::{Preamble, Standard};

const PAYLOAD: u32 = 1500;

fn closed_form(standard: Standard, b_compatible: bool, rate_mbps: f64) -> f64 {
    let t = standard.timing(b_compatible);
    let mode = standard.mode_by_mbps(rate_mbps).unwrap();
    let ctl = standard.control_rate(mode);
    let data = mode
        .airtime(PAYLOAD + DATA_OVERHEAD, Preamble::Long, standard)
        .as_secs_f64();
    let ack = ctl
        .airtime(ACK_BYTES, Preamble::Long, standard)
        .as_secs_f64();
    let cycle = t.difs.as_secs_f64()
        + t.cw_min as f64 / 2.0 * t.slot.as_secs_f64()
        + data
        + t.sifs.as_secs_f64()
        + ack;
    PAYLOAD as f64 * 8.0 / cycle
}

fn simulated(standard: &str, b_compatible: bool, rate_mbps: f64) -> f64 {
    let overrides = vec![
        format!("radio.standard=\"{standard}\""),
        format!("radio.b_compatible={b_compatible}"),
        format!("mac.rate=\"{rate_mbps} Mbps\""),
        "duration=\"4 s\"".to_string(),
    ];
    common::saturation_bps(&overrides, 4.0)
}

#[test]
fn every_80211b_rate_within_3_percent_of_closed_form() {
    for rate in [1.0, 2.0, 5.5, 11.0] {
        let (sim, cf) = (
            simulated("802.11b", true, rate),
            closed_form(Standard::B, true, rate),
        );
        let err = (sim - cf).abs() / cf;
        println!(
            "802.11b {rate:>4} Mbps: simulated {:.3} Mbps, closed form {:.3} Mbps ({:+.2}%)",
            sim / 1e6,
            cf / 1e6,
            100.0 * (sim - cf) / cf
        );
        assert!(err < 0.03, "802.11b {rate} Mbps: {sim} vs {cf}");
    }
}

#[test]
fn every_80211g_rate_within_3_percent_of_closed_form() {
    // ERP-only (short slot, CWmin 15) and b-compatible (long slot, CWmin 31) timing.
    for b_compatible in [false, true] {
        for rate in [
            1.0, 2.0, 5.5, 6.0, 9.0, 11.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0,
        ] {
            let (sim, cf) = (
                simulated("802.11g", b_compatible, rate),
                closed_form(Standard::G, b_compatible, rate),
            );
            let err = (sim - cf).abs() / cf;
            println!(
                "802.11g (b_compatible={b_compatible}) {rate:>4} Mbps: simulated {:.3} Mbps, closed form {:.3} Mbps ({:+.2}%)",
                sim / 1e6,
                cf / 1e6,
                100.0 * (sim - cf) / cf
            );
            assert!(err < 0.03, "802.11g {rate} Mbps: {sim} vs {cf}");
        }
    }
}
