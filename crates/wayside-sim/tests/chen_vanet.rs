//! The Chen et al. set-up: source cars' TCP reaches a roadside AP over
//! several hops chosen by greedy geographic forwarding, relayed by the
//! vehicles of a Nagel–Schreckenberg highway, 802.11b at 11 Mbps.

mod common;
use common::{events, id};
use wayside_sim::scenario::builtin;
use wayside_sim::trace::{ConnEvent, FrameKind, PhyEvent, Proto};
use wayside_sim::{run_scenario, RunOutput};

/// Full data frames the AP received from a relay rather than a source.
fn relayed_to_ap(out: &RunOutput) -> usize {
    let ap = id(out, "ap");
    let f = &out.trace.frames;
    let source = |p: u32| {
        out.node_names
            .get(p as usize)
            .is_some_and(|n| n.starts_with("car-source-"))
    };
    (0..f.len())
        .filter(|&i| {
            f.node[i] == ap
                && f.event[i] == PhyEvent::Rx as u8
                && f.kind[i] == FrameKind::Data as u8
                && f.bytes[i] > 1000
        })
        .filter(|&i| !source(f.peer[i]))
        .count()
}

#[test]
fn source_data_reaches_the_ap_over_several_hops_at_11_mbps() {
    let out = common::run(builtin("chen-vanet").unwrap(), &[], 1);
    let cars = out
        .node_names
        .iter()
        .filter(|n| n.starts_with("car-"))
        .count();
    assert!(
        cars > 80,
        "{cars} vehicles: 10% of 4000 cells is 80 at a time, more over the run"
    );
    let relayed = relayed_to_ap(&out);
    assert!(
        relayed >= 100,
        "{relayed} data frames at the AP came from a relay"
    );
    // Hop counts and latencies of the segments that arrived.
    let hops = events(&out, "ap", ConnEvent::GeoHops);
    let latency = events(&out, "ap", ConnEvent::GeoLatency);
    assert_eq!(hops.len(), latency.len());
    assert!(
        hops.iter().any(|&(_, h)| h >= 2.0) && hops.iter().any(|&(_, h)| h == 1.0),
        "hops seen: {:?}",
        &hops[..hops.len().min(20)]
    );
    assert!(latency.iter().all(|&(_, l)| l > 0.0 && l < 60.0));
    let t = &out.trace.transport;
    let delivered: u64 = (0..t.len())
        .filter(|&i| t.node[i] == id(&out, "ap") && t.proto[i] == Proto::Tcp as u8)
        .map(|i| t.bytes[i] as u64)
        .sum();
    assert!(
        delivered > 1_000_000,
        "{delivered} bytes delivered to the AP"
    );
}

#[test]
fn a_source_that_leaves_is_replaced_and_the_new_one_opens_its_own_connection() {
    let out = common::run(builtin("chen-vanet").unwrap(), &[], 1);
    let sources: Vec<&String> = out
        .node_names
        .iter()
        .filter(|n| n.starts_with("car-source-"))
        .collect();
    assert!(
        sources.len() >= 2,
        "{sources:?}: the first source crosses the road in under 60 s"
    );
    for s in &sources[..2] {
        assert_eq!(events(&out, s, ConnEvent::AppStart).len(), 1, "{s}");
    }
    // The second source starts after the first one's start.
    let start = |s: &str| events(&out, s, ConnEvent::AppStart)[0].0;
    assert!(start(sources[1]) > start(sources[0]) + 20.0);
    // Three sources: three connections from the start.
    let three = common::run(
        builtin("chen-vanet").unwrap(),
        &["node.car.mobility.sources=3", "duration=\"10 s\""],
        1,
    );
    let started = three
        .node_names
        .iter()
        .filter(|n| n.starts_with("car-source-"))
        .filter(|n| !events(&three, n, ConnEvent::AppStart).is_empty())
        .count();
    assert!(started >= 3, "{started} sources started");
}

#[test]
fn beacons_at_1_mbps_make_greedy_forwarding_pick_relays_data_cannot_reach() {
    // The range is defined at the lowest basic rate; with the 802.11b
    // default (1 Mbps) beacons reach further than 11 Mbps data.
    let slow = common::run(
        builtin("chen-vanet").unwrap(),
        &["radio.basic_rate=\"1 Mbps\"", "duration=\"30 s\""],
        1,
    );
    let fast = common::run(builtin("chen-vanet").unwrap(), &["duration=\"30 s\""], 1);
    let (s, f) = (relayed_to_ap(&slow), relayed_to_ap(&fast));
    assert!(
        s * 10 < f,
        "relayed at a 1 Mbps basic rate: {s}, at 11 Mbps: {f}"
    );
}

#[test]
fn nasch_section_errors_name_the_key() {
    let base = builtin("chen-vanet").unwrap();
    let bad = |over: &str| match run_scenario(base, &[over.to_string()], Some(1), 0) {
        Ok(_) => panic!("{over} was accepted"),
        Err(e) => e.0,
    };
    let e = bad("node[1].count=3");
    assert!(e.contains("node.car.count") && e.contains("nasch"), "{e}");
    let e = bad("node[1].mobility.density=1.5");
    assert!(e.contains("node.car.mobility.density = 1.5"), "{e}");
    let e = bad("node[1].mobility.sources=500");
    assert!(e.contains("sources = 500"), "{e}");
    let e = bad("node[1].routing=\"gpsr\"");
    assert!(e.contains("greedy"), "{e}");
    let e = bad("radio.basic_rate=\"54 Mbps\"");
    assert!(
        e.contains("radio.basic_rate") && e.contains("allowed"),
        "{e}"
    );
}

#[test]
fn same_seeds_same_run_and_the_run_seed_moves_the_traffic() {
    let text = builtin("chen-vanet").unwrap();
    let short = ["duration=\"15 s\""];
    let (a, b) = (common::run(text, &short, 1), common::run(text, &short, 1));
    assert_eq!(a.node_names, b.node_names);
    assert_eq!(
        (&a.trace.frames.time_ns, &a.trace.frames.peer),
        (&b.trace.frames.time_ns, &b.trace.frames.peer)
    );
    assert_eq!(
        (&a.trace.events.time_ns, &a.trace.events.value),
        (&b.trace.events.time_ns, &b.trace.events.value)
    );
    // Where the cars are: the x of every frame a car sent.
    let xs = |o: &RunOutput| {
        let f = &o.trace.frames;
        (0..f.len())
            .filter(|&i| f.event[i] == PhyEvent::Tx as u8)
            .map(|i| f.x[i])
            .take(200)
            .collect::<Vec<f32>>()
    };
    // Another run seed, or another run of the same seed, is other traffic.
    assert_ne!(xs(&a), xs(&common::run(text, &short, 2)));
    let o: Vec<String> = short.iter().map(|s| s.to_string()).collect();
    assert_ne!(xs(&a), xs(&run_scenario(text, &o, Some(1), 1).unwrap()));
}
