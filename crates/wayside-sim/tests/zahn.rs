//! The Zahn et al. (2009) locations as built-in scenarios: each lowers to
//! two ad hoc cars with the paper's base configuration, and on the
//! motorway the cars link up around their meeting and Broadside-Raw moves
//! file data between them.

mod common;
use common::{events, id, run};
use wayside_sim::scenario::{builtin, load};
use wayside_sim::trace::{ConnEvent, Proto};

#[test]
fn each_location_is_two_ad_hoc_cars_in_the_base_configuration() {
    for (name, cars, aps) in [
        ("zahn-terraced", ["moving", "parked"], 90),
        ("zahn-residential", ["moving", "parked"], 7),
        ("zahn-motorway", ["east", "west"], 0),
    ] {
        let (_, cfg) = load(builtin(name).expect("built in"), &[], None, 0)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for car in cars {
            let n = cfg.nodes.iter().find(|n| n.name == car).expect("the car");
            let adhoc = n.adhoc.as_ref().expect("ad hoc");
            assert_eq!(
                (adhoc.join_probe.as_ns(), adhoc.disconnect_timeout.as_ns()),
                (100_000_000, 2_000_000_000),
                "{name}"
            );
            assert!(adhoc.unicast_keepalive);
            assert_eq!(
                (n.channel, n.antenna_gain.0),
                (1, -1.0),
                "{name}: channel 1, 5 dBi less the car body"
            );
        }
        assert_eq!(
            cfg.nodes
                .iter()
                .filter(|n| n.role == wayside_sim::config::Role::Ap)
                .count(),
            aps,
            "{name}"
        );
        let app = &cfg.apps[0];
        let wayside_sim::apps::ip::AppKind::Broadside { files, link, .. } = app.kind else {
            panic!("{name}: not broadside")
        };
        assert!(
            link == wayside_sim::apps::broadside::Link::Raw
                && files.count == 50
                && files.bytes == 10_000_000
                && files.common,
            "{name}: {files:?}"
        );
    }
}

#[test]
fn on_the_motorway_the_link_comes_up_around_the_meeting() {
    let text = builtin("zahn-motorway").unwrap();
    let out = run(text, &["app[0].files=3", "app[0].bytes=\"2 MB\""], 1);
    let up = events(&out, "west", ConnEvent::LinkUp);
    let down = events(&out, "west", ConnEvent::LinkDown);
    // 1800 m apart at 62.6 m/s closing: they meet at 28.8 s.
    assert!(
        !up.is_empty() && up[0].0 < 28.8 && down.last().is_some_and(|d| d.0 > 28.8),
        "{up:?} {down:?}"
    );
    let (n, t) = (id(&out, "west"), &out.trace.transport);
    let bytes: u64 = (0..t.len())
        .filter(|&i| t.node[i] == n && t.proto[i] == Proto::Raw as u8)
        .map(|i| u64::from(t.bytes[i]))
        .sum();
    assert!(bytes > 1_000_000, "{bytes} bytes crossed at 140 mph");
}
