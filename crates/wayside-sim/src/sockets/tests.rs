//! Tests per (state, event) of the sockets layer, with two or three hosts'
//! sockets joined back to back (no network in between).

use super::*;
use crate::packet::Segment;
use crate::transport::tcp::TcpProfile;

const A: NodeId = NodeId(0);
const B: NodeId = NodeId(1);
const AP: NodeId = NodeId(2);
const PORT: u16 = 5001;
const APP: u32 = 3;

fn host(me: NodeId) -> Sockets {
    Sockets::new(
        me,
        TcpProfile::Linux26.config(),
        1,
        0,
        &format!("n{}", me.0),
    )
}

fn drain(s: &mut Sockets) -> Vec<SocketOutput> {
    std::iter::from_fn(|| s.poll()).collect()
}

fn sent(out: &[SocketOutput]) -> Vec<Packet> {
    out.iter()
        .filter_map(|o| {
            if let SocketOutput::Send(p) = o {
                Some(p.clone())
            } else {
                None
            }
        })
        .collect()
}

fn conns(out: &[SocketOutput]) -> Vec<ConnEvent> {
    out.iter()
        .filter_map(|o| {
            if let SocketOutput::Conn { event, .. } = o {
                Some(*event)
            } else {
                None
            }
        })
        .collect()
}

fn seg(p: &Packet) -> Segment {
    let Body::Tcp(s) = p.body else {
        panic!("not TCP: {p:?}")
    };
    s
}

/// Moves packets between `a` and `b` until neither sends; returns what
/// each put out (other than the packets).
fn shuttle(
    now: SimTime,
    a: &mut Sockets,
    b: &mut Sockets,
) -> (Vec<SocketOutput>, Vec<SocketOutput>) {
    let (mut from_a, mut from_b) = (Vec::new(), Vec::new());
    loop {
        let (oa, ob) = (drain(a), drain(b));
        let (pa, pb) = (sent(&oa), sent(&ob));
        from_a.extend(
            oa.into_iter()
                .filter(|o| !matches!(o, SocketOutput::Send(_))),
        );
        from_b.extend(
            ob.into_iter()
                .filter(|o| !matches!(o, SocketOutput::Send(_))),
        );
        if pa.is_empty() && pb.is_empty() {
            return (from_a, from_b);
        }
        pa.into_iter().for_each(|p| b.handle_packet(now, p));
        pb.into_iter().for_each(|p| a.handle_packet(now, p));
    }
}

#[test]
fn connect_sends_syn_and_arms_the_retransmission_timer() {
    let mut a = host(A);
    a.connect(SimTime::ZERO, B, PORT, APP, 0);
    let out = drain(&mut a);
    assert_eq!(conns(&out), vec![ConnEvent::Syn]);
    let syn = seg(&sent(&out)[0]);
    assert!(syn.flags.syn && !syn.flags.ack);
    assert_eq!(syn.dst_port, PORT);
    assert!(out
        .iter()
        .any(|o| matches!(o, SocketOutput::Timer { socket: 0, .. })));
    assert!(out.iter().any(|o| matches!(
        o,
        SocketOutput::Readable {
            socket: 0,
            app: APP
        }
    )));
}

#[test]
fn closed_port_ignores_syn() {
    let (mut a, mut b) = (host(A), host(B));
    a.connect(SimTime::ZERO, B, PORT, APP, 0);
    for p in sent(&drain(&mut a)) {
        b.handle_packet(SimTime::ZERO, p);
    }
    assert!(drain(&mut b).is_empty());
}

#[test]
fn listener_accepts_syn_with_syn_ack_and_ignores_other_segments() {
    let (mut a, mut b) = (host(A), host(B));
    b.listen(PORT, APP);
    a.connect(SimTime::ZERO, B, PORT, APP, 0);
    let syn = sent(&drain(&mut a))[0].clone();
    let stray = Packet::new(
        A,
        B,
        Body::Tcp(Segment {
            flags: crate::packet::Flags {
                ack: true,
                ..Default::default()
            },
            ..seg(&syn)
        }),
    );
    b.handle_packet(SimTime::ZERO, stray);
    assert!(
        drain(&mut b).is_empty(),
        "an ACK to a listener opens nothing"
    );
    b.handle_packet(SimTime::ZERO, syn);
    let out = drain(&mut b);
    let reply = seg(&sent(&out)[0]);
    assert!(reply.flags.syn && reply.flags.ack);
    assert_eq!((sent(&out)[0].src, sent(&out)[0].dst), (B, A));
}

#[test]
fn established_data_reports_first_data_once_and_the_last_byte() {
    let (mut a, mut b) = (host(A), host(B));
    b.listen(PORT, APP);
    a.connect(SimTime::ZERO, B, PORT, APP, 5000);
    let (out_a, out_b) = shuttle(SimTime::from_ms(1), &mut a, &mut b);
    assert!(conns(&out_a).contains(&ConnEvent::Established));
    assert_eq!(
        conns(&out_b)
            .iter()
            .filter(|e| **e == ConnEvent::FirstData)
            .count(),
        1
    );
    let data: Vec<(u64, u64)> = out_b
        .iter()
        .filter_map(|o| {
            if let SocketOutput::Data {
                total,
                new,
                app: APP,
                ..
            } = o
            {
                Some((*total, *new))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(data.iter().map(|d| d.1).sum::<u64>(), 5000);
    assert_eq!(data.last().map(|d| d.0), Some(5000));
    assert_eq!(
        b.last_data().collect::<Vec<_>>(),
        vec![(SimTime::from_ms(1), A, 5000)]
    );
    assert_eq!(a.last_data().count(), 0, "the sender received nothing");
}

#[test]
fn syn_sent_timer_retransmits_and_a_stale_generation_is_void() {
    let mut a = host(A);
    a.connect(SimTime::ZERO, B, PORT, APP, 0);
    let out = drain(&mut a);
    let (at, generation) = out
        .iter()
        .find_map(|o| {
            if let SocketOutput::Timer { at, generation, .. } = o {
                Some((*at, *generation))
            } else {
                None
            }
        })
        .unwrap();
    a.handle_timeout(at, 0, generation.wrapping_add(1));
    assert!(drain(&mut a).is_empty());
    a.handle_timeout(at, 0, generation);
    let out = drain(&mut a);
    assert_eq!(conns(&out), vec![ConnEvent::SynRetransmit]);
    assert!(seg(&sent(&out)[0]).flags.syn);
}

#[test]
fn split_proxy_answers_for_the_server_and_opens_the_far_half() {
    let (mut a, mut ap) = (host(A), host(AP));
    a.connect(SimTime::ZERO, B, PORT, APP, 0);
    let syn = sent(&drain(&mut a))[0].clone();
    assert!(ap.intercept(SimTime::ZERO, &syn));
    let out = drain(&mut ap);
    assert_eq!(conns(&out), vec![ConnEvent::Syn]);
    let packets = sent(&out);
    let far = packets
        .iter()
        .find(|p| p.dst == B)
        .expect("a SYN to the server");
    assert_eq!(far.src, A, "the far half speaks with the client's address");
    assert!(seg(far).flags.syn && !seg(far).flags.ack);
    let near = packets
        .iter()
        .find(|p| p.dst == A)
        .expect("a SYN-ACK to the client");
    assert_eq!(
        near.src, B,
        "the near half speaks with the server's address"
    );
    assert!(seg(near).flags.syn && seg(near).flags.ack);
    assert!(
        !out.iter()
            .any(|o| matches!(o, SocketOutput::Readable { .. })),
        "proxy halves have no application"
    );
    let other = Packet::new(
        A,
        B,
        Body::Tcp(Segment {
            flags: Default::default(),
            ..seg(&syn)
        }),
    );
    let mut fresh = host(AP);
    assert!(
        !fresh.intercept(SimTime::ZERO, &other),
        "a segment of a connection it did not split is forwarded"
    );
}
