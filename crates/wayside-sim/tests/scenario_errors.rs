//! Hostile scenario files: each gets an error that names the key, the value
//! and what is allowed — never a panic.

use wayside_sim::scenario::{builtin, load};

fn error_of(text: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match load(text, &o, None, 0) {
        Ok(_) => panic!("accepted: {text} {overrides:?}"),
        Err(e) => e.0,
    }
}

fn with(o: &[&str]) -> String {
    error_of(builtin("drive-by").unwrap(), o)
}

#[test]
fn unknown_keys_are_named_with_the_allowed_ones() {
    let e = with(&["radio.standrd=\"802.11b\""]);
    assert!(
        e.contains("radio") && e.contains("standrd") && e.contains("standard"),
        "{e}"
    );
    let e = with(&["node.car.colour=\"red\""]);
    assert!(e.contains("node.car") && e.contains("colour"), "{e}");
}

#[test]
fn wrong_types_and_units() {
    let e = with(&["duration=5"]);
    assert!(
        e.starts_with("duration") && e.contains("unit is required") && e.contains("ms"),
        "{e}"
    );
    let e = with(&["node.car.mobility={model=\"line\", speed=\"80 furlongs\"}"]);
    assert!(
        e.contains("speed") && e.contains("furlongs") && e.contains("km/h"),
        "{e}"
    );
    let e = with(&["node.ap.tx_power=\"19 dB\""]);
    assert!(
        e.contains("tx_power") && e.contains("19 dB") && e.contains("dBm"),
        "{e}"
    );
    let e = with(&["radio.channel=\"six\""]);
    assert!(e.contains("radio.channel"), "{e}");
    let e = with(&["node.car.mobility={model=\"teleport\"}"]);
    assert!(e.contains("teleport") && e.contains("polyline"), "{e}");
}

#[test]
fn out_of_range_values() {
    let e = with(&["node.ap.antenna_height=\"-3 m\""]);
    assert!(
        e.contains("node.ap.antenna_height") && e.contains("-3 m") && e.contains("allowed"),
        "{e}"
    );
    let e = with(&["node.car.position=[-1e12, 0]"]);
    assert!(
        e.contains("node.car.position.x") && e.contains("-1000000000000 m"),
        "{e}"
    );
    let e = with(&["node.car.mobility={model=\"line\", speed=\"-80 km/h\"}"]);
    assert!(
        e.contains("node.car.mobility.speed") && e.contains("allowed"),
        "{e}"
    );
    let e = with(&["duration=\"-1 s\""]);
    assert!(e.contains("duration: -1 s") && e.contains("allowed"), "{e}");
    let e = with(&["node.car.position=[1, 2, 3]"]);
    assert!(
        e.contains("node.car.position") && e.contains("3 values"),
        "{e}"
    );
    let e = with(&[
        "node.car.mobility={model=\"polyline\", speed=\"1 m/s\", points=[[0, 0], [nan, 0]]}",
    ]);
    assert!(e.contains("node.car.mobility.points[1].x"), "{e}");
    let e = with(&["node.car.count=2", "node.car.spacing=[1e300, 0]"]);
    assert!(e.contains("node.car.spacing"), "{e}");
    let e = with(&["environment.shadowing_sigma=\"300 dB\""]);
    assert!(e.contains("environment.shadowing_sigma"), "{e}");
    let e = with(&["environment.run_shadowing_sigma=\"-2 dB\""]);
    assert!(
        e.contains("environment.run_shadowing_sigma: -2 dB") && e.contains("0 dB to 20 dB"),
        "{e}"
    );
    let e = with(&["traffic.0.payload=\"9000 B\""]);
    assert!(
        e.contains("traffic[0].payload") && e.contains("2304"),
        "{e}"
    );
    let e = with(&["radio.channel=99"]);
    assert!(e.contains("radio.channel") && e.contains("99"), "{e}");
    let lab = |o: &str| error_of(builtin("drivethru-lab").unwrap(), &[o]);
    let e = lab("node.ap.forwarding={per_packet=\"2 s\", queue_limit=10}");
    assert!(
        e.contains("node.ap.forwarding.per_packet: 2 s") && e.contains("0 to 1 s"),
        "{e}"
    );
    let e = lab("node.ap.forwarding={per_packet=\"2 ms\"}");
    assert!(
        e.contains("node.ap.forwarding") && e.contains("queue_limit"),
        "{e}"
    );
    let e = lab("node.mobile.forwarding={per_packet=\"2 ms\", queue_limit=10}");
    assert!(
        e.contains("node.mobile.forwarding: only an access point"),
        "{e}"
    );
}

#[test]
fn unknown_rates_and_standards() {
    let e = with(&["mac.retry_chain=[{rate=\"13 Mbps\", tries=2}]"]);
    assert!(
        e.contains("mac.retry_chain[0].rate") && e.contains("13 Mbps") && e.contains("54"),
        "{e}"
    );
    let e = with(&["radio.standard=\"802.11x\""]);
    assert!(
        e.contains("radio.standard") && e.contains("802.11x") && e.contains("802.11ac") && e.contains("802.11p"),
        "{e}"
    );
    let e = with(&["radio.standard=\"802.11b\""]); // the chain's 24 Mbps is not a b rate
    assert!(e.contains("24 Mbps") && e.contains("802.11b"), "{e}");
}

#[test]
fn absurd_node_counts_and_dangling_references() {
    let e = with(&["node.car.count=100000000"]);
    assert!(
        e.contains("node.car.count: 100000000") && e.contains("10000"),
        "{e}"
    );
    let e = with(&["node.car.count=6000", "node.ap.count=6000"]);
    assert!(e.contains("12000 nodes") && e.contains("10000"), "{e}");
    let e = with(&["traffic.0.to=\"bus\""]);
    assert!(
        e.contains("traffic[0].to") && e.contains("bus") && e.contains("car"),
        "{e}"
    );
    let e = with(&["node.1.name=\"ap\""]);
    assert!(e.contains("'ap'") && e.contains("twice"), "{e}");
}

#[test]
fn malformed_documents_and_overrides() {
    assert!(error_of("this is = = not toml", &[]).contains("not valid TOML"));
    assert!(error_of("", &[]).contains("duration"));
    assert!(error_of("duration = \"1 s\"", &[]).contains("radio"));
    assert!(with(&["no-equals-sign"]).contains("KEY=VALUE"));
    let e = with(&["node.bus.tx_power=\"1 dBm\""]);
    assert!(
        e.contains("no node named 'bus'") && e.contains("ap, car"),
        "{e}"
    );
    assert!(with(&["name=\"../../etc\""]).contains("name: '../../etc' is not usable"));
    assert!(with(&["traffic.7.payload=\"1 B\""]).contains("out of range"));
    assert!(with(&["traffic[7].payload=\"1 B\""]).contains("index 7 is out of range"));
    assert!(with(&["duration.x=1"]).contains("not a table"));
    // An entry of a section the scenario does not have: named, not a type error.
    let e = with(&["app.0.payload=\"1 B\""]);
    assert!(
        e.contains("no [[app]] entries") && e.contains("cannot add"),
        "{e}"
    );
}

#[test]
fn scan_channels_take_the_other_band_only_on_a_dual_band_radio() {
    // drive-by is 802.11g: its station may list a dual-band card's 5 GHz
    // channels, but not a number that is no channel there.
    let o = |s: &str| vec![s.to_string()];
    let text = builtin("drive-by").unwrap();
    assert!(load(
        text,
        &o("management.scan_channels=[1, 36, 149, 6]"),
        None,
        0
    )
    .is_ok());
    let e = with(&["management.scan_channels=[1, 38]"]);
    assert!(
        e.contains("scan_channels[1]") && e.contains("38") && e.contains("149 + 4k"),
        "{e}"
    );
    // An 802.11a radio has no other band to list.
    let a = "name = \"a\"\nduration = \"1 s\"\n[radio]\nstandard = \"802.11a\"\nchannel = 36\n\
             [management]\nscan_channels = [36, 300]\n\
             [[node]]\nname = \"ap\"\nrole = \"ap\"\n\
             [[node]]\nname = \"sta\"\nrole = \"sta\"\nposition = [10, 0]\n";
    let e = error_of(a, &[]);
    assert!(
        e.contains("scan_channels[1]") && !e.contains("dual-band"),
        "{e}"
    );
}

#[test]
fn diffraction_needs_buildings_and_a_known_model() {
    // drive-by has no [[obstacle]]: nothing to diffract at.
    let e = with(&["environment.diffraction=\"knife-edge\""]);
    assert!(
        e.starts_with("environment.diffraction") && e.contains("obstacle"),
        "{e}"
    );
    let e = with(&["environment.diffraction=\"fresnel\""]);
    assert!(
        e.contains("diffraction") && e.contains("knife-edge") && e.contains("none"),
        "{e}"
    );
}
