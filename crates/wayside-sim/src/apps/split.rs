//! Split TCP at the access point (Indirect-TCP, Bakre & Badrinath 1995), the
//! connection splitting Hadaller et al. (2007, §7.3) recommend so that the
//! AP, not a remote server, chooses the TCP behaviour over the wireless hop.
//!
//! An AP with `split_tcp = true` intercepts every SYN it would forward and
//! terminates the connection itself, answering with the destination's
//! address and port (a transparent proxy); at the same time it opens a
//! second connection to the destination with the source's address and port.
//! Each half is a full TCP endpoint running the AP's own TCP profile and
//! `tcp_params`, so the remote end sees only the path up to the AP (for a
//! wired server: wired round-trip times and wired losses) and the wireless
//! hop is covered by the AP's retransmissions.
//!
//! Bytes received in order on one half are relayed to the other. The relay
//! holds at most one receive window (the AP's `rcv_wnd`) of unacknowledged
//! data per direction: beyond that it stops reading, so the half facing the
//! sender advertises a shrinking window and the sender waits, as a proxy
//! with finite socket buffers does. Segments of connections that began
//! before the AP started splitting (or of other flows) are forwarded as
//! usual. The applications here never close their connections, so FIN is
//! not relayed.

use crate::ids::NodeId;
use crate::net::{Body, Packet};
use crate::world::World;
use crate::sockets::{Owner, Socket};
use crate::trace::ConnEvent;
use crate::transport::tcp::Tcp;
use crate::units::SimTime;

impl World {
    /// `node` is about to forward `p`: if it splits TCP and `p` belongs to a
    /// split connection (or opens one), it goes to the proxy instead.
    /// Returns whether the packet was taken.
    pub(crate) fn split_intercept(&mut self, now: SimTime, node: NodeId, p: &Packet) -> bool {
        let Body::Tcp(seg) = p.body else { return false };
        if !self.nodes[node.index()].cfg.split_tcp {
            return false;
        }
        if let Some(i) = self.tcp_find(node, p.dst, p.src, &seg) {
            self.tcp_segment(now, i, seg);
            return true;
        }
        if !seg.flags.syn || seg.flags.ack {
            return false;
        }
        let cfg = self.nodes[node.index()].tcp.clone();
        let (near, far) = (self.sockets.len(), self.sockets.len() + 1);
        let iss = self.iss(node, near);
        let mut accept = Tcp::listen(cfg.clone(), seg.dst_port, iss);
        accept.set_manual_read();
        let iss = self.iss(node, far);
        let mut connect = Tcp::connect(now, cfg, seg.src_port, seg.dst_port, iss);
        connect.set_manual_read();
        self.sockets.push(Socket::new(node, p.dst, p.src, (seg.dst_port, seg.src_port), accept, Owner::Proxy { twin: far }, now));
        self.sockets.push(Socket::new(node, p.src, p.dst, (seg.src_port, seg.dst_port), connect, Owner::Proxy { twin: near }, now));
        self.conn_event(now, node, p.dst.0, ConnEvent::Syn, 0.0);
        self.tcp_output(now, far);
        self.tcp_segment(now, near, seg);
        true
    }

    /// Moves what half `from` has received to half `to`, up to one window of
    /// unacknowledged data at `to`. Returns whether anything moved.
    pub(crate) fn split_relay(&mut self, from: usize, to: usize) -> bool {
        let limit = u64::from(self.nodes[self.sockets[to].node.index()].tcp.rcv_wnd);
        let room = limit.saturating_sub(self.sockets[to].tcp.bytes_unacked());
        let n = self.sockets[from].tcp.read(room);
        if n > 0 {
            self.sockets[to].tcp.send(n);
        }
        n > 0
    }
}
