//! A node's sockets as a sans-IO layer ([`Sockets`]): its TCP connections
//! (each one sans-IO [`Tcp`]) and listening ports, between the network
//! layer below and the applications above. Inputs are segments for this
//! host (`handle_packet`), timer expiries (`handle_timeout`) and the
//! applications' calls (`connect`, `listen`, `flush` after queuing data); outputs come
//! out of [`Sockets::poll`] in the order they were produced: packets to
//! send, timers, connection events, ACK samples, in-order data deliveries,
//! and "readable" notices for the owning application.
//!
//! A socket belongs to an application or is one half of a split-TCP proxy
//! ([`split`]); a proxy half speaks with the address of the host it stands
//! in for, and its data is relayed, not delivered (no deliveries, no
//! first/last-data events).

pub mod split;
pub mod stream;

use crate::ids::NodeId;
use crate::packet::{Body, Packet};
use crate::rng::Stream;
use crate::trace::ConnEvent;
use crate::transport::tcp::{Tcp, TcpConfig, TcpEvent};
use crate::units::SimTime;
use std::collections::VecDeque;
use stream::ByteStream;

/// Who a socket's data is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// An application (its index in the scenario).
    App(u32),
    /// A split-TCP proxy half; `twin` is the socket of the other half.
    Proxy { twin: usize },
}

/// One TCP connection endpoint.
pub struct Socket {
    /// The address it sends from and answers to: this node's, except for a
    /// proxy half, which stands in for the far host.
    pub addr: NodeId,
    pub peer: NodeId,
    pub local_port: u16,
    pub remote_port: u16,
    pub tcp: Tcp,
    pub owner: Owner,
    /// Application messages completed on this connection (request-response).
    pub exchanges: u64,
    /// When the message now awaited was requested (request-response client).
    pub exchange_start: SimTime,
    /// The connection's bytes, if it carries an application's bytes.
    pub stream: Option<ByteStream>,
    /// Generation of the scheduled timer; stale timer events are ignored.
    generation: u32,
    armed: Option<SimTime>,
    received: u64,
    last_data: Option<SimTime>,
}

impl Socket {
    fn new(
        addr: NodeId,
        peer: NodeId,
        ports: (u16, u16),
        tcp: Tcp,
        owner: Owner,
        now: SimTime,
    ) -> Socket {
        Socket {
            addr,
            peer,
            local_port: ports.0,
            remote_port: ports.1,
            tcp,
            owner,
            exchanges: 0,
            exchange_start: now,
            stream: None,
            generation: 0,
            armed: None,
            received: 0,
            last_data: None,
        }
    }
}

/// A listening port: a new connection is accepted for every SYN.
struct Listener {
    port: u16,
    app: u32,
    /// Its connections carry bytes ([`Sockets::listen_stream`]).
    stream: bool,
}

/// What the sockets layer asks of the node around it.
#[derive(Debug)]
pub enum SocketOutput {
    /// A packet for the network layer.
    Send(Packet),
    /// A connection event for the trace.
    Conn {
        peer: NodeId,
        event: ConnEvent,
        value: f64,
    },
    /// A TCP ACK sample ([`TcpEvent::AckSample`]) for the trace.
    Sample { peer: NodeId, sample: TcpEvent },
    /// `new` bytes arrived in order for application `app` (`total` so far).
    Data {
        peer: NodeId,
        app: u32,
        total: u64,
        new: u64,
    },
    /// Socket `socket` of application `app` had input: the application may
    /// act on it (and then [`Sockets::flush`] it).
    Readable { socket: usize, app: u32 },
    /// Arm socket `socket`'s timer for `at`; another generation is void.
    Timer {
        socket: u32,
        at: SimTime,
        generation: u32,
    },
}

/// A node's sockets.
pub struct Sockets {
    me: NodeId,
    /// The node's TCP configuration (every socket here runs it).
    cfg: TcpConfig,
    /// (seed, run, node name): the key of the initial sequence numbers.
    iss_key: (u64, u64, String),
    socks: Vec<Socket>,
    listeners: Vec<Listener>,
    out: VecDeque<SocketOutput>,
}

impl Sockets {
    pub fn new(me: NodeId, cfg: TcpConfig, seed: u64, run: u64, name: &str) -> Sockets {
        Sockets {
            me,
            cfg,
            iss_key: (seed, run, name.to_string()),
            socks: Vec::new(),
            listeners: Vec::new(),
            out: VecDeque::new(),
        }
    }

    /// The next output, oldest first.
    pub fn poll(&mut self) -> Option<SocketOutput> {
        self.out.pop_front()
    }

    pub fn get(&self, i: usize) -> &Socket {
        &self.socks[i]
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Socket {
        &mut self.socks[i]
    }

    /// The initial sequence number of the socket that will be number `i`.
    fn iss(&self, i: usize) -> u32 {
        let (seed, run, name) = &self.iss_key;
        let mut s = Stream::new("run", *seed, *run, &format!("tcp-iss/{name}/{i}"));
        (s.uniform() * u32::MAX as f64) as u32
    }

    fn push(&mut self, s: Socket) -> usize {
        self.socks.push(s);
        self.socks.len() - 1
    }

    /// Opens a connection to `peer:port` for application `app` and queues
    /// `bytes` to send; returns the socket.
    pub fn connect(
        &mut self,
        now: SimTime,
        peer: NodeId,
        port: u16,
        app: u32,
        bytes: u64,
    ) -> usize {
        let local_port = 40_000 + (self.socks.len() % 20_000) as u16;
        let mut tcp = Tcp::connect(
            now,
            self.cfg.clone(),
            local_port,
            port,
            self.iss(self.socks.len()),
        );
        tcp.send(bytes);
        let i = self.push(Socket::new(
            self.me,
            peer,
            (local_port, port),
            tcp,
            Owner::App(app),
            now,
        ));
        self.out.push_back(SocketOutput::Conn {
            peer,
            event: ConnEvent::Syn,
            value: 0.0,
        });
        self.drive(now, i);
        i
    }

    /// Accepts connections to `port` for application `app`.
    pub fn listen(&mut self, port: u16, app: u32) {
        self.listeners.push(Listener {
            port,
            app,
            stream: false,
        });
    }

    /// Opens a connection to `peer:port` for application `app` that
    /// carries bytes ([`Sockets::write`], [`Sockets::take`]); returns the
    /// socket.
    pub fn connect_stream(&mut self, now: SimTime, peer: NodeId, port: u16, app: u32) -> usize {
        let iss = self.iss(self.socks.len());
        let i = self.connect(now, peer, port, app, 0);
        self.socks[i].stream = Some(ByteStream::new(iss));
        i
    }

    /// Accepts connections to `port` for application `app` that carry bytes.
    pub fn listen_stream(&mut self, port: u16, app: u32) {
        self.listeners.push(Listener {
            port,
            app,
            stream: true,
        });
    }

    /// Sends `data` on socket `i`, a connection that carries bytes.
    pub fn write(&mut self, now: SimTime, i: usize, data: &[u8]) {
        let s = &mut self.socks[i];
        s.stream
            .as_mut()
            .expect("a socket that carries bytes")
            .write(data);
        s.tcp.send(data.len() as u64);
        self.flush(now, i);
    }

    /// The bytes socket `i` delivered in order since the last call.
    pub fn take(&mut self, i: usize) -> Vec<u8> {
        self.socks[i]
            .stream
            .as_mut()
            .map(ByteStream::take)
            .unwrap_or_default()
    }

    /// Drops socket `i`'s connection at once, sending nothing.
    pub fn abort(&mut self, now: SimTime, i: usize) {
        self.socks[i].tcp.abort();
        self.flush(now, i);
    }

    /// The socket for a segment from `from` to address `addr`.
    fn find(&self, addr: NodeId, from: NodeId, src_port: u16, dst_port: u16) -> Option<usize> {
        self.socks.iter().position(|s| {
            s.addr == addr
                && s.peer == from
                && s.local_port == dst_port
                && s.remote_port == src_port
        })
    }

    /// A TCP packet for this host: to its socket, or to a listener (a SYN).
    pub fn handle_packet(&mut self, now: SimTime, p: Packet) {
        let Body::Tcp(seg) = p.body else { return };
        let i = match self.find(p.dst, p.src, seg.src_port, seg.dst_port) {
            Some(i) => i,
            None => {
                let Some(l) = self.listeners.iter().find(|l| l.port == seg.dst_port) else {
                    return;
                };
                if !seg.flags.syn || seg.flags.ack {
                    return;
                }
                let (app, stream, iss) = (l.app, l.stream, self.iss(self.socks.len()));
                let tcp = Tcp::listen(self.cfg.clone(), seg.dst_port, iss);
                let mut sock = Socket::new(
                    self.me,
                    p.src,
                    (seg.dst_port, seg.src_port),
                    tcp,
                    Owner::App(app),
                    now,
                );
                sock.stream = stream.then(|| ByteStream::new(iss));
                self.push(sock)
            }
        };
        let s = &mut self.socks[i];
        if let Some(st) = s.stream.as_mut() {
            st.arrive(seg.flags.syn, seg.seq, p.stream.as_ref());
        }
        s.tcp.handle_segment(now, &seg);
        if let Some(st) = s.stream.as_mut() {
            st.acked(s.tcp.bytes_acked());
            st.deliver(s.tcp.bytes_received());
        }
        self.drive(now, i);
    }

    /// Socket `socket`'s timer of `generation` fired.
    pub fn handle_timeout(&mut self, now: SimTime, socket: usize, generation: u32) {
        let s = &mut self.socks[socket];
        if s.generation != generation {
            return;
        }
        s.armed = None;
        s.tcp.handle_timeout(now);
        self.drive(now, socket);
    }

    /// After an input to socket `i`: drains its output and lets its owner
    /// act on what arrived (an application, through
    /// [`SocketOutput::Readable`]; a proxy, by relaying here).
    fn drive(&mut self, now: SimTime, i: usize) {
        self.flush(now, i);
        match self.socks[i].owner {
            Owner::App(app) => self
                .out
                .push_back(SocketOutput::Readable { socket: i, app }),
            Owner::Proxy { twin } => {
                if self.relay(i, twin) | self.relay(twin, i) {
                    self.flush(now, i);
                    self.flush(now, twin);
                }
            }
        }
    }

    /// Drains socket `i`'s transmissions and events and re-arms its timer.
    pub fn flush(&mut self, now: SimTime, i: usize) {
        let s = &mut self.socks[i];
        let (addr, peer) = (s.addr, s.peer);
        while let Some(seg) = s.tcp.poll_transmit(now) {
            let stream = s
                .stream
                .as_ref()
                .and_then(|st| st.segment(seg.seq, seg.len));
            self.out.push_back(SocketOutput::Send(Packet {
                stream,
                ..Packet::new(addr, peer, Body::Tcp(seg))
            }));
        }
        while let Some(ev) = s.tcp.poll_event() {
            let conn = |event, value| SocketOutput::Conn { peer, event, value };
            self.out.push_back(match ev {
                TcpEvent::Established => conn(ConnEvent::Established, 0.0),
                TcpEvent::SynRetransmit { attempt } => {
                    conn(ConnEvent::SynRetransmit, attempt as f64)
                }
                TcpEvent::Timeout { rto, .. } => conn(ConnEvent::TcpTimeout, rto.as_secs_f64()),
                TcpEvent::GaveUp => conn(ConnEvent::TcpGaveUp, 0.0),
                sample @ TcpEvent::AckSample { .. } => SocketOutput::Sample { peer, sample },
                TcpEvent::FastRetransmit | TcpEvent::Closed | TcpEvent::Reset => continue,
            });
        }
        let received = s.tcp.bytes_received();
        if let (Owner::App(app), true) = (s.owner, received > s.received) {
            if s.received == 0 {
                self.out.push_back(SocketOutput::Conn {
                    peer,
                    event: ConnEvent::FirstData,
                    value: 0.0,
                });
            }
            let new = received - s.received;
            s.received = received;
            s.last_data = Some(now);
            self.out.push_back(SocketOutput::Data {
                peer,
                app,
                total: received,
                new,
            });
        }
        let next = s.tcp.poll_timeout();
        if next != s.armed {
            s.generation = s.generation.wrapping_add(1);
            s.armed = next;
            if let Some(t) = next {
                self.out.push_back(SocketOutput::Timer {
                    socket: i as u32,
                    at: t.max(now),
                    generation: s.generation,
                });
            }
        }
    }

    /// At the end of a run: when each receiving socket got its last data
    /// byte, from whom, and how many bytes it got in all.
    pub fn last_data(&self) -> impl Iterator<Item = (SimTime, NodeId, u64)> + '_ {
        self.socks
            .iter()
            .filter_map(|s| s.last_data.map(|t| (t, s.peer, s.received)))
    }
}

#[cfg(test)]
mod tests;
