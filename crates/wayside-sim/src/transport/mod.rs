//! Transport layer: TCP with per-OS behaviour profiles ([`tcp`]), as a
//! sans-IO state machine that carries header fields and payload lengths,
//! never payload bytes. UDP has no state: its datagram is a payload type
//! ([`crate::packet::Datagram`]), as the TCP segment is.
//!
//! Sources: RFC 793/9293 (TCP), RFC 768 (UDP); the TCP submodules list the
//! RFCs and kernel/OS documentation behind each behaviour.

pub mod tcp;
