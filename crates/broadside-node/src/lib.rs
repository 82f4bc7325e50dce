//! Broadside over real hosts: a node that syncs signed, versioned files over
//! UDP using the sans-IO `broadside` crate, its on-disk store, the CLI, and a
//! seeded lossy UDP relay for experiments on loopback.
//!
//! - [`store`]: the store directory (each version in its own directory, made
//!   current by one atomic symlink swap so content and certificate never
//!   disagree; partial transfers; crash recovery).
//! - [`keys`]: key files and trusted-key lists.
//! - [`node`]: the UDP driver loop and the status report.
//! - [`udp`]: batched datagram I/O (sendmmsg/recvmmsg, UDP GSO/GRO, ppoll).
//! - [`config`]: the serve settings: TOML file, command-line overrides, defaults.
//! - [`impair`]: the link impairment model (random and Gilbert–Elliott
//!   loss, delay, bandwidth, link up/down schedule) shared by both relays.
//! - [`relay`]: the lossy relays: UDP on loopback, and IP packets between
//!   the TUN devices of a [`netlab`] (two network namespaces, Linux, root).
//! - [`netlab`]: the namespaces-and-TUN lab; [`contact`]: the contact
//!   experiment (Broadside against kernel TCP through the packet relay).
//! - [`cli`]: argument parsing and the subcommands; [`run_cli`] is the entry
//!   point for the binary and for bindings. `serve` stops cleanly on SIGTERM
//!   or SIGINT (exit 0), reloads `--config` and rescans the store on SIGHUP,
//!   and picks up versions published while it runs.
//!
//! Linux only: the node's socket I/O uses `sendmmsg`/`recvmmsg` and UDP
//! GSO/GRO through `nix`.
#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
#[cfg(target_os = "linux")]
pub mod contact;
pub mod impair;
pub mod keys;
#[cfg(target_os = "linux")]
pub mod netlab;
pub mod node;
pub mod relay;
pub mod store;
pub mod udp;
pub mod writeback;

pub use cli::run_cli;

/// A failure with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Bad arguments or configuration (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// A runtime failure: I/O, a corrupt key file (exit code 1).
    #[error("{0}")]
    Runtime(String),
}

impl NodeError {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            NodeError::Usage(_) => 2,
            NodeError::Runtime(_) => 1,
        }
    }
}

/// Sends `tracing` logs to stderr at `default_level` (`error`, `warn`,
/// `info`, `debug` or `trace`), or as `RUST_LOG` says when it is set. Only
/// the first call in a process installs the logger.
pub fn init_logging(default_level: &str) -> Result<(), NodeError> {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(f) if !f.is_empty() => {
            EnvFilter::try_new(&f).map_err(|e| NodeError::Usage(format!("RUST_LOG {f:?}: {e}")))?
        }
        _ => {
            if !matches!(default_level, "error" | "warn" | "info" | "debug" | "trace") {
                return Err(NodeError::Usage(format!(
                    "log level {default_level:?}: allowed error, warn, info, debug, trace"
                )));
            }
            EnvFilter::new(format!(
                "broadside={default_level},broadside_node={default_level}"
            ))
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .try_init();
    Ok(())
}
