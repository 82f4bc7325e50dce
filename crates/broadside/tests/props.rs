//! Property tests: Bloom filter false-positive rate against theory, bit
//! vector round trips, hostile bytes against every parser and endpoint,
//! the anti-amplification bound, and batched output.

mod common;
use broadside::bloom::{false_positive_rate, Bloom};
use broadside::endpoint::Batch;
use broadside::merkle::Shape;
use broadside::sim::Addr;
use broadside::wire::Message;
use broadside::{BitVec, Certificate, Destination, Id160, Instant, MemStore, PacketKind};
use common::*;
use proptest::prelude::*;

fn id(seed: u64, i: u64) -> Id160 {
    Id160::hash(&[&seed.to_be_bytes(), &i.to_be_bytes()])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// The filter behaves as the theory assumes: inserting n items sets a
    /// fraction of the m bits within 4.5 binomial standard deviations of
    /// 1 - e^{-kn/m}, and a filter whose bits are a fraction q set answers
    /// yes for a fresh item with probability q^k (within 4.5 standard
    /// deviations of the trials). The fill is checked first because with
    /// k = 12 a 1% fuller filter already has 12% more false positives, so a
    /// single filter's rate scatters far wider around (1 - e^{-kn/m})^k
    /// than the trials do. Includes the paper's point (g=500, 9144 bits,
    /// k=12: 0.0154 %).
    #[test]
    fn bloom_false_positive_rate_matches_theory(seed in any::<u64>(), salt in any::<u32>(), n in prop::sample::select(vec![500usize, 500, 800]), k in prop::sample::select(vec![12u8, 12, 6])) {
        let bytes = 1143;
        let m = bytes * 8;
        let mut f = Bloom::new(bytes, k, salt);
        for i in 0..n as u64 {
            f.insert(&id(seed, i));
        }
        let ones = f.as_bytes().iter().map(|b| b.count_ones() as f64).sum::<f64>();
        let fill = 1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp();
        let fill_sd = (m as f64 * fill * (1.0 - fill)).sqrt();
        prop_assert!((ones - fill * m as f64).abs() <= 4.5 * fill_sd, "n={n} k={k}: {ones} bits set, expected {:.1} ± {fill_sd:.1}", fill * m as f64);
        prop_assert!((false_positive_rate(n, m, k) - fill.powi(i32::from(k))).abs() < 1e-12);
        let p = (ones / m as f64).powi(i32::from(k));
        let trials = ((200.0 / p) as u64).clamp(20_000, 2_000_000);
        let hits = (0..trials).filter(|i| f.contains(&id(seed ^ 0xdead_beef, *i))).count() as f64;
        let expected = p * trials as f64;
        let sd = (trials as f64 * p * (1.0 - p)).sqrt();
        prop_assert!((hits - expected).abs() <= 4.5 * sd, "n={n} k={k}: {hits} hits, expected {expected:.1} ± {sd:.1}");
    }

    #[test]
    fn bitvec_roundtrips(len in 0u32..70_000, ones in prop::collection::vec(any::<u32>(), 0..300)) {
        let mut v = BitVec::new(len);
        for o in &ones {
            if len > 0 { v.set(o % len); }
        }
        let mut b = Vec::new();
        v.encode(&mut b);
        prop_assert_eq!(b.len(), v.encoded_len());
        prop_assert_eq!(BitVec::decode(&b, 70_000), Ok(v.clone()));
        let ones_set: std::collections::BTreeSet<u32> = ones.iter().filter(|_| len > 0).map(|o| o % len).collect();
        prop_assert_eq!(v.count_ones() as usize, ones_set.len());
        prop_assert!(v.iter_ones().eq(ones_set.iter().copied()));
        if len > 10 {
            let s = v.slice(5, len - 10);
            let mut w = BitVec::new(len);
            w.set_from(5, &s);
            prop_assert!((5..len - 5).all(|i| w.get(i) == v.get(i)));
        }
    }

    #[test]
    fn bitvec_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64), max in any::<u32>()) {
        let _ = BitVec::decode(&bytes, max);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Any bytes: parse rejects them cleanly or accepts a message that re-emits to the same bytes.
    #[test]
    fn parser_rejects_or_roundtrips(kind in 0u8..13, body in prop::collection::vec(any::<u8>(), 0..200), raw in any::<bool>()) {
        let bytes = if raw { body } else { [b"BS\x02".as_slice(), &[kind], &body].concat() };
        if let Ok(m) = Message::parse(&bytes) {
            prop_assert_eq!(m.to_vec(), bytes);
        }
    }

    #[test]
    fn certificate_decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        prop_assert!(Certificate::decode(&bytes).is_err());
    }

    /// Hash chunks from a peer: any bytes, any chunk index, never a panic,
    /// and never accepted against a root they were not cut from.
    #[test]
    fn hash_chunk_check_never_panics(leaves in 1u32..5000, chunk in any::<u32>(), root in any::<[u8; 32]>(), bytes in prop::collection::vec(any::<u8>(), 0..2300)) {
        if let Some(shape) = Shape::new(leaves, 2294) {
            prop_assert!(shape.verify_chunk(&root, chunk, &bytes).is_none());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Hostile datagrams never panic an endpoint nor change its files.
    #[test]
    fn endpoint_survives_hostile_datagrams(packets in prop::collection::vec((0u8..14, prop::collection::vec(any::<u8>(), 0..120)), 1..40)) {
        let k = key(1);
        let mut s = MemStore::new();
        let (c, d) = file(&k, "poi", 2, 5000);
        s.insert(c, d);
        let mut ep = endpoint(config(3), &[&k], &s);
        for a in 0..3 {
            prop_assert!(validate(&mut ep, &mut s, a));
        }
        let before: Vec<Id160> = ep.files().map(|c| c.instance_id()).collect();
        for (i, (kind, body)) in packets.iter().enumerate() {
            let bytes = [b"BS\x02".as_slice(), &[*kind], body].concat();
            let now = Instant::from_micros(i as u64 * 1000);
            ep.handle_datagram(now, (i % 3) as Addr, &bytes, &mut s);
            ep.handle_timeout(now, &mut s);
            while ep.poll_transmit(now, &mut s).is_some() {}
        }
        let after: Vec<Id160> = ep.files().map(|c| c.instance_id()).collect();
        prop_assert_eq!(before, after);
    }
}

/// A well-formed packet of each kind an attacker might send, from fuzzed fields.
fn packet(kind: u8, n: u32, body: &[u8]) -> Vec<u8> {
    let v = BitVec::new(n % 70_000 + 1);
    match kind {
        0 => Message::Beacon {
            node: u64::from(n),
            file_count: n,
            content_hash: id(1, u64::from(n)),
        }
        .to_vec(),
        1 => Message::Want {
            auth: [n as u8; 16],
            transfer: n,
            instance: id(2, 0),
            block_size: 2294,
            segment: 0,
            vector: v,
        }
        .to_vec(),
        2 => Message::Ack {
            transfer: n,
            vector: v,
        }
        .to_vec(),
        3 => Message::Token {
            echo: [n as u8; 16],
            token: [1; 16],
        }
        .to_vec(),
        4 => Message::Offer { cert: body }.to_vec(),
        _ => [b"BS\x02".as_slice(), &[kind], body].concat(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever a source that cannot receive at its address sends (it never
    /// sees the token), the endpoint keeps no state for it and sends it at
    /// most three times the bytes it sent, and nothing but Token packets.
    #[test]
    fn a_spoofed_source_gets_no_state_and_at_most_three_times_its_bytes(packets in prop::collection::vec((0u8..16, any::<u32>(), prop::collection::vec(any::<u8>(), 0..300)), 1..60)) {
        let k = key(1);
        let mut s = MemStore::new();
        let (c, d) = file_v2(&k, "poi", 2, 50_000);
        s.insert(c, d);
        let mut ep = endpoint(config(4), &[&k], &s);
        let spoofed: Addr = 77;
        let (mut got, mut sent) = (0usize, 0usize);
        for (i, (kind, n, body)) in packets.iter().enumerate() {
            let bytes = packet(*kind, *n, body);
            got += bytes.len();
            let now = Instant::from_micros(i as u64 * 1000);
            ep.handle_datagram(now, spoofed, &bytes, &mut s);
            ep.handle_timeout(now, &mut s);
            while let Some(t) = ep.poll_transmit(now, &mut s) {
                if t.destination == Destination::Peer(spoofed) {
                    prop_assert_eq!(t.kind, PacketKind::Control);
                    sent += t.payload.len();
                }
            }
        }
        prop_assert!(sent <= 3 * got, "{} > 3 x {}", sent, got);
        prop_assert!(ep.peers().is_empty());
    }
}

/// Draining one datagram at a time and in batches gives the same datagrams.
#[test]
fn batched_output_equals_one_at_a_time() {
    let k = key(1);
    let mut s = MemStore::new();
    let (c, d) = file_v2(&k, "poi", 2, 200_000);
    let instance = c.instance_id();
    s.insert(c, d);
    let mut single = (endpoint(config(5), &[&k], &s), s.clone());
    let mut batched = (endpoint(config(5), &[&k], &s), s);
    let want = |auth| {
        Message::Want {
            auth,
            transfer: 7,
            instance,
            block_size: 2294,
            // 88 blocks, 64 per chunk: 2 chunk bits first.
            segment: 0,
            vector: BitVec::new(90),
        }
        .to_vec()
    };
    for (ep, st) in [&mut single, &mut batched] {
        let auth = session(ep, st, 1).expect("validated");
        ep.handle_datagram(Instant::ZERO, 1, &want(auth), st);
        // An ack of the transfer lifts the 3x bound of a new peer.
        let ack = Message::Ack {
            transfer: 7,
            vector: BitVec::new(90),
        };
        ep.handle_datagram(Instant::ZERO, 1, &ack.to_vec(), st);
    }
    let mut one = Vec::new();
    let mut buf = Vec::new();
    let mut batch = Batch::new();
    for ms in 0..20u64 {
        let now = Instant::from_micros(ms * 1000);
        while let Some((d, k)) = single.0.poll_transmit_into(now, &mut single.1, &mut buf) {
            one.push((d, buf.clone(), k));
        }
        while batched
            .0
            .poll_transmits(now, &mut batched.1, &mut batch, 16)
            > 0
        {}
    }
    let many: Vec<_> = batch
        .iter()
        .map(|(d, b, k)| (d.clone(), b.to_vec(), k))
        .collect();
    assert!(one.iter().filter(|t| t.2 == PacketKind::Data).count() >= 90);
    assert_eq!(one, many);
}
