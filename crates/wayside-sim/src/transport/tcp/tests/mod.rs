//! State-machine tests per (state, event), smoltcp naming, plus a two-peer
//! harness over a lossy link and a property test with random segments.

use super::*;
use crate::rng::Stream;
use proptest::prelude::*;
use std::collections::VecDeque;

const A: u16 = 40000; // client
const B: u16 = 5001; // server
const PISS: u32 = 7_000_000;

fn ms(x: u64) -> SimTime {
    SimTime::from_ms(x)
}

fn drain(t: &mut Tcp, now: SimTime) -> Vec<Segment> {
    std::iter::from_fn(|| t.poll_transmit(now))
        .take(10_000)
        .collect()
}

fn events(t: &mut Tcp) -> Vec<TcpEvent> {
    std::iter::from_fn(|| t.poll_event()).collect()
}

fn no_samples(ev: Vec<TcpEvent>) -> Vec<TcpEvent> {
    ev.into_iter()
        .filter(|e| !matches!(e, TcpEvent::AckSample { .. }))
        .collect()
}

fn flags(syn: bool, ack: bool, fin: bool, rst: bool) -> Flags {
    Flags { syn, ack, fin, rst }
}

/// A segment from the server `B` to the client `A`.
fn from_b(seq: u32, ack: u32, f: Flags) -> Segment {
    Segment {
        src_port: B,
        dst_port: A,
        seq,
        ack,
        flags: f,
        window: 65535,
        ..Segment::default()
    }
}

fn syn_ack(ack: u32) -> Segment {
    Segment {
        mss: Some(1460),
        sack_permitted: true,
        ..from_b(PISS, ack, flags(true, true, false, false))
    }
}

/// An ACK from the peer (whose next sequence number is PISS + 1).
fn ack_from_b(ack: u32, window: u32, sack: &[(u32, u32)]) -> Segment {
    let mut s = from_b(PISS + 1, ack, flags(false, true, false, false));
    s.window = window;
    for (slot, &b) in s.sack.iter_mut().zip(sack) {
        *slot = Some(b);
    }
    s
}

/// A client of `profile` that completed its handshake at 20 ms (RTT 20 ms).
fn client(profile: TcpProfile, iss: u32) -> Tcp {
    let mut t = Tcp::connect(SimTime::ZERO, profile.config(), A, B, iss);
    let syn = t.poll_transmit(SimTime::ZERO).unwrap();
    t.handle_segment(ms(20), &syn_ack(syn.seq.wrapping_add(1)));
    drain(&mut t, ms(20));
    events(&mut t);
    t
}

/// Data segments out of `t` now.
fn data(t: &mut Tcp, now: SimTime) -> Vec<Segment> {
    drain(t, now)
        .into_iter()
        .filter(|s| s.len > 0 || s.flags.fin)
        .collect()
}

/// Acknowledges segments one by one until `target` are outstanding; returns
/// the outstanding segments in order.
fn fill(t: &mut Tcp, now: SimTime, window: u32, target: usize) -> Vec<Segment> {
    let mut out: VecDeque<Segment> = data(t, now).into();
    while out.len() < target {
        let s = out.pop_front().expect("sender stalled");
        t.handle_segment(now, &ack_from_b(s.seq.wrapping_add(s.len), window, &[]));
        out.extend(data(t, now));
    }
    events(t);
    out.into()
}

fn end(s: &Segment) -> u32 {
    s.seq.wrapping_add(s.len)
}

// --------------------------------------------------------------------------
// Wire.

#[test]
fn test_segment_header_bytes() {
    let mut s = Segment::default();
    assert_eq!(s.header_bytes(), 20);
    s.mss = Some(1460);
    s.sack_permitted = true;
    s.window_scale = true;
    assert_eq!(s.header_bytes(), 32); // Linux SYN without timestamps
    let d = Segment {
        sack: [Some((1, 2)), Some((3, 4)), Some((5, 6))],
        ..Segment::default()
    };
    assert_eq!(d.header_bytes(), 48);
}

// --------------------------------------------------------------------------
// Handshake.

#[test]
fn test_closed_ignores_segments() {
    let mut t = Tcp::listen(TcpProfile::Linux26.config(), A, 1);
    t.close();
    assert_eq!(t.state(), State::Closed);
    t.handle_segment(ms(1), &syn_ack(2));
    assert!(drain(&mut t, ms(1)).is_empty());
    assert_eq!(t.poll_timeout(), None);
}

#[test]
fn test_listen_syn() {
    let mut t = Tcp::listen(TcpProfile::Linux26.config(), B, 900);
    let syn = Segment {
        src_port: A,
        dst_port: B,
        seq: 100,
        flags: flags(true, false, false, false),
        window: 65535,
        mss: Some(1400),
        sack_permitted: true,
        ..Segment::default()
    };
    t.handle_segment(ms(5), &syn);
    assert_eq!(t.state(), State::SynReceived);
    let out = drain(&mut t, ms(5));
    assert_eq!(out.len(), 1);
    let sa = out[0];
    assert!(sa.flags.syn && sa.flags.ack);
    assert_eq!((sa.seq, sa.ack, sa.dst_port), (900, 101, A));
    assert!(sa.sack_permitted);
    assert_eq!(sa.mss, Some(1460));
    assert_eq!(t.mss(), 1400);
    assert_eq!(t.poll_timeout(), Some(ms(5) + ms(3000)));
}

#[test]
fn test_listen_ack_sends_rst() {
    let mut t = Tcp::listen(TcpProfile::Linux26.config(), A, 1);
    let mut s = from_b(5, 77, flags(false, true, false, false));
    t.handle_segment(ms(1), &s);
    let out = drain(&mut t, ms(1));
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.rst && out[0].seq == 77);
    // RSTs are never answered.
    s.flags.rst = true;
    t.handle_segment(ms(1), &s);
    assert!(drain(&mut t, ms(1)).is_empty());
    assert_eq!(t.state(), State::Listen);
}

#[test]
fn test_syn_sent_syn_ack() {
    let mut t = Tcp::connect(SimTime::ZERO, TcpProfile::LinuxModern.config(), A, B, 10);
    let syn = t.poll_transmit(SimTime::ZERO).unwrap();
    assert!(syn.flags.syn && !syn.flags.ack && syn.seq == 10);
    assert_eq!(syn.header_bytes(), 32); // MSS + SACK-permitted + window scale, padded
    assert!(
        syn.window_scale,
        "Linux offers window scaling even with a 64 KB window"
    );
    let xp = Tcp::connect(SimTime::ZERO, TcpProfile::WindowsXp.config(), A, B, 10)
        .poll_transmit(SimTime::ZERO)
        .unwrap();
    assert!(
        !xp.window_scale && xp.header_bytes() == 28,
        "Windows XP offers it only above 64 KB"
    );
    t.handle_segment(ms(30), &syn_ack(11));
    assert_eq!(t.state(), State::Established);
    assert_eq!(events(&mut t), vec![TcpEvent::Established]);
    let out = drain(&mut t, ms(30));
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.ack && out[0].seq == 11 && out[0].ack == PISS + 1);
    assert_eq!(t.srtt(), Some(ms(30)));
    assert_eq!(t.cwnd(), 10);
}

#[test]
fn test_syn_sent_bad_ack_sends_rst() {
    let mut t = Tcp::connect(SimTime::ZERO, TcpProfile::Linux26.config(), A, B, 10);
    t.poll_transmit(SimTime::ZERO);
    t.handle_segment(ms(1), &syn_ack(999));
    let out = drain(&mut t, ms(1));
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.rst && out[0].seq == 999);
    assert_eq!(t.state(), State::SynSent);
}

#[test]
fn test_syn_sent_rst() {
    let mut t = Tcp::connect(SimTime::ZERO, TcpProfile::Linux26.config(), A, B, 10);
    t.poll_transmit(SimTime::ZERO);
    // RST without an acceptable ACK is ignored; with one it refuses.
    t.handle_segment(ms(1), &from_b(0, 0, flags(false, false, false, true)));
    assert_eq!(t.state(), State::SynSent);
    t.handle_segment(ms(1), &from_b(0, 11, flags(false, true, false, true)));
    assert_eq!(t.state(), State::Closed);
    assert_eq!(events(&mut t), vec![TcpEvent::Reset]);
}

/// Times at which SYNs are sent, and when `connect` gives up.
fn syn_schedule(profile: TcpProfile) -> (Vec<SimTime>, SimTime, Vec<TcpEvent>) {
    let mut t = Tcp::connect(SimTime::ZERO, profile.config(), A, B, 10);
    let mut sent = vec![];
    let mut now = SimTime::ZERO;
    let mut evs = vec![];
    loop {
        for s in drain(&mut t, now) {
            assert!(s.flags.syn);
            sent.push(now);
        }
        evs.extend(events(&mut t));
        if t.state() == State::Closed {
            return (sent, now, evs);
        }
        now = t.poll_timeout().unwrap();
        t.handle_timeout(now);
    }
}

#[test]
fn test_syn_sent_timeout_backoff() {
    let s = |v: &[u64]| v.iter().map(|&x| ms(x * 1000)).collect::<Vec<_>>();
    let (sent, gave_up, evs) = syn_schedule(TcpProfile::WindowsXp);
    assert_eq!(sent, s(&[0, 3, 9]));
    assert_eq!(gave_up, ms(21_000));
    assert_eq!(
        evs,
        vec![
            TcpEvent::SynRetransmit { attempt: 1 },
            TcpEvent::SynRetransmit { attempt: 2 },
            TcpEvent::GaveUp
        ]
    );
    let (sent, gave_up, _) = syn_schedule(TcpProfile::Linux26);
    assert_eq!(sent, s(&[0, 3, 9, 21, 45, 93]));
    assert_eq!(gave_up, ms(189_000));
    let (sent, gave_up, _) = syn_schedule(TcpProfile::LinuxModern);
    assert_eq!(sent, s(&[0, 1, 3, 7, 15, 31, 63]));
    assert_eq!(gave_up, ms(127_000));
}

#[test]
fn test_syn_sent_retransmitted_syn_then_established() {
    // Karn: no RTT sample; RFC 6298 §5.7 3 s fallback; RFC 5681 LW = 1.
    let mut t = Tcp::connect(SimTime::ZERO, TcpProfile::LinuxModern.config(), A, B, 10);
    drain(&mut t, SimTime::ZERO);
    t.handle_timeout(ms(1000));
    assert_eq!(drain(&mut t, ms(1000)).len(), 1);
    t.handle_segment(ms(1010), &syn_ack(11));
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.srtt(), None);
    assert_eq!(t.rto(), ms(3000));
    assert_eq!(t.cwnd(), 1);
}

#[test]
fn test_syn_received_dup_syn_retransmits_syn_ack() {
    let mut t = Tcp::listen(TcpProfile::Linux26.config(), A, 500);
    let syn = from_b(PISS, 0, flags(true, false, false, false));
    t.handle_segment(ms(0), &syn);
    assert_eq!(drain(&mut t, ms(0)).len(), 1);
    t.handle_segment(ms(100), &syn);
    let out = drain(&mut t, ms(100));
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.syn && out[0].flags.ack);
}

#[test]
fn test_syn_received_timeout_returns_to_listen() {
    let mut t = Tcp::listen(TcpProfile::WindowsXp.config(), A, 500);
    t.handle_segment(ms(0), &from_b(PISS, 0, flags(true, false, false, false)));
    let mut synacks = vec![];
    let mut now = ms(0);
    while t.state() == State::SynReceived {
        synacks.extend(drain(&mut t, now).iter().map(|_| now));
        now = t.poll_timeout().unwrap();
        t.handle_timeout(now);
    }
    assert_eq!(synacks, vec![ms(0), ms(3000), ms(9000)]);
    assert_eq!(now, ms(21_000));
    assert_eq!(t.state(), State::Listen);
    assert_eq!(events(&mut t).last(), Some(&TcpEvent::GaveUp));
}

#[test]
fn test_syn_received_ack_established_and_rst() {
    let cfg = TcpProfile::Linux26.config();
    let mut t = Tcp::listen(cfg.clone(), A, 500);
    t.handle_segment(ms(0), &from_b(PISS, 0, flags(true, false, false, false)));
    drain(&mut t, ms(0));
    // A bad ACK is answered with a reset, a good one establishes.
    t.handle_segment(
        ms(5),
        &from_b(PISS + 1, 999, flags(false, true, false, false)),
    );
    assert!(drain(&mut t, ms(5))[0].flags.rst);
    t.handle_segment(
        ms(5),
        &from_b(PISS + 1, 501, flags(false, true, false, false)),
    );
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.srtt(), Some(ms(5)));

    let mut t = Tcp::listen(cfg, A, 500);
    t.handle_segment(ms(0), &from_b(PISS, 0, flags(true, false, false, false)));
    t.handle_segment(
        ms(1),
        &from_b(PISS + 1, 0, flags(false, false, false, true)),
    );
    assert_eq!(t.state(), State::Listen);
}

// --------------------------------------------------------------------------
// Established: receiver.

/// A server that accepted a connection from `A`; returns it with the
/// client's next sequence number.
fn server(profile: TcpProfile, client_iss: u32) -> (Tcp, u32) {
    let mut t = Tcp::listen(profile.config(), B, 900);
    let mut syn = Segment {
        src_port: A,
        dst_port: B,
        seq: client_iss,
        flags: flags(true, false, false, false),
        window: 65535,
        mss: Some(1460),
        sack_permitted: true,
        ..Segment::default()
    };
    t.handle_segment(ms(0), &syn);
    drain(&mut t, ms(0));
    syn.flags = flags(false, true, false, false);
    syn.seq = client_iss.wrapping_add(1);
    syn.ack = 901;
    syn.mss = None;
    syn.sack_permitted = false;
    t.handle_segment(ms(10), &syn);
    events(&mut t);
    (t, client_iss.wrapping_add(1))
}

fn data_to_b(seq: u32, len: u32) -> Segment {
    Segment {
        src_port: A,
        dst_port: B,
        seq,
        ack: 901,
        flags: flags(false, true, false, false),
        window: 65535,
        len,
        ..Segment::default()
    }
}

#[test]
fn test_established_delayed_ack_timing() {
    for (profile, delay) in [(TcpProfile::Linux26, 40), (TcpProfile::WindowsXp, 200)] {
        let (mut t, mut seq) = server(profile, 1000);
        let quick = profile.config().quickack_segments;
        // Quick-ack mode: the first segments are acknowledged one by one.
        for _ in 0..quick {
            t.handle_segment(ms(20), &data_to_b(seq, 1460));
            seq += 1460;
            assert_eq!(drain(&mut t, ms(20)).len(), 1);
        }
        // Then every second full-size segment...
        t.handle_segment(ms(30), &data_to_b(seq, 1460));
        assert!(drain(&mut t, ms(30)).is_empty());
        assert_eq!(t.poll_timeout(), Some(ms(30 + delay)));
        t.handle_segment(ms(31), &data_to_b(seq + 1460, 1460));
        seq += 2920;
        let out = drain(&mut t, ms(31));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, seq);
        assert_eq!(t.poll_timeout(), None);
        // ...or the delayed-ACK timer.
        t.handle_segment(ms(50), &data_to_b(seq, 1460));
        assert!(drain(&mut t, ms(50)).is_empty());
        t.handle_timeout(ms(50 + delay));
        let out = drain(&mut t, ms(50 + delay));
        assert_eq!(out.len(), 1, "{profile}");
        assert_eq!(out[0].ack, seq + 1460);
        assert_eq!(t.bytes_received(), (quick as u64 + 3) * 1460);
    }
}

#[test]
fn test_established_manual_read_closes_and_reopens_window() {
    let (mut t, mut seq) = server(TcpProfile::Linux26, 1000);
    t.set_manual_read();
    assert_eq!(t.unread(), 0);
    let wnd = TcpProfile::Linux26.config().rcv_wnd;
    for _ in 0..4 {
        t.handle_segment(ms(20), &data_to_b(seq, 1460));
        seq += 1460;
    }
    let out = drain(&mut t, ms(20));
    assert_eq!(out.last().unwrap().window, wnd - 4 * 1460);
    assert_eq!(t.unread(), 4 * 1460);
    // Fill the buffer: the window falls to nothing.
    let room = wnd - 4 * 1460;
    t.handle_segment(ms(21), &data_to_b(seq, room));
    let out = drain(&mut t, ms(21));
    assert_eq!(out.last().unwrap().window, 0);
    assert_eq!(t.bytes_received(), wnd as u64);
    // Reading a little does not announce a window; reading a segment's worth does.
    assert_eq!(t.read(100), 100);
    assert!(drain(&mut t, ms(23)).is_empty());
    assert_eq!(t.read(2000), 2000);
    let out = drain(&mut t, ms(24));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].window, 2100);
    assert_eq!(t.read(u64::MAX), wnd as u64 - 2100);
    assert_eq!(t.unread(), 0);
}

#[test]
fn test_established_out_of_order_sack_and_hole_fill() {
    let (mut t, seq) = server(TcpProfile::WindowsXp, u32::MAX - 2000);
    // Segment 0 lost; 1 and 3 arrive: immediate duplicate ACKs with SACK.
    t.handle_segment(ms(20), &data_to_b(seq.wrapping_add(1460), 1460));
    let d1 = drain(&mut t, ms(20));
    assert_eq!(d1.len(), 1);
    assert_eq!(d1[0].ack, seq);
    assert_eq!(
        d1[0].sack[0],
        Some((seq.wrapping_add(1460), seq.wrapping_add(2920)))
    );
    t.handle_segment(ms(21), &data_to_b(seq.wrapping_add(4380), 1460));
    let d2 = drain(&mut t, ms(21));
    assert_eq!(
        d2[0].sack[0],
        Some((seq.wrapping_add(4380), seq.wrapping_add(5840)))
    );
    assert_eq!(
        d2[0].sack[1],
        Some((seq.wrapping_add(1460), seq.wrapping_add(2920)))
    );
    // Filling the first hole is acknowledged at once (not delayed).
    t.handle_segment(ms(22), &data_to_b(seq, 1460));
    let d3 = drain(&mut t, ms(22));
    assert_eq!(d3.len(), 1);
    assert_eq!(d3[0].ack, seq.wrapping_add(2920));
    assert_eq!(
        d3[0].sack[0],
        Some((seq.wrapping_add(4380), seq.wrapping_add(5840)))
    );
    assert_eq!(t.bytes_received(), 2920);
    // An old duplicate is acknowledged too.
    t.handle_segment(ms(23), &data_to_b(seq, 1460));
    assert_eq!(drain(&mut t, ms(23)).len(), 1);
    assert_eq!(t.bytes_received(), 2920);
}

#[test]
fn test_established_rst_and_syn() {
    let (mut t, seq) = server(TcpProfile::Linux26, 1000);
    let mut rst = data_to_b(seq + 100_000, 0);
    rst.flags = flags(false, false, false, true);
    t.handle_segment(ms(20), &rst); // out of window: ignored
    assert_eq!(t.state(), State::Established);
    assert!(drain(&mut t, ms(20)).is_empty());
    let mut syn = data_to_b(seq, 0);
    syn.flags = flags(true, false, false, false);
    t.handle_segment(ms(20), &syn); // in-window SYN: challenge ACK
    assert_eq!(drain(&mut t, ms(20)).len(), 1);
    assert_eq!(t.state(), State::Established);
    rst.seq = seq;
    t.handle_segment(ms(21), &rst);
    assert_eq!(t.state(), State::Closed);
    assert_eq!(events(&mut t), vec![TcpEvent::Reset]);
}

#[test]
fn test_established_ack_of_unsent_data() {
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(1000);
    drain(&mut t, ms(20));
    t.handle_segment(ms(21), &ack_from_b(50_000, 65535, &[]));
    let out = drain(&mut t, ms(21));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].len, out[0].ack), (0, PISS + 1));
    assert_eq!(t.bytes_acked(), 0);
}

// --------------------------------------------------------------------------
// Established: sender.

#[test]
fn test_established_initial_window() {
    for (p, iw) in [
        (TcpProfile::Linux26, 3),
        (TcpProfile::LinuxModern, 10),
        (TcpProfile::WindowsXp, 2),
    ] {
        let mut t = client(p, 100);
        t.send(1_000_000);
        let out = data(&mut t, ms(20));
        assert_eq!(out.len(), iw, "{p}");
        assert!(out.iter().all(|s| s.len == 1460));
        assert_eq!(out[0].seq, 101);
    }
}

#[test]
fn test_established_dupacks_fast_retransmit() {
    for p in TcpProfile::ALL {
        let mut t = client(p, 100);
        t.send(10_000_000);
        let out = fill(&mut t, ms(20), 1 << 20, 20);
        let una = out[0].seq;
        for i in 1..=3 {
            let sack = [(out[1].seq, end(&out[i]))];
            t.handle_segment(ms(30), &ack_from_b(una, 1 << 20, &sack));
            let tx = data(&mut t, ms(30));
            let ev = no_samples(events(&mut t));
            if i < 3 {
                assert!(ev.is_empty(), "{p}");
                assert!(tx.iter().all(|s| s.seq != una));
            } else {
                assert_eq!(ev, vec![TcpEvent::FastRetransmit], "{p}");
                assert_eq!(tx[0].seq, una, "{p}");
                assert_eq!(tx[0].len, 1460);
            }
        }
        assert!(
            t.ssthresh() >= 10 && t.ssthresh() <= 15,
            "{p} {}",
            t.ssthresh()
        );
    }
}

#[test]
fn test_established_newreno_partial_ack() {
    // Windows XP: NewReno. Segments 0 and 5 of 20 are lost.
    let mut t = client(TcpProfile::WindowsXp, 100);
    t.send(10_000_000);
    let out = fill(&mut t, ms(20), 1 << 20, 20);
    let flight = out.len() as u32;
    let una = out[0].seq;
    let mut tx = vec![];
    for _ in (1..out.len()).filter(|&i| i != 5) {
        t.handle_segment(ms(30), &ack_from_b(una, 1 << 20, &[]));
        tx.extend(data(&mut t, ms(30)));
    }
    assert_eq!(no_samples(events(&mut t)), vec![TcpEvent::FastRetransmit]);
    assert_eq!(tx[0].seq, una, "fast retransmit");
    assert_eq!(t.ssthresh(), flight / 2);
    // Inflation: ssthresh + 3 + one per further dupack; new data beyond.
    let dups = flight - 2;
    assert_eq!(t.cwnd(), flight / 2 + dups);
    let new_data = tx.iter().filter(|s| s.seq != una).count() as u32;
    assert_eq!(new_data, t.cwnd() - flight);
    // Partial ACK up to the second hole: it is retransmitted at once.
    t.handle_segment(ms(40), &ack_from_b(out[5].seq, 1 << 20, &[]));
    let tx = data(&mut t, ms(40));
    assert_eq!(tx[0].seq, out[5].seq);
    assert_eq!(no_samples(events(&mut t)), vec![]);
    // Full ACK of everything outstanding at the loss: cwnd =
    // min(ssthresh, FlightSize + 1), FlightSize being the new data sent
    // during recovery (RFC 6582 §3.2 step 3 (1)).
    let after: u32 = new_data + tx.iter().filter(|s| s.seq != out[5].seq).count() as u32;
    t.handle_segment(ms(50), &ack_from_b(end(out.last().unwrap()), 1 << 20, &[]));
    assert_eq!(t.cwnd(), (flight / 2).min(after + 1));
    assert!(after >= 1);
}

#[test]
fn test_established_sack_retransmits_holes_only() {
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(10_000_000);
    let out = fill(&mut t, ms(20), 1 << 20, 20);
    let una = out[0].seq;
    let lost = [3usize, 7];
    let mut rtx = vec![];
    // Segment 0..=2 arrive: cumulative ACK to 3; then SACKs for 4.. and 8..
    t.handle_segment(ms(30), &ack_from_b(out[3].seq, 1 << 20, &[]));
    data(&mut t, ms(30));
    for i in 4..out.len() {
        if lost.contains(&i) {
            continue;
        }
        let mut blocks = vec![];
        if i >= 8 {
            blocks.push((out[8].seq, end(&out[i])));
        }
        blocks.push((out[4].seq, end(&out[i.min(6)])));
        t.handle_segment(ms(31), &ack_from_b(out[3].seq, 1 << 20, &blocks));
        rtx.extend(
            data(&mut t, ms(31))
                .into_iter()
                .filter(|s| s.seq < end(out.last().unwrap()) && s.seq >= una),
        );
    }
    let seqs: Vec<u32> = rtx.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, vec![out[3].seq, out[7].seq]);
}

#[test]
fn test_established_linux26_cwnd_moderation_after_dupack_burst() {
    // Mukherjee et al. 2014 §IV-A: a 64 KB receive window is full, one
    // segment is lost and the AP queue drains as a long dupack burst; the
    // sender ends recovery with cwnd 1 and slow-starts.
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(100_000_000);
    let out = fill(&mut t, ms(20), 65535, 44);
    assert_eq!(out.len(), 44);
    assert!(t.cwnd() >= 44);
    let una = out[0].seq;
    let mut sent = vec![];
    let mut cwnds = vec![];
    for i in 1..out.len() {
        t.handle_segment(
            ms(30),
            &ack_from_b(una, 65535, &[(out[1].seq, end(&out[i]))]),
        );
        sent.extend(data(&mut t, ms(30)));
        cwnds.push(t.cwnd());
    }
    assert_eq!(
        sent.len(),
        1,
        "only the fast retransmit: the window is full"
    );
    assert_eq!(sent[0].seq, una);
    assert_eq!(
        *cwnds.last().unwrap(),
        2,
        "cwnd tracks in_flight + 1: {cwnds:?}"
    );
    assert_eq!(t.ssthresh(), 22);
    // The recovery ACK acknowledges everything: cwnd = in_flight + 1 = 1.
    t.handle_segment(ms(40), &ack_from_b(end(&out[43]), 65535, &[]));
    assert_eq!(t.cwnd(), 1);
    let ev = events(&mut t);
    assert!(matches!(
        ev.last(),
        Some(TcpEvent::AckSample {
            cwnd: 1,
            ssthresh: 22,
            in_flight: 0,
            ..
        })
    ));
    // Slow start from one segment.
    let tx = data(&mut t, ms(40));
    assert_eq!(tx.len(), 1);
    t.handle_segment(ms(60), &ack_from_b(end(&tx[0]), 65535, &[]));
    assert_eq!(t.cwnd(), 2);
    assert_eq!(data(&mut t, ms(60)).len(), 2);
}

#[test]
fn test_established_linux26_rate_halving_without_window_limit() {
    // With room to send, rate halving sends one segment per two ACKs and
    // ends recovery near ssthresh rather than at 1.
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(100_000_000);
    let out = fill(&mut t, ms(20), 1 << 24, 40);
    let una = out[0].seq;
    let mut sent = vec![];
    for i in 1..out.len() {
        t.handle_segment(
            ms(30),
            &ack_from_b(una, 1 << 24, &[(out[1].seq, end(&out[i]))]),
        );
        sent.extend(data(&mut t, ms(30)));
    }
    let ssthresh = t.ssthresh();
    // ≈ one new segment per two ACKs (rate halving).
    assert!(sent.len() >= 15 && sent.len() <= 22, "{}", sent.len());
    t.handle_segment(ms(40), &ack_from_b(end(out.last().unwrap()), 1 << 24, &[]));
    // min(cwnd, ssthresh), moderated to in_flight + 1: about ssthresh.
    let in_flight = sent.len() as u32 - 1;
    assert!(t.cwnd() <= ssthresh.min(in_flight + 1));
    assert!(t.cwnd() + 2 >= ssthresh, "{} vs {ssthresh}", t.cwnd());
}

#[test]
fn test_established_prr() {
    // RFC 6937: over the recovery, the sender sends about ssthresh segments
    // in proportion to deliveries, and ends with cwnd = ssthresh.
    let mut t = client(TcpProfile::LinuxModern, 100);
    t.send(100_000_000);
    let out = fill(&mut t, ms(20), 1 << 24, 40);
    let flight = out.len() as u32;
    let una = out[0].seq;
    let cwnd = t.cwnd();
    let mut sent = vec![];
    for i in 1..out.len() {
        t.handle_segment(
            ms(30),
            &ack_from_b(una, 1 << 24, &[(out[1].seq, end(&out[i]))]),
        );
        let tx = data(&mut t, ms(30));
        if i < 3 {
            // Before recovery SACKed segments leave the pipe, so new data
            // may go out (Linux's Disorder state, like limited transmit).
            assert!(tx.iter().all(|s| s.seq != una));
            continue;
        }
        if i == 3 {
            assert_eq!(tx[0].seq, una, "fast retransmit at the third dupack");
        }
        sent.extend(tx);
    }
    let ssthresh = t.ssthresh();
    assert_eq!(ssthresh, (cwnd as f64 * 0.7) as u32);
    // Proportional: sent ≈ ssthresh · delivered / RecoverFS.
    let delivered = flight - 3;
    let expect = delivered * ssthresh / flight;
    assert!(
        (sent.len() as i64 - expect as i64).abs() <= 3,
        "{} vs {expect}",
        sent.len()
    );
    let high = end(sent.last().unwrap());
    t.handle_segment(ms(40), &ack_from_b(high, 1 << 24, &[]));
    assert_eq!(t.cwnd(), ssthresh);
}

#[test]
fn test_established_rto_backoff_and_cwnd_reset() {
    let mut t = client(TcpProfile::WindowsXp, 100);
    t.send(10_000_000);
    let out = fill(&mut t, ms(20), 1 << 20, 10);
    let rto0 = t.rto();
    assert_eq!(rto0, ms(300)); // RTT 0 in `fill`: XP's 300 ms floor
    let mut now = t.poll_timeout().unwrap();
    let mut timeouts = vec![];
    loop {
        t.handle_timeout(now);
        let tx = data(&mut t, now);
        let ev = events(&mut t);
        if t.state() == State::Closed {
            assert_eq!(ev, vec![TcpEvent::GaveUp]);
            break;
        }
        assert_eq!(tx.len(), 1, "one retransmission per timeout");
        assert_eq!(tx[0].seq, out[0].seq);
        assert_eq!(t.cwnd(), 1);
        assert_eq!(t.ssthresh(), 5, "only the first RTO reduces ssthresh");
        timeouts.extend(ev);
        now = t.poll_timeout().unwrap();
    }
    let expect: Vec<_> = (1..=5)
        .map(|b| TcpEvent::Timeout {
            rto: ms(300 << b),
            backoff: b,
        })
        .collect();
    assert_eq!(timeouts, expect);
    assert_eq!(now, ms(20) + ms(300 + 600 + 1200 + 2400 + 4800 + 9600));
}

#[test]
fn test_established_rto_go_back_n_then_slow_start() {
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(10_000_000);
    let out = fill(&mut t, ms(20), 1 << 20, 8);
    let now = t.poll_timeout().unwrap();
    t.handle_timeout(now);
    let r1 = data(&mut t, now);
    assert_eq!(
        r1.iter().map(|s| s.seq).collect::<Vec<_>>(),
        vec![out[0].seq]
    );
    // ACK of the retransmission: Karn (no sample), backoff kept, cwnd 2,
    // next two segments of the old window are retransmitted in order.
    let rto = t.rto();
    t.handle_segment(now + ms(20), &ack_from_b(end(&out[0]), 1 << 20, &[]));
    assert_eq!(t.rto(), rto);
    let r2 = data(&mut t, now + ms(20));
    assert_eq!(
        r2.iter().map(|s| s.seq).collect::<Vec<_>>(),
        vec![out[1].seq, out[2].seq]
    );
    // Go-back-N continues in order with a growing window.
    t.handle_segment(now + ms(40), &ack_from_b(end(&out[2]), 1 << 20, &[]));
    assert_eq!(t.rto(), rto);
    let r3 = data(&mut t, now + ms(40));
    assert_eq!(r3[0].seq, out[3].seq);
    assert_eq!(t.cwnd(), 3);
}

#[test]
fn test_established_zero_window_persist() {
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(10_000);
    let out = data(&mut t, ms(20));
    t.handle_segment(ms(40), &ack_from_b(end(out.last().unwrap()), 0, &[]));
    assert!(data(&mut t, ms(40)).is_empty());
    let at = t.poll_timeout().expect("persist timer");
    t.handle_timeout(at);
    let probe = drain(&mut t, at);
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0].len, 0);
    assert_eq!(probe[0].seq, end(out.last().unwrap()).wrapping_sub(1));
    // The window opens: data flows again and the persist timer stops.
    t.handle_segment(
        at + ms(20),
        &ack_from_b(end(out.last().unwrap()), 65535, &[]),
    );
    // cwnd grew from 3 to 4 with the ACK that closed the window.
    assert_eq!(data(&mut t, at + ms(20)).len(), 4);
}

// --------------------------------------------------------------------------
// Close.

#[test]
fn test_fin_wait_and_time_wait() {
    let mut t = client(TcpProfile::Linux26, 100);
    t.send(1000);
    t.close();
    assert_eq!(t.state(), State::FinWait1);
    let out = data(&mut t, ms(20));
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.fin && out[0].len == 1000);
    t.handle_segment(ms(40), &ack_from_b(101 + 1001, 65535, &[]));
    assert_eq!(t.state(), State::FinWait2);
    assert_eq!(t.bytes_acked(), 1000);
    let mut fin = ack_from_b(1102, 65535, &[]);
    fin.flags.fin = true;
    t.handle_segment(ms(50), &fin);
    assert_eq!(t.state(), State::TimeWait);
    assert_eq!(drain(&mut t, ms(50))[0].ack, PISS + 2);
    assert_eq!(t.poll_timeout(), Some(ms(60_050)));
    t.handle_timeout(ms(60_050));
    assert_eq!(t.state(), State::Closed);
    assert_eq!(no_samples(events(&mut t)), vec![TcpEvent::Closed]);
}

#[test]
fn test_close_wait_last_ack() {
    let (mut t, seq) = server(TcpProfile::LinuxModern, 5);
    let mut fin = data_to_b(seq, 100);
    fin.flags.fin = true;
    t.handle_segment(ms(20), &fin);
    assert_eq!(t.state(), State::CloseWait);
    assert_eq!(drain(&mut t, ms(20))[0].ack, seq + 101);
    t.close();
    assert_eq!(t.state(), State::LastAck);
    let f = drain(&mut t, ms(21));
    assert!(f[0].flags.fin);
    let mut ack = data_to_b(seq + 101, 0);
    ack.ack = 902;
    t.handle_segment(ms(30), &ack);
    assert_eq!(t.state(), State::Closed);
    assert_eq!(no_samples(events(&mut t)), vec![TcpEvent::Closed]);
}

mod peers;
mod property;
