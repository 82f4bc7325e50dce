//! Minstrel-HT (Felix Fietkau), as Linux's mac80211 runs it in
//! `net/mac80211/rc80211_minstrel_ht.c` of the 3.14–3.16 kernels (the
//! version that keeps `max_tp_rate`, `max_tp_rate2` and `max_prob_rate`
//! as single indices; 3.17 replaced them with a sorted top four).
//!
//! # Groups and rates
//!
//! The link's HT/VHT modes are split into **MCS groups** by (short GI,
//! streams), ordered as Linux's `GROUP_IDX` does (SGI, then streams); a
//! group holds MCS 0–7 (0–9 for VHT) and marks the MCS its width does not
//! define as unsupported. A rate's index is `group · rates per group + mcs`.
//! Each rate has a nominal **duration**: the data symbols of a 1200-byte
//! frame (`MCS_DURATION`: ⌈9600 / N_DBPS⌉ symbols of 4 µs, or 3.6 µs
//! plus 0.8 µs with the short GI). The per-frame **overhead** is a zero-length and a 10-byte
//! frame at 6 Mbit/s with SIFS (`ieee80211_frame_duration`, short
//! preamble, ERP): 48 + 60 = 108 µs. The CCK group is left out (mac80211
//! only offers it where the driver flags HT CCK rates).
//!
//! # Statistics (`minstrel_ht_update_stats`, every 50 ms of traffic)
//!
//! Every `update_interval / 2` (100 ms / 2), at a frame's status, each
//! rate's success ratio this period is folded into an EWMA that keeps 75 %
//! of the old value (the first period taken as is). Throughput: 0 below a
//! 10 % probability, else min(p, 0.9) / (overhead / A-MPDU length +
//! duration). Per group the best (`max_tp`), second best (`max_tp2`) and
//! most reliable rate (`max_prob`: highest probability, or higher
//! throughput while above 75 %) are chosen, then across groups; the
//! overall `max_prob` is taken from groups with no more streams than the
//! best rate's group minus one (at least one).
//!
//! # Sampling (`minstrel_get_sample_rate`)
//!
//! The station starts with 16 sample attempts and four sample tries; after
//! each update it has 8 per supported group. When no sampling is pending,
//! a frame status arms the next: wait 16 + 2·A-MPDU-length frames, then
//! one try. A sample takes the next entry of the sample table (10 columns,
//! each a random permutation of the group's MCS; 0–9 for VHT as in the
//! later kernels' VHT groups) of the next supported group, and is
//! dropped if unsupported, one of the three current rates, above 95 %
//! probability, or slower than `max_tp2` (and `max_prob`, or with more
//! streams than it) unless it has been skipped 20 times and fewer than
//! three such slow samples were taken this period.
//!
//! # Retry chain (`minstrel_ht_update_rates`, `minstrel_calc_retransmit`)
//!
//! `[max_tp, max_tp2, max_prob]`, each with its retry count: 1 below 10 %,
//! else from 2 up while the tries fit into `segment_size` (6000 µs, with a
//! mean backoff from CWmin 15 doubling to 1023 and a 9 µs slot) and stay
//! under `max_retry` (7); a rate below 20 % gets 2. Linux sends the second
//! and third stage with RTS/CTS and counts their tries with the RTS/CTS
//! overhead; here they get that count without the RTS exchange. A sample
//! frame goes first with one try, the three stages after it (four stages
//! in all, the hardware's limit).
//!
//! # Sudden death of spatial multiplexing
//!
//! At a status, if `max_tp` (or `max_tp2`) has had more than 30 attempts
//! this period at under 20 % success, it drops to the same rate of the
//! next lower group with no more streams.
//!
//! # A-MPDUs
//!
//! A status for an A-MPDU counts each try of a rate as one attempt per
//! MPDU, and the MPDUs the Block Ack acknowledged as successes of the last
//! rate (`ampdu_len`, `ampdu_ack_len`); a frame sent alone is an A-MPDU of
//! one. The mean A-MPDU length (an EWMA at each update, from 1) divides
//! the overhead in the throughput, multiplies the data time in the retry
//! counts and spaces the samples.

use super::common::{fill_chain, index_of, stages_used};
use super::{RateControl, RetryChain, TxRequest, TxStatus, MAX_STAGES};
use crate::phy::mode::Mode;
use crate::rng::Stream;
use crate::units::SimTime;

/// Minstrel-HT's module parameters (mac80211 defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct MinstrelHtParams {
    /// Statistics are refreshed every half of it.
    pub update_interval: SimTime,
    /// Weight of the old probability in the EWMA.
    pub ewma_level: f64,
    pub segment_size_us: f64,
    pub max_retry: u8,
}

impl super::Params for MinstrelHtParams {}

impl Default for MinstrelHtParams {
    fn default() -> Self {
        MinstrelHtParams {
            update_interval: SimTime::from_ms(100),
            ewma_level: 0.75,
            segment_size_us: 6000.0,
            max_retry: 7,
        }
    }
}

const SAMPLE_COLUMNS: usize = 10;
/// Zero-length frame + ACK at 6 Mbit/s, µs ([`MinstrelHt`] docs).
const OVERHEAD_US: f64 = 108.0;
/// The same with RTS/CTS: two more 10-byte control frames (60 µs each).
const OVERHEAD_RTSCTS_US: f64 = OVERHEAD_US + 2.0 * 60.0;
const SLOT_US: f64 = 9.0;
const CW_MIN: u32 = 15;
const CW_MAX: u32 = 1023;

#[derive(Clone, Copy, Debug, Default)]
struct RateStats {
    attempts: u32,
    success: u32,
    att_hist: u64,
    probability: f64,
    tp: f64,
    sample_skipped: u32,
    retry_count: u8,
    retry_count_rtscts: u8,
    retry_updated: bool,
}

#[derive(Clone, Debug)]
struct Group {
    streams: u8,
    /// Per MCS: the index in the link's mode list, if the mode exists.
    modes: Vec<Option<usize>>,
    max_tp: usize,
    max_tp2: usize,
    max_prob: usize,
    /// Sample-table position.
    column: usize,
    index: usize,
}

#[derive(Clone, Debug)]
pub struct MinstrelHt {
    modes: &'static [Mode],
    params: MinstrelHtParams,
    groups: Vec<Group>,
    /// Rates per group (8 HT, 10 VHT).
    per_group: usize,
    stats: Vec<RateStats>,
    /// Nominal data duration per rate index, µs.
    duration: Vec<f64>,
    /// `SAMPLE_COLUMNS` permutations of the MCS of a group.
    sample_table: Vec<Vec<usize>>,
    max_tp: usize,
    max_tp2: usize,
    max_prob: usize,
    max_prob_streams: u8,
    sample_group: usize,
    sample_wait: u32,
    sample_tries: u32,
    sample_count: u32,
    sample_slow: u32,
    next_update: Option<SimTime>,
    /// `avg_ampdu_len`, and the MPDUs and statuses since the last update.
    avg_ampdu_len: f64,
    ampdu_len: u32,
    ampdu_packets: u32,
}

impl MinstrelHt {
    /// A controller over `modes`, whose HT/VHT modes it uses (legacy ones
    /// are ignored; with none at all it panics, as the scenario only builds
    /// it for 802.11n/ac).
    pub fn new(modes: &'static [Mode], params: MinstrelHtParams, mut rng: Stream) -> Self {
        let ht: Vec<_> = modes.iter().filter_map(|m| m.ht).collect();
        assert!(!ht.is_empty(), "Minstrel-HT needs HT or VHT modes");
        let per_group = if ht[0].vht { 10 } else { 8 };
        let mut keys: Vec<(bool, u8)> = ht.iter().map(|h| (h.short_gi, h.streams)).collect();
        keys.sort();
        keys.dedup();
        let groups: Vec<Group> = keys
            .iter()
            .map(|&(sgi, streams)| Group {
                streams,
                modes: (0..per_group as u8)
                    .map(|mcs| {
                        modes.iter().position(|m| {
                            m.ht.is_some_and(|h| {
                                h.mcs == mcs && h.streams == streams && h.short_gi == sgi
                            })
                        })
                    })
                    .collect(),
                max_tp: 0,
                max_tp2: 0,
                max_prob: 0,
                column: 0,
                index: 0,
            })
            .collect();
        let duration = groups
            .iter()
            .flat_map(|g| {
                g.modes.iter().map(|m| {
                    m.map_or(f64::INFINITY, |i| {
                        let mode = modes[i];
                        let syms = (1200.0 * 8.0 / f64::from(mode.data_bits_per_symbol)).ceil();
                        let sgi = mode.ht.is_some_and(|h| h.short_gi);
                        // MCS_SYMBOL_TIME: (18000·syms + 4000) / 5 ns with
                        // the short GI.
                        if sgi {
                            3.6 * syms + 0.8
                        } else {
                            4.0 * syms
                        }
                    })
                })
            })
            .collect();
        // init_sample_table: each column a permutation of the group's MCS.
        let mut sample_table = vec![vec![usize::MAX; per_group]; SAMPLE_COLUMNS];
        for column in &mut sample_table {
            for i in 0..per_group {
                let mut k = (i + rng.integer_inclusive(255) as usize) % per_group;
                while column[k] != usize::MAX {
                    k = (k + 1) % per_group;
                }
                column[k] = i;
            }
        }
        let n = groups.len() * per_group;
        let mut mi = MinstrelHt {
            modes,
            params,
            groups,
            per_group,
            stats: vec![RateStats::default(); n],
            duration,
            sample_table,
            max_tp: 0,
            max_tp2: 0,
            max_prob: 0,
            max_prob_streams: 1,
            sample_group: 0,
            // With multi-rate retry: sample at once, 16 times.
            sample_wait: 0,
            sample_tries: 4,
            sample_count: 16,
            sample_slow: 0,
            next_update: None,
            avg_ampdu_len: 1.0,
            ampdu_len: 0,
            ampdu_packets: 0,
        };
        mi.update_stats();
        mi
    }

    fn supported(&self, index: usize) -> bool {
        self.groups[index / self.per_group].modes[index % self.per_group].is_some()
    }

    fn mode_of(&self, index: usize) -> usize {
        self.groups[index / self.per_group].modes[index % self.per_group].expect("supported rate")
    }

    /// (max_tp, max_tp2, max_prob) modes.
    pub fn best(&self) -> (Mode, Mode, Mode) {
        let m = |i| self.modes[self.mode_of(i)];
        (m(self.max_tp), m(self.max_tp2), m(self.max_prob))
    }

    fn calc_tp(&mut self, index: usize) {
        let s = &mut self.stats[index];
        s.tp = if s.probability < 0.1 {
            0.0
        } else {
            let ampdu = self.avg_ampdu_len.trunc().max(1.0);
            s.probability.min(0.9) / (OVERHEAD_US / ampdu + self.duration[index])
        };
    }

    /// `minstrel_ht_update_stats`.
    fn update_stats(&mut self) {
        if self.ampdu_packets > 0 {
            let mean = f64::from(self.ampdu_len) / f64::from(self.ampdu_packets);
            let level = self.params.ewma_level;
            self.avg_ampdu_len = self.avg_ampdu_len * level + mean * (1.0 - level);
            (self.ampdu_len, self.ampdu_packets) = (0, 0);
        }
        self.sample_slow = 0;
        self.sample_count = 0;
        let level = self.params.ewma_level;
        let mut first = None;
        for g in 0..self.groups.len() {
            self.sample_count += 1;
            let (mut cur_prob, mut cur_prob_tp, mut cur_tp, mut cur_tp2) = (0.0, 0.0, 0.0, 0.0);
            let mut group_valid = false;
            for r in 0..self.per_group {
                let index = g * self.per_group + r;
                if !self.supported(index) {
                    continue;
                }
                if !group_valid {
                    let grp = &mut self.groups[g];
                    (grp.max_tp, grp.max_tp2, grp.max_prob) = (index, index, index);
                    first.get_or_insert(index);
                    group_valid = true;
                }
                let s = &mut self.stats[index];
                s.retry_updated = false;
                if s.attempts > 0 {
                    s.sample_skipped = 0;
                    let cur = f64::from(s.success) / f64::from(s.attempts);
                    s.probability = if s.att_hist == 0 {
                        cur
                    } else {
                        s.probability * level + cur * (1.0 - level)
                    };
                    s.att_hist += u64::from(s.attempts);
                } else {
                    s.sample_skipped += 1;
                }
                s.attempts = 0;
                s.success = 0;
                self.calc_tp(index);
                let s = self.stats[index];
                if s.tp == 0.0 {
                    continue;
                }
                let grp = &mut self.groups[g];
                if (s.tp > cur_prob_tp && s.probability > 0.75) || s.probability > cur_prob {
                    grp.max_prob = index;
                    cur_prob = s.probability;
                    cur_prob_tp = s.tp;
                }
                // Linux swaps the new best into `index` so the old best is
                // considered for second place below.
                let mut candidate = index;
                if s.tp > cur_tp {
                    candidate = grp.max_tp;
                    grp.max_tp = index;
                    cur_tp = s.tp;
                }
                if candidate >= grp.max_tp {
                    continue;
                }
                let tp = self.stats[candidate].tp;
                if tp > cur_tp2 {
                    grp.max_tp2 = candidate;
                    cur_tp2 = tp;
                }
            }
        }
        let first = first.expect("a supported rate");
        (self.max_tp, self.max_tp2, self.max_prob) = (first, first, first);
        self.sample_count *= 8;
        let (mut cur_tp, mut cur_tp2) = (0.0, 0.0);
        for g in &self.groups {
            let tp = self.stats[g.max_tp].tp;
            if cur_tp < tp {
                self.max_tp2 = self.max_tp;
                cur_tp2 = cur_tp;
                self.max_tp = g.max_tp;
                cur_tp = tp;
                self.max_prob_streams = g.streams - 1;
            }
            let tp2 = self.stats[g.max_tp2].tp;
            if cur_tp2 < tp2 {
                self.max_tp2 = g.max_tp2;
                cur_tp2 = tp2;
            }
        }
        self.max_prob_streams = self.max_prob_streams.max(1);
        let mut cur_prob_tp = 0.0;
        for g in &self.groups {
            let tp = self.stats[g.max_prob].tp;
            if cur_prob_tp < tp && g.streams <= self.max_prob_streams {
                self.max_prob = g.max_prob;
                cur_prob_tp = tp;
            }
        }
    }

    /// `minstrel_calc_retransmit`: (tries, tries with RTS/CTS).
    fn retries(&mut self, index: usize) -> (u8, u8) {
        let s = self.stats[index];
        if s.retry_updated {
            return (s.retry_count, s.retry_count_rtscts);
        }
        let (count, rtscts) = if s.probability < 0.1 {
            (1, 1)
        } else {
            let data = self.duration[index] * self.avg_ampdu_len.trunc().max(1.0);
            let mut cw = CW_MIN;
            let mut ctime = 0.0;
            for _ in 0..2 {
                ctime += SLOT_US * f64::from(cw) / 2.0;
                cw = ((cw << 1) | 1).min(CW_MAX);
            }
            let mut tx = ctime + 2.0 * (OVERHEAD_US + data);
            let mut tx_rts = ctime + 2.0 * (OVERHEAD_RTSCTS_US + data);
            let (mut count, mut rtscts) = (2u8, 2u8);
            loop {
                let c = SLOT_US * f64::from(cw) / 2.0;
                cw = ((cw << 1) | 1).min(CW_MAX);
                tx += c + OVERHEAD_US + data;
                tx_rts += c + OVERHEAD_RTSCTS_US + data;
                if tx_rts < self.params.segment_size_us {
                    rtscts += 1;
                }
                if tx >= self.params.segment_size_us {
                    break;
                }
                count += 1;
                if count >= self.params.max_retry {
                    break;
                }
            }
            (count, rtscts)
        };
        let s = &mut self.stats[index];
        (s.retry_count, s.retry_count_rtscts, s.retry_updated) = (count, rtscts, true);
        (count, rtscts)
    }

    /// `minstrel_ht_set_rate`: the tries of a chain stage at `offset`.
    fn stage_tries(&mut self, index: usize, offset: usize) -> u8 {
        let (count, rtscts) = self.retries(index);
        if self.stats[index].probability < 0.2 || count == 0 {
            2
        } else if offset > 0 {
            rtscts
        } else {
            count
        }
    }

    /// `minstrel_next_sample_idx`.
    fn next_sample_idx(&mut self) {
        self.sample_group = (self.sample_group + 1) % self.groups.len();
        let g = &mut self.groups[self.sample_group];
        g.index += 1;
        if g.index >= self.per_group {
            g.index = 0;
            g.column = (g.column + 1) % SAMPLE_COLUMNS;
        }
    }

    /// `minstrel_get_sample_rate`.
    fn sample_rate(&mut self) -> Option<usize> {
        if self.sample_wait > 0 {
            self.sample_wait -= 1;
            return None;
        }
        if self.sample_tries == 0 {
            return None;
        }
        let group = self.sample_group;
        let g = &self.groups[group];
        let rate = self.sample_table[g.column][g.index];
        self.next_sample_idx();
        let index = group * self.per_group + rate;
        if !self.supported(index) || [self.max_tp, self.max_tp2, self.max_prob].contains(&index) {
            return None;
        }
        let s = self.stats[index];
        if s.probability > 0.95 {
            return None;
        }
        let dur = self.duration[index];
        if dur >= self.duration[self.max_tp2]
            && (self.max_prob_streams < self.groups[group].streams
                || dur >= self.duration[self.max_prob])
        {
            if s.sample_skipped < 20 {
                return None;
            }
            self.sample_slow += 1;
            if self.sample_slow > 3 {
                return None;
            }
        }
        self.sample_tries -= 1;
        Some(index)
    }

    /// `minstrel_downgrade_rate`: the same pick in the next lower group
    /// with no more streams.
    fn downgrade(&self, index: usize, primary: bool) -> usize {
        let orig = index / self.per_group;
        (0..orig)
            .rev()
            .find(|&g| self.groups[g].streams <= self.groups[orig].streams)
            .map_or(index, |g| {
                let grp = &self.groups[g];
                if primary {
                    grp.max_tp
                } else {
                    grp.max_tp2
                }
            })
    }

    fn collapsed(&self, index: usize) -> bool {
        let s = self.stats[index];
        s.attempts > 30 && f64::from(s.success) < 0.2 * f64::from(s.attempts)
    }

    /// The rate index of mode `mode`, if it is one of this controller's.
    fn index_of_mode(&self, mode: Mode) -> Option<usize> {
        let m = index_of(self.modes, mode)?;
        (0..self.stats.len()).find(|&i| self.supported(i) && self.mode_of(i) == m)
    }
}

impl RateControl for MinstrelHt {
    fn retry_chain(&mut self, _req: &TxRequest) -> RetryChain {
        let sample = self.sample_rate();
        let mut stages: Vec<(usize, u8)> = Vec::with_capacity(MAX_STAGES);
        if let Some(s) = sample {
            stages.push((self.mode_of(s), 1));
        }
        for (offset, index) in [self.max_tp, self.max_tp2, self.max_prob]
            .into_iter()
            .enumerate()
        {
            let tries = self.stage_tries(index, offset);
            stages.push((self.mode_of(index), tries));
        }
        let mut chain = RetryChain {
            stages: Vec::with_capacity(MAX_STAGES),
        };
        fill_chain(&mut chain, self.modes, &stages);
        chain
    }

    fn report(&mut self, status: &TxStatus) {
        if self.sample_wait == 0 && self.sample_tries == 0 && self.sample_count > 0 {
            self.sample_wait = 16 + 2 * self.avg_ampdu_len.trunc().max(1.0) as u32;
            self.sample_tries = 1;
            self.sample_count -= 1;
        }
        let (len, acked) = match status.ampdu {
            Some(a) => (a.len, a.acked),
            None => (1, u32::from(status.acked)),
        };
        self.ampdu_packets += 1;
        self.ampdu_len += len;
        let used: Vec<_> = stages_used(&status.chain, status.attempts).collect();
        let last = used.len().saturating_sub(1);
        for (k, &(_, mode, n)) in used.iter().enumerate() {
            if let Some(i) = self.index_of_mode(mode) {
                self.stats[i].attempts += n * len;
                if k == last && status.acked {
                    self.stats[i].success += acked;
                }
            }
        }
        if self.collapsed(self.max_tp) {
            self.max_tp = self.downgrade(self.max_tp, true);
        }
        if self.collapsed(self.max_tp2) {
            self.max_tp2 = self.downgrade(self.max_tp2, false);
        }
        let half = SimTime::from_ns((self.params.update_interval.as_ns() / 2).max(1));
        let due = *self.next_update.get_or_insert(status.now + half);
        if status.now > due {
            self.next_update = Some(status.now + half);
            self.update_stats();
        }
    }
}

#[cfg(test)]
#[path = "minstrel_ht_tests.rs"]
mod tests;
