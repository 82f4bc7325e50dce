//! How the world applies what a node wants done ([`Effect`]): frames go on
//! the air, timers into the event queue, wired frames onto their links,
//! and trace rows into the trace, each row with the positions mobility
//! gives at its time; beacons and reachable peers let the script start
//! applications.

use super::World;
use crate::apps::Arrival;
use crate::event::Event;
use crate::geometry::Vec2;
use crate::ids::{NodeId, TxId};
use crate::mac::Frame;
use crate::node::effects::{Effect, MacRecord};
use crate::phy::mode::Mode;
use crate::script::Start;
use crate::trace::{
    ConnEvent, DropReason, EventRow, FrameRow, MacRow, PhyEvent, TcpRow, TransportRow, TxOutcome,
};
use crate::transport::tcp::TcpEvent;
use crate::units::{Db, Dbm, SimTime};
use crate::wire::WireFrame;

impl World {
    /// Applies, oldest first, the effects `node` left while handling an
    /// input at `now`.
    pub(super) fn apply(&mut self, node: NodeId, now: SimTime) {
        let mut effects = std::mem::take(&mut self.effects);
        for effect in effects.drain() {
            match effect {
                Effect::Transmit {
                    frame,
                    mode,
                    end,
                    channel,
                    tx_power,
                    awaits,
                } => self.transmit(now, node, frame, mode, end, (channel, tx_power), awaits),
                Effect::Schedule { at, event } => self.queue.schedule(at, node.0, event),
                Effect::Emit { source, at } => {
                    let key = self.nodes.len() as u32 + source;
                    self.queue
                        .schedule(at, key, Event::Traffic { node, source });
                }
                Effect::Heard {
                    id,
                    event,
                    reason,
                    signal,
                    channel,
                } => {
                    if self.traced_at(node, id) {
                        let t = self.air.medium.tx(id);
                        let (frame, mode) = (t.frame.clone(), t.mode);
                        let at = (node, channel);
                        self.trace_frame(now, at, &frame, &mode, event, reason, Some(signal));
                    }
                }
                Effect::Lost {
                    id,
                    reason,
                    channel,
                } => self.trace_lost(now, (node, channel), id, reason),
                Effect::Outcome(outcome) => self.outcome(node, outcome),
                Effect::Conn { peer, event, value } => {
                    self.conn_event(now, node, peer, event, value)
                }
                Effect::Mac(record) => self.mac_row(now, node, record),
                Effect::Tcp { peer, sample } => self.tcp_row(now, node, peer, sample),
                Effect::Transport(arrival) => self.transport_row(now, node, arrival),
                Effect::Wire { link, frame } => self.wire_send(now, node, link, frame),
                Effect::ToHost(p) => self.to_host(now, node, p),
                Effect::Ready { peer, station } => {
                    for s in self.script.link_up(now, node, peer, station) {
                        self.schedule_start(s);
                    }
                }
                Effect::Beacon { ap } => {
                    let mgmt = &self.nodes[node.index()].mgmt;
                    let mut logged = None;
                    for (s, measured) in self.script.beacon(now, node, ap, mgmt) {
                        if logged != Some(s.app) {
                            logged = Some(s.app); // once per application, not per end
                            self.conn_event(now, node, ap.0, ConnEvent::Production, measured);
                        }
                        self.schedule_start(s);
                    }
                }
            }
        }
        self.effects = effects;
    }

    /// Schedules an application's start at its end.
    pub(super) fn schedule_start(&mut self, s: Start) {
        let event = Event::App {
            node: s.from,
            app: s.app,
        };
        self.queue.schedule(s.at, s.from.0, event);
    }

    /// Puts `frame` from `src` on the air at `mode` from `now` to `end`:
    /// records its `frames` row, and schedules its arrival at every radio
    /// it reaches and its end at `src`.
    #[allow(clippy::too_many_arguments)]
    fn transmit(
        &mut self,
        now: SimTime,
        src: NodeId,
        frame: Frame,
        mode: Mode,
        end: SimTime,
        (channel, tx_power): (u32, Dbm),
        awaits: bool,
    ) {
        let (tx, none) = (PhyEvent::Tx, DropReason::None);
        let row = self.trace_frame(now, (src, channel), &frame, &mode, tx, none, None);
        if awaits {
            self.awaiting[src.index()] = Some(row);
        }
        let nodes = &self.nodes;
        let radio = |j: NodeId| nodes[j.index()].radio();
        let mut reached = std::mem::take(&mut self.reached);
        let id = self.air.transmit(
            now,
            end,
            src,
            (channel, tx_power),
            frame,
            mode,
            radio,
            &mut reached,
        );
        for &(rx, delay, undetectable) in &reached {
            if undetectable && !self.undetectable_rows {
                self.wait_undetectable(rx, id, (now + delay, end + delay));
                continue;
            }
            self.queue
                .schedule(now + delay, rx.0, Event::RxStart { node: rx, tx: id });
            self.queue
                .schedule(end + delay, rx.0, Event::RxEnd { node: rx, tx: id });
        }
        self.reached = reached;
        self.queue
            .schedule(end, src.0, Event::TxEnd { node: src, tx: id });
    }

    /// Fills in the outcome of `node`'s frame awaiting a response.
    fn outcome(&mut self, node: NodeId, outcome: TxOutcome) {
        if let Some(row) = self.awaiting[node.index()].take() {
            let row = row - self.flushed_frames;
            self.trace.frames.set_outcome(row, outcome);
        }
    }

    /// Puts `frame` on wired link `link`; a full queue drops it (traced as
    /// `wire-drop`).
    fn wire_send(&mut self, now: SimTime, node: NodeId, link: usize, frame: WireFrame) {
        let Some((to, at)) = self.wires[link].send(now, node, frame.bytes()) else {
            let wire = &self.wires[link];
            let peer = match &frame {
                WireFrame::Ip(p) => p.dst,
                WireFrame::L2Update { .. } => wire.far_end(node),
            };
            let limit = wire.queue_limit as f64;
            self.conn_event(now, node, peer.0, ConnEvent::WireDrop, limit);
            return;
        };
        self.queue.schedule(
            at,
            node.0,
            Event::WireArrive {
                node: to,
                link: link as u32,
                frame: Box::new(frame),
            },
        );
    }

    /// Whether `node` should record what happens to frame `id` (addressed to
    /// it, or broadcast); overheard unicast is not traced, except by the sniffer.
    pub(super) fn traced_at(&self, node: NodeId, id: TxId) -> bool {
        self.air.medium.tx(id).frame.dst.is_for(node) || self.sniffer == Some(node)
    }

    /// Records an `events` row at `node` concerning `peer`.
    pub(super) fn conn_event(
        &mut self,
        now: SimTime,
        node: NodeId,
        peer: u32,
        event: ConnEvent,
        value: f64,
    ) {
        let p = self.air.position(node, now);
        self.trace.events.push(EventRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer,
            event,
            x: p.x as f32,
            y: p.y as f32,
            value,
        });
    }

    /// Records that `node` (tuned to a channel) lost frame `id` for
    /// `reason`, if it traces it.
    fn trace_lost(&mut self, now: SimTime, at: (NodeId, u32), id: TxId, reason: DropReason) {
        let node = at.0;
        if self.traced_at(node, id) {
            let t = self.air.medium.tx(id);
            let (frame, mode) = (t.frame.clone(), t.mode);
            let power = t.power_at(node);
            let noise = self.air.medium.channel().noise_floor;
            let extra = power.map(|p| (p.to_dbm(), p.to_dbm() - noise, Db(f64::NAN)));
            let undetectable = t.undetectable_at(node);
            let row = self.trace_frame(now, at, &frame, &mode, PhyEvent::Drop, reason, extra);
            if undetectable {
                self.trace.undetectable.rows.push(row as u32);
            }
        }
    }

    /// Records a `frames` row at `node`, tuned to a channel (and the frame
    /// in the capture, if there is one); returns the row (numbered from the
    /// run's first).
    #[allow(clippy::too_many_arguments)]
    fn trace_frame(
        &mut self,
        now: SimTime,
        (node, channel): (NodeId, u32),
        frame: &Frame,
        mode: &Mode,
        event: PhyEvent,
        reason: DropReason,
        signal: Option<(Dbm, Db, Db)>,
    ) -> usize {
        let pos = self.air.position(node, now);
        let peer = if event == PhyEvent::Tx {
            frame.dst.trace_id()
        } else {
            frame.src.0
        };
        let peer_pos = if peer == u32::MAX {
            Vec2::new(f64::NAN, f64::NAN)
        } else {
            self.air.position(NodeId(peer), now)
        };
        let (rssi, snr, sinr) = signal.map_or((f32::NAN, f32::NAN, f32::NAN), |(r, s, i)| {
            (r.0 as f32, s.0 as f32, i.0 as f32)
        });
        self.trace.frames.push(FrameRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer,
            event,
            reason,
            kind: frame.kind,
            rate_mbps: mode.rate.mbps() as f32,
            bytes: frame.psdu_bytes,
            seq: frame.seq,
            attempt: frame.attempt,
            x: pos.x as f32,
            y: pos.y as f32,
            peer_x: peer_pos.x as f32,
            peer_y: peer_pos.y as f32,
            rssi_dbm: rssi,
            snr_db: snr,
            sinr_db: sinr,
            outcome: TxOutcome::None,
        });
        if let Some(c) = &mut self.capture {
            let rssi = signal.map(|s| s.0);
            c.record(now, node, frame, mode, channel, event, reason, rssi);
        }
        self.flushed_frames + self.trace.frames.len() - 1
    }

    /// Records a `mac` row at `node`.
    fn mac_row(&mut self, now: SimTime, node: NodeId, r: MacRecord) {
        let p = self.air.position(node, now);
        self.trace.mac.push(MacRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer: r.peer,
            event: r.event,
            seq: r.seq,
            bytes: r.bytes,
            attempts: r.attempts.min(255) as u8,
            delay_ns: r.delay.as_ns(),
            x: p.x as f32,
            y: p.y as f32,
            content: r.content,
        });
    }

    /// Records a `tcp` row at `node` from a socket's ACK sample.
    fn tcp_row(&mut self, now: SimTime, node: NodeId, peer: NodeId, sample: TcpEvent) {
        let TcpEvent::AckSample {
            cwnd,
            ssthresh,
            srtt,
            rto,
            dupacks,
            in_flight,
            acked,
        } = sample
        else {
            return;
        };
        let pos = self.air.position(node, now);
        self.trace.tcp.push(TcpRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer: peer.0,
            cwnd,
            ssthresh,
            srtt_ms: srtt.map_or(f32::NAN, |t| (t.as_secs_f64() * 1e3) as f32),
            rto_ms: (rto.as_secs_f64() * 1e3) as f32,
            dupacks,
            in_flight,
            acked,
            x: pos.x as f32,
            y: pos.y as f32,
        });
    }

    /// Records a `transport` row at `node`.
    pub(super) fn transport_row(&mut self, now: SimTime, node: NodeId, a: Arrival) {
        let pos = self.air.position(node, now);
        self.trace.transport.push(TransportRow {
            time_ns: now.as_ns(),
            node: node.0,
            peer: a.peer.0,
            proto: a.proto,
            app: a.app,
            seq: a.seq,
            bytes: a.bytes,
            delay_ns: a.delay.as_ns(),
            x: pos.x as f32,
            y: pos.y as f32,
        });
    }
}
