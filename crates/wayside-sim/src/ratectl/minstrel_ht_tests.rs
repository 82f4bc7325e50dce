//! Minstrel-HT's behaviours, one test each, on a synthetic channel.

use super::*;
use crate::phy::ht::HtPhy;
use crate::phy::mode::Standard;
use crate::ratectl::common::testing::Channel;

fn ht(streams: u8, short_gi: bool) -> &'static [Mode] {
    Standard::Ht(HtPhy {
        vht: false,
        band5: true,
        width_mhz: 20,
        streams,
        short_gi,
    })
    .modes()
}

fn mcs(m: Mode) -> (u8, u8, bool) {
    let h = m.ht.unwrap();
    (h.streams, h.mcs, h.short_gi)
}

fn new(modes: &'static [Mode]) -> MinstrelHt {
    MinstrelHt::new(
        modes,
        MinstrelHtParams::default(),
        Stream::new("run", 1, 0, "mht"),
    )
}

/// Success probability 1 for modes that `ok` accepts, else 0.
fn channel(modes: &'static [Mode], ok: impl Fn(u8, u8) -> bool) -> Channel {
    let p = modes
        .iter()
        .map(|m| {
            let (n, i, _) = mcs(*m);
            if ok(n, i) {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    Channel::new(modes, p)
}

#[test]
fn groups_follow_linux_order_and_start_at_mcs0() {
    let mi = new(ht(2, true));
    let keys: Vec<(u8, bool)> = mi
        .groups
        .iter()
        .map(|g| {
            let m = mi.modes[g.modes[0].unwrap()].ht.unwrap();
            (m.streams, m.short_gi)
        })
        .collect();
    assert_eq!(keys, [(1, false), (2, false), (1, true), (2, true)]);
    let (tp, tp2, prob) = mi.best();
    assert_eq!(mcs(tp), (1, 0, false));
    assert_eq!(mcs(tp2), (1, 0, false));
    assert_eq!(mcs(prob), (1, 0, false));
}

#[test]
fn finds_the_highest_working_mcs() {
    let modes = ht(1, false);
    let mut mi = new(modes);
    let mut ch = channel(modes, |_, m| m <= 5);
    for _ in 0..3000 {
        ch.send(&mut mi);
    }
    let (tp, _, prob) = mi.best();
    assert_eq!(mcs(tp), (1, 5, false));
    assert!(mcs(prob).1 <= 5);
}

#[test]
fn max_prob_uses_fewer_streams_than_the_best_rate() {
    let modes = ht(2, false);
    let mut mi = new(modes);
    let mut ch = channel(modes, |_, _| true);
    for _ in 0..4000 {
        ch.send(&mut mi);
    }
    let (tp, _, prob) = mi.best();
    assert_eq!(mcs(tp), (2, 7, false));
    assert_eq!(mcs(prob).0, 1, "max_prob {:?}", mcs(prob));
}

#[test]
fn samples_go_first_with_one_try_then_every_18_frames() {
    let modes = ht(1, false);
    let mut mi = new(modes);
    let mut ch = channel(modes, |_, m| m <= 3);
    // Four sample tries at once (no wait), each a one-try first stage at a
    // rate other than the chain's three.
    let first: Vec<_> = (0..8).map(|_| ch.send(&mut mi).0).collect();
    let samples = first.iter().filter(|c| c.stages.len() == 4).count();
    assert!((1..=4).contains(&samples), "{first:?}");
    for c in first.iter().filter(|c| c.stages.len() == 4) {
        assert_eq!(c.stages[0].tries, 1);
    }
    // Later: at most one sample per 18 + 1 frames.
    for _ in 0..2000 {
        ch.send(&mut mi);
    }
    let later = (0..1900)
        .filter(|_| ch.send(&mut mi).0.stages.len() == 4)
        .count();
    assert!(later <= 1900 / 19 + 1, "{later} samples in 1900 frames");
}

#[test]
fn retry_counts_fit_the_segment() {
    // HT20 MCS 6: 42 symbols = 168 µs; tries until 6000 µs: 5.
    let modes = ht(1, false);
    let mut mi = new(modes);
    let mut ch = channel(modes, |_, m| m <= 6);
    for _ in 0..3000 {
        ch.send(&mut mi);
    }
    let chain = loop {
        let (c, _) = ch.send(&mut mi);
        if c.stages.len() == 3 {
            break c;
        }
    };
    assert_eq!(mcs(chain.stages[0].mode), (1, 6, false));
    assert_eq!(chain.stages[0].tries, 5);
    // MCS 7, sampled and failed: below 10 % a rate's count is 1, and a
    // stage below 20 % gets 2.
    let low = mi.index_of_mode(modes[7]).unwrap();
    assert!(mi.stats[low].att_hist > 0);
    assert_eq!(mi.stats[low].probability, 0.0);
    assert_eq!(mi.retries(low).0, 1);
    assert_eq!(mi.stage_tries(low, 0), 2);
}

#[test]
fn sudden_death_of_two_streams_falls_back_to_one() {
    let modes = ht(2, false);
    let mut mi = new(modes);
    let mut ch = channel(modes, |_, _| true);
    for _ in 0..4000 {
        ch.send(&mut mi);
    }
    assert_eq!(mi.best().0.ht.unwrap().streams, 2);
    // Two streams stop working; within one statistics period max_tp drops
    // to the one-stream group.
    ch.p = modes
        .iter()
        .map(|m| if m.ht.unwrap().streams == 1 { 1.0 } else { 0.0 })
        .collect();
    let mut fell = false;
    for _ in 0..40 {
        ch.send(&mut mi);
        if mi.best().0.ht.unwrap().streams == 1 {
            fell = true;
            break;
        }
    }
    assert!(fell, "still {:?}", mcs(mi.best().0));
}

#[test]
fn vht_groups_hold_ten_mcs() {
    let modes = Standard::Ht(HtPhy {
        vht: true,
        band5: true,
        width_mhz: 80,
        streams: 1,
        short_gi: false,
    })
    .modes();
    let mut mi = new(modes);
    assert_eq!(mi.per_group, 10);
    let mut ch = channel(modes, |_, _| true);
    for _ in 0..3000 {
        ch.send(&mut mi);
    }
    // MCS 8 and 9 both need 7 symbols for 1200 bytes at 80 MHz, so they
    // tie and the first (8) keeps max_tp; MCS 9 was sampled.
    assert_eq!(mcs(mi.best().0), (1, 8, false));
    let nine = mi.index_of_mode(modes[9]).unwrap();
    assert!(mi.stats[nine].att_hist > 0);
}
