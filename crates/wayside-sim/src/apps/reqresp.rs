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

use crate::apps::ip::AppKind;
use crate::ids::NodeId;
use crate::net::{Body, Packet, ALL_HOSTS};
use crate::world::World;
use crate::trace::ConnEvent;
use crate::transport::tcp::State;
use crate::transport::udp::Datagram;
use crate::units::SimTime;

impl World {
    /// The server multicasts trigger number `seq` of app `index`.
    pub(crate) fn send_trigger(&mut self, now: SimTime, index: u32, bytes: u32) {
        let app = &mut self.apps[index as usize];
        let (from, port, seq) = (app.cfg.from, app.cfg.port, app.seq);
        app.seq += 1;
        let datagram = Datagram { src_port: port, dst_port: port, len: bytes };
        self.net_send(now, from, Packet::new(from, ALL_HOSTS, Body::Udp { datagram, app: index, seq, sent: now }));
    }

    /// Whether `node` takes group packet `p`: it is the client of the
    /// application whose trigger it is.
    pub(crate) fn multicast_member(&self, node: NodeId, p: &Packet) -> bool {
        match p.body {
            Body::Udp { app, .. } => self.apps.get(app as usize).is_some_and(|a| a.cfg.to == node),
            _ => false,
        }
    }

    /// Client `node` heard trigger `seq` of app `index`.
    pub(crate) fn app_trigger(&mut self, now: SimTime, node: NodeId, index: u32, seq: u64) {
        let app = &self.apps[index as usize];
        let AppKind::RequestResponse { request, exchanges, .. } = app.cfg.kind else { return };
        if app.cfg.to != node || now >= app.cfg.stop {
            return;
        }
        let (server, port) = (app.cfg.from, app.cfg.port);
        self.conn_event(now, node, server.0, ConnEvent::TriggerHeard, seq as f64);
        let app = &self.apps[index as usize];
        let live = app.session.is_some_and(|s| self.sockets[s].tcp.state() != State::Closed);
        if app.completed >= exchanges || live {
            return;
        }
        let tcp = self.nodes[node.index()].tcp.clone();
        let s = self.tcp_connect(now, node, server, port, tcp, index, request);
        self.apps[index as usize].session = Some(s);
    }

    /// Socket `i` of app `index` received data: answer each complete request
    /// (server) or log each complete response and ask again (client).
    /// Returns whether data was queued.
    pub(crate) fn app_tcp_progress(&mut self, now: SimTime, index: u32, i: usize) -> bool {
        let cfg = &self.apps[index as usize].cfg;
        let AppKind::RequestResponse { request, response, exchanges, .. } = cfg.kind else { return false };
        let (server, client) = (cfg.from, cfg.to);
        let s = &mut self.sockets[i];
        let received = s.tcp.bytes_received();
        let mut queued = false;
        if s.node == server {
            while received >= (s.exchanges + 1) * request {
                s.exchanges += 1;
                s.tcp.send(response);
                queued = true;
            }
            return queued;
        }
        while received >= (self.sockets[i].exchanges + 1) * response && self.apps[index as usize].completed < exchanges {
            let s = &mut self.sockets[i];
            s.exchanges += 1;
            let took = (now - s.exchange_start).as_secs_f64();
            let app = &mut self.apps[index as usize];
            app.completed += 1;
            if app.completed < exchanges {
                let s = &mut self.sockets[i];
                s.tcp.send(request);
                s.exchange_start = now;
                queued = true;
            }
            self.conn_event(now, client, server.0, ConnEvent::Exchange, took);
        }
        queued
    }
}
