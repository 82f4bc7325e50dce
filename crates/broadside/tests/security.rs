//! Hostile input: each case is refused with a logged reason (an
//! `Event::Rejected`) and leaves the node's files and partials unchanged.

mod common;
use broadside::sim::Addr;
use broadside::wire::{CloseCode, Message};
use broadside::{BitVec, CertError, Endpoint, Event, Id160, Instant, MemStore, RejectReason};
use common::*;
use ed25519_dalek::{Signer, SigningKey};

const ATTACKER: Addr = 9;

fn drain(
    ep: &mut Endpoint<Addr>,
    store: &mut MemStore,
) -> (Vec<Message<'static>>, Vec<RejectReason>) {
    let mut sent = Vec::new();
    while let Some(t) = ep.poll_transmit(Instant::ZERO, store) {
        // Keep only the (owned) Close messages for inspection.
        if let Ok(Message::Close { instance, status }) = Message::parse(&t.payload) {
            sent.push(Message::Close { instance, status });
        }
    }
    let mut rejected = Vec::new();
    while let Some(e) = ep.poll_event() {
        if let Event::Rejected { reason, .. } = e {
            rejected.push(reason);
        }
    }
    (sent, rejected)
}

/// A node holding version 2 of "poi" from provider 1, plus its store,
/// and the session secret of `ATTACKER` with it (a validated peer).
fn victim() -> (Endpoint<Addr>, MemStore, broadside::ProviderKey, [u8; 16]) {
    let k = key(1);
    let mut s = MemStore::new();
    let (c, d) = file(&k, "poi", 2, 5000);
    s.insert(c, d);
    let mut ep = endpoint(config(11), &[&k], &s);
    let auth = session(&mut ep, &mut s, ATTACKER).expect("validated");
    (ep, s, k, auth)
}

fn snapshot(ep: &Endpoint<Addr>, s: &MemStore) -> (Vec<Id160>, usize, usize) {
    (
        ep.files().map(|c| c.instance_id()).collect(),
        s.partial_count(),
        ep.fetches().len(),
    )
}

fn offer(
    ep: &mut Endpoint<Addr>,
    s: &mut MemStore,
    cert: &[u8],
) -> (Vec<Message<'static>>, Vec<RejectReason>) {
    ep.handle_datagram(
        Instant::ZERO,
        ATTACKER,
        &Message::Offer { cert }.to_vec(),
        s,
    );
    drain(ep, s)
}

#[test]
fn certificate_from_untrusted_key_is_refused() {
    let (mut ep, mut s, _, _) = victim();
    let before = snapshot(&ep, &s);
    let (c, _) = file(&key(66), "poi", 9, 5000);
    let (sent, why) = offer(&mut ep, &mut s, c.encoded());
    assert_eq!(
        why,
        vec![RejectReason::Certificate(CertError::Untrusted(
            key(66).public()
        ))]
    );
    assert_refused(&sent);
    assert_eq!(snapshot(&ep, &s), before);
}

#[test]
fn replayed_older_version_is_refused() {
    let (mut ep, mut s, k, _) = victim();
    let before = snapshot(&ep, &s);
    for v in [1] {
        let (c, _) = file(&k, "poi", v, 777);
        let (sent, why) = offer(&mut ep, &mut s, c.encoded());
        assert_eq!(
            why,
            vec![RejectReason::StaleVersion {
                name: "poi".into(),
                have: 2,
                offered: v
            }]
        );
        assert!(matches!(
            sent.as_slice(),
            [Message::Close {
                status: CloseCode::HaveNewer,
                ..
            }]
        ));
    }
    assert_eq!(snapshot(&ep, &s), before);
}

/// The same version with other content, signed by the provider, is a fork,
/// not a replay: it is logged, and the certificate with the greater
/// instance id wins (fetched if offered, else offered back).
#[test]
fn same_version_with_other_content_is_a_logged_fork() {
    let (_, _, k, _) = victim();
    let (ours, _) = file(&k, "poi", 2, 5000);
    for size in [777, 778, 779, 780] {
        let (mut ep, mut s, _, _) = victim();
        let (c, _) = file(&k, "poi", 2, size);
        let offered = c.instance_id();
        ep.handle_datagram(
            Instant::ZERO,
            ATTACKER,
            &Message::Offer { cert: c.encoded() }.to_vec(),
            &mut s,
        );
        let mut offers = Vec::new();
        let mut wants = 0;
        while let Some(t) = ep.poll_transmit(Instant::ZERO, &mut s) {
            match Message::parse(&t.payload) {
                Ok(Message::Offer { cert }) => offers.push(cert.to_vec()),
                Ok(Message::Want { .. }) => wants += 1,
                _ => {}
            }
        }
        let forks: Vec<_> = std::iter::from_fn(|| ep.poll_event())
            .filter_map(|e| match e {
                Event::ForkResolved {
                    kept,
                    dropped,
                    version: 2,
                    ..
                } => Some((kept, dropped)),
                _ => None,
            })
            .collect();
        let winner = offered.max(ours.instance_id());
        assert_eq!(forks.len(), 1, "size {size}");
        assert_eq!(forks[0].0, winner);
        if winner == offered {
            assert_eq!((wants, offers.len()), (1, 0), "the winner is fetched");
        } else {
            assert_eq!(wants, 0);
            assert_eq!(
                offers,
                vec![ours.encoded().to_vec()],
                "ours is offered back"
            );
        }
        // Nothing changes before a fetched winner verifies.
        assert_eq!(ep.files().next().unwrap().instance_id(), ours.instance_id());
    }
}

/// Encodes and signs a certificate by hand, bypassing `Certificate::issue`'s checks.
fn forged(seed: [u8; 32], name: &str, version: u16) -> Vec<u8> {
    let sk = SigningKey::from_bytes(&seed);
    let pk = sk.verifying_key().to_bytes();
    let mut b = b"BSC1".to_vec();
    b.extend_from_slice(&pk);
    b.extend_from_slice(&Id160::hash(&[&pk, name.as_bytes()]).0);
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&10u64.to_be_bytes());
    b.extend_from_slice(&[0; 20]);
    b.push(name.len() as u8);
    b.extend_from_slice(name.as_bytes());
    let sig = sk.sign(&[b"broadside certificate v1\0".as_slice(), &b].concat());
    b.extend_from_slice(&sig.to_bytes());
    b
}

#[test]
fn name_with_path_separator_or_dotdot_is_refused_even_if_signed() {
    let (mut ep, mut s, _, _) = victim();
    let before = snapshot(&ep, &s);
    // The forger's encoding is right: a clean name decodes.
    assert!(broadside::Certificate::decode(&forged([1; 32], "poi", 3)).is_ok());
    for bad in ["../../etc/passwd", "a/b", "..", "x\\y"] {
        let (sent, why) = offer(&mut ep, &mut s, &forged([1; 32], bad, 3));
        assert!(
            matches!(
                why.as_slice(),
                [RejectReason::Certificate(CertError::InvalidName { .. })]
            ),
            "{bad}: {why:?}"
        );
        assert_refused(&sent);
    }
    assert_eq!(snapshot(&ep, &s), before);
}

#[test]
fn bit_vector_claiming_a_billion_blocks_is_refused() {
    let (mut ep, mut s, _, auth) = victim();
    let inst = ep.files().next().unwrap().instance_id();
    let mut pkt = Message::Want {
        auth,
        transfer: 1,
        instance: inst,
        block_size: 2294,
        segment: 0,
        vector: BitVec::new(8),
    }
    .to_vec();
    let n = pkt.len();
    pkt[n - 5..n - 1].copy_from_slice(&1_000_000_000u32.to_be_bytes());
    ep.handle_datagram(Instant::ZERO, ATTACKER, &pkt, &mut s);
    let (_, why) = drain(&mut ep, &mut s);
    assert!(
        matches!(
            why.as_slice(),
            [RejectReason::Malformed(
                broadside::wire::WireError::BitVecTooLong {
                    claimed: 1_000_000_000,
                    ..
                }
            )]
        ),
        "{why:?}"
    );
    // A well-formed vector that reaches past the end of the file is refused too.
    let big = Message::Want {
        auth,
        transfer: 2,
        instance: inst,
        block_size: 2294,
        segment: 0,
        vector: BitVec::new(60_000),
    }
    .to_vec();
    ep.handle_datagram(Instant::ZERO, ATTACKER, &big, &mut s);
    let (_, why) = drain(&mut ep, &mut s);
    assert_eq!(
        why,
        vec![RejectReason::InvalidVector("segment outside the file")]
    );
    assert_eq!(ep.upload_count(), 0);
    assert!(
        ep.poll_transmit(Instant::ZERO, &mut s).is_none(),
        "no data may be sent"
    );
}

#[test]
fn tampered_file_is_detected_and_discarded() {
    let k = key(4);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    let (c1, d1) = file(&k, "guide", 1, 30_000);
    a.insert(c1.clone(), d1.clone());
    let (c2, mut d2) = file(&k, "guide", 2, 30_000);
    d2[12_345] ^= 0x40; // the sender's copy no longer matches its certificate
    b.insert(c2.clone(), d2);
    let mut p = pair(a, b, &[&k], 21);
    let mismatch = |p: &broadside::sim::Pair| {
        rejections(p, 0)
            .iter()
            .any(|r| matches!(r, RejectReason::ContentMismatch { .. }))
    };
    assert!(p.run_until(secs(20.0), mismatch), "{:?}", p.events);
    assert_eq!(verified_version(&p, 0, &k, "guide"), Some(1));
    assert_eq!(p.stores[0].get(&c1.file_id()).unwrap().1, d1);
    assert!(p.stores[0].partial(&c2.instance_id()).is_none());
}

#[test]
fn beacon_and_discovery_floods_are_rate_limited() {
    let (mut ep, mut s, _, _) = victim();
    let before = snapshot(&ep, &s);
    let beacon = Message::Beacon {
        node: 1,
        file_count: 1_000_000,
        content_hash: Id160([7; 20]),
    }
    .to_vec();
    for i in 0..10_000u32 {
        let f = match_all_filters(i);
        ep.handle_datagram(Instant::ZERO, ATTACKER, &beacon, &mut s);
        ep.handle_datagram(Instant::ZERO, ATTACKER, &f, &mut s);
    }
    let c = *ep.counters();
    let cfg = ep.config().clone();
    assert!(
        c.rx.beacon.packets <= (2.0 * cfg.beacon_rate) as u64,
        "{c:?}"
    );
    assert!(
        c.rx.discovery.packets <= (2.0 * cfg.request_rate) as u64,
        "{c:?}"
    );
    assert_eq!(
        c.rate_limited,
        20_000 - c.rx.beacon.packets - c.rx.discovery.packets
    );
    let (_, why) = drain(&mut ep, &mut s);
    assert!(why.contains(&RejectReason::RateLimited(broadside::wire::MsgType::Beacon)));
    assert!(why.contains(&RejectReason::RateLimited(
        broadside::wire::MsgType::Filters
    )));
    assert!(
        why.len() <= 4,
        "one log line per episode, not per packet: {}",
        why.len()
    );
    assert_eq!(snapshot(&ep, &s), before);
    // After a second, the peer is heard again.
    ep.handle_datagram(Instant::from_micros(1_000_000), ATTACKER, &beacon, &mut s);
    assert_eq!(ep.counters().rx.beacon.packets, c.rx.beacon.packets + 1);
}

/// The victim answered with one Close saying it refused.
fn assert_refused(sent: &[Message<'_>]) {
    assert!(
        matches!(
            sent,
            [Message::Close {
                status: CloseCode::Refused,
                ..
            }]
        ),
        "{sent:?}"
    );
}

/// The attack: Wants whose source is a validated peer's address,
/// without its session secret, then with it (as if it leaked) and no ack.
/// Nothing the node sends that address exceeds three times what came from
/// it until the address acknowledges data; then the transfer goes on.
#[test]
fn spoofed_want_from_a_validated_address_gets_at_most_3x() {
    let k = key(1);
    let mut s = MemStore::new();
    let (c, d) = file(&k, "doc", 2, 1_000_000);
    let inst = c.instance_id();
    let blocks = 1_000_000u32.div_ceil(2294);
    s.insert(c, d);
    let cfg = broadside::Config {
        send_rate: 0,
        ..config(12)
    };
    let mut ep = endpoint(cfg, &[&k], &s);
    let auth = session(&mut ep, &mut s, ATTACKER).expect("validated");
    // The exchange: a challenge and the echo of the node's answer.
    let mut received = 2 * broadside::wire::TOKEN_PACKET_LEN;
    let want = |auth, transfer| {
        Message::Want {
            auth,
            transfer,
            instance: inst,
            block_size: 2294,
            segment: 0,
            vector: BitVec::new(blocks),
        }
        .to_vec()
    };
    let sent_to = |ep: &mut Endpoint<Addr>, s: &mut MemStore, t: f64| {
        let now = secs(t);
        ep.handle_timeout(now, s);
        let mut n = 0;
        while let Some(x) = ep.poll_transmit(now, s) {
            if x.destination == broadside::Destination::Peer(ATTACKER) {
                n += x.payload.len();
            }
        }
        n
    };
    let mut sent = 0;
    for (i, guess) in [[0; 16], [5; 16], auth.map(|b| b ^ 1)]
        .into_iter()
        .enumerate()
    {
        let w = want(guess, 10 + i as u32);
        received += w.len();
        ep.handle_datagram(secs(0.1 * i as f64), ATTACKER, &w, &mut s);
        sent += sent_to(&mut ep, &mut s, 0.1 * i as f64);
    }
    // A challenge each (a Token packet), in case the peer lost its secret.
    assert!(
        sent <= 3 * broadside::wire::TOKEN_PACKET_LEN,
        "{sent} bytes"
    );
    assert_eq!(ep.upload_count(), 0);
    let why: Vec<_> = std::iter::from_fn(|| ep.poll_event())
        .filter_map(|e| match e {
            Event::Rejected { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert!(why.contains(&RejectReason::Unauthenticated), "{why:?}");
    // With the secret but no ack (after a discovery request, so that the
    // node has heard enough to send some data): at most 3x, however long
    // the node runs.
    let f = match_all_filters(3);
    received += f.len();
    ep.handle_datagram(secs(0.9), ATTACKER, &f, &mut s);
    let w = want(auth, 20);
    received += w.len();
    ep.handle_datagram(secs(1.0), ATTACKER, &w, &mut s);
    for i in 0..50 {
        sent += sent_to(&mut ep, &mut s, 1.0 + 0.05 * f64::from(i));
    }
    println!("before an ack: sent {sent} bytes for {received} received");
    assert!(sent > 2304, "the authenticated Want is served");
    assert!(
        sent <= 3 * received,
        "sent {sent} bytes for {received} received"
    );
    // An ack of the transfer proves the address receives: the rest flows.
    let ack = Message::Ack {
        transfer: 20,
        vector: BitVec::new(blocks),
    }
    .to_vec();
    ep.handle_datagram(secs(4.0), ATTACKER, &ack, &mut s);
    let after = sent_to(&mut ep, &mut s, 4.0);
    assert!(after > 100 * 2304, "only {after} bytes after the ack");
}
