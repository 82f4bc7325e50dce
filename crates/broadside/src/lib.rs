//! Broadside: sans-IO content discovery and bit-vector transfer (see crate docs).
