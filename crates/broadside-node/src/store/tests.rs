//! Tests of the store directory: publish, load, vectors, recovery, commits.

use super::*;

fn trusted(k: &ProviderKey) -> TrustedKeys {
    TrustedKeys::new([k.public()])
}

#[test]
fn publish_load_and_version_increments() {
    let dir = tempfile::tempdir().unwrap();
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.path().join("src.bin");
    fs::write(&src, b"hello").unwrap();
    let mut s = DiskStore::open(&dir.path().join("store")).unwrap();
    assert_eq!(s.publish(&k, &src, "greeting").unwrap().version(), 1);
    fs::write(&src, b"hello again").unwrap();
    let c2 = s.publish(&k, &src, "greeting").unwrap();
    assert_eq!(c2.version(), 2);
    let (certs, issues) = s.load(&trusted(&k)).unwrap();
    assert_eq!(certs, vec![c2.clone()]);
    assert!(issues.is_empty());
    assert_eq!(fs::read(s.root().join("greeting")).unwrap(), b"hello again");
    assert!(s.partials().is_empty());
    assert!(matches!(
        s.publish(&k, &src, "../x"),
        Err(NodeError::Usage(_))
    ));
    assert!(matches!(
        s.publish(&ProviderKey::from_seed([2; 32]), &src, "greeting"),
        Err(NodeError::Usage(_))
    ));
}

#[test]
fn tree_leaves_are_kept_at_publish_and_rebuilt_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.path().join("src.bin");
    fs::write(&src, vec![7u8; 10_000]).unwrap();
    let root = dir.path().join("store");
    let mut s = DiskStore::open(&root).unwrap();
    let c = s.publish_blocks(&k, &src, "map", 1024).unwrap();
    let tree_root = |l: Vec<Hash>| Tree::new(l, 1024).map(|t| t.root());
    let leaves = s.tree_leaves(&c).expect("kept at publish");
    assert_eq!(leaves.len(), 10);
    assert_eq!(tree_root(leaves), c.tree().map(|t| t.1));
    // Lost (or received: commit does not write it): a serving store
    // writes it when it opens and verifies the file.
    let cache = s.dirs.version_dir(&c.instance_id()).join(LEAVES);
    fs::remove_file(&cache).unwrap();
    assert_eq!(s.tree_leaves(&c), None);
    drop(s);
    let read_only = DiskStore::open_read_only(&root).unwrap();
    read_only.load_one("map", &trusted(&k)).unwrap();
    assert!(!cache.exists(), "a read-only open writes nothing");
    let mut s = DiskStore::open(&root).unwrap();
    s.load(&trusted(&k)).unwrap();
    assert_eq!(tree_root(s.tree_leaves(&c).unwrap()), c.tree().map(|t| t.1));
    // A cut cache is no cache.
    fs::write(&cache, [0u8; 33]).unwrap();
    assert_eq!(s.tree_leaves(&c), None);
}

#[test]
fn tampered_or_untrusted_files_are_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.path().join("src.bin");
    fs::write(&src, b"content").unwrap();
    let mut s = DiskStore::open(&dir.path().join("store")).unwrap();
    s.publish(&k, &src, "a").unwrap();
    s.publish(&k, &src, "b").unwrap();
    fs::write(s.root().join("b"), b"CONTENT").unwrap();
    let read_only = DiskStore::open_read_only(s.root()).unwrap();
    let e = read_only.load_one("b", &trusted(&k)).unwrap_err();
    assert!(
        e.problem.contains("not served") && e.refetch.is_none(),
        "{e:?}"
    );
    assert!(read_only.current("b").is_some(), "a reader moved nothing");
    // The serving store takes it out of service, to be fetched again.
    let (certs, issues) = s.load(&trusted(&k)).unwrap();
    assert_eq!(
        certs.iter().map(|c| c.name()).collect::<Vec<_>>(),
        vec!["a"]
    );
    let p = &issues[0].problem;
    assert!(p.contains("fails verification (content hash"), "{p}");
    assert!(p.contains("quarantine"), "{p}");
    assert!(issues[0].refetch.is_some());
    assert!(s.current("b").is_none());
    let (certs, issues) = s.load(&TrustedKeys::default()).unwrap();
    assert!(certs.is_empty() && issues.len() == 1);
}

fn cert_of(k: &ProviderKey, name: &str, version: u16, content: &[u8]) -> Certificate {
    let mut h = ContentHasher::new();
    h.update(content);
    Certificate::issue(k, name, version, content.len() as u64, h.finish()).unwrap()
}

fn one_block(n: u32) -> Partial {
    let mut v = BitVec::new(3);
    for i in 0..n {
        v.set(i);
    }
    Partial {
        block_size: 1000,
        received: v,
    }
}

#[test]
fn vectors_are_written_on_flush_or_every_n_blocks_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let k = ProviderKey::from_seed([1; 32]);
    let content = vec![7u8; 3000];
    let cert = cert_of(&k, "f", 3, &content);
    {
        let mut s = DiskStore::open(&root).unwrap();
        s.set_persist_blocks(2);
        s.partial_write(&cert, 0, &content[..1000]).unwrap();
        s.partial_persist(&cert, &one_block(1)).unwrap();
        // Held in memory (and reported to the endpoint), not yet on disk.
        assert_eq!(
            s.partial_load(&cert)
                .unwrap()
                .unwrap()
                .received
                .count_ones(),
            1
        );
        assert_eq!(s.partials()[0].received_blocks, 0);
        s.flush_vectors().unwrap();
        s.wait_background();
        assert_eq!(s.partials()[0].received_blocks, 1);
        s.partial_write(&cert, 1000, &content[1000..]).unwrap();
        s.partial_persist(&cert, &one_block(2)).unwrap();
        assert_eq!(s.partials()[0].received_blocks, 1, "one new block: not due");
        s.partial_persist(&cert, &one_block(3)).unwrap();
        s.wait_background();
        assert_eq!(s.partials()[0].received_blocks, 3, "two new blocks: due");
        assert!(s.partial_write(&cert, 2500, &content[..1000]).is_err());
    }
    let mut s = DiskStore::open(&root).unwrap();
    let p = s.partial_load(&cert).unwrap().unwrap();
    assert_eq!((p.block_size, p.received.count_ones()), (1000, 3));
    s.partial_commit(&cert).unwrap();
    assert_eq!(fs::read(root.join("f")).unwrap(), content);
    assert_eq!(s.current("f"), Some(cert.clone()));
    assert!(s.partials().is_empty());
    assert_eq!(s.load(&trusted(&k)).unwrap().0, vec![cert]);
}

#[test]
fn a_complete_version_left_by_a_crash_before_the_swap_is_made_current() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.path().join("src");
    fs::write(&src, b"one").unwrap();
    let c1 = DiskStore::open(&root)
        .unwrap()
        .publish(&k, &src, "f")
        .unwrap();
    // A crash after version 2's directory was complete, before the swap.
    let c2 = cert_of(&k, "f", 2, b"two");
    let v2 = root
        .join(".broadside/versions")
        .join(c2.instance_id().to_hex());
    fs::create_dir(&v2).unwrap();
    fs::write(v2.join("cert"), c2.encoded()).unwrap();
    fs::write(v2.join("content"), b"two").unwrap();
    // And one whose content never arrived: dropped.
    let c3 = cert_of(&k, "f", 3, b"three");
    let v3 = root
        .join(".broadside/versions")
        .join(c3.instance_id().to_hex());
    fs::create_dir(&v3).unwrap();
    fs::write(v3.join("cert"), c3.encoded()).unwrap();
    assert_eq!(
        DiskStore::open_read_only(&root).unwrap().current("f"),
        Some(c1.clone())
    );
    let s = DiskStore::open(&root).unwrap();
    assert_eq!(s.current("f"), Some(c2.clone()));
    assert_eq!(fs::read(root.join("f")).unwrap(), b"two");
    let left = file_names(&root.join(".broadside/versions"));
    assert_eq!(
        left,
        vec![c2.instance_id().to_hex()],
        "superseded and incomplete removed"
    );
}

#[test]
fn recovery_removes_temporary_files_orphan_copies_and_superseded_partials() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.path().join("src");
    fs::write(&src, b"v1").unwrap();
    let mut s = DiskStore::open(&root).unwrap();
    s.publish(&k, &src, "f").unwrap();
    fs::write(&src, b"v2").unwrap();
    s.publish(&k, &src, "f").unwrap();
    // An old partial of version 1 (superseded) and a live one of version 3.
    // (One of version 2 would be a fork, kept if it wins: see
    // `Certificate::supersedes`.)
    let old = cert_of(&k, "f", 1, b"xx");
    s.partial_write(&old, 0, b"x").unwrap();
    let new = cert_of(&k, "f", 3, b"yyy");
    s.partial_write(&new, 0, b"y").unwrap();
    assert_eq!(s.partials().len(), 1, "superseded partial not reported");
    drop(s);
    let meta = root.join(".broadside");
    fs::write(root.join(".tmp-1-2-w"), b"junk").unwrap();
    fs::write(meta.join("partial/.tmp-1-3-w"), b"junk").unwrap();
    fs::write(meta.join(".publish-99-f"), b"orphan").unwrap();
    let held = meta.join(".publish-98-g");
    let live = File::create(&held).unwrap();
    live.lock().unwrap();
    // The lock is per open file: recovery's own open sees it held.
    let s = DiskStore::open(&root).unwrap();
    assert!(!root.join(".tmp-1-2-w").exists());
    assert!(!meta.join("partial/.tmp-1-3-w").exists());
    assert!(!meta.join(".publish-99-f").exists());
    assert!(held.exists(), "a live publisher's copy is kept");
    let left = file_names(&meta.join("partial"));
    assert!(
        left.iter()
            .all(|n| n.starts_with(&new.instance_id().to_hex())),
        "{left:?}"
    );
    assert_eq!(s.partials().len(), 1);
}

#[test]
fn a_flat_layout_store_is_moved_into_version_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let k = ProviderKey::from_seed([1; 32]);
    fs::create_dir_all(&root).unwrap();
    let c = cert_of(&k, "old", 4, b"flat");
    fs::write(root.join("old"), b"flat").unwrap();
    fs::write(root.join("old.bscert"), c.encoded()).unwrap();
    let mut s = DiskStore::open(&root).unwrap();
    assert!(fs::symlink_metadata(root.join("old")).unwrap().is_symlink());
    assert_eq!(s.load(&trusted(&k)).unwrap().0, vec![c]);
    assert_eq!(fs::read(root.join("old")).unwrap(), b"flat");
}

/// Waits for the background commits begun so far.
fn finished(s: &mut DiskStore) -> Vec<(Certificate, Result<(), StorageError>)> {
    let mut done = Vec::new();
    while s.commits_pending() > 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        done.extend(s.finished_commits());
    }
    done
}

/// A store in `dir` serving "f" at version 1 ("old"), and the certificate
/// of a version 2 ("received") for it to receive.
fn serving_old(dir: &Path) -> (PathBuf, DiskStore, Certificate, Certificate) {
    let root = dir.join("store");
    let k = ProviderKey::from_seed([1; 32]);
    let src = dir.join("src");
    fs::write(&src, b"old").unwrap();
    let mut s = DiskStore::open(&root).unwrap();
    let old = s.publish(&k, &src, "f").unwrap();
    let new = cert_of(&k, "f", 2, b"received");
    (root, s, old, new)
}

#[test]
fn a_background_commit_makes_the_version_current_and_removes_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let (root, mut s, old, new) = serving_old(dir.path());
    s.partial_write(&new, 0, b"received").unwrap();
    assert_eq!(s.partial_commit_begin(&new), Ok(false));
    assert_eq!(s.commits_pending(), 1);
    assert_eq!(finished(&mut s), vec![(new.clone(), Ok(()))]);
    assert_eq!(fs::read(root.join("f")).unwrap(), b"received");
    assert_eq!(s.current("f"), Some(new.clone()));
    assert!(s.partials().is_empty());
    drop(s);
    // Dropping the store waited for the removal of the superseded version.
    let versions = root.join(".broadside").join("versions");
    assert!(!versions.join(old.instance_id().to_hex()).exists());
    assert!(versions.join(new.instance_id().to_hex()).is_dir());
}

#[test]
fn a_commit_of_bytes_that_fail_verification_keeps_the_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let (root, mut s, old, new) = serving_old(dir.path());
    // What a flipped bit on disk, or a power cut, leaves under the vector.
    s.partial_write(&new, 0, b"receiveD").unwrap();
    s.partial_persist(&new, &one_block(1)).unwrap();
    assert_eq!(s.partial_commit_begin(&new), Ok(false));
    let done = finished(&mut s);
    let e = done[0].1.clone().unwrap_err().0;
    assert!(e.contains("fails verification (content hash"), "{e}");
    assert_eq!(s.current("f"), Some(old.clone()));
    assert_eq!(fs::read(root.join("f")).unwrap(), b"old");
    assert!(s.partials().is_empty(), "the bad partial is discarded");
    assert_eq!(s.partial_load(&new), Ok(None));
}

/// A serving store with version 1 of "f" received as a partial, while
/// a publisher put its own version 1 of "f" in the same store.
fn partial_overtaken_by_a_publish(dir: &Path) -> (PathBuf, DiskStore, Certificate) {
    let root = dir.join("store");
    let k = ProviderKey::from_seed([1; 32]);
    let mut server = DiskStore::open(&root).unwrap();
    let incoming = cert_of(&k, "f", 1, b"received");
    server.partial_write(&incoming, 0, b"received").unwrap();
    let src = dir.join("src");
    fs::write(&src, b"published").unwrap();
    let mut publisher = DiskStore::open_for_publish(&root).unwrap();
    assert_eq!(publisher.publish(&k, &src, "f").unwrap().version(), 1);
    (root, server, incoming)
}

/// Two version 1s of one file are a fork: the commit keeps the one that
/// supersedes the other (the greater instance id), as every node does.
#[test]
fn a_background_commit_of_a_version_published_meanwhile_follows_the_fork_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (root, mut server, incoming) = partial_overtaken_by_a_publish(dir.path());
    let published = server.current("f").unwrap();
    assert_eq!(server.partial_commit_begin(&incoming), Ok(false));
    let done = finished(&mut server);
    assert_eq!(done.len(), 1);
    if published.supersedes(&incoming) {
        assert!(done[0]
            .1
            .as_ref()
            .is_err_and(|e| e.0.contains("superseded")));
        assert_eq!(fs::read(root.join("f")).unwrap(), b"published");
    } else {
        assert!(done[0].1.is_ok(), "{:?}", done[0].1);
        assert_eq!(fs::read(root.join("f")).unwrap(), b"received");
    }
    assert!(server.partials().is_empty());
}

#[test]
fn a_commit_of_a_version_published_meanwhile_follows_the_fork_rule() {
    let dir = tempfile::tempdir().unwrap();
    let (root, mut server, incoming) = partial_overtaken_by_a_publish(dir.path());
    let published = server.current("f").unwrap();
    let kept: &[u8] = if published.supersedes(&incoming) {
        assert!(server.partial_commit(&incoming).is_err());
        b"published"
    } else {
        assert!(server.partial_commit(&incoming).is_ok());
        b"received"
    };
    assert_eq!(fs::read(root.join("f")).unwrap(), kept);
    assert!(server.serving_pid().is_some());
    drop(server);
    assert!(DiskStore::open_read_only(&root)
        .unwrap()
        .serving_pid()
        .is_none());
}
