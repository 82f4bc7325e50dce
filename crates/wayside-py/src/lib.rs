//! Python bindings for wayside-sim (thin).
