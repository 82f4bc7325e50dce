//! A-MPDU aggregation with immediate Block Ack, the originator's side, as
//! Linux's ath9k forms aggregates (`drivers/net/wireless/ath/ath9k/xmit.c`
//! of the 3.x kernels, `ath_tx_form_aggr`, `ath_lookup_rate`,
//! `ath_compute_num_delims`, `ath_tx_complete_aggr`): per-peer sequence
//! numbers, the block-ack window, software retries and the aggregate's
//! limits and layout. The receiver's reordering is [`super::reorder`].
//!
//! # Forming an aggregate
//!
//! MPDUs to one peer are taken in sequence order, software retries first
//! (ath9k puts them back at the head of the TID's queue), while
//! - the MPDU's sequence number is inside the block-ack window of 64 from
//!   the oldest MPDU not yet done (`BAW_WITHIN`);
//! - the aggregate holds fewer than [`AmpduConfig::max_subframes`] (ath9k:
//!   half the window, 32);
//! - its length, each subframe a 4-byte delimiter, the MPDU and padding to
//!   4 bytes (the last unpadded), stays within the least of the peer's
//!   maximum A-MPDU length and, at each rate of the retry chain, the
//!   length whose PPDU lasts [`AmpduConfig::time_limit`] (ath9k's 4 ms,
//!   inside 802.11-2016's aPPDUMaxTime of 5.484 ms). A chain with a
//!   non-HT rate sends no aggregate (`ath_lookup_rate` returns 0).
//!
//! Short MPDUs get extra delimiters: up to ath9k's 256-byte minimum
//! subframe (`ATH_AGGR_MINPLEN`) and up to the peer's minimum MPDU start
//! spacing at the chain's first rate (8 µs, what ath9k advertises).
//!
//! # Completion
//!
//! An aggregate is tried along its retry chain like a single frame (the
//! hardware repeats the whole PPDU while no Block Ack comes). Then each
//! MPDU the Block Ack's bitmap names is done; every other one is retried
//! in a later aggregate, up to [`MAX_SW_RETRIES`] times (ath9k retries
//! while its count is below the limit), and then given up; giving one up sends a BAR that moves the receiver's window past it
//! (ath9k's `sendbar`, through mac80211's `ieee80211_send_bar`).

use super::{Msdu, Payload, DATA_OVERHEAD};
use crate::ids::NodeId;
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::ratectl::RetryChain;
use crate::units::SimTime;
use std::collections::VecDeque;

/// A compressed Block Ack: frame control, duration, RA, TA, BA control,
/// starting sequence control, a 64-bit bitmap and the FCS (802.11-2016
/// 9.3.1.9.3).
pub const BA_BYTES: u32 = 32;
/// A compressed Block Ack Request (9.3.1.8): as the Block Ack without
/// the bitmap.
pub const BAR_BYTES: u32 = 24;
/// The MPDU delimiter before every subframe (9.7.1).
pub const DELIMITER: u32 = 4;
/// The block-ack window: the receiver's reorder buffer and the bitmap
/// (ath9k and mac80211 both use 64).
pub const BA_WINDOW: u16 = 64;
/// ath9k's `ATH_MAX_SW_RETRIES` (30 in the 3.x kernels; 10 before 3.1).
pub const MAX_SW_RETRIES: u8 = 30;
/// ath9k's `ATH_AGGR_MINPLEN`: shorter subframes are padded with
/// delimiters up to it.
const MIN_SUBFRAME: u32 = 256;
/// Sequence numbers are modulo 4096.
const SEQ_SPACE: u16 = 4096;

/// The aggregation limits of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AmpduConfig {
    /// Subframes per aggregate at most.
    pub max_subframes: u32,
    /// The peer's maximum A-MPDU length (HT capabilities), bytes.
    pub max_len: u32,
    /// The peer's minimum MPDU start spacing.
    pub density: SimTime,
    /// How long an aggregate's PPDU may last at any rate of its chain.
    pub time_limit: SimTime,
}

impl AmpduConfig {
    /// ath9k with an ath9k peer: half the 64-frame window, the 65,535
    /// bytes of maximum A-MPDU length exponent 3, 8 µs spacing
    /// (`IEEE80211_HT_MPDU_DENSITY_8`), 4 ms per PPDU.
    pub const ATH9K: AmpduConfig = AmpduConfig {
        max_subframes: 32,
        max_len: 65_535,
        density: SimTime::from_us(8),
        time_limit: SimTime::from_us(4_000),
    };
}

/// One MPDU of an A-MPDU on the air.
#[derive(Clone, Debug, PartialEq)]
pub struct Mpdu {
    pub seq: u16,
    pub retry: bool,
    /// 0-based transmission of this MPDU.
    pub attempt: u8,
    /// The MSDU's bytes (the MPDU adds [`DATA_OVERHEAD`]).
    pub bytes: u32,
    /// Where its delimiter starts in the PSDU, bytes.
    pub start: u32,
    pub payload: Payload,
}

impl Mpdu {
    /// Its delimiter and MPDU, bytes (no padding).
    pub fn len(&self) -> u32 {
        DELIMITER + self.bytes + DATA_OVERHEAD
    }
}

/// An MSDU inside a block-ack session, not yet done.
#[derive(Clone, Debug)]
pub struct Pending {
    pub msdu: Msdu,
    pub seq: u16,
    /// Aggregates it went out in that brought no acknowledgement of it.
    pub retries: u8,
    /// Transmissions of it so far.
    pub tries: u32,
}

/// Distance from `start` to `seq` in sequence space.
pub fn seq_offset(start: u16, seq: u16) -> u16 {
    seq.wrapping_sub(start) % SEQ_SPACE
}

/// Whether a Block Ack starting at `ssn` with `bitmap` acknowledges `seq`.
pub fn ba_acks(ssn: u16, bitmap: u64, seq: u16) -> bool {
    let i = seq_offset(ssn, seq);
    i < BA_WINDOW && bitmap & (1 << i) != 0
}

/// One peer's originator state.
#[derive(Clone, Debug)]
struct Session {
    peer: NodeId,
    next_seq: u16,
    /// Software retries, in sequence order.
    retry: VecDeque<Pending>,
    /// The oldest MPDU of the aggregate being formed or on the air.
    flight: Option<u16>,
}

impl Session {
    /// The oldest sequence number not yet done: the aggregate's in
    /// flight, else the first retry's, else the next new one.
    fn window_start(&self) -> u16 {
        self.flight
            .or(self.retry.front().map(|p| p.seq))
            .unwrap_or(self.next_seq)
    }
}

/// The originator's block-ack sessions, one per peer.
#[derive(Clone, Debug)]
pub struct Originator {
    cfg: AmpduConfig,
    sessions: Vec<Session>,
}

impl Originator {
    pub fn new(cfg: AmpduConfig) -> Originator {
        Originator {
            cfg,
            sessions: Vec::new(),
        }
    }

    pub fn cfg(&self) -> &AmpduConfig {
        &self.cfg
    }

    /// A peer with software retries waiting, if any.
    pub fn retry_peer(&self) -> Option<NodeId> {
        self.sessions
            .iter()
            .find(|s| !s.retry.is_empty())
            .map(|s| s.peer)
    }

    fn session(&mut self, peer: NodeId) -> &mut Session {
        let i = match self.sessions.iter().position(|s| s.peer == peer) {
            Some(i) => i,
            None => {
                self.sessions.push(Session {
                    peer,
                    next_seq: 0,
                    retry: VecDeque::new(),
                    flight: None,
                });
                self.sessions.len() - 1
            }
        };
        &mut self.sessions[i]
    }

    /// The next software retry to `peer`, if any.
    pub fn take_retry(&mut self, peer: NodeId) -> Option<Pending> {
        let s = self.session(peer);
        let p = s.retry.pop_front()?;
        s.flight.get_or_insert(p.seq);
        Some(p)
    }

    /// `msdu` to `peer` with the next sequence number, if that number is
    /// inside the block-ack window; else `msdu` back.
    pub fn assign(&mut self, peer: NodeId, msdu: Msdu) -> Result<Pending, Msdu> {
        let s = self.session(peer);
        if seq_offset(s.window_start(), s.next_seq) >= BA_WINDOW {
            return Err(msdu);
        }
        let seq = s.next_seq;
        s.next_seq = (s.next_seq + 1) % SEQ_SPACE;
        s.flight.get_or_insert(seq);
        Ok(Pending {
            msdu,
            seq,
            retries: 0,
            tries: 0,
        })
    }

    /// Whether the next new MPDU to `peer` would be inside the window.
    pub fn window_open(&mut self, peer: NodeId) -> bool {
        let s = self.session(peer);
        seq_offset(s.window_start(), s.next_seq) < BA_WINDOW
    }

    /// The aggregate to `peer` is over (before its failures are put back).
    pub fn landed(&mut self, peer: NodeId) {
        self.session(peer).flight = None;
    }

    /// Puts unacknowledged MPDUs back, ahead of anything waiting, in
    /// sequence order.
    pub fn requeue(&mut self, peer: NodeId, failed: Vec<Pending>) {
        let s = self.session(peer);
        for p in failed.into_iter().rev() {
            s.retry.push_front(p);
        }
    }

    /// Drops every session's retries (the radio is changing channel).
    pub fn flush(&mut self) -> Vec<Msdu> {
        self.sessions
            .iter_mut()
            .flat_map(|s| {
                s.flight = None;
                s.retry.drain(..).map(|p| p.msdu)
            })
            .collect()
    }
}

/// The largest PSDU whose PPDU at `mode` lasts at most `limit`.
fn max_len_within(mode: Mode, limit: SimTime, preamble: Preamble, standard: Standard) -> u32 {
    let (mut lo, mut hi) = (0u32, 1_048_575u32);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if mode.airtime(mid, preamble, standard) <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// How long an aggregate sent along `chain` may be, bytes; `None` if the
/// chain has a non-HT rate (no aggregation).
pub fn length_limit(
    cfg: &AmpduConfig,
    chain: &RetryChain,
    preamble: Preamble,
    standard: Standard,
) -> Option<u32> {
    chain.stages.iter().try_fold(cfg.max_len, |limit, s| {
        s.mode.ht?;
        let own = max_len_within(s.mode, cfg.time_limit, preamble, standard);
        Some(limit.min(own + implicit_delimiter(s.mode)))
    })
}

/// The delimiter the airtime of a VHT PSDU counts by itself
/// ([`crate::phy::rate::HtMode::data_us`]: a VHT PSDU is always an
/// A-MPDU): a VHT aggregate's PSDU is recorded without its first one.
pub fn implicit_delimiter(mode: Mode) -> u32 {
    if mode.ht.is_some_and(|h| h.vht) {
        DELIMITER
    } else {
        0
    }
}

/// The subframes of `mpdus` as (start, length) in the recorded PSDU,
/// whose first `skip` bytes (an implicit delimiter) are not recorded.
pub fn parts(mpdus: &[Mpdu], skip: u32) -> Vec<(u32, u32)> {
    mpdus
        .iter()
        .map(|m| {
            let start = m.start.saturating_sub(skip);
            (start, m.start + m.len() - skip - start)
        })
        .collect()
}

/// Extra delimiters after a subframe whose MPDU is `mpdu_bytes` long
/// (`ath_compute_num_delims`): up to the minimum subframe, and up to the
/// bytes `first` sends in the peer's MPDU spacing.
fn extra_delimiters(cfg: &AmpduConfig, mpdu_bytes: u32, first: Mode) -> u32 {
    let mut n = MIN_SUBFRAME.saturating_sub(mpdu_bytes).div_ceil(DELIMITER);
    if cfg.density > SimTime::ZERO {
        let us = cfg.density.as_ns() / 1000;
        let short_gi = first.ht.is_some_and(|h| h.short_gi);
        let symbols = if short_gi {
            (us * 5).saturating_sub(4) / 18
        } else {
            us / 4
        }
        .max(1);
        let min_len = (symbols * u64::from(first.data_bits_per_symbol) / 8) as u32;
        if mpdu_bytes < min_len {
            n = n.max((min_len - mpdu_bytes) / DELIMITER);
        }
    }
    n
}

fn padding(len: u32) -> u32 {
    (4 - len % 4) % 4
}

/// An aggregate being laid out: subframes are added while they fit.
#[derive(Clone, Debug)]
pub struct Layout {
    limit: u32,
    max_subframes: u32,
    first: Mode,
    cfg: AmpduConfig,
    /// Bytes so far, up to the end of the last MPDU.
    len: u32,
    /// Padding and delimiters owed after the last MPDU if another follows.
    owed: u32,
    count: u32,
}

impl Layout {
    /// An empty aggregate limited to `limit` bytes, sent first at `first`.
    pub fn new(cfg: &AmpduConfig, limit: u32, first: Mode) -> Layout {
        Layout {
            limit,
            max_subframes: cfg.max_subframes,
            first,
            cfg: *cfg,
            len: 0,
            owed: 0,
            count: 0,
        }
    }

    /// Where a subframe carrying an MSDU of `msdu_bytes` would start, if
    /// it fits (the first always does).
    pub fn add(&mut self, msdu_bytes: u32) -> Option<u32> {
        let sub = DELIMITER + msdu_bytes + DATA_OVERHEAD;
        if self.count >= self.max_subframes
            || (self.count > 0 && self.len + self.owed + sub > self.limit)
        {
            return None;
        }
        let start = self.len + self.owed;
        self.len = start + sub;
        let delims = extra_delimiters(&self.cfg, msdu_bytes + DATA_OVERHEAD, self.first);
        self.owed = padding(sub) + DELIMITER * delims;
        self.count += 1;
        Some(start)
    }

    /// The PSDU length of the aggregate so far.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn count(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mode::Standard;
    use crate::ratectl::Stage;
    use crate::units::Bitrate;

    /// HT20 at 5 GHz (802.11a timing and basic rates).
    fn ht20() -> Standard {
        Standard::A
    }

    /// HT20 long-GI single-stream MCS at `mbps`.
    fn mcs(_: Standard, mbps: f64) -> Mode {
        (0..8)
            .filter_map(|m| crate::phy::ht::mode(false, 20, m, 1, false))
            .find(|m| (m.rate.mbps() - mbps).abs() < 0.01)
            .expect("mode")
    }

    #[test]
    fn window_closes_at_64_from_the_oldest_undone() {
        let mut o = Originator::new(AmpduConfig::ATH9K);
        let peer = NodeId(1);
        let msdu = |b| Msdu {
            dst: crate::ids::Dst::Node(peer),
            bytes: b,
            enqueued: SimTime::ZERO,
            fixed: None,
            source: None,
            payload: Payload::Raw,
        };
        let first: Vec<_> = (0..64)
            .map(|_| o.assign(peer, msdu(100)).expect("in window"))
            .collect();
        assert!(o.assign(peer, msdu(100)).is_err());
        // The oldest fails and waits: the window stays where it is.
        let mut it = first.into_iter();
        o.landed(peer);
        o.requeue(peer, vec![it.next().unwrap()]);
        assert!(!o.window_open(peer));
        // It goes out again, alone: still closed while it flies.
        assert_eq!(o.take_retry(peer).map(|p| p.seq), Some(0));
        assert!(!o.window_open(peer));
        // Done with 0: the window moves to 64.
        o.landed(peer);
        assert!(o.window_open(peer));
        assert_eq!(o.assign(peer, msdu(1)).map(|p| p.seq).ok(), Some(64));
    }

    #[test]
    fn length_limit_is_four_ms_at_the_slowest_rate_or_the_peer() {
        let st = ht20();
        let chain = |rates: &[f64]| RetryChain {
            stages: rates
                .iter()
                .map(|&r| Stage {
                    mode: mcs(st, r),
                    tries: 2,
                })
                .collect(),
        };
        let cfg = AmpduConfig::ATH9K;
        let pre = Preamble::Long;
        // MCS 0 (6.5 Mbit/s): 4 ms hold about 3.2 kB (ath9k's table: 3212).
        let l0 = length_limit(&cfg, &chain(&[65.0, 6.5]), pre, st).unwrap();
        assert!((3150..=3260).contains(&l0), "{l0}");
        assert!(mcs(st, 6.5).airtime(l0, pre, st) <= SimTime::from_us(4000));
        assert!(mcs(st, 6.5).airtime(l0 + 4, pre, st) > SimTime::from_us(4000));
        // MCS 7 alone: 4 ms hold 32 kB (ath9k: 32172).
        let l7 = length_limit(&cfg, &chain(&[65.0]), pre, st).unwrap();
        assert!((32_000..=32_300).contains(&l7), "{l7}");
        // A legacy rate in the chain: no aggregation.
        let a = Standard::A.mode(Bitrate(6_000_000)).unwrap();
        let mixed = RetryChain {
            stages: vec![Stage { mode: a, tries: 1 }],
        };
        assert_eq!(length_limit(&cfg, &mixed, pre, st), None);
    }

    #[test]
    fn layout_pads_to_four_and_stops_at_the_limit() {
        let st = ht20();
        let cfg = AmpduConfig::ATH9K;
        let mut l = Layout::new(&cfg, 5_000, mcs(st, 65.0));
        // 1470 + 28 = 1498-byte MPDU, 1502 with its delimiter, padded to 1504.
        assert_eq!(l.add(1470), Some(0));
        assert_eq!(l.add(1470), Some(1504));
        assert_eq!(l.add(1470), Some(3008));
        assert_eq!(l.len(), 3008 + 1502);
        assert_eq!(l.add(1470), None);
        assert_eq!(l.count(), 3);
        // A 40-byte TCP ACK (68-byte MPDU) is padded to the 256-byte minimum.
        let mut l = Layout::new(&cfg, 65_535, mcs(st, 65.0));
        assert_eq!(l.add(40), Some(0));
        assert_eq!(l.add(40), Some(72 + 188));
        // The subframe limit.
        let mut l = Layout::new(&cfg, 65_535, mcs(st, 65.0));
        assert_eq!((0..40).filter_map(|_| l.add(100)).count(), 32);
    }

    #[test]
    fn block_ack_bitmap_wraps_in_sequence_space() {
        assert!(ba_acks(4090, 1 << 10, 4));
        assert!(!ba_acks(4090, 1 << 10, 5));
        assert!(!ba_acks(10, u64::MAX, 9));
        assert!(!ba_acks(10, u64::MAX, 74));
        assert!(ba_acks(10, u64::MAX, 73));
    }
}
