//! The pump of a node's ad hoc membership ([`crate::mac::adhoc`]): its
//! frames to the MAC, its timers and link events to the node's effects,
//! its link events also to the network layer and the frame sources, and
//! the driver's gate on received data (frames from a peer without a link
//! are not handed up).

use super::effects::Effects;
use super::Node;
use crate::event::Event;
use crate::ids::{Dst, NodeId};
use crate::mac::adhoc::{AdhocEvent, AdhocFrame, AdhocKind, AdhocTimer};
use crate::mac::mgmt::MgmtBody;
use crate::mac::Frame;
use crate::trace::{ConnEvent, FrameKind};
use crate::units::{Dbm, SimTime};

impl Node {
    /// The radio came on: an ad hoc node probes for its IBSS.
    pub(super) fn adhoc_start(&mut self, fx: &mut Effects, now: SimTime) {
        if let Some(a) = self.adhoc.as_mut() {
            a.start(now);
            self.pump_adhoc(fx, now);
        }
    }

    /// An ad hoc management frame from `from` arrived intact.
    pub(super) fn adhoc_rx(
        &mut self,
        fx: &mut Effects,
        now: SimTime,
        from: NodeId,
        frame: AdhocFrame,
        rssi: Dbm,
    ) {
        if let Some(a) = self.adhoc.as_mut() {
            a.handle_frame(now, from, frame, rssi);
            self.pump_adhoc(fx, now);
        }
    }

    /// A frame was received: a data frame refreshes its sender's link, and
    /// is handed up only if that link is up (true for everything else, and
    /// on nodes not in ad hoc mode).
    pub(super) fn adhoc_admits_rx(&mut self, now: SimTime, frame: &Frame) -> bool {
        let Some(a) = self.adhoc.as_mut() else {
            return true;
        };
        if frame.kind != FrameKind::Data {
            return true;
        }
        a.handle_data(now, frame.src, frame.dst == Dst::Node(self.id));
        a.is_linked(frame.src)
    }

    pub fn on_adhoc_timer(
        &mut self,
        fx: &mut Effects,
        now: SimTime,
        timer: AdhocTimer,
        generation: u32,
    ) {
        let Some(a) = self.adhoc.as_mut() else { return };
        if !a.is_current(timer, generation) {
            return;
        }
        a.handle_timeout(now, timer);
        self.pump_adhoc(fx, now);
    }

    fn pump_adhoc(&mut self, fx: &mut Effects, now: SimTime) {
        let node = self.id;
        loop {
            let Some(a) = self.adhoc.as_mut() else { return };
            if let Some((dst, frame)) = a.poll_transmit() {
                let front = frame.kind != AdhocKind::ProbeResp;
                self.send_mgmt(fx, now, dst, MgmtBody::Adhoc(frame), front);
            } else if let Some(ev) = a.poll_event() {
                match ev {
                    AdhocEvent::LinkUp { peer, rssi } => {
                        fx.conn(peer.0, ConnEvent::LinkUp, rssi.0);
                        self.net.handle_link_up(now, peer);
                        self.pump_net(fx, now);
                        self.apps.handle_link_up(now, peer);
                        self.pump_apps(fx, now);
                    }
                    AdhocEvent::LinkDown(peer) => {
                        fx.conn(peer.0, ConnEvent::LinkDown, f64::NAN);
                        self.net.handle_link_down(peer);
                        self.apps.handle_link_down(peer);
                    }
                }
            } else if let Some((timer, at, generation)) = a.poll_timer() {
                fx.schedule(
                    at,
                    Event::Adhoc {
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
