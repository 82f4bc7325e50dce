//! Two endpoints over the in-memory link: convergence to the newest versions,
//! loss, acknowledgement overhead, resumption from a stored receive vector.

mod common;
use broadside::sim::Pair;
use broadside::{Config, Event, MemStore, ProviderKey};
use common::*;

#[test]
fn both_sides_end_with_newest_versions() {
    let k = key(1);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    for i in 0..20 {
        let name = format!("f{i}");
        let va = if i < 5 { 2 } else { 1 };
        let vb = if (10..15).contains(&i) { 3 } else { 1 };
        let (c, d) = file(&k, &name, va, 40_000 + i * 1000);
        a.insert(c, d);
        let (c, d) = file(&k, &name, vb, 40_000 + i * 1000);
        b.insert(c, d);
    }
    // Files held by one side only are not common: they stay where they are.
    let (c, d) = file(&k, "only-a", 1, 100);
    a.insert(c, d);
    let mut p = pair(a, b, &[&k], 1);
    let want = |i: usize| {
        if i < 5 {
            2
        } else if (10..15).contains(&i) {
            3
        } else {
            1
        }
    };
    let converged = |p: &Pair| {
        (0..20).all(|i| {
            let n = format!("f{i}");
            version(p, 0, &k, &n) == Some(want(i)) && version(p, 1, &k, &n) == Some(want(i))
        })
    };
    assert!(
        p.run_until(secs(30.0), converged),
        "did not converge: {:?}",
        p.events
    );
    for i in 0..20 {
        let n = format!("f{i}");
        assert_eq!(verified_version(&p, 0, &k, &n), Some(want(i)));
        assert_eq!(verified_version(&p, 1, &k, &n), Some(want(i)));
    }
    assert_eq!(verified_version(&p, 1, &k, "only-a"), None);
    assert!(rejections(&p, 0).is_empty() && rejections(&p, 1).is_empty());
    let updated = p
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::FileUpdated { .. }))
        .count();
    assert_eq!(updated, 10);
}

/// Runs one transfer of `blocks` blocks through a lossy link with the
/// sender's window (and so the receiver's ack spacing) set to `window`;
/// checks that ack bytes stay under 1% of data bytes and returns the
/// receiver's ack packets.
fn lossy_transfer(blocks: usize, loss: f64, seed: u64, window: u32) -> u64 {
    let k = key(2);
    let size = blocks * (2304 - 10);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    let (c, d) = file(&k, "big", 1, size);
    a.insert(c, d);
    let (c, d) = file(&k, "big", 2, size);
    b.insert(c, d);
    let t: &[&ProviderKey] = &[&k];
    let cfg = |s| Config {
        window,
        ..config(s)
    };
    let nodes = [
        endpoint(cfg(seed * 2 + 1), t, &a),
        endpoint(cfg(seed * 2 + 2), t, &b),
    ];
    let mut p = Pair::new(nodes, [a, b], seed);
    p.loss = vec![loss, loss];
    assert!(
        p.run_until(secs(120.0), |p| version(p, 0, &k, "big") == Some(2)),
        "transfer did not complete"
    );
    assert_eq!(verified_version(&p, 0, &k, "big"), Some(2));
    let rx = p.nodes[0].counters();
    let tx = p.nodes[1].counters();
    assert_eq!(rx.resumed_blocks_resent, 0);
    let (ack_packets, ack_bytes, data_bytes) =
        (rx.tx.ack.packets, rx.tx.ack.bytes, tx.tx.data.bytes);
    let ratio = ack_bytes as f64 / data_bytes as f64;
    println!(
        "p={blocks}, window {window}: {ack_packets} acks, ack/data bytes = {:.4}%",
        100.0 * ratio
    );
    assert!(
        ratio < 0.01,
        "ack bytes {ack_bytes} not under 1% of data bytes {data_bytes}"
    );
    ack_packets
}

/// The paper's ack policy alone (no sender window, so no ack spacing):
/// acks grow like log p.
#[test]
fn thirty_percent_loss_completes_with_logarithmic_acks() {
    let mut acks = Vec::new();
    for (blocks, seed) in [(64usize, 3u64), (512, 4), (4096, 5)] {
        acks.push(lossy_transfer(blocks, 0.3, seed, 0) as f64);
    }
    // 64x more blocks must cost far fewer than 64x the acks: like log p, not p.
    assert!(acks[2] < acks[0] * 4.0, "acks grow too fast: {acks:?}");
    assert!(acks[2] <= 4.0 * (4096f64).log2(), "{acks:?}");
}

/// With the default window the receiver also acks every `window / 4` new
/// blocks: p / (window / 4) more acks, still well under 1% of the bytes.
#[test]
fn thirty_percent_loss_with_a_window_acks_every_quarter_window() {
    let window = Config::default().window;
    for (blocks, seed) in [(512usize, 4u64), (4096, 5)] {
        let ack_packets = lossy_transfer(blocks, 0.3, seed, window);
        let spaced = blocks as f64 / f64::from(window / 4);
        assert!(
            ack_packets as f64 <= spaced + 4.0 * (blocks as f64).log2(),
            "{ack_packets} acks for {blocks} blocks"
        );
    }
}

#[test]
fn interrupted_transfer_resumes_from_stored_vector_with_another_peer() {
    let k = key(3);
    let size = 2000 * 2294;
    let (mut a, mut b, mut c) = (MemStore::new(), MemStore::new(), MemStore::new());
    let (c1, d1) = file(&k, "map", 1, size);
    let (c2, d2) = file(&k, "map", 2, size);
    a.insert(c1, d1);
    b.insert(c2.clone(), d2.clone());
    c.insert(c2.clone(), d2);
    let mut p = pair(a, b, &[&k], 7);
    // Cut the contact once some blocks are in.
    assert!(p.run_until(secs(30.0), |p| p.stores[0]
        .partial(&c2.instance_id())
        .is_some_and(|v| v.received.count_ones() > 500)));
    p.up = false;
    assert!(p.run_until(secs(60.0), |p| p
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::TransferStalled { .. }))));
    let stored = p.stores[0]
        .partial(&c2.instance_id())
        .cloned()
        .expect("partial kept");
    assert!(stored.received.count_ones() > 500 && !stored.received.is_full());

    // Meet a different node with the same version; the receiver restarts too.
    let store_a = std::mem::take(&mut p.stores[0]);
    let mut q = pair(store_a, c, &[&k], 8);
    assert!(q.run_until(secs(60.0), |q| version(q, 0, &k, "map") == Some(2)));
    assert_eq!(verified_version(&q, 0, &k, "map"), Some(2));
    let resumed = q.events.iter().find_map(|(_, e)| match e {
        Event::TransferStarted { resumed_blocks, .. } => Some(*resumed_blocks),
        _ => None,
    });
    assert_eq!(resumed, Some(stored.received.count_ones()));
    assert_eq!(
        q.nodes[0].counters().resumed_blocks_resent,
        0,
        "an acknowledged block was sent again"
    );
    let sent_blocks = q.nodes[1].counters().tx.data.packets;
    assert!(
        sent_blocks < u64::from(2000 - stored.received.count_ones()) + 50,
        "sent {sent_blocks} blocks"
    );
}

/// A contact long enough for about 2.6 of 5 requested files: the sender
/// serves them one after another, so at least 2 complete (round-robin over
/// all 5 completes none); the files waiting their turn for longer than
/// `transfer_timeout` are not abandoned; and in the next contact the
/// partials resume without an acknowledged block being sent again.
#[test]
fn a_short_contact_completes_files_one_after_another() {
    let k = key(4);
    let blocks = 1000usize;
    let size = blocks * (2304 - 10);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    let mut newer = Vec::new();
    for i in 0..5 {
        let name = format!("f{i}");
        let (c, d) = file(&k, &name, 1, size);
        a.insert(c, d);
        let (c, d) = file(&k, &name, 2, size);
        newer.push(c.instance_id());
        b.insert(c, d);
    }
    // 2.3 s per file: the contact outlasts `transfer_timeout` (5 s).
    let slow = |seed| broadside::Config {
        send_rate: 1_000_000,
        ..config(seed)
    };
    let (na, nb) = (endpoint(slow(19), &[&k], &a), endpoint(slow(20), &[&k], &b));
    let mut p = Pair::new([na, nb], [a, b], 9);
    let contact = 2.6 * size as f64;
    assert!(
        p.run_until(secs(30.0), |p| p.nodes[0].counters().file_bytes_received
            >= contact as u64)
    );
    let cut = p.now;
    assert!(cut > secs(5.5), "contact of {cut:?} shorter than intended");
    let complete = |p: &Pair| {
        (0..5)
            .filter(|i| version(p, 0, &k, &format!("f{i}")) == Some(2))
            .count()
    };
    assert!(
        complete(&p) >= 2,
        "completed {} files: {:?}",
        complete(&p),
        p.events
    );
    let stalled = |p: &Pair| {
        p.events
            .iter()
            .filter(|(_, e)| matches!(e, Event::TransferStalled { .. }))
            .count()
    };
    assert_eq!(
        stalled(&p),
        0,
        "a waiting file was abandoned: {:?}",
        p.events
    );
    let started = newer
        .iter()
        .filter(|i| {
            p.stores[0]
                .partial(i)
                .is_some_and(|v| v.received.count_ones() > 0 && !v.received.is_full())
        })
        .count();
    assert!(
        started <= 1,
        "{started} files partly received: one at a time"
    );

    // The link goes down; the open fetches stall and keep their partials.
    p.up = false;
    let sent_before = p.nodes[1].counters().tx.data.packets;
    let at = p.now;
    p.run_until(at + core::time::Duration::from_secs(8), |_| false);
    assert!(p.nodes[0].fetches().is_empty());

    // The next contact finishes the rest; nothing acknowledged is sent again.
    let sent_down = p.nodes[1].counters().tx.data.packets - sent_before;
    p.up = true;
    assert!(
        p.run_until(secs(120.0), |p| complete(p) == 5),
        "{:?}",
        p.events
    );
    for i in 0..5 {
        assert_eq!(verified_version(&p, 0, &k, &format!("f{i}")), Some(2));
    }
    let rx = p.nodes[0].counters();
    assert_eq!(
        rx.resumed_blocks_resent, 0,
        "an acknowledged block was sent again"
    );
    // Loss-free link: every block that crossed it crossed once.
    assert_eq!(rx.duplicate_blocks, 0);
    let sent = p.nodes[1].counters().tx.data.packets - sent_down;
    assert_eq!(sent, (5 * blocks) as u64, "{sent_down} sent while down");
}

/// Data packets the sender (node 1) sends for one v2 file of `blocks`
/// blocks on a loss-free medium with `delay` one way, dropping the first
/// copy of each block for which `drop_first` holds.
fn data_packets(blocks: usize, delay_ms: u64, drop_first: fn(u16) -> bool) -> (u64, u64) {
    let k = key(4);
    let size = blocks * (2304 - 10);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    let (c, d) = file_v2(&k, "map", 1, size);
    a.insert(c, d);
    let (c, d) = file_v2(&k, "map", 2, size);
    b.insert(c, d);
    let mut p = pair(a, b, &[&k], 9);
    p.delay = std::time::Duration::from_millis(delay_ms);
    let mut seen = std::collections::BTreeSet::new();
    p.tamper = Some(Box::new(
        move |_, _, bytes: &mut Vec<u8>| match broadside::wire::Message::parse(bytes) {
            Ok(broadside::wire::Message::Data { block, .. }) => {
                !(drop_first(block) && seen.insert(block))
            }
            _ => true,
        },
    ));
    assert!(
        p.run_until(secs(60.0), |p| version(p, 0, &k, "map") == Some(2)),
        "transfer did not complete"
    );
    assert_eq!(verified_version(&p, 0, &k, "map"), Some(2));
    let tx = p.nodes[1].counters().tx.data.packets;
    // Blocks plus the hash chunks of the segment (64 leaf hashes each).
    (tx, (blocks + blocks.div_ceil(64)) as u64)
}

/// A pass that has ended waits for the receiver's vector, which comes as
/// soon as the pass's last block arrives: on a loss-free link every block
/// goes once, however long the round trip (before, the sender started the
/// next pass at once and sent a round trip's worth of blocks again). The
/// only extra packets are probes (the pass's last block again, one per
/// `dup_ack_holdoff` of round trip).
#[test]
fn a_loss_free_transfer_sends_each_block_once() {
    for delay_ms in [1, 20] {
        let (sent, needed) = data_packets(2000, delay_ms, |_| false);
        println!("delay {delay_ms} ms: {sent} data packets for {needed}");
        assert!(sent >= needed);
        assert!(sent <= needed + 4, "{sent} data packets for {needed}");
    }
}

/// The pass's last block lost: the receiver cannot tell the pass ended, so
/// the sender's probe (that block again) draws the vector; the lost blocks
/// go once more and nothing else does.
#[test]
fn a_lost_last_block_is_recovered_by_a_probe() {
    // Segment-relative indices: 32 chunk bits, then 2000 blocks; drop
    // three blocks including the last one.
    let (sent, needed) = data_packets(2000, 5, |b| [100, 1500, 2031].contains(&b));
    println!("{sent} data packets for {needed} (3 dropped once)");
    assert!(sent >= needed + 3);
    assert!(sent <= needed + 3 + 4, "{sent} data packets for {needed}");
}

/// A hash chunk lost: the blocks it covers arrive before it and are kept
/// unverified, and marked in the vector the sender gets, so that only the
/// chunk goes again (before, its 64 blocks went again too) and the blocks
/// are checked when it comes.
#[test]
fn a_lost_hash_chunk_is_sent_again_without_its_blocks() {
    // Segment-relative indices: 32 chunk bits, then 2000 blocks; drop the
    // first transmission of chunks 3 and 10.
    let (sent, needed) = data_packets(2000, 5, |b| [3, 10].contains(&b));
    println!("{sent} data packets for {needed} (2 chunks dropped once)");
    assert!(sent >= needed + 2);
    assert!(sent <= needed + 2 + 4, "{sent} data packets for {needed}");
}

/// Two stores each hold a different, validly signed version 1 of "doc"
/// (and agree on another file). Whichever side starts the sync, both end
/// with the certificate of the greater instance id, verified, and log the
/// fork on each side.
#[test]
fn a_version_fork_resolves_to_the_greater_instance_on_both_sides() {
    let k = key(7);
    let (c1, d1) = file(&k, "doc", 1, 30_000);
    // Same name and version, other content: another valid signature.
    let (c2, d2) = {
        let mut d = d1.clone();
        d[0] ^= 1;
        let mut h = broadside::ContentHasher::new();
        h.update(&d);
        let c = broadside::Certificate::issue(&k, "doc", 1, d.len() as u64, h.finish()).unwrap();
        (c, d)
    };
    assert_ne!(c1.instance_id(), c2.instance_id());
    let winner = c1.instance_id().max(c2.instance_id());
    for (seed, swap) in [(41, false), (42, true), (43, false)] {
        let (mut a, mut b) = (MemStore::new(), MemStore::new());
        let ((ca, da), (cb, db)) = if swap {
            ((c2.clone(), d2.clone()), (c1.clone(), d1.clone()))
        } else {
            ((c1.clone(), d1.clone()), (c2.clone(), d2.clone()))
        };
        a.insert(ca, da);
        b.insert(cb, db);
        let (c, d) = file(&k, "same", 1, 5_000);
        a.insert(c.clone(), d.clone());
        b.insert(c, d);
        let mut p = pair(a, b, &[&k], seed);
        let id = broadside::cert::file_id_of(&k.public(), "doc");
        let held = |p: &Pair, i: usize| p.stores[i].get(&id).map(|(c, _)| c.instance_id());
        assert!(
            p.run_until(secs(30.0), |p| held(p, 0) == Some(winner)
                && held(p, 1) == Some(winner)),
            "did not converge (seed {seed}): {:?}",
            p.events
        );
        assert_eq!(verified_version(&p, 0, &k, "doc"), Some(1));
        assert_eq!(verified_version(&p, 1, &k, "doc"), Some(1));
        let logged: Vec<_> = p
            .events
            .iter()
            .filter_map(|(n, e)| match e {
                Event::ForkResolved {
                    kept,
                    dropped,
                    version: 1,
                    ..
                } => Some((*n, *kept, *dropped)),
                _ => None,
            })
            .collect();
        assert!(!logged.is_empty(), "the fork was not logged");
        assert!(logged
            .iter()
            .all(|(_, kept, dropped)| *kept == winner && dropped != kept));
        // Converged: the nodes advertise the same content and stop syncing.
        assert_eq!(p.nodes[0].content_hash(), p.nodes[1].content_hash());
    }
}
