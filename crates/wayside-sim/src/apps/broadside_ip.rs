//! Broadside-IP's connections (Zahn et al. 2009, §4): an end sends its
//! unicast datagrams — discovery, transfer control, file blocks and
//! acknowledgement vectors — to a peer over one TCP connection carrying
//! real bytes ([`crate::sockets::stream`]), each datagram framed by a
//! two-byte big-endian length; beacons stay UDP broadcasts. Datagrams are
//! at most the 1460-byte MSS of a 1500-byte MTU less the length, so a
//! steady flow of blocks fills whole segments.
//!
//! A connection is opened when there is something to send and none is up;
//! one whose handshake has not completed after 1 s is dropped and opened
//! again (the paper's application did so to get round Windows XP's SYN
//! retries at 3 and 9 s); a handshake the peer started that has not
//! completed after 1 s is left to TCP while this end opens its own. When
//! both ends open one at once, both keep the one the lower node id
//! opened; a connection that is up is always preferred. A connection that TCP gives up on is
//! opened again when there is something to send; the bytes written into
//! it and not acknowledged are lost with it, as on a real host, and
//! Broadside's own timers recover. Datagrams wait in a per-peer queue, and
//! the endpoint is asked for more only while that queue and the socket's
//! unacknowledged bytes together stay under a send buffer.

use crate::ids::NodeId;
use crate::sockets::Sockets;
use crate::transport::tcp::State;
use crate::units::SimTime;
use std::collections::{BTreeMap, VecDeque};

/// The largest datagram over TCP: the MSS less the length prefix.
pub const TCP_DATAGRAM: usize = 1460 - 2;
/// A handshake not complete after this long is started again.
const RESTART: SimTime = SimTime::from_ms(1000);
/// Bytes an end keeps queued and unacknowledged per peer before it stops
/// asking its endpoint for more (a socket send buffer).
const SEND_BUFFER: usize = 64 * 1024;

/// The connection to one peer.
struct Peer {
    peer: NodeId,
    /// The socket datagrams to the peer are written to.
    socket: Option<usize>,
    /// When that socket's handshake started (or the peer's was taken).
    since: SimTime,
    /// Framed datagrams not yet written.
    pending: VecDeque<u8>,
}

/// One end's connections, and the frames arriving on each socket.
#[derive(Default)]
pub(super) struct Conns {
    peers: Vec<Peer>,
    /// Per socket: the bytes of a frame not complete yet.
    partial: BTreeMap<usize, Vec<u8>>,
}

impl Conns {
    fn peer(&mut self, peer: NodeId) -> &mut Peer {
        match self.peers.iter().position(|p| p.peer == peer) {
            Some(i) => &mut self.peers[i],
            None => {
                self.peers.push(Peer {
                    peer,
                    socket: None,
                    since: SimTime::ZERO,
                    pending: VecDeque::new(),
                });
                self.peers.last_mut().expect("just pushed")
            }
        }
    }

    /// Queues datagram `data` for `peer`.
    pub(super) fn queue(&mut self, peer: NodeId, data: &[u8]) {
        let len = u16::try_from(data.len()).expect("a datagram under 64 kB");
        let p = self.peer(peer);
        p.pending.extend(len.to_be_bytes());
        p.pending.extend(data);
    }

    /// Whether every peer's queued and unacknowledged bytes are under the
    /// send buffer (the endpoint may send more).
    pub(super) fn room(&self, sockets: &Sockets) -> bool {
        self.peers.iter().all(|p| {
            let unacked = p
                .socket
                .and_then(|s| sockets.get(s).stream.as_ref().map(|st| st.unacked()))
                .unwrap_or(0);
            p.pending.len() + unacked < SEND_BUFFER
        })
    }

    /// Opens, restarts and writes to each peer's connection as its state
    /// asks; returns when a handshake under way is due for a restart.
    pub(super) fn service(
        &mut self,
        now: SimTime,
        app: u32,
        port: u16,
        sockets: &mut Sockets,
    ) -> Option<SimTime> {
        let mut due: Option<SimTime> = None;
        for p in &mut self.peers {
            let state = p.socket.map(|s| sockets.get(s).tcp.state());
            let opening = matches!(state, Some(State::SynSent | State::SynReceived));
            let restart = opening && now >= p.since + RESTART;
            if restart && state == Some(State::SynSent) {
                sockets.abort(now, p.socket.expect("a socket"));
            }
            match state {
                Some(State::Established | State::CloseWait) => {
                    let s = p.socket.expect("a socket");
                    let unacked = sockets.get(s).stream.as_ref().map_or(0, |st| st.unacked());
                    let n = p.pending.len().min(SEND_BUFFER.saturating_sub(unacked));
                    if n > 0 {
                        let chunk: Vec<u8> = p.pending.drain(..n).collect();
                        sockets.write(now, s, &chunk);
                    }
                }
                Some(State::SynSent | State::SynReceived) if !restart => {}
                _ if p.pending.is_empty() => {}
                _ => {
                    p.socket = Some(sockets.connect_stream(now, p.peer, port, app));
                    p.since = now;
                }
            }
            let at = p.since + RESTART;
            if at > now
                && p.socket.is_some_and(|s| {
                    matches!(
                        sockets.get(s).tcp.state(),
                        State::SynSent | State::SynReceived
                    )
                })
            {
                due = Some(due.map_or(at, |d| d.min(at)));
            }
        }
        due
    }

    /// Socket `i` had input. It becomes the one to write to if the one
    /// written to is not up and: `i` is up; or it is closed; or `i` is a
    /// newer handshake the peer started; or ours is under way and the
    /// peer's id is the lower (both ends then keep the peer's). Ours, if
    /// under way, is dropped.
    pub(super) fn adopt(&mut self, now: SimTime, me: NodeId, i: usize, sockets: &mut Sockets) {
        let peer = sockets.get(i).peer;
        let up = |s: State| matches!(s, State::Established | State::CloseWait);
        let new = sockets.get(i).tcp.state();
        let p = self.peer(peer);
        if p.socket == Some(i) {
            return;
        }
        let cur = p.socket.map(|s| (s, sockets.get(s).tcp.state()));
        let take = match cur {
            None | Some((_, State::Closed)) => true,
            Some((_, c)) if up(c) => false,
            Some((_, State::SynSent)) => up(new) || peer.0 < me.0,
            Some(_) => up(new) || new == State::SynReceived,
        };
        if take {
            if let Some((s, State::SynSent)) = cur {
                sockets.abort(now, s);
            }
            p.socket = Some(i);
            p.since = now;
        }
    }

    /// The complete datagrams that `data`, arriving on socket `i`, ends.
    pub(super) fn frames(&mut self, i: usize, data: Vec<u8>) -> Vec<Vec<u8>> {
        let buf = self.partial.entry(i).or_default();
        buf.extend(data);
        let mut out = Vec::new();
        let mut at = 0;
        while buf.len() >= at + 2 {
            let n = usize::from(u16::from_be_bytes([buf[at], buf[at + 1]]));
            if buf.len() < at + 2 + n {
                break;
            }
            out.push(buf[at + 2..at + 2 + n].to_vec());
            at += 2 + n;
        }
        buf.drain(..at);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sockets::SocketOutput;
    use crate::trace::ConnEvent;
    use crate::transport::tcp::TcpProfile;

    const ME: NodeId = NodeId(1);
    const PEER: NodeId = NodeId(0);

    fn xp() -> Sockets {
        Sockets::new(ME, TcpProfile::WindowsXp.config(), 1, 0, "me")
    }

    /// The connection events the sockets put out since the last call.
    fn events(s: &mut Sockets) -> Vec<ConnEvent> {
        std::iter::from_fn(|| s.poll())
            .filter_map(|o| {
                if let SocketOutput::Conn { event, .. } = o {
                    Some(event)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn nothing_to_send_opens_nothing() {
        let (mut c, mut s) = (Conns::default(), xp());
        assert_eq!(c.service(SimTime::ZERO, 0, 9, &mut s), None);
        assert!(events(&mut s).is_empty());
    }

    #[test]
    fn a_handshake_unanswered_for_one_second_is_started_again() {
        let (mut c, mut s) = (Conns::default(), xp());
        c.queue(PEER, b"discovery");
        assert_eq!(
            c.service(SimTime::ZERO, 0, 9, &mut s),
            Some(SimTime::from_ms(1000))
        );
        assert_eq!(events(&mut s), vec![ConnEvent::Syn]);
        // Before the second: nothing new.
        assert_eq!(
            c.service(SimTime::from_ms(999), 0, 9, &mut s),
            Some(SimTime::from_ms(1000))
        );
        assert!(events(&mut s).is_empty());
        // At 1 s a new SYN on a new socket; the old one is closed, so XP's
        // own retry at 3 s never comes.
        assert_eq!(
            c.service(SimTime::from_ms(1000), 0, 9, &mut s),
            Some(SimTime::from_ms(2000))
        );
        assert_eq!(events(&mut s), vec![ConnEvent::Syn]);
        assert_eq!(s.get(0).tcp.state(), State::Closed);
        assert_eq!(s.get(0).tcp.poll_timeout(), None);
        assert_eq!(s.get(1).tcp.state(), State::SynSent);
    }

    /// A SYN from `from` to `to`, arrived at `s` at `at`.
    fn syn(s: &mut Sockets, from: NodeId, to: NodeId, at: SimTime) {
        let mut other = Sockets::new(from, TcpProfile::WindowsXp.config(), 1, 0, "other");
        other.connect_stream(SimTime::ZERO, to, 9, 0);
        let syn = std::iter::from_fn(|| other.poll())
            .find_map(|o| {
                if let SocketOutput::Send(p) = o {
                    Some(p)
                } else {
                    None
                }
            })
            .expect("a SYN");
        s.handle_packet(at, syn);
    }

    /// A SYN from the peer (id 0) to us, arrived at `at`.
    fn syn_from_peer(s: &mut Sockets, at: SimTime) {
        syn(s, PEER, ME, at);
    }

    #[test]
    fn a_stalled_handshake_of_the_peers_is_left_and_ours_opened_when_there_is_data() {
        let (mut c, mut s) = (Conns::default(), xp());
        s.listen_stream(9, 0);
        syn_from_peer(&mut s, SimTime::from_ms(1));
        c.adopt(SimTime::from_ms(1), ME, 0, &mut s);
        assert_eq!(s.get(0).tcp.state(), State::SynReceived);
        // A second on, nothing to send: nothing to do, and no wake-up now.
        assert_eq!(c.service(SimTime::from_ms(1001), 0, 9, &mut s), None);
        c.queue(PEER, b"x");
        assert_eq!(
            c.service(SimTime::from_ms(1001), 0, 9, &mut s),
            Some(SimTime::from_ms(2001))
        );
        assert_eq!(c.peers[0].socket, Some(1), "our own");
        assert_eq!(
            s.get(0).tcp.state(),
            State::SynReceived,
            "the peer's is left to TCP"
        );
    }

    #[test]
    fn the_peers_connection_is_taken_when_ours_is_not_up_and_its_id_is_lower() {
        let (mut c, mut s) = (Conns::default(), xp());
        c.queue(PEER, b"x");
        c.service(SimTime::ZERO, 0, 9, &mut s);
        // The peer (id 0, lower) connects to us meanwhile.
        s.listen_stream(9, 0);
        syn_from_peer(&mut s, SimTime::from_ms(1));
        c.adopt(SimTime::from_ms(1), ME, 1, &mut s);
        assert_eq!(c.peers[0].socket, Some(1), "the accepted one");
        assert_eq!(s.get(0).tcp.state(), State::Closed, "ours is dropped");
        // With the ids the other way round, ours stays.
        let (mut c, mut s) = (
            Conns::default(),
            Sockets::new(PEER, TcpProfile::WindowsXp.config(), 1, 0, "low"),
        );
        c.queue(ME, b"x");
        c.service(SimTime::ZERO, 0, 9, &mut s);
        s.listen_stream(9, 0);
        syn(&mut s, ME, PEER, SimTime::from_ms(1));
        c.adopt(SimTime::from_ms(1), PEER, 1, &mut s);
        assert_eq!(c.peers[0].socket, Some(0));
        assert_eq!(s.get(0).tcp.state(), State::SynSent);
    }

    #[test]
    fn frames_split_across_deliveries_come_out_whole() {
        let mut c = Conns::default();
        c.queue(NodeId(1), b"abc");
        c.queue(NodeId(1), b"");
        c.queue(NodeId(1), b"hello");
        let bytes: Vec<u8> = c.peers[0].pending.iter().copied().collect();
        assert_eq!(bytes.len(), 3 * 2 + 8);
        assert_eq!(c.frames(4, bytes[..4].to_vec()), Vec::<Vec<u8>>::new());
        assert_eq!(
            c.frames(4, bytes[4..9].to_vec()),
            vec![b"abc".to_vec(), vec![]]
        );
        assert!(
            c.frames(5, bytes[9..].to_vec()).is_empty(),
            "another socket: no frame start there"
        );
        assert_eq!(c.frames(4, bytes[9..].to_vec()), vec![b"hello".to_vec()]);
    }
}
