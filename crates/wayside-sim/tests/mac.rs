//! MAC behaviour at scenario level: retry chains, contention, hidden
//! terminals and RTS/CTS, duplicate filtering, queue overflow.

mod common;
use wayside_sim::trace::{FrameKind, MacEvent, PhyEvent};
use wayside_sim::RunOutput;

fn run(text: &str, overrides: &[&str]) -> RunOutput {
    common::run(text, overrides, 5)
}

fn count(out: &RunOutput, node: u32, event: MacEvent) -> usize {
    let m = &out.trace.mac;
    (0..m.len())
        .filter(|&i| m.node[i] == node && m.event[i] == event as u8)
        .count()
}

const TWO_NODES: &str = r#"
duration = "2 s"
[environment]
path_loss = "free-space"
[radio]
standard = "802.11g"
b_compatible = false
[[node]]
name = "a"
[[node]]
name = "b"
position = [5, 0]
[[traffic]]
kind = "saturate"
from = "a"
to = "b"
"#;

#[test]
fn out_of_range_frames_walk_the_whole_retry_chain_then_fail() {
    let out = run(
        TWO_NODES,
        &[
            "node.b.position=[100000, 0]",
            r#"mac.retry_chain=[{rate="54 Mbps", tries=3}, {rate="11 Mbps", tries=2}, {rate="1 Mbps", tries=2}]"#,
            r#"duration="0.5 s""#,
        ],
    );
    let m = &out.trace.mac;
    let failed: Vec<usize> = (0..m.len())
        .filter(|&i| m.event[i] == MacEvent::Failed as u8)
        .collect();
    assert!(failed.len() > 3);
    assert!(failed.iter().all(|&i| m.attempts[i] == 7));
    assert_eq!(count(&out, 0, MacEvent::Delivered), 0);
    // The data transmissions of the first MSDU: attempts 0..6 at 54,54,54,11,11,1,1 Mbps.
    let f = &out.trace.frames;
    let first: Vec<(u8, f32)> = (0..f.len())
        .filter(|&i| {
            f.event[i] == PhyEvent::Tx as u8 && f.kind[i] == FrameKind::Data as u8 && f.seq[i] == 0
        })
        .map(|i| (f.attempt[i], f.rate_mbps[i]))
        .collect();
    assert_eq!(
        first,
        vec![
            (0, 54.0),
            (1, 54.0),
            (2, 54.0),
            (3, 11.0),
            (4, 11.0),
            (5, 1.0),
            (6, 1.0)
        ]
    );
}

#[test]
fn two_contending_senders_share_the_channel_and_sometimes_collide() {
    let three = format!(
        "{TWO_NODES}\n[[node]]\nname = \"c\"\nposition = [0, 5]\n[[traffic]]\nkind = \"saturate\"\nfrom = \"c\"\nto = \"b\"\n"
    );
    let alone = run(TWO_NODES, &["mac.rate=\"54 Mbps\""]);
    let both = run(&three, &["mac.rate=\"54 Mbps\""]);
    let a_alone = count(&alone, 0, MacEvent::Delivered) as f64;
    let (a, c) = (
        count(&both, 0, MacEvent::Delivered) as f64,
        count(&both, 2, MacEvent::Delivered) as f64,
    );
    // Fair share, and the pair together no better than one sender alone.
    assert!((a - c).abs() / (a + c) < 0.1, "a {a} c {c}");
    assert!(a + c < a_alone * 1.02, "a+c {} alone {a_alone}", a + c);
    assert!(a + c > a_alone * 0.8, "a+c {} alone {a_alone}", a + c);
    // Same-slot backoff expiries collide: some data goes out more than once.
    let f = &both.trace.frames;
    let retries = (0..f.len())
        .filter(|&i| {
            f.event[i] == PhyEvent::Tx as u8
                && f.kind[i] == FrameKind::Data as u8
                && f.attempt[i] > 0
        })
        .count();
    assert!(retries > 10, "retransmissions {retries}");
}

const HIDDEN: &str = r#"
duration = "3 s"
[environment]
path_loss = "two-ray"
[radio]
standard = "802.11g"
b_compatible = false
capture_margin = "off"
[mac]
rate = "6 Mbps"
[[node]]
name = "left"
position = [-500, 0]
[[node]]
name = "ap"
[[node]]
name = "right"
position = [500, 0]
[[traffic]]
kind = "saturate"
from = "left"
to = "ap"
[[traffic]]
kind = "saturate"
from = "right"
to = "ap"
"#;

#[test]
fn hidden_terminals_collide_and_rts_cts_recovers_throughput() {
    let basic = run(HIDDEN, &[]);
    let rts = run(HIDDEN, &["mac.rts_threshold=\"0 B\""]);
    let delivered =
        |o: &RunOutput| count(o, 0, MacEvent::Delivered) + count(o, 2, MacEvent::Delivered);
    let failed = |o: &RunOutput| count(o, 0, MacEvent::Failed) + count(o, 2, MacEvent::Failed);
    // The senders cannot hear each other (1 km, SNR -3 dB): without RTS/CTS most data collides at the AP.
    println!(
        "basic: delivered {} failed {}; rts: delivered {} failed {}",
        delivered(&basic),
        failed(&basic),
        delivered(&rts),
        failed(&rts)
    );
    assert!(
        failed(&basic) > 50,
        "failed without RTS: {}",
        failed(&basic)
    );
    assert!(
        delivered(&rts) > 2 * delivered(&basic),
        "RTS {} vs basic {}",
        delivered(&rts),
        delivered(&basic)
    );
    // With RTS/CTS the AP's CTS silences the other sender: CTS frames are sent.
    let f = &rts.trace.frames;
    assert!(
        (0..f.len()).any(|i| f.kind[i] == FrameKind::Cts as u8 && f.event[i] == PhyEvent::Tx as u8)
    );
}

#[test]
fn retransmissions_already_received_are_flagged_duplicate_not_handed_up_twice() {
    // A weak receiver transmitter and fading: data gets through but some
    // ACKs do not, so the sender retries frames the receiver already has.
    let out = run(
        TWO_NODES,
        &[
            "node.b.position=[150, 0]",
            "node.b.tx_power=\"0 dBm\"",
            "environment.fading=\"rayleigh\"",
            "mac.rate=\"54 Mbps\"",
            "duration=\"5 s\"",
            "node.b.mobility={model=\"line\", speed=\"1 m/s\"}",
        ],
    );
    let m = &out.trace.mac;
    let dups: Vec<usize> = (0..m.len())
        .filter(|&i| m.node[i] == 1 && m.event[i] == MacEvent::Duplicate as u8)
        .collect();
    assert!(!dups.is_empty(), "expected some duplicates");
    let received: Vec<usize> = (0..m.len())
        .filter(|&i| m.node[i] == 1 && m.event[i] == MacEvent::Received as u8)
        .collect();
    // Every duplicate follows a reception of the same sequence number; no sequence number is handed up twice in a row.
    for &d in &dups {
        let prev = received
            .iter()
            .rev()
            .find(|&&r| r < d)
            .expect("a reception before the duplicate");
        assert_eq!(m.seq[*prev], m.seq[d]);
        assert!(m.attempts[d] > 1);
    }
    for w in received.windows(2) {
        assert_ne!(
            m.seq[w[0]], m.seq[w[1]],
            "sequence {} handed up twice",
            m.seq[w[0]]
        );
    }
}

#[test]
fn a_full_queue_drops_arrivals_and_traces_them() {
    let out = run(
        TWO_NODES,
        &[
            r#"traffic.0.kind="cbr""#,
            r#"traffic.0.interval="50 us""#,
            "mac.queue_limit=10",
            r#"mac.rate="6 Mbps""#,
            r#"duration="0.5 s""#,
        ],
    );
    let drops = count(&out, 0, MacEvent::QueueDrop);
    let sent = count(&out, 0, MacEvent::Delivered);
    // Offered 10000 frames at 240 Mb/s into a 6 Mbps link.
    assert!(drops > 9000 && sent > 100, "drops {drops} sent {sent}");
}

#[test]
fn size_binned_rate_control_learns_from_fast_frames() {
    // The static lab's bulk TCP with the client 500 m away (and loud enough
    // for its ACKs): 54 and 48 Mbps fail there, 36 Mbps works. SampleRate
    // keeps statistics per frame size; a fast frame joins two MSDUs after the
    // rate was chosen for the first, and its outcome must land in the
    // statistics the rate was chosen from — else SampleRate never sees
    // 54 Mbps fail and stays there.
    let out = run(
        include_str!("../../../scenarios/static-lab.toml"),
        &[
            "node.client.position=[500, 0]",
            r#"node.client.tx_power="25 dBm""#,
            r#"node.ap.rate_control={algorithm="samplerate", preset="tuned"}"#,
            r#"duration="6 s""#,
        ],
    );
    let f = &out.trace.frames;
    let first_tries: Vec<f32> = (0..f.len())
        .filter(|&i| {
            f.event[i] == PhyEvent::Tx as u8
                && f.kind[i] == FrameKind::Data as u8
                && f.node[i] == 0
                && f.attempt[i] == 0
        })
        .map(|i| f.rate_mbps[i])
        .collect();
    let fast = (0..f.len())
        .filter(|&i| f.event[i] == PhyEvent::Tx as u8 && f.node[i] == 0 && f.bytes[i] > 3000)
        .count();
    assert!(fast > 1000, "only {fast} fast frames");
    let at_36 = first_tries.iter().filter(|&&r| r == 36.0).count();
    assert!(
        at_36 * 10 > first_tries.len() * 9,
        "{at_36} of {} first tries at 36 Mbps",
        first_tries.len()
    );
}

#[test]
fn one_node_can_send_at_a_fixed_rate_of_its_own() {
    // The static lab at 54 Mbps, the client's TCP ACKs at 11 Mbps: the
    // set-up of Hadaller et al.'s Table 6.
    let lab = include_str!("../../../scenarios/static-lab.toml");
    let out = run(
        lab,
        &[
            r#"node.client.rate_control={algorithm="fixed", rate="11 Mbps"}"#,
            r#"duration="4 s""#,
        ],
    );
    let f = &out.trace.frames;
    let rates = |node: u32| -> std::collections::BTreeSet<u32> {
        (0..f.len())
            .filter(|&i| {
                f.event[i] == PhyEvent::Tx as u8
                    && f.kind[i] == FrameKind::Data as u8
                    && f.node[i] == node
                    && f.peer[i] == 1 - node
            })
            .map(|i| f.rate_mbps[i] as u32)
            .collect()
    };
    assert_eq!(rates(0), [54].into(), "the AP keeps the scenario's rate");
    assert_eq!(rates(1), [11].into(), "the client sends at its own");
    for (o, want) in [
        (
            r#"node.client.rate_control={algorithm="fixed"}"#,
            "needs rate",
        ),
        (
            r#"node.client.rate_control={algorithm="fixed", rate="7 Mbps"}"#,
            "node.client.rate_control.rate: 7 Mbps is not a rate of 802.11g",
        ),
        (
            r#"node.client.rate_control={algorithm="onoe", rate="11 Mbps"}"#,
            "rate: only used with algorithm = \"fixed\"",
        ),
    ] {
        let e = wayside_sim::run_scenario(lab, &[o.to_string()], None, 0)
            .err()
            .unwrap_or_else(|| panic!("{o} accepted"))
            .0;
        assert!(e.contains(want), "{o}: {e}");
    }
}
