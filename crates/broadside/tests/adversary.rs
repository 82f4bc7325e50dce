//! Peers that lie, stall, spoof or flood, through the in-memory network.
//! Each test prints its measured figures (simulated seconds, byte ratios).

mod common;
use broadside::merkle::Shape;
use broadside::sim::{Addr, Net};
use broadside::wire::{Message, DATA_HEADER_LEN};
use broadside::{Config, Event, Id160, Instant, MemStore, PacketKind, RejectReason};
use common::*;

/// Seconds for node 0 to get the file from one honest peer, from the start.
fn clean_time(seed: u64) -> f64 {
    let (mut p, k) = update_net(8, 1, seed, |_, c| c);
    assert!(p.run_until(secs(30.0), |p| update_done(p, &k)));
    at(p.now)
}

#[test]
fn a_poisoner_is_dropped_and_the_honest_peer_finishes_from_the_verified_partial() {
    let clean = clean_time(31);
    // Node 2 holds the public certificate and sends garbage for the second
    // half of the blocks; node 1 is honest and arrives once node 2 is serving.
    let (mut p, k) = update_net(8, 2, 31, |_, c| c);
    let shape = Shape::new(UPDATE_BLOCKS, 2294).unwrap();
    let hdr = (UPDATE_BLOCKS.div_ceil(shape.chunk_leaves())) as u16;
    p.tamper = Some(Box::new(move |from, _, bytes| {
        if from == 2 && bytes.len() > DATA_HEADER_LEN {
            if let Ok(Message::Data { block, .. }) = Message::parse(bytes) {
                if block >= hdr + (UPDATE_BLOCKS / 2) as u16 {
                    bytes[DATA_HEADER_LEN] ^= 0xff;
                }
            }
        }
        true
    }));
    p.down[1] = true;
    assert!(
        p.run_until(secs(30.0), |p| p.events.iter().any(|(n, e)| *n == 0
            && matches!(
                e,
                Event::Rejected {
                    reason: RejectReason::Poisoned { .. },
                    ..
                }
            )))
    );
    let poisoned_at = at(p.now);
    p.down[1] = false;
    let t0 = p.now;
    assert!(p.run_until(secs(60.0), |p| update_done(p, &k)));
    let honest = at(p.now) - at(t0);
    assert_eq!(verified_version(&p, 0, &k, "update"), Some(2));
    let started: Vec<(Addr, u32)> = p
        .events
        .iter()
        .filter_map(|(n, e)| match e {
            Event::TransferStarted {
                peer,
                resumed_blocks,
                ..
            } if *n == 0 => Some((*peer, *resumed_blocks)),
            _ => None,
        })
        .collect();
    let c = p.nodes[0].counters();
    println!(
        "poisoning: bad block caught at {poisoned_at:.3} s; honest peer finished {honest:.3} s \
         after it arrived (clean transfer from the start: {clean:.3} s, ratio {:.2}); \
         transfers {started:?}; poisoned blocks {}",
        honest / clean,
        c.poisoned_blocks
    );
    assert!(honest <= 2.0 * clean, "{honest} > 2 x {clean}");
    // The verified half from the liar was kept, not discarded.
    assert_eq!(started.last().map(|s| s.0), Some(1));
    assert!(
        started.last().unwrap().1 >= UPDATE_BLOCKS / 2 - 64,
        "{started:?}"
    );
    assert!(!p.events.iter().any(|(_, e)| matches!(
        e,
        Event::Rejected {
            reason: RejectReason::ContentMismatch { .. },
            ..
        }
    )));
    assert!(c.poisoned_blocks >= 1);
}

#[test]
fn a_slowloris_loses_its_slot_to_an_honest_peer() {
    let clean = clean_time(32);
    // Node 1 sends one block every 4 s (after its first burst); node 2 is
    // honest and arrives after 2 s.
    let (mut p, k) = update_net(8, 2, 32, |i, c| {
        if i == 1 {
            Config {
                send_rate: 2304 / 4,
                ..c
            }
        } else {
            c
        }
    });
    p.down[2] = true;
    p.run_until(secs(2.0), |_| false);
    assert_eq!(p.nodes[0].fetches().first().map(|f| f.peer), Some(1));
    p.down[2] = false;
    let t0 = p.now;
    assert!(p.run_until(secs(60.0), |p| update_done(p, &k)));
    let honest = at(p.now) - at(t0);
    assert_eq!(verified_version(&p, 0, &k, "update"), Some(2));
    let switched = p
        .events
        .iter()
        .any(|(n, e)| *n == 0 && matches!(e, Event::SourceSwitched { from: 1, to: 2, .. }));
    println!(
        "slowloris: honest peer took over and finished {honest:.3} s after it arrived \
         (clean: {clean:.3} s, ratio {:.2})",
        honest / clean
    );
    assert!(switched);
    assert!(honest <= 2.0 * clean, "{honest} > 2 x {clean}");
}

#[test]
fn a_spoofed_source_gets_at_most_its_own_bytes_and_no_data() {
    let (mut p, k) = update_net(8, 1, 33, |_, c| c);
    p.run_until(secs(1.0), |_| false);
    let victim: Addr = 200;
    let cert = p.stores[1]
        .get(&broadside::cert::file_id_of(&k.public(), "update"))
        .unwrap()
        .0
        .clone();
    // The 611-byte Want, a beacon, a discovery request and a token
    // request, from the victim's address, ten times a second for 5 s.
    let want = Message::Want {
        auth: [5; 16],
        transfer: 1,
        instance: cert.instance_id(),
        block_size: 2294,
        segment: 0,
        vector: broadside::BitVec::new(4400),
    }
    .to_vec();
    let beacon = Message::Beacon {
        node: 5,
        file_count: 0,
        content_hash: Id160([1; 20]),
    }
    .to_vec();
    let filters = match_all_filters(1);
    let token = Message::Token {
        echo: [3; 16],
        token: [4; 16],
    }
    .to_vec();
    let mut injected = 0;
    for step in 0..50 {
        for pkt in [&want, &beacon, &filters, &token] {
            p.inject(victim, 1, pkt.clone());
            injected += pkt.len();
        }
        p.run_until(secs(1.0 + 0.1 * f64::from(step + 1)), |_| false);
    }
    let to_victim: usize = p.stray.iter().filter(|s| s.2 == victim).map(|s| s.4).sum();
    let kinds: Vec<PacketKind> = p.stray.iter().map(|s| s.3).collect();
    println!(
        "spoofed source: {injected} bytes sent as the victim, {to_victim} bytes to the victim \
         (ratio {:.3}; bound 3)",
        to_victim as f64 / injected as f64
    );
    assert!(to_victim <= 3 * injected);
    assert!(kinds.iter().all(|k| *k == PacketKind::Control), "{kinds:?}");
    assert!(p.nodes[1].peers().iter().all(|s| s.peer != victim));
    assert_eq!(p.nodes[1].upload_count(), 0);
    // The real peer was served meanwhile.
    assert!(p.run_until(secs(30.0), |p| update_done(p, &k)));
}

/// Seconds from node 1's arrival (at 2 s) until it sent node 0 its first
/// data block, with `flood` fake sources sending node 0 beacons, garbage
/// and token requests ten times a second each from the start.
fn first_block(flood: u8) -> f64 {
    let (mut p, _) = update_net(8, 1, 34, |_, c| c);
    p.down[1] = true;
    let sent_data = |p: &Net| {
        p.log
            .as_ref()
            .and_then(|l| {
                l.iter()
                    .find(|s| s.1 == 1 && s.2 == 0 && s.3 == PacketKind::Data)
            })
            .map(|s| at(s.0))
    };
    for step in 0..300u32 {
        for src in 0..flood {
            let from = 10 + src;
            let beacon = Message::Beacon {
                node: u64::from(from),
                file_count: 0,
                content_hash: Id160([from; 20]),
            }
            .to_vec();
            p.inject(from, 0, beacon);
            p.inject(from, 0, vec![from; 300]);
            p.inject(
                from,
                0,
                Message::Token {
                    echo: [from; 16],
                    token: [from; 16],
                }
                .to_vec(),
            );
        }
        if step == 20 {
            p.down[1] = false;
        }
        let until = Instant::from_micros(u64::from(step + 1) * 100_000);
        if p.run_until(until, |p| sent_data(p).is_some()) {
            break;
        }
    }
    let t = sent_data(&p).expect("a first block") - 2.0;
    assert!(
        p.nodes[0].peers().iter().all(|s| s.peer == 1),
        "fake sources got state"
    );
    t
}

#[test]
fn a_flood_of_fake_sources_does_not_delay_a_real_peer() {
    let quiet = first_block(0);
    let flooded = first_block(100);
    println!(
        "peer flood (100 fake sources x 30 packets/s): first block at {flooded:.3} s, \
         {quiet:.3} s without the flood (delay {:.3} s)",
        flooded - quiet
    );
    assert!(flooded - quiet <= 1.0);
}

#[test]
fn peers_from_one_prefix_cannot_fill_the_table() {
    use std::net::SocketAddr;
    let cfg = Config {
        max_peers_per_prefix: 4,
        max_peers: 8,
        ..config(35)
    };
    let mut s = MemStore::new();
    let mut ep: broadside::Endpoint<SocketAddr> = broadside::Endpoint::new(
        cfg,
        broadside::TrustedKeys::new([key(8).public()]),
        Vec::new(),
        Instant::ZERO,
    )
    .unwrap();
    let addr = |net: u8, host: u8, port: u16| SocketAddr::from(([10, 0, net, host], port));
    let admitted = (0..20u16)
        .filter(|&i| validate(&mut ep, &mut s, addr(0, (i % 3) as u8, 4000 + i)))
        .count();
    assert_eq!(admitted, 4, "one /24");
    assert!(validate(&mut ep, &mut s, addr(1, 1, 4000)), "another /24");
    let v6: SocketAddr = "[2001:db8::1]:4000".parse().unwrap();
    assert!(validate(&mut ep, &mut s, v6));
    assert_eq!(ep.peers().len(), 6);
    // A spoofed token echo (not issued to this address) creates nothing.
    let other: SocketAddr = "192.0.2.9:1".parse().unwrap();
    let forged = Message::Token {
        echo: [9; 16],
        token: [0; 16],
    }
    .to_vec();
    ep.handle_datagram(Instant::ZERO, other, &forged, &mut s);
    assert_eq!(ep.peers().len(), 6);
}
