//! Per-OS TCP behaviour: [`TcpConfig`] holds every profile-dependent value and
//! [`TcpProfile`] names the three reference stacks. Each value's source is in
//! the doc comment of [`TcpProfile`].

use crate::units::SimTime;
use std::fmt;
use std::str::FromStr;

/// How the congestion window grows outside loss recovery and how far it is
/// cut on a congestion event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Congestion {
    /// RFC 5681: slow start +1 segment per ACK, congestion avoidance +1
    /// segment per `cwnd` ACKs (Linux 2.6.16 `tcp_reno_cong_avoid` without
    /// ABC, so one segment per two RTTs behind a delayed-ACK receiver);
    /// `ssthresh = max(FlightSize/2, 2)`.
    Reno,
    /// CUBIC (RFC 9438): C = 0.4, beta = 0.7, fast convergence, Reno-friendly
    /// region; slow start +1 segment per segment acknowledged (Linux
    /// `tcp_slow_start`). HyStart is not modelled.
    Cubic,
}

/// How the sender behaves between fast retransmit and the end of recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossRecovery {
    /// RFC 6582 NewReno with window inflation; SACK information is not used
    /// by the sender (it still generates SACK blocks as a receiver).
    NewReno,
    /// Linux 2.6 rate halving (`tcp_fastretrans_alert`/`tcp_cwnd_down`): from
    /// fast retransmit on, cwnd loses one segment for every two ACKs (floor
    /// `ssthresh/2`, so it halves over one RTT) and is clamped to
    /// `in_flight + 1` on every ACK; at the ACK ending recovery it is cut to
    /// `min(cwnd, ssthresh)` (`tcp_complete_cwr`) and moderated to
    /// `in_flight + moderation_burst` (`tcp_moderate_cwnd`). When the receive
    /// window stops new data during a long dupack burst, in_flight drains to
    /// the retransmission alone, so cwnd ends at one segment and the sender
    /// slow starts (Mukherjee et al. 2014, §IV-A). RFC 6675 SACK scoreboard.
    /// (Halving cwnd at once instead would block the fast retransmit itself
    /// whenever more than cwnd/2 segments are still in flight.)
    RateHalving { moderation_burst: u32 },
    /// Proportional Rate Reduction (RFC 6937, with slow-start reduction
    /// bound) over the RFC 6675 SACK scoreboard; cwnd = ssthresh at the end.
    Prr,
}

/// Every profile-dependent parameter of a TCP endpoint. Windows are in
/// segments of the connection's MSS, like Linux's `snd_cwnd`.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Interface MTU; the MSS advertised is `mtu - 40` (no IP/TCP options
    /// on data segments: timestamps are off).
    pub mtu: u32,
    /// Receive window in bytes. Above 65535, window scaling is offered in
    /// the SYN and used if the peer offers it too.
    pub rcv_wnd: u32,
    /// Offer window scaling in the SYN whatever the receive window (Linux:
    /// on by default since 2.6.8), so that a peer with a window above
    /// 64 KB can use it; without it, only a window above 65535 offers it
    /// (Windows XP's RFC 1323 default).
    pub window_scaling: bool,
    /// Offer (and use, if the peer offers it) SACK (RFC 2018).
    pub sack: bool,
    /// Initial congestion window, segments.
    pub initial_cwnd: u32,
    pub congestion: Congestion,
    pub recovery: LossRecovery,
    /// RTO before the first RTT sample (also the SYN retransmission timer).
    pub initial_rto: SimTime,
    /// Lower clamp of the RTO.
    pub min_rto: SimTime,
    /// `G` in `RTO = SRTT + max(G, 4·RTTVAR)`.
    pub rto_var_floor: SimTime,
    /// Upper clamp of the RTO, backoff included.
    pub max_rto: SimTime,
    /// Most consecutive doublings of the RTO (exponential backoff); 0 keeps
    /// retransmitting at the base RTO ("more aggressive retransmission",
    /// Hadaller et al. 2007 §7.3 (f)). The reference stacks do not limit it
    /// (`u32::MAX`; `max_rto` caps the result).
    pub backoff_limit: u32,
    /// SYN retransmissions before `connect` gives up.
    pub syn_retries: u32,
    /// SYN-ACK retransmissions before a half-open connection is dropped.
    pub synack_retries: u32,
    /// Retransmissions of one data segment before the connection is aborted.
    pub data_retries: u32,
    /// Delayed-ACK timeout.
    pub delayed_ack: SimTime,
    /// In-order data segments acknowledged immediately at the start of a
    /// connection (Linux quick-ack mode), before delayed ACKs begin.
    pub quickack_segments: u32,
    /// TIME-WAIT duration (2·MSL).
    pub time_wait: SimTime,
    /// Duplicate ACKs (or SACKed segments above a hole) that trigger fast
    /// retransmit.
    pub dupthresh: u32,
}

impl TcpConfig {
    /// The MSS this endpoint advertises: MTU minus 20 bytes IP, 20 bytes TCP.
    pub fn mss(&self) -> u32 {
        self.mtu.saturating_sub(40).max(64)
    }
}

/// The reference TCP stacks.
///
/// | value | `linux-2.6` | `linux-modern` | `windows-xp` |
/// |---|---|---|---|
/// | congestion control | Reno | CUBIC | Reno |
/// | loss recovery | rate halving + moderation (burst 1), SACK | PRR, SACK | NewReno |
/// | SACK offered | yes | yes | yes |
/// | initial cwnd | 3 | 10 | 2 |
/// | initial RTO | 3 s | 1 s | 3 s |
/// | min RTO / G | 200 ms / 200 ms | 200 ms / 200 ms | 300 ms / 0 |
/// | max RTO | 120 s | 120 s | 240 s |
/// | SYN retries (give-up) | 5 (189 s) | 6 (127 s) | 2 (21 s) |
/// | SYN-ACK retries | 5 | 5 | 2 |
/// | data retries | 15 | 15 | 5 |
/// | delayed ACK | 40 ms, 16 quick ACKs | 40 ms, 16 quick ACKs | 200 ms |
/// | TIME-WAIT | 60 s | 60 s | 240 s |
///
/// Sources:
/// - **linux-2.6** is kernel 2.6.16 (the one Hadaller et al. 2007 ran):
///   `TCP_TIMEOUT_INIT` = 3 s, `TCP_RTO_MIN` = 200 ms, `TCP_RTO_MAX` = 120 s
///   (include/net/tcp.h); `tcp_set_rto` adds `tcp_rto_min` to the variance
///   term, hence G = 200 ms; `sysctl_tcp_syn_retries` = 5 and
///   `tcp_synack_retries` = 5, `tcp_retries2` = 15; give-up when the timer
///   fires with `icsk_retransmits >= retries` (`tcp_write_timeout`), so a
///   SYN is sent at 0, 3, 9, 21, 45, 93 s and `connect` fails at 189 s;
///   `tcp_init_cwnd` gives 3 segments for MSS 1095..1460 (RFC 3390);
///   `TCP_DELACK_MIN` = 40 ms (`TCP_ATO_MIN`; the adaptive ATO is not
///   modelled), `TCP_MAX_QUICKACKS` = 16; `TCP_TIMEWAIT_LEN` = 60 s;
///   default congestion control Reno (as Mukherjee et al. configured);
///   recovery per `tcp_cwnd_down`/`tcp_complete_cwr`/`tcp_moderate_cwnd`
///   as described by Mukherjee et al. 2014 §IV-A. The kernel's
///   `tcp_max_burst` is 3; the moderation burst of 1 follows the paper's
///   observation that cwnd drops to 1.
/// - **linux-modern** (≥ 3.2): `TCP_TIMEOUT_INIT` = 1 s (RFC 6298, kernel
///   3.1), fallback to 3 s after a lost SYN (RFC 6298 §5.7,
///   `TCP_TIMEOUT_FALLBACK`); `tcp_syn_retries` = 6 (127 s); initial cwnd
///   10 (RFC 6928, kernel 2.6.39); CUBIC default since 2.6.19; PRR since
///   3.2 (RFC 6937). RACK/TLP, HyStart and pacing are not modelled.
/// - **windows-xp**: `TcpInitialRTT` = 3 s and `TcpMaxConnectRetransmissions`
///   = 2 (SYN at 0, 3, 9 s, give-up at 21 s), `TcpMaxDataRetransmissions`
///   = 5, maximum retransmission timer 240 s (MS KB 170359);
///   `TcpMaxConnectResponseRetransmissions` = 2; `TcpDelAckTicks` = 2
///   (200 ms) and `TcpAckFrequency` = 2; `TcpTimedWaitDelay` = 240 s;
///   `SackOpts` = 1 (SACK on by default since Windows 98/2000), but the
///   sender's use of SACK information is not documented, so it is modelled
///   as NewReno (RFC 6582); initial window 2 segments (RFC 2581). The
///   minimum RTO is not documented for XP: 300 ms is the lower bound of
///   `TcpInitialRtt`'s valid range (KB 170359) and the `MinRto` default of
///   later Windows (`netsh int tcp ... minrto`); it is an assumption.
/// - All: receive window 64 KB (Mukherjee et al. set a 64 KB socket buffer;
///   XP's default on Ethernet is smaller, 17 520 B, set `rcv_wnd` to model
///   it), MSS 1460 from a 1500-byte MTU, no timestamps, dupthresh 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpProfile {
    Linux26,
    LinuxModern,
    WindowsXp,
}

impl TcpProfile {
    pub const ALL: [TcpProfile; 3] = [
        TcpProfile::Linux26,
        TcpProfile::LinuxModern,
        TcpProfile::WindowsXp,
    ];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            TcpProfile::Linux26 => "linux-2.6",
            TcpProfile::LinuxModern => "linux-modern",
            TcpProfile::WindowsXp => "windows-xp",
        }
    }

    pub fn config(self) -> TcpConfig {
        let linux = TcpConfig {
            mtu: 1500,
            rcv_wnd: 65535,
            window_scaling: true,
            sack: true,
            initial_cwnd: 3,
            congestion: Congestion::Reno,
            recovery: LossRecovery::RateHalving {
                moderation_burst: 1,
            },
            initial_rto: SimTime::from_ms(3000),
            min_rto: SimTime::from_ms(200),
            rto_var_floor: SimTime::from_ms(200),
            max_rto: SimTime::from_ms(120_000),
            backoff_limit: u32::MAX,
            syn_retries: 5,
            synack_retries: 5,
            data_retries: 15,
            delayed_ack: SimTime::from_ms(40),
            quickack_segments: 16,
            time_wait: SimTime::from_ms(60_000),
            dupthresh: 3,
        };
        match self {
            TcpProfile::Linux26 => linux,
            TcpProfile::LinuxModern => TcpConfig {
                initial_cwnd: 10,
                congestion: Congestion::Cubic,
                recovery: LossRecovery::Prr,
                initial_rto: SimTime::from_ms(1000),
                syn_retries: 6,
                ..linux
            },
            TcpProfile::WindowsXp => TcpConfig {
                window_scaling: false,
                initial_cwnd: 2,
                recovery: LossRecovery::NewReno,
                min_rto: SimTime::from_ms(300),
                rto_var_floor: SimTime::ZERO,
                max_rto: SimTime::from_ms(240_000),
                syn_retries: 2,
                synack_retries: 2,
                data_retries: 5,
                delayed_ack: SimTime::from_ms(200),
                quickack_segments: 0,
                time_wait: SimTime::from_ms(240_000),
                ..linux
            },
        }
    }
}

impl fmt::Display for TcpProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown profile name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown TCP profile `{0}`; expected one of linux-2.6, linux-modern, windows-xp")]
pub struct UnknownProfile(pub String);

impl FromStr for TcpProfile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<TcpProfile, UnknownProfile> {
        TcpProfile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_profile_from_str_round_trip() {
        for p in TcpProfile::ALL {
            assert_eq!(p.name().parse::<TcpProfile>(), Ok(p));
        }
        let err = "linux".parse::<TcpProfile>().unwrap_err();
        assert!(err.to_string().contains("linux-modern"));
    }

    #[test]
    fn test_profile_values() {
        let xp = TcpProfile::WindowsXp.config();
        assert_eq!(xp.initial_rto, SimTime::from_ms(3000));
        assert_eq!(xp.syn_retries, 2);
        assert_eq!(xp.delayed_ack, SimTime::from_ms(200));
        let modern = TcpProfile::LinuxModern.config();
        assert_eq!(modern.initial_cwnd, 10);
        assert_eq!(modern.mss(), 1460);
    }
}
