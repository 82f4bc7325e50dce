//! Broadside sender hot path: datagrams per second out of one endpoint,
//! unpaced, reading blocks from an in-memory store.
//!
//! Prints, measured side by side in one run:
//! - `poll_transmits` into one reused batch buffer against `poll_transmit`
//!   (a fresh allocation per datagram);
//! - 200 uploads to 200 peers against a single upload: the upload to serve
//!   is chosen without a sort per datagram, so the ratio stays near 1;
//! - both against copying the same bytes with `memcpy` (the ceiling).
//!
//! `cargo bench -p broadside --bench broadside_send`

use broadside::merkle::{Tree, TreeBuilder};
use broadside::wire::Message;
use broadside::{
    Batch, BitVec, Certificate, Config, Endpoint, Instant, MemStore, ProviderKey, TrustedKeys,
};
use std::time::Instant as Wall;

const SIZE: usize = 10 << 20;
const DATAGRAMS: usize = 200_000;
const BLOCK: u32 = 2294;

/// Wants that started the uploads: (peer, datagram).
type Requests = Vec<(u16, Vec<u8>)>;

/// An endpoint serving `wants_per_peer` uploads to each of `peers`, its
/// store, and the Wants that started them.
fn setup(peers: u16, wants_per_peer: u32) -> (Endpoint<u16>, MemStore, Requests) {
    let key = ProviderKey::from_seed([3; 32]);
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 31 % 251) as u8).collect();
    let mut b = TreeBuilder::new(BLOCK);
    b.update(&data);
    let (size, hash, leaves) = b.finish();
    let root = Tree::new(leaves, BLOCK)
        .map(|t| t.root())
        .unwrap_or_default();
    let cert = Certificate::issue_v2(&key, "bench", 1, size, hash, BLOCK, root).unwrap();
    let mut store = MemStore::new();
    store.insert(cert.clone(), data);
    let cfg = Config {
        send_rate: 0,
        max_peers: 256,
        uploads_per_peer: wants_per_peer as usize,
        // No receiver answers here: measure the sender, not its window.
        window: 0,
        ..Config::default()
    };
    let mut ep = Endpoint::new(
        cfg,
        TrustedKeys::new([key.public()]),
        vec![cert.clone()],
        Instant::ZERO,
    )
    .unwrap();
    let now = Instant::ZERO;
    let mut secrets = Vec::new();
    for p in 0..peers {
        // Address validation: challenge the node, echo its answer.
        let hello = Message::Token {
            echo: [0; 16],
            token: [1; 16],
        }
        .to_vec();
        ep.handle_datagram(now, p, &hello, &mut store);
        let mut token = None;
        while let Some(t) = ep.poll_transmit(now, &mut store) {
            if let Ok(Message::Token { token: t, .. }) = Message::parse(&t.payload) {
                token = Some(t);
            }
        }
        // The answer echoed is the secret this peer's Wants carry.
        let echo = Message::Token {
            echo: token.unwrap(),
            token: [1; 16],
        }
        .to_vec();
        ep.handle_datagram(now, p, &echo, &mut store);
        secrets.push(token.unwrap());
    }
    while ep.poll_transmit(now, &mut store).is_some() {}
    let mut wants = Vec::new();
    for p in 0..peers {
        // One Want per segment of 4096 blocks (64 chunk bits in front).
        for w in 0..wants_per_peer {
            let want = Message::Want {
                auth: secrets[usize::from(p)],
                transfer: u32::from(p) * 100 + w,
                instance: cert.instance_id(),
                block_size: BLOCK as u16,
                segment: w * 4096,
                vector: BitVec::new(4096 + 64),
            }
            .to_vec();
            ep.handle_datagram(now, p, &want, &mut store);
            // An ack of the transfer lifts the 3x bound of a new peer.
            let ack = Message::Ack {
                transfer: u32::from(p) * 100 + w,
                vector: BitVec::new(4096 + 64),
            }
            .to_vec();
            ep.handle_datagram(now, p, &ack, &mut store);
            wants.push((p, want));
        }
    }
    assert_eq!(
        ep.upload_count(),
        usize::from(peers) * wants_per_peer as usize
    );
    (ep, store, wants)
}

/// Datagrams per second, and bytes per datagram.
fn run(peers: u16, wants: u32, batched: bool) -> (f64, f64) {
    let (mut ep, mut store, requests) = setup(peers, wants);
    let mut batch = Batch::new();
    let mut bytes = 0usize;
    let t = Wall::now();
    let mut n = 0;
    while n < DATAGRAMS {
        let got = if batched {
            batch.clear();
            let k = ep.poll_transmits(Instant::ZERO, &mut store, &mut batch, 64);
            bytes += batch.buf.len();
            k
        } else {
            ep.poll_transmit(Instant::ZERO, &mut store).map_or(0, |tx| {
                bytes += tx.payload.len();
                1
            })
        };
        n += got;
        if got == 0 {
            // Every pass has ended: the receivers (which got nothing) ask
            // again with their empty vectors, as their idle timers would.
            for (p, w) in &requests {
                ep.handle_datagram(Instant::ZERO, *p, w, &mut store);
            }
        }
    }
    (
        n as f64 / t.elapsed().as_secs_f64(),
        bytes as f64 / n as f64,
    )
}

fn memcpy_rate(len: usize) -> f64 {
    let src: Vec<u8> = (0..SIZE).map(|i| i as u8).collect();
    let mut dst = vec![0u8; len];
    let t = Wall::now();
    for i in 0..DATAGRAMS {
        let off = (i * len) % (SIZE - len);
        dst.copy_from_slice(&src[off..off + len]);
        std::hint::black_box(&dst);
    }
    DATAGRAMS as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let (single, len) = run(1, 1, false);
    let (batch, _) = run(1, 1, true);
    let (many, _) = run(200, 1, true);
    let copy = memcpy_rate(len as usize);
    let mb = |r: f64| r * len / 1e6;
    println!("broadside sender, {len:.0}-byte datagrams, {DATAGRAMS} each:");
    println!(
        "  poll_transmit (alloc)     {:>9.0} dgram/s {:>7.0} MB/s",
        single,
        mb(single)
    );
    println!(
        "  poll_transmits (batch)    {:>9.0} dgram/s {:>7.0} MB/s",
        batch,
        mb(batch)
    );
    println!(
        "  batch, 200 uploads/peers {:>7.0} dgram/s {:>7.0} MB/s",
        many,
        mb(many)
    );
    println!(
        "  memcpy of the same bytes  {:>9.0} dgram/s {:>7.0} MB/s",
        copy,
        mb(copy)
    );
    println!(
        "ratios: batch/alloc {:.2}, 200 uploads/1 upload {:.2}, batch/memcpy {:.3}",
        batch / single,
        many / batch,
        batch / copy
    );
}
