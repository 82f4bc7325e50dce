//! Ideal: an oracle upper bound, not a real algorithm. It reads the link's
//! true mean SNR ([`TxRequest::mean_snr`]: path loss and shadowing, no
//! fading) and picks the highest rate whose frame success probability at
//! that SNR, for this frame's length, is at least `min_success` (0.9), using
//! the same error model as the PHY ([`ErrorModel::chunk_success`] over the
//! PSDU bits). If no rate clears it, the lowest rate. It learns nothing from
//! reports. (In the spirit of ns-3's `IdealWifiManager`, which uses the SNR
//! of the last received frame against per-mode thresholds; here the oracle
//! SNR removes any staleness.)
//!
//! **Retry chain**: `[r × 4, r−1 × 2, lowest × 2]` (tries configurable),
//! consecutive stages at the same rate merged — at the lowest rate
//! `[lowest × 8]`.
//!
//! **Initial rate**: whatever the SNR supports; no warm-up.
//!
//! Cost: at most one `chunk_success` evaluation per mode per frame, from
//! the top down, no allocation besides the chain.
//!
//! # Parameters ([`IdealParams`])
//! `min_success` 0.9, `tries` [4, 2, 2], `error_model` the default closed
//! form (set it to the scenario's PHY error model).

use super::common::chain_of;
use super::{RateControl, RetryChain, TxRequest, TxStatus};
use crate::phy::error::{ErrorModel, ErrorModelKind};
use crate::phy::mode::Mode;
use crate::units::Db;

#[derive(Clone, Debug, PartialEq)]
pub struct IdealParams {
    /// Least frame success probability a rate must have at the mean SNR.
    pub min_success: f64,
    /// Tries at the chosen rate, the next lower one and the lowest.
    pub tries: [u8; 3],
    pub error_model: ErrorModelKind,
}

impl super::Params for IdealParams {
    fn needs_oracle(&self) -> bool {
        true
    }
}

impl Default for IdealParams {
    fn default() -> Self {
        IdealParams {
            min_success: 0.9,
            tries: [4, 2, 2],
            error_model: ErrorModelKind::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Ideal {
    modes: &'static [Mode],
    params: IdealParams,
}

impl Ideal {
    pub fn new(modes: &'static [Mode], params: IdealParams) -> Self {
        assert!(!modes.is_empty(), "Ideal needs at least one mode");
        Ideal { modes, params }
    }

    /// Index of the highest mode whose success probability for a frame of
    /// `bytes` at `snr` is at least `min_success` (0 if none).
    pub fn pick(&self, snr: Db, bytes: u32) -> usize {
        let bits = 8 * u64::from(bytes);
        (0..self.modes.len())
            .rev()
            .find(|&i| {
                self.params
                    .error_model
                    .chunk_success(&self.modes[i], snr, bits)
                    >= self.params.min_success
            })
            .unwrap_or(0)
    }
}

/// The chain `[r × t0, r−1 × t1, lowest × t2]` with consecutive stages at
/// the same rate merged (at the lowest rate `[lowest × (t0+t1+t2)]`).
pub(crate) fn rate_lower_lowest(modes: &[Mode], r: usize, [t0, t1, t2]: [u8; 3]) -> RetryChain {
    let mut stages = [(r, t0), (r.saturating_sub(1), t1), (0, t2)];
    for k in (1..stages.len()).rev() {
        if stages[k].0 == stages[k - 1].0 {
            stages[k - 1].1 = stages[k - 1].1.saturating_add(stages[k].1);
            stages[k].1 = 0;
        }
    }
    chain_of(modes, &stages)
}

impl RateControl for Ideal {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        let r = self.pick(
            req.mean_snr.expect("the MAC gives Ideal its oracle SNR"),
            req.bytes,
        );
        rate_lower_lowest(self.modes, r, self.params.tries)
    }

    fn report(&mut self, _status: &TxStatus) {}
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{mbps, Channel};
    use super::*;
    use crate::phy::error::{snr_threshold, ClosedForm};
    use crate::phy::mode::Standard;

    #[test]
    fn picks_the_rate_whose_threshold_the_snr_clears() {
        let modes = Standard::A.modes();
        let ideal = Ideal::new(modes, IdealParams::default());
        let model = ErrorModelKind::default();
        for (i, m) in modes.iter().enumerate() {
            let t = snr_threshold(&model, m, 1528, 0.9).0;
            assert_eq!(ideal.pick(Db(t + 0.01), 1528), i, "{m:?} at its threshold");
            if i > 0 {
                assert_eq!(ideal.pick(Db(t - 0.01), 1528), i - 1, "{m:?} just below");
            }
        }
        assert_eq!(ideal.pick(Db(-20.0), 1528), 0);
        assert_eq!(ideal.pick(Db(60.0), 1528), 7);
        // Shorter frames need less SNR.
        let t54 = snr_threshold(&model, &modes[7], 1528, 0.9).0;
        assert_eq!(ideal.pick(Db(t54 - 0.3), 100), 7);
    }

    #[test]
    fn implementation_loss_shifts_the_choice() {
        let modes = Standard::A.modes();
        let lossy = IdealParams {
            error_model: ErrorModelKind::ClosedForm(ClosedForm {
                implementation_loss: Db(5.0),
                ..ClosedForm::default()
            }),
            ..IdealParams::default()
        };
        let t54 = snr_threshold(&ErrorModelKind::default(), &modes[7], 1528, 0.9).0;
        assert_eq!(
            Ideal::new(modes, IdealParams::default()).pick(Db(t54 + 0.1), 1528),
            7
        );
        assert!(Ideal::new(modes, lossy).pick(Db(t54 + 0.1), 1528) < 7);
    }

    #[test]
    fn chain_is_rate_x4_lower_x2_lowest_x2() {
        let g = Standard::G.modes();
        let mut ideal = Ideal::new(g, IdealParams::default());
        let mut ch = Channel::new(g, vec![1.0; 12]);
        ch.mean_snr = Db(40.0);
        assert_eq!(
            mbps(&ideal.retry_chain(&ch.request())),
            [(54.0, 4), (48.0, 2), (1.0, 2)]
        );
        ch.mean_snr = Db(-20.0);
        assert_eq!(mbps(&ideal.retry_chain(&ch.request())), [(1.0, 8)]);
        // 802.11b at 2 Mbps: the lower and the lowest stage are one.
        let b = Standard::B.modes();
        let mut ideal = Ideal::new(b, IdealParams::default());
        let t2 = snr_threshold(&ErrorModelKind::default(), &b[1], 1528, 0.9).0;
        let mut ch = Channel::new(b, vec![1.0; 4]);
        ch.mean_snr = Db(t2 + 0.01);
        assert_eq!(
            mbps(&ideal.retry_chain(&ch.request())),
            [(2.0, 4), (1.0, 4)]
        );
    }
}
