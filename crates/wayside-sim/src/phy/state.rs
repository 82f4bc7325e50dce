//! The PHY state machine of one radio: idle, CCA-busy, transmitting, receiving.
//!
//! Every signal reaching the antenna above the reception floor is tracked; the
//! sum of their powers plus noise is what a locked frame's SINR is computed
//! against, chunk by chunk, whenever a signal starts or ends during it, and
//! whenever the frame's own fading moves to its next piece
//! ([`crate::channel::Fades`]; other signals count at their power at their
//! start).
//! A frame is locked on if its preamble is detected: a draw against the
//! success probability of the PLCP header at the SINR at the start of the
//! frame. A later frame stronger by the capture margin takes the receiver over
//! (the earlier one is lost); otherwise it only interferes. Energy above the
//! CCA threshold, a locked reception, or a transmission makes the medium busy.
//! A radio that estimates the channel from the preamble only
//! ([`Phy::estimating_from_preamble`]) also counts, for an OFDM payload, the
//! channel's change since the preamble as interference
//! ([`crate::channel::Fades::aging`]).

use crate::channel::Fades;
use crate::ids::TxId;
use crate::phy::detection::Detection;
use crate::phy::error::{ErrorModel, ErrorModelKind};
use crate::phy::mode::{ModClass, Mode};
use crate::rng::Stream;
use crate::trace::DropReason;
use crate::units::{Db, MilliWatt, SimTime};

/// The states of IEEE 802.11's PHY as seen by the MAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyState {
    Idle,
    /// No frame is locked but the energy on the air exceeds the CCA threshold.
    CcaBusy,
    Tx,
    Rx,
}

/// A signal on its way to this radio.
#[derive(Clone, Copy, Debug)]
pub struct Signal {
    pub tx: TxId,
    pub power: MilliWatt,
    pub start: SimTime,
    pub end: SimTime,
    /// Mode and bit count of the PLCP header (and preamble) part.
    pub header_mode: Mode,
    pub header_bits: u64,
    pub header_end: SimTime,
    /// Mode and bit count of the PSDU.
    pub mode: Mode,
    pub payload_bits: u64,
    /// How fading changes `power` over the frame (flat until the receiver
    /// locks on it: [`Phy::fade_reception`]).
    pub fades: Fades,
}

#[derive(Clone, Debug)]
struct Reception {
    signal: Signal,
    /// (time, interference power) from that time on; first entry at start.
    interference: Vec<(SimTime, f64)>,
}

/// What happened when a signal started arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxStart {
    /// The receiver locked on it.
    Locked,
    /// The receiver locked on it, abandoning the frame it was receiving.
    Captured { lost: TxId },
    /// Not received; it only adds interference.
    Ignored(DropReason),
}

/// Outcome of a locked frame at its end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RxEnd {
    pub ok: bool,
    /// Signal to noise (no interference).
    pub snr: Db,
    /// Lowest SINR over the frame.
    pub min_sinr: Db,
}

/// One radio's PHY.
#[derive(Clone, Debug)]
pub struct Phy {
    noise: MilliWatt,
    cca_threshold: MilliWatt,
    /// Capture margin; `None` disables capture.
    capture: Option<Db>,
    transmitting_until: Option<SimTime>,
    /// The signals arriving: their transmission and power.
    incoming: Vec<(TxId, MilliWatt)>,
    total: f64,
    rx: Option<Reception>,
    /// OFDM payloads are equalised with the preamble's channel estimate.
    preamble_estimate: bool,
}

impl Phy {
    pub fn new(noise: MilliWatt, cca_threshold: MilliWatt, capture: Option<Db>) -> Self {
        Phy {
            noise,
            cca_threshold,
            capture,
            transmitting_until: None,
            incoming: Vec::new(),
            total: 0.0,
            rx: None,
            preamble_estimate: false,
        }
    }

    /// This PHY equalises OFDM payloads with the estimate of the channel
    /// from the preamble (`on`), or tracks the channel perfectly.
    pub fn estimating_from_preamble(mut self, on: bool) -> Self {
        self.preamble_estimate = on;
        self
    }

    pub fn state(&self) -> PhyState {
        if self.transmitting_until.is_some() {
            PhyState::Tx
        } else if self.rx.is_some() {
            PhyState::Rx
        } else if self.total >= self.cca_threshold.0 {
            PhyState::CcaBusy
        } else {
            PhyState::Idle
        }
    }

    /// The MAC's physical carrier sense.
    pub fn busy(&self) -> bool {
        self.state() != PhyState::Idle
    }

    /// The frame being received, if any.
    pub fn receiving(&self) -> Option<TxId> {
        self.rx.as_ref().map(|r| r.signal.tx)
    }

    /// Starts a transmission; returns the reception it aborts, if any.
    pub fn start_tx(&mut self, until: SimTime) -> Option<TxId> {
        self.transmitting_until = Some(until);
        self.rx.take().map(|r| r.signal.tx)
    }

    /// The radio changes channel: every signal in flight is forgotten (their
    /// ends will find nothing to remove).
    pub fn retune(&mut self) {
        self.incoming.clear();
        self.total = 0.0;
        self.rx = None;
    }

    /// The fading of the frame being received over its length.
    pub fn fade_reception(&mut self, fades: Fades) {
        if let Some(r) = &mut self.rx {
            r.signal.fades = fades;
        }
    }

    pub fn end_tx(&mut self) {
        self.transmitting_until = None;
    }

    fn note_interference_change(&mut self, now: SimTime) {
        if let Some(r) = &mut self.rx {
            let i = self.total - r.signal.power.0;
            match r.interference.last_mut() {
                Some(last) if last.0 == now => last.1 = i,
                _ => r.interference.push((now, i)),
            }
        }
    }

    /// The probability that the preamble and PLCP header of `s` are
    /// detected, at its SINR against what else is on the air.
    fn detection_probability(&self, s: &Signal, model: &ErrorModelKind) -> f64 {
        model.chunk_success(&s.header_mode, Db::from_ratio(self.sinr(s)), s.header_bits)
    }

    /// The SINR of `s`, arriving, against what else is on the air (a ratio).
    fn sinr(&self, s: &Signal) -> f64 {
        let interference = self.total - s.power.0;
        s.power.0 / (self.noise.0 + interference.max(0.0))
    }

    fn preamble_detected(&self, s: &Signal, model: &ErrorModelKind, rng: &mut Stream) -> bool {
        rng.uniform() < self.detection_probability(s, model)
    }

    /// A signal begins to arrive.
    pub fn rx_start(
        &mut self,
        now: SimTime,
        s: Signal,
        model: &ErrorModelKind,
        rng: &mut Stream,
    ) -> RxStart {
        self.rx_start_with(now, s, &mut |phy, s| phy.preamble_detected(s, model, rng))
    }

    /// [`Phy::rx_start`], deciding the detection draws with `detection`
    /// (the same decisions, most without evaluating the error model).
    pub fn rx_start_detecting(
        &mut self,
        now: SimTime,
        s: Signal,
        detection: &Detection,
        rng: &mut Stream,
    ) -> RxStart {
        self.rx_start_with(now, s, &mut |phy, s| {
            let u = rng.uniform();
            detection.detected(&s.header_mode, phy.sinr(s), s.header_bits, u)
        })
    }

    /// A signal whose preamble cannot be detected begins to arrive
    /// ([`crate::air::UNDETECTABLE`]): it adds its power, and the draw a
    /// detection would take is taken, so that the stream's later draws are
    /// those of [`Phy::rx_start`], but it is never locked on. Returns why
    /// it was not received, and whether [`Phy::rx_start`] would have
    /// locked on it (its draw fell under the detection probability).
    pub fn rx_start_undetectable(
        &mut self,
        now: SimTime,
        s: Signal,
        model: &ErrorModelKind,
        rng: &mut Stream,
    ) -> (DropReason, bool) {
        let mut locks = false;
        let outcome = self.rx_start_with(now, s, &mut |phy, s| {
            let u = rng.uniform();
            // The exact probability only where the draw could fall under it.
            locks = u < 1e-6 && u < phy.detection_probability(s, model);
            false
        });
        match outcome {
            RxStart::Ignored(reason) => (reason, locks),
            _ => unreachable!("an undetectable preamble is never locked on"),
        }
    }

    /// A signal begins to arrive; `detect` says whether its preamble is
    /// detected (and takes the draw for it).
    fn rx_start_with(
        &mut self,
        now: SimTime,
        s: Signal,
        detect: &mut dyn FnMut(&Phy, &Signal) -> bool,
    ) -> RxStart {
        self.incoming.push((s.tx, s.power));
        self.total += s.power.0;
        if self.transmitting_until.is_some() {
            return RxStart::Ignored(DropReason::Transmitting);
        }
        let outcome = match &self.rx {
            None => {
                if detect(self, &s) {
                    RxStart::Locked
                } else {
                    RxStart::Ignored(DropReason::PreambleMissed)
                }
            }
            Some(r) => {
                let stronger = self
                    .capture
                    .is_some_and(|m| Db::from_ratio(s.power.0 / r.signal.power.0).0 >= m.0);
                if stronger && detect(self, &s) {
                    RxStart::Captured { lost: r.signal.tx }
                } else {
                    RxStart::Ignored(DropReason::Busy)
                }
            }
        };
        match outcome {
            RxStart::Locked | RxStart::Captured { .. } => {
                let i = self.total - s.power.0;
                self.rx = Some(Reception {
                    signal: s,
                    interference: vec![(now, i)],
                });
            }
            RxStart::Ignored(_) => self.note_interference_change(now),
        }
        outcome
    }

    /// Removes signal `tx`; the reception, if it was the locked frame.
    fn end_signal(&mut self, now: SimTime, tx: TxId) -> Option<Reception> {
        if let Some(i) = self.incoming.iter().position(|s| s.0 == tx) {
            let (_, power) = self.incoming.swap_remove(i);
            self.total -= power.0;
            if self.incoming.is_empty() {
                self.total = 0.0; // no drift from repeated float sums
            }
        }
        let locked = self.rx.as_ref().is_some_and(|r| r.signal.tx == tx);
        if !locked {
            self.note_interference_change(now);
            return None;
        }
        self.rx.take()
    }

    /// A signal stops arriving. Returns the outcome if it was the locked frame.
    pub fn rx_end(
        &mut self,
        now: SimTime,
        tx: TxId,
        model: &ErrorModelKind,
        rng: &mut Stream,
    ) -> Option<RxEnd> {
        let r = self.end_signal(now, tx)?;
        let (p, min_sinr) = self.success_probability(&r, model);
        let snr = Db::from_ratio(r.signal.power.0 / self.noise.0);
        let ok = rng.uniform() < p;
        Some(RxEnd { ok, snr, min_sinr })
    }

    /// A signal carrying an A-MPDU stops arriving: if it was the locked
    /// frame, the outcome and whether each subframe decoded. `parts` are
    /// the subframes' (start, length) in the PSDU, bytes; each decodes if
    /// the PLCP header does and its own bits do, at the SINR of the
    /// stretches of the frame it spans (its fading and interference).
    pub fn rx_end_parts(
        &mut self,
        now: SimTime,
        tx: TxId,
        model: &ErrorModelKind,
        rng: &mut Stream,
        parts: &[(u32, u32)],
    ) -> Option<(RxEnd, Vec<bool>)> {
        let r = self.end_signal(now, tx)?;
        let (header, each, min_sinr) = self.parts_success(&r, model, parts);
        let header_ok = rng.uniform() < header;
        let oks: Vec<bool> = each
            .iter()
            .map(|&p| rng.uniform() < p && header_ok)
            .collect();
        let end = RxEnd {
            ok: oks.iter().any(|&ok| ok),
            snr: Db::from_ratio(r.signal.power.0 / self.noise.0),
            min_sinr,
        };
        Some((end, oks))
    }

    /// Calls `f(t0, t1, sinr, payload_sinr)` for each stretch of the frame
    /// over which interference and the frame's fading stay the same.
    fn stretches(&self, r: &Reception, mut f: impl FnMut(SimTime, SimTime, Db, Db)) {
        let s = &r.signal;
        let pieces = s.fades.chunks();
        let piece_len = (s.end - s.start).as_ns() / pieces as u64;
        let piece_start = |j: usize| {
            if j == pieces {
                s.end
            } else {
                s.start + SimTime(piece_len * j as u64)
            }
        };
        for (k, &(i0, i)) in r.interference.iter().enumerate() {
            let i1 = r.interference.get(k + 1).map_or(s.end, |n| n.0).min(s.end);
            if i1 <= i0 {
                continue;
            }
            // The pieces of the frame's fading this stretch of interference spans.
            let first = (((i0 - s.start).as_ns() / piece_len.max(1)) as usize).min(pieces - 1);
            for j in first..pieces {
                let (t0, t1) = (i0.max(piece_start(j)), i1.min(piece_start(j + 1)));
                if t0 >= i1 {
                    break;
                }
                if t1 <= t0 {
                    continue;
                }
                let sinr =
                    Db::from_ratio(s.power.0 * s.fades.gain(j) / (self.noise.0 + i.max(0.0)));
                // The payload's, with the estimate's error if it counts.
                let payload_sinr = if self.preamble_estimate && s.mode.class == ModClass::Ofdm {
                    Db::from_ratio(
                        s.power.0 * s.fades.gain(j)
                            / (self.noise.0 + i.max(0.0) + s.power.0 * s.fades.aging(j)),
                    )
                } else {
                    sinr
                };
                f(t0, t1, sinr, payload_sinr);
            }
        }
    }

    /// Probability that the whole frame decodes, and its lowest SINR.
    fn success_probability(&self, r: &Reception, model: &ErrorModelKind) -> (f64, Db) {
        let s = &r.signal;
        let mut p = 1.0;
        let mut min_sinr = f64::INFINITY;
        let header_len = (s.header_end - s.start).as_ns().max(1) as f64;
        let payload_len = (s.end - s.header_end).as_ns().max(1) as f64;
        self.stretches(r, |t0, t1, sinr, payload_sinr| {
            min_sinr = min_sinr.min(payload_sinr.0);
            let hb = (s.header_bits as f64 * overlap(t0, t1, s.start, s.header_end) / header_len)
                .round() as u64;
            let pb = (s.payload_bits as f64 * overlap(t0, t1, s.header_end, s.end) / payload_len)
                .round() as u64;
            if hb > 0 {
                p *= model.chunk_success(&s.header_mode, sinr, hb);
            }
            if pb > 0 {
                p *= model.chunk_success(&s.mode, payload_sinr, pb);
            }
        });
        (p, Db(min_sinr))
    }

    /// The PLCP header's success probability, each part's, and the lowest
    /// SINR. A part's bits are spread evenly over its share of the payload
    /// time (the PSDU's bytes in order).
    fn parts_success(
        &self,
        r: &Reception,
        model: &ErrorModelKind,
        parts: &[(u32, u32)],
    ) -> (f64, Vec<f64>, Db) {
        let s = &r.signal;
        let mut header = 1.0;
        let mut each = vec![1.0; parts.len()];
        let mut min_sinr = f64::INFINITY;
        let header_len = (s.header_end - s.start).as_ns().max(1) as f64;
        let psdu = (s.payload_bits / 8).max(1) as f64;
        let payload_ns = (s.end - s.header_end).as_ns() as f64;
        let at = |byte: u32| s.header_end + SimTime((payload_ns * f64::from(byte) / psdu) as u64);
        let spans: Vec<(SimTime, SimTime, u64)> = parts
            .iter()
            .map(|&(start, len)| (at(start), at(start + len), 8 * u64::from(len)))
            .collect();
        self.stretches(r, |t0, t1, sinr, payload_sinr| {
            min_sinr = min_sinr.min(payload_sinr.0);
            let hb = (s.header_bits as f64 * overlap(t0, t1, s.start, s.header_end) / header_len)
                .round() as u64;
            if hb > 0 {
                header *= model.chunk_success(&s.header_mode, sinr, hb);
            }
            for (p, &(a, b, bits)) in each.iter_mut().zip(&spans) {
                let span = (b - a).as_ns().max(1) as f64;
                let n = (bits as f64 * overlap(t0, t1, a, b) / span).round() as u64;
                if n > 0 {
                    *p *= model.chunk_success(&s.mode, payload_sinr, n);
                }
            }
        });
        (header, each, Db(min_sinr))
    }
}

/// How long [t0, t1) and [a, b) overlap, ns.
fn overlap(t0: SimTime, t1: SimTime, a: SimTime, b: SimTime) -> f64 {
    (t1.min(b).as_ns() as f64 - t0.max(a).as_ns() as f64).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mode::Standard;
    use crate::units::{Bitrate, Dbm};

    fn phy() -> Phy {
        Phy::new(Dbm(-95.0).to_mw(), Dbm(-62.0).to_mw(), Some(Db(10.0)))
    }

    fn signal(tx: u32, dbm: f64, start_us: u64, rate_mbps: u64) -> Signal {
        let g = Standard::G;
        let mode = g.mode(Bitrate(rate_mbps * 1_000_000)).unwrap();
        let start = SimTime::from_us(start_us);
        Signal {
            tx: TxId(tx),
            power: Dbm(dbm).to_mw(),
            start,
            end: start + SimTime::from_us(250),
            header_mode: g.mode(Bitrate(6_000_000)).unwrap(),
            header_bits: 24,
            header_end: start + SimTime::from_us(20),
            mode,
            payload_bits: 8 * 1528,
            fades: Fades::FLAT,
        }
    }

    fn model() -> ErrorModelKind {
        ErrorModelKind::default()
    }

    #[test]
    fn test_idle_strong_signal_locks_and_decodes() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        assert_eq!(p.state(), PhyState::Idle);
        assert_eq!(
            p.rx_start(
                SimTime::from_us(0),
                signal(1, -60.0, 0, 54),
                &model(),
                &mut rng
            ),
            RxStart::Locked
        );
        assert_eq!(p.state(), PhyState::Rx);
        let end = p
            .rx_end(SimTime::from_us(250), TxId(1), &model(), &mut rng)
            .unwrap();
        assert!(end.ok);
        assert!((end.snr.0 - 35.0).abs() < 1e-9);
        assert_eq!(p.state(), PhyState::Idle);
    }

    #[test]
    fn test_rx_fade_within_the_frame_is_seen() {
        // 20 dB above the noise, 6 Mb/s: decoded when flat, lost when a
        // quarter of the frame fades 25 dB.
        let flat = signal(1, -75.0, 0, 6);
        let mut faded = flat;
        let mut gains = [1.0f32; crate::channel::MAX_FADE_CHUNKS];
        gains[2] = 10f32.powf(-2.5);
        faded.fades = Fades::from_gains(&gains[..4]);
        let (p, _) = phy().success_probability(
            &Reception {
                signal: flat,
                interference: vec![(flat.start, 0.0)],
            },
            &model(),
        );
        assert!(p > 0.999, "flat {p}");
        let r = Reception {
            signal: faded,
            interference: vec![(faded.start, 0.0)],
        };
        let (p, min_sinr) = phy().success_probability(&r, &model());
        assert!(p < 1e-6, "faded {p}");
        assert!((min_sinr.0 + 5.0).abs() < 1e-3, "min sinr {}", min_sinr.0);
        // Interference that starts mid-frame splits the pieces it spans.
        let r = Reception {
            signal: faded,
            interference: vec![
                (faded.start, 0.0),
                (faded.start + SimTime::from_us(100), Dbm(-80.0).to_mw().0),
            ],
        };
        let (_, min_sinr) = phy().success_probability(&r, &model());
        assert!(
            (min_sinr.0 - (-75.0 - 25.0 - (-80.0f64).max(-95.0)) - 0.0).abs() < 0.2,
            "min sinr {}",
            min_sinr.0
        );
    }

    #[test]
    fn test_rx_each_subframe_sees_its_own_fade() {
        // The frame above as four subframes of 382 bytes. The third of
        // four fading pieces (125–187.5 µs) fades 25 dB: it covers the
        // end of the second subframe (77.5–135 µs of the payload's
        // 20–250) and most of the third; the first and last decode.
        let mut faded = signal(1, -75.0, 0, 6);
        let mut gains = [1.0f32; crate::channel::MAX_FADE_CHUNKS];
        gains[2] = 10f32.powf(-2.5);
        faded.fades = Fades::from_gains(&gains[..4]);
        let r = Reception {
            signal: faded,
            interference: vec![(faded.start, 0.0)],
        };
        let parts: Vec<(u32, u32)> = (0..4).map(|k| (382 * k, 382)).collect();
        let (header, each, min_sinr) = phy().parts_success(&r, &model(), &parts);
        assert!(header > 0.999, "header {header}");
        assert!(each[0] > 0.999 && each[3] > 0.999, "{each:?}");
        assert!(each[1] < 1e-3 && each[2] < 1e-6, "{each:?}");
        assert!((min_sinr.0 + 5.0).abs() < 1e-3);
        // Drawn: the same outcome.
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        assert_eq!(
            p.rx_start(faded.start, faded, &model(), &mut rng),
            RxStart::Locked
        );
        p.fade_reception(faded.fades);
        let (end, oks) = p
            .rx_end_parts(faded.end, TxId(1), &model(), &mut rng, &parts)
            .unwrap();
        assert_eq!(oks, vec![true, false, false, true]);
        assert!(end.ok);
    }

    #[test]
    fn test_rx_preamble_estimate_ages_over_an_ofdm_payload() {
        // 30 dB above the noise at 54 Mb/s: the estimate's error in the
        // last of four pieces at a tenth of the signal caps that piece's
        // SINR at 1/(10^-3 + 0.1) = 9.96 dB, too little for 64-QAM ¾.
        let mut aged = signal(1, -65.0, 0, 54);
        aged.fades = Fades::from_aging(&[0.0, 0.0, 0.0, 0.1]);
        let r = Reception {
            signal: aged,
            interference: vec![(aged.start, 0.0)],
        };
        let tracked = phy().success_probability(&r, &model());
        assert!(
            tracked.0 > 0.999,
            "a tracking receiver ignores it: {}",
            tracked.0
        );
        assert!((tracked.1 .0 - 30.0).abs() < 1e-9);
        let (p, min_sinr) = phy()
            .estimating_from_preamble(true)
            .success_probability(&r, &model());
        assert!(p < 1e-6, "aged {p}");
        assert!(
            (min_sinr.0 - 10.0 * (1.0f64 / (1e-3 + 0.1)).log10()).abs() < 1e-6,
            "min sinr {}",
            min_sinr.0
        );
        // DSSS is detected differentially: no error to carry.
        let b = Standard::B;
        let mut dsss = aged;
        dsss.mode = b.mode(Bitrate(11_000_000)).unwrap();
        dsss.header_mode = b.mode(Bitrate(1_000_000)).unwrap();
        let r = Reception {
            signal: dsss,
            interference: vec![(dsss.start, 0.0)],
        };
        let (p, min_sinr) = phy()
            .estimating_from_preamble(true)
            .success_probability(&r, &model());
        assert!(
            p > 0.999 && (min_sinr.0 - 30.0).abs() < 1e-9,
            "dsss {p} {}",
            min_sinr.0
        );
    }

    #[test]
    fn test_idle_signal_below_noise_is_missed() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        let out = p.rx_start(SimTime::ZERO, signal(1, -110.0, 0, 6), &model(), &mut rng);
        assert_eq!(out, RxStart::Ignored(DropReason::PreambleMissed));
        assert_eq!(p.state(), PhyState::Idle);
    }

    #[test]
    fn test_idle_energy_above_cca_is_busy_without_lock() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.start_tx(SimTime::from_us(10));
        p.rx_start(SimTime::ZERO, signal(1, -50.0, 0, 6), &model(), &mut rng);
        p.end_tx();
        assert_eq!(p.state(), PhyState::CcaBusy);
        assert!(p
            .rx_end(SimTime::from_us(250), TxId(1), &model(), &mut rng)
            .is_none());
        assert_eq!(p.state(), PhyState::Idle);
    }

    #[test]
    fn test_tx_arriving_signal_is_dropped_as_transmitting() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.start_tx(SimTime::from_us(100));
        let out = p.rx_start(SimTime::ZERO, signal(1, -40.0, 0, 6), &model(), &mut rng);
        assert_eq!(out, RxStart::Ignored(DropReason::Transmitting));
        assert_eq!(p.state(), PhyState::Tx);
    }

    #[test]
    fn test_rx_start_tx_aborts_reception() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.rx_start(SimTime::ZERO, signal(1, -60.0, 0, 6), &model(), &mut rng);
        assert_eq!(p.start_tx(SimTime::from_us(50)), Some(TxId(1)));
        assert!(p
            .rx_end(SimTime::from_us(250), TxId(1), &model(), &mut rng)
            .is_none());
    }

    #[test]
    fn test_rx_weaker_second_frame_interferes_and_corrupts() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.rx_start(SimTime::ZERO, signal(1, -70.0, 0, 54), &model(), &mut rng);
        // 5 dB weaker: no capture, but SINR 5 dB kills 54 Mbps.
        let out = p.rx_start(
            SimTime::from_us(100),
            signal(2, -75.0, 100, 6),
            &model(),
            &mut rng,
        );
        assert_eq!(out, RxStart::Ignored(DropReason::Busy));
        let end = p
            .rx_end(SimTime::from_us(250), TxId(1), &model(), &mut rng)
            .unwrap();
        assert!(!end.ok);
        assert!((end.min_sinr.0 - 5.0).abs() < 0.1);
    }

    #[test]
    fn test_rx_much_stronger_frame_captures_the_receiver() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.rx_start(SimTime::ZERO, signal(1, -85.0, 0, 6), &model(), &mut rng);
        let out = p.rx_start(
            SimTime::from_us(50),
            signal(2, -50.0, 50, 6),
            &model(),
            &mut rng,
        );
        assert_eq!(out, RxStart::Captured { lost: TxId(1) });
        assert!(p
            .rx_end(SimTime::from_us(250), TxId(1), &model(), &mut rng)
            .is_none());
        assert!(
            p.rx_end(SimTime::from_us(300), TxId(2), &model(), &mut rng)
                .unwrap()
                .ok
        );
    }

    #[test]
    fn test_rx_interference_that_ended_before_does_not_count() {
        let (mut p, mut rng) = (phy(), Stream::new("run", 1, 0, "t"));
        p.rx_start(SimTime::ZERO, signal(9, -75.0, 0, 6), &model(), &mut rng);
        // Interferer already gone before the wanted frame starts.
        p.rx_end(SimTime::from_us(250), TxId(9), &model(), &mut rng);
        p.rx_start(
            SimTime::from_us(250),
            signal(1, -70.0, 250, 54),
            &model(),
            &mut rng,
        );
        let end = p
            .rx_end(SimTime::from_us(500), TxId(1), &model(), &mut rng)
            .unwrap();
        assert!((end.min_sinr.0 - 25.0).abs() < 1e-6);
        assert!(end.ok);
    }
}
