//! `[mac]`: channel access every node shares (queue, retry limits, RTS
//! threshold, fast frames, bursting) and the default rate selection (a
//! fixed `rate`, a `retry_chain` or a `rate_control` algorithm), parsed
//! and lowered into a [`MacConfig`].
//!
//! ```toml
//! [mac]
//! short_retry_limit = 7
//! rate_control = { algorithm = "samplerate" }
//! ```

use super::common::{check_range, err, rate_mode, time_in, RateQ, ScenarioError, SizeQ, TimeQ};
use super::rate_control::{check_rate_role, driver_default, RateContext, RateControlSection};
use crate::mac::ampdu::AmpduConfig;
use crate::mac::MacConfig;
use crate::phy::error::ErrorModelKind;
use crate::phy::mode::{Mode, Standard};
use crate::ratectl::{Stage, MAX_STAGES};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ChainStage {
    pub rate: RateQ,
    pub tries: u32,
}

#[derive(Deserialize, Serialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct MacSection {
    #[serde(default = "default_queue")]
    pub queue_limit: u64,
    #[serde(default = "default_short")]
    pub short_retry_limit: u32,
    #[serde(default = "default_long")]
    pub long_retry_limit: u32,
    #[serde(default = "default_rts")]
    pub rts_threshold: SizeQ,
    /// Fixed data rate. When none of `rate`, `retry_chain` and
    /// `rate_control` is given, each node runs its driver's rate control
    /// ([`super::rate_control::driver_default`]).
    #[serde(default)]
    pub rate: Option<RateQ>,
    /// A static multi-rate retry chain (instead of `rate`).
    #[serde(default)]
    pub retry_chain: Option<Vec<ChainStage>>,
    /// A rate-control algorithm instead of a fixed `rate` / `retry_chain`.
    #[serde(default)]
    pub rate_control: Option<RateControlSection>,
    /// Atheros fast frames (madwifi's `ff`): aggregate two packets to the
    /// same receiver when madwifi's estimate of the frame's airtime stays
    /// within `txop_limit`.
    #[serde(default)]
    pub fast_frames: bool,
    /// TXOP bursting: after winning the channel, send further unicast data
    /// frames a SIFS apart for up to `txop_limit`.
    #[serde(default)]
    pub txop_bursting: bool,
    /// A-MPDU aggregation with Block Ack on HT and VHT radios (as ath9k
    /// runs it; [`crate::mac::ampdu`]); no effect on other radios.
    #[serde(default = "default_ampdu")]
    pub ampdu: bool,
    /// The best-effort TXOP limit that fast frames must fit and bursts last.
    #[serde(default = "default_txop_limit")]
    pub txop_limit: TimeQ,
}

/// The best-effort TXOP limit madwifi 0.9 runs with: net80211's WME
/// "aggressive mode" (an AP without high-priority traffic, which also
/// advertises it to its stations) gives best effort 64 × 32 µs when
/// bursting is on, and madwifi turns bursting on wherever the chip has it
/// (the AR5212).
fn default_txop_limit() -> TimeQ {
    TimeQ(2.048e-3)
}

fn default_ampdu() -> bool {
    true
}

fn default_queue() -> u64 {
    1000
}
fn default_short() -> u32 {
    7
}
fn default_long() -> u32 {
    4
}
fn default_rts() -> SizeQ {
    SizeQ(2347.0)
}

impl Default for MacSection {
    fn default() -> Self {
        MacSection {
            queue_limit: default_queue(),
            short_retry_limit: default_short(),
            long_retry_limit: default_long(),
            rts_threshold: default_rts(),
            rate: None,
            retry_chain: None,
            rate_control: None,
            fast_frames: false,
            txop_bursting: false,
            ampdu: default_ampdu(),
            txop_limit: default_txop_limit(),
        }
    }
}

impl MacSection {
    /// What this section fixes for every node's rate control, on
    /// `standard` with lowest basic rate `basic` and `error_model`.
    /// Whether this section names every node's rate selection.
    pub(super) fn names_rate(&self) -> bool {
        self.rate.is_some() || self.retry_chain.is_some() || self.rate_control.is_some()
    }

    pub(super) fn rate_context(
        &self,
        standard: Standard,
        basic: Mode,
        error_model: ErrorModelKind,
    ) -> Result<RateContext, ScenarioError> {
        let mac = self;
        if [
            mac.rate.is_some(),
            mac.retry_chain.is_some(),
            mac.rate_control.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count()
            > 1
        {
            return err("mac: give one of rate, retry_chain and rate_control");
        }
        let limit = |k: &str, v: u32| {
            check_range(
                &format!("mac.{k}"),
                v as f64,
                &v.to_string(),
                1.0,
                255.0,
                "1 to 255 attempts",
            )?;
            Ok::<u8, ScenarioError>(v as u8)
        };
        let short_retry_limit = limit("short_retry_limit", mac.short_retry_limit)?;
        let long_retry_limit = limit("long_retry_limit", mac.long_retry_limit)?;
        check_range(
            "mac.rts_threshold",
            mac.rts_threshold.0,
            &format!("{} B", mac.rts_threshold.0),
            0.0,
            1e6,
            "0 B to 1 MB",
        )?;
        let chain = match &mac.retry_chain {
            None => None,
            Some(chain) if chain.is_empty() || chain.len() > MAX_STAGES => {
                return err(format!(
                    "mac.retry_chain: {} stages given; allowed: 1 to {MAX_STAGES}",
                    chain.len()
                ));
            }
            Some(chain) => Some(
                chain
                    .iter()
                    .enumerate()
                    .map(|(i, st)| {
                        let mode =
                            rate_mode(standard, &format!("mac.retry_chain[{i}].rate"), st.rate)?;
                        check_range(
                            &format!("mac.retry_chain[{i}].tries"),
                            st.tries as f64,
                            &st.tries.to_string(),
                            1.0,
                            15.0,
                            "1 to 15",
                        )?;
                        Ok(Stage {
                            mode,
                            tries: st.tries as u8,
                        })
                    })
                    .collect::<Result<Vec<_>, ScenarioError>>()?,
            ),
        };
        Ok(RateContext {
            standard,
            basic,
            error_model,
            chain,
            short_retry_limit,
            long_retry_limit,
            rts_threshold: mac.rts_threshold.0 as u32,
        })
    }

    pub(super) fn lower(&self, rates: &RateContext) -> Result<MacConfig, ScenarioError> {
        let mac = self;
        check_range(
            "mac.queue_limit",
            mac.queue_limit as f64,
            &mac.queue_limit.to_string(),
            1.0,
            1e6,
            "1 to 1000000 frames",
        )?;
        let txop_limit = time_in(
            "mac.txop_limit",
            mac.txop_limit,
            1e-5,
            0.05,
            "10 us to 50 ms",
        )?;
        // At most one of them is given (see `rate_context`).
        let rate = match (mac.rate, &mac.rate_control) {
            (Some(r), _) => rates.fixed(rate_mode(rates.standard, "mac.rate", r)?),
            (None, Some(rc)) => {
                let spec = rates.spec("mac.rate_control", rc)?;
                check_rate_role("mac.rate_control", &spec, None)?;
                spec
            }
            // A node that names none takes its driver's (a roaming
            // station its own, see `super::nodes`).
            (None, None) => match rates.chain() {
                Some(chain) => chain,
                None => rates.spec("mac", &driver_default(rates.standard, false))?,
            },
        };
        Ok(MacConfig {
            queue_limit: mac.queue_limit as usize,
            queue: Default::default(),
            short_retry_limit: rates.short_retry_limit,
            long_retry_limit: rates.long_retry_limit,
            rts_threshold: rates.rts_threshold,
            rate,
            modes: rates.standard.modes(),
            fast_frames: mac.fast_frames.then_some(txop_limit),
            ampdu: (mac.ampdu && matches!(rates.standard, Standard::Ht(_)))
                .then_some(AmpduConfig::ATH9K),
            txop_bursting: mac.txop_bursting.then_some(txop_limit),
        })
    }
}
