//! Serve settings: every limit of a node, from a TOML file (`--config`),
//! overridden by command-line flags, over the defaults. One struct serves as
//! both the file's schema (unknown keys are errors) and the flags, so each
//! setting is declared once. Durations are written with a unit (`"500 ms"`,
//! `"2 s"`) or as a number of seconds.
//!
//! ```toml
//! bind = "0.0.0.0:47474"
//! beacon_to = ["255.255.255.255:47474"]
//! trust = ["<64 hex characters>"]
//! beacon_interval = "500 ms"
//! max_peers = 64
//! send_rate = 50000000        # bytes per second, 0 = unpaced (a ceiling)
//! congestion = true           # find each link's rate
//! max_file_size = 4294967296  # bytes
//! log_level = "info"
//! ```

use crate::keys;
use crate::node::NodeOptions;
use crate::store::DEFAULT_PERSIST_BLOCKS;
use crate::NodeError;
use broadside::Config;
use clap::Args;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A duration written as `"500 ms"`, `"2 s"`, `"1 min"` or a number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub Duration);

const DUR_HELP: &str = "a duration such as \"500 ms\" or \"2 s\", or a number of seconds";

impl FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let d = match t.parse::<f64>() {
            Ok(x) if x.is_finite() && (0.0..1e9).contains(&x) => Duration::from_secs_f64(x),
            Ok(_) => return Err(format!("{s:?}: expected {DUR_HELP}")),
            Err(_) => humantime::parse_duration(&t.replace(' ', ""))
                .map_err(|e| format!("{s:?}: {e}; expected {DUR_HELP}"))?,
        };
        Ok(Dur(d))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(f64),
            Text(String),
        }
        let text = match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("expected {DUR_HELP}")))?
        {
            Raw::Secs(x) => x.to_string(),
            Raw::Text(t) => t,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Every serve setting; `None` means "not given here".
#[derive(Args, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// UDP address to bind [default: 0.0.0.0:47474].
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    /// Where beacons go; repeatable [default: 255.255.255.255 on the bound port].
    #[arg(long = "beacon-to")]
    pub beacon_to: Option<Vec<SocketAddr>>,
    /// Trusted provider public key (hex); repeatable.
    #[arg(long = "trust")]
    pub trust: Option<Vec<String>>,
    /// File of trusted provider keys, one hex key per line.
    #[arg(long)]
    pub trust_file: Option<PathBuf>,
    /// Take every file of this trusted provider (hex key), held or not;
    /// repeatable. Without it a node only updates files it already holds.
    #[arg(long = "subscribe")]
    pub subscribe: Option<Vec<String>>,
    /// Largest datagram in bytes, 512..=65507 [default: 2304].
    #[arg(long)]
    pub packet_size: Option<usize>,
    /// Files per discovery group [default: 500].
    #[arg(long)]
    pub group_size: Option<usize>,
    /// Hash functions per Bloom filter [default: 12].
    #[arg(long)]
    pub hash_count: Option<u8>,
    /// Beacon period [default: 500 ms].
    #[arg(long)]
    pub beacon_interval: Option<Dur>,
    /// Discovery retransmission timeout [default: 1 s].
    #[arg(long)]
    pub discovery_timeout: Option<Dur>,
    /// Discovery retransmissions before a sync is abandoned [default: 4].
    #[arg(long)]
    pub discovery_retries: Option<u32>,
    /// Offer retransmission timeout [default: 1 s].
    #[arg(long)]
    pub offer_timeout: Option<Dur>,
    /// Offer retransmissions before an offer is abandoned [default: 4].
    #[arg(long)]
    pub offer_retries: Option<u32>,
    /// Receiver re-sends its vector after this much sender silence [default: 100 ms].
    #[arg(long)]
    pub ack_idle: Option<Dur>,
    /// Silence after which a transfer is stopped, partial kept [default: 5 s].
    #[arg(long)]
    pub transfer_timeout: Option<Dur>,
    /// At most one duplicate-triggered ack per this interval [default: 20 ms].
    #[arg(long)]
    pub dup_ack_holdoff: Option<Dur>,
    /// Data pacing in bytes per second, all peers together, 0 = unpaced;
    /// with congestion control on, a ceiling on the rate it finds
    /// [default: 50000000].
    #[arg(long)]
    pub send_rate: Option<u64>,
    /// Congestion control per peer: find each link's rate from the
    /// receiver's vectors [default: true].
    #[arg(long)]
    pub congestion: Option<bool>,
    /// Rate a peer's data starts at before congestion control has
    /// measured its link, bytes per second [default: 2500000].
    #[arg(long)]
    pub initial_rate: Option<u64>,
    /// Largest file accepted, bytes [default: 4294967296].
    #[arg(long)]
    pub max_file_size: Option<u64>,
    /// Beacons accepted per peer per second [default: 10].
    #[arg(long)]
    pub beacon_rate: Option<f64>,
    /// Discovery requests accepted per peer per second [default: 200].
    #[arg(long)]
    pub request_rate: Option<f64>,
    /// Transfer requests accepted per peer per second [default: 500].
    #[arg(long)]
    pub transfer_rate: Option<f64>,
    /// Most peers tracked at once [default: 64].
    #[arg(long)]
    pub max_peers: Option<usize>,
    /// Files sent to one peer at a time [default: 1].
    #[arg(long)]
    pub uploads_per_peer: Option<usize>,
    /// Data blocks sent to a peer with no receive vector from it, 0 for no
    /// limit; keep it below what the receiver's socket buffer holds [default: 512].
    #[arg(long)]
    pub window: Option<u32>,
    /// Content-hash pairs remembered as synchronised [default: 1024].
    #[arg(long)]
    pub sync_cache: Option<usize>,
    /// Seed for groups, salts, ids and the address-validation key. Leave it
    /// unset in deployments: anyone who knows a fixed seed can forge
    /// validation tokens and have spoofed addresses served [default: random].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Address-validation tokens stay valid for one to two of these [default: 10 s].
    #[arg(long)]
    pub token_period: Option<Dur>,
    /// Most peers tracked from one IPv4 /24 or IPv6 /64 [default: 16].
    #[arg(long)]
    pub max_peers_per_prefix: Option<usize>,
    /// Token replies per second to unvalidated addresses, all together [default: 10000].
    #[arg(long)]
    pub challenge_rate: Option<f64>,
    /// First wait before retrying a sync that left files unfinished (doubling) [default: 1 s].
    #[arg(long)]
    pub retry_backoff: Option<Dur>,
    /// A source with no new verified block for this long loses its slot [default: 1 s].
    #[arg(long)]
    pub slow_peer_timeout: Option<Dur>,
    /// Most peers one file is fetched from at once [default: 4].
    #[arg(long)]
    pub sources: Option<usize>,
    /// How long a peer that sent a bad block is ignored [default: 60 s].
    #[arg(long)]
    pub penalty: Option<Dur>,
    /// Status-file write period [default: 1 s].
    #[arg(long)]
    pub status_interval: Option<Dur>,
    /// Receive-vector write period [default: 100 ms].
    #[arg(long)]
    pub persist_interval: Option<Dur>,
    /// New blocks that force a receive-vector write [default: 1024].
    #[arg(long)]
    pub persist_blocks: Option<u32>,
    /// Period of the store rescan for newly published versions [default: 1 s].
    #[arg(long)]
    pub rescan_interval: Option<Dur>,
    /// Socket buffer size to request, bytes [default: 8388608].
    #[arg(long)]
    pub socket_buffer: Option<usize>,
    /// Use UDP GSO/GRO where the kernel has them [default: true].
    #[arg(long, value_parser = clap::value_parser!(bool))]
    pub offload: Option<bool>,
    /// Log level: error, warn, info, debug, trace [default: info; RUST_LOG wins].
    #[arg(long)]
    pub log_level: Option<String>,
}

macro_rules! overlay {
    ($top:ident, $base:ident; $($f:ident),* $(,)?) => {
        Settings { $($f: $top.$f.or($base.$f)),* }
    };
}

impl Settings {
    /// Reads a TOML settings file; an unknown key or a bad value is an
    /// error naming the file, the key and what is allowed.
    pub fn from_file(path: &Path) -> Result<Settings, NodeError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            NodeError::Usage(format!("cannot read config file {}: {e}", path.display()))
        })?;
        toml::from_str(&text)
            .map_err(|e| NodeError::Usage(format!("config file {}: {e}", path.display())))
    }

    /// These settings where given, `base` elsewhere.
    pub fn over(self, base: Settings) -> Settings {
        overlay!(self, base;
            bind, beacon_to, trust, trust_file, subscribe, packet_size, group_size, hash_count,
            beacon_interval, discovery_timeout, discovery_retries, offer_timeout,
            offer_retries, ack_idle, transfer_timeout, dup_ack_holdoff, send_rate,
            congestion, initial_rate,
            max_file_size, beacon_rate, request_rate, transfer_rate, max_peers,
            uploads_per_peer, window, sync_cache, seed, token_period, max_peers_per_prefix,
            challenge_rate, retry_backoff, slow_peer_timeout, sources, penalty, status_interval, persist_interval,
            persist_blocks, rescan_interval, socket_buffer, offload, log_level)
    }

    /// The log level (checked when the logger is installed).
    pub fn log_level(&self) -> &str {
        self.log_level.as_deref().unwrap_or("info")
    }

    /// Node options for serving `store`, defaults filled in; `random_seed`
    /// is used when no seed is given.
    pub fn resolve(&self, store: &Path, random_seed: u64) -> Result<NodeOptions, NodeError> {
        let mut trusted = self
            .trust
            .iter()
            .flatten()
            .map(|k| keys::parse_public(k))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(f) = &self.trust_file {
            trusted.extend(keys::read_trust_file(f)?);
        }
        let subscribe = self
            .subscribe
            .iter()
            .flatten()
            .map(|k| keys::parse_public(k))
            .collect::<Result<Vec<_>, _>>()?;
        let d = NodeOptions::default();
        let c = Config::default();
        let bind = self.bind.unwrap_or(d.bind);
        let beacon_to = match &self.beacon_to {
            Some(v) if !v.is_empty() => v.clone(),
            _ => vec![SocketAddr::from(([255, 255, 255, 255], bind.port()))],
        };
        let dur = |v: Option<Dur>, default: Duration| v.map_or(default, |d| d.0);
        let config = Config {
            packet_size: self.packet_size.unwrap_or(c.packet_size),
            group_size: self.group_size.unwrap_or(c.group_size),
            hash_count: self.hash_count.unwrap_or(c.hash_count),
            beacon_interval: dur(self.beacon_interval, c.beacon_interval),
            discovery_timeout: dur(self.discovery_timeout, c.discovery_timeout),
            discovery_retries: self.discovery_retries.unwrap_or(c.discovery_retries),
            offer_timeout: dur(self.offer_timeout, c.offer_timeout),
            offer_retries: self.offer_retries.unwrap_or(c.offer_retries),
            ack_idle: dur(self.ack_idle, c.ack_idle),
            transfer_timeout: dur(self.transfer_timeout, c.transfer_timeout),
            dup_ack_holdoff: dur(self.dup_ack_holdoff, c.dup_ack_holdoff),
            send_rate: self.send_rate.unwrap_or(c.send_rate),
            congestion: self.congestion.unwrap_or(c.congestion),
            initial_rate: self.initial_rate.unwrap_or(c.initial_rate),
            max_file_size: self.max_file_size.unwrap_or(c.max_file_size),
            beacon_rate: self.beacon_rate.unwrap_or(c.beacon_rate),
            request_rate: self.request_rate.unwrap_or(c.request_rate),
            transfer_rate: self.transfer_rate.unwrap_or(c.transfer_rate),
            max_peers: self.max_peers.unwrap_or(c.max_peers),
            uploads_per_peer: self.uploads_per_peer.unwrap_or(c.uploads_per_peer),
            window: self.window.unwrap_or(c.window),
            sync_cache: self.sync_cache.unwrap_or(c.sync_cache),
            seed: self.seed.unwrap_or(random_seed),
            token_period: dur(self.token_period, c.token_period),
            max_peers_per_prefix: self.max_peers_per_prefix.unwrap_or(c.max_peers_per_prefix),
            challenge_rate: self.challenge_rate.unwrap_or(c.challenge_rate),
            retry_backoff: dur(self.retry_backoff, c.retry_backoff),
            slow_peer_timeout: dur(self.slow_peer_timeout, c.slow_peer_timeout),
            sources: self.sources.unwrap_or(c.sources),
            penalty: dur(self.penalty, c.penalty),
            // The library hands the vector to the store at the node's cadence.
            persist_blocks: self.persist_blocks.unwrap_or(DEFAULT_PERSIST_BLOCKS),
            persist_interval: dur(self.persist_interval, d.persist_interval),
        };
        config
            .validate()
            .map_err(|e| NodeError::Usage(e.to_string()))?;
        Ok(NodeOptions {
            store: store.to_path_buf(),
            bind,
            beacon_to,
            trusted,
            subscribe,
            config,
            status_interval: dur(self.status_interval, d.status_interval),
            socket_buffer: self.socket_buffer.unwrap_or(d.socket_buffer),
            persist_interval: dur(self.persist_interval, d.persist_interval),
            persist_blocks: self.persist_blocks.unwrap_or(DEFAULT_PERSIST_BLOCKS),
            rescan_interval: dur(self.rescan_interval, d.rescan_interval),
            offload: self.offload.unwrap_or(d.offload),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("node.toml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(
            "500 ms".parse::<Dur>().unwrap().0,
            Duration::from_millis(500)
        );
        assert_eq!("2s".parse::<Dur>().unwrap().0, Duration::from_secs(2));
        assert_eq!("0.25".parse::<Dur>().unwrap().0, Duration::from_millis(250));
        assert_eq!("1 min".parse::<Dur>().unwrap().0, Duration::from_secs(60));
        for bad in ["fast", "-1", "5 parsecs", "inf"] {
            let e = bad.parse::<Dur>().unwrap_err();
            assert!(e.contains("expected a duration"), "{bad}: {e}");
        }
    }

    #[test]
    fn file_values_apply_and_flags_override_them() {
        let key = broadside::ProviderKey::from_seed([1; 32]).public().to_hex();
        let (_d, p) = file(&format!(
            "trust = [\"{key}\"]\nbeacon_interval = \"200 ms\"\nmax_peers = 7\nsend_rate = 1000\n\
             transfer_timeout = 3\nmax_file_size = 123456\n"
        ));
        let from_file = Settings::from_file(&p).unwrap();
        let flags = Settings {
            max_peers: Some(9),
            seed: Some(5),
            ..Settings::default()
        };
        let o = flags.over(from_file).resolve(Path::new("s"), 77).unwrap();
        assert_eq!(o.config.max_peers, 9, "flag wins");
        assert_eq!(
            o.config.beacon_interval,
            Duration::from_millis(200),
            "file applies"
        );
        assert_eq!(o.config.transfer_timeout, Duration::from_secs(3));
        assert_eq!((o.config.send_rate, o.config.max_file_size), (1000, 123456));
        assert_eq!(o.config.seed, 5);
        assert_eq!(
            o.config.group_size,
            Config::default().group_size,
            "default kept"
        );
        assert_eq!(o.beacon_to, vec!["255.255.255.255:47474".parse().unwrap()]);
        assert_eq!(o.trusted.len(), 1);
    }

    #[test]
    fn bad_files_name_the_key_and_what_is_allowed() {
        let cases = [
            ("max_peer = 3\n", "unknown field `max_peer`"),
            ("beacon_interval = \"soon\"\n", "expected a duration"),
            ("max_peers = \"many\"\n", "max_peers"),
            ("bind = \"nowhere\"\n", "bind"),
            ("packet_size = [\n", "TOML parse error"),
        ];
        for (text, needle) in cases {
            let (_d, p) = file(text);
            let e = Settings::from_file(&p).unwrap_err().to_string();
            assert!(
                e.contains(needle) && e.contains("node.toml"),
                "{text:?}: {e}"
            );
        }
        let (_d, p) = file("max_peers = 0\n");
        let e = Settings::from_file(&p)
            .unwrap()
            .resolve(Path::new("s"), 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_peers = 0: allowed at least 1"), "{e}");
        let missing = Settings::from_file(Path::new("/nonexistent/node.toml")).unwrap_err();
        assert!(missing.to_string().contains("cannot read config file"));
    }
}
