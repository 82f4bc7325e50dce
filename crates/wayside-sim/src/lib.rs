//! wayside-sim: a discrete-event, packet-level simulator for vehicular
//! opportunistic communication. One module per layer; see DESIGN.md.

pub mod air;
pub mod apps;
pub mod channel;
pub mod config;
pub mod event;
pub mod geometry;
pub mod ids;
pub mod mac;
pub mod medium;
pub mod mobility;
pub mod net;
pub mod node;
pub mod packet;
pub mod pcap;
pub mod phy;
pub mod ratectl;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod script;
pub mod sockets;
pub mod trace;
pub mod transport;
pub mod units;
pub mod wire;
pub mod world;

pub use run::{run_scenario, run_scenario_pcap, run_scenario_streaming, RunOutput};
