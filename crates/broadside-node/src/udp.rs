//! Batched datagram I/O for the node (Linux): datagrams are written into one
//! reusable [`Batch`] (by the endpoint's `poll_transmits`, or copied in by
//! [`BatchSocket::queue`]) and sent with `sendmmsg`, or — where the kernel
//! has UDP GSO — as one `sendmsg` per run of equal-size datagrams to one peer;
//! they are received with `recvmmsg` into preallocated buffers, with UDP GRO
//! where the kernel has it (a coalesced buffer is split at its segment
//! size). The socket stays non-blocking; waiting is one `ppoll` with a
//! nanosecond timeout. Nothing here allocates per datagram.

use broadside::{Batch, Destination, PacketKind};
use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::socket::{
    self, sockopt, ControlMessage, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

/// Datagrams per `recvmmsg`.
pub const RECV_BATCH: usize = 32;
/// Datagrams queued before a send is forced.
pub const SEND_BATCH: usize = 64;
/// Bytes per receive slot: one datagram, or one GRO train.
const SLOT: usize = 65_536;
/// Most segments in one GSO send (the kernel's limit is 64, and 64 KiB in all).
const GSO_MAX_SEGMENTS: usize = 64;

/// Send and receive counts since the socket was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Send system calls.
    pub send_calls: u64,
    /// Datagrams handed to the kernel.
    pub sent: u64,
    /// Datagrams dropped because the socket buffer stayed full or the send failed.
    pub send_dropped: u64,
    /// Receive system calls that returned data.
    pub recv_calls: u64,
    /// Datagrams received (GRO trains counted per datagram).
    pub received: u64,
}

/// A non-blocking UDP socket with batched send and receive.
pub struct BatchSocket {
    socket: UdpSocket,
    gso: bool,
    gro: bool,
    tx: Batch<SocketAddr>,
    rx: Vec<u8>,
    stats: IoStats,
}

thread_local! {
    // The kernel's message headers hold raw pointers, so they are not `Send`
    // and cannot live in the (movable) socket: one set per thread, made once.
    static HEADERS: RefCell<(MultiHeaders<SockaddrStorage>, MultiHeaders<SockaddrStorage>)> =
        RefCell::new((
            rx_headers(),
            MultiHeaders::preallocate(SEND_BATCH, None),
        ));
}

fn rx_headers() -> MultiHeaders<SockaddrStorage> {
    MultiHeaders::preallocate(RECV_BATCH, Some(nix::cmsg_space!(i32)))
}

fn storage_addr(s: &SockaddrStorage) -> Option<SocketAddr> {
    s.as_sockaddr_in()
        .map(|a| SocketAddr::from(*a))
        .or_else(|| s.as_sockaddr_in6().map(|a| SocketAddr::from(*a)))
}

impl BatchSocket {
    /// Wraps `socket` (made non-blocking) for datagrams of at most
    /// `packet_size` bytes; turns GSO and GRO on where the kernel has them,
    /// unless `offload` is false.
    pub fn new(socket: UdpSocket, packet_size: usize, offload: bool) -> std::io::Result<Self> {
        socket.set_nonblocking(true)?;
        let gso = offload && socket::getsockopt(&socket, sockopt::UdpGsoSegment).is_ok();
        let gro = offload && socket::setsockopt(&socket, sockopt::UdpGroSegment, &true).is_ok();
        Ok(BatchSocket {
            socket,
            gso,
            gro,
            tx: Batch {
                buf: Vec::with_capacity(SEND_BATCH * packet_size.max(1)),
                items: Vec::with_capacity(SEND_BATCH),
            },
            rx: vec![0; RECV_BATCH * SLOT],
            stats: IoStats::default(),
        })
    }

    /// The underlying socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Whether UDP GSO (send) and GRO (receive) are in use.
    pub fn offload(&self) -> (bool, bool) {
        (self.gso, self.gro)
    }

    /// Counts so far.
    pub fn stats(&self) -> IoStats {
        self.stats
    }

    /// Datagrams queued and not yet sent.
    pub fn queued(&self) -> usize {
        self.tx.items.len()
    }

    /// The queue, for a driver to append to (up to [`SEND_BATCH`]
    /// datagrams before a [`flush`](Self::flush)).
    pub fn batch(&mut self) -> &mut Batch<SocketAddr> {
        &mut self.tx
    }

    /// Queues one datagram (copied); sends the queue first if it is full.
    pub fn queue(&mut self, to: SocketAddr, payload: &[u8]) -> Vec<std::io::Error> {
        let errors = if self.tx.items.len() >= SEND_BATCH {
            self.flush(&[])
        } else {
            Vec::new()
        };
        let start = self.tx.buf.len();
        self.tx.buf.extend_from_slice(payload);
        self.tx.items.push((
            Destination::Peer(to),
            start..self.tx.buf.len(),
            PacketKind::Data,
        ));
        errors
    }

    /// The unicast destination and byte range of queued datagram `i`.
    fn entry(&self, i: usize) -> (Option<SocketAddr>, usize, usize) {
        let (d, r, _) = &self.tx.items[i];
        let to = match d {
            Destination::Peer(a) => Some(*a),
            Destination::Broadcast => None,
        };
        (to, r.start, r.len())
    }

    /// Sends everything queued, broadcasts to each of `broadcast`; returns
    /// the errors met (other than a full buffer, which is waited out for a
    /// moment). The result is empty, and allocates nothing, when all went well.
    pub fn flush(&mut self, broadcast: &[SocketAddr]) -> Vec<std::io::Error> {
        let mut errors = Vec::new();
        let mut i = 0;
        while i < self.tx.items.len() {
            let (to, start, len) = self.entry(i);
            let Some(to) = to else {
                for &b in broadcast {
                    if let Err(e) = self.send_one(b, start, len) {
                        self.stats.send_dropped += 1;
                        errors.push(std::io::Error::from(e));
                    } else {
                        self.stats.sent += 1;
                    }
                }
                i += 1;
                continue;
            };
            // A run: same destination, equal sizes (the last may be shorter).
            let mut j = i + 1;
            let mut bytes = len;
            while self.gso && j < self.tx.items.len() && j - i < GSO_MAX_SEGMENTS {
                let (next, _, next_len) = self.entry(j);
                if next != Some(to)
                    || self.entry(j - 1).2 != len
                    || next_len > len
                    || bytes + next_len > 65_000
                {
                    break;
                }
                bytes += next_len;
                j += 1;
            }
            let sent = if j - i > 1 {
                self.send_gso(to, start, bytes, len)
            } else if self.gso {
                self.send_one(to, start, len)
            } else {
                self.send_many(i)
            };
            match sent {
                Ok(n) => {
                    self.stats.sent += n as u64;
                    i += if j - i > 1 { j - i } else { n.max(1) };
                }
                Err(Errno::EAGAIN) => {
                    if !self.wait(PollFlags::POLLOUT, Duration::from_millis(5)) {
                        self.stats.send_dropped += (j - i) as u64;
                        i = j;
                    }
                }
                Err(Errno::EIO) if j - i > 1 => {
                    // The device cannot segment: stop using GSO.
                    self.gso = false;
                }
                Err(e) => {
                    self.stats.send_dropped += (j - i) as u64;
                    errors.push(std::io::Error::from(e));
                    i = j;
                }
            }
        }
        self.tx.clear();
        errors
    }

    fn send_gso(
        &mut self,
        to: SocketAddr,
        start: usize,
        bytes: usize,
        seg: usize,
    ) -> nix::Result<usize> {
        self.stats.send_calls += 1;
        let iov = [IoSlice::new(&self.tx.buf[start..start + bytes])];
        let seg = seg as u16;
        let cmsg = [ControlMessage::UdpGsoSegments(&seg)];
        let addr = SockaddrStorage::from(to);
        socket::sendmsg(
            self.socket.as_raw_fd(),
            &iov,
            &cmsg,
            MsgFlags::empty(),
            Some(&addr),
        )?;
        Ok(bytes.div_ceil(seg as usize))
    }

    fn send_one(&mut self, to: SocketAddr, start: usize, len: usize) -> nix::Result<usize> {
        self.stats.send_calls += 1;
        let addr = SockaddrStorage::from(to);
        socket::sendto(
            self.socket.as_raw_fd(),
            &self.tx.buf[start..start + len],
            &addr,
            MsgFlags::empty(),
        )?;
        Ok(1)
    }

    /// One `sendmmsg` of the unicast run of the queue from entry `from` on
    /// (at least one); returns how many went.
    fn send_many(&mut self, from: usize) -> nix::Result<usize> {
        self.stats.send_calls += 1;
        let mut iovs: [[IoSlice<'_>; 1]; SEND_BATCH] = [[IoSlice::new(&[])]; SEND_BATCH];
        let mut addrs: [Option<SockaddrStorage>; SEND_BATCH] = [None; SEND_BATCH];
        let mut n = 0;
        for (d, r, _) in self.tx.items[from..].iter().take(SEND_BATCH) {
            let Destination::Peer(to) = d else { break };
            iovs[n] = [IoSlice::new(&self.tx.buf[r.clone()])];
            addrs[n] = Some(SockaddrStorage::from(*to));
            n += 1;
        }
        let cmsgs: [ControlMessage<'_>; 0] = [];
        let fd = self.socket.as_raw_fd();
        HEADERS.with_borrow_mut(|(_, tx)| {
            socket::sendmmsg(fd, tx, &iovs[..n], &addrs[..n], cmsgs, MsgFlags::empty())
                .map(|r| r.count())
        })
    }

    /// Waits until the socket is ready for `what` or `timeout` passes (a
    /// signal ends the wait early). Returns whether it is ready.
    pub fn wait(&self, what: PollFlags, timeout: Duration) -> bool {
        let mut fds = [PollFd::new(self.socket.as_fd(), what)];
        matches!(ppoll(&mut fds, Some(TimeSpec::from_duration(timeout)), None), Ok(n) if n > 0)
    }

    /// Receives up to [`RECV_BATCH`] buffers without waiting and calls
    /// `each(from, datagram)` for every datagram in them. Returns how many
    /// datagrams there were (0: nothing waiting).
    pub fn receive(&mut self, mut each: impl FnMut(SocketAddr, &[u8])) -> std::io::Result<usize> {
        let mut got: [(Option<SocketAddr>, usize, usize); RECV_BATCH] = [(None, 0, 0); RECV_BATCH];
        let fd = self.socket.as_raw_fd();
        let rx = &mut self.rx;
        let n = HEADERS.with_borrow_mut(|(headers, _)| {
            let mut chunks = rx.chunks_mut(SLOT);
            let mut iovs: [[IoSliceMut<'_>; 1]; RECV_BATCH] =
                std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or_default())]);
            let res = match socket::recvmmsg(
                fd,
                headers,
                iovs.iter_mut(),
                MsgFlags::MSG_DONTWAIT,
                None,
            ) {
                Ok(r) => r,
                Err(Errno::EAGAIN | Errno::EINTR | Errno::ECONNREFUSED) => return Ok(0),
                Err(e) => return Err(std::io::Error::from(e)),
            };
            let mut n = 0;
            for (k, msg) in res.enumerate() {
                let stride = msg
                    .cmsgs()
                    .ok()
                    .and_then(|mut c| {
                        c.find_map(|m| match m {
                            ControlMessageOwned::UdpGroSegments(s) => Some(s as usize),
                            _ => None,
                        })
                    })
                    .unwrap_or(msg.bytes);
                got[k] = (
                    msg.address.as_ref().and_then(storage_addr),
                    msg.bytes,
                    stride,
                );
                n = k + 1;
            }
            // The kernel overwrote the control-buffer lengths of the slots it
            // filled, and nix does not reset them: fresh headers for the next
            // batch (one allocation per batch), or GRO sizes would be lost.
            if n > 0 {
                *headers = rx_headers();
            }
            Ok(n)
        })?;
        if n == 0 {
            return Ok(0);
        }
        self.stats.recv_calls += 1;
        let mut datagrams = 0;
        for (k, &(from, len, stride)) in got[..n].iter().enumerate() {
            let Some(from) = from else { continue };
            let slot = &self.rx[k * SLOT..k * SLOT + len.min(SLOT)];
            for d in slot.chunks(stride.max(1)) {
                datagrams += 1;
                each(from, d);
            }
        }
        self.stats.received += datagrams as u64;
        Ok(datagrams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(offload: bool) -> (BatchSocket, BatchSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        (
            BatchSocket::new(a, 2304, offload).unwrap(),
            BatchSocket::new(b, 2304, offload).unwrap(),
        )
    }

    fn exchange(offload: bool) {
        let (mut a, mut b) = pair(offload);
        let to = b.socket().local_addr().unwrap();
        let from = a.socket().local_addr().unwrap();
        // 100 datagrams: runs of full ones, a short one, then small ones;
        // sent 25 at a time so that the default receive buffer holds them.
        let mut sent = Vec::new();
        let mut got = Vec::new();
        for i in 0..100u32 {
            let len = match i {
                0..=69 => 2304,
                70 => 1000,
                _ => 10 + i as usize,
            };
            let d: Vec<u8> = (0..len).map(|j| (i as usize * 7 + j) as u8).collect();
            assert!(a.queue(to, &d).is_empty());
            sent.push(d);
            if sent.len() % 25 != 0 {
                continue;
            }
            assert!(a.flush(&[]).is_empty());
            while got.len() < sent.len() {
                assert!(
                    b.wait(PollFlags::POLLIN, Duration::from_secs(5)),
                    "nothing arrived"
                );
                b.receive(|f, d| {
                    assert_eq!(f, from);
                    got.push(d.to_vec());
                })
                .unwrap();
            }
        }
        assert_eq!(got, sent);
        let s = a.stats();
        assert_eq!(s.sent, 100);
        assert!(s.send_calls < 100, "{s:?}");
        assert_eq!(b.stats().received, 100);
    }

    #[test]
    fn batched_send_and_receive_keep_every_datagram_and_its_order_with_offload() {
        exchange(true);
    }

    #[test]
    fn batched_send_and_receive_keep_every_datagram_and_its_order_without_offload() {
        exchange(false);
    }
}
