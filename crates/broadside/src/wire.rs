//! Packet formats, smoltcp-style: [`Packet`] is a checked view over raw bytes,
//! [`Message`] the validated representation that can be emitted again.
//!
//! Every packet starts with `"BS"`, format version `2` and a kind byte. All
//! integers are big-endian. Parsing untrusted bytes never panics and never
//! allocates more than the input's size.
//!
//! | kind | fields after the 4-byte header |
//! |------|--------------------------------|
//! | Beacon | node u64, file count u32, content hash \[20\] |
//! | Filters | session u32, round u16, rounds u16, salt u32, k u8, flags u8, file filter, version filter (equal halves) |
//! | Match | session u32, round u16, salt u32, k u8, flags u8, match filter (empty: no candidates) |
//! | Records | session u32, round u16, seq u16, total u16, n × (fileId \[20\], version u16) |
//! | Plan | session u32, round u16, count u16, 2-bit action per record |
//! | Offer | certificate |
//! | Want | auth \[16\], transfer u32, instanceId \[20\], block size u16, segment u32, receive vector |
//! | Data | transfer u32, block u16, bytes |
//! | Ack | transfer u32, receive vector |
//! | Close | instanceId \[20\], status u8 |
//! | Token | echo \[16\], token \[16\] (either may be all zero: none) |
//! | Interest | n × provider key \[32\] (n ≥ 1) |
//!
//! `auth` is the session secret the Want's receiver gave its sender when
//! they validated each other (see [`validate`](crate::validate)): a Want
//! starts an upload, so a source spoofing a validated address without it
//! gets nothing. Acks need no secret: they steer an upload only under
//! the random transfer id its authenticated Want chose, which an off-path
//! source never sees.

use crate::bitvec::BitVec;
use crate::counters::PacketKind;
use crate::id::{FileId, Id160, InstanceId, ID_LEN};
use crate::validate::{Token, TOKEN_LEN};

/// First two bytes of every packet.
pub const MAGIC: [u8; 2] = *b"BS";
/// Wire format version.
pub const FORMAT: u8 = 2;
/// Bytes of the common header.
pub const HEADER_LEN: usize = 4;
/// Bytes of a Filters packet before the two filters (the paper's 2304-byte
/// frame then leaves 2 × 1143 bytes = 2 × 9144 bits).
pub const FILTERS_HEADER_LEN: usize = HEADER_LEN + 14;
/// Bytes of a Match packet before the filter.
pub const MATCH_HEADER_LEN: usize = HEADER_LEN + 12;
/// Bytes of a Records packet before the records.
pub const RECORDS_HEADER_LEN: usize = HEADER_LEN + 10;
/// Bytes of a Plan packet before the actions.
pub const PLAN_HEADER_LEN: usize = HEADER_LEN + 8;
/// Bytes of a Data packet before the block.
pub const DATA_HEADER_LEN: usize = HEADER_LEN + 6;
/// Bytes of an Ack packet before the vector bytes (incl. the vector's length).
pub const ACK_HEADER_LEN: usize = HEADER_LEN + 4 + 4;
/// Bytes of a Want packet before the vector bytes (incl. the vector's length).
pub const WANT_HEADER_LEN: usize = HEADER_LEN + TOKEN_LEN + 4 + ID_LEN + 2 + 4 + 4;
/// One file record: fileId and version (§4.1: 22 bytes).
pub const RECORD_LEN: usize = ID_LEN + 2;
/// Most blocks in one segment: block ids are 2 bytes, as in §4.2.
pub const MAX_SEGMENT_BLOCKS: u32 = 1 << 16;
/// Bytes of a Token packet.
pub const TOKEN_PACKET_LEN: usize = HEADER_LEN + 2 * TOKEN_LEN;
/// Bytes of one provider key in an Interest packet.
pub const KEY_LEN: usize = 32;
/// Most hash functions a filter may ask the receiver to evaluate.
pub const MAX_HASH_COUNT: u8 = 32;

/// Why bytes were not a valid packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Too short for the header or the fixed fields of its kind.
    #[error("packet truncated")]
    Truncated,
    /// Not a Broadside packet.
    #[error("bad magic")]
    BadMagic,
    /// A format version this implementation does not speak.
    #[error("unsupported format version {0}")]
    BadFormat(u8),
    /// Unknown kind byte.
    #[error("unknown packet kind {0}")]
    UnknownKind(u8),
    /// A field holds a value outside its range.
    #[error("invalid field {0}")]
    InvalidField(&'static str),
    /// The packet is longer than its kind allows.
    #[error("trailing bytes")]
    Trailing,
    /// A bit vector claims more bits than any transfer may have.
    #[error("bit vector claims {claimed} bits, at most {max} allowed")]
    BitVecTooLong {
        /// Claimed bits.
        claimed: u32,
        /// Allowed bits.
        max: u32,
    },
    /// A bit vector's claimed length does not match its bytes.
    #[error("bit vector claims {claimed} bits but carries {bytes} bytes")]
    BitVecLength {
        /// Claimed bits.
        claimed: u32,
        /// Bytes present.
        bytes: usize,
    },
    /// Bits past the vector's length are set.
    #[error("bit vector has set padding bits")]
    BitVecPadding,
}

/// Packet kind byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum MsgType {
    Beacon = 1,
    Filters = 2,
    Match = 3,
    Records = 4,
    Plan = 5,
    Offer = 6,
    Want = 7,
    Data = 8,
    Ack = 9,
    Close = 10,
    Token = 11,
    Interest = 12,
}

impl MsgType {
    fn from_u8(b: u8) -> Result<Self, WireError> {
        use MsgType::*;
        Ok(match b {
            1 => Beacon,
            2 => Filters,
            3 => Match,
            4 => Records,
            5 => Plan,
            6 => Offer,
            7 => Want,
            8 => Data,
            9 => Ack,
            10 => Close,
            11 => Token,
            12 => Interest,
            other => return Err(WireError::UnknownKind(other)),
        })
    }

    /// The counter class of this kind.
    pub fn class(self) -> PacketKind {
        use MsgType::*;
        match self {
            Beacon => PacketKind::Beacon,
            Filters | Match | Records | Plan => PacketKind::Discovery,
            Offer | Want | Close | Token | Interest => PacketKind::Control,
            Data => PacketKind::Data,
            Ack => PacketKind::Ack,
        }
    }
}

/// A checked view over a packet: header valid, kind known.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
    kind: MsgType,
}

impl<'a> Packet<'a> {
    /// Checks magic, format and kind.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if buf[..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if buf[2] != FORMAT {
            return Err(WireError::BadFormat(buf[2]));
        }
        Ok(Packet {
            buf,
            kind: MsgType::from_u8(buf[3])?,
        })
    }
    /// The kind byte.
    pub fn kind(&self) -> MsgType {
        self.kind
    }
    /// Bytes after the header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[HEADER_LEN..]
    }
}

/// Push-or-pull decision for one file record (§4.1), from the responder's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do (a false positive, or same version).
    None,
    /// The responder has the newer version and pushes it to the initiator.
    Push,
    /// The initiator has the newer version; the responder pulls it.
    Pull,
}

/// A 22-byte file record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRecord {
    /// The file.
    pub file_id: FileId,
    /// The sender's version of it.
    pub version: u16,
}

/// How a receiver ended an offer (the Close packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CloseCode {
    /// Received, verified and stored.
    Complete = 0,
    /// The receiver already has this version or a newer one.
    HaveNewer = 1,
    /// The certificate was refused (untrusted, invalid, bad name, too large).
    Refused = 2,
    /// A transfer of this file is already running with another peer.
    Busy = 3,
    /// The receiver does not hold this file at all (Broadside syncs common files).
    NotCommon = 4,
    /// The content did not match the certificate, or storage failed.
    Failed = 5,
    /// The sender no longer has this instance.
    Gone = 6,
}

impl CloseCode {
    fn from_u8(b: u8) -> Result<Self, WireError> {
        use CloseCode::*;
        Ok(match b {
            0 => Complete,
            1 => HaveNewer,
            2 => Refused,
            3 => Busy,
            4 => NotCommon,
            5 => Failed,
            6 => Gone,
            _ => return Err(WireError::InvalidField("close status")),
        })
    }
}

/// A validated packet.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Message<'a> {
    Beacon {
        node: u64,
        file_count: u32,
        content_hash: Id160,
    },
    Filters {
        session: u32,
        round: u16,
        rounds: u16,
        salt: u32,
        k: u8,
        file_filter: &'a [u8],
        version_filter: &'a [u8],
    },
    Match {
        session: u32,
        round: u16,
        salt: u32,
        k: u8,
        filter: &'a [u8],
    },
    Records {
        session: u32,
        round: u16,
        seq: u16,
        total: u16,
        records: &'a [u8],
    },
    Plan {
        session: u32,
        round: u16,
        count: u16,
        codes: &'a [u8],
    },
    Offer {
        cert: &'a [u8],
    },
    Want {
        /// The session secret its receiver gave this node.
        auth: Token,
        transfer: u32,
        instance: InstanceId,
        block_size: u16,
        segment: u32,
        vector: BitVec,
    },
    Data {
        transfer: u32,
        block: u16,
        bytes: &'a [u8],
    },
    Ack {
        transfer: u32,
        vector: BitVec,
    },
    Close {
        instance: InstanceId,
        status: CloseCode,
    },
    /// Address validation: `echo` returns a token the receiver issued to
    /// the sender; `token` is one the sender issued to the receiver, to be
    /// echoed. All zero means absent.
    Token {
        echo: Token,
        token: Token,
    },
    /// Provider keys whose files the sender wants, held or not.
    Interest {
        keys: &'a [u8],
    },
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok((u64::from(self.u32()?) << 32) | u64::from(self.u32()?))
    }
    fn token(&mut self) -> Result<Token, WireError> {
        let mut t = [0u8; TOKEN_LEN];
        t.copy_from_slice(self.take(TOKEN_LEN)?);
        Ok(t)
    }
    fn id(&mut self) -> Result<Id160, WireError> {
        Id160::from_slice(self.take(ID_LEN)?).ok_or(WireError::Truncated)
    }
    fn k(&mut self) -> Result<u8, WireError> {
        match self.u8()? {
            k @ 1..=MAX_HASH_COUNT => Ok(k),
            _ => Err(WireError::InvalidField("hash count")),
        }
    }
    /// A reserved flags byte: must be zero so that parsing is canonical.
    fn flags(&mut self) -> Result<(), WireError> {
        match self.u8()? {
            0 => Ok(()),
            _ => Err(WireError::InvalidField("reserved flags")),
        }
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    fn end(&self) -> Result<(), WireError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(WireError::Trailing)
        }
    }
}

impl<'a> Message<'a> {
    /// Parses and validates a packet.
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let pkt = Packet::new_checked(buf)?;
        let mut r = Reader(pkt.payload());
        let msg = match pkt.kind() {
            MsgType::Beacon => Message::Beacon {
                node: r.u64()?,
                file_count: r.u32()?,
                content_hash: r.id()?,
            },
            MsgType::Filters => {
                let (session, round, rounds, salt, k) =
                    (r.u32()?, r.u16()?, r.u16()?, r.u32()?, r.k()?);
                r.flags()?;
                let rest = r.rest();
                if rest.is_empty() || rest.len() % 2 != 0 {
                    return Err(WireError::InvalidField("filter length"));
                }
                if round >= rounds {
                    return Err(WireError::InvalidField("round"));
                }
                let (file_filter, version_filter) = rest.split_at(rest.len() / 2);
                Message::Filters {
                    session,
                    round,
                    rounds,
                    salt,
                    k,
                    file_filter,
                    version_filter,
                }
            }
            MsgType::Match => {
                let (session, round, salt, k) = (r.u32()?, r.u16()?, r.u32()?, r.k()?);
                r.flags()?;
                Message::Match {
                    session,
                    round,
                    salt,
                    k,
                    filter: r.rest(),
                }
            }
            MsgType::Records => {
                let (session, round, seq, total) = (r.u32()?, r.u16()?, r.u16()?, r.u16()?);
                if seq >= total {
                    return Err(WireError::InvalidField("records seq"));
                }
                let records = r.rest();
                if records.len() % RECORD_LEN != 0 {
                    return Err(WireError::InvalidField("records length"));
                }
                Message::Records {
                    session,
                    round,
                    seq,
                    total,
                    records,
                }
            }
            MsgType::Plan => {
                let (session, round, count) = (r.u32()?, r.u16()?, r.u16()?);
                let codes = r.take(usize::from(count).div_ceil(4))?;
                r.end()?;
                let msg = Message::Plan {
                    session,
                    round,
                    count,
                    codes,
                };
                if plan_actions(count, codes).any(|a| a.is_none()) {
                    return Err(WireError::InvalidField("plan action"));
                }
                msg
            }
            MsgType::Offer => Message::Offer { cert: r.rest() },
            MsgType::Want => {
                let auth = r.token()?;
                let (transfer, instance, block_size, segment) =
                    (r.u32()?, r.id()?, r.u16()?, r.u32()?);
                if block_size == 0 {
                    return Err(WireError::InvalidField("block size"));
                }
                let vector = BitVec::decode(r.rest(), MAX_SEGMENT_BLOCKS)?;
                Message::Want {
                    auth,
                    transfer,
                    instance,
                    block_size,
                    segment,
                    vector,
                }
            }
            MsgType::Data => Message::Data {
                transfer: r.u32()?,
                block: r.u16()?,
                bytes: r.rest(),
            },
            MsgType::Ack => {
                let transfer = r.u32()?;
                Message::Ack {
                    transfer,
                    vector: BitVec::decode(r.rest(), MAX_SEGMENT_BLOCKS)?,
                }
            }
            MsgType::Close => {
                let instance = r.id()?;
                let status = CloseCode::from_u8(r.u8()?)?;
                r.end()?;
                Message::Close { instance, status }
            }
            MsgType::Token => {
                let (echo, token) = (r.token()?, r.token()?);
                r.end()?;
                Message::Token { echo, token }
            }
            MsgType::Interest => {
                let keys = r.rest();
                if keys.is_empty() || keys.len() % KEY_LEN != 0 {
                    return Err(WireError::InvalidField("interest length"));
                }
                Message::Interest { keys }
            }
        };
        if let Message::Beacon { .. } = msg {
            r.end()?;
        }
        Ok(msg)
    }

    /// The kind byte.
    pub fn msg_type(&self) -> MsgType {
        match self {
            Message::Beacon { .. } => MsgType::Beacon,
            Message::Filters { .. } => MsgType::Filters,
            Message::Match { .. } => MsgType::Match,
            Message::Records { .. } => MsgType::Records,
            Message::Plan { .. } => MsgType::Plan,
            Message::Offer { .. } => MsgType::Offer,
            Message::Want { .. } => MsgType::Want,
            Message::Data { .. } => MsgType::Data,
            Message::Ack { .. } => MsgType::Ack,
            Message::Close { .. } => MsgType::Close,
            Message::Token { .. } => MsgType::Token,
            Message::Interest { .. } => MsgType::Interest,
        }
    }

    /// Serialises the packet into a new buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.emit(&mut out);
        out
    }

    /// Appends the packet to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(FORMAT);
        out.push(self.msg_type() as u8);
        match self {
            Message::Beacon {
                node,
                file_count,
                content_hash,
            } => {
                out.extend_from_slice(&node.to_be_bytes());
                out.extend_from_slice(&file_count.to_be_bytes());
                out.extend_from_slice(&content_hash.0);
            }
            Message::Filters {
                session,
                round,
                rounds,
                salt,
                k,
                file_filter,
                version_filter,
            } => {
                out.extend_from_slice(&session.to_be_bytes());
                out.extend_from_slice(&round.to_be_bytes());
                out.extend_from_slice(&rounds.to_be_bytes());
                out.extend_from_slice(&salt.to_be_bytes());
                out.push(*k);
                out.push(0);
                out.extend_from_slice(file_filter);
                out.extend_from_slice(version_filter);
            }
            Message::Match {
                session,
                round,
                salt,
                k,
                filter,
            } => {
                out.extend_from_slice(&session.to_be_bytes());
                out.extend_from_slice(&round.to_be_bytes());
                out.extend_from_slice(&salt.to_be_bytes());
                out.push(*k);
                out.push(0);
                out.extend_from_slice(filter);
            }
            Message::Records {
                session,
                round,
                seq,
                total,
                records,
            } => {
                out.extend_from_slice(&session.to_be_bytes());
                out.extend_from_slice(&round.to_be_bytes());
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(&total.to_be_bytes());
                out.extend_from_slice(records);
            }
            Message::Plan {
                session,
                round,
                count,
                codes,
            } => {
                out.extend_from_slice(&session.to_be_bytes());
                out.extend_from_slice(&round.to_be_bytes());
                out.extend_from_slice(&count.to_be_bytes());
                out.extend_from_slice(codes);
            }
            Message::Offer { cert } => out.extend_from_slice(cert),
            Message::Want {
                auth,
                transfer,
                instance,
                block_size,
                segment,
                vector,
            } => {
                out.extend_from_slice(auth);
                out.extend_from_slice(&transfer.to_be_bytes());
                out.extend_from_slice(&instance.0);
                out.extend_from_slice(&block_size.to_be_bytes());
                out.extend_from_slice(&segment.to_be_bytes());
                vector.encode(out);
            }
            Message::Data {
                transfer,
                block,
                bytes,
            } => {
                out.extend_from_slice(&transfer.to_be_bytes());
                out.extend_from_slice(&block.to_be_bytes());
                out.extend_from_slice(bytes);
            }
            Message::Ack { transfer, vector } => {
                out.extend_from_slice(&transfer.to_be_bytes());
                vector.encode(out);
            }
            Message::Close { instance, status } => {
                out.extend_from_slice(&instance.0);
                out.push(*status as u8);
            }
            Message::Token { echo, token } => {
                out.extend_from_slice(echo);
                out.extend_from_slice(token);
            }
            Message::Interest { keys } => out.extend_from_slice(keys),
        }
    }
}

/// Appends the header of a Data packet (the block's bytes follow): what
/// [`Message::emit`] writes before them, for senders that read the block
/// straight into the datagram.
pub fn emit_data_header(out: &mut Vec<u8>, transfer: u32, block: u16) {
    out.extend_from_slice(&MAGIC);
    out.push(FORMAT);
    out.push(MsgType::Data as u8);
    out.extend_from_slice(&transfer.to_be_bytes());
    out.extend_from_slice(&block.to_be_bytes());
}

/// Encodes file records back to back.
pub fn encode_records(records: &[FileRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * RECORD_LEN);
    for r in records {
        out.extend_from_slice(&r.file_id.0);
        out.extend_from_slice(&r.version.to_be_bytes());
    }
    out
}

/// Decodes the records of a validated Records packet.
pub fn decode_records(bytes: &[u8]) -> impl Iterator<Item = FileRecord> + '_ {
    bytes.chunks_exact(RECORD_LEN).filter_map(|c| {
        Some(FileRecord {
            file_id: Id160::from_slice(c)?,
            version: u16::from_be_bytes([c[ID_LEN], c[ID_LEN + 1]]),
        })
    })
}

/// Packs actions two bits each.
pub fn encode_plan(actions: &[Action]) -> Vec<u8> {
    let mut out = vec![0u8; actions.len().div_ceil(4)];
    for (i, a) in actions.iter().enumerate() {
        let code = match a {
            Action::None => 0,
            Action::Push => 1,
            Action::Pull => 2,
        };
        out[i / 4] |= code << (2 * (i % 4));
    }
    out
}

/// Unpacks `count` actions; `None` marks an invalid code.
pub fn plan_actions(count: u16, codes: &[u8]) -> impl Iterator<Item = Option<Action>> + '_ {
    (0..usize::from(count)).map(
        move |i| match codes.get(i / 4).map(|b| (b >> (2 * (i % 4))) & 3) {
            Some(0) => Some(Action::None),
            Some(1) => Some(Action::Push),
            Some(2) => Some(Action::Pull),
            _ => None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(m: Message<'_>) {
        let b = m.to_vec();
        assert_eq!(Message::parse(&b).as_ref(), Ok(&m));
        for cut in 0..b.len() {
            // Every strict prefix is either rejected or parses as a different message.
            if let Ok(p) = Message::parse(&b[..cut]) {
                assert_ne!(p, m);
            }
        }
    }

    #[test]
    fn every_kind_roundtrips() {
        let mut v = BitVec::new(13);
        v.set(0);
        v.set(12);
        let f = [7u8; 8];
        let recs = encode_records(&[FileRecord {
            file_id: Id160([3; 20]),
            version: 9,
        }]);
        let plan = encode_plan(&[Action::Push, Action::None, Action::Pull]);
        roundtrip(Message::Beacon {
            node: 42,
            file_count: 7,
            content_hash: Id160([1; 20]),
        });
        roundtrip(Message::Filters {
            session: 1,
            round: 0,
            rounds: 2,
            salt: 5,
            k: 12,
            file_filter: &f[..4],
            version_filter: &f[4..],
        });
        roundtrip(Message::Match {
            session: 1,
            round: 1,
            salt: 5,
            k: 12,
            filter: &f,
        });
        roundtrip(Message::Match {
            session: 1,
            round: 1,
            salt: 5,
            k: 12,
            filter: &[],
        });
        roundtrip(Message::Records {
            session: 1,
            round: 1,
            seq: 0,
            total: 1,
            records: &recs,
        });
        roundtrip(Message::Plan {
            session: 1,
            round: 1,
            count: 3,
            codes: &plan,
        });
        roundtrip(Message::Offer { cert: &f });
        roundtrip(Message::Want {
            auth: [3; TOKEN_LEN],
            transfer: 9,
            instance: Id160([2; 20]),
            block_size: 2294,
            segment: 0,
            vector: v.clone(),
        });
        roundtrip(Message::Data {
            transfer: 9,
            block: 65535,
            bytes: &f,
        });
        roundtrip(Message::Ack {
            transfer: 9,
            vector: v,
        });
        roundtrip(Message::Close {
            instance: Id160([2; 20]),
            status: CloseCode::Busy,
        });
        roundtrip(Message::Token {
            echo: [0; 16],
            token: [7; 16],
        });
        roundtrip(Message::Interest { keys: &[9; 64] });
        assert_eq!(
            Message::parse(b"BS\x02\x0c"),
            Err(WireError::InvalidField("interest length"))
        );
        assert_eq!(
            decode_records(&recs).collect::<Vec<_>>(),
            vec![FileRecord {
                file_id: Id160([3; 20]),
                version: 9
            }]
        );
        assert_eq!(
            plan_actions(3, &plan).collect::<Vec<_>>(),
            vec![Some(Action::Push), Some(Action::None), Some(Action::Pull)]
        );
    }

    #[test]
    fn paper_frame_gives_9144_bit_filters() {
        assert_eq!((2304 - FILTERS_HEADER_LEN) / 2 * 8, 9144);
    }

    #[test]
    fn header_errors() {
        assert_eq!(Message::parse(b"BS"), Err(WireError::Truncated));
        assert_eq!(Message::parse(b"XX\x02\x01"), Err(WireError::BadMagic));
        assert_eq!(Message::parse(b"BS\x01\x01"), Err(WireError::BadFormat(1)));
        assert_eq!(
            Message::parse(b"BS\x02\x63"),
            Err(WireError::UnknownKind(0x63))
        );
        let mut p = Message::Plan {
            session: 1,
            round: 0,
            count: 1,
            codes: &[3],
        }
        .to_vec();
        assert_eq!(
            Message::parse(&p),
            Err(WireError::InvalidField("plan action"))
        );
        p.push(0);
        assert_eq!(Message::parse(&p), Err(WireError::Trailing));
    }
}
