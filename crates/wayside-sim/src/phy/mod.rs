//! The 802.11 physical layer: modes and timing, the frame error model.

pub mod error;
pub mod mode;
