//! The binary as a daemon: signals, config file and flag precedence, bad
//! config errors, `--create`, a closed stdout, publishing while serving,
//! and kill -9 of publish and serve at random points (the store is
//! consistent at rest, and after recovery no temporary file is left).
//!
//! `BROADSIDE_CRASH_CYCLES=100` runs the long crash mode (default 8 each).

mod common;
use broadside::{ContentHasher, ProviderKey};
use broadside_node::store::DiskStore;
use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Setup {
    _dir: tempfile::TempDir,
    d: PathBuf,
    key: ProviderKey,
    key_file: PathBuf,
    trust: String,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let key_file = d.join("key");
    let out = cli(&["keygen", "--out", key_file.to_str().unwrap()]);
    assert!(out.status.success());
    let trust = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let key = broadside_node::keys::read_secret(&key_file).unwrap();
    std::fs::create_dir_all(d.join("scratch")).unwrap();
    Setup {
        _dir: dir,
        d,
        key,
        key_file,
        trust,
    }
}

fn serve(store: &Path, extra: &[&str], log: &Path) -> Child {
    Command::new(BIN)
        .arg("serve")
        .arg(store)
        .args(["--bind", "127.0.0.1:0", "--beacon-to", "127.0.0.1:9"])
        .args(["--status-interval", "50 ms", "--log-level", "debug"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn status(store: &Path) -> serde_json::Value {
    let out = cli(&["status", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < within {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

#[test]
fn sigterm_and_sigint_stop_cleanly_with_exit_0_and_status_shows_not_running() {
    let s = setup();
    for (i, sig) in [Signal::SIGTERM, Signal::SIGINT].into_iter().enumerate() {
        let store = s.d.join(format!("store{i}"));
        let log = s.d.join(format!("serve{i}.log"));
        let mut node = serve(&store, &["--create", "--trust", &s.trust], &log);
        assert!(
            wait_for(Duration::from_secs(20), || store
                .join(".broadside/status.json")
                .exists()),
            "node never wrote its status"
        );
        let live = status(&store);
        assert_eq!(live["running"], true, "{live}");
        assert_eq!(live["pid"], node.id());
        kill(Pid::from_raw(node.id() as i32), sig).unwrap();
        let code = wait_exit(&mut node, Duration::from_secs(10));
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(code.and_then(|c| c.code()), Some(0), "{sig}: {text}");
        assert!(
            text.contains("stopped; receive vectors and status written"),
            "{text}"
        );
        let after = status(&store);
        assert_eq!(after["running"], false, "{after}");
        assert_eq!(after["peers"], serde_json::json!([]));
    }
}

#[test]
fn sighup_reloads_the_config_file_and_a_bad_one_keeps_the_old_settings() {
    let s = setup();
    let store = s.d.join("store");
    let conf = s.d.join("node.toml");
    std::fs::write(&conf, format!("trust = [\"{}\"]\nmax_peers = 5\n", s.trust)).unwrap();
    let log = s.d.join("serve.log");
    let mut node = serve(
        &store,
        &["--create", "--config", conf.to_str().unwrap()],
        &log,
    );
    let pid = Pid::from_raw(node.id() as i32);
    let logged = |needle: &str| {
        wait_for(Duration::from_secs(20), || {
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains(needle))
        })
    };
    assert!(logged("serving"));
    std::fs::write(&conf, format!("trust = [\"{}\"]\nmax_peers = 6\n", s.trust)).unwrap();
    kill(pid, Signal::SIGHUP).unwrap();
    assert!(logged("configuration reloaded"));
    std::fs::write(&conf, "max_peerz = 6\n").unwrap();
    kill(pid, Signal::SIGHUP).unwrap();
    assert!(logged("reload failed, old configuration kept"));
    assert!(logged("unknown field `max_peerz`"));
    assert!(
        node.try_wait().unwrap().is_none(),
        "a bad reload stopped the node"
    );
    kill(pid, Signal::SIGTERM).unwrap();
    assert_eq!(
        wait_exit(&mut node, Duration::from_secs(10)).and_then(|c| c.code()),
        Some(0)
    );
}

#[test]
fn config_file_errors_are_clear_and_flags_override_the_file() {
    let s = setup();
    let store = s.d.join("store");
    std::fs::create_dir_all(&store).unwrap();
    let st = store.to_str().unwrap();
    let conf = s.d.join("node.toml");
    let c = conf.to_str().unwrap();
    std::fs::write(
        &conf,
        format!("trust = [\"{}\"]\npacket_size = 100\n", s.trust),
    )
    .unwrap();
    expect_usage_error(
        &["serve", st, "--config", c],
        "packet_size = 100: allowed 512..=65507",
    );
    // The flag wins over the file: the node starts and stops after its duration.
    let out = cli(&[
        "serve",
        st,
        "--config",
        c,
        "--packet-size",
        "1400",
        "--bind",
        "127.0.0.1:0",
        "--duration",
        "0.3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&conf, "beacon_interval = \"often\"\n").unwrap();
    expect_usage_error(&["serve", st, "--config", c], "expected a duration");
    std::fs::write(&conf, "max_peer = 3\n").unwrap();
    expect_usage_error(&["serve", st, "--config", c], "unknown field `max_peer`");
    expect_usage_error(
        &[
            "serve",
            st,
            "--config",
            s.d.join("none.toml").to_str().unwrap(),
        ],
        "cannot read config file",
    );
    expect_usage_error(
        &["serve", st, "--trust", &s.trust, "--log-level", "loud"],
        "allowed error, warn, info, debug, trace",
    );
}

#[test]
fn serve_of_a_missing_directory_needs_create() {
    let s = setup();
    let missing = s.d.join("typo").join("dir");
    let m = missing.to_str().unwrap();
    expect_usage_error(
        &["serve", m, "--trust", &s.trust],
        "does not exist; give --create",
    );
    assert!(!missing.exists());
    let out = cli(&[
        "serve",
        m,
        "--trust",
        &s.trust,
        "--create",
        "--bind",
        "127.0.0.1:0",
        "--duration",
        "0.2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(missing.join(".broadside").is_dir());
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let s = setup();
    let store = s.d.join("store");
    let src = s.d.join("f.bin");
    std::fs::write(&src, vec![1u8; 1000]).unwrap();
    let st = store.to_str().unwrap();
    let k = s.key_file.to_str().unwrap();
    let f = src.to_str().unwrap();
    for args in [
        vec!["publish", f, "--store", st, "--key", k],
        vec!["status", st],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(BIN)
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_version_published_while_serving_reaches_a_peer() {
    let s = setup();
    let scratch = s.d.join("scratch");
    let (sa, sb) = (s.d.join("a"), s.d.join("b"));
    publish_to(&sa, &scratch, &s.key, "map", 1, 200_000);
    publish_to(&sb, &scratch, &s.key, "map", 1, 200_000);
    let (pa, pb) = (free_port().to_string(), free_port().to_string());
    let node = |store: &Path, me: &str, peer: &str, log: &str| {
        Command::new(BIN)
            .arg("serve")
            .arg(store)
            .args(["--bind", me, "--beacon-to", peer, "--trust", &s.trust])
            .args(["--beacon-interval", "100 ms", "--rescan-interval", "100 ms"])
            .args(["--log-level", "info"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(s.d.join(log)).unwrap())
            .spawn()
            .unwrap()
    };
    let mut a = node(&sa, &pa, &pb, "a.log");
    let mut b = node(&sb, &pb, &pa, "b.log");
    std::thread::sleep(Duration::from_millis(500));
    let src = scratch.join("new");
    std::fs::write(&src, vec![9u8; 300_000]).unwrap();
    let out = cli(&[
        "publish",
        src.to_str().unwrap(),
        "--store",
        sa.to_str().unwrap(),
        "--key",
        s.key_file.to_str().unwrap(),
        "--name",
        "map",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arrived = wait_for(Duration::from_secs(30), || {
        DiskStore::open_read_only(&sb)
            .unwrap()
            .current("map")
            .is_some_and(|c| c.version() == 2)
    });
    for c in [&mut a, &mut b] {
        kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM).unwrap();
        c.wait().unwrap();
    }
    let log = std::fs::read_to_string(s.d.join("a.log")).unwrap();
    assert!(arrived, "b never got version 2:\n{log}");
    assert!(
        log.contains("picked up map version 2 from the store"),
        "{log}"
    );
    assert_eq!(std::fs::read(sb.join("map")).unwrap(), vec![9u8; 300_000]);
}

fn cycles() -> usize {
    std::env::var("BROADSIDE_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// The store at rest: every visible certificate matches its visible content.
fn consistent_at_rest(store: &Path) -> Result<Vec<(String, u16)>, String> {
    let s = DiskStore::open_read_only(store).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for c in s.certificates() {
        let bytes =
            std::fs::read(store.join(c.name())).map_err(|e| format!("{}: {e}", c.name()))?;
        let mut h = ContentHasher::new();
        h.update(&bytes);
        if bytes.len() as u64 != c.size() || h.finish() != c.content_hash() {
            return Err(format!(
                "{} version {} does not match its content",
                c.name(),
                c.version()
            ));
        }
        out.push((c.name().to_string(), c.version()));
    }
    Ok(out)
}

/// Bytes of every file under `store` (the store's disk use; a file with
/// several links counts once).
fn disk_use(store: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0;
    let mut dirs = vec![store.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => dirs.push(e.path()),
                Ok(m) if seen.insert((m.dev(), m.ino())) => total += m.len(),
                _ => {}
            }
        }
    }
    total
}

/// Temporary files anywhere in the store.
fn temporaries(store: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![store.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(".tmp-") || n.starts_with(".publish-") {
                found.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(p);
            }
        }
    }
    found
}

fn recover_and_check(store: &Path, k: &ProviderKey) {
    drop(DiskStore::open(store).unwrap());
    let left = temporaries(store);
    assert!(
        left.is_empty(),
        "temporary files survived recovery: {left:?}"
    );
    let versions = verified_versions(store, k);
    assert_eq!(
        versions.len(),
        DiskStore::open_read_only(store)
            .unwrap()
            .certificates()
            .len(),
        "a certificate whose content does not verify"
    );
}

#[test]
fn kill_9_during_publish_never_shows_a_mismatch_and_recovery_leaves_no_temporaries() {
    let s = setup();
    let store = s.d.join("store");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(16);
    let mut last = 0u16;
    let mut most = 0u64;
    for i in 0..cycles() {
        let src = s.d.join("scratch").join(format!("v{i}"));
        let mut data = vec![0u8; 6 << 20];
        rng.fill(&mut data[..]);
        std::fs::write(&src, &data).unwrap();
        let mut p = Command::new(BIN)
            .args([
                "publish",
                src.to_str().unwrap(),
                "--store",
                store.to_str().unwrap(),
            ])
            .args(["--key", s.key_file.to_str().unwrap(), "--name", "doc"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.random_range(0..60_000)));
        let _ = p.kill();
        p.wait().unwrap();
        let seen = consistent_at_rest(&store).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
        recover_and_check(&store, &s.key);
        let now = DiskStore::open_read_only(&store)
            .unwrap()
            .current("doc")
            .map_or(0, |c| c.version());
        assert!(
            now >= last,
            "cycle {i}: version went down from {last} to {now}"
        );
        assert!(seen.iter().all(|(_, v)| *v <= now));
        last = now;
        // After recovery: the current version and its metadata (a killed
        // publish leaves nothing).
        let used = disk_use(&store);
        most = most.max(used);
        assert!(
            used <= (6 << 20) + (1 << 20),
            "cycle {i}: the store uses {used} bytes"
        );
    }
    eprintln!(
        "publish kills: {} cycles; store at most {:.1} MiB after recovery \
         (file 6 MiB)",
        cycles(),
        most as f64 / f64::from(1 << 20)
    );
}

#[test]
fn kill_9_during_serve_never_shows_a_partial_and_the_transfer_still_finishes() {
    let s = setup();
    let scratch = s.d.join("scratch");
    let (sa, sb) = (s.d.join("a"), s.d.join("b"));
    let size = 4 << 20;
    publish_to(&sa, &scratch, &s.key, "big", 2, size);
    publish_to(&sb, &scratch, &s.key, "big", 1, size);
    let (pa, pb) = (free_port().to_string(), free_port().to_string());
    let log = s.d.join("a.log");
    let node = |store: &Path, me: &str, peer: &str| {
        Command::new(BIN)
            .arg("serve")
            .arg(store)
            .args(["--bind", me, "--beacon-to", peer, "--trust", &s.trust])
            .args(["--beacon-interval", "100 ms", "--send-rate", "8000000"])
            .args(["--transfer-timeout", "1 s", "--log-level", "debug"])
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .unwrap(),
            )
            .spawn()
            .unwrap()
    };
    let mut a = node(&sa, &pa, &pb);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
    // Each time B catches up, A gets a newer version (published while it
    // serves), so that every cycle kills B during some transfer.
    let (mut target, mut last) = (2u16, 1u16);
    let mut most = 0u64;
    for i in 0..cycles() {
        let mut b = node(&sb, &pb, &pa);
        std::thread::sleep(Duration::from_micros(rng.random_range(50_000..400_000)));
        b.kill().unwrap();
        b.wait().unwrap();
        let seen = consistent_at_rest(&sb).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
        assert_eq!(seen.len(), 1, "cycle {i}: {seen:?}");
        recover_and_check(&sb, &s.key);
        let now = seen[0].1;
        assert!(
            now >= last,
            "cycle {i}: version went down from {last} to {now}"
        );
        last = now;
        // B: its version, at most one partial being received, their
        // metadata; A: its version (published ones replace it).
        let used = disk_use(&sb).max(disk_use(&sa));
        most = most.max(used);
        assert!(
            used <= 2 * size as u64 + (1 << 20),
            "cycle {i}: a store uses {used} bytes"
        );
        if now == target {
            target += 1;
            let src = scratch.join(format!("big.v{target}"));
            let mut data = vec![0u8; size];
            rng.fill(&mut data[..]);
            std::fs::write(&src, &data).unwrap();
            let out = cli(&[
                "publish",
                src.to_str().unwrap(),
                "--store",
                sa.to_str().unwrap(),
                "--key",
                s.key_file.to_str().unwrap(),
                "--name",
                "big",
            ]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let mut b = node(&sb, &pb, &pa);
    let done = wait_for(Duration::from_secs(60), || {
        DiskStore::open_read_only(&sb)
            .unwrap()
            .current("big")
            .is_some_and(|c| c.version() == target)
    });
    b.kill().unwrap();
    b.wait().unwrap();
    // SIGTERM: A writes its last status, with the bytes it sent.
    kill(Pid::from_raw(a.id() as i32), Signal::SIGTERM).unwrap();
    assert!(wait_exit(&mut a, Duration::from_secs(10)).is_some_and(|s| s.success()));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: String = text.lines().rev().take(40).collect::<Vec<_>>().join("\n");
    assert!(
        done,
        "version {target} never arrived across restarts; last log lines (newest first):\n{tail}"
    );
    recover_and_check(&sb, &s.key);
    assert_eq!(verified_versions(&sb, &s.key)["big"], target);
    // B received every version from 2 to `target` once; what A sent beyond
    // that was lost to the kills (unpersisted or in flight) or re-sent.
    let st = DiskStore::open_read_only(&sa).unwrap().status_path();
    let st: serde_json::Value = serde_json::from_slice(&std::fs::read(st).unwrap()).unwrap();
    let sent = st["counters"]["file_bytes_sent"].as_u64().unwrap();
    let needed = u64::from(target - 1) * size as u64;
    assert!(sent >= needed, "sent {sent} < needed {needed}");
    eprintln!(
        "serve kills: {} in {} versions of {} MiB; re-sent {:.1}% of the file bytes; \
         each store at most {:.1} MiB",
        cycles(),
        target - 1,
        size >> 20,
        100.0 * (sent - needed) as f64 / needed as f64,
        most as f64 / f64::from(1 << 20)
    );
}
