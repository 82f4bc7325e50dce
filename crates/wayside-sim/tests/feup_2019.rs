//! The built-in `feup-2019` scenario loads, each client associates with its
//! own AP (it scans only that AP's channel) and receives the iperf-like UDP
//! stream while the car is near the posts.

use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;
use wayside_sim::trace::MacEvent;

#[test]
fn every_client_receives_from_its_own_ap() {
    // The first 60 s: lap 0 passes both posts.
    let o = vec!["duration=\"60 s\"".to_string()];
    let out = run_scenario(builtin("feup-2019").unwrap(), &o, Some(1), 0).unwrap();
    let names = ["ap1", "ap2", "ap3", "ap4", "server", "m1", "w1", "w2", "w3"];
    let pairs = [("ap1", "w2"), ("ap2", "m1"), ("ap3", "w3"), ("ap4", "w1")];
    let id = |n: &str| names.iter().position(|m| *m == n).unwrap() as u32;
    let mac = &out.trace.mac;
    for (ap, client) in pairs {
        let bytes: u64 = (0..mac.len())
            .filter(|&i| mac.event[i] == MacEvent::Delivered as u8)
            .filter(|&i| {
                let (a, b) = (mac.node[i], mac.peer[i]);
                (a, b) == (id(ap), id(client)) || (a, b) == (id(client), id(ap))
            })
            .map(|i| u64::from(mac.bytes[i]))
            .sum();
        println!(
            "{ap} -> {client}: {:.1} Mbit/s over 60 s",
            bytes as f64 * 8.0 / 60e6
        );
        assert!(bytes > 10_000_000, "{ap} -> {client}: {bytes} B");
        // Nothing between a client and another pair's AP.
        for (other, _) in pairs.iter().filter(|(o, _)| *o != ap) {
            let cross = (0..mac.len()).any(|i| {
                mac.event[i] == MacEvent::Delivered as u8
                    && (mac.node[i], mac.peer[i]) == (id(other), id(client))
            });
            assert!(!cross, "{client} got frames from {other}");
        }
    }
}
