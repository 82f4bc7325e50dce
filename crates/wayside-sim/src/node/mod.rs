//! A node's stack and the pumps between its layers: the PHY, channel
//! access ([`crate::mac::dcf`]) with its link adaptation, management, the
//! network layer, sockets and applications (`host`). Each layer is a
//! sans-IO state machine; every input to a layer is followed by draining
//! that layer's outputs into the next one, or into the node's
//! [`Effects`]: what it wants done in the world around it (frames on the
//! air, timers, trace rows, wired frames), which the world applies. The
//! node reads the air ([`Air`]) only when a signal reaches its radio or its
//! rate control asks for an oracle. The pumps are here for the PHY, MAC
//! and management, and in `host` for the network layer, sockets and
//! applications.

mod adhoc;
pub mod effects;
mod host;
#[cfg(test)]
mod tests;

use crate::air::Air;
use crate::apps::broadside::RawDatagram;
use crate::apps::Apps;
use crate::config::{NodeConfig, SimConfig};
use crate::event::Event;
use crate::ids::{Dst, NodeId, TxId};
use crate::mac::adhoc::Adhoc;
use crate::mac::dcf::{self, Dcf, DcfEvent, MacTimer};
use crate::mac::links::{Links, Whereabouts};
use crate::mac::mgmt::{Mgmt, MgmtBody, MgmtConfig, MgmtEvent, MgmtFrame, MgmtTimer, MGMT_TRIES};
use crate::mac::queue::DropCause;
use crate::mac::{Frame, Msdu, Payload, SenderReport};
use crate::mobility::Mobility;
use crate::net::dhcp::DhcpClient;
use crate::net::route::{AddressPlan, Bss, Port};
use crate::net::{Net, NetSetup};
use crate::phy::mode::Mode;
use crate::phy::state::{Phy, RxStart};
use crate::ratectl::Stage;
use crate::rng::Stream;
use crate::sockets::Sockets;
use crate::trace::{DropReason, FrameKind, MacEvent, MsduContent, PhyEvent};
use crate::units::{Dbm, SimTime};
use effects::{Effect, Effects, MacRecord};
use std::sync::Arc;

/// One node's stack.
pub struct Node {
    pub id: NodeId,
    pub cfg: NodeConfig,
    pub phy: Phy,
    pub dcf: Dcf,
    /// Stream for PHY draws (preamble detection, bit errors).
    phy_rng: Stream,
    pub mgmt: Mgmt,
    /// Ad hoc membership, if the node joins an IBSS.
    pub adhoc: Option<Adhoc>,
    pub net: Net,
    pub sockets: Sockets,
    pub apps: Apps,
    /// The channel the radio is tuned to now.
    channel: u32,
    /// The radio is on: between the node's appearance and its
    /// disappearance ([`NodeConfig::appear`]).
    on: bool,
}

impl Node {
    /// The stacks of every node of scenario `cfg`, in order.
    pub fn all(cfg: &SimConfig) -> Vec<Node> {
        let plan = Arc::new(AddressPlan::new(
            cfg.nodes.iter().map(|n| n.radio).collect(),
            cfg.nodes.iter().map(|n| n.dhcp).collect(),
        ));
        let node = |(i, n)| Node::new(NodeId(i as u32), n, cfg, &plan);
        cfg.nodes.iter().enumerate().map(node).collect()
    }

    fn new(id: NodeId, n: &NodeConfig, cfg: &SimConfig, plan: &Arc<AddressPlan>) -> Node {
        let timing = n.standard.timing(cfg.radio.b_compatible);
        let links = Links::new(
            n.mac.rate.clone(),
            n.mac.modes,
            (cfg.seed, cfg.run, n.name.clone()),
        );
        let mac = n.mac.clone();
        let air = dcf::Air {
            standard: n.standard,
            preamble: cfg.radio.preamble,
            basic: cfg.radio.basic_rate,
        };
        let mac_rng = Stream::new("run", cfg.seed, cfg.run, &format!("mac/{}", n.name));
        let dcf = Dcf::new(id, mac, timing, air, links, mac_rng, n.tx_power);
        Node {
            id,
            cfg: n.clone(),
            phy: Phy::new(
                noise_floor(n, cfg.channel.noise_floor).to_mw(),
                cfg.radio.cca_threshold.to_mw(),
                cfg.radio.capture_margin,
            )
            .estimating_from_preamble(cfg.radio.ofdm_preamble_estimate),
            dcf,
            phy_rng: Stream::new("run", cfg.seed, cfg.run, &format!("phy/{}", n.name)),
            mgmt: Mgmt::new(
                n.role,
                MgmtConfig {
                    roaming: n.roaming.unwrap_or(cfg.mgmt.roaming),
                    scan_channels: n
                        .scan_channels
                        .clone()
                        .unwrap_or_else(|| cfg.mgmt.scan_channels.clone()),
                    ..cfg.mgmt.clone()
                },
                n.channel,
                Stream::new("run", cfg.seed, cfg.run, &format!("beacon/{}", n.name)),
            ),
            adhoc: n.adhoc.clone().map(|a| {
                Adhoc::new(
                    a,
                    Stream::new("run", cfg.seed, cfg.run, &format!("adhoc/{}", n.name)),
                )
            }),
            net: Net::new(id, net_setup(id, n, cfg, plan)),
            sockets: Sockets::new(id, n.tcp.clone(), cfg.seed, cfg.run, &n.name),
            apps: Apps::new(
                id,
                &cfg.apps,
                &cfg.sources,
                (cfg.seed, cfg.run),
                n.adhoc.is_some(),
            )
            .aggregating(n.mac.ampdu.is_some()),
            channel: n.channel,
            on: n.appear == SimTime::ZERO,
        }
    }

    /// The channel the radio is tuned to, if it is on.
    pub fn radio(&self) -> Option<u32> {
        self.on.then_some(self.channel)
    }
}

/// What management tells the network layer about the BSS.
impl Bss for Mgmt {
    fn associated_ap(&self) -> Option<NodeId> {
        Mgmt::associated_ap(self)
    }
    fn has_station(&self, sta: NodeId) -> bool {
        Mgmt::has_station(self, sta)
    }
}

/// How node `id`'s network layer is set up.
fn net_setup(id: NodeId, n: &NodeConfig, cfg: &SimConfig, plan: &Arc<AddressPlan>) -> NetSetup {
    let ports = cfg
        .wires
        .iter()
        .enumerate()
        .filter(|(_, l)| l.a == id || l.b == id)
        .map(|(link, l)| Port {
            link,
            far: l.far_end(id),
        })
        .collect();
    NetSetup {
        role: n.role,
        radio: n.radio,
        split_tcp: n.split_tcp,
        dhcp_server: n.dhcp_server,
        arp: n.arp,
        dhcp: n.dhcp.then(|| {
            DhcpClient::new(Stream::new(
                "run",
                cfg.seed,
                cfg.run,
                &format!("dhcp/{}", n.name),
            ))
        }),
        ports,
        plan: Arc::clone(plan),
        forwarding: n.forwarding,
        router: crate::net::router(
            n.routing,
            id,
            &n.mobility,
            cfg.nodes
                .iter()
                .enumerate()
                .map(|(i, m)| (NodeId(i as u32), &m.mobility, m.radio)),
            Stream::new("run", cfg.seed, cfg.run, &format!("route/{}", n.name)),
        ),
    }
}

impl Node {
    /// Puts `frame` on the air at `mode`, now.
    fn transmit(&mut self, fx: &mut Effects, now: SimTime, frame: Frame, mode: Mode) {
        let air = self.dcf.air();
        let end = now + mode.airtime(frame.psdu_bytes, air.preamble, air.standard);
        let channel = self.channel;
        if let Some(lost) = self.phy.start_tx(end) {
            let reason = DropReason::Transmitting;
            fx.push(Effect::Lost {
                id: lost,
                reason,
                channel,
            });
        }
        // A unicast data, management or RTS frame's outcome is decided by
        // its response.
        let awaits = matches!(frame.dst, Dst::Node(_))
            && !matches!(
                frame.kind,
                FrameKind::Ack | FrameKind::Cts | FrameKind::BlockAck
            );
        let tx_power = self.dcf.tx_power();
        fx.push(Effect::Transmit {
            frame,
            mode,
            end,
            channel,
            tx_power,
            awaits,
        });
        self.medium_update(fx, now);
    }

    /// The first energy of transmission `id` reaches this radio.
    pub fn on_rx_start(&mut self, air: &mut Air, fx: &mut Effects, now: SimTime, id: TxId) {
        let channel = self.channel;
        if air.medium.tx(id).channel != channel {
            return; // the radio retuned while the signal was in flight
        }
        let s = air.signal(id, self.id, now);
        match self
            .phy
            .rx_start_detecting(now, s, &air.detection, &mut self.phy_rng)
        {
            RxStart::Locked => self.phy.fade_reception(air.fades(id, self.id)),
            RxStart::Captured { lost } => {
                self.phy.fade_reception(air.fades(id, self.id));
                let reason = DropReason::Captured;
                fx.push(Effect::Lost {
                    id: lost,
                    reason,
                    channel,
                });
            }
            RxStart::Ignored(reason) => fx.push(Effect::Lost {
                id,
                reason,
                channel,
            }),
        }
        self.medium_update(fx, now);
    }

    /// The first energy of transmission `id`, whose preamble this radio
    /// cannot detect ([`crate::air::UNDETECTABLE`]), reaches it: as
    /// [`Node::on_rx_start`], run outside the event queue and leaving no
    /// effects. Returns why it was not received (`None`: the radio
    /// retuned while it was in flight), and whether this differs from
    /// what [`Node::on_rx_start`] would have done (its detection draw fell
    /// under the detection probability, or the MAC would have seen the
    /// medium change).
    pub fn on_undetectable_start(
        &mut self,
        air: &Air,
        now: SimTime,
        id: TxId,
    ) -> (Option<DropReason>, bool) {
        if air.medium.tx(id).channel != self.channel {
            return (None, false);
        }
        let s = air.signal(id, self.id, now);
        let model = &air.radio.error_model;
        let (reason, locks) = self
            .phy
            .rx_start_undetectable(now, s, model, &mut self.phy_rng);
        (Some(reason), locks || self.medium_changes(now))
    }

    /// The last energy of transmission `id`, whose preamble this radio
    /// cannot detect, leaves it: as [`Node::on_rx_end`], run outside the
    /// event queue. Returns whether the MAC would have seen the medium
    /// change.
    pub fn on_undetectable_end(&mut self, air: &Air, now: SimTime, id: TxId) -> bool {
        let model = &air.radio.error_model;
        let end = self.phy.rx_end(now, id, model, &mut self.phy_rng);
        assert!(end.is_none(), "an undetectable preamble is never locked on");
        self.medium_changes(now)
    }

    fn medium_changes(&self, now: SimTime) -> bool {
        self.dcf.medium_changes(now, self.phy.busy())
    }

    /// The last energy of transmission `id` leaves this radio.
    pub fn on_rx_end(&mut self, air: &Air, fx: &mut Effects, now: SimTime, id: TxId) {
        let t = air.medium.tx(id);
        let model = &air.radio.error_model;
        let outcome = match &t.frame.payload {
            Payload::Aggregate(mpdus) => {
                let skip = crate::mac::ampdu::implicit_delimiter(t.mode);
                let parts = crate::mac::ampdu::parts(mpdus, skip);
                self.phy
                    .rx_end_parts(now, id, model, &mut self.phy_rng, &parts)
                    .map(|(end, oks)| (end, Some(oks)))
            }
            _ => self
                .phy
                .rx_end(now, id, model, &mut self.phy_rng)
                .map(|end| (end, None)),
        };
        if let Some((end, oks)) = outcome {
            let power = t.power_at(self.id).expect("arrival");
            let noise = noise_floor(&self.cfg, air.medium.channel().noise_floor);
            let (frame, mode, rssi) = (&t.frame, t.mode, power.to_dbm());
            match oks {
                Some(oks) => self
                    .dcf
                    .handle_rx_aggregate(now, frame, mode, &oks, rssi, noise),
                None => self
                    .dcf
                    .handle_rx_end(now, frame, mode, end.ok, rssi, noise),
            }
            let (event, reason) = if end.ok {
                (PhyEvent::Rx, DropReason::None)
            } else {
                (PhyEvent::Drop, DropReason::Error)
            };
            fx.push(Effect::Heard {
                id,
                event,
                reason,
                signal: (power.to_dbm(), end.snr, end.min_sinr),
                channel: self.channel,
            });
            self.pump_mac(fx, now);
        }
        self.medium_update(fx, now);
    }

    /// This radio finished sending `frame`.
    pub fn on_tx_end(&mut self, fx: &mut Effects, now: SimTime, frame: &Frame) {
        self.phy.end_tx();
        self.dcf.handle_tx_end(now, frame);
        self.pump_mac(fx, now);
        self.medium_update(fx, now);
    }

    /// Drains the DCF: timers, trace rows and frames to the effects, events
    /// to the layers above.
    fn pump_mac(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        loop {
            if let Some((timer, at, generation)) = self.dcf.poll_timer() {
                fx.schedule(
                    at,
                    Event::Mac {
                        node,
                        timer,
                        generation,
                    },
                );
            } else if let Some(ev) = self.dcf.poll_event() {
                self.mac_event(fx, now, ev);
            } else if let Some((mut frame, mode)) = self.dcf.poll_transmit() {
                if self.cfg.reports_position {
                    frame.report = Some(SenderReport {
                        position: self.cfg.mobility.position(now),
                        tx_power: self.dcf.tx_power(),
                    });
                }
                self.transmit(fx, now, frame, mode);
            } else {
                return;
            }
        }
    }

    fn mac_event(&mut self, fx: &mut Effects, now: SimTime, ev: DcfEvent) {
        match ev {
            DcfEvent::QueueDrop { msdu, cause } => {
                self.mgmt_done(fx, now, &msdu.payload);
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    let event = match (self.on, cause) {
                        (false, _) => MacEvent::RadioOff,
                        (true, DropCause::Codel) => MacEvent::CodelDrop,
                        (true, DropCause::Overflow | DropCause::Flush) => MacEvent::QueueDrop,
                    };
                    Self::mac_trace(
                        fx,
                        msdu.dst.trace_id(),
                        event,
                        0,
                        (msdu.bytes, msdu.payload.content()),
                        0,
                        SimTime::ZERO,
                    );
                }
            }
            DcfEvent::Response(outcome) => fx.push(Effect::Outcome(outcome)),
            DcfEvent::Done {
                msdu,
                seq,
                delivered,
                attempts,
                delay,
            } => {
                let event = if delivered {
                    MacEvent::Delivered
                } else {
                    MacEvent::Failed
                };
                if !matches!(msdu.payload, Payload::Mgmt(_)) {
                    Self::mac_trace(
                        fx,
                        msdu.dst.trace_id(),
                        event,
                        seq,
                        (msdu.bytes, msdu.payload.content()),
                        attempts,
                        delay,
                    );
                }
                self.mgmt_done(fx, now, &msdu.payload);
                self.apps.handle_mac_done(now, msdu.source);
                self.pump_apps(fx, now);
                if let (false, Dst::Node(hop), Payload::Packet(p)) =
                    (delivered, msdu.dst, &msdu.payload)
                {
                    self.net.handle_tx_failed(now, hop, p);
                    self.pump_net(fx, now);
                }
            }
            DcfEvent::Received {
                frame,
                rssi,
                duplicate,
            } => {
                self.mgmt.handle_heard(now, frame.src);
                if !self.adhoc_admits_rx(now, &frame) {
                    return;
                }
                if frame.kind == FrameKind::Data {
                    let body = frame.psdu_bytes - crate::mac::DATA_OVERHEAD;
                    let event = if duplicate {
                        MacEvent::Duplicate
                    } else {
                        MacEvent::Received
                    };
                    let attempts = if frame.dst == Dst::Broadcast {
                        0
                    } else {
                        u32::from(frame.attempt) + 1
                    };
                    Self::mac_trace(
                        fx,
                        frame.src.0,
                        event,
                        frame.seq,
                        (body, frame.payload.content()),
                        attempts,
                        SimTime::ZERO,
                    );
                }
                if !duplicate {
                    self.mac_deliver(fx, now, frame, rssi);
                }
            }
        }
    }

    /// Hands a received MSDU to management or the network layer.
    fn mac_deliver(&mut self, fx: &mut Effects, now: SimTime, frame: Frame, rssi: Dbm) {
        match frame.payload {
            Payload::Mgmt(m) => self.mgmt_rx(fx, now, frame.src, m, rssi),
            Payload::Packet(p) => self.net_rx_air(fx, now, frame.src, p),
            Payload::FastFrame(pair) => {
                let [a, b] = *pair;
                self.net_rx_air(fx, now, frame.src, a);
                self.net_rx_air(fx, now, frame.src, b);
            }
            Payload::Datagram { app, data, sent } => {
                let room = self.dcf.queue_room();
                let datagram = RawDatagram {
                    app,
                    data: &data,
                    sent,
                };
                self.apps
                    .handle_frame(now, frame.src, datagram, room, &mut self.sockets);
                self.pump_apps(fx, now);
                self.pump_sockets(fx, now);
            }
            // The DCF hands up an A-MPDU's MPDUs one by one, and keeps
            // Block Acks and BARs to itself.
            Payload::Raw
            | Payload::Aggregate(_)
            | Payload::BlockAck { .. }
            | Payload::BlockAckReq { .. } => {}
        }
    }

    /// A `mac` row; `msdu`: its bytes and what it carries.
    #[allow(clippy::too_many_arguments)]
    fn mac_trace(
        fx: &mut Effects,
        peer: u32,
        event: MacEvent,
        seq: u16,
        msdu: (u32, MsduContent),
        attempts: u32,
        delay: SimTime,
    ) {
        let (bytes, content) = msdu;
        fx.push(Effect::Mac(MacRecord {
            peer,
            event,
            seq,
            bytes,
            content,
            attempts,
            delay,
        }));
    }

    /// A MAC timer of `generation` fired. If it takes an MSDU whose chain
    /// rate control chooses, the DCF is told where this node is and (for a
    /// controller that needs it) the link's mean SNR, read from the air.
    pub fn on_mac_timer(
        &mut self,
        air: &mut Air,
        fx: &mut Effects,
        now: SimTime,
        timer: MacTimer,
        generation: u32,
    ) {
        if !self.dcf.is_current(timer, generation) {
            return;
        }
        let (receiving, busy) = (self.phy.receiving().is_some(), self.phy.busy());
        let known = self.dcf.chain_peer(now, timer).map(|peer| {
            let oracle = self.dcf.links().needs_oracle();
            let tx_power = self.dcf.tx_power();
            Whereabouts {
                mean_snr: oracle.then(|| air.mean_snr(self.id, peer, now, tx_power)),
                position: air.position(self.id, now),
            }
        });
        self.dcf.handle_timeout(now, timer, receiving, busy, known);
        self.pump_mac(fx, now);
    }

    /// Re-evaluates carrier sense after anything that may have changed it.
    fn medium_update(&mut self, fx: &mut Effects, now: SimTime) {
        let busy = self.phy.busy();
        self.dcf.handle_medium(now, busy);
        self.pump_mac(fx, now);
    }

    /// Hands an MSDU to the MAC; false if the queue was full or the radio
    /// is off (the drop is traced).
    fn mac_enqueue(&mut self, fx: &mut Effects, now: SimTime, msdu: Msdu) -> bool {
        if !self.on {
            Self::mac_trace(
                fx,
                msdu.dst.trace_id(),
                MacEvent::RadioOff,
                0,
                (msdu.bytes, msdu.payload.content()),
                0,
                SimTime::ZERO,
            );
            return false;
        }
        if self.adhoc.as_ref().is_some_and(|a| !a.admits(msdu.dst)) {
            Self::mac_trace(
                fx,
                msdu.dst.trace_id(),
                MacEvent::NoLink,
                0,
                (msdu.bytes, msdu.payload.content()),
                0,
                SimTime::ZERO,
            );
            return false;
        }
        let ok = self.dcf.enqueue(now, msdu);
        self.pump_mac(fx, now);
        ok
    }

    /// Tunes the radio to `channel`: what it was receiving is lost and its
    /// MAC starts afresh there.
    fn retune(&mut self, fx: &mut Effects, now: SimTime, channel: u32) {
        if self.channel == channel {
            return;
        }
        self.channel = channel;
        self.phy.retune();
        self.dcf.flush();
        self.pump_mac(fx, now);
        self.medium_update(fx, now);
    }

    /// Starts management and the router.
    fn mgmt_start(&mut self, fx: &mut Effects, now: SimTime) {
        self.mgmt.start(now);
        self.pump_mgmt(fx, now);
        self.adhoc_start(fx, now);
        self.net.handle_start(now);
        self.pump_net(fx, now);
    }

    /// Switches the radio on now, or at the node's appearance; schedules
    /// its disappearance.
    pub fn power_schedule(&mut self, fx: &mut Effects) {
        let (node, appear, disappear) = (self.id, self.cfg.appear, self.cfg.disappear);
        if appear == SimTime::ZERO {
            self.mgmt_start(fx, SimTime::ZERO);
        } else {
            fx.schedule(appear, Event::Power { node, on: true });
        }
        if disappear != SimTime::MAX {
            fx.schedule(disappear, Event::Power { node, on: false });
        }
    }

    /// The node appears (its radio comes on and management starts) or
    /// disappears (its radio goes off for good, dropping what it queued).
    pub fn on_power(&mut self, fx: &mut Effects, now: SimTime, on: bool) {
        self.on = on;
        if on {
            self.mgmt_start(fx, now);
        } else {
            self.dcf.flush();
            self.pump_mac(fx, now);
        }
    }

    /// A management timer of `generation` fired.
    pub fn on_mgmt_timer(
        &mut self,
        fx: &mut Effects,
        now: SimTime,
        timer: MgmtTimer,
        generation: u32,
    ) {
        if !self.mgmt.is_current(timer, generation) {
            return;
        }
        let map = self.dcf.links().advertised().cloned();
        self.mgmt.handle_timeout(now, timer, map);
        self.pump_mgmt(fx, now);
    }

    /// The MAC is done with an MSDU: management hears of its farewells
    /// (deauthentication, disassociation).
    fn mgmt_done(&mut self, fx: &mut Effects, now: SimTime, payload: &Payload) {
        if let Payload::Mgmt(MgmtBody::Deauth { .. } | MgmtBody::Disassoc { .. }) = payload {
            self.mgmt.handle_farewell_done(now);
            self.pump_mgmt(fx, now);
        }
    }

    /// A management frame from `from` arrived intact.
    fn mgmt_rx(&mut self, fx: &mut Effects, now: SimTime, from: NodeId, body: MgmtBody, rssi: Dbm) {
        if let MgmtBody::Adhoc(f) = body {
            return self.adhoc_rx(fx, now, from, f, rssi);
        }
        self.mgmt.handle_frame(now, from, body, rssi, self.channel);
        self.pump_mgmt(fx, now);
    }

    /// Hands a management frame to the MAC at the radio's basic rate. It
    /// bypasses the queue limit; `front` puts it ahead of queued data
    /// (beacons, probe requests).
    fn send_mgmt(&mut self, fx: &mut Effects, now: SimTime, dst: Dst, body: MgmtBody, front: bool) {
        let mode = self.dcf.air().basic;
        let tries = if dst == Dst::Broadcast { 1 } else { MGMT_TRIES };
        let fixed = Some(Stage { mode, tries });
        let msdu = Msdu {
            dst,
            bytes: body.body_bytes(),
            enqueued: now,
            fixed,
            source: None,
            payload: Payload::Mgmt(body),
        };
        self.dcf.enqueue_mgmt(now, msdu, front);
        self.pump_mac(fx, now);
    }

    /// Drains management: the radio to the channel it wants, frames to the
    /// MAC, events to the trace and the network layer, timers to the event
    /// queue.
    fn pump_mgmt(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        loop {
            let channel = self.mgmt.channel();
            if channel != self.channel {
                self.retune(fx, now, channel);
            } else if let Some(MgmtFrame { dst, body, front }) = self.mgmt.poll_transmit() {
                self.send_mgmt(fx, now, dst, body, front);
            } else if let Some(ev) = self.mgmt.poll_event() {
                match ev {
                    MgmtEvent::Conn { peer, event, value } => fx.conn(peer.0, event, value),
                    MgmtEvent::LinkUp(peer) => {
                        self.net.handle_link_up(now, peer);
                        self.pump_net(fx, now);
                    }
                    MgmtEvent::LinkDown(peer) => self.net.handle_link_down(peer),
                    MgmtEvent::Beacon { ap, map } => {
                        if let Some(map) = map {
                            self.dcf.links_mut().beacon_hint(ap, &map);
                        }
                        self.script_beacon(fx, ap);
                    }
                }
            } else if let Some((timer, at, generation)) = self.mgmt.poll_timer() {
                fx.schedule(
                    at,
                    Event::Mgmt {
                        node,
                        timer,
                        generation,
                    },
                );
            } else {
                return;
            }
        }
    }
}

/// The noise floor of node `n`'s receiver: the channel's `floor` (20 MHz),
/// raised by 10·log10(width / 20) for a wider HT or VHT channel.
fn noise_floor(n: &NodeConfig, floor: Dbm) -> Dbm {
    let excess = n.standard.noise_excess_db();
    if excess == 0.0 {
        floor
    } else {
        Dbm(floor.0 + excess)
    }
}
