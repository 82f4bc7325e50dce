//! Shared fixtures for the integration tests: keys, deterministic file
//! contents, endpoints over a [`broadside::sim::Pair`].
#![allow(dead_code)]

use broadside::sim::{Addr, Pair};
use broadside::{
    Certificate, Config, ContentHasher, Endpoint, Event, Instant, MemStore, ProviderKey,
    TrustedKeys,
};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub fn key(n: u8) -> ProviderKey {
    ProviderKey::from_seed([n; 32])
}

pub fn bytes(seed: u64, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// A signed file whose content depends on (name, version).
pub fn file(k: &ProviderKey, name: &str, version: u16, size: usize) -> (Certificate, Vec<u8>) {
    let seed = ContentHasher::new();
    let mut h = seed;
    h.update(name.as_bytes());
    let s = u64::from_le_bytes(h.finish().0[..8].try_into().unwrap()) ^ u64::from(version);
    let data = bytes(s, size);
    let mut ch = ContentHasher::new();
    ch.update(&data);
    (
        Certificate::issue(k, name, version, data.len() as u64, ch.finish()).unwrap(),
        data,
    )
}

/// As [`file`], with a v2 certificate (a block tree at the default block size).
pub fn file_v2(k: &ProviderKey, name: &str, version: u16, size: usize) -> (Certificate, Vec<u8>) {
    let (_, data) = file(k, name, version, size);
    let block = 2304 - broadside::wire::DATA_HEADER_LEN as u32;
    let mut b = broadside::merkle::TreeBuilder::new(block);
    b.update(&data);
    let (size, hash, leaves) = b.finish();
    let root = broadside::merkle::Tree::new(leaves, block).unwrap().root();
    (
        Certificate::issue_v2(k, name, version, size, hash, block, root).unwrap(),
        data,
    )
}

/// Simulated seconds of an instant.
pub fn at(t: Instant) -> f64 {
    t.as_micros() as f64 / 1e6
}

/// Whether node `node` committed a file.
pub fn updated(p: &Pair, node: broadside::sim::Addr) -> bool {
    p.events
        .iter()
        .any(|(n, e)| *n == node && matches!(e, Event::FileUpdated { .. }))
}

pub fn config(seed: u64) -> Config {
    Config {
        seed,
        send_rate: 20_000_000,
        ..Config::default()
    }
}

pub fn endpoint(cfg: Config, trusted: &[&ProviderKey], store: &MemStore) -> Endpoint<Addr> {
    let t = TrustedKeys::new(trusted.iter().map(|k| k.public()));
    Endpoint::new(cfg, t, store.certificates(), Instant::ZERO).unwrap()
}

pub fn pair(a: MemStore, b: MemStore, trusted: &[&ProviderKey], seed: u64) -> Pair {
    let na = endpoint(config(seed * 2 + 1), trusted, &a);
    let nb = endpoint(config(seed * 2 + 2), trusted, &b);
    Pair::new([na, nb], [a, b], seed)
}

pub fn secs(s: f64) -> Instant {
    Instant::from_micros((s * 1e6) as u64)
}

/// Version of `name` held by node `i` (certificate only; cheap).
pub fn version(p: &Pair, i: usize, k: &ProviderKey, name: &str) -> Option<u16> {
    let id = broadside::cert::file_id_of(&k.public(), name);
    p.stores[i].get(&id).map(|(c, _)| c.version())
}

/// Version of `name` held by node `i`, with its content verified against the certificate.
pub fn verified_version(p: &Pair, i: usize, k: &ProviderKey, name: &str) -> Option<u16> {
    let id = broadside::cert::file_id_of(&k.public(), name);
    let (cert, data) = p.stores[i].get(&id)?;
    let mut h = ContentHasher::new();
    h.update(data);
    assert_eq!(
        h.finish(),
        cert.content_hash(),
        "stored content of {name} does not match its certificate"
    );
    assert_eq!(data.len() as u64, cert.size());
    Some(cert.version())
}

pub fn rejections(p: &Pair, node: Addr) -> Vec<broadside::RejectReason> {
    p.events
        .iter()
        .filter(|(n, _)| *n == node)
        .filter_map(|(_, e)| match e {
            Event::Rejected { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// Runs the address-validation exchange between `ep` and a peer at `addr`
/// (which challenges `ep` and echoes its answer), as a real peer would;
/// drains what `ep` sent; returns whether `ep` now keeps state for the peer.
pub fn validate<A: broadside::validate::PeerAddr>(
    ep: &mut Endpoint<A>,
    store: &mut MemStore,
    addr: A,
) -> bool {
    session(ep, store, addr).is_some()
}

/// Validates `addr` with `ep` as [`validate`] does, and returns the
/// session secret its Wants must carry.
pub fn session<A: broadside::validate::PeerAddr>(
    ep: &mut Endpoint<A>,
    store: &mut MemStore,
    addr: A,
) -> Option<[u8; 16]> {
    use broadside::wire::Message;
    let challenge = [1; 16];
    let hello = Message::Token {
        echo: [0; 16],
        token: challenge,
    }
    .to_vec();
    ep.handle_datagram(Instant::ZERO, addr.clone(), &hello, store);
    let mut answer = None;
    while let Some(t) = ep.poll_transmit(Instant::ZERO, store) {
        if let Ok(Message::Token { token, .. }) = Message::parse(&t.payload) {
            answer = Some(token);
        }
    }
    let token = answer.expect("an answer to a challenge");
    let reply = Message::Token {
        echo: token,
        token: challenge,
    }
    .to_vec();
    ep.handle_datagram(Instant::ZERO, addr.clone(), &reply, store);
    while ep.poll_transmit(Instant::ZERO, store).is_some() {}
    while ep.poll_event().is_some() {}
    ep.peers().iter().any(|p| p.peer == addr).then_some(token)
}

/// A Filters packet of session `session` whose file filter matches
/// everything: a responder answering it would list every file.
pub fn match_all_filters(session: u32) -> Vec<u8> {
    broadside::wire::Message::Filters {
        session,
        round: 0,
        rounds: 1,
        salt: 1,
        k: 12,
        file_filter: &[0xff; 1143],
        version_filter: &[0; 1143],
    }
    .to_vec()
}

/// Files of `update_net`: 4360 blocks of 2294 bytes, a 10 MB file.
pub const UPDATE_BLOCKS: u32 = 4360;
pub const UPDATE_SIZE: usize = UPDATE_BLOCKS as usize * 2294;

/// Node 0 holds version 1 of "update"; nodes 1..=holders hold version 2
/// (v2 certificates, provider key `key(key_seed)`); `tweak` adjusts each
/// node's config. The network logs every packet.
pub fn update_net(
    key_seed: u8,
    holders: usize,
    seed: u64,
    tweak: impl Fn(usize, Config) -> Config,
) -> (Pair, ProviderKey) {
    let k = key(key_seed);
    let mut nodes = Vec::new();
    let mut stores = Vec::new();
    for i in 0..=holders {
        let mut s = MemStore::new();
        let (c, d) = file_v2(&k, "update", if i == 0 { 1 } else { 2 }, UPDATE_SIZE);
        s.insert(c, d);
        nodes.push(endpoint(tweak(i, config(seed * 10 + i as u64)), &[&k], &s));
        stores.push(s);
    }
    let mut p = Pair::new(nodes, stores, seed);
    p.log = Some(Vec::new());
    (p, k)
}

/// Whether node 0 of `update_net` holds version 2 of "update".
pub fn update_done(p: &Pair, k: &ProviderKey) -> bool {
    version(p, 0, k, "update") == Some(2)
}
