//! Typed trace points, recorded into columnar buffers.
//!
//! Every PHY transmission, reception and drop (`frames`) and every MAC outcome
//! (`mac`) is one row carrying time, node and position. Columns are plain
//! vectors so the bindings can hand them to Arrow without a per-row step;
//! categorical columns are `u8` codes with a fixed dictionary.

/// A categorical value with a fixed, documented set of names.
pub trait Category: Copy {
    const NAMES: &'static [&'static str];
    fn code(self) -> u8;
}

macro_rules! category {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl Category for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
            fn code(self) -> u8 { self as u8 }
        }
        impl $name {
            pub fn name(self) -> &'static str { Self::NAMES[self as usize] }
        }
    };
}

category!(
    /// What happened to a frame at the PHY.
    PhyEvent { Tx => "tx", Rx => "rx", Drop => "drop" });
category!(
    /// Why a frame addressed to a node (or broadcast) was not received.
    DropReason {
        None => "",
        /// Too weak to detect the preamble over noise and interference.
        PreambleMissed => "preamble-missed",
        /// The receiver was transmitting.
        Transmitting => "transmitting",
        /// The receiver was locked on another frame.
        Busy => "busy",
        /// The receiver abandoned it for a much stronger frame (capture).
        Captured => "captured",
        /// Bit errors: the FCS check failed (SINR too low over the frame).
        Error => "error",
    });
category!(
    /// 802.11 frame kinds.
    FrameKind { Data => "data", Ack => "ack", Rts => "rts", Cts => "cts" });
category!(
    /// Outcome of one MSDU at the MAC.
    MacEvent {
        /// Acknowledged by the receiver (or sent, if broadcast).
        Delivered => "delivered",
        /// Retry chain exhausted without an ACK.
        Failed => "failed",
        /// Dropped on arrival: transmit queue full.
        QueueDrop => "queue-drop",
        /// Handed up at the receiver.
        Received => "received",
        /// A retransmission already received, acknowledged but not handed up.
        Duplicate => "duplicate",
    });

/// Columns of the `frames` table: one row per PHY transmission, reception or drop.
#[derive(Default, Debug, Clone)]
pub struct FrameTable {
    pub time_ns: Vec<u64>,
    pub node: Vec<u32>,
    pub peer: Vec<u32>,
    pub event: Vec<u8>,
    pub reason: Vec<u8>,
    pub kind: Vec<u8>,
    pub rate_mbps: Vec<f32>,
    pub bytes: Vec<u32>,
    pub seq: Vec<u16>,
    pub attempt: Vec<u8>,
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub rssi_dbm: Vec<f32>,
    pub snr_db: Vec<f32>,
    pub sinr_db: Vec<f32>,
}

/// One `frames` row.
#[derive(Clone, Copy, Debug)]
pub struct FrameRow {
    pub time_ns: u64,
    pub node: u32,
    pub peer: u32,
    pub event: PhyEvent,
    pub reason: DropReason,
    pub kind: FrameKind,
    pub rate_mbps: f32,
    pub bytes: u32,
    pub seq: u16,
    pub attempt: u8,
    pub x: f32,
    pub y: f32,
    /// NaN for transmissions.
    pub rssi_dbm: f32,
    pub snr_db: f32,
    /// Lowest SINR over the frame (NaN where not received).
    pub sinr_db: f32,
}

impl FrameTable {
    pub fn push(&mut self, r: FrameRow) {
        self.time_ns.push(r.time_ns);
        self.node.push(r.node);
        self.peer.push(r.peer);
        self.event.push(r.event.code());
        self.reason.push(r.reason.code());
        self.kind.push(r.kind.code());
        self.rate_mbps.push(r.rate_mbps);
        self.bytes.push(r.bytes);
        self.seq.push(r.seq);
        self.attempt.push(r.attempt);
        self.x.push(r.x);
        self.y.push(r.y);
        self.rssi_dbm.push(r.rssi_dbm);
        self.snr_db.push(r.snr_db);
        self.sinr_db.push(r.sinr_db);
    }
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
    pub fn columns(&self) -> Vec<(&'static str, Column<'_>)> {
        vec![
            ("time_ns", Column::U64(&self.time_ns)),
            ("node", Column::Node(&self.node)),
            ("peer", Column::Node(&self.peer)),
            ("event", Column::Category(&self.event, PhyEvent::NAMES)),
            ("reason", Column::Category(&self.reason, DropReason::NAMES)),
            ("kind", Column::Category(&self.kind, FrameKind::NAMES)),
            ("rate_mbps", Column::F32(&self.rate_mbps)),
            ("bytes", Column::U32(&self.bytes)),
            ("seq", Column::U16(&self.seq)),
            ("attempt", Column::U8(&self.attempt)),
            ("x", Column::F32(&self.x)),
            ("y", Column::F32(&self.y)),
            ("rssi_dbm", Column::F32(&self.rssi_dbm)),
            ("snr_db", Column::F32(&self.snr_db)),
            ("sinr_db", Column::F32(&self.sinr_db)),
        ]
    }
}

/// Columns of the `mac` table: one row per MSDU outcome.
#[derive(Default, Debug, Clone)]
pub struct MacTable {
    pub time_ns: Vec<u64>,
    pub node: Vec<u32>,
    pub peer: Vec<u32>,
    pub event: Vec<u8>,
    pub seq: Vec<u16>,
    pub bytes: Vec<u32>,
    pub attempts: Vec<u8>,
    pub delay_ns: Vec<u64>,
    pub x: Vec<f32>,
    pub y: Vec<f32>,
}

/// One `mac` row.
#[derive(Clone, Copy, Debug)]
pub struct MacRow {
    pub time_ns: u64,
    pub node: u32,
    pub peer: u32,
    pub event: MacEvent,
    pub seq: u16,
    /// MSDU (payload) bytes.
    pub bytes: u32,
    pub attempts: u8,
    /// From enqueue to outcome at the sender; 0 at the receiver.
    pub delay_ns: u64,
    pub x: f32,
    pub y: f32,
}

impl MacTable {
    pub fn push(&mut self, r: MacRow) {
        self.time_ns.push(r.time_ns);
        self.node.push(r.node);
        self.peer.push(r.peer);
        self.event.push(r.event.code());
        self.seq.push(r.seq);
        self.bytes.push(r.bytes);
        self.attempts.push(r.attempts);
        self.delay_ns.push(r.delay_ns);
        self.x.push(r.x);
        self.y.push(r.y);
    }
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
    pub fn columns(&self) -> Vec<(&'static str, Column<'_>)> {
        vec![
            ("time_ns", Column::U64(&self.time_ns)),
            ("node", Column::Node(&self.node)),
            ("peer", Column::Node(&self.peer)),
            ("event", Column::Category(&self.event, MacEvent::NAMES)),
            ("seq", Column::U16(&self.seq)),
            ("bytes", Column::U32(&self.bytes)),
            ("attempts", Column::U8(&self.attempts)),
            ("delay_ns", Column::U64(&self.delay_ns)),
            ("x", Column::F32(&self.x)),
            ("y", Column::F32(&self.y)),
        ]
    }
}

/// A borrowed column, typed for export.
#[derive(Debug, Clone, Copy)]
pub enum Column<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F32(&'a [f32]),
    /// Node indices; the dictionary is the run's node names.
    Node(&'a [u32]),
    /// Category codes and their names.
    Category(&'a [u8], &'static [&'static str]),
}

/// Everything a run recorded.
#[derive(Default, Debug, Clone)]
pub struct Trace {
    pub frames: FrameTable,
    pub mac: MacTable,
}
