//! Timer expiries: delayed ACK, persist, TIME-WAIT, SYN/SYN-ACK
//! retransmission with backoff and the retransmission timeout (RFC 6298),
//! and arming the persist timer when a zero window blocks new data.

use super::*;

impl Tcp {
    pub fn handle_timeout(&mut self, now: SimTime) {
        let due = |t: Option<SimTime>| t.is_some_and(|t| t <= now);
        if due(self.timewait_at) {
            self.enter_closed();
            self.events.push_back(TcpEvent::Closed);
            return;
        }
        if due(self.delack_at) {
            self.delack_at = None;
            self.ack_now = true;
        }
        if due(self.persist_at) {
            self.persist_at = None;
            self.persist_backoff += 1;
            self.probe_pending = true;
        }
        if due(self.rtx_at) {
            self.rtx_at = None;
            match self.state {
                State::SynSent | State::SynReceived => self.on_syn_timeout(),
                _ if !self.board.is_empty() => self.on_rto(now),
                _ => {}
            }
        }
    }

    fn on_syn_timeout(&mut self) {
        let limit = if self.state == State::SynSent {
            self.cfg.syn_retries
        } else {
            self.cfg.synack_retries
        };
        if self.retries >= limit {
            self.events.push_back(TcpEvent::GaveUp);
            if self.passive {
                let events = std::mem::take(&mut self.events);
                *self = Tcp::listen(self.cfg.clone(), self.local_port, self.iss.0);
                self.events = events;
            } else {
                self.enter_closed();
            }
            return;
        }
        self.retries += 1;
        self.backoff += 1;
        self.syn_pending = true;
        self.syn_retransmitted = true;
        self.events.push_back(TcpEvent::SynRetransmit {
            attempt: self.retries,
        });
    }

    fn on_rto(&mut self, now: SimTime) {
        if self.retries >= self.cfg.data_retries {
            self.events.push_back(TcpEvent::GaveUp);
            self.enter_closed();
            return;
        }
        if self.ca == CaState::Open {
            // Only the first timeout of an episode reduces ssthresh (Linux
            // tcp_enter_loss).
            self.ssthresh = self.cc.ssthresh(self.cwnd, self.board.len());
        }
        self.cc.on_rto();
        self.cwnd = 1;
        self.ca = CaState::Loss {
            recover: self.snd_nxt,
        };
        self.dupacks = 0;
        self.reno_sacked = 0;
        self.board.mark_all_lost();
        self.retries += 1;
        self.backoff += 1;
        let rto = self.rto();
        self.events.push_back(TcpEvent::Timeout {
            rto,
            backoff: self.backoff,
        });
        self.rtx_at = Some(now + rto);
    }

    /// Arms the persist timer when the peer's zero window blocks new data.
    pub(super) fn arm_persist(&mut self, now: SimTime) {
        let blocked = self.board.is_empty()
            && self.snd_wnd == 0
            && self.app_total > self.sent_total
            && matches!(
                self.state,
                State::Established | State::CloseWait | State::FinWait1 | State::LastAck
            );
        if blocked && self.persist_at.is_none() {
            self.persist_at = Some(now + self.rtt.backed_off(self.persist_backoff));
        }
    }
}
