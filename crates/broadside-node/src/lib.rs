//! Broadside node: drives the protocol over real UDP sockets.
