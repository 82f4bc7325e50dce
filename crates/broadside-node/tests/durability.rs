//! Nothing corrupt is ever committed or served: held blocks changed on
//! disk while a node is down (a flipped byte, or bytes lost to a power cut
//! that left the receive vector), a current version rotten on disk, and
//! what killed publishers leave, which a serving node removes.

mod common;
use broadside::{ProviderKey, TrustedKeys};
use broadside_node::store::DiskStore;
use common::*;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZE: usize = 3 << 20;

/// The one partial's files in `store`, if any.
fn partial_data(store: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(store.join(".broadside/partial"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "data"))
}

fn held_blocks(store: &Path) -> u32 {
    DiskStore::open_read_only(store)
        .unwrap()
        .partials()
        .first()
        .map_or(0, |p| p.received_blocks)
}

/// The current version of `name` in `store`, with whether its content
/// verifies against its certificate.
fn current(store: &Path, name: &str) -> Option<(u16, bool)> {
    let s = DiskStore::open_read_only(store).ok()?;
    let c = s.current(name)?;
    let ok = s
        .load_one(name, &TrustedKeys::new([key().public()]))
        .is_ok();
    Some((c.version(), ok))
}

/// Stores `a` and `b` under `d`: A holds "doc" at version 2, B at
/// `b_version`, both of `SIZE` bytes and signed by `key()`.
fn a_at_v2_and_b_at(d: &Path, b_version: u16) -> (PathBuf, PathBuf, ProviderKey) {
    let (sa, sb, scratch) = (d.join("a"), d.join("b"), d.join("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    let k = key();
    publish_to(&sa, &scratch, &k, "doc", 2, SIZE);
    publish_to(&sb, &scratch, &k, "doc", b_version, SIZE);
    (sa, sb, k)
}

/// B (holding v1) fetches v2 from A until it holds a third of it, stops,
/// has `damage` applied to its partial data file while down, and restarts:
/// v1 stays current (and verifies) until a v2 that verifies replaces it.
fn resume_after(damage: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let (sa, sb, k) = a_at_v2_and_b_at(dir.path(), 1);
    let (pa, pb) = (free_port(), free_port());
    let mut slow = options(sa.clone(), pa, pb, &k, 1);
    slow.config.send_rate = 1_000_000;
    let a = spawn(slow);
    let b = spawn(options(sb.clone(), pb, pa, &k, 2));
    let total = SIZE.div_ceil(2294) as u32;
    let started = wait_for(Duration::from_secs(30), || held_blocks(&sb) * 3 > total);
    b.stop();
    a.stop();
    assert!(started, "transfer never got going");
    assert!(held_blocks(&sb) < total);
    damage(&partial_data(&sb).expect("a partial data file"));

    let mut fast = options(sa.clone(), pa, pb, &k, 3);
    fast.config.send_rate = 4_000_000;
    let a = spawn(fast);
    let b = spawn(options(sb.clone(), pb, pa, &k, 4));
    let mut seen = Vec::new();
    let done = wait_for(Duration::from_secs(60), || {
        let c = current(&sb, "doc");
        seen.extend(c);
        c == Some((2, true))
    });
    let nb = b.stop();
    a.stop();
    assert!(done, "v2 never committed; seen {seen:?}");
    assert!(
        seen.iter().all(|&(v, ok)| ok && (v == 1 || v == 2)),
        "a current version failed verification: {seen:?}"
    );
    // The damaged partial was thrown away and fetched again whole.
    let rx = nb.endpoint().counters().rx.data.packets;
    assert!(rx >= u64::from(total), "{rx} blocks received of {total}");
    assert_eq!(verified_versions(&sb, &k)["doc"], 2);
    assert!(partial_data(&sb).is_none());
}

#[test]
fn a_held_block_flipped_while_down_is_never_committed_and_the_file_completes() {
    resume_after(|data| {
        // Block 0 is held: blocks arrive in order.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(data)
            .unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, 100).unwrap();
        f.write_all_at(&[b[0] ^ 0x01], 100).unwrap();
        f.sync_all().unwrap();
    });
}

#[test]
fn data_lost_to_a_power_cut_under_a_durable_vector_is_never_committed() {
    // The vector survived, the blocks it names did not: the file reads as
    // zeros (as a file extended but never written back does).
    resume_after(|data| {
        let f = std::fs::OpenOptions::new().write(true).open(data).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(0).unwrap();
        f.set_len(len).unwrap();
        f.sync_all().unwrap();
    });
}

#[test]
fn a_current_version_rotten_on_disk_is_quarantined_and_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let (sa, sb, k) = a_at_v2_and_b_at(dir.path(), 2);
    let content = sb.join(".broadside/current/doc/content");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&content)
        .unwrap();
    f.seek(SeekFrom::Start(5000)).unwrap();
    f.write_all(b"rot").unwrap();
    drop(f);
    let (pa, pb) = (free_port(), free_port());
    let a = spawn(options(sa.clone(), pa, pb, &k, 1));
    let b = spawn(options(sb.clone(), pb, pa, &k, 2));
    // Quarantined at once: not current, so never served.
    let quarantine = sb.join(".broadside/quarantine");
    assert!(quarantine.is_dir());
    let done = wait_for(Duration::from_secs(30), || {
        current(&sb, "doc") == Some((2, true))
    });
    let nb = b.stop();
    a.stop();
    assert!(done, "the rotten version was not fetched again");
    assert_eq!(nb.endpoint().counters().tx.data.packets, 0);
    assert_eq!(verified_versions(&sb, &k)["doc"], 2);
    drop(nb);
    // Removed at the next open.
    drop(DiskStore::open(&sb).unwrap());
    assert!(!quarantine.exists());
}

/// Bytes of regular files under `dir`.
fn disk_use(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.filter_map(|e| e.ok())
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => disk_use(&e.path()),
                Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                _ => 0,
            })
            .sum()
    })
}

/// Publishers' copies and version directories not current, in `store`.
fn leftovers(store: &Path) -> Vec<String> {
    let meta = store.join(".broadside");
    let current = DiskStore::open_read_only(store)
        .unwrap()
        .current_instances();
    let names = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect()
    };
    let copies = names(&meta)
        .into_iter()
        .filter(|n| n.starts_with(".publish-"));
    let versions = names(&meta.join("versions"))
        .into_iter()
        .filter(|id| !current.values().any(|c| c == id));
    copies.chain(versions).collect()
}

#[test]
fn what_killed_publishers_leave_is_removed_at_the_next_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (sa, scratch) = (d.join("a"), d.join("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    let k = key();
    publish_to(&sa, &scratch, &k, "doc", 1, SIZE);
    let before = disk_use(&sa);
    let mut opts = options(sa.clone(), free_port(), free_port(), &k, 1);
    opts.rescan_interval = Duration::from_millis(200);
    let a = spawn(opts);
    // A publisher killed mid-copy (its copy's lock went with it), and one
    // killed after it moved its content into a version directory but
    // before the swap (no certificate yet: incomplete).
    let meta = sa.join(".broadside");
    std::fs::write(meta.join(".publish-999999-doc"), vec![7u8; SIZE]).unwrap();
    let stale = meta.join("versions/00112233445566778899aabbccddeeff00112233");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("content"), vec![7u8; SIZE]).unwrap();
    // And real publishers of 40 MB, killed while they copy and hash.
    let big = scratch.join("big");
    std::fs::write(&big, vec![1u8; 40 << 20]).unwrap();
    let key_file = d.join("key");
    std::fs::write(&key_file, format!("{}\n", hex::encode(k.seed()))).unwrap();
    for ms in [5, 20, 50] {
        let mut p = std::process::Command::new(BIN)
            .args(["publish", big.to_str().unwrap(), "--store"])
            .arg(&sa)
            .args(["--key", key_file.to_str().unwrap()])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        p.kill().unwrap();
        p.wait().unwrap();
    }
    let clean = wait_for(Duration::from_secs(10), || leftovers(&sa).is_empty());
    let left = leftovers(&sa);
    a.stop();
    assert!(clean, "left behind: {left:?}");
    println!(
        "store {} bytes before, {} after the kills and a rescan",
        before,
        disk_use(&sa)
    );
}
