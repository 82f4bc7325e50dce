//! wayside-sim: a discrete-event, packet-level simulator for vehicular
//! opportunistic communication. One module per layer; see DESIGN.md.

pub mod apps;
pub mod channel;
pub mod event;
pub mod mac;
pub mod mobility;
pub mod net;
pub mod phy;
pub mod ratectl;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod sockets;
pub mod trace;
pub mod transport;
pub mod units;
