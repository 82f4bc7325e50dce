//! Cost of buildings in the channel: the first 100 s of
//! `mukherjee-pedestrian` (a walker on a road, an AP beside it, bulk TCP at
//! 54 Mb/s) without any building, and with 1,000 city blocks (20 m squares
//! on a 40 m pitch, 500 on each side of the road, from 25 m off it) that
//! every link's line of sight runs past but none crosses — so both runs
//! carry the same frames (checked) and the difference is the obstacle
//! stage's lookup alone: the grid walk along each line and the polygons in
//! the cells it visits.
//!
//! Prints wall time per simulated frame, each the median of interleaved
//! runs, and their ratio measured in the same run (target: under +10%).
//!
//! `cargo bench -p wayside-sim --bench obstacles`

use std::time::Instant;
use wayside_sim::run_scenario;
use wayside_sim::scenario::builtin;

/// The walk without its buildings, and with `blocks` city blocks instead.
fn scenario(blocks: bool) -> String {
    let mut doc: toml::Table = builtin("mukherjee-pedestrian")
        .expect("built-in scenario")
        .parse()
        .expect("valid scenario");
    doc.insert("duration".into(), toml::Value::String("100 s".into()));
    doc.remove("obstacle");
    if blocks {
        let mut list = Vec::new();
        for col in 0..50 {
            for row in 0..10 {
                for side in [1.0, -1.0] {
                    let (x, y) = (
                        -1000.0 + 40.0 * col as f64,
                        side * (25.0 + 40.0 * row as f64),
                    );
                    let (y0, y1) = if side > 0.0 {
                        (y, y + 20.0)
                    } else {
                        (y - 20.0, y)
                    };
                    let outline = [[x, y0], [x + 20.0, y0], [x + 20.0, y1], [x, y1]];
                    let mut t = toml::Table::new();
                    t.insert(
                        "outline".into(),
                        toml::Value::try_from(outline).expect("outline"),
                    );
                    list.push(toml::Value::Table(t));
                }
            }
        }
        assert_eq!(list.len(), 1000);
        doc.insert("obstacle".into(), toml::Value::Array(list));
    }
    toml::to_string(&doc).expect("serialises")
}

fn main() {
    let texts = [scenario(false), scenario(true)];
    let mut per_frame = [Vec::new(), Vec::new()];
    let mut frames = [0, 0];
    // Interleaved, in alternating order, so that machine load affects both alike.
    for i in 0..5 {
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let started = Instant::now();
            let out = run_scenario(&texts[k], &[], Some(1), 0).expect("runs");
            let wall = started.elapsed().as_secs_f64();
            frames[k] = out.stats.transmissions;
            per_frame[k].push(wall / out.stats.transmissions as f64);
        }
    }
    assert_eq!(frames[0], frames[1], "the blocks changed the traffic");
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [none, blocks] = per_frame.map(median);
    println!(
        "obstacles: {} frames; {:.0} ns/frame with 1,000 buildings vs {:.0} without: \
         ratio {:.3} ({:+.1}%); target < +10%",
        frames[0],
        blocks * 1e9,
        none * 1e9,
        blocks / none,
        (blocks / none - 1.0) * 100.0
    );
}
