//! mac80211's per-station TXQs with airtime fairness, as in Linux 5.4
//! (`net/mac80211/tx.c`, `sta_info.c`) driving ath9k: every station has a
//! TXQ, a tin of one shared flow queue ([`super::fq`]: `fq_init`'s 4096
//! flows, quantum 300 B, 8192 packets; 4 MB memory limit for a radio
//! without VHT) with CoDel per flow at `local->cparams` (target 20 ms,
//! interval 100 ms). Multicast and broadcast data go to the interface's
//! own TXQ. Management frames bypass the TXQs (the DCF's management
//! queue).
//!
//! The scheduler (`ieee80211_next_txq`) keeps the stations with data in a
//! round-robin list: a station's TXQ goes back to the head after each
//! frame while its airtime deficit is non-negative; a negative deficit
//! earns it `airtime_weight` (256 µs) and sends it to the tail. The driver
//! reports the airtime of every transmission (all its attempts) and every
//! reception to or from a station, which is taken off its deficit
//! (`ieee80211_sta_register_airtime`).
//!
//! Not modelled: the slower CoDel setting (50 ms / 300 ms) that mac80211
//! picks for a station whose driver reports a low expected throughput
//! (ath9k with Minstrel reports none), and AQL (5.5 on; ath9k has none).

use super::codel::CodelParams;
use super::fq::{Fq, FqParams, Item, Overflow};
use crate::ids::{Dst, NodeId};
use crate::units::SimTime;
use std::collections::VecDeque;

/// `IEEE80211_DEFAULT_AIRTIME_WEIGHT`, in µs of airtime per round.
const AIRTIME_WEIGHT_US: i64 = 256;

/// mac80211's CoDel parameters for its TXQs (`ieee80211_txq_setup_flows`);
/// `codel_params_init` leaves the MTU at 0.
pub const CODEL: CodelParams = CodelParams {
    target: SimTime::from_ms(20),
    interval: SimTime::from_ms(100),
    mtu: 0,
};

/// The flow queue behind the TXQs (`fq_init`, and `memory_limit` for a
/// radio without VHT).
pub const FQ: FqParams = FqParams {
    buckets: 4096,
    quantum: 300,
    limit: 8192,
    memory_limit: 4 << 20,
    overflow: Overflow::OneAtATime,
    codel_on_total: false,
};

#[derive(Debug)]
struct Station {
    node: NodeId,
    tin: usize,
    /// µs; may go negative.
    deficit: i64,
}

/// The TXQs of one radio and their scheduler.
#[derive(Debug)]
pub struct Txqs {
    fq: Fq,
    stations: Vec<Station>,
    /// The interface's TXQ (multicast and broadcast).
    vif: usize,
    /// Tins with data, in scheduling order.
    active: VecDeque<usize>,
    /// Per tin: its station, if it has one.
    owner: Vec<Option<usize>>,
}

impl Default for Txqs {
    fn default() -> Self {
        let mut fq = Fq::new(FQ);
        let vif = fq.add_tin();
        Txqs {
            fq,
            stations: Vec::new(),
            vif,
            active: VecDeque::new(),
            owner: vec![None],
        }
    }
}

impl Txqs {
    pub(super) fn len(&self) -> usize {
        self.fq.len()
    }

    fn station(&mut self, node: NodeId) -> usize {
        if let Some(i) = self.stations.iter().position(|s| s.node == node) {
            return i;
        }
        let tin = self.fq.add_tin();
        self.owner.push(Some(self.stations.len()));
        self.stations.push(Station {
            node,
            tin,
            deficit: 0,
        });
        self.stations.len() - 1
    }

    /// Queues `item` for its receiver under flow `hash`.
    pub fn enqueue(&mut self, dst: Dst, hash: u64, item: Item, dropped: &mut Vec<Item>) {
        let tin = match dst {
            Dst::Node(n) => {
                let s = self.station(n);
                self.stations[s].tin
            }
            Dst::Broadcast => self.vif,
        };
        self.fq.enqueue(tin, hash, item, dropped);
        if self.fq.tin_len(tin) > 0 && !self.active.contains(&tin) {
            // With airtime accounting, a station joins at the head: only
            // a negative deficit moves it back (`__ieee80211_schedule_txq`).
            if self.owner[tin].is_some() {
                self.active.push_front(tin);
            } else {
                self.active.push_back(tin);
            }
        }
    }

    /// The next frame by the airtime scheduler.
    pub fn dequeue(&mut self, now: SimTime, dropped: &mut Vec<Item>) -> Option<Item> {
        while let Some(&tin) = self.active.front() {
            if let Some(s) = self.owner[tin] {
                let st = &mut self.stations[s];
                if st.deficit < 0 {
                    st.deficit += AIRTIME_WEIGHT_US;
                    self.active.rotate_left(1);
                    continue;
                }
            }
            let item = self.fq.dequeue(now, tin, &CODEL, dropped);
            if self.fq.tin_len(tin) == 0 {
                self.active.pop_front();
            }
            if item.is_some() {
                return item;
            }
        }
        None
    }

    /// Airtime spent on a frame to or from `peer`.
    pub fn charge(&mut self, peer: NodeId, airtime: SimTime) {
        let s = self.station(peer);
        self.stations[s].deficit -= (airtime.as_ns() / 1000) as i64;
    }

    pub fn drain(&mut self) -> Vec<Item> {
        self.active.clear();
        self.fq.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::queue::Queued;
    use crate::mac::{Msdu, Payload};

    fn item(to: u32) -> (Dst, Item) {
        let dst = Dst::Node(NodeId(to));
        let msdu = Msdu {
            dst,
            bytes: 1500,
            enqueued: SimTime::ZERO,
            fixed: None,
            source: None,
            payload: Payload::Raw,
        };
        let queued = Queued {
            msdu,
            stageable: false,
        };
        let item = Item {
            queued,
            at: SimTime::ZERO,
            len: 1532,
        };
        (dst, item)
    }

    /// Sends frames the way the DCF takes them, charging each station
    /// `cost[station]` µs per frame; returns how many frames each got.
    fn serve(cost: [u64; 2], frames: usize) -> [usize; 2] {
        let mut t = Txqs::default();
        let mut dropped = Vec::new();
        for s in 0..2 {
            for _ in 0..4 {
                let (dst, it) = item(s);
                t.enqueue(dst, u64::from(s), it, &mut dropped);
            }
        }
        let mut got = [0; 2];
        for _ in 0..frames {
            let it = t.dequeue(SimTime::ZERO, &mut dropped).expect("backlogged");
            let Dst::Node(n) = it.queued.msdu.dst else {
                unreachable!()
            };
            got[n.0 as usize] += 1;
            t.charge(n, SimTime::from_us(cost[n.0 as usize]));
            let (dst, again) = item(n.0);
            t.enqueue(dst, u64::from(n.0), again, &mut dropped);
        }
        got
    }

    #[test]
    fn stations_get_equal_airtime_not_equal_frames() {
        // A frame to station 1 takes 8 times the airtime of one to station 0.
        let got = serve([250, 2000], 900);
        let air = [got[0] * 250, got[1] * 2000];
        let ratio = air[0] as f64 / air[1] as f64;
        assert!((ratio - 1.0).abs() < 0.05, "{got:?}: airtime ratio {ratio}");
        // Equal costs: equal frames.
        let got = serve([500, 500], 900);
        assert!(got[0].abs_diff(got[1]) <= 2, "{got:?}");
    }

    #[test]
    fn broadcast_goes_to_the_interface_queue_with_no_deficit() {
        let mut t = Txqs::default();
        let mut dropped = Vec::new();
        let (_, mut it) = item(0);
        it.queued.msdu.dst = Dst::Broadcast;
        t.enqueue(Dst::Broadcast, 7, it, &mut dropped);
        let got = t.dequeue(SimTime::ZERO, &mut dropped).unwrap();
        assert_eq!(got.queued.msdu.dst, Dst::Broadcast);
        assert!(t.stations.is_empty() && t.len() == 0);
    }
}
