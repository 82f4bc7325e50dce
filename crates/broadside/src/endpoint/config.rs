//! The endpoint's tunables and their checks.

use super::*;

/// Tunables. [`Config::default`] follows the paper where it says something.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Largest datagram, bytes (paper: 2304, the 802.11 frame payload).
    pub packet_size: usize,
    /// Files per discovery group `g` (paper: 500).
    pub group_size: usize,
    /// Hash functions per Bloom filter (paper: 12).
    pub hash_count: u8,
    /// Beacon period.
    pub beacon_interval: Duration,
    /// Discovery retransmission timeout (paper: restart after 1 s).
    pub discovery_timeout: Duration,
    /// Discovery retransmissions before a sync is abandoned.
    pub discovery_retries: u32,
    /// Offer retransmission timeout.
    pub offer_timeout: Duration,
    /// Offer retransmissions before an offer is abandoned.
    pub offer_retries: u32,
    /// The receiver re-sends its vector when the sender has been silent this long (doubling).
    pub ack_idle: Duration,
    /// A transfer whose peer is silent this long is stopped (the partial is kept).
    pub transfer_timeout: Duration,
    /// At most one duplicate-triggered ack per this interval.
    pub dup_ack_holdoff: Duration,
    /// Data pacing in bytes per second, all peers together; 0 means
    /// unpaced. With [`Config::congestion`] on it is a ceiling: each peer's
    /// data is paced at the rate its controller finds, at most this.
    pub send_rate: u64,
    /// Congestion control per peer ([`crate::congestion`]): the sending rate
    /// follows the bottleneck found from the receiver's vectors instead of
    /// `send_rate` alone.
    pub congestion: bool,
    /// Rate a peer's data starts at before its first vector, bytes per
    /// second (congestion control doubles it per round from there).
    pub initial_rate: u64,
    /// Largest file a node accepts.
    pub max_file_size: u64,
    /// Beacons accepted per peer per second (burst: twice that).
    pub beacon_rate: f64,
    /// Discovery requests (filters, records) accepted per peer per second (burst: twice that).
    pub request_rate: f64,
    /// Transfer requests (offers, wants) accepted per peer per second; the
    /// burst is twice that or two per group member, whichever is larger,
    /// since one round can plan up to `group_size` exchanges at once.
    pub transfer_rate: f64,
    /// Most peers tracked at once.
    pub max_peers: usize,
    /// Files sent to one peer at a time (at least 1). The others requested
    /// by that peer wait their turn: see [`Endpoint::poll_transmit`].
    pub uploads_per_peer: usize,
    /// Hash pairs remembered as synchronised.
    pub sync_cache: usize,
    /// Seed of all randomness (groups, salts, session and node ids) and of
    /// the address-validation key: a deployment must keep it secret (pick
    /// it at random), or anyone can forge validation tokens.
    pub seed: u64,
    /// Validation tokens stay valid for one to two of these.
    pub token_period: Duration,
    /// Most peers tracked from one network prefix (IPv4 /24, IPv6 /64).
    pub max_peers_per_prefix: usize,
    /// Token packets per second sent to addresses not validated yet (all
    /// together). Each is no larger than the packet it answers, so this
    /// bounds reflected bytes, not amplification.
    pub challenge_rate: f64,
    /// First wait before a sync that left files unfinished is tried again
    /// (doubling per failure up to 64 times this).
    pub retry_backoff: Duration,
    /// A source that delivered no new verified block for this long loses
    /// its slot to another peer that offered the same version.
    pub slow_peer_timeout: Duration,
    /// Most peers one file is fetched from at once (at least 1). Each
    /// sends a different range of blocks under its own transfer id; a
    /// source that finishes its range takes the first range nobody is
    /// sending, else the back half of what another source has left.
    pub sources: usize,
    /// How long a peer that sent a block failing verification is ignored.
    pub penalty: Duration,
    /// The receive vector is persisted after this many new blocks …
    pub persist_blocks: u32,
    /// … or this long after the last persist, whichever comes first.
    pub persist_interval: Duration,
    /// Data blocks a peer may be sent with no vector from it (0: no limit).
    /// A sender faster than its receiver (unpaced, or paced above what the
    /// receiver takes) otherwise overflows the receiver's socket buffer and
    /// sends most blocks twice or more; keep it below what that buffer
    /// holds. The receiver acks at least every `window / 4` new blocks (its
    /// own setting: a sender with half its window still never waits on a
    /// live link); when acks are lost and the window runs dry, the sender
    /// probes as at the end of a pass.
    pub window: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            packet_size: 2304,
            group_size: 500,
            hash_count: 12,
            beacon_interval: Duration::from_millis(500),
            discovery_timeout: Duration::from_secs(1),
            discovery_retries: 4,
            offer_timeout: Duration::from_secs(1),
            offer_retries: 4,
            ack_idle: Duration::from_millis(100),
            transfer_timeout: Duration::from_secs(5),
            dup_ack_holdoff: Duration::from_millis(20),
            send_rate: 50_000_000,
            congestion: true,
            // 20 Mbit/s: about what an 802.11g link carries.
            initial_rate: 2_500_000,
            max_file_size: 4 << 30,
            beacon_rate: 10.0,
            request_rate: 200.0,
            transfer_rate: 500.0,
            max_peers: 64,
            uploads_per_peer: 1,
            sync_cache: 1024,
            seed: 0,
            token_period: Duration::from_secs(10),
            max_peers_per_prefix: 16,
            challenge_rate: 10_000.0,
            retry_backoff: Duration::from_secs(1),
            slow_peer_timeout: Duration::from_secs(1),
            sources: 4,
            penalty: Duration::from_secs(60),
            persist_blocks: 256,
            persist_interval: Duration::from_secs(1),
            window: 512,
        }
    }
}

/// A configuration value outside what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid config {field} = {value}: allowed {allowed}")]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// Its value.
    pub value: String,
    /// What is allowed.
    pub allowed: String,
}

impl Config {
    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value: String, allowed: String| {
            Err(ConfigError {
                field,
                value,
                allowed,
            })
        };
        if !(512..=65_507).contains(&self.packet_size) {
            return err(
                "packet_size",
                self.packet_size.to_string(),
                "512..=65507 bytes".into(),
            );
        }
        let max_group = (self.packet_size - wire::PLAN_HEADER_LEN) * 4;
        if !(1..=max_group.min(65_535)).contains(&self.group_size) {
            return err(
                "group_size",
                self.group_size.to_string(),
                format!("1..={}", max_group.min(65_535)),
            );
        }
        if !(1..=wire::MAX_HASH_COUNT).contains(&self.hash_count) {
            return err(
                "hash_count",
                self.hash_count.to_string(),
                format!("1..={}", wire::MAX_HASH_COUNT),
            );
        }
        for (field, d) in [
            ("beacon_interval", self.beacon_interval),
            ("discovery_timeout", self.discovery_timeout),
            ("offer_timeout", self.offer_timeout),
            ("ack_idle", self.ack_idle),
            ("transfer_timeout", self.transfer_timeout),
            ("token_period", self.token_period),
            ("retry_backoff", self.retry_backoff),
            ("slow_peer_timeout", self.slow_peer_timeout),
            ("persist_interval", self.persist_interval),
        ] {
            if d.is_zero() {
                return err(field, "0".into(), "a positive duration".into());
            }
        }
        for (field, r) in [
            ("beacon_rate", self.beacon_rate),
            ("request_rate", self.request_rate),
            ("transfer_rate", self.transfer_rate),
            ("challenge_rate", self.challenge_rate),
        ] {
            if !(r.is_finite() && r > 0.0) {
                return err(field, r.to_string(), "a positive number per second".into());
            }
        }
        if self.max_peers == 0 {
            return err("max_peers", "0".into(), "at least 1".into());
        }
        if self.uploads_per_peer == 0 {
            return err("uploads_per_peer", "0".into(), "at least 1".into());
        }
        if self.sources == 0 {
            return err("sources", "0".into(), "at least 1".into());
        }
        if self.max_peers_per_prefix == 0 {
            return err("max_peers_per_prefix", "0".into(), "at least 1".into());
        }
        if self.congestion && self.initial_rate == 0 {
            return err(
                "initial_rate",
                "0".into(),
                "at least 1 byte per second".into(),
            );
        }
        if self.persist_blocks == 0 {
            return err("persist_blocks", "0".into(), "at least 1".into());
        }
        Ok(())
    }

    pub(super) fn params(&self) -> Params {
        Params {
            group_size: self.group_size,
            hash_count: self.hash_count,
            packet_size: self.packet_size,
        }
    }
    pub(super) fn block_size(&self) -> u32 {
        (self.packet_size - wire::DATA_HEADER_LEN) as u32
    }
    pub(super) fn segment_blocks(&self) -> u32 {
        (((self.packet_size - wire::ACK_HEADER_LEN) * 8) as u32).min(wire::MAX_SEGMENT_BLOCKS)
    }
}
