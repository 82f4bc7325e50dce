//! OFDM receivers that equalise with the preamble's channel estimate
//! (`radio.ofdm_channel_estimate = "preamble"`): at 140 mph a long OFDM
//! frame outlives its estimate; a DSSS frame, detected differentially,
//! and a frame between ends that stand still do not notice.

mod common;
use common::id;
use wayside_sim::trace::PhyEvent;
use wayside_sim::RunOutput;

// A car drives away from a parked one at 140 mph, 40 m to 165 m apart:
// free space with Rician fading (K = 3 dB), 20 dBm, at least 30 dB above
// the noise. The car broadcasts 2304-byte frames at the lowest basic rate.
const PAIR: &str = r#"
duration = "2 s"
[environment]
path_loss = "free-space"
noise_floor = "-100 dBm"
fading = "rician"
rician_k = "3 dB"
[radio]
standard = "802.11g"
b_compatible = false
basic_rate = "24 Mbps"
[[node]]
name = "parked"
position = [0, 0]
tx_power = "20 dBm"
[[node]]
name = "car"
position = [40, 0]
mobility = { model = "line", speed = "140 mph", heading = 0 }
tx_power = "20 dBm"
[[traffic]]
kind = "cbr"
from = "car"
to = "broadcast"
payload = "2304 B"
interval = "5 ms"
"#;

/// The frames `parked` received from `car`, and those it lost.
fn received(out: &RunOutput) -> (usize, usize) {
    let (a, b) = (id(out, "car"), id(out, "parked"));
    let f = &out.trace.frames;
    let count = |ev: PhyEvent| {
        (0..f.len())
            .filter(|&i| f.node[i] == b && f.peer[i] == a && f.event[i] == ev as u8)
            .count()
    };
    (count(PhyEvent::Rx), count(PhyEvent::Drop))
}

fn ratio((got, lost): (usize, usize)) -> f64 {
    got as f64 / (got + lost) as f64
}

#[test]
fn a_long_ofdm_frame_outlives_its_estimate_at_140_mph() {
    let preamble = "radio.ofdm_channel_estimate=\"preamble\"";
    let ideal = ratio(received(&common::run(PAIR, &[], 1)));
    let aged = ratio(received(&common::run(PAIR, &[preamble], 1)));
    // 24 Mb/s, 0.77 ms: the ends travel 4.8 cm, 0.39 wavelengths; the
    // mean error at a frame's middle is 2(1 - J0(2π·0.2))/(K + 1) = 0.24
    // of the signal, 6 dB below it.
    assert!(ideal > 0.97, "tracked: {ideal}");
    assert!(aged < 0.5, "estimated from the preamble: {aged}");
}

#[test]
fn dsss_and_standing_ends_do_not_notice() {
    let preamble = "radio.ofdm_channel_estimate=\"preamble\"";
    let dsss = ["radio.b_compatible=true", "radio.basic_rate=\"11 Mbps\""];
    let tracked = received(&common::run(PAIR, &dsss, 1));
    let estimated = received(&common::run(PAIR, &[dsss[0], dsss[1], preamble], 1));
    assert_eq!(tracked, estimated);
    assert!(tracked.0 > 0);
    let parked = "node.car.mobility={ model = \"static\" }";
    assert_eq!(
        received(&common::run(PAIR, &[parked], 1)),
        received(&common::run(PAIR, &[parked, preamble], 1))
    );
}
