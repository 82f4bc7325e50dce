//! DHCP (RFC 2131) as a sans-IO client, off by default: a station with
//! `dhcp = true` has no address after association until it has been through
//! DISCOVER, OFFER, REQUEST and ACK with a server — here the access point
//! itself (an AP serves DHCP unless its `dhcp_server` is off; the server's
//! side is small and lives in [`super::Net`]). The client retransmits per
//! RFC 2131 §4.1: 4 s, doubling to 64 s, each randomised by ±1 s, then starts
//! over. Until bound, the station sends and receives no IP traffic, and
//! applications waiting for the connection do not start. A lease is kept
//! across re-associations (no INIT-REBOOT exchange is modelled).

use crate::ids::NodeId;
use crate::packet::DhcpOp;
use crate::rng::Stream;
use crate::units::SimTime;

/// A client's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DhcpState {
    /// Static address, or a lease already held.
    Bound,
    /// Waiting for an offer (after DISCOVER) or an ack (after REQUEST).
    Selecting {
        server: NodeId,
        attempt: u32,
    },
    Requesting {
        server: NodeId,
        attempt: u32,
    },
    /// No exchange under way (not associated yet).
    Init,
}

/// A message the client sends now (broadcast), and when it retransmits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientSend {
    pub op: DhcpOp,
    pub server: NodeId,
    pub attempt: u32,
    /// The retransmission timer: after `wait`, carrying `generation`.
    pub wait: SimTime,
    pub generation: u32,
}

/// What a message from a server did to the client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClientStep {
    /// Not for this exchange: ignored.
    Ignored,
    /// An offer: the client requests it.
    Send(ClientSend),
    /// An ack: the client holds a lease now.
    Bound,
}

/// A client's DHCP state and its retransmission timer.
#[derive(Clone, Debug)]
pub struct DhcpClient {
    state: DhcpState,
    generation: u32,
    rng: Stream,
}

/// RFC 2131 §4.1: 4 s before the first retransmission, doubling up to 64 s.
fn backoff(attempt: u32) -> f64 {
    4.0 * 2f64.powi(attempt.min(4) as i32)
}

impl DhcpClient {
    pub fn new(rng: Stream) -> Self {
        DhcpClient {
            state: DhcpState::Init,
            generation: 0,
            rng,
        }
    }

    pub fn state(&self) -> DhcpState {
        self.state
    }

    pub fn bound(&self) -> bool {
        self.state == DhcpState::Bound
    }

    /// The message for the current state, with a fresh timer.
    fn send(&mut self) -> Option<ClientSend> {
        let (op, server, attempt) = match self.state {
            DhcpState::Selecting { server, attempt } => (DhcpOp::Discover, server, attempt),
            DhcpState::Requesting { server, attempt } => (DhcpOp::Request, server, attempt),
            DhcpState::Bound | DhcpState::Init => return None,
        };
        let jitter = self.rng.uniform() * 2.0 - 1.0;
        self.generation = self.generation.wrapping_add(1);
        Some(ClientSend {
            op,
            server,
            attempt,
            wait: SimTime::from_secs_f64(backoff(attempt) + jitter),
            generation: self.generation,
        })
    }

    /// Association with `ap` came up: without a lease, DISCOVER starts.
    pub fn start(&mut self, ap: NodeId) -> Option<ClientSend> {
        if self.bound() {
            return None;
        }
        self.state = DhcpState::Selecting {
            server: ap,
            attempt: 0,
        };
        self.send()
    }

    /// Association was lost during an exchange: stop retransmitting.
    pub fn stop(&mut self) {
        if !self.bound() {
            self.state = DhcpState::Init;
            self.generation = self.generation.wrapping_add(1);
        }
    }

    /// The retransmission timer of `generation` fired.
    pub fn expire(&mut self, generation: u32) -> Option<ClientSend> {
        if self.generation != generation {
            return None;
        }
        self.state = match self.state {
            DhcpState::Selecting { server, attempt } => DhcpState::Selecting {
                server,
                attempt: (attempt + 1) % 5,
            },
            // RFC 2131: no answer to REQUEST sends the client back to INIT.
            DhcpState::Requesting { server, .. } => DhcpState::Selecting { server, attempt: 0 },
            s => s,
        };
        self.send()
    }

    /// A server's `op` arrived from `from`.
    pub fn handle(&mut self, from: NodeId, op: DhcpOp) -> ClientStep {
        match (self.state, op) {
            (DhcpState::Selecting { server, .. }, DhcpOp::Offer) if server == from => {
                self.state = DhcpState::Requesting { server, attempt: 0 };
                self.send().map_or(ClientStep::Ignored, ClientStep::Send)
            }
            (DhcpState::Requesting { server, .. }, DhcpOp::Ack) if server == from => {
                self.state = DhcpState::Bound;
                self.generation = self.generation.wrapping_add(1);
                ClientStep::Bound
            }
            _ => ClientStep::Ignored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AP: NodeId = NodeId(0);
    const OTHER: NodeId = NodeId(5);

    fn client() -> DhcpClient {
        DhcpClient::new(Stream::new("test", 1, 0, "dhcp"))
    }

    #[test]
    fn init_link_up_sends_discover_with_a_jittered_four_second_timer() {
        let mut c = client();
        let s = c.start(AP).expect("discover");
        assert_eq!((s.op, s.server, s.attempt), (DhcpOp::Discover, AP, 0));
        assert!((3.0..=5.0).contains(&s.wait.as_secs_f64()), "{:?}", s.wait);
        assert_eq!(
            c.state(),
            DhcpState::Selecting {
                server: AP,
                attempt: 0
            }
        );
    }

    #[test]
    fn selecting_offer_from_the_server_sends_request() {
        let mut c = client();
        c.start(AP);
        assert_eq!(
            c.handle(OTHER, DhcpOp::Offer),
            ClientStep::Ignored,
            "another server's offer"
        );
        let ClientStep::Send(s) = c.handle(AP, DhcpOp::Offer) else {
            panic!("no request")
        };
        assert_eq!(s.op, DhcpOp::Request);
        assert_eq!(
            c.handle(AP, DhcpOp::Offer),
            ClientStep::Ignored,
            "offer while requesting"
        );
    }

    #[test]
    fn requesting_ack_binds_and_voids_the_timer() {
        let mut c = client();
        c.start(AP);
        let ClientStep::Send(s) = c.handle(AP, DhcpOp::Offer) else {
            panic!()
        };
        assert_eq!(c.handle(AP, DhcpOp::Ack), ClientStep::Bound);
        assert!(c.bound());
        assert_eq!(c.expire(s.generation), None);
        assert_eq!(
            c.start(AP),
            None,
            "the lease is kept across re-associations"
        );
    }

    #[test]
    fn selecting_timeout_doubles_the_backoff_up_to_64_s_then_starts_over() {
        let mut c = client();
        let mut s = c.start(AP).unwrap();
        let mut waits = vec![];
        for _ in 0..5 {
            s = c.expire(s.generation).unwrap();
            waits.push((s.attempt, s.wait.as_secs_f64()));
        }
        let attempts: Vec<u32> = waits.iter().map(|w| w.0).collect();
        assert_eq!(attempts, vec![1, 2, 3, 4, 0]);
        for (attempt, wait) in waits {
            let base = backoff(attempt);
            assert!(
                (base - 1.0..=base + 1.0).contains(&wait),
                "attempt {attempt}: {wait}"
            );
        }
    }

    #[test]
    fn requesting_timeout_goes_back_to_discover() {
        let mut c = client();
        c.start(AP);
        let ClientStep::Send(s) = c.handle(AP, DhcpOp::Offer) else {
            panic!()
        };
        let again = c.expire(s.generation).unwrap();
        assert_eq!((again.op, again.attempt), (DhcpOp::Discover, 0));
    }

    #[test]
    fn link_down_stops_the_exchange() {
        let mut c = client();
        let s = c.start(AP).unwrap();
        c.stop();
        assert_eq!(c.state(), DhcpState::Init);
        assert_eq!(c.expire(s.generation), None);
    }
}
