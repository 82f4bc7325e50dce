//! Transfers that finish when contact allows: a short contact, heavy loss,
//! a restart and a lost Close all end with the file, at a later contact if
//! need be, resuming from the stored receive vector. Prints the measured
//! figures (simulated seconds, bytes).

mod common;
use broadside::sim::Pair;
use broadside::wire::Message;
use broadside::{Event, MemStore};
use common::*;

const SIZE: usize = 4360 * 2294; // the 10 MB file: 4360 blocks

/// Node 0 holds version 1 of "update", node 1 version 2 (v2 certificates),
/// at 5 MB/s so the file takes about 2 s.
fn update_pair(seed: u64) -> (Pair, broadside::ProviderKey) {
    let k = key(5);
    let (mut a, mut b) = (MemStore::new(), MemStore::new());
    let (c, d) = file_v2(&k, "update", 1, SIZE);
    a.insert(c, d);
    let (c, d) = file_v2(&k, "update", 2, SIZE);
    b.insert(c, d);
    let mut p = pair(a, b, &[&k], seed);
    for n in &mut p.nodes {
        // Same node, slower sender: the contact matters.
        *n = endpoint(
            broadside::Config {
                send_rate: 5_000_000,
                ..n.config().clone()
            },
            &[&k],
            &MemStore::new(),
        );
    }
    let certs: Vec<_> = p.stores.iter().map(|s| s.certificates()).collect();
    for (n, c) in p.nodes.iter_mut().zip(certs) {
        for cert in c {
            n.add_file(cert).unwrap();
        }
    }
    (p, k)
}

fn received(p: &Pair, k: &broadside::ProviderKey) -> u32 {
    let c2 = p.stores[1]
        .get(&broadside::cert::file_id_of(&k.public(), "update"))
        .map(|(c, _)| c.instance_id())
        .unwrap();
    p.stores[0]
        .partial(&c2)
        .map_or(0, |v| v.received.count_ones())
}

fn resumed(p: &Pair) -> Vec<u32> {
    p.events
        .iter()
        .filter_map(|(n, e)| match e {
            Event::TransferStarted { resumed_blocks, .. } if *n == 0 => Some(*resumed_blocks),
            _ => None,
        })
        .collect()
}

/// Runs a first contact that ends after `contact` s or once `cut_at` blocks
/// are in, a gap of `gap` s, then contact until done; returns (blocks held after the first contact, seconds of
/// the second contact until the file was in, resumed blocks, data bytes
/// sent, data bytes received).
fn two_contacts(
    loss: f64,
    contact: f64,
    cut_at: u32,
    gap: f64,
    seed: u64,
) -> (u32, f64, Vec<u32>, u64, u64) {
    let (mut p, k) = update_pair(seed);
    p.loss = vec![loss, loss];
    p.run_until(secs(contact), |p| received(p, &k) >= cut_at);
    assert_ne!(version(&p, 0, &k, "update"), Some(2));
    let contact = at(p.now);
    let first = received(&p, &k);
    assert!(first > 0, "the first contact moved no block");
    p.up = false;
    p.run_until(secs(contact + gap), |_| false);
    // Both sides gave up on the contact, the partial is kept.
    assert!(p.nodes[0].fetches().is_empty() && p.nodes[1].upload_count() == 0);
    assert!(received(&p, &k) >= first);
    p.up = true;
    let back = p.now;
    assert!(
        p.run_until(secs(contact + gap + 120.0), |p| version(p, 0, &k, "update")
            == Some(2)),
        "not finished at the second contact: {:?}",
        p.nodes[0].fetches()
    );
    assert_eq!(verified_version(&p, 0, &k, "update"), Some(2));
    let r = resumed(&p);
    (
        first,
        at(p.now) - at(back),
        r,
        p.nodes[1].counters().file_bytes_sent,
        p.nodes[0].counters().rx.data.bytes,
    )
}

#[test]
fn a_one_second_contact_completes_at_a_later_contact() {
    let (first, second, resumed, sent, got) = two_contacts(0.0, 1.0, u32::MAX, 10.0, 21);
    println!(
        "1 s contact: {first}/4360 blocks; finished {second:.2} s into the next contact; \
         resumed {resumed:?}; data received / file = {:.3}; data sent / file = {:.3} \
         (incl. sent into the cut link)",
        got as f64 / SIZE as f64,
        sent as f64 / SIZE as f64
    );
    assert!(resumed.len() >= 2 && resumed[1] >= first);
    // What arrived was needed: blocks, hash chunks, a few duplicates.
    assert!((got as f64) < 1.1 * SIZE as f64, "{got}");
}

#[test]
fn sixty_percent_loss_completes_at_a_later_contact() {
    let (first, second, resumed, sent, got) = two_contacts(0.6, 60.0, 1000, 10.0, 22);
    println!(
        "60% loss, contact cut at {first}/4360 blocks: finished {second:.2} s into the next \
         contact; resumed {resumed:?}; data sent / file = {:.3} (ideal 1/(1-p) = 2.5); \
         received / file = {:.3}",
        sent as f64 / SIZE as f64,
        got as f64 / SIZE as f64
    );
    assert!(resumed.len() >= 2 && resumed.last() >= Some(&first));
}

#[test]
fn a_restarted_receiver_is_served_again_without_waiting_for_timeouts() {
    let (mut p, k) = update_pair(23);
    assert!(p.run_until(secs(30.0), |p| received(p, &k) > 1000));
    let cut = p.now;
    // The receiver crashes and restarts with its store (and a new node id).
    let cfg = broadside::Config {
        seed: 999,
        ..p.nodes[0].config().clone()
    };
    p.nodes[0] = endpoint(cfg, &[&k], &p.stores[0]);
    let restarted_with = received(&p, &k);
    assert!(p.run_until(secs(60.0), |p| {
        p.events
            .iter()
            .filter(|(n, e)| *n == 0 && matches!(e, Event::TransferStarted { .. }))
            .count()
            >= 2
    }));
    let wait = at(p.now) - at(cut);
    assert!(p.run_until(secs(60.0), |p| version(p, 0, &k, "update") == Some(2)));
    let r = resumed(&p);
    println!(
        "restart: transfer resumed {wait:.2} s after the restart (transfer_timeout 5 s), \
         from {restarted_with} blocks; resumed {r:?}"
    );
    assert!(wait < 2.0, "dead air after a restart: {wait} s");
    assert_eq!(r.last(), Some(&restarted_with));
}

#[test]
fn a_lost_close_is_sent_again_and_the_sender_stops() {
    let (mut p, k) = update_pair(24);
    // Lose the receiver's first Close and its complete vector: the sender
    // does not learn that the file is in and keeps sending.
    let mut closes = 0;
    p.tamper = Some(Box::new(move |from, _, bytes| {
        match Message::parse(bytes) {
            Ok(Message::Close { .. }) if from == 0 => {
                closes += 1;
                closes > 1
            }
            Ok(Message::Ack { vector, .. }) => !vector.is_full(),
            _ => true,
        }
    }));
    assert!(p.run_until(secs(30.0), |p| version(p, 0, &k, "update") == Some(2)));
    let done = p.now;
    let sent_at_commit = p.nodes[1].counters().tx.data.bytes;
    let ok = p.run_until(secs(40.0), |p| {
        p.events.iter().any(|(n, e)| {
            *n == 1
                && matches!(
                    e,
                    Event::OfferClosed {
                        status: Some(broadside::CloseStatus::Complete),
                        ..
                    }
                )
        })
    });
    assert!(ok);
    let stopped = at(p.now) - at(done);
    p.run_until(p.now + core::time::Duration::from_secs(5), |_| false);
    let extra = p.nodes[1].counters().tx.data.bytes - sent_at_commit;
    println!("lost Close: sender told again {stopped:.3} s after the commit; {extra} data bytes after it");
    assert!(stopped < 1.0);
    assert_eq!(p.nodes[1].upload_count(), 0);
    // At most `ack_idle` (0.1 s) of sending at 5 MB/s, not `transfer_timeout` (5 s).
    assert!((extra as f64) <= 5e6 * 0.11, "{extra}");
}

#[test]
fn an_empty_node_gets_wanted_and_subscribed_files() {
    let (k, other) = (key(6), key(7));
    let (mut a, b) = (MemStore::new(), MemStore::new());
    for (kk, name) in [
        (&k, "map"),
        (&k, "poi"),
        (&other, "ads"),
        (&other, "want-me"),
    ] {
        let (c, d) = file_v2(kk, name, 3, 30_000);
        a.insert(c, d);
    }
    let mut p = pair(a, b, &[&k, &other], 25);
    p.nodes[1].subscribe(k.public());
    p.nodes[1].want(broadside::cert::file_id_of(&other.public(), "want-me"));
    assert!(p.run_until(secs(20.0), |p| {
        ["map", "poi"]
            .iter()
            .all(|n| version(p, 1, &k, n) == Some(3))
            && version(p, 1, &other, "want-me") == Some(3)
    }));
    p.run_until(p.now + core::time::Duration::from_secs(3), |_| false);
    assert_eq!(
        version(&p, 1, &other, "ads"),
        None,
        "neither wanted nor subscribed"
    );
    assert_eq!(p.nodes[1].wanted().count(), 0);
    assert_eq!(verified_version(&p, 1, &k, "map"), Some(3));
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let a = two_contacts(0.3, 60.0, 1500, 10.0, 26);
    let b = two_contacts(0.3, 60.0, 1500, 10.0, 26);
    assert_eq!(a.0, b.0);
    assert_eq!(a.1.to_bits(), b.1.to_bits());
    assert_eq!((a.2, a.3, a.4), (b.2, b.3, b.4));
}
