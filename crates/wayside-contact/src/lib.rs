//! wayside-contact: contact-level epidemic dissemination on vehicle traces
//! (Zahn et al. 2009, §5.6) under §5.6's transfer rules or The ONE's
//! (`rules`, `roles`), The ONE's routing and message model (`dtn`), the
//! trace formats it reads and writes (SUMO FCD XML or Parquet, The ONE's
//! external movement), and district cuts of a trace as waypoint paths for the
//! packet-level simulator's mobility interface.
//!
//! A crate of its own: it works a level above the packet simulator (who is
//! in range for how long, not frames), has its own dependencies (an XML
//! parser, gzip, Parquet), and uses only `wayside-sim`'s random streams
//! and mobility types.

pub mod district;
pub mod dtn;
pub mod epidemic;
pub mod fcd;
pub mod grid;
mod input;
pub mod links;
pub mod one;
pub mod parquet_trace;
pub mod roles;
pub mod rules;
pub mod trace;
