//! Infrastructure mode: scanning, AP selection, authentication and
//! association, ARP, forwarding to a wired server, UDP and TCP applications.

mod common;
use common::events;
use wayside_sim::trace::{ConnEvent, Proto};
use wayside_sim::RunOutput;

fn run(text: &str, overrides: &[&str]) -> RunOutput {
    common::run(text, overrides, 2)
}

const BSS: &str = r#"
duration = "10 s"
[environment]
path_loss = "free-space"
[radio]
standard = "802.11g"
channel = 6
[mac]
rate = "24 Mbps"
[management]
beacon_interval = "100 ms"
scan_channels = [1, 6, 11]
scan_dwell = "50 ms"
[[node]]
name = "ap"
role = "ap"
[[node]]
name = "car"
role = "sta"
position = [20, 0]
[[node]]
name = "server"
radio = false
[[link]]
a = "ap"
b = "server"
bandwidth = "100 Mbps"
delay = "10 ms"
[[app]]
kind = "udp-cbr"
from = "server"
to = "car"
payload = "1000 B"
interval = "10 ms"
start = "on-association"
start_delay = "1 s"
"#;

#[test]
fn station_scans_selects_authenticates_associates_then_udp_flows_through_the_ap() {
    let out = run(BSS, &[]);
    let first = events(&out, "car", ConnEvent::FirstBeacon);
    let selected = events(&out, "car", ConnEvent::ApSelected);
    let assoc = events(&out, "car", ConnEvent::Associated);
    assert_eq!(first.len(), 1);
    assert_eq!(selected.len(), 1, "{selected:?}");
    assert_eq!(assoc.len(), 1);
    // The scan starts at a random phase within one pass (3 channels x
    // 50 ms), then one pass (channel 6 cut short by the AP's answer) before
    // selection; association right after.
    assert!(selected[0].0 > 0.0 && selected[0].0 < 0.3, "{selected:?}");
    assert!(
        assoc[0].0 > selected[0].0 && assoc[0].0 < selected[0].0 + 0.05,
        "{assoc:?}"
    );
    assert_eq!(events(&out, "ap", ConnEvent::Associated).len(), 1);
    // The AP resolves the car's address before forwarding.
    assert!(!events(&out, "ap", ConnEvent::ArpResolved).is_empty());
    // Datagrams from the server arrive at the car, in order, ~10 ms + airtime later.
    let t = &out.trace.transport;
    let car = 1;
    let rows: Vec<usize> = (0..t.len())
        .filter(|&i| t.node[i] == car && t.proto[i] == Proto::Udp as u8)
        .collect();
    let expected = ((10.0 - assoc[0].0 - 1.0) / 0.01) as usize;
    assert!(
        rows.len() + 3 >= expected && rows.len() <= expected + 1,
        "{} datagrams, expected ~{expected}",
        rows.len()
    );
    for &i in &rows {
        let d = t.delay_ns[i] as f64 * 1e-9;
        assert!(d > 0.010 && d < 0.013, "delay {d}");
    }
}

#[test]
fn a_station_out_of_range_never_associates() {
    let out = run(BSS, &["node.car.position=[100000, 0]"]);
    assert!(events(&out, "car", ConnEvent::FirstBeacon).is_empty());
    assert!(events(&out, "car", ConnEvent::Associated).is_empty());
    assert_eq!(out.trace.transport.len(), 0);
}

#[test]
fn madwifi_waits_five_seconds_after_a_lost_authentication() {
    // The AP hears beacons-strength signals one way only: the car's frames
    // are too weak (asymmetric power), so authentication never completes.
    const ONE_WAY: [&str; 5] = [
        "node.car.tx_power=\"-30 dBm\"",
        "node.car.position=[400, 0]",
        "duration=\"30 s\"",
        "node.ap.tx_power=\"20 dBm\"",
        "management.selection_threshold=\"-90 dBm\"",
    ];
    let out = run(BSS, &ONE_WAY);
    let auth = events(&out, "car", ConnEvent::AuthRequest);
    let timeouts = events(&out, "car", ConnEvent::AuthTimeout);
    assert!(auth.len() >= 4, "{auth:?}");
    // Request, 5 s, retransmission, 5 s, back to scanning.
    assert!((auth[1].0 - auth[0].0 - 5.0).abs() < 1e-6, "{auth:?}");
    assert_eq!(auth[1].1, 1.0);
    assert!(auth[2].0 - auth[1].0 > 5.0, "{auth:?}");
    assert_eq!(auth[2].1, 0.0);
    // Every request times out exactly 5 s later (the last may still be pending at the end).
    assert!(timeouts.len() == auth.len() || timeouts.len() + 1 == auth.len());
    for (req, to) in auth.iter().zip(&timeouts) {
        assert!((to.0 - req.0 - 5.0).abs() < 1e-6);
    }
    let tuned = run(
        BSS,
        &[&ONE_WAY[..], &["management.driver=\"tuned\""]].concat(),
    );
    let tuned_auth = events(&tuned, "car", ConnEvent::AuthRequest);
    assert!(
        (tuned_auth[1].0 - tuned_auth[0].0 - 0.2).abs() < 1e-6,
        "{tuned_auth:?}"
    );
    assert!(tuned_auth.len() > 5 * auth.len());
}

#[test]
fn bulk_tcp_from_the_ap_starts_after_association_and_fills_the_link() {
    let text = BSS
        .replace(
            "kind = \"udp-cbr\"\nfrom = \"server\"",
            "kind = \"tcp-bulk\"\nfrom = \"ap\"",
        )
        .replace("payload = \"1000 B\"\ninterval = \"10 ms\"\n", "");
    let out = run(&text, &[]);
    let assoc = events(&out, "ap", ConnEvent::Associated);
    let start = events(&out, "ap", ConnEvent::AppStart);
    let est = events(&out, "ap", ConnEvent::Established);
    assert_eq!(assoc.len(), 1);
    assert!(
        (start[0].0 - assoc[0].0 - 1.0).abs() < 1e-6,
        "app start {start:?} assoc {assoc:?}"
    );
    assert_eq!(est.len(), 1);
    assert!(
        est[0].0 - start[0].0 < 0.05,
        "handshake took {}",
        est[0].0 - start[0].0
    );
    // Goodput at the car over the rest of the run. With b-compatible timing
    // a saturated 24 Mbps link moves 12.7 Mb/s of 1500-byte MSDUs; TCP payload
    // is 1460 of each 1508-byte MSDU, and the car's TCP ACKs take airtime too.
    let t = &out.trace.transport;
    let bytes: u64 = (0..t.len())
        .filter(|&i| t.node[i] == 1 && t.proto[i] == Proto::Tcp as u8)
        .map(|i| t.bytes[i] as u64)
        .sum();
    let goodput = bytes as f64 * 8.0 / (10.0 - est[0].0);
    assert!(goodput > 9.5e6 && goodput < 12.3e6, "goodput {goodput}");
    // The sender traced its ACKs.
    assert!(out.trace.tcp.len() > 1000);
}

#[test]
fn drive_thru_car_stays_with_its_ap_through_the_island_and_never_hands_over() {
    // Ott & Kutscher saw no handover between two APs 100 m apart on different
    // channels: the card does not scan while associated. It leaves its AP
    // only by missing its beacons, once past both APs.
    for (speed, mps) in [("80 km/h", 80.0 / 3.6), ("180 km/h", 180.0 / 3.6)] {
        let o = format!("node.car.mobility.speed=\"{speed}\"");
        let out = wayside_sim::run_scenario(
            wayside_sim::scenario::builtin("drivethru-autobahn").unwrap(),
            &[o],
            Some(1),
            0,
        )
        .unwrap();
        let x = |t: f64| -1200.0 + mps * t;
        let assoc = events(&out, "car", ConnEvent::Associated);
        let left = events(&out, "car", ConnEvent::Disassociated);
        let selected = events(&out, "car", ConnEvent::ApSelected);
        // Whatever joins failed in the far fringe, the association the car
        // holds on reaching the APs lasts until it is past both.
        let held = assoc.iter().rfind(|a| x(a.0) < 0.0);
        let held = held.unwrap_or_else(|| panic!("{speed}: {assoc:?}")).0;
        let gone = left
            .iter()
            .find(|l| l.0 > held)
            .map_or(f64::INFINITY, |l| l.0);
        assert!(x(gone) > 200.0, "{speed}: left its AP at {} m", x(gone));
        assert!(
            selected.iter().all(|s| s.0 <= held || s.0 >= gone),
            "{speed}: picked an AP while associated: {selected:?}"
        );
        // The mobile sender's datagrams reach the fixed station.
        assert!(
            out.trace.transport.len() > 1000,
            "{speed}: {} datagrams",
            out.trace.transport.len()
        );
    }
}

const LAB: &str = include_str!("../../../scenarios/drivethru-lab.toml");

/// Datagrams per second `receiver` got from application `app` in
/// drivethru-lab between its first and last arrival, and the fraction of
/// the sequence range lost, with `overrides`.
fn lab_flow(receiver: &str, app: u32, overrides: &[&str]) -> (f64, f64) {
    let out = common::run(LAB, overrides, 1);
    let rx = common::id(&out, receiver);
    let t = &out.trace.transport;
    let got: Vec<usize> = (0..t.len())
        .filter(|&i| t.node[i] == rx && t.app[i] == app)
        .collect();
    let secs = |i: usize| t.time_ns[i] as f64 / 1e9;
    let span = secs(*got.last().unwrap()) - secs(got[0]);
    let seqs = (t.seq[*got.last().unwrap()] - t.seq[got[0]] + 1) as f64;
    (got.len() as f64 / span, 1.0 - got.len() as f64 / seqs)
}

#[test]
fn an_ap_forwarding_engine_caps_what_comes_from_the_wire_not_what_goes_to_it() {
    let engine = |ms: f64| format!("node.ap.forwarding={{per_packet=\"{ms} ms\", queue_limit=32}}");
    // 1000 datagrams/s of 1250 B from the wired side, 3 m from the AP: the
    // engine passes one per `per_packet`, the rest are lost.
    for ms in [2.0, 4.0] {
        let (rate, loss) = lab_flow("mobile", 0, &[&engine(ms)]);
        let cap = 1e3 / ms;
        assert!((rate - cap).abs() < 0.02 * cap, "{ms} ms: {rate}/s");
        assert!(
            (loss - (1.0 - cap / 1000.0)).abs() < 0.02,
            "{ms} ms: {loss}"
        );
    }
    // The mobile station's 500 datagrams/s all pass: only packets from the
    // wire go through the engine.
    let up = ["app.0.enabled=false", "app.1.enabled=true"];
    let (rate, loss) = lab_flow("fixed", 1, &[up[0], up[1], &engine(4.0)]);
    assert!((rate - 500.0).abs() < 5.0 && loss == 0.0, "{rate}/s {loss}");
}

#[test]
fn a_full_wired_link_traces_every_packet_it_drops() {
    // 1000 datagrams/s of 1250 B offered to a 1 Mbit/s link with a 10-frame
    // queue: about nine in ten are dropped there, each a `wire-drop` at the
    // sender naming the datagram's destination. The rest cross the link and
    // the AP (which passes 377/s) to a station 3 m away; together they
    // account for every datagram sent.
    let o = ["link.0.bandwidth=\"1 Mbps\"", "link.0.queue_limit=10"];
    let out = run(LAB, &o);
    let drops = events(&out, "fixed", ConnEvent::WireDrop);
    let e = &out.trace.events;
    let mobile = common::id(&out, "mobile");
    assert!(
        (0..e.len())
            .filter(|&i| e.event[i] == ConnEvent::WireDrop as u8)
            .all(|i| e.peer[i] == mobile && e.value[i] == 10.0),
        "a drop names another peer or limit"
    );
    let t = &out.trace.transport;
    let got = (0..t.len()).filter(|&i| t.node[i] == mobile).count();
    // One datagram each millisecond from the start to the end (20 s).
    let start = events(&out, "fixed", ConnEvent::AppStart)[0].0;
    let sent = ((20.0 - start) * 1e3).ceil() as usize;
    assert!(drops.len() * 10 > sent * 8, "{} of {sent}", drops.len());
    // Datagrams still queued or in flight at the end are the only gap.
    let accounted = drops.len() + got;
    assert!(
        accounted <= sent && sent - accounted <= 15,
        "{accounted} of {sent}"
    );
}

#[test]
fn through_a_forwarding_engine_tcp_from_the_wire_beats_an_overloading_udp_stream() {
    // Ott & Kutscher §IV-A: from the fixed side "TCP performs significantly
    // better than UDP (3.79 MBit/s)": its larger segments pass at the same
    // packet rate, and its window keeps the engine's queue from overflowing.
    let (udp_rate, _) = lab_flow("mobile", 0, &[]);
    let udp_mbps = udp_rate * 1250.0 * 8.0 / 1e6;
    let out = common::run(LAB, &["app.0.enabled=false", "app.2.enabled=true"], 1);
    let rx = common::id(&out, "mobile");
    let t = &out.trace.transport;
    let late: Vec<usize> = (0..t.len())
        .filter(|&i| t.node[i] == rx && t.time_ns[i] >= 10_000_000_000)
        .collect();
    let bytes: u64 = late.iter().map(|&i| t.bytes[i] as u64).sum();
    let tcp_mbps = bytes as f64 * 8.0 / 10.0 / 1e6;
    assert!(
        tcp_mbps > 1.1 * udp_mbps,
        "TCP {tcp_mbps} vs UDP {udp_mbps} Mb/s"
    );
}

#[test]
fn a_dhcp_station_gets_its_lease_after_association_before_any_data() {
    let out = run(BSS, &["node.car.dhcp=true"]);
    let assoc = events(&out, "car", ConnEvent::Associated);
    let discover = events(&out, "car", ConnEvent::DhcpDiscover);
    let bound = events(&out, "car", ConnEvent::DhcpBound);
    assert_eq!(
        (assoc.len(), discover.len(), bound.len()),
        (1, 1, 1),
        "{assoc:?} {discover:?} {bound:?}"
    );
    assert!(
        assoc[0].0 <= discover[0].0 && discover[0].0 < bound[0].0 && bound[0].0 - assoc[0].0 < 0.05
    );
    // The application waits for the lease (start delay 1 s after it).
    let t = &out.trace.transport;
    let first = (0..t.len())
        .filter(|&i| t.node[i] == 1)
        .map(|i| t.time_ns[i] as f64 * 1e-9)
        .next()
        .unwrap();
    assert!(
        first > bound[0].0 + 1.0,
        "first datagram {first}, bound {}",
        bound[0].0
    );
    // Without DHCP, no DHCP traffic at all.
    let stat = run(BSS, &[]);
    assert!(events(&stat, "car", ConnEvent::DhcpDiscover).is_empty());
}

#[test]
fn dhcp_retransmits_per_rfc_2131_when_unanswered() {
    // An AP without a DHCP server: DISCOVER is repeated after ~4, 8, 16 s
    // (each ±1 s), no lease comes, and no data flows.
    let text = BSS.replace("duration = \"10 s\"", "duration = \"40 s\"");
    let out = run(&text, &["node.car.dhcp=true", "node.ap.dhcp_server=false"]);
    let d = events(&out, "car", ConnEvent::DhcpDiscover);
    assert_eq!(d.len(), 4, "{d:?}");
    for (k, w) in d.windows(2).enumerate() {
        let gap = w[1].0 - w[0].0;
        let nominal = 4.0 * 2f64.powi(k as i32);
        assert!(
            (gap - nominal).abs() <= 1.0 + 1e-9,
            "gap {gap} after attempt {k}"
        );
        assert_eq!(w[1].1, k as f64 + 1.0);
    }
    assert!(events(&out, "car", ConnEvent::DhcpBound).is_empty());
    assert_eq!(out.trace.transport.len(), 0);
}

#[test]
fn a_station_that_appears_later_associates_after_its_appearance_and_goes_silent_when_it_disappears()
{
    let out = run(BSS, &["node[1].appear=4 s", "node[1].disappear=8 s"]);
    let car = common::id(&out, "car");
    let first = events(&out, "car", ConnEvent::FirstBeacon);
    let assoc = events(&out, "car", ConnEvent::Associated);
    assert_eq!(assoc.len(), 1, "{assoc:?}");
    assert!(
        first[0].0 >= 4.0 && assoc[0].0 > first[0].0 && assoc[0].0 < 5.0,
        "{first:?} {assoc:?}"
    );
    // Nothing is sent or heard by the car outside [4 s, 8 s).
    let f = &out.trace.frames;
    let at_car: Vec<f64> = (0..f.len())
        .filter(|&i| f.node[i] == car)
        .map(|i| f.time_ns[i] as f64 * 1e-9)
        .collect();
    assert!(!at_car.is_empty());
    assert!(
        at_car.iter().all(|t| (4.0..8.0).contains(t)),
        "frames at the car outside its stay"
    );
    // The server's datagrams after the car left are lost at the AP's MAC
    // (failed or dropped), never delivered.
    let t = &out.trace.transport;
    let delivered: Vec<f64> = (0..t.len())
        .filter(|&i| t.node[i] == car)
        .map(|i| t.time_ns[i] as f64 * 1e-9)
        .collect();
    assert!(
        !delivered.is_empty() && delivered.iter().all(|t| (5.0..8.0).contains(t)),
        "{:?}",
        delivered.first()
    );
}

#[test]
fn a_node_that_is_off_drops_what_is_handed_to_its_mac_as_radio_off() {
    // A broadcast every 100 ms from a car that appears at 3 s: before, each
    // frame is dropped at its MAC and traced as such; after, it is sent.
    let text = format!(
        "{}\n[[traffic]]\nkind = \"cbr\"\nfrom = \"car\"\nto = \"broadcast\"\npayload = \"100 B\"\ninterval = \"100 ms\"\n",
        wayside_sim::scenario::builtin("drive-by").unwrap()
    );
    let out = run(&text, &["duration=\"6 s\"", "node.car.appear=\"3 s\""]);
    let car = common::id(&out, "car");
    let m = &out.trace.mac;
    let of = |ev: wayside_sim::trace::MacEvent| -> Vec<f64> {
        (0..m.len())
            .filter(|&i| m.node[i] == car && m.event[i] == ev as u8)
            .map(|i| m.time_ns[i] as f64 * 1e-9)
            .collect()
    };
    let off = of(wayside_sim::trace::MacEvent::RadioOff);
    let sent = of(wayside_sim::trace::MacEvent::Delivered);
    assert_eq!(off.len(), 30, "{off:?}");
    assert!(off.iter().all(|t| *t < 3.0));
    assert!(
        sent.len() >= 29 && sent.iter().all(|t| *t >= 3.0),
        "{sent:?}"
    );
}

#[test]
fn appear_and_disappear_are_checked() {
    let o = |v: &[&str]| {
        wayside_sim::run_scenario(
            BSS,
            &v.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            Some(1),
            0,
        )
        .err()
        .map(|e| e.to_string())
    };
    let e = o(&["node[1].appear=5 s", "node[1].disappear=2 s"]).unwrap();
    assert!(
        e.contains("node.car.disappear") && e.contains("not after appear"),
        "{e}"
    );
    let e = o(&["node[2].appear=1 s"]).unwrap();
    assert!(
        e.contains("node.server.appear") && e.contains("radio = false"),
        "{e}"
    );
    let e = o(&["node[1].appear=-1 s"]).unwrap();
    assert!(e.contains("node.car.appear"), "{e}");
}
