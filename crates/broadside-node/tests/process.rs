//! The real binary: kill -9 mid-transfer and resume, and clear errors with
//! exit code 2 on bad input.

mod common;
use broadside_node::store::DiskStore;
use common::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn serve(store: &Path, me: &str, peer: &str, trust: &str, seed: &str, log: &Path) -> Child {
    Command::new(BIN)
        .args([
            "serve",
            store.to_str().unwrap(),
            "--bind",
            me,
            "--beacon-to",
            peer,
            "--trust",
            trust,
        ])
        .args([
            "--seed",
            seed,
            "--send-rate",
            "4000000",
            "--status-interval",
            "0.1",
            "--duration",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn partial_blocks(store: &Path) -> Option<(u32, u32)> {
    DiskStore::open_read_only(store)
        .ok()?
        .partials()
        .first()
        .map(|p| (p.received_blocks, p.total_blocks))
}

#[test]
fn kill_9_mid_transfer_then_resume_without_resending_acknowledged_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (sa, sb, scratch) = (d.join("a"), d.join("b"), d.join("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    let out = cli(&["keygen", "--out", d.join("key").to_str().unwrap()]);
    assert!(out.status.success());
    let trust = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let k = broadside_node::keys::read_secret(&d.join("key")).unwrap();
    let size = 8 << 20;
    publish_to(&sa, &scratch, &k, "big", 2, size);
    publish_to(&sb, &scratch, &k, "big", 1, size);
    let (pa, pb) = (free_port().to_string(), free_port().to_string());

    let mut a = serve(&sa, &pa, &pb, &trust, "1", &d.join("a.log"));
    let mut b = serve(&sb, &pb, &pa, &trust, "2", &d.join("b1.log"));
    let started = wait_for(Duration::from_secs(30), || {
        partial_blocks(&sb).is_some_and(|(got, total)| got * 4 > total)
    });
    b.kill().unwrap(); // SIGKILL
    b.wait().unwrap();
    assert!(started, "transfer never got going");
    let (held, total) = partial_blocks(&sb).unwrap();
    assert!(held > 0 && held < total, "{held}/{total}");
    // The old version is intact after the crash.
    assert_eq!(verified_versions(&sb, &k)["big"], 1);

    let mut b = serve(&sb, &pb, &pa, &trust, "3", &d.join("b2.log"));
    let done = wait_for(Duration::from_secs(40), || {
        DiskStore::open_read_only(&sb)
            .unwrap()
            .current("big")
            .is_some_and(|c| c.version() == 2)
    });
    std::thread::sleep(Duration::from_millis(400)); // one more status report
    b.kill().unwrap();
    a.kill().unwrap();
    b.wait().unwrap();
    a.wait().unwrap();
    let log = std::fs::read_to_string(d.join("b2.log")).unwrap();
    assert!(done, "resumed transfer did not finish:\n{log}");
    assert!(
        log.contains(&format!(
            "receiving big version 2 from {pa}: {held}/{total} blocks already held"
        )),
        "{log}"
    );
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.join(".broadside/status.json")).unwrap()).unwrap();
    assert_eq!(
        status["counters"]["resumed_blocks_resent"], 0,
        "an acknowledged block was sent again"
    );
    let new_blocks = status["counters"]["rx"]["data"]["packets"]
        .as_u64()
        .unwrap();
    assert!(new_blocks >= u64::from(total - held));
    assert_eq!(verified_versions(&sb, &k)["big"], 2);
    assert_eq!(verified_versions(&sa, &k)["big"], 2);
    assert!(DiskStore::open_read_only(&sb)
        .unwrap()
        .partials()
        .is_empty());

    let st = cli(&["status", sb.to_str().unwrap()]);
    assert!(st.status.success());
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["files"][0]["name"], "big");
    assert_eq!(v["files"][0]["version"], 2);
}

#[test]
fn bad_input_gives_a_clear_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("s");
    let key = d.join("key");
    assert!(cli(&["keygen", "--out", key.to_str().unwrap()])
        .status
        .success());
    let file = d.join("f.bin");
    std::fs::write(&file, b"x").unwrap();
    let (s, k, f) = (
        store.to_str().unwrap(),
        key.to_str().unwrap(),
        file.to_str().unwrap(),
    );
    expect_usage_error(&["keygen", "--out", k], "already exists");
    expect_usage_error(
        &["publish", f, "--store", s, "--key", k, "--name", "../evil"],
        "allowed: 1-128 characters",
    );
    expect_usage_error(
        &["publish", f, "--store", s, "--key", k, "--name", "a/b"],
        "path separator",
    );
    expect_usage_error(
        &["publish", f, "--store", s, "--key", f],
        "expected 64 hex characters",
    );
    expect_usage_error(&["serve", s], "no trusted provider keys");
    expect_usage_error(&["serve", s, "--trust", "zz"], "not hex");
    let pk = String::from_utf8(cli(&["keygen", "--out", d.join("k2").to_str().unwrap()]).stdout)
        .unwrap();
    expect_usage_error(
        &[
            "serve",
            s,
            "--trust",
            pk.trim(),
            "--packet-size",
            "100",
            "--bind",
            "127.0.0.1:0",
        ],
        "packet_size = 100: allowed 512..=65507",
    );
    expect_usage_error(
        &[
            "relay",
            "--listen-a",
            "127.0.0.1:0",
            "--listen-b",
            "127.0.0.1:0",
            "--a",
            "10.1.2.3:5",
            "--b",
            "127.0.0.1:5",
        ],
        "not a loopback address",
    );
    expect_usage_error(
        &[
            "relay",
            "--listen-a",
            "127.0.0.1:0",
            "--listen-b",
            "127.0.0.1:0",
            "--a",
            "127.0.0.1:5",
            "--b",
            "127.0.0.1:6",
            "--loss",
            "1.5",
        ],
        "invalid --loss 1.5: a loss probability must be in 0..=1",
    );
    let relay = [
        "relay",
        "--listen-a",
        "127.0.0.1:0",
        "--listen-b",
        "127.0.0.1:0",
    ];
    let peers = ["--a", "127.0.0.1:5", "--b", "127.0.0.1:6"];
    let bad_duration = [&relay[..], &peers[..], &["--duration", "-1"]].concat();
    expect_usage_error(&bad_duration, "--duration -1: expected a positive number");
    let out = cli(&bad_duration);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("'-- -1'"));
    // A publish that fails (missing input, bad name) creates no store.
    let missing = d.join("missing.bin");
    let fresh = d.join("fresh");
    let fresh_s = fresh.to_str().unwrap();
    expect_usage_error(
        &[
            "publish",
            missing.to_str().unwrap(),
            "--store",
            fresh_s,
            "--key",
            k,
        ],
        "cannot read",
    );
    expect_usage_error(
        &[
            "publish", f, "--store", fresh_s, "--key", k, "--name", "a/b",
        ],
        "path separator",
    );
    assert!(!fresh.exists(), "a failed publish created the store");
    expect_usage_error(
        &["status", d.join("missing").to_str().unwrap()],
        "not a store directory",
    );
    expect_usage_error(&["frobnicate"], "unrecognized subcommand");
    expect_usage_error(&["serve", s, "--bind", "nonsense"], "invalid value");
    // And a good publish still works afterwards.
    assert!(cli(&["publish", f, "--store", s, "--key", k])
        .status
        .success());
}
