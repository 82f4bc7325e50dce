//! Link adaptation: one rate controller per peer, created on first use with
//! its own random stream (so only for peers this MAC sends unicast frames
//! to or learns from), and what the MAC remembers of each peer's last frame
//! (its RSSI, and the position its frame carried, kept only by learning
//! controllers), in hash maps so a node among thousands finds a peer in
//! constant time. The DCF asks it for a retry chain before each unicast
//! frame and reports each frame's outcome.

use crate::geometry::Vec2;
use crate::ids::NodeId;
use crate::ratectl::{
    RateControl, RateControlKind, RateControlSpec, RetryChain, RxObservation, SnrMap, TxRequest,
    TxStatus,
};
use crate::rng::Stream;
use crate::units::{Db, Dbm, SimTime};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// What the DCF is told, besides what the frame carries, when it is to ask
/// for a chain: where this node is now (its GPS) and, for a controller that
/// needs one ([`Links::needs_oracle`]), the link's true mean SNR now: an
/// oracle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whereabouts {
    pub position: Vec2,
    pub mean_snr: Option<Db>,
}

/// Per-peer rate control and last-heard state of one MAC.
#[derive(Debug)]
pub struct Links {
    spec: RateControlSpec,
    controllers: Vec<(NodeId, RateControlKind)>,
    /// RSSI of the last frame received intact from each peer.
    rssi: FxHashMap<NodeId, Dbm>,
    /// The position the last frame from each peer carried, if it carried
    /// one (only when the controller learns).
    carried: FxHashMap<NodeId, Vec2>,
    modes: &'static [crate::phy::mode::Mode],
    /// Seeds each link's stream: (seed, run, this node's name).
    seed: (u64, u64, String),
}

impl Links {
    pub fn new(
        spec: RateControlSpec,
        modes: &'static [crate::phy::mode::Mode],
        seed: (u64, u64, String),
    ) -> Links {
        Links {
            spec,
            controllers: Vec::new(),
            rssi: FxHashMap::default(),
            carried: FxHashMap::default(),
            modes,
            seed,
        }
    }

    /// The controller for frames to `peer`, created on first use.
    fn controller(&mut self, peer: NodeId) -> &mut RateControlKind {
        let i = match self.controllers.iter().position(|(d, _)| *d == peer) {
            Some(i) => i,
            None => {
                let (seed, run, name) = &self.seed;
                let rng = Stream::new("run", *seed, *run, &format!("ratectl/{name}/{}", peer.0));
                self.controllers
                    .push((peer, self.spec.build(self.modes, rng)));
                self.controllers.len() - 1
            }
        };
        &mut self.controllers[i].1
    }

    /// Whether frames from peers should carry their position and power
    /// (the controller learns per position).
    pub fn learns(&self) -> bool {
        self.spec.prior().is_some()
    }

    /// Whether the controllers choose from the link's true mean SNR, which
    /// must then be computed for each chain ([`Whereabouts::mean_snr`]).
    pub fn needs_oracle(&self) -> bool {
        self.spec.needs_oracle()
    }

    /// Starts this pass from `map`, what earlier passes learned.
    pub fn set_prior(&mut self, map: Arc<SnrMap>) {
        self.spec.set_prior(map);
    }

    /// The retry chain for a `bytes`-byte frame to `peer`.
    pub fn retry_chain(
        &mut self,
        now: SimTime,
        peer: NodeId,
        bytes: u32,
        tx_power: Dbm,
        known: Whereabouts,
    ) -> RetryChain {
        let mean_snr = if self.spec.needs_oracle() {
            Some(known.mean_snr.expect("the oracle its controller needs"))
        } else {
            None
        };
        let position = known.position;
        let (rssi, peer_position) = (
            self.rssi.get(&peer).copied(),
            self.carried.get(&peer).copied(),
        );
        let req = TxRequest {
            now,
            bytes,
            rssi,
            mean_snr,
            tx_power,
            position,
            peer_position,
        };
        self.controller(peer).retry_chain(&req)
    }

    pub fn report(&mut self, peer: NodeId, status: &TxStatus) {
        self.controller(peer).report(status);
    }

    /// A frame from `peer` arrived intact at `rssi`; `carried` is the
    /// (position, tx power) its header carried, if any; `to_us` whether it
    /// was unicast to this node (only those teach a learning controller).
    pub fn heard(
        &mut self,
        now: SimTime,
        peer: NodeId,
        rssi: Dbm,
        noise_floor: Dbm,
        carried: Option<(Vec2, Dbm)>,
        to_us: bool,
    ) {
        self.rssi.insert(peer, rssi);
        match carried.filter(|_| self.learns()) {
            Some((position, _)) => self.carried.insert(peer, position),
            None => self.carried.remove(&peer),
        };
        if let (Some((peer_position, peer_tx_power)), true) = (carried, to_us && self.learns()) {
            let obs = RxObservation {
                now,
                snr: rssi - noise_floor,
                peer_tx_power,
                peer_position,
            };
            self.controller(peer).observe(&obs);
        }
    }

    /// A beacon from `ap` advertised `map`: the controller for that AP
    /// takes it if it takes hints.
    pub fn beacon_hint(&mut self, ap: NodeId, map: &Arc<SnrMap>) {
        if self.spec.takes_hints() {
            self.controller(ap).hint(map);
        }
    }

    /// The map this MAC advertises in its beacons, if any.
    pub fn advertised(&self) -> Option<&Arc<SnrMap>> {
        self.spec.advertised()
    }

    /// What this MAC knows after a pass: the map it started from merged
    /// with what each of its controllers observed (`None` if it does not
    /// learn).
    pub fn learned(&self) -> Option<SnrMap> {
        let mut map = SnrMap::clone(self.spec.prior()?);
        for seen in self.controllers.iter().filter_map(|(_, rc)| rc.observed()) {
            map.merge(seen);
        }
        Some(map)
    }
}
