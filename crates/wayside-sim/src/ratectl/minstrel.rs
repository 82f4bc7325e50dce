//! Minstrel, non-HT (Derek Smithies and John Bicket), as in madwifi's
//! `ath_rate/minstrel` (madwifi 0.9.4 and trunk) and ns-3's
//! `MinstrelWifiManager`, which ports it.
//!
//! # How it works
//!
//! Per rate it counts attempts and successes. Every `update_interval`
//! (100 ms) it turns them into a success probability, smoothed by an EWMA
//! that keeps `ewma_level` (75 %) of the old value — starting from 0, as
//! madwifi does — and a throughput estimate `prob × 1 s / perfect_tx_time`,
//! where `perfect_tx_time` is the lossless time of a 1200-byte frame
//! ([`common::tx_time_us`] by the standard's timing). It then picks
//! `max_tp` (best throughput), `max_tp2` (second best) and `max_prob`
//! (highest probability); ties go to the lower rate. Until the first
//! update every estimate is 0, so all three are the **lowest rate:
//! Minstrel's initial rate** (madwifi sets `ni_txrate` to 36 Mbps for
//! display only; `findrate` uses `max_tp_rate` = 0).
//!
//! **Retry counts.** Each rate's `retry_count` is the largest r in 2..=10
//! whose r + 1 tries fit into `segment_size` (6000 µs), else 1 (madwifi's
//! loop over `ATH_TXMAXTRY` = 11). In each update a rate whose probability
//! is above 95 % or below 10 % gets `min(retry_count / 2, 2)` (at least 1)
//! tries instead.
//!
//! **Look-around (sampling).** Before each frame, if fewer than
//! `lookaround` (10 %) of the frames so far were samples and a random draw
//! with probability 2/16 says so (madwifi draws this from an LCG; here from
//! the stream), the frame samples the next rate of a random sample table
//! (10 columns, each a random permutation of every rate but the lowest;
//! filled from the stream at creation). Counters restart after 10000 frames.
//!
//! **Retry chain** (madwifi `findrate`/`get_mrr`), each stage with that
//! rate's adjusted retry count:
//! - normal frame: `[max_tp, max_tp2, max_prob, lowest]`;
//! - sample at a rate faster than `max_tp`: `[sample, max_tp, max_prob, lowest]`;
//! - sample at a slower rate: `[max_tp, sample, max_prob, lowest]` (the
//!   sample is only used if `max_tp` fails).
//!
//! Attempts are credited per stage (`tx_complete`), the success to the
//! stage of the final attempt.
//!
//! # Linux minstrel
//!
//! Linux's mac80211 `rc80211_minstrel` (legacy, removed in 2021 when
//! `minstrel_ht` took over legacy rates too) differs in ways that matter
//! little for 802.11b/g: it caps the probability at 90 % in the throughput
//! estimate, computes the EWMA with the first sample taken as is, uses
//! deferred sampling with a per-rate skip count rather than the 2/16 draw,
//! and sets the first chain stage of a sample to one try. Current
//! `minstrel_ht` additionally samples by groups and keeps an EWMA variance.
//! None changes the initial rate (lowest until the first statistics), the
//! 100 ms update or the ~10 % look-around; for fast-changing vehicular links
//! the first-stage sample cost (madwifi: full retry count, up to ~6 ms) is
//! the difference most likely to show, as extra delay on sample frames.
//!
//! # Parameters ([`MinstrelParams`], madwifi defaults)
//! `update_interval` 100 ms (madwifi halves it in station mode),
//! `ewma_level` 0.75, `lookaround` 0.10, `segment_size` 6000 µs.

use super::common::{self, index_of, stages_used, Estimate};
use super::{RateControl, RetryChain, TxRequest, TxStatus, MAX_STAGES};
use crate::phy::mode::Mode;
use crate::rng::Stream;
use crate::units::SimTime;

#[derive(Clone, Debug, PartialEq)]
pub struct MinstrelParams {
    pub update_interval: SimTime,
    /// Weight of the old probability in the EWMA.
    pub ewma_level: f64,
    /// Target fraction of sample frames.
    pub lookaround: f64,
    /// Most time, µs, a chain stage's tries may take.
    pub segment_size_us: f64,
}

impl super::Params for MinstrelParams {}

impl Default for MinstrelParams {
    fn default() -> Self {
        MinstrelParams {
            update_interval: SimTime::from_ms(100),
            ewma_level: 0.75,
            lookaround: 0.10,
            segment_size_us: 6000.0,
        }
    }
}

const COLUMNS: usize = 10;
/// madwifi `ATH_TXMAXTRY`.
const TXMAXTRY: u32 = 11;
const PERFECT_BYTES: u32 = 1200;

#[derive(Clone, Copy, Debug, Default)]
struct RateInfo {
    perfect_tx_time: f64,
    retry_count: u8,
    adjusted_retry_count: u8,
    attempts: u32,
    successes: u32,
    probability: f64,
    throughput: f64,
}

#[derive(Clone, Debug)]
pub struct Minstrel {
    modes: &'static [Mode],
    params: MinstrelParams,
    rates: Vec<RateInfo>,
    /// `COLUMNS` columns of `n − 1` rate indices each, column-major.
    sample_table: Vec<usize>,
    sample_index: usize,
    sample_column: usize,
    max_tp: usize,
    max_tp2: usize,
    max_prob: usize,
    packet_count: u32,
    sample_count: u32,
    next_update: Option<SimTime>,
    rng: Stream,
}

impl Minstrel {
    pub fn new(modes: &'static [Mode], params: MinstrelParams, mut rng: Stream) -> Self {
        assert!(!modes.is_empty(), "Minstrel needs at least one mode");
        let standard = common::standard_of(modes);
        let rates = modes
            .iter()
            .map(|m| {
                let perfect =
                    common::tx_time_us(Estimate::Standard, standard, *m, PERFECT_BYTES, 1);
                let mut retry = 1;
                for r in 2..TXMAXTRY {
                    if common::tx_time_us(Estimate::Standard, standard, *m, PERFECT_BYTES, r + 1)
                        > params.segment_size_us
                    {
                        break;
                    }
                    retry = r as u8;
                }
                RateInfo {
                    perfect_tx_time: perfect,
                    retry_count: retry,
                    adjusted_retry_count: retry,
                    ..RateInfo::default()
                }
            })
            .collect();
        // madwifi ath_fill_sample_table: each column a random permutation of
        // the rates 1..n (the lowest is never sampled).
        let m = modes.len().saturating_sub(1);
        let mut sample_table = vec![usize::MAX; COLUMNS * m];
        for col in 0..COLUMNS {
            let column = &mut sample_table[col * m..(col + 1) * m];
            for i in 0..m {
                let mut k = (i + rng.integer_inclusive(255) as usize) % m;
                while column[k] != usize::MAX {
                    k = (k + 1) % m;
                }
                column[k] = i + 1;
            }
        }
        Minstrel {
            modes,
            params,
            rates,
            sample_table,
            sample_index: 0,
            sample_column: 0,
            max_tp: 0,
            max_tp2: 0,
            max_prob: 0,
            packet_count: 0,
            sample_count: 0,
            next_update: None,
            rng,
        }
    }

    /// (max_tp, max_tp2, max_prob) modes.
    pub fn best(&self) -> (Mode, Mode, Mode) {
        (
            self.modes[self.max_tp],
            self.modes[self.max_tp2],
            self.modes[self.max_prob],
        )
    }

    fn tick(&mut self, now: SimTime) {
        let interval = self.params.update_interval.max(SimTime::from_ns(1));
        let next = *self.next_update.get_or_insert(now + interval);
        if now < next {
            return;
        }
        let periods = (now - next).as_ns() / interval.as_ns() + 1;
        self.next_update = Some(next + interval * periods);
        self.update_stats();
    }

    /// madwifi `ath_rate_statistics`.
    fn update_stats(&mut self) {
        let level = self.params.ewma_level;
        for r in &mut self.rates {
            if r.attempts > 0 {
                let p = f64::from(r.successes) / f64::from(r.attempts);
                r.probability = p * (1.0 - level) + r.probability * level;
                r.throughput = r.probability * 1e6 / r.perfect_tx_time;
                r.attempts = 0;
                r.successes = 0;
            }
            r.adjusted_retry_count = if r.probability > 0.95 || r.probability < 0.10 {
                (r.retry_count >> 1).clamp(1, 2)
            } else {
                r.retry_count
            };
        }
        let (mut max_tp, mut max_prob) = (0, 0);
        let (mut tp, mut prob) = (0.0, 0.0);
        for (i, r) in self.rates.iter().enumerate() {
            if tp < r.throughput {
                max_tp = i;
                tp = r.throughput;
            }
            if prob < r.probability {
                max_prob = i;
                prob = r.probability;
            }
        }
        let (mut max_tp2, mut tp2) = (0, 0.0);
        for (i, r) in self.rates.iter().enumerate() {
            if i != max_tp && tp2 < r.throughput {
                max_tp2 = i;
                tp2 = r.throughput;
            }
        }
        self.max_tp = max_tp;
        self.max_tp2 = max_tp2;
        self.max_prob = max_prob;
    }

    /// The next rate of the sample table.
    fn next_sample(&mut self) -> usize {
        let m = self.modes.len() - 1;
        let ndx = self.sample_table[self.sample_column * m + self.sample_index];
        self.sample_index += 1;
        if self.sample_index >= m {
            self.sample_index = 0;
            self.sample_column = (self.sample_column + 1) % COLUMNS;
        }
        ndx
    }
}

impl RateControl for Minstrel {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        self.tick(req.now);
        self.packet_count += 1;
        let mut first = self.max_tp;
        let mut second = self.max_tp2;
        if self.modes.len() > 1
            && f64::from(self.sample_count) < self.params.lookaround * f64::from(self.packet_count)
            && self.rng.uniform() < 2.0 / 16.0
        {
            self.sample_count += 1;
            if self.packet_count >= 10_000 {
                self.sample_count = 0;
                self.packet_count = 0;
            }
            let sample = self.next_sample();
            if self.rates[sample].perfect_tx_time > self.rates[self.max_tp].perfect_tx_time {
                second = sample;
            } else {
                first = sample;
                second = self.max_tp;
            }
        }
        let tries = |i: usize| self.rates[i].adjusted_retry_count;
        let mut chain = RetryChain {
            stages: Vec::with_capacity(MAX_STAGES),
        };
        common::fill_chain(
            &mut chain,
            self.modes,
            &[
                (first, tries(first)),
                (second, tries(second)),
                (self.max_prob, tries(self.max_prob)),
                (0, tries(0)),
            ],
        );
        chain
    }

    fn report(&mut self, status: &TxStatus) {
        self.tick(status.now);
        let mut last = None;
        for (_, mode, n) in stages_used(&status.chain, status.attempts) {
            if let Some(i) = index_of(self.modes, mode) {
                self.rates[i].attempts += n;
                last = Some(i);
            }
        }
        if let (true, Some(i)) = (status.acked, last) {
            self.rates[i].successes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::Channel;
    use super::*;
    use crate::phy::mode::Standard;

    fn g() -> &'static [Mode] {
        Standard::G.modes()
    }

    fn new() -> Minstrel {
        Minstrel::new(
            g(),
            MinstrelParams::default(),
            Stream::new("run", 1, 0, "test/minstrel"),
        )
    }

    #[test]
    fn starts_at_the_lowest_rate() {
        let mut m = new();
        let ch = Channel::new(g(), vec![1.0; 12]);
        // Non-sample frames before the first update go at the lowest rate.
        let firsts: Vec<f64> = (0..50)
            .map(|_| m.retry_chain(&ch.request()).stages[0].mode.rate.mbps())
            .collect();
        assert!(
            firsts.iter().filter(|&&r| r == 1.0).count() >= 40,
            "{firsts:?}"
        );
        assert_eq!(m.best().0.rate.mbps(), 1.0);
    }

    #[test]
    fn sample_table_columns_are_permutations_without_the_lowest() {
        let m = new();
        let n = g().len() - 1;
        for col in m.sample_table.chunks(n) {
            let mut c = col.to_vec();
            c.sort_unstable();
            assert_eq!(c, (1..=n).collect::<Vec<_>>());
        }
        assert_ne!(m.sample_table[..n], m.sample_table[n..2 * n]);
    }

    #[test]
    fn probability_is_an_ewma_with_level_75_percent() {
        let mut m = new();
        m.rates[5].attempts = 10;
        m.rates[5].successes = 8;
        m.update_stats();
        assert!((m.rates[5].probability - 0.2).abs() < 1e-12);
        m.rates[5].attempts = 10;
        m.rates[5].successes = 4;
        m.update_stats();
        assert!((m.rates[5].probability - (0.25 * 0.4 + 0.75 * 0.2)).abs() < 1e-12);
        // No attempts: unchanged.
        m.update_stats();
        assert!((m.rates[5].probability - 0.25).abs() < 1e-12);
        let want_tp = 0.25 * 1e6 / m.rates[5].perfect_tx_time;
        assert!((m.rates[5].throughput - want_tp).abs() < 1e-9);
    }

    #[test]
    fn retry_counts_fit_the_segment_and_shrink_at_extremes() {
        let mut m = new();
        let std = Standard::G;
        for (i, r) in m.rates.iter().enumerate() {
            let time =
                |tries| common::tx_time_us(Estimate::Standard, std, g()[i], PERFECT_BYTES, tries);
            let t = time(u32::from(r.retry_count) + 1);
            assert!(r.retry_count == 1 || t <= 6000.0, "{i}: {}", r.retry_count);
            let t_more = time(u32::from(r.retry_count) + 2);
            assert!(r.retry_count == 10 || t_more > 6000.0, "{i}");
        }
        assert!(m.rates[11].retry_count > m.rates[0].retry_count);
        m.rates[11].attempts = 10;
        m.rates[11].successes = 5;
        m.update_stats();
        assert_eq!(m.rates[11].adjusted_retry_count, m.rates[11].retry_count); // 12.5 %
        m.update_stats(); // no attempts: still 12.5 %
        m.rates[11].attempts = 10;
        m.update_stats(); // 9.4 % < 10 %
        assert_eq!(
            m.rates[11].adjusted_retry_count,
            (m.rates[11].retry_count / 2).clamp(1, 2)
        );
    }

    /// About 10 % of frames sample another rate.
    #[test]
    fn lookaround_is_about_ten_percent() {
        let mut m = new();
        let mut ch = Channel::new(g(), Channel::cliff(g(), 24.0));
        let mut samples = 0;
        let total = 20_000;
        for n in 0..total {
            let before = m.best();
            let (c, _) = ch.send(&mut m);
            let normal =
                c.stages[0].mode == before.0 && c.stages.get(1).map(|s| s.mode) == Some(before.1);
            if !normal && n >= 1000 {
                samples += 1;
            }
        }
        let frac = f64::from(samples) / f64::from(total - 1000);
        assert!((0.08..0.12).contains(&frac), "{frac}");
    }

    #[test]
    fn converges_and_builds_the_mrr_chain() {
        let mut m = new();
        let mut ch = Channel::new(g(), Channel::cliff(g(), 24.0));
        for _ in 0..3000 {
            ch.send(&mut m);
        }
        let (tp, tp2, prob) = m.best();
        assert_eq!(tp.rate.mbps(), 24.0);
        assert!(tp2.rate.mbps() < 24.0);
        assert!(prob.rate.mbps() <= 24.0);
        let mut normal = None;
        for _ in 0..20 {
            let c = m.retry_chain(&ch.request());
            if c.stages[0].mode == tp && c.stages[1].mode == tp2 {
                normal = Some(c);
                break;
            }
        }
        let c = normal.expect("a normal frame");
        assert_eq!(c.stages.len(), 4);
        assert_eq!(c.stages[2].mode, prob);
        assert_eq!(c.stages[3].mode.rate.mbps(), 1.0);
        assert_eq!(c.stages[0].tries, m.rates[8].adjusted_retry_count);
    }

    #[test]
    fn deterministic_for_a_stream() {
        let run = || {
            let mut m = new();
            let mut ch = Channel::new(g(), Channel::cliff(g(), 36.0));
            (0..500)
                .map(|_| ch.send(&mut m).0.stages[0].mode.rate.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
