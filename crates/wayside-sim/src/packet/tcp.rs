//! The TCP segment as it travels: header fields and a payload length
//! (RFC 9293 §3.1; options as in RFC 2018 and RFC 7323). The connection
//! that sends and receives it is [`crate::transport::tcp`].

/// Most SACK blocks in one segment (RFC 2018 with 40 bytes of options
/// leaves room for 4 without timestamps; Linux sends at most 3 with them,
/// and the simulator's segment carries 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// TCP header flags the simulator models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// A TCP segment: header fields and the payload length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: Flags,
    /// Receive window in bytes, already scaled.
    pub window: u32,
    /// Payload bytes.
    pub len: u32,
    /// MSS option (SYN only).
    pub mss: Option<u16>,
    /// SACK-permitted option (SYN only).
    pub sack_permitted: bool,
    /// Window-scale option present (SYN only); the shift is implied by
    /// `window` already being scaled.
    pub window_scale: bool,
    /// SACK blocks `[left, right)`, most recent first.
    pub sack: [Option<(u32, u32)>; MAX_SACK_BLOCKS],
}

impl Segment {
    /// Header bytes on the wire: 20 plus options padded to 4 bytes
    /// (MSS 4, SACK-permitted 2, window scale 3, SACK 2 + 8 per block).
    pub fn header_bytes(&self) -> u32 {
        let blocks = self.sack.iter().flatten().count() as u32;
        let opts = 4 * self.mss.is_some() as u32
            + 2 * self.sack_permitted as u32
            + 3 * self.window_scale as u32
            + if blocks > 0 { 2 + 8 * blocks } else { 0 };
        20 + opts.div_ceil(4) * 4
    }
    /// Sequence space the segment occupies (payload plus SYN and FIN).
    pub fn seq_len(&self) -> u32 {
        self.len
            .saturating_add(self.flags.syn as u32)
            .saturating_add(self.flags.fin as u32)
    }
}
