//! The radio medium: transmissions in flight and the channel state of the
//! links between radios. A transmission reaches each radio on its channel
//! whose received power clears the reception floor; the medium records the
//! power at each, and the world schedules the signal's start and end there
//! after the propagation delay. A transmission is freed when its last
//! reference (its end at the sender, each arrival's start and end) is done.
//!
//! **The reception floor.** A signal is delivered to a radio only if it
//! arrives at least at the noise floor minus
//! [`RECEPTION_FLOOR_BELOW_NOISE`] (30 dB). One signal at the floor adds
//! 0.1% to the noise (0.004 dB to the noise-plus-interference a frame is
//! received against), ten at once 1% (0.04 dB); its own SINR is at most
//! −30 dB, where the bit error rate of every mode is within 4% of ½ and a
//! preamble is detected with probability below 10⁻⁷ (24 header bits;
//! [`crate::phy::error`]). So what is left out can change neither
//! reception nor interference by more than that.
//!
//! **Reach.** The strongest a signal can arrive is the mean over the
//! deterministic path loss plus [`ChannelConfig::max_excess_gain`]:
//! shadowing at its clip (4σ) and every fading path in phase. A pair is
//! *within reach* when that bound, with the sender's power and both
//! antennas' gains and heights, clears the floor; only then is the
//! channel state of its link created and evaluated (its fading only if
//! every path in phase could lift the signal to the floor). Radio-wide maxima of
//! power, gain and height give a distance, [`Medium::reach`], beyond which
//! no pair is within reach. Signals from pairs out of reach cost nothing:
//! no link, no evaluation, no event.
//!
//! **Scaling.** A transmission looks only at radios in the cells of a
//! spatial grid around its sender, and a link's channel state is created
//! when the pair first comes within reach and dropped when they part.
//! Link state is drawn from the pair's names, so a link created late or
//! again is the same link. It is small (the seeded streams its draws come
//! from, [`Link`]), and holds its draws only once a signal on it has
//! arrived above the noise floor, i.e. once it can carry frames; so memory
//! grows with radios × neighbours within reach. The grid is rebuilt every
//! [`REBIN_INTERVAL`]; its cells are wide enough (reach plus twice the
//! distance the fastest radio covers between rebuilds) that a radio never
//! leaves the 3×3 cells around where it was binned while it matters.

use crate::channel::{path_loss, propagation_delay, ChannelConfig, Endpoint, Fades, Link};
use crate::geometry::Vec2;
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::phy::mode::Mode;
use crate::units::{Db, Dbm, Meters, MilliWatt, SimTime};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// How often the spatial grid is rebuilt from the radios' positions.
pub const REBIN_INTERVAL: SimTime = SimTime::from_ms(1000);

/// Signals weaker than the noise floor by more than this are not delivered
/// to a radio at all (they would add under 0.1% to the noise).
pub const RECEPTION_FLOOR_BELOW_NOISE: Db = Db(30.0);

/// A frame on the air.
pub struct Transmission {
    pub src: NodeId,
    pub channel: u32,
    pub frame: Frame,
    pub mode: Mode,
    pub start: SimTime,
    pub end: SimTime,
    /// Received power at each radio it reaches, in node order, and whether
    /// its preamble is undetectable there.
    arrivals: Vec<(NodeId, MilliWatt, bool)>,
    /// Events still to come that refer to it.
    pending: u32,
}

impl Transmission {
    /// The power this transmission arrives with at `rx`, if it reaches it.
    pub fn power_at(&self, rx: NodeId) -> Option<MilliWatt> {
        self.arrival(rx).map(|a| a.1)
    }

    /// Whether its preamble cannot be detected at `rx`
    /// ([`crate::air::UNDETECTABLE`]).
    pub fn undetectable_at(&self, rx: NodeId) -> bool {
        self.arrival(rx).is_some_and(|a| a.2)
    }

    fn arrival(&self, rx: NodeId) -> Option<&(NodeId, MilliWatt, bool)> {
        self.arrivals
            .binary_search_by_key(&rx, |a| a.0)
            .ok()
            .map(|i| &self.arrivals[i])
    }
}

/// A radio as the medium sees it at the instant of a transmission.
#[derive(Clone, Copy, Debug)]
pub struct Antenna {
    pub endpoint: Endpoint,
    /// The channel the radio is tuned to.
    pub channel: u32,
    /// How far the antenna moves while the frame is on the air.
    pub travel: Meters,
}

/// What the medium must know of the radios to bound its reach.
#[derive(Clone, Copy, Debug)]
pub struct RadioLimits {
    /// The highest transmit power plus antenna gain of any radio.
    pub eirp: Dbm,
    /// The highest antenna gain of any radio.
    pub gain: Db,
    /// The highest antenna.
    pub height: Meters,
    /// The highest speed any radio moves at, m/s.
    pub speed: f64,
}

/// Radios binned by position into square cells.
struct Grid {
    cell: f64,
    cells: BTreeMap<(i64, i64), Vec<NodeId>>,
    /// Each radio's cell, by node index (`None`: no radio).
    of: Vec<Option<(i64, i64)>>,
    built: Option<SimTime>,
    /// Every radio, ascending, when there are at most [`FEW_RADIOS`]: then
    /// every radio is a candidate and the cells are not looked up (the
    /// reach test in [`Medium::transmit`] leaves the same radios).
    few: Option<Vec<NodeId>>,
}

/// Up to this many radios, looking them all over costs less than the grid.
const FEW_RADIOS: usize = 32;

impl Grid {
    fn key(&self, p: Vec2) -> (i64, i64) {
        (
            (p.x / self.cell).floor() as i64,
            (p.y / self.cell).floor() as i64,
        )
    }
}

/// Transmissions in flight and per-link channel state.
pub struct Medium {
    channel: ChannelConfig,
    names: Vec<String>,
    seed: u64,
    run: u64,
    reach: f64,
    /// The reception floor, and the most shadowing and fading can add.
    floor: Dbm,
    excess: Db,
    fading_max: Db,
    /// Channel state of the pairs of radios within reach, by (low, high) index.
    links: FxHashMap<(u32, u32), Link>,
    /// Scratch: the radios near a sender.
    near: Vec<NodeId>,
    grid: Grid,
    txs: Vec<Option<Transmission>>,
    free: Vec<u32>,
    transmissions: u64,
}

impl Medium {
    /// The medium between radios named `names` (in node order).
    pub fn new(
        channel: &ChannelConfig,
        names: &[String],
        seed: u64,
        run: u64,
        limits: RadioLimits,
    ) -> Medium {
        let floor = channel.noise_floor - RECEPTION_FLOOR_BELOW_NOISE;
        let reach = channel
            .reach(limits.eirp, limits.gain, limits.height, floor)
            .0;
        let slack = limits.speed * REBIN_INTERVAL.as_secs_f64();
        let grid = Grid {
            cell: reach + 2.0 * slack,
            cells: BTreeMap::new(),
            of: vec![None; names.len()],
            built: None,
            few: None,
        };
        Medium {
            channel: channel.clone(),
            names: names.to_vec(),
            seed,
            run,
            reach,
            floor,
            excess: channel.max_excess_gain(),
            fading_max: channel.max_fading_gain(),
            links: FxHashMap::default(),
            near: Vec::new(),
            grid,
            txs: Vec::new(),
            free: Vec::new(),
            transmissions: 0,
        }
    }

    /// The distance beyond which no signal clears the reception floor.
    pub fn reach(&self) -> Meters {
        Meters(self.reach)
    }

    /// Links with channel state now (pairs that came within reach).
    pub fn links(&self) -> usize {
        self.links.len()
    }

    /// Rebuilds the grid from `positions` (radios only) if it is older than
    /// [`REBIN_INTERVAL`], and drops the links of pairs now out of reach.
    pub fn rebin(&mut self, now: SimTime, positions: impl Iterator<Item = (NodeId, Vec2)>) {
        if self.grid.built.is_some_and(|t| now < t + REBIN_INTERVAL) {
            return;
        }
        self.grid.built = Some(now);
        self.grid.cells.clear();
        let mut at = vec![None; self.grid.of.len()];
        for (n, p) in positions {
            let key = self.grid.key(p);
            self.grid.of[n.index()] = Some(key);
            self.grid.cells.entry(key).or_default().push(n);
            at[n.index()] = Some(p);
        }
        let mut radios: Vec<NodeId> = self.grid.cells.values().flatten().copied().collect();
        radios.sort_unstable();
        self.grid.few = (radios.len() <= FEW_RADIOS).then_some(radios);
        let keep = self.grid.cell;
        self.links
            .retain(|&(a, b), _| match (at[a as usize], at[b as usize]) {
                (Some(pa), Some(pb)) => pa.dist(pb).0 <= keep,
                _ => false,
            });
    }

    /// Fills `out` with the radios that may be within reach of `src`, ascending.
    fn neighbours(&self, src: NodeId, out: &mut Vec<NodeId>) {
        out.clear();
        let Some((cx, cy)) = self.grid.of[src.index()] else {
            return;
        };
        if let Some(all) = &self.grid.few {
            out.extend(all.iter().copied().filter(|&n| n != src));
            return;
        }
        let cells = (-1..=1).flat_map(|dx| (-1..=1).map(move |dy| (cx + dx, cy + dy)));
        out.extend(
            cells
                .filter_map(|k| self.grid.cells.get(&k))
                .flatten()
                .copied()
                .filter(|&n| n != src),
        );
        out.sort_unstable();
    }

    /// The channel state of the link between `a` and `b`, created on first
    /// use, with the channel configuration.
    fn link(&mut self, a: NodeId, b: NodeId) -> (&mut Link, &ChannelConfig) {
        let key = if a < b { (a.0, b.0) } else { (b.0, a.0) };
        let (channel, names, seed, run) = (&self.channel, &self.names, self.seed, self.run);
        (
            self.links.entry(key).or_insert_with(|| {
                Link::new(channel, &names[a.index()], &names[b.index()], seed, run)
            }),
            channel,
        )
    }

    pub fn channel(&self) -> &ChannelConfig {
        &self.channel
    }

    /// Transmissions started so far.
    pub fn transmissions(&self) -> u64 {
        self.transmissions
    }

    /// Puts `frame` on the air from `src` (at `tx`, sending at `tx_power`)
    /// from `now` to `end`, to the radios in the grid cells around it that
    /// are `tuned` (to a channel, at a position; `None`: the radio is off),
    /// whose `antenna` (given that channel and position) is then asked for
    /// only if the channel is the sender's and it is within reach. Returns the
    /// transmission's id, and fills `reached` with each radio it reaches,
    /// the propagation delay, and whether it arrives there below
    /// `detectable` (its preamble cannot be detected), in node order.
    #[allow(clippy::too_many_arguments)]
    pub fn transmit(
        &mut self,
        now: SimTime,
        end: SimTime,
        src: NodeId,
        (tx, tx_power): (Antenna, Dbm),
        (frame, mode): (Frame, Mode),
        (tuned, antenna): (
            impl Fn(NodeId) -> Option<(u32, Vec2)>,
            impl Fn(NodeId, u32, Vec2) -> Antenna,
        ),
        detectable: MilliWatt,
        reached: &mut Vec<(NodeId, SimTime, bool)>,
    ) -> TxId {
        let id = match self.free.pop() {
            Some(i) => TxId(i),
            None => {
                self.txs.push(None);
                TxId(self.txs.len() as u32 - 1)
            }
        };
        let (floor, noise, fading_max) = (self.floor, self.channel.noise_floor, self.fading_max);
        let mut arrivals = Vec::new();
        reached.clear();
        let mut near = std::mem::take(&mut self.near);
        self.neighbours(src, &mut near);
        for &rx in &near {
            let Some((channel, position)) = tuned(rx) else {
                continue;
            };
            if channel != tx.channel || tx.endpoint.position.dist(position).0 > self.reach {
                continue;
            }
            let antenna = antenna(rx, channel, position);
            let span = path_loss(&self.channel, &tx.endpoint, &antenna.endpoint);
            let bound = tx_power + tx.endpoint.antenna_gain + antenna.endpoint.antenna_gain
                - span.1
                + self.excess;
            if bound.0 < floor.0 {
                continue; // out of reach: no link
            }
            let (link, channel) = self.link(src, rx);
            let reaching = link.budget_reaching(
                channel,
                span,
                tx_power,
                &tx.endpoint,
                &antenna.endpoint,
                floor,
                fading_max,
            );
            let Some(budget) = reaching.filter(|b| b.rx_power.0 >= floor.0) else {
                continue;
            };
            if budget.rx_power.0 >= noise.0 {
                link.hold(channel);
            }
            let power = budget.rx_power.to_mw();
            let undetectable = power.0 < detectable.0;
            arrivals.push((rx, power, undetectable));
            reached.push((rx, propagation_delay(budget.distance), undetectable));
        }
        self.near = near;
        let pending = 1 + 2 * arrivals.len() as u32;
        self.txs[id.0 as usize] = Some(Transmission {
            src,
            channel: tx.channel,
            frame,
            mode,
            start: now,
            end,
            arrivals,
            pending,
        });
        self.transmissions += 1;
        id
    }

    pub fn tx(&self, id: TxId) -> &Transmission {
        self.txs[id.0 as usize].as_ref().expect("live transmission")
    }

    /// One event referring to transmission `id` is done.
    pub fn release(&mut self, id: TxId) {
        let t = self.txs[id.0 as usize].as_mut().expect("live transmission");
        t.pending -= 1;
        if t.pending == 0 {
            self.txs[id.0 as usize] = None;
            self.free.push(id.0);
        }
    }

    /// How the fading changes over a frame from `a` (antenna `ta`) to `b`
    /// (`tb`), both as at the frame's start ([`Link::fades`]); asked for
    /// only once a receiver has locked on the frame; `aging` as for
    /// [`Link::fades`].
    pub fn fades(
        &mut self,
        a: NodeId,
        ta: &Antenna,
        b: NodeId,
        tb: &Antenna,
        aging: bool,
    ) -> Fades {
        let (link, channel) = self.link(a, b);
        let start = Meters(ta.endpoint.odometer.0 + tb.endpoint.odometer.0);
        link.fades(channel, start, Meters(ta.travel.0 + tb.travel.0), aging)
    }

    /// The mean received power (no fast fading) of frames from `a` at `b`.
    pub fn mean_rx_power(
        &mut self,
        a: NodeId,
        ta: &Endpoint,
        b: NodeId,
        tb: &Endpoint,
        tx_power: Dbm,
    ) -> Dbm {
        let (link, channel) = self.link(a, b);
        link.mean_rx_power(channel, tx_power, ta, tb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{test_channel, PathLoss};
    use crate::ids::Dst;
    use crate::mac::Payload;
    use crate::phy::mode::Standard;
    use crate::trace::FrameKind;

    fn medium() -> Medium {
        let channel = test_channel(PathLoss::LogDistance {
            exponent: 3.5,
            reference: Meters(1.0),
        });
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let limits = RadioLimits {
            eirp: Dbm(20.0),
            gain: Db(0.0),
            height: Meters(1.5),
            speed: 30.0,
        };
        Medium::new(&channel, &names, 1, 0, limits)
    }

    fn antenna(x: f64) -> Antenna {
        let endpoint = Endpoint {
            position: Vec2::new(x, 0.0),
            height: Meters(1.5),
            antenna_gain: Db(0.0),
            odometer: Meters(0.0),
        };
        Antenna {
            endpoint,
            channel: 6,
            travel: Meters(0.0),
        }
    }

    /// Sends a broadcast from `a` at `power` with the radios at `xs`;
    /// returns the radios it reached.
    fn send(m: &mut Medium, now: SimTime, xs: [f64; 3], power: Dbm) -> Vec<NodeId> {
        m.rebin(
            now,
            (0..3).map(|i| (NodeId(i), Vec2::new(xs[i as usize], 0.0))),
        );
        let frame = Frame {
            kind: FrameKind::Data,
            src: NodeId(0),
            dst: Dst::Broadcast,
            seq: 0,
            retry: false,
            attempt: 0,
            psdu_bytes: 100,
            duration: SimTime::from_ms(0),
            payload: Payload::Raw,
            report: None,
        };
        let mode = Standard::G.modes()[0];
        let mut reached = Vec::new();
        let id = m.transmit(
            now,
            now + SimTime::from_ms(1),
            NodeId(0),
            (antenna(xs[0]), power),
            (frame, mode),
            (
                |n: NodeId| Some((6, Vec2::new(xs[n.index()], 0.0))),
                |n: NodeId, _, _| antenna(xs[n.index()]),
            ),
            MilliWatt(0.0),
            &mut reached,
        );
        for _ in 0..1 + 2 * reached.len() {
            m.release(id);
        }
        reached.iter().map(|r| r.0).collect()
    }

    #[test]
    fn links_exist_only_between_radios_within_reach() {
        let mut m = medium();
        // 20 dBm over 3.5-slope path loss meets the floor (-125 dBm) at
        // about 1 km: b at 600 m is within reach, c at 5 km is not.
        assert!((m.reach().0 - 988.0).abs() < 1.0, "reach {}", m.reach().0);
        assert_eq!(
            send(&mut m, SimTime::from_ms(0), [0.0, 600.0, 5000.0], Dbm(20.0)),
            [NodeId(1)]
        );
        assert_eq!(m.links(), 1);
        // A weaker sender's signal cannot clear the floor at b: no arrival,
        // and a pair not within reach gets no link.
        let mut weak = medium();
        assert_eq!(
            send(
                &mut weak,
                SimTime::from_ms(0),
                [0.0, 600.0, 5000.0],
                Dbm(0.0)
            ),
            []
        );
        assert_eq!(weak.links(), 0);
        // b drives off: its link is dropped at the next rebuild of the grid.
        assert_eq!(
            send(&mut m, REBIN_INTERVAL, [0.0, 3000.0, 5000.0], Dbm(20.0)),
            []
        );
        assert_eq!(m.links(), 0);
    }
}
