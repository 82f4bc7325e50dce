//! Rate control: the `RateControl` trait the MAC asks for a multi-rate retry
//! chain before each frame and reports each frame's outcome to, in the style
//! of the Atheros HAL (up to four (rate, tries) stages, tried in order) and of
//! ns-3's rate managers. One file per algorithm; dispatched by
//! [`RateControlKind`], built from a configuration by [`RateControlSpec`].
//!
//! | algorithm    | initial rate (802.11g)            | retry chain                                  |
//! |--------------|-----------------------------------|----------------------------------------------|
//! | `Fixed`      | the configured one                | the configured one                           |
//! | `SampleRate` | 54 Mbps (madwifi; 11/36/54 by RSSI as written) | `[rate ×2, current ×3, lowest ×3]` |
//! | `Onoe`       | 36 Mbps                           | `[r ×4, r−1 ×2, r−2 ×2, lowest ×2]`          |
//! | `Amrr`       | 36 Mbps                           | `[r ×1, r−1 ×1, r−2 ×1, lowest ×1]`          |
//! | `Rraa`       | 54 Mbps                           | RRAA's own per-attempt prediction, 7 tries   |
//! | `Minstrel`   | lowest (1 Mbps) until first stats | `[max_tp, max_tp2, max_prob, lowest]`        |
//! | `MinstrelHt` | MCS 0, one stream, until stats    | `[sample ×1,] max_tp, max_tp2, max_prob`     |
//! | `Arf`        | 54 Mbps (the highest)             | ARF's fallback, two tries a rate, 7 tries    |
//! | `Ideal`      | what the true mean SNR supports   | `[r ×4, r−1 ×2, lowest ×2]`                  |
//! | `EnvAware`   | the map's rate at the client's position, else lowest | `[r ×4, r−1 ×2, lowest ×2]` |
//!
//! Initial rates of SampleRate, Onoe, AMRR and RRAA are those of Hadaller et
//! al. (2007), Table 5.

mod amrr;
mod arf;
mod common;
mod envaware;
mod fixed;
mod ideal;
mod minstrel;
mod minstrel_ht;
mod onoe;
mod rraa;
mod samplerate;

pub use amrr::{Amrr, AmrrParams};
pub use arf::{Arf, ArfParams};
pub use envaware::{EnvAware, EnvAwareParams, SnrMap};
pub use fixed::Fixed;
pub use ideal::{Ideal, IdealParams};
pub use minstrel::{Minstrel, MinstrelParams};
pub use minstrel_ht::{MinstrelHt, MinstrelHtParams};
pub use onoe::{Onoe, OnoeParams};
pub use rraa::{Rraa, RraaParams, Thresholds as RraaThresholds};
pub use samplerate::{InitialRssi, SamplePick, SampleRate, SampleRateParams};

use crate::geometry::Vec2;
use crate::phy::mode::Mode;
use crate::rng::Stream;
use crate::units::{Db, Dbm, SimTime};
use std::sync::Arc;

/// Most stages a retry chain can have (the Atheros descriptor has four).
pub const MAX_STAGES: usize = 4;

/// One stage of a retry chain: try `tries` times at `mode`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub mode: Mode,
    pub tries: u8,
}

/// The rates and tries the hardware walks through for one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryChain {
    pub stages: Vec<Stage>,
}

impl RetryChain {
    pub fn total_tries(&self) -> u32 {
        self.stages.iter().map(|s| s.tries as u32).sum()
    }
    /// The stage that attempt number `attempt` (0-based) is sent in, if any.
    pub fn stage_of(&self, attempt: u32) -> Option<usize> {
        let mut left = attempt;
        for (i, s) in self.stages.iter().enumerate() {
            if left < s.tries as u32 {
                return Some(i);
            }
            left -= s.tries as u32;
        }
        None
    }
}

/// What the MAC tells rate control when a frame is about to be sent.
#[derive(Clone, Copy, Debug)]
pub struct TxRequest {
    pub now: SimTime,
    /// MAC frame (PSDU) length.
    pub bytes: u32,
    /// RSSI of the last frame heard from the receiver, if any (what a driver
    /// knows: SampleRate picks its initial rate from it).
    pub rssi: Option<Dbm>,
    /// The link's true mean SNR now (path loss and shadowing, no fading):
    /// an oracle, given only to algorithms that ask for one
    /// ([`RateControlSpec::needs_oracle`]).
    pub mean_snr: Option<Db>,
    /// This node's transmit power.
    pub tx_power: Dbm,
    /// This node's own position (its GPS).
    pub position: Vec2,
    /// The position the receiver carried in the last frame heard from it,
    /// if any (environment-aware selection assumes clients send their GPS
    /// position in their frames).
    pub peer_position: Option<Vec2>,
}

/// A frame heard intact from the peer of a link (unicast to this node):
/// what it tells an algorithm that learns from receptions.
#[derive(Clone, Copy, Debug)]
pub struct RxObservation {
    pub now: SimTime,
    /// SNR of the frame (received power over the noise floor).
    pub snr: Db,
    /// The sender's transmit power, as its frame carried it.
    pub peer_tx_power: Dbm,
    /// The sender's position, as its frame carried it.
    pub peer_position: Vec2,
}

/// What the MAC tells rate control when a frame's chain has finished.
#[derive(Clone, Debug)]
pub struct TxStatus {
    pub now: SimTime,
    pub bytes: u32,
    pub chain: RetryChain,
    /// Attempts made, in chain order (the last one succeeded if `acked`).
    pub attempts: u32,
    pub acked: bool,
    /// For an A-MPDU: its MPDUs and how many the Block Ack acknowledged
    /// (mac80211's `ampdu_len`, `ampdu_ack_len`); `acked`: a Block Ack
    /// came.
    pub ampdu: Option<AmpduStatus>,
}

/// What a Block Ack said of an A-MPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpduStatus {
    pub len: u32,
    pub acked: u32,
}

/// A rate-selection algorithm for one (sender, receiver) link.
pub trait RateControl {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain;
    fn report(&mut self, status: &TxStatus);
    /// A frame from the peer arrived intact; only algorithms that learn from
    /// receptions use it.
    fn observe(&mut self, _obs: &RxObservation) {}
    /// The peer (an AP) advertised `map` in a beacon; only algorithms that
    /// take hints use it.
    fn hint(&mut self, _map: &Arc<SnrMap>) {}
    /// What it observed this pass, if it learns per position.
    fn observed(&self) -> Option<&SnrMap> {
        None
    }
}

/// What a rate-control configuration says of itself before any link runs
/// it: the MAC and the run ask these instead of naming algorithms.
pub trait Params {
    /// It chooses from the link's true mean SNR, an oracle the MAC must then
    /// compute for every frame.
    fn needs_oracle(&self) -> bool {
        false
    }
    /// Earlier passes to simulate before the measured run, for it to learn.
    fn training_passes(&self) -> u32 {
        0
    }
    /// The map a pass starts from, if it learns per position (frames then
    /// carry their sender's position and power).
    fn prior(&self) -> Option<&Arc<SnrMap>> {
        None
    }
    /// Starts later passes from `map` (what earlier ones learned).
    fn set_prior(&mut self, _map: Arc<SnrMap>) {}
    /// The map a node running it advertises in its beacons.
    fn advertised(&self) -> Option<&Arc<SnrMap>> {
        None
    }
    /// It takes the map its AP advertises.
    fn takes_hints(&self) -> bool {
        false
    }
}

/// A fixed chain knows nothing the MAC must provide.
struct NoParams;
impl Params for NoParams {}

/// The implemented algorithms.
#[derive(Clone, Debug)]
pub enum RateControlKind {
    Fixed(Fixed),
    SampleRate(SampleRate),
    Onoe(Onoe),
    Amrr(Amrr),
    Rraa(Rraa),
    Minstrel(Minstrel),
    MinstrelHt(MinstrelHt),
    Arf(Arf),
    Ideal(Ideal),
    EnvAware(EnvAware),
}

macro_rules! dispatch {
    ($self:ident, $rc:ident => $e:expr) => {
        match $self {
            RateControlKind::Fixed($rc) => $e,
            RateControlKind::SampleRate($rc) => $e,
            RateControlKind::Onoe($rc) => $e,
            RateControlKind::Amrr($rc) => $e,
            RateControlKind::Rraa($rc) => $e,
            RateControlKind::Minstrel($rc) => $e,
            RateControlKind::MinstrelHt($rc) => $e,
            RateControlKind::Arf($rc) => $e,
            RateControlKind::Ideal($rc) => $e,
            RateControlKind::EnvAware($rc) => $e,
        }
    };
}

impl RateControl for RateControlKind {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        dispatch!(self, rc => rc.retry_chain(req))
    }
    fn report(&mut self, status: &TxStatus) {
        dispatch!(self, rc => rc.report(status))
    }
    fn observe(&mut self, obs: &RxObservation) {
        dispatch!(self, rc => rc.observe(obs))
    }
    fn hint(&mut self, map: &Arc<SnrMap>) {
        dispatch!(self, rc => rc.hint(map))
    }
    fn observed(&self) -> Option<&SnrMap> {
        dispatch!(self, rc => rc.observed())
    }
}

/// Runs `$e` with `$p` bound to the spec's parameters (a fixed chain's are
/// [`NoParams`]).
macro_rules! with_params {
    ($self:expr, $p:ident => $e:expr) => {
        with_params!($self, $p => $e, fixed = &NoParams)
    };
    (mut $self:expr, $p:ident => $e:expr) => {
        with_params!($self, $p => $e, fixed = &mut NoParams)
    };
    ($self:expr, $p:ident => $e:expr, fixed = $none:expr) => {
        match $self {
            RateControlSpec::Fixed { .. } => {
                let $p = $none;
                $e
            }
            RateControlSpec::SampleRate($p) => $e,
            RateControlSpec::Onoe($p) => $e,
            RateControlSpec::Amrr($p) => $e,
            RateControlSpec::Rraa($p) => $e,
            RateControlSpec::Minstrel($p) => $e,
            RateControlSpec::MinstrelHt($p) => $e,
            RateControlSpec::Arf($p) => $e,
            RateControlSpec::Ideal($p) => $e,
            RateControlSpec::EnvAware($p) => $e,
        }
    };
}

/// Configuration of a link's rate control, from which each (sender,
/// receiver) link builds its own state with [`RateControlSpec::build`].
#[derive(Clone, Debug, PartialEq)]
pub enum RateControlSpec {
    /// A static chain: `short` for frames of at most `rts_threshold` bytes,
    /// `long` above (see [`Fixed`]).
    Fixed {
        short: RetryChain,
        long: RetryChain,
        rts_threshold: u32,
    },
    SampleRate(SampleRateParams),
    Onoe(OnoeParams),
    Amrr(AmrrParams),
    Rraa(RraaParams),
    Minstrel(MinstrelParams),
    /// 802.11n/ac only.
    MinstrelHt(MinstrelHtParams),
    Arf(ArfParams),
    Ideal(IdealParams),
    EnvAware(EnvAwareParams),
}

impl RateControlSpec {
    /// The algorithm's name as scenario files spell it.
    pub fn name(&self) -> &'static str {
        match self {
            RateControlSpec::Fixed { .. } => "fixed",
            RateControlSpec::SampleRate(_) => "samplerate",
            RateControlSpec::Onoe(_) => "onoe",
            RateControlSpec::Amrr(_) => "amrr",
            RateControlSpec::Rraa(_) => "rraa",
            RateControlSpec::Minstrel(_) => "minstrel",
            RateControlSpec::MinstrelHt(_) => "minstrel-ht",
            RateControlSpec::Arf(_) => "arf",
            RateControlSpec::Ideal(_) => "ideal",
            RateControlSpec::EnvAware(_) => "environment-aware",
        }
    }

    /// See [`Params::needs_oracle`].
    pub fn needs_oracle(&self) -> bool {
        with_params!(self, p => p.needs_oracle())
    }

    /// See [`Params::training_passes`].
    pub fn training_passes(&self) -> u32 {
        with_params!(self, p => p.training_passes())
    }

    /// See [`Params::prior`].
    pub fn prior(&self) -> Option<&Arc<SnrMap>> {
        with_params!(self, p => p.prior())
    }

    /// See [`Params::set_prior`].
    pub fn set_prior(&mut self, map: Arc<SnrMap>) {
        with_params!(mut self, p => p.set_prior(map))
    }

    /// See [`Params::advertised`].
    pub fn advertised(&self) -> Option<&Arc<SnrMap>> {
        with_params!(self, p => p.advertised())
    }

    /// See [`Params::takes_hints`].
    pub fn takes_hints(&self) -> bool {
        with_params!(self, p => p.takes_hints())
    }

    /// A fresh controller for one link. `modes` is the standard's mode list,
    /// ascending ([`crate::phy::mode::Standard::modes`]); `rng` the link's
    /// own stream (used by SampleRate's random pick and Minstrel).
    pub fn build(&self, modes: &'static [Mode], rng: Stream) -> RateControlKind {
        match self {
            RateControlSpec::Fixed {
                short,
                long,
                rts_threshold,
            } => RateControlKind::Fixed(Fixed::new(short.clone(), long.clone(), *rts_threshold)),
            RateControlSpec::SampleRate(p) => {
                RateControlKind::SampleRate(SampleRate::new(modes, p.clone(), rng))
            }
            RateControlSpec::Onoe(p) => RateControlKind::Onoe(Onoe::new(modes, p.clone())),
            RateControlSpec::Amrr(p) => RateControlKind::Amrr(Amrr::new(modes, p.clone())),
            RateControlSpec::Rraa(p) => RateControlKind::Rraa(Rraa::new(modes, p.clone())),
            RateControlSpec::Minstrel(p) => {
                RateControlKind::Minstrel(Minstrel::new(modes, p.clone(), rng))
            }
            RateControlSpec::MinstrelHt(p) => {
                RateControlKind::MinstrelHt(MinstrelHt::new(modes, p.clone(), rng))
            }
            RateControlSpec::Arf(p) => RateControlKind::Arf(Arf::new(modes, p.clone())),
            RateControlSpec::Ideal(p) => RateControlKind::Ideal(Ideal::new(modes, p.clone())),
            RateControlSpec::EnvAware(p) => {
                RateControlKind::EnvAware(EnvAware::new(modes, p.clone()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::common::testing::Channel;
    use super::*;
    use crate::phy::mode::Standard;

    fn first_rate(spec: &RateControlSpec, rssi: Option<f64>, snr: f64) -> f64 {
        let g = Standard::G.modes();
        let mut rc = spec.build(g, Stream::new("run", 1, 0, "test/table5"));
        let mut ch = Channel::new(g, vec![1.0; 12]);
        ch.rssi = rssi.map(Dbm);
        ch.mean_snr = Db(snr);
        rc.retry_chain(&ch.request()).stages[0].mode.rate.mbps()
    }

    /// Hadaller et al. (2007), Table 5, in 802.11g (SampleRate's rule as
    /// written; the driver's scaled average gives 54 Mbps, see samplerate).
    #[test]
    fn initial_rates_match_table_5() {
        let sr = RateControlSpec::SampleRate(SampleRateParams {
            initial_rssi: InitialRssi::Thresholds,
            ..SampleRateParams::default_preset()
        });
        assert_eq!(first_rate(&sr, Some(-90.0), 0.0), 11.0);
        assert_eq!(first_rate(&sr, Some(-60.0), 0.0), 36.0);
        assert_eq!(first_rate(&sr, Some(-40.0), 0.0), 54.0);
        assert_eq!(
            first_rate(
                &RateControlSpec::Onoe(OnoeParams::default()),
                Some(-90.0),
                0.0
            ),
            36.0
        );
        assert_eq!(
            first_rate(
                &RateControlSpec::Amrr(AmrrParams::default()),
                Some(-90.0),
                0.0
            ),
            36.0
        );
        assert_eq!(
            first_rate(
                &RateControlSpec::Rraa(RraaParams::default()),
                Some(-90.0),
                0.0
            ),
            54.0
        );
        // Not in Table 5: Minstrel starts at the lowest rate, Ideal at what
        // the SNR supports.
        let g = Standard::G.modes();
        let mut m = RateControlSpec::Minstrel(MinstrelParams::default())
            .build(g, Stream::new("run", 1, 0, "m"));
        let ch = Channel::new(g, vec![1.0; 12]);
        let firsts: Vec<f64> = (0..20)
            .map(|_| m.retry_chain(&ch.request()).stages[0].mode.rate.mbps())
            .collect();
        assert!(
            firsts.iter().filter(|&&r| r == 1.0).count() >= 15,
            "{firsts:?}"
        );
        assert_eq!(
            first_rate(&RateControlSpec::Ideal(IdealParams::default()), None, 40.0),
            54.0
        );
        assert_eq!(
            first_rate(&RateControlSpec::Ideal(IdealParams::default()), None, -5.0),
            1.0
        );
        // Environment-aware without a map: the lowest rate (with one, see envaware.rs).
        assert_eq!(
            first_rate(
                &RateControlSpec::EnvAware(EnvAwareParams::default()),
                Some(-40.0),
                40.0
            ),
            1.0
        );
    }

    #[test]
    fn every_spec_builds_and_runs_on_every_standard() {
        let specs = [
            RateControlSpec::SampleRate(SampleRateParams::tuned_preset()),
            RateControlSpec::Onoe(OnoeParams::default()),
            RateControlSpec::Amrr(AmrrParams::default()),
            RateControlSpec::Rraa(RraaParams::default()),
            RateControlSpec::Minstrel(MinstrelParams::default()),
            RateControlSpec::Arf(ArfParams::default()),
            RateControlSpec::Ideal(IdealParams::default()),
            RateControlSpec::EnvAware(EnvAwareParams::default()),
        ];
        for standard in Standard::ALL {
            let modes = standard.modes();
            for spec in &specs {
                let mut rc = spec.build(modes, Stream::new("run", 1, 0, spec.name()));
                let p: Vec<f64> = (0..modes.len())
                    .map(|i| if i < modes.len() / 2 { 1.0 } else { 0.3 })
                    .collect();
                let mut ch = Channel::new(modes, p);
                for _ in 0..2000 {
                    let (c, s) = ch.send(&mut rc);
                    assert!(
                        !c.stages.is_empty() && c.stages.len() <= MAX_STAGES,
                        "{} {standard}",
                        spec.name()
                    );
                    assert!(c
                        .stages
                        .iter()
                        .all(|st| st.tries > 0 && modes.contains(&st.mode)));
                    assert!(s.attempts <= c.total_tries());
                }
            }
        }
        let fixed = RateControlSpec::Fixed {
            short: RetryChain::default(),
            long: RetryChain::default(),
            rts_threshold: 0,
        };
        assert_eq!(fixed.clone(), fixed);
        assert!(matches!(
            fixed.build(Standard::B.modes(), Stream::new("run", 1, 0, "f")),
            RateControlKind::Fixed(_)
        ));
    }
}
