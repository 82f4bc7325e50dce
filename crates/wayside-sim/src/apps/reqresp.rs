//! The request-response application started by a multicast trigger, after
//! Ott & Kutscher's tcpx (2004, §III-A): the server multicasts a periodic UDP
//! trigger and listens for connections; a client that hears a trigger opens
//! a TCP connection and runs a series of request-response exchanges — it
//! sends `request` bytes, the server answers with `response` bytes once the
//! whole request has arrived, and the client sends the next request once the
//! whole response has arrived — until `exchanges` are done or the run ends.
//!
//! The client logs each trigger it hears (`trigger-heard`, value: the
//! trigger's sequence number) and each completed exchange (`exchange`,
//! value: seconds from queuing the request to the last response byte; the
//! first exchange includes the handshake). If the connection is lost (TCP
//! gives up or is reset), the next trigger starts a new one, with the
//! exchanges still to do; a client that has made all its exchanges ignores
//! further triggers. tcpx's initial configuration message (the exchange
//! specification) is not modelled: both sides know it from the scenario.

use super::ip::AppKind;
use super::{AppOutput, Apps};
use crate::packet::Datagram;
use crate::packet::{Body, Packet, ALL_HOSTS};
use crate::sockets::Sockets;
use crate::trace::ConnEvent;
use crate::transport::tcp::State;
use crate::units::SimTime;

impl Apps {
    /// The server multicasts the next trigger of application `id`.
    pub(super) fn send_trigger(&mut self, now: SimTime, id: u32, bytes: u32) {
        let me = self.me;
        let app = self.app(id);
        let (port, seq) = (app.cfg.port, app.seq);
        app.seq += 1;
        let datagram = Datagram::sized(port, port, bytes);
        self.out.push_back(AppOutput::Packet(Packet::new(
            me,
            ALL_HOSTS,
            Body::Udp {
                datagram,
                app: id,
                seq,
                sent: now,
            },
        )));
    }

    /// The client heard trigger `seq` of application `id`: it connects,
    /// unless a session is live or its exchanges are done.
    pub(super) fn trigger_heard(&mut self, now: SimTime, id: u32, seq: u64, sockets: &mut Sockets) {
        let app = self.app(id);
        let AppKind::RequestResponse {
            request, exchanges, ..
        } = app.cfg.kind
        else {
            return;
        };
        if now >= app.cfg.stop {
            return;
        }
        let (server, port) = (app.cfg.from, app.cfg.port);
        self.conn(server, ConnEvent::TriggerHeard, seq as f64);
        let app = self.app(id);
        let live = app
            .session
            .is_some_and(|s| sockets.get(s).tcp.state() != State::Closed);
        if app.completed >= exchanges || live {
            return;
        }
        let s = sockets.connect(now, server, port, id, request);
        self.app(id).session = Some(s);
    }

    /// Socket `i` of application `id` had input: answer each complete
    /// request (server) or log each complete response and ask again
    /// (client); a Broadside-IP end reads its datagrams. Returns whether
    /// data was queued on the socket. `room`: MSDUs the MAC queue takes now.
    pub fn handle_readable(
        &mut self,
        now: SimTime,
        id: u32,
        i: usize,
        room: usize,
        sockets: &mut Sockets,
    ) -> bool {
        if self.app(id).broadside.is_some() {
            self.broadside_readable(now, id, i, room, sockets);
            return false; // it flushed what it wrote
        }
        let me = self.me;
        let app = self.app(id);
        let AppKind::RequestResponse {
            request,
            response,
            exchanges,
            ..
        } = app.cfg.kind
        else {
            return false;
        };
        let server = app.cfg.from;
        let s = sockets.get_mut(i);
        let received = s.tcp.bytes_received();
        let mut queued = false;
        if me == server {
            while received >= (s.exchanges + 1) * request {
                s.exchanges += 1;
                s.tcp.send(response);
                queued = true;
            }
            return queued;
        }
        while received >= (sockets.get(i).exchanges + 1) * response
            && self.app(id).completed < exchanges
        {
            let s = sockets.get_mut(i);
            s.exchanges += 1;
            let took = (now - s.exchange_start).as_secs_f64();
            let app = self.app(id);
            app.completed += 1;
            if app.completed < exchanges {
                let s = sockets.get_mut(i);
                s.tcp.send(request);
                s.exchange_start = now;
                queued = true;
            }
            self.conn(server, ConnEvent::Exchange, took);
        }
        queued
    }
}
