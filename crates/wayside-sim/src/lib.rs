//! wayside-sim: a discrete-event, packet-level simulator for vehicular
//! opportunistic communication. One module per layer; see DESIGN.md.

pub mod channel;
pub mod event;
pub mod mobility;
pub mod rng;
pub mod units;
