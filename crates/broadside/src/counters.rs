//! Packet and byte counters by kind (beacon, discovery, control, data, ack),
//! plus the drops and anomalies a node should be able to report.

/// Counter class of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// Periodic beacons.
    Beacon,
    /// Filters, match filters, file records and plans.
    Discovery,
    /// Offers, wants (the first receive vector) and closes.
    Control,
    /// File blocks.
    Data,
    /// Receive vectors sent as acknowledgements.
    Ack,
}

/// Packets and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Packets.
    pub packets: u64,
    /// Bytes (whole datagrams).
    pub bytes: u64,
}

/// One tally per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ByKind {
    pub beacon: Tally,
    pub discovery: Tally,
    pub control: Tally,
    pub data: Tally,
    pub ack: Tally,
}

impl ByKind {
    /// The tally of one kind.
    pub fn get(&self, kind: PacketKind) -> Tally {
        match kind {
            PacketKind::Beacon => self.beacon,
            PacketKind::Discovery => self.discovery,
            PacketKind::Control => self.control,
            PacketKind::Data => self.data,
            PacketKind::Ack => self.ack,
        }
    }
    fn get_mut(&mut self, kind: PacketKind) -> &mut Tally {
        match kind {
            PacketKind::Beacon => &mut self.beacon,
            PacketKind::Discovery => &mut self.discovery,
            PacketKind::Control => &mut self.control,
            PacketKind::Data => &mut self.data,
            PacketKind::Ack => &mut self.ack,
        }
    }
    /// Adds one packet of `bytes`.
    pub fn add(&mut self, kind: PacketKind, bytes: usize) {
        let t = self.get_mut(kind);
        t.packets += 1;
        t.bytes += bytes as u64;
    }
}

/// Everything an endpoint counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Sent.
    pub tx: ByKind,
    /// Received and parsed.
    pub rx: ByKind,
    /// Datagrams that failed to parse.
    pub malformed: u64,
    /// Datagrams dropped by a rate limit, the peer-table limit or a penalty.
    pub rate_limited: u64,
    /// Datagrams from addresses not validated (answered with a token at most).
    pub unvalidated: u64,
    /// Blocks or hash chunks that failed verification.
    pub poisoned_blocks: u64,
    /// v2 blocks that arrived before their hash chunk: stored unmarked and
    /// checked when the chunk arrives.
    pub unverified_blocks: u64,
    /// Receive-vector persists through storage.
    pub persists: u64,
    /// File bytes written to storage from data packets (new blocks only).
    pub file_bytes_received: u64,
    /// File bytes sent in data packets.
    pub file_bytes_sent: u64,
    /// Data packets for blocks already held.
    pub duplicate_blocks: u64,
    /// Data packets for blocks that were already held when the transfer was
    /// resumed from a stored receive vector (should stay zero: the vector
    /// told the sender not to send them).
    pub resumed_blocks_resent: u64,
}
