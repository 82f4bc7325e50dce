//! Rate control: the `RateControl` trait the MAC asks for a multi-rate retry
//! chain before each frame and reports each frame's outcome to, in the style
//! of the Atheros HAL (up to four (rate, tries) stages, tried in order) and of
//! ns-3's rate managers. One file per algorithm; dispatched by
//! [`RateControlKind`].

mod fixed;

pub use fixed::Fixed;

use crate::phy::mode::Mode;
use crate::units::{Db, Dbm, SimTime};

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
    /// an oracle only the `Ideal` algorithm may use.
    pub mean_snr: Db,
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
}

/// A rate-selection algorithm for one (sender, receiver) link.
pub trait RateControl {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain;
    fn report(&mut self, status: &TxStatus);
}

/// The implemented algorithms.
#[derive(Clone, Debug)]
pub enum RateControlKind {
    Fixed(Fixed),
}

impl RateControl for RateControlKind {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        match self {
            RateControlKind::Fixed(f) => f.retry_chain(req),
        }
    }
    fn report(&mut self, status: &TxStatus) {
        match self {
            RateControlKind::Fixed(f) => f.report(status),
        }
    }
}
