//! Atheros fast frames (madwifi's `ff`): two queued packets to the same
//! receiver joined into one frame when madwifi's estimate of its airtime
//! fits the TXOP limit.

use super::Dcf;
use crate::ids::Dst;
use crate::mac::queue::Queued;
use crate::mac::{Msdu, Payload, FAST_FRAME_OVERHEAD};
use crate::phy::mode::Preamble;
use crate::ratectl::RetryChain;
use crate::units::SimTime;

/// What madwifi's airtime estimate for a fast frame
/// (`athff_approx_txtime`) adds to our two MSDUs: each packet counted as
/// an Ethernet frame (6 bytes more than IP with LLC/SNAP), plus 32 bytes of
/// 802.11 header and FCS, 10 of fast-frame header and padding, 16 for two
/// LLC tunnel headers and 14 for one 802.3 tunnel header.
const FF_ESTIMATE_EXTRA: u32 = 2 * 6 + 32 + 10 + 16 + 14;

impl Dcf {
    /// `msdu` joined with the next queued packet to the same receiver into
    /// an Atheros fast frame, if enabled and madwifi's estimate of the
    /// joined frame's airtime at the chain's first rate (long PLCP at the
    /// DSSS rates, as `ath_hal_computetxtime` is asked) stays within the
    /// limit (the best-effort TXOP); else `msdu` itself.
    pub(super) fn join_fast_frame(&mut self, now: SimTime, msdu: Msdu, chain: &RetryChain) -> Msdu {
        let (Some(limit), Payload::Packet(_), Dst::Node(_), None) =
            (self.cfg.fast_frames, &msdu.payload, msdu.dst, msdu.fixed)
        else {
            return msdu;
        };
        let Some(Queued {
            msdu:
                Msdu {
                    payload: Payload::Packet(_),
                    dst,
                    fixed: None,
                    bytes,
                    ..
                },
            ..
        }) = self.data.fifo_front()
        else {
            return msdu;
        };
        if *dst != msdu.dst {
            return msdu;
        }
        let estimate = chain.stages[0].mode.airtime(
            msdu.bytes + bytes + FF_ESTIMATE_EXTRA,
            Preamble::Long,
            self.air.standard,
        );
        if estimate > limit {
            return msdu;
        }
        let joined = msdu.bytes + bytes + FAST_FRAME_OVERHEAD;
        let Some(Queued {
            msdu:
                Msdu {
                    payload: Payload::Packet(b),
                    ..
                },
            ..
        }) = self.data.pop(now)
        else {
            return msdu;
        };
        let Payload::Packet(a) = msdu.payload else {
            return msdu;
        };
        Msdu {
            bytes: joined,
            payload: Payload::FastFrame(Box::new([a, b])),
            ..msdu
        }
    }
}
