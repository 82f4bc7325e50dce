//! Tests of `dcf` per (state, event).

use super::*;
use crate::geometry::Vec2;
use crate::mac::mgmt::MgmtBody;
use crate::mac::FAST_FRAME_OVERHEAD;
use crate::packet::{ArpOp, Body, Packet};
use crate::ratectl::RateControlSpec;
use crate::units::{Bitrate, Db};

const ME: NodeId = NodeId(0);
const PEER: NodeId = NodeId(1);
const OTHER: NodeId = NodeId(2);

const KNOWN: Option<Whereabouts> = Some(Whereabouts {
    position: Vec2::new(0.0, 0.0),
    mean_snr: Some(Db(30.0)),
});

fn g(mbps: u64) -> Mode {
    Standard::G.mode(Bitrate(mbps * 1_000_000)).unwrap()
}

fn timing() -> Timing {
    Standard::G.timing(false)
}

/// A DCF at 54 Mbps with `tries` attempts per frame and `queue_limit`.
fn dcf(tries: u8, queue_limit: usize) -> Dcf {
    dcf_at(g(54), tries, queue_limit, None)
}

/// A DCF at `mode`, with fast frames up to this airtime if given.
fn dcf_at(mode: Mode, tries: u8, queue_limit: usize, fast_frames: Option<SimTime>) -> Dcf {
    let chain = RetryChain {
        stages: vec![Stage { mode, tries }],
    };
    let rate = RateControlSpec::Fixed {
        short: chain.clone(),
        long: chain,
        rts_threshold: 2347,
    };
    let cfg = MacConfig {
        queue_limit,
        queue: Default::default(),
        short_retry_limit: tries,
        long_retry_limit: tries,
        rts_threshold: 2347,
        rate: rate.clone(),
        modes: Standard::G.modes(),
        fast_frames,
        ampdu: None,
        txop_bursting: None,
    };
    let air = Air {
        standard: Standard::G,
        preamble: Preamble::Long,
        basic: Standard::G.basic_rates()[0],
    };
    let links = Links::new(rate, Standard::G.modes(), (1, 0, "me".into()));
    Dcf::new(
        ME,
        cfg,
        timing(),
        air,
        links,
        Stream::new("run", 1, 0, "test/dcf"),
        Dbm(15.0),
    )
}

fn msdu(dst: Dst, now: SimTime) -> Msdu {
    Msdu {
        dst,
        bytes: 1500,
        enqueued: now,
        fixed: None,
        source: None,
        payload: Payload::Raw,
    }
}

fn us(n: u64) -> SimTime {
    SimTime::from_us(n)
}

fn timers(d: &mut Dcf) -> Vec<(MacTimer, SimTime)> {
    std::iter::from_fn(|| d.poll_timer())
        .map(|(t, at, _)| (t, at))
        .collect()
}

fn events(d: &mut Dcf) -> Vec<DcfEvent> {
    std::iter::from_fn(|| d.poll_event()).collect()
}

/// The response timeout fires at `at`, the medium busy (a reception
/// under way) or idle.
fn response_timeout(d: &mut Dcf, at: SimTime, busy: bool) {
    d.handle_timeout(at, MacTimer::ResponseTimeout, busy, busy, KNOWN);
}

/// Enqueues one unicast MSDU on an idle medium and lets it go on the air.
fn sent_one(d: &mut Dcf) -> (Frame, Mode) {
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO));
    let (t, at) = timers(d)[0];
    d.handle_timeout(at, t, false, false, KNOWN);
    d.poll_transmit().expect("a frame on the air")
}

fn frame_from(src: NodeId, dst: Dst, kind: FrameKind, duration: SimTime) -> Frame {
    Frame {
        kind,
        src,
        dst,
        seq: 7,
        retry: false,
        attempt: 0,
        psdu_bytes: 100,
        duration,
        payload: Payload::Raw,
        report: None,
    }
}

/// The sizes of the MSDUs a DCF at `mbps`, fast frames gated at
/// madwifi's 2.048 ms TXOP, takes one after another from `n` packets
/// of `bytes` (LLC/SNAP included) queued at once.
fn msdus_taken(mbps: u64, bytes: u32, n: usize) -> Vec<u32> {
    let mut d = dcf_at(g(mbps), 7, 100, Some(us(2048)));
    for _ in 0..n {
        let arp = Body::Arp { op: ArpOp::Request };
        let packet = Msdu {
            bytes,
            payload: Payload::Packet(Packet::new(ME, PEER, arp)),
            ..msdu(Dst::Node(PEER), SimTime::ZERO)
        };
        d.enqueue(SimTime::ZERO, packet);
    }
    let mut taken = Vec::new();
    while d.next_msdu(SimTime::ZERO, KNOWN) {
        taken.push(d.current.take().expect("a frame taken").msdu.bytes);
    }
    taken
}

#[test]
fn fast_frames_pair_as_madwifi_gates_them() {
    // Only a packet that found three frames ahead of it is held for a
    // partner (madwifi's ATH_FF_TXQMIN): the first three of five go alone.
    let pair = 2 * 1508 + FAST_FRAME_OVERHEAD;
    assert_eq!(msdus_taken(18, 1508, 5), vec![1508, 1508, 1508, pair]);
    assert_eq!(msdus_taken(18, 1508, 6), vec![1508, 1508, 1508, pair, 1508]);
    assert_eq!(msdus_taken(18, 1508, 4), vec![1508; 4]);
    // Two 1500-byte packets at 12 Mbps: madwifi's estimate (3100 bytes)
    // takes 2.10 ms, over the best-effort TXOP; at 18 Mbps 1.41 ms.
    assert_eq!(msdus_taken(12, 1508, 5), vec![1508; 5]);
    // Two TCP ACKs pair even at 1 Mbps: 1.63 ms with the long PLCP.
    assert_eq!(
        msdus_taken(1, 48, 5),
        vec![48, 48, 48, 2 * 48 + FAST_FRAME_OVERHEAD]
    );
}

#[test]
fn a_held_packet_goes_alone_once_the_queue_ahead_drains() {
    // Four TCP ACKs at 1 Mbps: the fourth, three frames behind the one on
    // the air, is held for a partner. If a fifth comes before the first
    // is done, the two pair; if the first completes first, only two
    // frames remain ahead of the held one and madwifi flushes it: it goes
    // alone, and so does the fifth.
    let taken = |fifth_first: bool| {
        let mut d = dcf_at(g(1), 7, 100, Some(us(2048)));
        let ack = || {
            let arp = Body::Arp { op: ArpOp::Request };
            Msdu {
                bytes: 48,
                payload: Payload::Packet(Packet::new(ME, PEER, arp)),
                ..msdu(Dst::Node(PEER), SimTime::ZERO)
            }
        };
        for _ in 0..4 {
            d.enqueue(SimTime::ZERO, ack());
        }
        assert!(d.next_msdu(SimTime::ZERO, KNOWN));
        if fifth_first {
            d.enqueue(us(10), ack());
        }
        d.finish(us(20), true);
        if !fifth_first {
            d.enqueue(us(30), ack());
        }
        let mut sizes = Vec::new();
        while d.next_msdu(us(40), KNOWN) {
            sizes.push(d.current.take().expect("a frame taken").msdu.bytes);
        }
        sizes
    };
    assert_eq!(taken(true), vec![48, 48, 2 * 48 + FAST_FRAME_OVERHEAD]);
    assert_eq!(taken(false), vec![48; 4]);
}

#[test]
fn no_rts_by_length_where_fast_frames_are_on() {
    // madwifi asks for RTS on frames over the threshold only to peers
    // that cannot take fast frames (a fast frame always exceeds it).
    let first = |fast_frames| {
        let mut d = dcf_at(g(54), 7, 10, fast_frames);
        let big = Msdu {
            bytes: 3000,
            ..msdu(Dst::Node(PEER), SimTime::ZERO)
        };
        d.enqueue(SimTime::ZERO, big);
        let (t, at) = timers(&mut d)[0];
        d.handle_timeout(at, t, false, false, KNOWN);
        d.poll_transmit().expect("a frame on the air").0.kind
    };
    assert_eq!(first(None), FrameKind::Rts);
    assert_eq!(first(Some(us(2048))), FrameKind::Data);
}

/// A DCF at 54 Mbps bursting within `txop_us` with three 1500-byte
/// MSDUs queued; sends the first and has it acknowledged at `acked`.
fn bursting(txop_us: u64, acked: SimTime) -> Dcf {
    let mut d = dcf_at(g(54), 7, 10, None);
    d.cfg.txop_bursting = Some(us(txop_us));
    let (frame, _) = sent_one(&mut d);
    for _ in 0..2 {
        d.enqueue(us(1), msdu(Dst::Node(PEER), us(1)));
    }
    timers(&mut d);
    d.handle_tx_end(acked - us(50), &frame);
    let ack = frame_from(PEER, Dst::Node(ME), FrameKind::Ack, SimTime::ZERO);
    d.handle_rx_end(acked, &ack, g(24), true, Dbm(-60.0), Dbm(-95.0));
    d
}

/// `TxopNext` fires at `at`.
fn txop_next(d: &mut Dcf, at: SimTime) {
    d.handle_timeout(at, MacTimer::TxopNext, false, false, KNOWN);
}

#[test]
fn within_a_txop_the_next_frame_follows_a_sifs_after_the_ack() {
    // Granted at DIFS (28 us); the 1528-byte frame at 54 Mbps takes
    // 254 us, its exchange with SIFS and ACK about 300 us.
    let acked = us(400);
    let mut d = bursting(2048, acked);
    let sifs = timing().sifs;
    let armed = timers(&mut d);
    assert!(
        armed.contains(&(MacTimer::TxopNext, acked + sifs)),
        "{armed:?}"
    );
    d.handle_medium(acked, false);
    assert!(
        !armed
            .iter()
            .chain(&timers(&mut d))
            .any(|t| t.0 == MacTimer::AccessGrant),
        "no contention meanwhile"
    );
    txop_next(&mut d, acked + sifs);
    let (next, _) = d.poll_transmit().expect("the second frame, at once");
    assert_eq!((next.kind, next.dst), (FrameKind::Data, Dst::Node(PEER)));
    assert!(d.txop_until.is_some());
}

#[test]
fn a_frame_that_would_overrun_the_txop_waits_for_the_channel() {
    // A 600 us TXOP: after the first exchange (ACK at 400 us) the next
    // one would end past 628 us, so the station contends again.
    let acked = us(400);
    let mut d = bursting(600, acked);
    let sifs = timing().sifs;
    txop_next(&mut d, acked + sifs);
    assert!(d.poll_transmit().is_none());
    assert!(d.txop_until.is_none() && d.backoff.is_some());
    assert!(matches!(d.state(), DcfState::Contending { .. }));
}

#[test]
fn test_contending_chain_peer_is_the_next_unicast_receiver() {
    let mut d = dcf(1, 10);
    assert_eq!(
        d.chain_peer(SimTime::ZERO, MacTimer::AccessGrant),
        None,
        "nothing queued"
    );
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO));
    assert_eq!(
        d.chain_peer(SimTime::ZERO, MacTimer::AccessGrant),
        Some(PEER)
    );
    assert_eq!(d.chain_peer(SimTime::ZERO, MacTimer::TxopNext), Some(PEER));
    assert_eq!(d.chain_peer(SimTime::ZERO, MacTimer::ResponseTimeout), None);
}

#[test]
fn test_contending_chain_peer_of_broadcast_or_fixed_stage_is_none() {
    let mut d = dcf(1, 10);
    d.enqueue(SimTime::ZERO, msdu(Dst::Broadcast, SimTime::ZERO));
    assert_eq!(d.chain_peer(SimTime::ZERO, MacTimer::AccessGrant), None);
    let mut d = dcf(1, 10);
    let fixed = Msdu {
        fixed: Some(Stage {
            mode: g(6),
            tries: 1,
        }),
        ..msdu(Dst::Node(PEER), SimTime::ZERO)
    };
    d.enqueue(SimTime::ZERO, fixed);
    assert_eq!(d.chain_peer(SimTime::ZERO, MacTimer::AccessGrant), None);
}

#[test]
fn test_awaiting_ack_chain_peer_is_none_while_a_frame_is_in_progress() {
    let mut d = dcf(3, 10);
    sent_one(&mut d);
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(OTHER), SimTime::ZERO));
    assert_eq!(d.chain_peer(SimTime::ZERO, MacTimer::AccessGrant), None);
}

#[test]
fn test_idle_enqueue_on_idle_medium_contends_for_difs() {
    let mut d = dcf(7, 10);
    assert!(d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO)));
    assert_eq!(timers(&mut d), vec![(MacTimer::AccessGrant, timing().difs)]);
    assert_eq!(
        d.state(),
        DcfState::Contending {
            since: timing().difs
        }
    );
}

#[test]
fn test_idle_enqueue_on_busy_medium_draws_a_frozen_backoff() {
    let mut d = dcf(7, 10);
    d.handle_medium(SimTime::ZERO, true);
    d.enqueue(us(1), msdu(Dst::Node(PEER), us(1)));
    assert!(timers(&mut d).is_empty());
    assert_eq!(d.state(), DcfState::Idle);
    assert!(d.backoff.is_some_and(|b| b <= timing().cw_min));
    // The medium goes idle: contention resumes after DIFS plus the slots.
    d.handle_medium(us(100), false);
    let slots = u64::from(d.backoff.unwrap());
    assert_eq!(
        timers(&mut d),
        vec![(
            MacTimer::AccessGrant,
            us(100) + timing().difs + timing().slot * slots
        )]
    );
}

#[test]
fn test_contending_medium_busy_freezes_the_remaining_slots() {
    let mut d = dcf(7, 10);
    d.handle_medium(SimTime::ZERO, true);
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO));
    d.backoff = Some(10);
    d.handle_medium(SimTime::ZERO, false);
    let (_, _, generation) = d.poll_timer().unwrap();
    // Busy again after DIFS and three whole slots (and a fraction).
    let t = timing().difs + timing().slot * 3 + us(2);
    d.handle_medium(t, true);
    assert_eq!(d.state(), DcfState::Idle);
    assert_eq!(d.backoff, Some(7));
    assert!(!d.is_current(MacTimer::AccessGrant, generation));
}

#[test]
fn test_contending_grant_sends_unicast_with_ack_duration() {
    let mut d = dcf(7, 10);
    let (frame, mode) = sent_one(&mut d);
    assert_eq!(
        (frame.kind, frame.dst, frame.attempt, frame.retry),
        (FrameKind::Data, Dst::Node(PEER), 0, false)
    );
    assert_eq!(mode, g(54));
    assert_eq!(frame.psdu_bytes, 1500 + DATA_OVERHEAD);
    let ack = Standard::G
        .control_rate(g(54))
        .airtime(ACK_BYTES, Preamble::Long, Standard::G);
    assert_eq!(frame.duration, timing().sifs + ack);
    assert_eq!(d.state(), DcfState::Idle);
}

#[test]
fn test_transmitting_tx_end_of_unicast_awaits_ack() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    assert_eq!(d.state(), DcfState::AwaitingAck { timed_out: false });
    assert_eq!(
        timers(&mut d),
        vec![(MacTimer::ResponseTimeout, us(300) + timing().ack_timeout)]
    );
}

#[test]
fn test_transmitting_tx_end_of_broadcast_is_done() {
    let mut d = dcf(7, 10);
    d.enqueue(SimTime::ZERO, msdu(Dst::Broadcast, SimTime::ZERO));
    let (t, at) = timers(&mut d)[0];
    d.handle_timeout(at, t, false, false, KNOWN);
    let (frame, mode) = d.poll_transmit().unwrap();
    assert_eq!(mode, Standard::G.basic_rates()[0]);
    assert_eq!(frame.duration, SimTime::ZERO);
    d.handle_tx_end(us(2000), &frame);
    assert!(matches!(
        events(&mut d)[..],
        [DcfEvent::Done {
            delivered: true,
            attempts: 1,
            ..
        }]
    ));
}

#[test]
fn test_awaiting_ack_ack_finishes_and_resets_cw() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    d.cw = 63;
    let ack = frame_from(PEER, Dst::Node(ME), FrameKind::Ack, SimTime::ZERO);
    d.handle_rx_end(us(350), &ack, g(24), true, Dbm(-60.0), Dbm(-95.0));
    let ev = events(&mut d);
    assert!(matches!(ev[0], DcfEvent::Response(TxOutcome::Acked)));
    assert!(matches!(
        ev[1],
        DcfEvent::Done {
            delivered: true,
            attempts: 1,
            ..
        }
    ));
    assert_eq!(d.cw, timing().cw_min);
    assert!(d.backoff.is_some(), "a post-transmission backoff is drawn");
    assert_eq!(d.state(), DcfState::Idle);
}

#[test]
fn test_awaiting_ack_timeout_retries_with_doubled_cw() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    timers(&mut d);
    response_timeout(&mut d, us(400), false);
    assert!(matches!(
        events(&mut d)[..],
        [DcfEvent::Response(TxOutcome::Unacked)]
    ));
    assert_eq!(d.cw, 2 * timing().cw_min + 1);
    assert!(matches!(d.state(), DcfState::Contending { .. }));
    let (t, at) = timers(&mut d)[0];
    d.handle_timeout(at, t, false, false, KNOWN);
    let (again, _) = d.poll_transmit().unwrap();
    assert_eq!(
        (again.attempt, again.retry, again.seq),
        (1, true, frame.seq)
    );
}

#[test]
fn test_awaiting_ack_timeout_while_receiving_waits_for_the_frame() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    response_timeout(&mut d, us(400), true);
    assert_eq!(d.state(), DcfState::AwaitingAck { timed_out: true });
    assert!(events(&mut d).is_empty());
    // The frame that was arriving is the ACK: delivered after all.
    let ack = frame_from(PEER, Dst::Node(ME), FrameKind::Ack, SimTime::ZERO);
    d.handle_rx_end(us(420), &ack, g(24), true, Dbm(-60.0), Dbm(-95.0));
    assert!(matches!(
        events(&mut d)[1],
        DcfEvent::Done {
            delivered: true,
            ..
        }
    ));
}

#[test]
fn test_awaiting_ack_timed_out_other_frame_fails_the_attempt() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    response_timeout(&mut d, us(400), true);
    let data = frame_from(OTHER, Dst::Broadcast, FrameKind::Data, SimTime::ZERO);
    d.handle_rx_end(us(900), &data, g(6), true, Dbm(-60.0), Dbm(-95.0));
    let ev = events(&mut d);
    assert!(matches!(ev[0], DcfEvent::Response(TxOutcome::Unacked)));
    assert!(matches!(
        ev[1],
        DcfEvent::Received {
            duplicate: false,
            ..
        }
    ));
    assert_eq!(d.current().attempt, 1);
}

#[test]
fn test_awaiting_ack_last_timeout_gives_up() {
    let mut d = dcf(2, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_tx_end(us(300), &frame);
    response_timeout(&mut d, us(400), false);
    let (t, at) = *timers(&mut d).last().unwrap();
    d.handle_timeout(at, t, false, false, KNOWN);
    let (again, _) = d.poll_transmit().unwrap();
    d.handle_tx_end(at + us(300), &again);
    response_timeout(&mut d, at + us(400), false);
    let ev = events(&mut d);
    assert!(
        matches!(
            ev.last(),
            Some(DcfEvent::Done {
                delivered: false,
                attempts: 2,
                ..
            })
        ),
        "{ev:?}"
    );
    assert_eq!(d.cw, timing().cw_min);
}

#[test]
fn test_idle_unicast_data_for_me_is_acked_after_sifs() {
    let mut d = dcf(7, 10);
    let data = frame_from(PEER, Dst::Node(ME), FrameKind::Data, us(44));
    d.handle_rx_end(us(1000), &data, g(54), true, Dbm(-60.0), Dbm(-95.0));
    assert!(matches!(
        &events(&mut d)[..],
        [DcfEvent::Received {
            duplicate: false,
            ..
        }]
    ));
    assert_eq!(
        timers(&mut d),
        vec![(MacTimer::SifsResponse, us(1000) + timing().sifs)]
    );
    d.handle_timeout(us(1010), MacTimer::SifsResponse, false, false, KNOWN);
    let (ack, mode) = d.poll_transmit().unwrap();
    assert_eq!(
        (ack.kind, ack.dst, ack.psdu_bytes),
        (FrameKind::Ack, Dst::Node(PEER), ACK_BYTES)
    );
    assert_eq!(
        mode,
        g(24),
        "the ACK goes at the highest basic rate not above the data's"
    );
}

#[test]
fn test_idle_retransmission_already_received_is_a_duplicate() {
    let mut d = dcf(7, 10);
    let data = frame_from(PEER, Dst::Node(ME), FrameKind::Data, us(44));
    d.handle_rx_end(us(1000), &data, g(54), true, Dbm(-60.0), Dbm(-95.0));
    let again = Frame {
        retry: true,
        attempt: 1,
        ..data.clone()
    };
    d.handle_rx_end(us(2000), &again, g(54), true, Dbm(-60.0), Dbm(-95.0));
    let dups: Vec<bool> = events(&mut d)
        .into_iter()
        .filter_map(|e| {
            if let DcfEvent::Received { duplicate, .. } = e {
                Some(duplicate)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(dups, vec![false, true]);
}

#[test]
fn test_idle_corrupted_frame_defers_eifs() {
    let mut d = dcf(7, 10);
    d.handle_medium(SimTime::ZERO, true);
    let data = frame_from(PEER, Dst::Node(ME), FrameKind::Data, us(44));
    d.handle_rx_end(us(500), &data, g(54), false, Dbm(-90.0), Dbm(-95.0));
    assert!(
        events(&mut d).is_empty(),
        "a corrupted frame is not handed up"
    );
    d.enqueue(us(500), msdu(Dst::Node(PEER), us(500)));
    d.backoff = None;
    d.handle_medium(us(500), false);
    assert_eq!(
        timers(&mut d),
        vec![(MacTimer::AccessGrant, us(500) + timing().eifs)]
    );
}

#[test]
fn test_idle_overheard_frame_sets_the_nav() {
    let mut d = dcf(7, 10);
    let overheard = frame_from(PEER, Dst::Node(OTHER), FrameKind::Data, us(300));
    d.handle_medium(us(0), true);
    d.handle_rx_end(us(100), &overheard, g(54), true, Dbm(-60.0), Dbm(-95.0));
    assert_eq!(timers(&mut d), vec![(MacTimer::NavEnd, us(400))]);
    d.enqueue(us(100), msdu(Dst::Node(PEER), us(100)));
    d.handle_medium(us(100), false);
    assert!(timers(&mut d).is_empty(), "the NAV keeps the medium busy");
    d.handle_timeout(us(400), MacTimer::NavEnd, false, false, KNOWN);
    assert!(matches!(d.state(), DcfState::Contending { .. }));
}

#[test]
fn test_contending_management_goes_before_queued_data_with_its_own_tries() {
    let mut d = dcf(7, 2);
    d.handle_medium(SimTime::ZERO, true);
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO));
    d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO));
    // The data queue is full; a management frame still gets in, ahead.
    let auth = Msdu {
        fixed: Some(Stage {
            mode: g(6),
            tries: 11,
        }),
        payload: Payload::Mgmt(MgmtBody::Auth { seq: 2 }),
        bytes: 30,
        ..msdu(Dst::Node(PEER), SimTime::ZERO)
    };
    d.enqueue_mgmt(SimTime::ZERO, auth, false);
    d.handle_medium(us(10), false);
    let (t, at) = timers(&mut d)[0];
    d.handle_timeout(at, t, false, false, KNOWN);
    let (frame, mode) = d.poll_transmit().unwrap();
    assert_eq!((frame.kind, mode), (FrameKind::Auth, g(6)));
    // Ten unanswered attempts are retried; the eleventh gives up.
    let mut now = at;
    for attempt in 1..=11 {
        d.handle_tx_end(now, &frame);
        now += timing().ack_timeout;
        let armed = timers(&mut d);
        d.handle_timeout(now, MacTimer::ResponseTimeout, false, false, KNOWN);
        assert_eq!(armed.last().map(|t| t.0), Some(MacTimer::ResponseTimeout));
        if attempt < 11 {
            let (t, at) = timers(&mut d)
                .into_iter()
                .find(|t| t.0 == MacTimer::AccessGrant)
                .unwrap();
            now = at;
            d.handle_timeout(now, t, false, false, KNOWN);
            let (again, _) = d.poll_transmit().unwrap();
            assert_eq!(
                (again.kind, again.attempt),
                (FrameKind::Auth, attempt as u8)
            );
        }
    }
    let done: Vec<_> = events(&mut d)
        .into_iter()
        .filter_map(|e| match e {
            DcfEvent::Done {
                msdu,
                delivered,
                attempts,
                ..
            } => Some((msdu.payload, delivered, attempts)),
            _ => None,
        })
        .collect();
    assert_eq!(
        done,
        vec![(Payload::Mgmt(MgmtBody::Auth { seq: 2 }), false, 11)]
    );
}

#[test]
fn test_idle_enqueue_beyond_the_limit_drops() {
    let mut d = dcf(7, 2);
    d.handle_medium(SimTime::ZERO, true);
    assert!(d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO)));
    assert!(d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO)));
    assert_eq!(d.queue_room(), 0);
    assert!(!d.enqueue(SimTime::ZERO, msdu(Dst::Node(PEER), SimTime::ZERO)));
    assert!(matches!(&events(&mut d)[..], [DcfEvent::QueueDrop { .. }]));
}

#[test]
fn test_awaiting_ack_flush_drops_everything_and_cancels_timers() {
    let mut d = dcf(7, 10);
    let (frame, _) = sent_one(&mut d);
    d.handle_medium(us(1), true); // our own transmission
    d.enqueue(us(10), msdu(Dst::Node(PEER), us(10)));
    d.handle_tx_end(us(300), &frame);
    let (_, _, generation) = std::iter::from_fn(|| d.poll_timer())
        .find(|t| t.0 == MacTimer::ResponseTimeout)
        .unwrap();
    d.flush();
    let ev = events(&mut d);
    assert!(matches!(ev[0], DcfEvent::Response(TxOutcome::Unacked)));
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, DcfEvent::QueueDrop { .. }))
            .count(),
        2
    );
    assert_eq!(d.state(), DcfState::Idle);
    assert!(!d.is_current(MacTimer::ResponseTimeout, generation));
    assert!(!d.has_work());
}
