//! The command line: `keygen`, `publish`, `serve`, `status` and `relay`.
//! [`run_cli`] parses, runs, prints errors as one clear line and returns the
//! exit code (0 ok, 1 runtime failure, 2 usage or configuration error).

use crate::keys;
use crate::node::{offline_status, Node, NodeOptions};
use crate::relay::{Impairment, LossModel, Relay, RelayConfig, Schedule};
use crate::store::DiskStore;
use crate::NodeError;
use broadside::Config;
use clap::{Args, Parser, Subcommand};
use rand::Rng;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Broadside node: sync signed, versioned files with peers over UDP.
#[derive(Parser, Debug)]
#[command(name = "broadside-node", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a provider key; writes the secret seed to --out, prints the public key.
    Keygen {
        /// Secret key file to create (never overwritten).
        #[arg(long)]
        out: PathBuf,
    },
    /// Sign a new version of FILE into the store (version 1, or current + 1).
    Publish {
        /// The file to publish.
        file: PathBuf,
        /// Store directory.
        #[arg(long)]
        store: PathBuf,
        /// Provider secret key file (from keygen).
        #[arg(long)]
        key: PathBuf,
        /// Name in the store (default: FILE's file name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Serve a store directory: beacon, discover and exchange files with peers.
    Serve(ServeArgs),
    /// Print files, versions, partial transfers, peers and counters as JSON.
    Status {
        /// Store directory.
        dir: PathBuf,
    },
    /// Run a seeded lossy UDP relay between two nodes on loopback.
    Relay(RelayArgs),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Store directory.
    dir: PathBuf,
    /// Trusted provider public key (hex); repeatable.
    #[arg(long = "trust")]
    trust: Vec<String>,
    /// File of trusted provider keys, one hex key per line.
    #[arg(long)]
    trust_file: Option<PathBuf>,
    /// UDP address to bind.
    #[arg(long, default_value = "0.0.0.0:47474")]
    bind: SocketAddr,
    /// Where beacons go; repeatable (default: 255.255.255.255 on the bound port).
    #[arg(long = "beacon-to")]
    beacon_to: Vec<SocketAddr>,
    /// Largest datagram in bytes (512..=65507).
    #[arg(long, default_value_t = 2304)]
    packet_size: usize,
    /// Files per discovery group.
    #[arg(long, default_value_t = 500)]
    group_size: usize,
    /// Data pacing in bytes per second (0: unpaced).
    #[arg(long, default_value_t = 50_000_000)]
    send_rate: u64,
    /// Seed for groups, salts and ids (default: random).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds between status-file writes.
    #[arg(long, default_value_t = 1.0)]
    status_interval: f64,
    /// Seconds of silence after which a transfer is stopped (partial kept).
    #[arg(long, default_value_t = 5.0)]
    transfer_timeout: f64,
}

#[derive(Args, Debug)]
struct RelayArgs {
    /// Port node A sends to.
    #[arg(long)]
    listen_a: SocketAddr,
    /// Port node B sends to.
    #[arg(long)]
    listen_b: SocketAddr,
    /// Node A's address.
    #[arg(long)]
    a: SocketAddr,
    /// Node B's address.
    #[arg(long)]
    b: SocketAddr,
    /// Random loss probability per packet.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Gilbert–Elliott loss instead: P_GB,P_BG,LOSS_GOOD,LOSS_BAD.
    #[arg(long)]
    burst: Option<String>,
    /// One-way delay in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
    /// Bytes per second per direction (default: unlimited).
    #[arg(long)]
    bandwidth: Option<u64>,
    /// Up windows in seconds, e.g. "2-22" (default: always up).
    #[arg(long, default_value = "")]
    schedule: String,
    /// Loss seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    duration: Option<f64>,
}

fn secs(what: &str, s: f64) -> Result<Duration, NodeError> {
    if s.is_finite() && s > 0.0 && s < 1e9 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(NodeError::Usage(format!(
            "{what} {s}: expected a positive number of seconds"
        )))
    }
}

fn log_line(start: std::time::Instant) -> Box<dyn FnMut(&str) + Send> {
    Box::new(move |line: &str| eprintln!("[{:9.3}] {line}", start.elapsed().as_secs_f64()))
}

fn serve(a: ServeArgs) -> Result<(), NodeError> {
    let mut trusted = a
        .trust
        .iter()
        .map(|k| keys::parse_public(k))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(f) = &a.trust_file {
        trusted.extend(keys::read_trust_file(f)?);
    }
    let beacon_to = if a.beacon_to.is_empty() {
        vec![SocketAddr::from(([255, 255, 255, 255], a.bind.port()))]
    } else {
        a.beacon_to
    };
    let config = Config {
        packet_size: a.packet_size,
        group_size: a.group_size,
        send_rate: a.send_rate,
        transfer_timeout: secs("--transfer-timeout", a.transfer_timeout)?,
        seed: a.seed.unwrap_or_else(|| rand::rng().random()),
        ..Config::default()
    };
    let opts = NodeOptions {
        store: a.dir,
        bind: a.bind,
        beacon_to,
        trusted,
        config,
        status_interval: secs("--status-interval", a.status_interval)?,
        socket_buffer: 8 << 20,
    };
    let until = a
        .duration
        .map(|d| secs("--duration", d))
        .transpose()?
        .map(|d| std::time::Instant::now() + d);
    let mut node = Node::new(opts, log_line(std::time::Instant::now()))?;
    node.run(&AtomicBool::new(false), until)
}

fn relay(a: RelayArgs) -> Result<(), NodeError> {
    let loss = match &a.burst {
        None => LossModel::Random(a.loss),
        Some(s) => {
            let v: Vec<f64> = s
                .split(',')
                .map(|x| x.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    NodeError::Usage(format!(
                        "--burst {s:?}: expected four numbers P_GB,P_BG,LOSS_GOOD,LOSS_BAD"
                    ))
                })?;
            let [p_gb, p_bg, loss_good, loss_bad] = v[..] else {
                return Err(NodeError::Usage(format!(
                    "--burst {s:?}: expected four numbers P_GB,P_BG,LOSS_GOOD,LOSS_BAD"
                )));
            };
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            }
        }
    };
    if !(a.delay_ms.is_finite() && a.delay_ms >= 0.0) {
        return Err(NodeError::Usage(format!(
            "--delay-ms {}: expected a non-negative number",
            a.delay_ms
        )));
    }
    let cfg = RelayConfig {
        listen_a: a.listen_a,
        listen_b: a.listen_b,
        a: a.a,
        b: a.b,
        impairment: Impairment {
            loss,
            delay: Duration::from_secs_f64(a.delay_ms / 1000.0),
            bandwidth: a.bandwidth,
            max_queue: Duration::from_millis(100),
            schedule: Schedule::parse(&a.schedule)?,
            seed: a.seed,
        },
    };
    let until = a.duration.map(|d| secs("--duration", d)).transpose()?;
    let r = Relay::start(cfg)?;
    let start = std::time::Instant::now();
    while until.is_none_or(|u| start.elapsed() < u) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = r.stop();
    eprintln!("relay a->b {:?}\nrelay b->a {:?}", s.a_to_b, s.b_to_a);
    Ok(())
}

fn run(cli: Cli) -> Result<(), NodeError> {
    match cli.command {
        Command::Keygen { out } => {
            let k = keys::generate(&out)?;
            println!("{}", k.public());
            Ok(())
        }
        Command::Publish {
            file,
            store,
            key,
            name,
        } => {
            let key = keys::read_secret(&key)?;
            let name = match name {
                Some(n) => n,
                None => file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        NodeError::Usage(format!(
                            "{} has no usable file name; give --name",
                            file.display()
                        ))
                    })?,
            };
            let mut s = DiskStore::open(&store)?;
            let c = s.publish(&key, &file, &name)?;
            println!(
                "published {} version {} ({} bytes) instance {}",
                c.name(),
                c.version(),
                c.size(),
                c.instance_id()
            );
            Ok(())
        }
        Command::Serve(a) => serve(a),
        Command::Status { dir } => {
            let store = DiskStore::open_read_only(&dir)?;
            // A running node's report has peers and counters; otherwise read the disk.
            let live = std::fs::read(store.status_path())
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            let mut report = serde_json::to_value(offline_status(&store))
                .map_err(|e| NodeError::Runtime(e.to_string()))?;
            if let (Some(live), Some(obj)) = (live, report.as_object_mut()) {
                for k in ["addr", "peers", "counters"] {
                    if let Some(v) = live.get(k) {
                        obj.insert(k.into(), v.clone());
                    }
                }
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&report)
                    .map_err(|e| NodeError::Runtime(e.to_string()))?
            );
            Ok(())
        }
        Command::Relay(a) => relay(a),
    }
}

/// Runs the CLI on `args` (including the program name) and returns the exit code.
pub fn run_cli(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("broadside-node: error: {e}");
            e.exit_code()
        }
    }
}
