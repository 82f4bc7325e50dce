//! The DCF's A-MPDU path: forming an aggregate when the station wins the
//! channel, its Block Ack (or none) at the end, BARs, and the recipient's
//! side (reordering, the Block Ack response, the reorder timeout). The
//! rules are [`crate::mac::ampdu`]'s and [`crate::mac::reorder`]'s.

use super::{Current, Dcf, DcfEvent, MacTimer};
use crate::ids::{Dst, NodeId};
use crate::mac::ampdu::{self, Layout, Mpdu, Pending, BAR_BYTES, BA_BYTES, MAX_SW_RETRIES};
use crate::mac::links::Whereabouts;
use crate::mac::reorder::Reorder;
use crate::mac::{Frame, Msdu, Payload, DATA_OVERHEAD};
use crate::phy::mode::Mode;
use crate::ratectl::{AmpduStatus, Stage, TxStatus};
use crate::trace::FrameKind;
use crate::units::{Dbm, SimTime};

/// Tries of a BAR at the lowest basic rate: mac80211 sends it as a
/// control frame at the lowest rate (`rate_control_send_low`) with the
/// hardware's maximum tries (ath9k: 10).
const BAR_TRIES: u8 = 10;

impl Dcf {
    /// An A-MPDU finished arriving: `oks` says which subframes decoded;
    /// otherwise as [`Dcf::handle_rx_end`] (`ok`: any did).
    pub fn handle_rx_aggregate(
        &mut self,
        now: SimTime,
        frame: &Frame,
        mode: Mode,
        oks: &[bool],
        rssi: Dbm,
        noise_floor: Dbm,
    ) {
        self.rx_parts = oks.to_vec();
        let ok = oks.iter().any(|&ok| ok);
        self.handle_rx_end(now, frame, mode, ok, rssi, noise_floor);
        self.rx_parts.clear();
    }

    /// Whether `msdu` may go in an aggregate: data to a peer whose rates
    /// rate control chooses, with aggregation on.
    fn aggregatable(&self, msdu: &Msdu) -> Option<NodeId> {
        let (Some(_), None, Dst::Node(peer)) = (&self.originator, msdu.fixed, msdu.dst) else {
            return None;
        };
        matches!(
            msdu.payload,
            Payload::Packet(_) | Payload::Raw | Payload::Datagram { .. }
        )
        .then_some(peer)
    }

    /// The peer the next aggregate goes to: one with software retries
    /// waiting, else the receiver of the next queued MSDU if that may be
    /// aggregated.
    pub(super) fn aggregate_peer(&mut self, now: SimTime) -> Option<NodeId> {
        let retry = self.originator.as_ref()?.retry_peer();
        if retry.is_some() {
            return retry;
        }
        let next = self.data.peek(now).map(|q| q.msdu.clone());
        self.queue_drops();
        self.aggregatable(&next?)
    }

    /// Makes the aggregate to `peer` the frame in progress: software
    /// retries first, then queued MSDUs to the same peer, while the
    /// window, the subframe count and the length limit allow.
    /// False if nothing could be taken after all.
    pub(super) fn form_aggregate(
        &mut self,
        now: SimTime,
        peer: NodeId,
        known: Option<Whereabouts>,
    ) -> bool {
        let orig = self.originator.as_mut().expect("aggregation on");
        let cfg = *orig.cfg();
        let mut items: Vec<Pending> = Vec::new();
        let first_bytes = match orig.take_retry(peer) {
            Some(p) => {
                let b = p.msdu.bytes;
                items.push(p);
                b
            }
            None => self.data.peek(now).map_or(0, |q| q.msdu.bytes),
        };
        let chain_bytes = first_bytes + DATA_OVERHEAD;
        let chain = self.links.retry_chain(
            now,
            peer,
            chain_bytes,
            self.tx_power,
            known.expect("whereabouts for a chain"),
        );
        let limit =
            ampdu::length_limit(&cfg, &chain, self.air.preamble, self.air.standard).unwrap_or(0);
        let mut layout = Layout::new(&cfg, limit, chain.stages[0].mode);
        let mut starts = Vec::new();
        if let Some(p) = items.first() {
            starts.push(layout.add(p.msdu.bytes).expect("the first fits"));
        }
        let orig = self.originator.as_mut().expect("aggregation on");
        // The other retries, while they fit.
        loop {
            let Some(p) = orig.take_retry(peer) else {
                break;
            };
            match layout.add(p.msdu.bytes) {
                Some(start) => {
                    starts.push(start);
                    items.push(p);
                }
                None => {
                    orig.requeue(peer, vec![p]);
                    break;
                }
            }
        }
        // New MSDUs, while they are to the peer, inside the window and fit.
        loop {
            let next = self.data.peek(now).map(|q| q.msdu.clone());
            self.queue_drops();
            let Some(msdu) = next.filter(|m| self.aggregatable(m) == Some(peer)) else {
                break;
            };
            let orig = self.originator.as_mut().expect("aggregation on");
            if !orig.window_open(peer) {
                break;
            }
            let Some(start) = layout.add(msdu.bytes) else {
                break;
            };
            let Some(q) = self.data.pop(now) else {
                break;
            };
            self.queue_drops();
            let orig = self.originator.as_mut().expect("aggregation on");
            match orig.assign(peer, q.msdu) {
                Ok(p) => {
                    starts.push(start);
                    items.push(p);
                }
                Err(_) => unreachable!("the window was open"),
            }
        }
        let Some(first) = items.first() else {
            return false;
        };
        let psdu = layout.len() - ampdu::implicit_delimiter(chain.stages[0].mode);
        let summary = Msdu {
            dst: Dst::Node(peer),
            bytes: psdu.saturating_sub(DATA_OVERHEAD),
            enqueued: first.msdu.enqueued,
            fixed: None,
            source: None,
            payload: Payload::Raw,
        };
        let seq = first.seq;
        // RTS by length only below the standard's "off" value (2347):
        // mac80211's default threshold is off.
        let rts = self.cfg.rts_threshold < 2347 && psdu > self.cfg.rts_threshold;
        self.current = Some(Current {
            msdu: summary,
            chain,
            chain_bytes,
            psdu,
            seq,
            attempt: 0,
            rts,
            mpdus: items,
            starts,
        });
        true
    }

    /// The aggregate in progress as a frame, with `duration` set.
    pub(super) fn aggregate_frame(&self, duration: SimTime) -> Frame {
        let cur = self.current();
        let mpdus: Vec<Mpdu> = cur
            .mpdus
            .iter()
            .zip(&cur.starts)
            .map(|(p, &start)| {
                let attempt = p.tries + cur.attempt;
                Mpdu {
                    seq: p.seq,
                    retry: attempt > 0,
                    attempt: attempt.min(255) as u8,
                    bytes: p.msdu.bytes,
                    start,
                    payload: p.msdu.payload.clone(),
                }
            })
            .collect();
        Frame {
            kind: FrameKind::Data,
            src: self.me,
            dst: cur.msdu.dst,
            seq: cur.seq,
            retry: cur.attempt > 0,
            attempt: cur.attempt.min(255) as u8,
            psdu_bytes: cur.psdu,
            duration,
            payload: Payload::Aggregate(mpdus.into_boxed_slice()),
            report: None,
        }
    }

    /// The aggregate in progress is over: the Block Ack from `ssn` with
    /// `bitmap` arrived, or (`None`) its retry chain ran out without one.
    pub(super) fn aggregate_done(&mut self, now: SimTime, ba: Option<(u16, u64)>) {
        self.cancel(MacTimer::ResponseTimeout);
        let mut cur = self.current.take().expect("an aggregate in progress");
        let Dst::Node(peer) = cur.msdu.dst else {
            unreachable!("aggregates go to a peer");
        };
        let hw_tries = cur.attempt + u32::from(ba.is_some());
        let airtime = self.tries_airtime(&cur, hw_tries);
        self.data.charge_tx(peer, airtime);
        let len = cur.mpdus.len() as u32;
        let mut acked = 0;
        let mut failed = Vec::new();
        let mut bar = None;
        for mut p in cur.mpdus.drain(..) {
            p.tries += hw_tries;
            let ok = ba.is_some_and(|(ssn, bitmap)| ampdu::ba_acks(ssn, bitmap, p.seq));
            if !ok && p.retries < MAX_SW_RETRIES {
                p.retries += 1;
                failed.push(p);
                continue;
            }
            if ok {
                acked += 1;
            } else {
                bar = Some((p.seq + 1) % 4096);
            }
            self.events.push_back(DcfEvent::Done {
                seq: p.seq,
                delivered: ok,
                attempts: p.tries,
                delay: now - p.msdu.enqueued,
                msdu: p.msdu,
            });
        }
        let orig = self.originator.as_mut().expect("aggregation on");
        orig.landed(peer);
        orig.requeue(peer, failed);
        if let Some(ssn) = bar {
            self.send_bar(now, peer, ssn);
        }
        let status = TxStatus {
            now,
            bytes: cur.chain_bytes,
            chain: std::mem::take(&mut cur.chain),
            attempts: hw_tries,
            acked: ba.is_some(),
            ampdu: Some(AmpduStatus { len, acked }),
        };
        self.links.report(peer, &status);
        self.state = super::DcfState::Idle;
        self.txop_until = None;
        self.cw = self.timing.cw_min;
        self.draw_backoff();
        self.request_access(now);
    }

    /// Queues a BAR to `peer` moving its window to `ssn`, ahead of other
    /// management frames.
    fn send_bar(&mut self, now: SimTime, peer: NodeId, ssn: u16) {
        let bar = Msdu {
            dst: Dst::Node(peer),
            bytes: BAR_BYTES,
            enqueued: now,
            fixed: Some(Stage {
                mode: self.air.basic,
                tries: BAR_TRIES,
            }),
            source: None,
            payload: Payload::BlockAckReq { ssn },
        };
        self.enqueue_mgmt(now, bar, true);
    }

    /// The recipient's reorder buffer for `src`, made at its first MPDU.
    fn reorder_for(&mut self, src: NodeId, ssn: u16) -> &mut Reorder {
        let i = match self.recipients.iter().position(|(s, _)| *s == src) {
            Some(i) => i,
            None => {
                self.recipients.push((src, Reorder::new(ssn)));
                self.recipients.len() - 1
            }
        };
        &mut self.recipients[i].1
    }

    /// Hands up frames the reorder buffer released.
    fn hand_up(&mut self, released: Vec<(Frame, Dbm)>) {
        for (frame, rssi) in released {
            self.events.push_back(DcfEvent::Received {
                frame,
                rssi,
                duplicate: false,
            });
        }
    }

    /// An A-MPDU for this node arrived with at least one MPDU intact
    /// (`oks`, per subframe): the intact ones go through the reorder
    /// buffer, and a Block Ack goes back SIFS later.
    pub(super) fn receive_aggregate(
        &mut self,
        now: SimTime,
        frame: &Frame,
        mode: Mode,
        rssi: Dbm,
        oks: &[bool],
    ) {
        let Payload::Aggregate(mpdus) = &frame.payload else {
            return;
        };
        let airtime = mode.airtime(frame.psdu_bytes, self.air.preamble, self.air.standard);
        self.data.charge_rx(frame.src, airtime);
        let ssn = mpdus[0].seq;
        for (m, _) in mpdus.iter().zip(oks).filter(|(_, ok)| **ok) {
            let mpdu = Frame {
                kind: FrameKind::Data,
                src: frame.src,
                dst: frame.dst,
                seq: m.seq,
                retry: m.retry,
                attempt: m.attempt,
                psdu_bytes: m.bytes + DATA_OVERHEAD,
                duration: SimTime::ZERO,
                payload: m.payload.clone(),
                report: frame.report,
            };
            let (duplicate, released) =
                self.reorder_for(frame.src, ssn)
                    .receive(now, mpdu.clone(), rssi);
            if duplicate {
                self.events.push_back(DcfEvent::Received {
                    frame: mpdu,
                    rssi,
                    duplicate,
                });
            }
            self.hand_up(released);
        }
        self.block_ack_response(now, frame.src, ssn, mode);
        self.arm_reorder_timeout();
    }

    /// A BAR from `src` arrived: its window moves, and a Block Ack goes back.
    pub(super) fn receive_bar(&mut self, now: SimTime, src: NodeId, ssn: u16, mode: Mode) {
        let released = self.reorder_for(src, ssn).bar(now, ssn);
        self.hand_up(released);
        self.block_ack_response(now, src, ssn, mode);
        self.arm_reorder_timeout();
    }

    /// Sends `src` a Block Ack from `ssn`, SIFS from now.
    fn block_ack_response(&mut self, now: SimTime, src: NodeId, ssn: u16, mode: Mode) {
        let bitmap = self.reorder_for(src, ssn).bitmap(ssn);
        let mut ba = self.control_frame(FrameKind::BlockAck, src, BA_BYTES, SimTime::ZERO);
        ba.payload = Payload::BlockAck { ssn, bitmap };
        self.response = Some((
            ba,
            self.air.standard.control_rate_from(mode, self.air.basic),
        ));
        self.arm(now + self.timing.sifs, MacTimer::SifsResponse);
    }

    /// Arms the reorder timeout at the earliest buffer's deadline.
    fn arm_reorder_timeout(&mut self) {
        match self
            .recipients
            .iter()
            .filter_map(|(_, r)| r.deadline())
            .min()
        {
            Some(at) => self.arm(at, MacTimer::ReorderTimeout),
            None => self.cancel(MacTimer::ReorderTimeout),
        }
    }

    /// The reorder timeout fired: gaps that held MPDUs back long enough
    /// are skipped.
    pub(super) fn reorder_timeout(&mut self, now: SimTime) {
        let mut released = Vec::new();
        for (_, r) in &mut self.recipients {
            r.release(now, &mut released);
        }
        self.hand_up(released);
        self.arm_reorder_timeout();
    }
}

#[cfg(test)]
#[path = "agg_tests.rs"]
mod tests;
