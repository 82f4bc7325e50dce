//! Broadside-IP in the simulator: the same endpoint with discovery and
//! files over TCP (real bytes, framed on the stream) and beacons over UDP,
//! on Windows XP SP2's stack — a gratuitous ARP and 100 ms of silence when
//! the first link comes up. (The application's restart of a handshake
//! after 1 s is tested with the connections, in `apps::broadside_ip`.)

mod common;
use common::{events, id, run};
use wayside_sim::trace::{ConnEvent, Proto};
use wayside_sim::RunOutput;

/// Two ad hoc hosts 30 m apart on Windows XP's stack; the sender holds the
/// newer versions of three 200 kB files.
const PAIR: &str = r#"
duration = "20 s"
[environment]
path_loss = "log-distance"
[radio]
standard = "802.11g"
channel = 1
[mac]
rate_control = { algorithm = "minstrel" }
[[node]]
name = "holder"
role = "independent"
tcp = "windows-xp"
arp = "windows-xp"
adhoc = {}
[[node]]
name = "fetcher"
role = "independent"
position = [30, 0]
tcp = "windows-xp"
arp = "windows-xp"
adhoc = {}
[[app]]
kind = "broadside"
transport = "tcp"
from = "holder"
to = "fetcher"
files = 3
bytes = "200 kB"
common = true
start = "1 s"
"#;

/// Payload bytes `node` received over `proto`.
fn received(out: &RunOutput, node: &str, proto: Proto) -> u64 {
    let (n, t) = (id(out, node), &out.trace.transport);
    (0..t.len())
        .filter(|&i| t.node[i] == n && t.proto[i] == proto as u8)
        .map(|i| u64::from(t.bytes[i]))
        .sum()
}

#[test]
fn files_move_over_tcp_with_real_bytes() {
    let mut out = run(PAIR, &[], 2);
    assert_eq!(
        events(&out, "fetcher", ConnEvent::FileUpdated).len(),
        3,
        "every newer version committed"
    );
    // Over TCP: blocks, discovery and control in the stream; beacons over UDP.
    assert!(received(&out, "fetcher", Proto::Tcp) >= 600_000);
    assert_eq!(received(&out, "fetcher", Proto::Raw), 0);
    assert!(received(&out, "fetcher", Proto::Udp) > 0, "beacons");
    assert!(
        !events(&out, "fetcher", ConnEvent::Established).is_empty()
            || !events(&out, "holder", ConnEvent::Established).is_empty()
    );
    // The endpoint verified every block it stored: no poisoned or malformed
    // datagram came out of the stream, and TCP delivered no block twice.
    out.broadside.sort_by_key(|e| e.node.0);
    let fetcher = &out.broadside[1].counters;
    assert_eq!((fetcher.malformed, fetcher.poisoned_blocks), (0, 0));
    assert_eq!(fetcher.file_bytes_received, 600_000);
}

#[test]
fn windows_xp_announces_its_address_and_stays_silent_100_ms() {
    let out = run(PAIR, &[], 2);
    for node in ["holder", "fetcher"] {
        let up = events(&out, node, ConnEvent::LinkUp);
        let announce = events(&out, node, ConnEvent::ArpAnnounce);
        assert_eq!(announce.len(), 1, "{node}: one link, one announcement");
        assert!(
            (announce[0].0 - up[0].0).abs() < 1e-9 && (announce[0].1 - 0.1).abs() < 1e-9,
            "{announce:?} {up:?}"
        );
        // Nothing over IP from this host in the silence: its first ARP
        // request comes after it.
        let arp = events(&out, node, ConnEvent::ArpRequest);
        assert!(
            arp.iter().all(|a| a.0 >= announce[0].0 + 0.1 - 1e-9),
            "{node}: {arp:?} {announce:?}"
        );
    }
    let linux = run(
        PAIR,
        &["node.holder.arp=\"linux\"", "node.fetcher.arp=\"linux\""],
        2,
    );
    assert!(events(&linux, "holder", ConnEvent::ArpAnnounce).is_empty());
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let (a, b) = (run(PAIR, &[], 5), run(PAIR, &[], 5));
    assert_eq!(a.trace.transport.time_ns, b.trace.transport.time_ns);
    assert_eq!(a.trace.frames.time_ns, b.trace.frames.time_ns);
}
