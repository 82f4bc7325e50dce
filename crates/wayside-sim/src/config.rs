//! What a world is built from: the radio, channel and management settings
//! shared by every node, and each node's own description (its MAC among
//! them). The
//! scenario module lowers a scenario file into a [`SimConfig`].

use crate::apps::ip::AppConfig;
use crate::channel::ChannelConfig;
use crate::mac::mgmt::MgmtConfig;
pub use crate::mac::mgmt::Role;
use crate::mac::MacConfig;
use crate::mobility::MobilityModel;
use crate::phy::error::ErrorModelKind;
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::transport::tcp::TcpConfig;
use crate::units::{Db, Dbm, Meters, SimTime};
use crate::wire::WiredLink;

/// Radio settings shared by every node.
#[derive(Clone, Debug)]
pub struct RadioConfig {
    pub standard: Standard,
    /// 802.11g only: long slot and CWmin 31 for coexistence with 802.11b.
    pub b_compatible: bool,
    pub preamble: Preamble,
    pub cca_threshold: Dbm,
    pub capture_margin: Option<Db>,
    pub error_model: ErrorModelKind,
    /// The lowest basic rate (broadcasts, management frames; the rate a
    /// node's `range` is defined at).
    pub basic_rate: Mode,
    /// OFDM payloads are equalised with the preamble's channel estimate
    /// ([`crate::channel::Fades::aging`]); otherwise the channel is
    /// tracked perfectly.
    pub ofdm_preamble_estimate: bool,
    /// Arrivals of undetectable preambles are queued as any other and
    /// their drops written as `frames` rows ([`crate::world`]).
    pub undetectable_rows: bool,
}

/// One node's fixed description.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub name: String,
    pub mobility: MobilityModel,
    pub tx_power: Dbm,
    pub antenna_gain: Db,
    pub antenna_height: Meters,
    /// Whether the node has a radio (a wired-only server has none).
    pub radio: bool,
    pub role: Role,
    /// Operating channel (an AP's; a station's until it scans).
    pub channel: u32,
    /// `[radio]`'s standard as the radio uses it on `channel`
    /// ([`Standard::on_channel`]: an HT radio's band and width).
    pub standard: Standard,
    /// A station's own scan list, replacing `MgmtConfig::scan_channels`.
    pub scan_channels: Option<Vec<u32>>,
    pub tcp: TcpConfig,
    pub arp: crate::net::arp::ArpConfig,
    /// Its MAC: the `[mac]` section's, with its own queue limit and rate
    /// control where it gives them.
    pub mac: MacConfig,
    /// An AP's forwarding engine from its wired side.
    pub forwarding: Option<crate::net::forwarding::ForwardingConfig>,
    /// Get an address by DHCP after association (stations only).
    pub dhcp: bool,
    /// Answer DHCP requests from associated stations (APs only).
    pub dhcp_server: bool,
    /// An AP that splits the TCP connections it forwards (I-TCP).
    pub split_tcp: bool,
    /// Its frames carry its position and transmit power (a cooperating
    /// client's vendor element; see [`crate::mac::SenderReport`]).
    pub reports_position: bool,
    /// When its radio is switched on, and off for good (`SimTime::MAX`:
    /// never): a vehicle entering and leaving a district cut. While off, it
    /// neither sends nor hears, and what is handed to its MAC is dropped.
    pub appear: SimTime,
    pub disappear: SimTime,
    /// Its router.
    pub routing: crate::net::route::Routing,
    /// Ad hoc (IBSS) membership, for an independent node that joins one.
    pub adhoc: Option<crate::mac::adhoc::AdhocConfig>,
    /// Its own roaming profile, instead of the management section's.
    pub roaming: Option<crate::mac::mgmt::Roaming>,
}

/// Everything needed to build a world.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub duration: SimTime,
    pub seed: u64,
    pub run: u64,
    pub channel: ChannelConfig,
    pub radio: RadioConfig,
    pub nodes: Vec<NodeConfig>,
    pub sources: Vec<crate::apps::SourceConfig>,
    pub mgmt: MgmtConfig,
    pub wires: Vec<WiredLink>,
    pub apps: Vec<AppConfig>,
    /// Which radios are captured, and the sniffer.
    pub pcap: crate::pcap::PcapConfig,
}
