//! What a DTN run counts, as The ONE's `MessageStatsReport` does, per run
//! and per host.
//!
//! Per run: messages created, transfers started, relayed (completed),
//! aborted, messages dropped (buffer full or TTL) and removed (a first
//! contact sender's copy), delivered (first arrival at the destination);
//! delivery probability (delivered / created), overhead ratio ((relayed −
//! delivered) / delivered), latency and hop count of delivered messages,
//! and the time copies spent in buffers before they were dropped or
//! removed. Medians are The ONE's: the element at index n/2 of the sorted
//! values.

/// Counters of one host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostStats {
    pub created: u64,
    pub sent: u64,
    pub received: u64,
    pub delivered_to: u64,
    pub aborted: u64,
    pub dropped: u64,
    /// When the host first completed receiving a message, s.
    pub first_received: Option<f64>,
}

/// One message's fate.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageFate {
    /// Time of first delivery, s.
    pub delivered_at: Option<f64>,
    /// Hops of the first delivered copy.
    pub hops: Option<u32>,
    /// Completed transfers of this message.
    pub relayed: u64,
}

/// Everything a run counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub created: u64,
    pub started: u64,
    pub relayed: u64,
    pub aborted: u64,
    pub dropped: u64,
    pub removed: u64,
    pub delivered: u64,
    pub latencies: Vec<f64>,
    pub hop_counts: Vec<u32>,
    pub buffer_times: Vec<f64>,
    pub hosts: Vec<HostStats>,
    pub messages: Vec<MessageFate>,
}

/// The summary lines of `MessageStatsReport`.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub delivery_prob: f64,
    /// NaN when nothing was delivered.
    pub overhead_ratio: f64,
    pub latency_avg: f64,
    pub latency_med: f64,
    pub hopcount_avg: f64,
    pub hopcount_med: f64,
    pub buffertime_avg: f64,
    pub buffertime_med: f64,
}

fn avg(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn med(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    s[s.len() / 2]
}

impl Stats {
    pub fn summary(&self) -> Summary {
        let hops: Vec<f64> = self.hop_counts.iter().map(|&h| h as f64).collect();
        Summary {
            delivery_prob: if self.created > 0 {
                self.delivered as f64 / self.created as f64
            } else {
                0.0
            },
            overhead_ratio: if self.delivered > 0 {
                (self.relayed as f64 - self.delivered as f64) / self.delivered as f64
            } else {
                f64::NAN
            },
            latency_avg: avg(&self.latencies),
            latency_med: med(&self.latencies),
            hopcount_avg: avg(&hops),
            hopcount_med: med(&hops),
            buffertime_avg: avg(&self.buffer_times),
            buffertime_med: med(&self.buffer_times),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_follows_message_stats_report() {
        let s = Stats {
            created: 4,
            relayed: 7,
            delivered: 2,
            latencies: vec![30.0, 10.0],
            hop_counts: vec![1, 3],
            ..Stats::default()
        };
        let m = s.summary();
        assert_eq!(m.delivery_prob, 0.5);
        assert_eq!(m.overhead_ratio, 2.5);
        assert_eq!((m.latency_avg, m.latency_med), (20.0, 30.0));
        assert_eq!((m.hopcount_avg, m.hopcount_med), (2.0, 3.0));
        assert!(m.buffertime_avg.is_nan());
    }
}
