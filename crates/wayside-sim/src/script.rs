//! The experiment's script: when each application starts. An application
//! starts at a fixed time, when its endpoints become connected, or when the
//! station end reaches the production phase, after a delay — Hadaller et
//! al. (2007) §6.2.3: the AP's script launched iperf 1–2 s after
//! association. Like the script it stands for, it watches every node (the
//! association and lease events of any node, the station's beacon count)
//! and starts the application at its sending end (at both ends of a
//! peer-to-peer application); it is not a protocol and sends nothing over
//! the simulated network.

use crate::apps::ip::{AppConfig, AppStart};
use crate::ids::NodeId;
use crate::mac::mgmt::Mgmt;
use crate::rng::Stream;
use crate::units::SimTime;

struct Entry {
    from: NodeId,
    to: NodeId,
    start: AppStart,
    /// Both ends start (peer to peer), not only the sending end.
    both: bool,
    /// Its start is scheduled (or it has started).
    scheduled: bool,
}

impl Entry {
    /// Application `app` starting at `at`, at each end that starts.
    fn starts(&self, app: u32, at: SimTime) -> impl Iterator<Item = Start> {
        let to = self.both.then_some(Start {
            app,
            from: self.to,
            at,
        });
        std::iter::once(Start {
            app,
            from: self.from,
            at,
        })
        .chain(to)
    }
}

/// An application to start at its end `from`, at `at`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Start {
    pub app: u32,
    pub from: NodeId,
    pub at: SimTime,
}

/// A time drawn uniformly from zero to `spread` (zero, with no draw, if
/// `spread` is zero).
fn draw(rng: &mut Stream, spread: SimTime) -> SimTime {
    if spread > SimTime::ZERO {
        SimTime::from_secs_f64(rng.uniform() * spread.as_secs_f64())
    } else {
        SimTime::ZERO
    }
}

pub struct Script {
    entries: Vec<Entry>,
    beacon_interval: SimTime,
    /// Draws the start delays that vary from run to run.
    rng: Stream,
}

impl Script {
    pub fn new(apps: &[AppConfig], beacon_interval: SimTime, rng: Stream) -> Script {
        let entries = apps
            .iter()
            .map(|a| Entry {
                from: a.from,
                to: a.to,
                start: a.start,
                both: a.kind.peer_to_peer(),
                scheduled: matches!(a.start, AppStart::At(_)),
            })
            .collect();
        Script {
            entries,
            beacon_interval,
            rng,
        }
    }

    /// The applications that start at a fixed time.
    pub fn timed(&self) -> Vec<Start> {
        let mut starts = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if let AppStart::At(at) = e.start {
                starts.extend(e.starts(i as u32, at));
            }
        }
        starts
    }

    /// IP traffic between `node` and `peer` can start: the applications
    /// waiting for it with an end at the `station` of the two (an AP's
    /// other stations' applications wait for their own association), or,
    /// between independent nodes, at either.
    pub fn link_up(
        &mut self,
        now: SimTime,
        node: NodeId,
        peer: NodeId,
        station: Option<NodeId>,
    ) -> Vec<Start> {
        let mut starts = Vec::new();
        for (i, e) in self.entries.iter_mut().enumerate() {
            let AppStart::OnAssociation { delay, spread } = e.start else {
                continue;
            };
            let ends = [e.from, e.to];
            let involved = match station {
                Some(sta) => ends.contains(&sta),
                None => ends.iter().any(|&n| n == node || n == peer),
            };
            if involved && !e.scheduled {
                e.scheduled = true;
                let drawn = draw(&mut self.rng, spread);
                starts.extend(e.starts(i as u32, now + delay + drawn));
            }
        }
        starts
    }

    /// Station `sta` (with an address) heard a beacon from its AP `ap`: the
    /// applications waiting for the production phase whose condition now
    /// holds, each with the fraction of beacons heard.
    pub fn beacon(
        &mut self,
        now: SimTime,
        sta: NodeId,
        ap: NodeId,
        station: &Mgmt,
    ) -> Vec<(Start, f64)> {
        if !station.is_station() {
            return Vec::new();
        }
        let mut starts = Vec::new();
        for (i, e) in self.entries.iter_mut().enumerate() {
            let AppStart::OnProduction {
                delay,
                spread,
                window,
                ratio,
                rssi,
            } = e.start
            else {
                continue;
            };
            if e.scheduled || (e.from != sta && e.to != sta) {
                continue;
            }
            let expected = (window.as_ns() / self.beacon_interval.as_ns()).max(1);
            let heard = station.beacons_after(now.saturating_sub(window)) as u64;
            let strong = rssi.is_none_or(|r| station.filtered_rssi(ap).is_some_and(|f| f.0 >= r.0));
            if heard as f64 >= ratio * expected as f64 && strong {
                e.scheduled = true;
                let measured = heard as f64 / expected as f64;
                let at = now + delay + draw(&mut self.rng, spread);
                starts.extend(e.starts(i as u32, at).map(|s| (s, measured)));
            }
        }
        starts
    }
}
