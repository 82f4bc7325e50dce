//! Loss recovery and congestion response on an acknowledgement: duplicate
//! ACK counting, fast retransmit and recovery (NewReno RFC 6582, SACK RFC
//! 6675), Linux 2.6 rate halving and cwnd moderation, PRR (RFC 6937), and
//! window growth through the congestion controller.

use super::*;

impl Tcp {
    pub(super) fn congestion_on_ack(
        &mut self,
        now: SimTime,
        ack: SeqNum,
        acked: &Acked,
        newly_sacked: u32,
        is_dup: bool,
        prior_pipe: u32,
    ) {
        let advanced = acked.bytes > 0 || acked.segs > 0;
        let sender_sack = self.sender_sack();
        if !sender_sack && self.cfg.recovery != LossRecovery::NewReno {
            if advanced {
                self.reno_sacked = self
                    .reno_sacked
                    .saturating_sub(acked.segs.saturating_sub(1));
            } else if is_dup {
                self.reno_sacked = (self.reno_sacked + 1).min(self.board.len().saturating_sub(1));
            }
        }
        match self.ca {
            CaState::Open => {
                if advanced {
                    self.dupacks = 0;
                    self.grow(now, acked.segs, prior_pipe);
                } else if is_dup {
                    self.dupacks += 1;
                }
                if sender_sack && newly_sacked > 0 {
                    self.board.mark_lost_by_sack(self.cfg.dupthresh);
                }
                let sack_says = sender_sack && self.board.sacked_above_head() >= self.cfg.dupthresh;
                if !self.board.is_empty() && (self.dupacks >= self.cfg.dupthresh || sack_says) {
                    self.enter_recovery(acked.segs + newly_sacked.max(is_dup as u32));
                }
            }
            CaState::Recovery { recover } => {
                if ack >= recover {
                    self.exit_recovery();
                    return;
                }
                if is_dup {
                    self.dupacks += 1;
                }
                if advanced {
                    // Partial ACK: the new head is the next hole (RFC 6582).
                    self.board.mark_head_lost();
                    self.force_rtx |= self.cfg.recovery == LossRecovery::NewReno;
                }
                if sender_sack {
                    self.board.mark_lost_by_sack(self.cfg.dupthresh);
                }
                let delivered = if sender_sack {
                    acked.segs.saturating_sub(acked.sacked_segs) + newly_sacked
                } else {
                    acked.segs.max(is_dup as u32)
                };
                match self.cfg.recovery {
                    LossRecovery::NewReno => {
                        if advanced {
                            // Deflate by the amount acknowledged, add one back.
                            self.cwnd = self.cwnd.saturating_sub(acked.segs) + 1;
                        } else if is_dup {
                            self.cwnd += 1;
                        }
                    }
                    LossRecovery::RateHalving { .. } => self.cwnd_down(),
                    LossRecovery::Prr => self.prr_on_ack(delivered),
                }
            }
            CaState::Loss { recover } => {
                if advanced {
                    self.grow(now, acked.segs, prior_pipe);
                }
                if ack >= recover {
                    self.ca = CaState::Open;
                    self.dupacks = 0;
                }
            }
        }
        self.cwnd = self.cwnd.clamp(1, CWND_CLAMP);
    }

    /// Window growth if the sender was cwnd-limited before this ACK (Linux
    /// `tcp_is_cwnd_limited`).
    fn grow(&mut self, now: SimTime, acked_segs: u32, prior_pipe: u32) {
        if prior_pipe >= self.cwnd {
            let min_rtt = self.rtt.min_rtt();
            self.cc
                .on_ack(&mut self.cwnd, self.ssthresh, acked_segs, now, min_rtt);
        }
    }

    fn enter_recovery(&mut self, delivered: u32) {
        let flight = self.board.len();
        self.ssthresh = self.cc.ssthresh(self.cwnd, flight);
        self.ca = CaState::Recovery {
            recover: self.snd_nxt,
        };
        self.board.mark_head_lost();
        self.force_rtx = true;
        self.events.push_back(TcpEvent::FastRetransmit);
        match self.cfg.recovery {
            LossRecovery::NewReno => self.cwnd = self.ssthresh + self.cfg.dupthresh,
            LossRecovery::RateHalving { .. } => {
                self.halving_cnt = 0;
                self.cwnd_down();
            }
            LossRecovery::Prr => {
                self.prr = Prr {
                    delivered: 0,
                    out: 0,
                    recover_fs: flight.max(1),
                };
                self.prr_on_ack(delivered);
            }
        }
    }

    /// Linux 2.6 `tcp_cwnd_down`: one segment less every second ACK down to
    /// ssthresh/2, and never more than one segment above what is in flight.
    fn cwnd_down(&mut self) {
        self.halving_cnt += 1;
        if self.halving_cnt >= 2 {
            self.halving_cnt = 0;
            if self.cwnd > (self.ssthresh / 2).max(1) {
                self.cwnd -= 1;
            }
        }
        self.cwnd = self.cwnd.min(self.pipe() + 1);
    }

    /// RFC 6937 §3 with the slow-start reduction bound.
    fn prr_on_ack(&mut self, delivered: u32) {
        self.prr.delivered = self.prr.delivered.saturating_add(delivered);
        let pipe = self.pipe();
        let ssthresh = self.ssthresh;
        let sndcnt = if pipe > ssthresh {
            let target =
                (self.prr.delivered as u64 * ssthresh as u64).div_ceil(self.prr.recover_fs as u64);
            target.saturating_sub(self.prr.out as u64) as u32
        } else {
            let limit = self
                .prr
                .delivered
                .saturating_sub(self.prr.out)
                .max(delivered)
                + 1;
            (ssthresh - pipe).min(limit)
        };
        // Linux: the fast retransmit itself always goes out.
        let sndcnt = sndcnt.max((self.prr.out == 0) as u32);
        self.cwnd = pipe + sndcnt;
    }

    fn exit_recovery(&mut self) {
        match self.cfg.recovery {
            LossRecovery::NewReno => {
                // RFC 6582 §3.2 step 3, option (1).
                self.cwnd = self.ssthresh.min(self.board.len().max(1) + 1);
            }
            LossRecovery::RateHalving { moderation_burst } => {
                // tcp_complete_cwr, then tcp_moderate_cwnd.
                self.cwnd = self.cwnd.min(self.ssthresh);
                self.cwnd = self.cwnd.min(self.pipe() + moderation_burst);
            }
            LossRecovery::Prr => self.cwnd = self.ssthresh,
        }
        self.cwnd = self.cwnd.clamp(1, CWND_CLAMP);
        self.ca = CaState::Open;
        self.dupacks = 0;
        self.reno_sacked = 0;
    }
}
