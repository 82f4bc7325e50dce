//! The 802.11 physical layer: modes and timing, the frame error model, and
//! the per-radio state machine (idle, CCA-busy, TX, RX) with SINR tracking,
//! and preamble detection decided from a table.

pub mod detection;
pub mod error;
pub mod ht;
pub mod mode;
pub mod rate;
pub mod state;
