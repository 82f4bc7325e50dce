//! Tests of the A-MPDU path: an originator and a recipient DCF wired by
//! hand, the test deciding which subframes and responses get through.

use super::super::*;
use crate::geometry::Vec2;
use crate::mac::ampdu::{AmpduConfig, MAX_SW_RETRIES};
use crate::mac::reorder::REORDER_TIMEOUT;
use crate::phy::ht::HtPhy;
use crate::ratectl::RateControlSpec;
use crate::units::Db;

const A: NodeId = NodeId(0);
const B: NodeId = NodeId(1);

const WHERE: Option<Whereabouts> = Some(Whereabouts {
    position: Vec2::new(0.0, 0.0),
    mean_snr: Some(Db(30.0)),
});

fn ht() -> Standard {
    Standard::Ht(HtPhy {
        vht: false,
        band5: true,
        width_mhz: 20,
        streams: 1,
        short_gi: false,
    })
}

/// HT20 MCS 7, 65 Mbit/s.
fn mcs7() -> Mode {
    crate::phy::ht::mode(false, 20, 7, 1, false).expect("MCS 7")
}

/// A DCF and the timers it armed that have not fired.
struct Sta {
    d: Dcf,
    armed: Vec<(MacTimer, SimTime, u32)>,
}

/// A station with aggregation on, `tries` tries of MCS 7 per aggregate.
fn station(me: NodeId, tries: u8) -> Sta {
    let chain = RetryChain {
        stages: vec![Stage {
            mode: mcs7(),
            tries,
        }],
    };
    let rate = RateControlSpec::Fixed {
        short: chain.clone(),
        long: chain,
        rts_threshold: 2347,
    };
    let st = ht();
    let cfg = MacConfig {
        queue_limit: 1000,
        queue: Default::default(),
        short_retry_limit: tries,
        long_retry_limit: tries,
        rts_threshold: 2347,
        rate: rate.clone(),
        modes: st.modes(),
        fast_frames: None,
        ampdu: Some(AmpduConfig::ATH9K),
        txop_bursting: None,
    };
    let air = Air {
        standard: st,
        preamble: Preamble::Long,
        basic: st.basic_rates()[0],
    };
    let links = Links::new(rate, st.modes(), (1, u64::from(me.0), "agg".into()));
    let rng = Stream::new("run", 1, u64::from(me.0), "test/agg");
    Sta {
        d: Dcf::new(me, cfg, st.timing(false), air, links, rng, Dbm(15.0)),
        armed: Vec::new(),
    }
}

fn queue(s: &mut Sta, n: usize, at: SimTime) {
    for _ in 0..n {
        let msdu = Msdu {
            dst: Dst::Node(B),
            bytes: 1500,
            enqueued: at,
            fixed: None,
            source: None,
            payload: Payload::Raw,
        };
        assert!(s.d.enqueue(at, msdu));
    }
}

/// Fires the current timer of `kind`, if one is armed; returns its time.
fn fire(s: &mut Sta, kind: MacTimer) -> Option<SimTime> {
    s.armed.extend(std::iter::from_fn(|| s.d.poll_timer()));
    let d = &s.d;
    s.armed.retain(|&(t, _, g)| d.is_current(t, g));
    let i = s.armed.iter().rposition(|&(t, _, _)| t == kind)?;
    let (_, at, _) = s.armed.remove(i);
    s.d.handle_timeout(at, kind, false, false, WHERE);
    Some(at)
}

/// `s` wins the channel and sends; the frame, and when it ends.
fn send(s: &mut Sta) -> (Frame, Mode, SimTime) {
    let at = fire(s, MacTimer::AccessGrant).expect("contending");
    let (frame, mode) = s.d.poll_transmit().expect("a frame on the air");
    let end = at + mode.airtime(frame.psdu_bytes, Preamble::Long, ht());
    s.d.handle_tx_end(end, &frame);
    (frame, mode, end)
}

/// The recipient takes `frame` with the subframes `oks` says decoded;
/// its response, if it sends one.
fn deliver(rx: &mut Sta, frame: &Frame, mode: Mode, oks: &[bool], at: SimTime) -> Option<Frame> {
    rx.d.handle_rx_aggregate(at, frame, mode, oks, Dbm(-50.0), Dbm(-95.0));
    fire(rx, MacTimer::SifsResponse)?;
    rx.d.poll_transmit().map(|(f, _)| f)
}

/// `rx` takes a control frame (Block Ack or BAR) intact at `at`.
fn control(rx: &mut Sta, frame: &Frame, mode: Mode, at: SimTime) {
    rx.d.handle_rx_end(at, frame, mode, true, Dbm(-50.0), Dbm(-95.0));
}

fn seqs(frame: &Frame) -> Vec<u16> {
    match &frame.payload {
        Payload::Aggregate(m) => m.iter().map(|m| m.seq).collect(),
        _ => panic!("not an aggregate: {frame:?}"),
    }
}

/// (sequence number, delivered) of each MSDU done, and what was handed up.
fn outcomes(s: &mut Sta) -> (Vec<(u16, bool)>, Vec<(u16, bool)>) {
    let (mut done, mut up) = (Vec::new(), Vec::new());
    for ev in std::iter::from_fn(|| s.d.poll_event()) {
        match ev {
            DcfEvent::Done { seq, delivered, .. } => done.push((seq, delivered)),
            DcfEvent::Received {
                frame, duplicate, ..
            } => up.push((frame.seq, duplicate)),
            _ => {}
        }
    }
    (done, up)
}

#[test]
fn an_aggregate_fills_four_ms_at_its_rate() {
    let mut a = station(A, 2);
    queue(&mut a, 40, SimTime::ZERO);
    let (frame, mode, _) = send(&mut a);
    // 4 ms at MCS 7 hold 32,172 bytes (ath9k's table): 21 subframes of
    // 1532 bytes; fewer than the 32-subframe limit.
    assert_eq!(seqs(&frame), (0..21).collect::<Vec<u16>>());
    assert_eq!(frame.psdu_bytes, 21 * 1532);
    assert!(mode.airtime(frame.psdu_bytes, Preamble::Long, ht()) <= SimTime::from_us(4000));
    assert!(frame.duration > SimTime::ZERO);
}

#[test]
fn a_partial_block_ack_resends_only_the_missing() {
    let (mut a, mut b) = (station(A, 2), station(B, 2));
    queue(&mut a, 30, SimTime::ZERO);
    let (frame, mode, end) = send(&mut a);
    let mut oks = vec![true; 21];
    (oks[3], oks[5]) = (false, false);
    let ba = deliver(&mut b, &frame, mode, &oks, end).expect("a Block Ack");
    let Payload::BlockAck { ssn, bitmap } = ba.payload else {
        panic!("{ba:?}");
    };
    assert_eq!((ssn, bitmap), (0, ((1 << 21) - 1) & !(1 << 3) & !(1 << 5)));
    // The recipient hands up 0–2 and holds 4 and 6–20 behind the gaps.
    let (_, up) = outcomes(&mut b);
    assert_eq!(up, vec![(0, false), (1, false), (2, false)]);
    control(&mut a, &ba, mode, end + SimTime::from_us(60));
    let (done, _) = outcomes(&mut a);
    assert_eq!(done.len(), 19);
    assert!(done.iter().all(|&(s, ok)| ok && s != 3 && s != 5));
    // The next aggregate leads with the two retries, then new MSDUs.
    let (frame, mode, end) = send(&mut a);
    let s = seqs(&frame);
    assert_eq!(&s[..4], &[3, 5, 21, 22]);
    let Payload::Aggregate(m) = &frame.payload else {
        unreachable!()
    };
    assert!(m[0].retry && m[1].retry && !m[2].retry);
    deliver(&mut b, &frame, mode, &vec![true; s.len()], end).expect("a Block Ack");
    let (_, up) = outcomes(&mut b);
    let order: Vec<u16> = up.iter().map(|&(s, _)| s).collect();
    assert_eq!(order, (3..21 + s.len() as u16 - 2).collect::<Vec<u16>>());
}

#[test]
fn a_lost_block_ack_repeats_the_aggregate_and_the_recipient_drops_copies() {
    let (mut a, mut b) = (station(A, 2), station(B, 2));
    queue(&mut a, 21, SimTime::ZERO);
    let (first, mode, end) = send(&mut a);
    deliver(&mut b, &first, mode, &[true; 21], end).expect("a Block Ack");
    assert_eq!(outcomes(&mut b).1.len(), 21);
    // The Block Ack is lost: the hardware sends the same PPDU again.
    fire(&mut a, MacTimer::ResponseTimeout).expect("waiting for the Block Ack");
    let (again, _, end) = send(&mut a);
    assert_eq!(seqs(&again), seqs(&first));
    assert!(again.retry);
    let ba = deliver(&mut b, &again, mode, &[true; 21], end).expect("a Block Ack");
    let (_, up) = outcomes(&mut b);
    assert!(up.iter().all(|&(_, dup)| dup), "{up:?}");
    control(&mut a, &ba, mode, end);
    let (done, _) = outcomes(&mut a);
    assert_eq!(done.len(), 21);
    assert!(done.iter().all(|&(_, ok)| ok));
}

#[test]
fn given_up_mpdus_send_a_bar_that_frees_the_recipients_window() {
    let (mut a, mut b) = (station(A, 1), station(B, 1));
    queue(&mut a, 3, SimTime::ZERO);
    let (frame, mode, end) = send(&mut a);
    assert_eq!(seqs(&frame), vec![0, 1, 2]);
    // 0 is lost; 1 and 2 wait behind it at the recipient.
    deliver(&mut b, &frame, mode, &[false, true, true], end).expect("a Block Ack");
    assert!(outcomes(&mut b).1.is_empty());
    // Every Block Ack is lost from now on: the three go out again and
    // again, until their software retries run out.
    fire(&mut a, MacTimer::ResponseTimeout).expect("waiting");
    for _ in 0..MAX_SW_RETRIES {
        let (frame, _, _) = send(&mut a);
        assert_eq!(seqs(&frame), vec![0, 1, 2]);
        fire(&mut a, MacTimer::ResponseTimeout).expect("waiting");
    }
    let (done, _) = outcomes(&mut a);
    assert_eq!(done, vec![(0, false), (1, false), (2, false)]);
    // Then a BAR moves the recipient's window past them.
    let (bar, mode, end) = send(&mut a);
    assert_eq!(bar.kind, FrameKind::BlockAckReq);
    assert_eq!(bar.payload, Payload::BlockAckReq { ssn: 3 });
    control(&mut b, &bar, mode, end);
    fire(&mut b, MacTimer::SifsResponse).expect("a Block Ack to the BAR");
    let (ba, _) = b.d.poll_transmit().expect("the Block Ack");
    assert_eq!(ba.kind, FrameKind::BlockAck);
    // The recipient hands up what waited behind the lost one.
    assert_eq!(outcomes(&mut b).1, vec![(1, false), (2, false)]);
    control(&mut a, &ba, mode, end);
    assert_eq!(outcomes(&mut a), (vec![], vec![]));
    assert_eq!(a.d.state(), DcfState::Idle);
}

#[test]
fn the_reorder_timeout_releases_what_waits_behind_a_gap() {
    let (mut a, mut b) = (station(A, 2), station(B, 2));
    queue(&mut a, 4, SimTime::ZERO);
    let (frame, mode, end) = send(&mut a);
    deliver(&mut b, &frame, mode, &[true, false, true, true], end).expect("a Block Ack");
    assert_eq!(outcomes(&mut b).1, vec![(0, false)]);
    let at = fire(&mut b, MacTimer::ReorderTimeout).expect("a reorder timeout");
    assert_eq!(at, end + REORDER_TIMEOUT);
    assert_eq!(outcomes(&mut b).1, vec![(2, false), (3, false)]);
}
