//! The bytes of a TCP connection that carries an application's bytes
//! ([`ByteStream`]), for applications that need them (Broadside over TCP);
//! the others move byte counts only. TCP itself ([`crate::transport::tcp`])
//! stays a machine of sequence numbers and lengths: the stream keeps the
//! bytes written and not yet acknowledged, lends a segment the bytes its
//! sequence range covers when it leaves (they ride in the packet, see
//! [`crate::packet::Packet::stream`]), and at the other end keeps what
//! arrives by stream offset until TCP counts it delivered in order, when
//! it passes to the application. Offsets are 64-bit: sequence numbers are
//! unwrapped against the oldest byte kept, so a stream may exceed 4 GB as
//! long as less than 2 GB is in flight.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// One connection's byte stream, both directions.
#[derive(Debug)]
pub struct ByteStream {
    /// Our initial sequence number: byte `k` we send has sequence
    /// `iss + 1 + k`.
    iss: u32,
    /// The peer's, once its SYN has been seen.
    irs: Option<u32>,
    /// Bytes written and not yet acknowledged; the first is at offset `base`.
    send: VecDeque<u8>,
    base: u64,
    /// Bytes that arrived beyond what was delivered, by offset.
    arrived: BTreeMap<u64, Arc<[u8]>>,
    /// Bytes delivered in order so far.
    delivered: u64,
    /// Delivered bytes the application has not taken yet.
    ready: Vec<u8>,
}

/// The offset of sequence number `seq` in a stream whose byte at offset
/// `near` has sequence `first + near` (mod 2^32), taken within 2 GB of
/// `near`.
fn offset(seq: u32, first: u32, near: u64) -> i64 {
    let at = first.wrapping_add(near as u32);
    near as i64 + i64::from(seq.wrapping_sub(at) as i32)
}

impl ByteStream {
    pub fn new(iss: u32) -> ByteStream {
        ByteStream {
            iss,
            irs: None,
            send: VecDeque::new(),
            base: 0,
            arrived: BTreeMap::new(),
            delivered: 0,
            ready: Vec::new(),
        }
    }

    /// Appends `data` to what is sent.
    pub fn write(&mut self, data: &[u8]) {
        self.send.extend(data);
    }

    /// Bytes written and not acknowledged yet.
    pub fn unacked(&self) -> usize {
        self.send.len()
    }

    /// The peer acknowledged `acked` bytes in all: they are dropped.
    pub fn acked(&mut self, acked: u64) {
        let n = acked.saturating_sub(self.base).min(self.send.len() as u64);
        self.send.drain(..n as usize);
        self.base += n;
    }

    /// The bytes of an outgoing segment at `seq` of `len` bytes (`None`
    /// for a segment without payload).
    pub fn segment(&self, seq: u32, len: u32) -> Option<Arc<[u8]>> {
        if len == 0 {
            return None;
        }
        let at = offset(seq, self.iss.wrapping_add(1), self.base) - self.base as i64;
        let range = usize::try_from(at)
            .ok()
            .filter(|&a| a + len as usize <= self.send.len());
        let at = range.expect("TCP sends only bytes written and not yet acknowledged");
        Some(self.send.range(at..at + len as usize).copied().collect())
    }

    /// An incoming segment: a SYN tells the peer's initial sequence
    /// number; payload bytes are kept until delivered.
    pub fn arrive(&mut self, syn: bool, seq: u32, data: Option<&Arc<[u8]>>) {
        if syn {
            self.irs = Some(seq);
        }
        let (Some(irs), Some(data)) = (self.irs, data) else {
            return;
        };
        let first = irs.wrapping_add(1);
        let seq = if syn { first } else { seq };
        let at = offset(seq, first, self.delivered);
        let end = at + data.len() as i64;
        if end <= self.delivered as i64 {
            return; // all delivered already
        }
        let (at, data) = if at < self.delivered as i64 {
            let skip = (self.delivered as i64 - at) as usize;
            (self.delivered, Arc::from(&data[skip..]))
        } else {
            (at as u64, data.clone())
        };
        let longer = self.arrived.get(&at).is_none_or(|d| d.len() < data.len());
        if longer {
            self.arrived.insert(at, data);
        }
    }

    /// TCP counts `received` bytes delivered in order: the new ones become
    /// ready for the application.
    pub fn deliver(&mut self, received: u64) {
        while self.delivered < received {
            let Some((&at, data)) = self.arrived.range(..=self.delivered).next_back() else {
                break;
            };
            let end = at + data.len() as u64;
            if end <= self.delivered {
                self.arrived.remove(&at);
                continue;
            }
            let from = (self.delivered - at) as usize;
            let to = (received.min(end) - at) as usize;
            self.ready.extend_from_slice(&data[from..to]);
            self.delivered = at + to as u64;
            if self.delivered == end {
                self.arrived.remove(&at);
            }
        }
        // Whatever lies wholly below is a duplicate.
        while let Some((&at, data)) = self.arrived.first_key_value() {
            if at + data.len() as u64 > self.delivered {
                break;
            }
            self.arrived.remove(&at);
        }
    }

    /// The bytes delivered since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: &[u8]) -> Arc<[u8]> {
        Arc::from(v)
    }

    #[test]
    fn segments_carry_the_written_bytes_and_acks_drop_them() {
        let mut s = ByteStream::new(u32::MAX - 2); // the sequence space wraps at byte 2
        s.write(b"hello world");
        assert_eq!(s.segment(u32::MAX - 1, 5).as_deref(), Some(&b"hello"[..]));
        assert_eq!(
            s.segment(3, 6).as_deref(),
            Some(&b" world"[..]),
            "sequence 3 is offset 5"
        );
        s.acked(6);
        assert_eq!(s.unacked(), 5);
        assert_eq!(
            s.segment(4, 5).as_deref(),
            Some(&b"world"[..]),
            "offset 6 is sequence 4"
        );
        assert_eq!(s.segment(3, 0), None);
    }

    #[test]
    fn out_of_order_and_overlapping_arrivals_are_delivered_in_order_once() {
        let mut r = ByteStream::new(0);
        r.arrive(true, 100, None);
        r.arrive(false, 107, Some(&bytes(b"world")));
        r.deliver(0);
        assert!(r.take().is_empty(), "a hole before it");
        r.arrive(false, 101, Some(&bytes(b"hello ")));
        r.arrive(false, 101, Some(&bytes(b"hel"))); // a retransmission, shorter
        r.deliver(11);
        assert_eq!(r.take(), b"hello world");
        r.arrive(false, 104, Some(&bytes(b"lo world!"))); // overlaps the delivered part
        r.deliver(12);
        assert_eq!(r.take(), b"!");
    }

    #[test]
    fn bytes_before_the_peers_syn_are_not_placed() {
        let mut r = ByteStream::new(0);
        r.arrive(false, 5, Some(&bytes(b"lost")));
        r.deliver(0);
        assert!(r.take().is_empty());
    }
}
