//! Split TCP at the access point (Indirect-TCP, Bakre & Badrinath 1995), the
//! connection splitting Hadaller et al. (2007, §7.3) recommend so that the
//! AP, not a remote server, chooses the TCP behaviour over the wireless hop.
//!
//! An AP with `split_tcp = true` intercepts every SYN it would forward (the
//! network layer offers it, [`crate::net::NetOutput::Intercept`]) and
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

use super::{Owner, Socket, SocketOutput, Sockets};
use crate::packet::{Body, Packet};
use crate::trace::ConnEvent;
use crate::transport::tcp::Tcp;
use crate::units::SimTime;

impl Sockets {
    /// This node splits TCP and is about to forward `p`: if `p` belongs to
    /// a split connection (or opens one), the proxy takes it. Returns
    /// whether it did.
    pub fn intercept(&mut self, now: SimTime, p: &Packet) -> bool {
        let Body::Tcp(seg) = p.body else { return false };
        if let Some(i) = self.find(p.dst, p.src, seg.src_port, seg.dst_port) {
            self.socks[i].tcp.handle_segment(now, &seg);
            self.drive(now, i);
            return true;
        }
        if !seg.flags.syn || seg.flags.ack {
            return false;
        }
        let (near, far) = (self.socks.len(), self.socks.len() + 1);
        let mut accept = Tcp::listen(self.cfg.clone(), seg.dst_port, self.iss(near));
        accept.set_manual_read();
        let mut connect = Tcp::connect(
            now,
            self.cfg.clone(),
            seg.src_port,
            seg.dst_port,
            self.iss(far),
        );
        connect.set_manual_read();
        self.push(Socket::new(
            p.dst,
            p.src,
            (seg.dst_port, seg.src_port),
            accept,
            Owner::Proxy { twin: far },
            now,
        ));
        self.push(Socket::new(
            p.src,
            p.dst,
            (seg.src_port, seg.dst_port),
            connect,
            Owner::Proxy { twin: near },
            now,
        ));
        self.out.push_back(SocketOutput::Conn {
            peer: p.dst,
            event: ConnEvent::Syn,
            value: 0.0,
        });
        self.flush(now, far);
        self.socks[near].tcp.handle_segment(now, &seg);
        self.drive(now, near);
        true
    }

    /// Moves what half `from` has received to half `to`, up to one window of
    /// unacknowledged data at `to`. Returns whether anything moved.
    pub(super) fn relay(&mut self, from: usize, to: usize) -> bool {
        let limit = u64::from(self.cfg.rcv_wnd);
        let room = limit.saturating_sub(self.socks[to].tcp.bytes_unacked());
        let n = self.socks[from].tcp.read(room);
        if n > 0 {
            self.socks[to].tcp.send(n);
        }
        n > 0
    }
}
