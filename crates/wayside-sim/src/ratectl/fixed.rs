//! Fixed rate control: always the same retry chain — one rate with the MAC's
//! retry limits (short for frames up to the RTS threshold, long above), or a
//! static multi-rate chain such as `[(54 Mbps, 4), (1 Mbps, 4)]`.

use super::{RateControl, RetryChain, TxRequest, TxStatus};

#[derive(Clone, Debug)]
pub struct Fixed {
    short: RetryChain,
    long: RetryChain,
    rts_threshold: u32,
}

impl Fixed {
    /// `short` is used for frames of at most `rts_threshold` bytes, `long` above.
    pub fn new(short: RetryChain, long: RetryChain, rts_threshold: u32) -> Self {
        Fixed {
            short,
            long,
            rts_threshold,
        }
    }
}

impl RateControl for Fixed {
    fn retry_chain(&mut self, req: &TxRequest) -> RetryChain {
        if req.bytes > self.rts_threshold {
            self.long.clone()
        } else {
            self.short.clone()
        }
    }
    fn report(&mut self, _status: &TxStatus) {}
}

#[cfg(test)]
mod tests {
    use super::super::Stage;
    use super::*;
    use crate::geometry::Vec2;
    use crate::phy::mode::Standard;
    use crate::units::{Bitrate, Db, Dbm, SimTime};

    fn chain(tries: &[(u64, u8)]) -> RetryChain {
        let g = Standard::G;
        RetryChain {
            stages: tries
                .iter()
                .map(|&(r, t)| Stage {
                    mode: g.mode(Bitrate(r * 1_000_000)).unwrap(),
                    tries: t,
                })
                .collect(),
        }
    }

    fn req(bytes: u32) -> TxRequest {
        TxRequest {
            now: SimTime::ZERO,
            bytes,
            rssi: None,
            mean_snr: Some(Db(30.0)),
            tx_power: Dbm(15.0),
            position: Vec2::default(),
            peer_position: None,
        }
    }

    #[test]
    fn picks_the_short_or_long_chain_by_frame_size() {
        let mut f = Fixed::new(chain(&[(54, 7)]), chain(&[(54, 4)]), 1000);
        assert_eq!(f.retry_chain(&req(1000)).total_tries(), 7);
        assert_eq!(f.retry_chain(&req(1001)).total_tries(), 4);
    }

    #[test]
    fn chain_maps_attempts_to_stages() {
        let c = chain(&[(54, 4), (1, 2)]);
        assert_eq!(c.total_tries(), 6);
        assert_eq!(c.stage_of(0), Some(0));
        assert_eq!(c.stage_of(3), Some(0));
        assert_eq!(c.stage_of(4), Some(1));
        assert_eq!(c.stage_of(5), Some(1));
        assert_eq!(c.stage_of(6), None);
    }
}
