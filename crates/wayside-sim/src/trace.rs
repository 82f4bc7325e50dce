//! Typed trace points, recorded into columnar buffers.
//!
//! Every PHY transmission, reception and drop (`frames`) and every MAC outcome
//! (`mac`) is one row carrying time, node and position. Columns are plain
//! vectors so the bindings can hand them to Arrow without a per-row step;
//! categorical columns are `u8` codes with a fixed dictionary.

use std::borrow::Cow;

/// Declares a categorical value: a `u8` code with a fixed, documented name.
macro_rules! category {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl Cell<u8> for $name {
            fn cell(self) -> u8 { self as u8 }
        }
        impl $name {
            /// The names of the codes, in code order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
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
    /// Whether a transmission got its response: on `tx` rows of unicast
    /// data, management and RTS frames, `acked` when the ACK (for RTS: the
    /// CTS) arrived, `unacked` when it did not; empty on every other row.
    TxOutcome { None => "", Acked => "acked", Unacked => "unacked" });
category!(
/// 802.11 frame kinds.
FrameKind {
    Data => "data",
    Ack => "ack",
    Rts => "rts",
    Cts => "cts",
    Beacon => "beacon",
    ProbeReq => "probe-req",
    ProbeResp => "probe-resp",
    Auth => "auth",
    AssocReq => "assoc-req",
    AssocResp => "assoc-resp",
    Disassoc => "disassoc",
    ReassocReq => "reassoc-req",
    ReassocResp => "reassoc-resp",
    Deauth => "deauth",
    BlockAck => "block-ack",
    BlockAckReq => "block-ack-req",
});
category!(
/// Connection events, with time and position: what a drive-by's setup
/// and teardown are made of.
ConnEvent {
    /// Station: first beacon or probe response heard from an AP (value: RSSI dBm).
    FirstBeacon => "first-beacon",
    /// Station: AP chosen at the end of a scan cycle (value: filtered RSSI dBm).
    ApSelected => "ap-selected",
    /// Station: authentication request sent (value: attempt).
    AuthRequest => "auth-request",
    AuthTimeout => "auth-timeout",
    AuthOk => "auth-ok",
    /// Station: association request sent (value: attempt).
    AssocRequest => "assoc-request",
    AssocTimeout => "assoc-timeout",
    /// Both sides: association complete.
    Associated => "associated",
    /// Both sides (station: beacons missed; AP: inactivity, value 1, or
    /// the station's disassociation, value its reason code).
    Disassociated => "disassociated",
    ArpRequest => "arp-request",
    ArpResolved => "arp-resolved",
    ArpFailed => "arp-failed",
    /// Station: DHCP DISCOVER / REQUEST sent (value: attempt).
    DhcpDiscover => "dhcp-discover",
    DhcpRequest => "dhcp-request",
    /// Station: DHCP ACK received; the station has an address.
    DhcpBound => "dhcp-bound",
    AppStart => "app-start",
    Syn => "syn",
    SynRetransmit => "syn-retransmit",
    Established => "established",
    FirstData => "first-data",
    LastData => "last-data",
    /// TCP retransmission timeout (value: new RTO in seconds).
    TcpTimeout => "tcp-timeout",
    TcpGaveUp => "tcp-gave-up",
    /// AP: a packet from the wired side found its forwarding engine's queue
    /// full and was dropped (value: packets queued; peer: its destination).
    ForwardDrop => "forward-drop",
    /// A frame put on a wired link found that direction's queue full and
    /// was dropped (value: the link's queue limit; peer: the packet's
    /// destination, or the far end for a layer-2 update).
    WireDrop => "wire-drop",
    /// Request-response client: a multicast trigger heard (value: its sequence number).
    TriggerHeard => "trigger-heard",
    /// Request-response client: an exchange completed (value: seconds from request to the whole response).
    Exchange => "exchange",
    /// Station: an application waiting for the production phase may start
    /// (value: fraction of the AP's beacons heard over the window).
    Production => "production",
    /// Broadside: a synchronisation with the peer began.
    SyncStarted => "sync-started",
    /// Broadside: a file transfer from the peer started or resumed
    /// (value: blocks already held).
    TransferStarted => "transfer-started",
    /// Broadside: the peer fell silent during a transfer; the partial is
    /// kept (value: blocks held).
    TransferStalled => "transfer-stalled",
    /// Broadside: a file from the peer was received, verified and committed.
    FileUpdated => "file-updated",
    /// Geographic routing: a packet held for want of a neighbour closer
    /// to its destination was dropped after its retries (peer: its
    /// destination; value: retries).
    RouteDrop => "route-drop",
    /// Geographic routing: a TCP segment with data reached its
    /// destination (peer: its source; value: hops it took).
    GeoHops => "geo-hops",
    /// Geographic routing: the same segment's end-to-end latency
    /// (peer: its source; value: seconds since the source sent it).
    GeoLatency => "geo-latency",
    /// Ad hoc: the link to the peer came up (a beacon or probe
    /// response of the IBSS heard; value: RSSI dBm).
    LinkUp => "link-up",
    /// Ad hoc: the link to the peer went down (nothing that keeps it
    /// alive heard for the disconnection timeout).
    LinkDown => "link-down",
    /// A host with the windows-xp ARP profile announced its address
    /// (gratuitous ARP) as its first link came up, and sends nothing
    /// else for the value's seconds.
    ArpAnnounce => "arp-announce",
    /// Station: a background scan started while associated (value: the
    /// AP's averaged beacon signal, dBm).
    BackgroundScan => "background-scan",
    /// Station: leaving its AP for the peer after a background scan
    /// (value: the peer's signal in the scan, dBm).
    Roam => "roam",
    /// Station: reassociation request sent to the peer (value: attempt).
    ReassocRequest => "reassoc-request",
    /// AP: the station sent a deauthentication (value: reason code).
    Deauthenticated => "deauthenticated",
});
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
    /// Dropped on arrival, or flushed from the queue: the radio is off
    /// (before the node appears, or after it disappears).
    RadioOff => "radio-off",
    /// Dropped on arrival: an ad hoc node has no link to the receiver
    /// (the card reports media disconnected).
    NoLink => "no-link",
    /// Dropped by CoDel at dequeue (an AP's `fq_codel` or `airtime` queue).
    CodelDrop => "codel-drop",
});

category!(
/// What an MSDU carries, on `mac` rows of data ([`crate::mac::Payload::content`]):
/// a TCP segment by its role, or a Broadside datagram (raw or over UDP)
/// by its class as the `broadside` crate counts it; empty for anything
/// else (management, ARP, DHCP, frame-source filler).
MsduContent {
    Other => "",
    /// A pure acknowledgement: no payload, no SYN, FIN or RST.
    TcpAck => "tcp-ack",
    /// SYN, FIN or RST without payload.
    TcpControl => "tcp-control",
    /// A segment with payload (an application's stream).
    TcpData => "tcp-data",
    BroadsideBeacon => "bs-beacon",
    /// Filters, match filters, file records and plans.
    BroadsideDiscovery => "bs-discovery",
    /// Offers, wants (the first receive vector) and closes.
    BroadsideControl => "bs-control",
    /// File blocks.
    BroadsideData => "bs-data",
    /// Receive vectors sent as acknowledgements.
    BroadsideAck => "bs-ack",
});

/// How a row field is stored in its column: as is, or as a category code.
pub trait Cell<T> {
    fn cell(self) -> T;
}

impl<T> Cell<T> for T {
    fn cell(self) -> T {
        self
    }
}

/// Declares a row struct, its columnar table, `push` and typed `columns()`.
macro_rules! table {
    ($(#[$tm:meta])* $table:ident, $(#[$rm:meta])* $row:ident {
        $( $(#[$fm:meta])* $field:ident : $ty:ty => $col:ty = $make:expr ),+ $(,)?
    }) => {
        $(#[$rm])*
        #[derive(Clone, Copy, Debug)]
        pub struct $row { $( $(#[$fm])* pub $field: $ty ),+ }

        $(#[$tm])*
        #[derive(Default, Debug, Clone)]
        pub struct $table { $( pub $field: Vec<$col> ),+ }

        impl $table {
            pub fn push(&mut self, r: $row) {
                $( self.$field.push(Cell::cell(r.$field)); )+
            }
            pub fn len(&self) -> usize {
                self.time_ns.len()
            }
            pub fn is_empty(&self) -> bool {
                self.time_ns.is_empty()
            }
            pub fn columns(&self) -> Vec<(&'static str, Column<'_>)> {
                vec![ $( (stringify!($field), ($make)(Cow::Borrowed(&self.$field[..]))) ),+ ]
            }
            /// The columns, owning their buffers (handed on without a copy).
            pub fn into_columns(self) -> Vec<(&'static str, Column<'static>)> {
                vec![ $( (stringify!($field), ($make)(Cow::Owned(self.$field))) ),+ ]
            }
            /// Takes out the first `n` rows, leaving the rest.
            pub fn take_front(&mut self, n: usize) -> Self {
                let mut front = Self::default();
                $( let rest = self.$field.split_off(n);
                   front.$field = std::mem::replace(&mut self.$field, rest); )+
                front
            }
        }
    };
}

table!(
    /// The `frames` table: one row per PHY transmission, reception or drop.
    FrameTable,
    /// One `frames` row.
    FrameRow {
        time_ns: u64 => u64 = Column::U64,
        node: u32 => u32 = Column::Node,
        peer: u32 => u32 = Column::Node,
        event: PhyEvent => u8 = |v| Column::Category(v, PhyEvent::NAMES),
        reason: DropReason => u8 = |v| Column::Category(v, DropReason::NAMES),
        kind: FrameKind => u8 = |v| Column::Category(v, FrameKind::NAMES),
        rate_mbps: f32 => f32 = Column::F32,
        bytes: u32 => u32 = Column::U32,
        seq: u16 => u16 = Column::U16,
        attempt: u8 => u8 = Column::U8,
        /// Where the recording node was.
        x: f32 => f32 = Column::F32,
        y: f32 => f32 = Column::F32,
        /// Where the peer was (NaN for broadcast): with `x`, `y` a row
        /// places both ends of the link, e.g. the car for an AP's `tx` rows.
        peer_x: f32 => f32 = Column::F32,
        peer_y: f32 => f32 = Column::F32,
        /// NaN for transmissions.
        rssi_dbm: f32 => f32 = Column::F32,
        snr_db: f32 => f32 = Column::F32,
        /// Lowest SINR over the frame (NaN where not received).
        sinr_db: f32 => f32 = Column::F32,
        /// Filled in when the response is due (see [`TxOutcome`]).
        outcome: TxOutcome => u8 = |v| Column::Category(v, TxOutcome::NAMES),
    }
);

impl FrameTable {
    /// Records the outcome of the transmission in row `row`.
    pub fn set_outcome(&mut self, row: usize, outcome: TxOutcome) {
        self.outcome[row] = outcome.cell();
    }
}

table!(
    /// The `mac` table: one row per MSDU outcome.
    MacTable,
    /// One `mac` row.
    MacRow {
        time_ns: u64 => u64 = Column::U64,
        node: u32 => u32 = Column::Node,
        peer: u32 => u32 = Column::Node,
        event: MacEvent => u8 = |v| Column::Category(v, MacEvent::NAMES),
        seq: u16 => u16 = Column::U16,
        /// MSDU (payload) bytes.
        bytes: u32 => u32 = Column::U32,
        attempts: u8 => u8 = Column::U8,
        /// From enqueue to outcome at the sender; 0 at the receiver.
        delay_ns: u64 => u64 = Column::U64,
        x: f32 => f32 = Column::F32,
        y: f32 => f32 = Column::F32,
        /// What the MSDU carries.
        content: MsduContent => u8 = |v| Column::Category(v, MsduContent::NAMES),
    }
);

table!(
    /// The `events` table: connection events.
    EventTable,
    /// One `events` row.
    EventRow {
        time_ns: u64 => u64 = Column::U64,
        node: u32 => u32 = Column::Node,
        peer: u32 => u32 = Column::Node,
        event: ConnEvent => u8 = |v| Column::Category(v, ConnEvent::NAMES),
        x: f32 => f32 = Column::F32,
        y: f32 => f32 = Column::F32,
        /// Event-specific figure (see [`ConnEvent`]); NaN where none.
        value: f64 => f64 = Column::F64,
    }
);

category!(
/// Transport protocol.
Proto {
    Udp => "udp",
    Tcp => "tcp",
    /// An application's own frames straight over the link, no IP.
    Raw => "raw",
});

table!(
    /// The `tcp` table: one row per ACK processed by a TCP sender.
    TcpTable,
    /// One `tcp` row.
    TcpRow {
        time_ns: u64 => u64 = Column::U64,
        node: u32 => u32 = Column::Node,
        peer: u32 => u32 = Column::Node,
        /// Congestion window, segments.
        cwnd: u32 => u32 = Column::U32,
        /// Slow-start threshold, segments (u32::MAX before the first loss).
        ssthresh: u32 => u32 = Column::U32,
        srtt_ms: f32 => f32 = Column::F32,
        rto_ms: f32 => f32 = Column::F32,
        dupacks: u32 => u32 = Column::U32,
        /// Segments in flight.
        in_flight: u32 => u32 = Column::U32,
        /// Bytes newly acknowledged.
        acked: u32 => u32 = Column::U32,
        x: f32 => f32 = Column::F32,
        y: f32 => f32 = Column::F32,
    }
);

table!(
    /// The `transport` table: data delivered to applications — every UDP
    /// datagram received, and every advance of a TCP receiver's in-order data.
    TransportTable,
    /// One `transport` row.
    TransportRow {
        time_ns: u64 => u64 = Column::U64,
        node: u32 => u32 = Column::Node,
        peer: u32 => u32 = Column::Node,
        proto: Proto => u8 = |v| Column::Category(v, Proto::NAMES),
        app: u32 => u32 = Column::U32,
        /// UDP: the sender's sequence number; TCP: bytes received in order so far.
        seq: u64 => u64 = Column::U64,
        /// Payload bytes delivered by this row.
        bytes: u32 => u32 = Column::U32,
        /// UDP: one-way delay; TCP: 0.
        delay_ns: u64 => u64 = Column::U64,
        x: f32 => f32 = Column::F32,
        y: f32 => f32 = Column::F32,
    }
);

/// A column, typed for export: borrowed (`Trace::tables`) or owned
/// (`Trace::into_tables`).
#[derive(Debug, Clone)]
pub enum Column<'a> {
    U8(Cow<'a, [u8]>),
    U16(Cow<'a, [u16]>),
    U32(Cow<'a, [u32]>),
    U64(Cow<'a, [u64]>),
    F32(Cow<'a, [f32]>),
    F64(Cow<'a, [f64]>),
    /// Node indices; the dictionary is the run's node names.
    Node(Cow<'a, [u32]>),
    /// Category codes and their names.
    Category(Cow<'a, [u8]>, &'static [&'static str]),
}

/// Where a run's trace goes while the run goes on, in batches of rows: a
/// table's batches come in the order of its rows, and at the end of the run
/// every table sends one more (possibly empty) batch.
pub trait TraceSink: Send {
    /// Rows of table `table`, as [`Trace::into_tables`] gives them.
    fn write(&mut self, table: &'static str, columns: Vec<(&'static str, Column<'static>)>);
}

/// Everything a run recorded.
#[derive(Default, Debug, Clone)]
pub struct Trace {
    pub frames: FrameTable,
    pub mac: MacTable,
    pub events: EventTable,
    pub tcp: TcpTable,
    pub transport: TransportTable,
    /// The frames whose preamble a radio could not detect.
    pub undetectable: Undetectable,
}

/// Arrivals of frames whose preamble the radio could not detect
/// ([`crate::air::UNDETECTABLE`]). Their drops, which the `frames` table
/// would record (frames addressed to the radio or broadcast, everything
/// at the sniffer), are counted here instead, unless the scenario keeps
/// the rows (`radio.undetectable_rows`).
#[derive(Default, Debug, Clone)]
pub struct Undetectable {
    /// Per node (by index), the drops counted instead of rows, by reason:
    /// `preamble-missed`, `busy`, `transmitting` ([`Undetectable::REASONS`]).
    pub drops: Vec<[u64; 3]>,
    /// Arrivals run outside the event queue (each two events fewer).
    pub arrivals: u64,
    /// Of those, the ones where the PHY would have locked on the frame
    /// (its detection draw, at most [`crate::air::UNDETECTABLE`], came
    /// out) or the MAC seen the medium change: where the run may differ
    /// from one that keeps the rows.
    pub divergent: u64,
    /// With the rows kept: the `frames` rows that record such drops.
    pub rows: Vec<u32>,
}

impl Undetectable {
    /// The drop reasons [`Undetectable::drops`] counts, in its order.
    pub const REASONS: [DropReason; 3] = [
        DropReason::PreambleMissed,
        DropReason::Busy,
        DropReason::Transmitting,
    ];
}

/// Every table of a trace with its name, each as `$columns` gives its columns.
macro_rules! each_table {
    ($trace:expr, $columns:ident) => {
        vec![
            ("frames", $trace.frames.$columns()),
            ("mac", $trace.mac.$columns()),
            ("events", $trace.events.$columns()),
            ("tcp", $trace.tcp.$columns()),
            ("transport", $trace.transport.$columns()),
        ]
    };
}

impl Trace {
    /// Every table with its name, for export.
    pub fn tables(&self) -> Vec<(&'static str, Vec<(&'static str, Column<'_>)>)> {
        each_table!(self, columns)
    }

    /// Every table with its name, owning its columns: for handing the
    /// buffers on (to Arrow) without a copy.
    pub fn into_tables(self) -> Vec<(&'static str, Vec<(&'static str, Column<'static>)>)> {
        each_table!(self, into_columns)
    }
}
