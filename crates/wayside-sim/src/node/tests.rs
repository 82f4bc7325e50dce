//! A node's inputs, one (state, event) pair per test, named
//! `test_<state>_<event>`: the effects each leaves for the world.

use super::effects::{Effect, Effects, MacRecord};
use super::Node;
use crate::air::Air;
use crate::config::SimConfig;
use crate::event::Event;
use crate::ids::{Dst, NodeId};
use crate::mac::dcf::MacTimer;
use crate::trace::MacEvent;
use crate::units::{Dbm, SimTime};

/// Two radios 5 m apart; `a` saturates the link to `b`.
const TWO: &str = r#"
duration = "2 s"
[environment]
path_loss = "free-space"
[radio]
standard = "802.11g"
b_compatible = false
[[node]]
name = "a"
tx_power = "17 dBm"
[[node]]
name = "b"
position = [5, 0]
[[traffic]]
kind = "saturate"
from = "a"
to = "b"
"#;

fn config(overrides: &[&str]) -> SimConfig {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::scenario::load(TWO, &overrides, Some(1), 0)
        .expect("a valid scenario")
        .1
}

fn node(cfg: &SimConfig, i: usize) -> Node {
    Node::all(cfg).swap_remove(i)
}

/// The effects so far, leaving the buffer empty.
fn take(fx: &mut Effects) -> Vec<Effect> {
    fx.drain().collect()
}

/// The MAC timers among `effects`: (timer, when, generation).
fn mac_timers(effects: &[Effect]) -> Vec<(MacTimer, SimTime, u32)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Schedule {
                at,
                event: Event::Mac {
                    timer, generation, ..
                },
            } => Some((*timer, *at, *generation)),
            _ => None,
        })
        .collect()
}

fn mac_records(effects: &[Effect]) -> Vec<MacRecord> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Mac(r) => Some(*r),
            _ => None,
        })
        .collect()
}

/// Node `a` with its frame source started: returns the node and the time
/// its source first wants to emit.
fn sending(cfg: &SimConfig, fx: &mut Effects) -> (Node, SimTime) {
    let mut a = node(cfg, 0);
    a.apps.start_sources();
    a.pump_apps(fx, SimTime::ZERO);
    let emit = take(fx)
        .into_iter()
        .find_map(|e| match e {
            Effect::Emit { source: 0, at } => Some(at),
            _ => None,
        })
        .expect("the source asks to emit");
    (a, emit)
}

#[test]
fn test_idle_emit_arms_the_access_timer() {
    let cfg = config(&[]);
    let mut fx = Effects::default();
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    let effects = take(&mut fx);
    let timers = mac_timers(&effects);
    assert!(
        timers
            .iter()
            .any(|t| t.0 == MacTimer::AccessGrant && t.1 > at),
        "{effects:?}"
    );
    assert!(!effects.iter().any(|e| matches!(e, Effect::Transmit { .. })));
}

#[test]
fn test_contending_access_grant_transmits_unicast_awaiting_its_ack() {
    let cfg = config(&[]);
    let (mut fx, mut air) = (Effects::default(), Air::new(&cfg));
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    let (timer, when, generation) = mac_timers(&take(&mut fx))
        .into_iter()
        .find(|t| t.0 == MacTimer::AccessGrant)
        .expect("an access timer");
    a.on_mac_timer(&mut air, &mut fx, when, timer, generation);
    let sent: Vec<_> = take(&mut fx)
        .into_iter()
        .filter_map(|e| match e {
            Effect::Transmit {
                frame,
                end,
                channel,
                tx_power,
                awaits,
                ..
            } => Some((frame.dst, end, channel, tx_power, awaits)),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    let (dst, end, channel, tx_power, awaits) = sent[0];
    assert_eq!(dst, Dst::Node(NodeId(1)));
    assert!(end > when);
    assert_eq!(channel, cfg.nodes[0].channel);
    assert_eq!(tx_power, Dbm(17.0));
    assert!(awaits);
}

#[test]
fn test_any_stale_mac_timer_leaves_no_effect() {
    let cfg = config(&[]);
    let (mut fx, mut air) = (Effects::default(), Air::new(&cfg));
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    let (timer, when, generation) = mac_timers(&take(&mut fx))[0];
    a.on_mac_timer(&mut air, &mut fx, when, timer, generation + 1);
    assert_eq!(fx.as_slice(), &[]);
}

#[test]
fn test_transmitting_tx_end_arms_the_ack_timeout() {
    let cfg = config(&[]);
    let (mut fx, mut air) = (Effects::default(), Air::new(&cfg));
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    let (timer, when, generation) = mac_timers(&take(&mut fx))[0];
    a.on_mac_timer(&mut air, &mut fx, when, timer, generation);
    let (frame, end) = take(&mut fx)
        .into_iter()
        .find_map(|e| match e {
            Effect::Transmit { frame, end, .. } => Some((frame, end)),
            _ => None,
        })
        .expect("a frame on the air");
    a.on_tx_end(&mut fx, end, &frame);
    let timeout = cfg.radio.standard.timing(false).ack_timeout;
    assert_eq!(
        mac_timers(&take(&mut fx))
            .iter()
            .find(|t| t.0 == MacTimer::ResponseTimeout)
            .map(|t| t.1),
        Some(end + timeout)
    );
}

#[test]
fn test_off_power_schedule_asks_to_appear_and_disappear() {
    let cfg = config(&[r#"node.a.appear="1 s""#, r#"node.a.disappear="1.5 s""#]);
    let mut fx = Effects::default();
    let mut a = node(&cfg, 0);
    assert_eq!(a.radio(), None);
    a.power_schedule(&mut fx);
    let a_id = NodeId(0);
    assert_eq!(
        take(&mut fx),
        vec![
            Effect::Schedule {
                at: SimTime::from_ms(1000),
                event: Event::Power {
                    node: a_id,
                    on: true
                }
            },
            Effect::Schedule {
                at: SimTime::from_ms(1500),
                event: Event::Power {
                    node: a_id,
                    on: false
                }
            },
        ]
    );
}

#[test]
fn test_off_emit_records_radio_off() {
    let cfg = config(&[r#"node.a.appear="1 s""#]);
    let mut fx = Effects::default();
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    let effects = take(&mut fx);
    let records = mac_records(&effects);
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.event == MacEvent::RadioOff));
    assert!(mac_timers(&effects).is_empty());
}

#[test]
fn test_off_power_on_tunes_the_radio_in() {
    let cfg = config(&[r#"node.a.appear="1 s""#]);
    let mut fx = Effects::default();
    let mut a = node(&cfg, 0);
    a.on_power(&mut fx, SimTime::from_ms(1000), true);
    assert_eq!(a.radio(), Some(cfg.nodes[0].channel));
}

#[test]
fn test_contending_power_off_drops_the_queue_as_radio_off() {
    let cfg = config(&[]);
    let mut fx = Effects::default();
    let (mut a, at) = sending(&cfg, &mut fx);
    a.on_emit(&mut fx, at, 0);
    take(&mut fx);
    a.on_power(&mut fx, at, false);
    assert_eq!(a.radio(), None);
    let records = mac_records(&take(&mut fx));
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r.event == MacEvent::RadioOff));
}
