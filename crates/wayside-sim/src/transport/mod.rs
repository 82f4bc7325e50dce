//! Transport layer: TCP with per-OS behaviour profiles ([`tcp`]) and UDP
//! ([`udp`]), as sans-IO state machines that carry header fields and payload
//! lengths, never payload bytes.
//!
//! Sources: RFC 793/9293 (TCP), RFC 768 (UDP); the TCP submodules list the
//! RFCs and kernel/OS documentation behind each behaviour.

pub mod tcp;
pub mod udp;
