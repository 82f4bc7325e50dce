//! The command line: `keygen`, `publish`, `serve`, `status` and `relay`.
//! [`run_cli`] parses, runs, prints errors as one clear line and returns the
//! exit code (0 ok, 1 runtime failure, 2 usage or configuration error).

use crate::config::Settings;
use crate::keys;
use crate::node::{offline_status, Node};
use crate::relay::{Impairment, LossModel, Relay, RelayConfig, Schedule};
use crate::store::DiskStore;
use crate::NodeError;
use clap::{Args, Parser, Subcommand};
use rand::Rng;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::flag;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
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
        /// Block size of the (v2) certificate, whose hash tree lets
        /// receivers check every block on arrival; receivers need packets
        /// of at least this plus 10 bytes (256..=65497).
        #[arg(long, default_value_t = crate::store::DEFAULT_BLOCK_SIZE)]
        block_size: u32,
    },
    /// Serve a store directory: beacon, discover and exchange files with peers.
    ///
    /// A node updates files it holds to newer versions its peers offer; it
    /// does not fetch files it has never held. SIGTERM or SIGINT stops it
    /// cleanly (vectors and status written, exit 0); SIGHUP reloads --config
    /// and rescans the store. Versions published into the store while it
    /// runs are picked up within --rescan-interval.
    Serve(Box<ServeArgs>),
    /// Print whether a node runs, files, versions, partial transfers, peers and counters as JSON.
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
    /// TOML file of settings (any flag below; flags given here win).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Create the store directory if it does not exist.
    #[arg(long)]
    create: bool,
    /// Stop after this many seconds (default: run until SIGTERM or SIGINT).
    #[arg(long, allow_negative_numbers = true)]
    duration: Option<f64>,
    #[command(flatten)]
    settings: Settings,
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
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    loss: f64,
    /// Gilbert–Elliott loss instead: P_GB,P_BG,LOSS_GOOD,LOSS_BAD.
    #[arg(long)]
    burst: Option<String>,
    /// One-way delay in milliseconds.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
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
    #[arg(long, allow_negative_numbers = true)]
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

/// Flag settings over the config file's, if one is given.
fn settings(a: &ServeArgs) -> Result<Settings, NodeError> {
    let file = match &a.config {
        Some(p) => Settings::from_file(p)?,
        None => Settings::default(),
    };
    Ok(a.settings.clone().over(file))
}

fn serve(a: ServeArgs) -> Result<(), NodeError> {
    let s = settings(&a)?;
    crate::init_logging(s.log_level())?;
    let opts = s.resolve(&a.dir, rand::rng().random())?;
    Node::check(&opts)?;
    if s.seed.is_some() {
        tracing::warn!(
            "a fixed seed is set: whoever knows it can forge address-validation tokens; leave it unset outside tests"
        );
    }
    if a.dir.exists() && !a.dir.is_dir() {
        return Err(NodeError::Usage(format!(
            "{} is not a directory; a store is a directory",
            a.dir.display()
        )));
    }
    if !a.dir.exists() && !a.create {
        return Err(NodeError::Usage(format!(
            "store directory {} does not exist; give --create to start an empty store there",
            a.dir.display()
        )));
    }
    let until = a
        .duration
        .map(|d| secs("--duration", d))
        .transpose()?
        .map(|d| std::time::Instant::now() + d);
    let mut node = Node::new(opts.clone())?;
    // SIGTERM/SIGINT: stop cleanly (a second one exits at once); SIGHUP: reload.
    let stop = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    let rt = |e: std::io::Error| NodeError::Runtime(format!("cannot install signal handlers: {e}"));
    let mut ids = Vec::new();
    for sig in [SIGTERM, SIGINT] {
        ids.push(flag::register_conditional_shutdown(sig, 1, stop.clone()).map_err(rt)?);
        ids.push(flag::register(sig, stop.clone()).map_err(rt)?);
    }
    ids.push(flag::register(SIGHUP, reload.clone()).map_err(rt)?);
    let seed = opts.config.seed;
    let result = node.run_daemon(
        &stop,
        &reload,
        &mut || settings(&a)?.resolve(&a.dir, seed),
        until,
    );
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    result
}

/// Prints `text` to stdout; a reader that went away (`status | head`) is not an error.
fn print_out(text: &str) -> Result<(), NodeError> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(NodeError::Runtime(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

fn status(dir: &std::path::Path) -> Result<(), NodeError> {
    let store = DiskStore::open_read_only(dir)?;
    let offline = offline_status(&store);
    let running = offline.running;
    let mut report =
        serde_json::to_value(offline).map_err(|e| NodeError::Runtime(e.to_string()))?;
    // A running node's report adds its address, peers and counters; a
    // stopped node's last report, its counters only.
    let live = std::fs::read(store.status_path())
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let keys: &[&str] = if running {
        &["addr", "peers", "counters"]
    } else {
        &["counters"]
    };
    if let (Some(live), Some(obj)) = (live, report.as_object_mut()) {
        for &k in keys {
            if let Some(v) = live.get(k) {
                obj.insert(k.into(), v.clone());
            }
        }
    }
    print_out(
        &serde_json::to_string_pretty(&report).map_err(|e| NodeError::Runtime(e.to_string()))?,
    )
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
            print_out(&k.public().to_string())
        }
        Command::Publish {
            file,
            store,
            key,
            name,
            block_size,
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
            // Checked first, so that a failed publish creates no store.
            crate::store::check_publish(&name, block_size)?;
            std::fs::File::open(&file)
                .map_err(|e| NodeError::Usage(format!("cannot read {}: {e}", file.display())))?;
            let mut s = DiskStore::open_for_publish(&store)?;
            let c = s.publish_blocks(&key, &file, &name, block_size)?;
            print_out(&format!(
                "published {} version {} ({} bytes) instance {}",
                c.name(),
                c.version(),
                c.size(),
                c.instance_id()
            ))
        }
        Command::Serve(a) => serve(*a),
        Command::Status { dir } => status(&dir),
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
