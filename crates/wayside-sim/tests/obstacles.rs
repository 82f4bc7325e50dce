//! Buildings in the channel: a scenario's `[[obstacle]]` outlines take
//! their walls and depth off the line of sight, as Veins'
//! SimpleObstacleShadowing does.

mod common;
use common::id;
use wayside_sim::trace::PhyEvent;
use wayside_sim::RunOutput;

const PAIR: &str = r#"
duration = "1 s"
[environment]
path_loss = "free-space"
noise_floor = "-100 dBm"
[radio]
standard = "802.11g"
b_compatible = false
[[node]]
name = "ap"
position = [0, 0]
[[node]]
name = "car"
position = [100, 0]
[[traffic]]
kind = "cbr"
from = "ap"
to = "broadcast"
payload = "500 B"
interval = "10 ms"
"#;

const BUILDING: &str = r#"
[[obstacle]]
name = "depot"
outline = [[40, -10], [60, -10], [60, 10], [40, 10]]
"#;

/// Mean RSSI of the frames `node` received.
fn rssi(out: &RunOutput, node: &str) -> f64 {
    let (n, f) = (id(out, node), &out.trace.frames);
    let v: Vec<f64> = (0..f.len())
        .filter(|&i| f.node[i] == n && f.event[i] == PhyEvent::Rx as u8)
        .map(|i| f.rssi_dbm[i] as f64)
        .collect();
    assert!(!v.is_empty(), "{node} received nothing");
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_building_on_the_line_takes_two_walls_and_its_depth() {
    let clear = common::run(PAIR, &[], 1);
    let blocked = common::run(&format!("{PAIR}{BUILDING}"), &[], 1);
    // Sommer et al. (2011): 9 dB per wall, 0.4 dB per metre: 2 walls, 20 m.
    let loss = rssi(&clear, "car") - rssi(&blocked, "car");
    assert!((loss - (2.0 * 9.0 + 20.0 * 0.4)).abs() < 1e-3, "{loss} dB");
}

#[test]
fn a_building_beside_the_line_changes_nothing_and_losses_are_per_building() {
    let clear = common::run(PAIR, &[], 1);
    let beside = common::run(
        &format!("{PAIR}{BUILDING}"),
        &["obstacle.depot.outline=[[40, 5], [60, 5], [60, 20], [40, 20]]"],
        1,
    );
    assert!((rssi(&clear, "car") - rssi(&beside, "car")).abs() < 1e-3);
    let light = common::run(
        &format!("{PAIR}{BUILDING}"),
        &[
            "obstacle.depot.per_wall=\"3 dB\"",
            "obstacle.depot.per_metre=\"0 dB\"",
        ],
        1,
    );
    assert!((rssi(&clear, "car") - rssi(&light, "car") - 6.0).abs() < 1e-3);
}

#[test]
fn default_losses_follow_the_frequency_with_p2109() {
    // Channel 6 (2.437 GHz): P.2109's median traditional-building loss is
    // 15.2067 dB against 16.6092 dB at Sommer's 5.9 GHz, 0.915558 of it:
    // 8.24002 dB per wall and 0.366223 dB/m, 2 walls and 20 m = 23.8045 dB.
    let clear = common::run(PAIR, &[], 1);
    let p2109 = ["environment.building_loss=\"sommer-p2109\""];
    let blocked = common::run(&format!("{PAIR}{BUILDING}"), &p2109, 1);
    let loss = rssi(&clear, "car") - rssi(&blocked, "car");
    assert!((loss - 23.8045).abs() < 1e-3, "{loss} dB");
    // A building's own losses are taken as given.
    let own = common::run(
        &format!("{PAIR}{BUILDING}"),
        &[
            p2109[0],
            "obstacle.depot.per_wall=\"3 dB\"",
            "obstacle.depot.per_metre=\"0 dB\"",
        ],
        1,
    );
    assert!((rssi(&clear, "car") - rssi(&own, "car") - 6.0).abs() < 1e-3);
    let e = wayside_sim::run_scenario(
        &format!("{PAIR}{BUILDING}"),
        &["environment.building_loss=\"brick\"".to_string()],
        Some(1),
        0,
    )
    .err()
    .expect("unknown model");
    assert!(
        e.0.contains("environment.building_loss") && e.0.contains("sommer-p2109"),
        "{}",
        e.0
    );
}

#[test]
fn bad_outlines_are_named() {
    let text = format!("{PAIR}{BUILDING}");
    let o = |s: &str| vec![s.to_string()];
    let e = wayside_sim::run_scenario(
        &text,
        &o("obstacle.depot.outline=[[0, 0], [1, 1]]"),
        Some(1),
        0,
    )
    .err()
    .expect("two corners");
    assert!(
        e.0.contains("obstacle[0].outline") && e.0.contains("3 to"),
        "{}",
        e.0
    );
    let e = wayside_sim::run_scenario(&text, &o("obstacle.depot.per_wall=\"-1 dB\""), Some(1), 0)
        .err()
        .expect("negative loss");
    assert!(
        e.0.contains("obstacle[0].per_wall") && e.0.contains("0 dB to 100 dB"),
        "{}",
        e.0
    );
}

#[test]
fn buildings_from_a_sumo_polygon_file() {
    let dir = std::env::temp_dir().join(format!("wayside-obstacles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("city.poly.xml");
    // The depot again, as polyconvert writes it (closed, typed), and a park
    // across the line that the types filter leaves out.
    std::fs::write(
        &file,
        r#"<additional>
  <poly id="depot" type="building" shape="40,-10 60,-10 60,10 40,10 40,-10"/>
  <poly id="green" type="park" shape="70,-10 80,-10 80,10 70,10"/>
</additional>"#,
    )
    .unwrap();
    let section = format!(
        "[[obstacle]]\nsumo = \"{}\"\ntypes = [\"building\"]\n",
        file.display()
    );
    let clear = common::run(PAIR, &[], 1);
    let blocked = common::run(&format!("{PAIR}{section}"), &[], 1);
    let loss = rssi(&clear, "car") - rssi(&blocked, "car");
    assert!((loss - (2.0 * 9.0 + 20.0 * 0.4)).abs() < 1e-3, "{loss} dB");
    let missing = format!(
        "[[obstacle]]\nsumo = \"{}\"\n",
        dir.join("none.poly.xml").display()
    );
    let e = wayside_sim::run_scenario(&format!("{PAIR}{missing}"), &[], Some(1), 0)
        .err()
        .expect("missing file");
    assert!(
        e.0.contains("obstacle[0].sumo") && e.0.contains("cannot read"),
        "{}",
        e.0
    );
    let both = format!("{BUILDING}sumo = \"{}\"\n", file.display());
    let e = wayside_sim::run_scenario(&format!("{PAIR}{both}"), &[], Some(1), 0)
        .err()
        .expect("both");
    assert!(e.0.contains("one of them"), "{}", e.0);
    std::fs::remove_dir_all(&dir).unwrap();
}
