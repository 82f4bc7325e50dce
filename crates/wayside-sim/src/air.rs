//! The air around the radios: each node's body (how it moves, its
//! antenna), the radio medium with the transmissions on it, and the radio
//! configuration they share. A node reads it when a signal reaches its
//! radio or its rate control asks for an oracle ([`crate::node`]); the
//! world puts frames on it ([`crate::world`]).
//!
//! **Undetectable preambles.** A signal whose preamble and PLCP header
//! would be detected with probability at most [`UNDETECTABLE`] even with
//! nothing else on the air (at its SNR) is marked so when it goes on the
//! air; the world then runs its arrival outside the event queue
//! ([`crate::world`]).

use crate::channel::{Endpoint, Fades};
use crate::config::{NodeConfig, RadioConfig, SimConfig};
use crate::geometry::Vec2;
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::medium::{Antenna, Medium, RadioLimits};
use crate::mobility::{Mobility, MobilityModel};
use crate::phy::detection::Detection;
use crate::phy::error::ErrorModel;
use crate::phy::mode::{ModClass, Mode};
use crate::phy::state::Signal;
use crate::units::{Db, Dbm, Meters, MilliWatt, SimTime};

/// A preamble detected with at most this probability at its SNR, with no
/// interference, cannot be detected: 10⁻⁷, the probability at the
/// reception floor ([`crate::medium`]); below about 1 dB SNR an OFDM
/// header's coded bit error rate is ½, where it is 2⁻²⁴ = 6·10⁻⁸.
pub const UNDETECTABLE: f64 = 1e-7;

/// A node's physical self: how it moves and what its antenna is.
#[derive(Clone, Debug)]
pub struct Body {
    pub mobility: MobilityModel,
    pub antenna_height: Meters,
    pub antenna_gain: Db,
    /// Whether it has a radio (a wired-only server has none).
    pub radio: bool,
}

impl Body {
    /// The body of node `n` as configured.
    pub fn of(n: &NodeConfig) -> Body {
        Body {
            mobility: n.mobility.clone(),
            antenna_height: n.antenna_height,
            antenna_gain: n.antenna_gain,
            radio: n.radio,
        }
    }

    pub fn position(&self, t: SimTime) -> Vec2 {
        self.mobility.position(t)
    }

    pub fn endpoint(&self, t: SimTime) -> Endpoint {
        Endpoint {
            position: self.mobility.position(t),
            height: self.antenna_height,
            antenna_gain: self.antenna_gain,
            odometer: self.mobility.odometer(t),
        }
    }

    /// Its radio, tuned to `channel`, as the medium sees it for a frame on
    /// the air from `t` to `end`: where its antenna is at `t` and how far
    /// it moves until `end`.
    pub fn antenna(&self, t: SimTime, end: SimTime, channel: u32) -> Antenna {
        self.antenna_at(self.position(t), t, end, channel)
    }

    /// [`Body::antenna`], given where it is at `t`.
    fn antenna_at(&self, position: Vec2, t: SimTime, end: SimTime, channel: u32) -> Antenna {
        let odometer = self.mobility.odometer(t);
        Antenna {
            endpoint: Endpoint {
                position,
                height: self.antenna_height,
                antenna_gain: self.antenna_gain,
                odometer,
            },
            channel,
            travel: Meters(self.mobility.odometer(end).0 - odometer.0),
        }
    }
}

/// The bodies, the medium and the radio configuration.
pub struct Air {
    pub bodies: Vec<Body>,
    pub medium: Medium,
    pub radio: RadioConfig,
    /// Per header mode met so far, the received power below which its
    /// preamble cannot be detected ([`UNDETECTABLE`]).
    detectable: Vec<(Mode, MilliWatt)>,
    /// Preamble detection, with a table per header mode of the standard.
    pub detection: Detection,
}

impl Air {
    /// The air of scenario `cfg`: each node's body, and the medium bounded
    /// by its radios' highest EIRP, gain and antenna and fastest motion.
    pub fn new(cfg: &SimConfig) -> Air {
        let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        let radios = || cfg.nodes.iter().filter(|n| n.radio);
        let limits = RadioLimits {
            eirp: Dbm(radios()
                .map(|n| n.tx_power.0 + n.antenna_gain.0)
                .fold(f64::NEG_INFINITY, f64::max)),
            gain: Db(radios()
                .map(|n| n.antenna_gain.0)
                .fold(f64::NEG_INFINITY, f64::max)),
            height: Meters(radios().map(|n| n.antenna_height.0).fold(0.0, f64::max)),
            speed: radios().map(|n| n.mobility.max_speed()).fold(0.0, f64::max),
        };
        let mut air = Air {
            bodies: cfg.nodes.iter().map(Body::of).collect(),
            medium: Medium::new(&cfg.channel, &names, cfg.seed, cfg.run, limits),
            radio: cfg.radio.clone(),
            detectable: Vec::new(),
            detection: Detection::new(cfg.radio.error_model),
        };
        for mode in cfg.radio.standard.modes() {
            let (header, bits) = air.header(mode);
            air.detection.prepare(&header, bits);
        }
        air
    }

    pub fn position(&self, n: NodeId, t: SimTime) -> Vec2 {
        self.bodies[n.index()].position(t)
    }

    /// The mode the PLCP header is sent with (the lowest rate of the
    /// class), and its length in bits.
    fn header(&self, mode: &Mode) -> (Mode, u64) {
        let modes = self.radio.standard.modes();
        let header = *modes
            .iter()
            .find(|m| m.class == mode.class)
            .unwrap_or(&modes[0]);
        (header, if mode.class == ModClass::Dsss { 48 } else { 24 })
    }

    /// The received power below which a frame sent at `mode` cannot be
    /// detected ([`UNDETECTABLE`]): found once per header mode by bisection
    /// over the SNR, the detection probability rising with it.
    fn detectable(&mut self, mode: &Mode) -> MilliWatt {
        let (header, bits) = self.header(mode);
        if let Some(&(_, floor)) = self.detectable.iter().find(|d| d.0 == header) {
            return floor;
        }
        let model = &self.radio.error_model;
        let p = |snr: f64| model.chunk_success(&header, Db(snr), bits);
        let (mut lo, mut hi) = (-100.0, 30.0);
        let floor = if p(lo) > UNDETECTABLE {
            MilliWatt(0.0) // detectable at any power
        } else {
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if p(mid) <= UNDETECTABLE {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Dbm(self.medium.channel().noise_floor.0 + lo).to_mw()
        };
        self.detectable.push((header, floor));
        floor
    }

    /// Puts `frame` from `src` (tuned to `channel`, sending at `tx_power`)
    /// on the air at `mode` from `now` to `end`; `radio(j)` is radio `j`'s
    /// channel if it is on. Returns the transmission's id and fills
    /// `reached` with each radio it reaches, its delay, and whether its
    /// preamble is undetectable there ([`UNDETECTABLE`]).
    #[allow(clippy::too_many_arguments)]
    pub fn transmit(
        &mut self,
        now: SimTime,
        end: SimTime,
        src: NodeId,
        (channel, tx_power): (u32, Dbm),
        frame: Frame,
        mode: Mode,
        radio: impl Fn(NodeId) -> Option<u32>,
        reached: &mut Vec<(NodeId, SimTime, bool)>,
    ) -> TxId {
        let tx = self.bodies[src.index()].antenna(now, end, channel);
        let radios = self
            .bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| b.radio)
            .map(|(i, b)| (NodeId(i as u32), b.position(now)));
        self.medium.rebin(now, radios);
        let detectable = self.detectable(&mode);
        let bodies = &self.bodies;
        let tuned = |j: NodeId| radio(j).map(|c| (c, bodies[j.index()].position(now)));
        let antenna = |j: NodeId, c, p| bodies[j.index()].antenna_at(p, now, end, c);
        self.medium.transmit(
            now,
            end,
            src,
            (tx, tx_power),
            (frame, mode),
            (tuned, antenna),
            detectable,
            reached,
        )
    }

    /// Transmission `id` as it reaches radio `rx`, from `now`.
    pub fn signal(&self, id: TxId, rx: NodeId, now: SimTime) -> Signal {
        let t = self.medium.tx(id);
        let power = t.power_at(rx).expect("scheduled arrival");
        let (header_mode, header_bits) = self.header(&t.mode);
        let header_time = t.mode.header_airtime(self.radio.preamble);
        let duration = t.end - t.start;
        Signal {
            tx: id,
            power,
            start: now,
            end: now + duration,
            header_mode,
            header_bits,
            header_end: now + header_time,
            mode: t.mode,
            payload_bits: 8 * t.frame.psdu_bytes as u64,
            fades: Fades::FLAT,
        }
    }

    /// How the fading changes transmission `id` at `rx` over the frame
    /// (for the frame `rx` has locked on: its [`Signal`] starts flat).
    pub fn fades(&mut self, id: TxId, rx: NodeId) -> Fades {
        let t = self.medium.tx(id);
        let (src, start, end, channel) = (t.src, t.start, t.end, t.channel);
        let (ta, tb) = (
            self.bodies[src.index()].antenna(start, end, channel),
            self.bodies[rx.index()].antenna(start, end, channel),
        );
        self.medium
            .fades(src, &ta, rx, &tb, self.radio.ofdm_preamble_estimate)
    }

    /// The mean SNR (path loss and shadowing, no fast fading) of frames
    /// from `a`, sent at `tx_power`, at `b` at `now`: the oracle some rate
    /// controllers are given.
    pub fn mean_snr(&mut self, a: NodeId, b: NodeId, now: SimTime, tx_power: Dbm) -> Db {
        let (ta, tb) = (
            self.bodies[a.index()].endpoint(now),
            self.bodies[b.index()].endpoint(now),
        );
        let noise = self.medium.channel().noise_floor;
        self.medium.mean_rx_power(a, &ta, b, &tb, tx_power) - noise
    }
}
