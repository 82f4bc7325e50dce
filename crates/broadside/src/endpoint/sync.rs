//! Discovery and offers: beacons start syncs (as initiator or
//! responder), their outcome is recorded per peer and file, and the side
//! with the newer version offers it.

use super::*;

impl<A: PeerAddr> Endpoint<A> {
    pub(super) fn on_beacon(
        &mut self,
        now: Instant,
        from: &A,
        node: u64,
        count: u32,
        hash: Id160,
        store: &mut dyn Storage,
    ) {
        if node == self.node_id {
            return; // our own broadcast, looped back
        }
        let Some(p) = self.peers.get_mut(from) else {
            return;
        };
        p.last_beacon = Some((count, hash));
        let restarted = p.node.is_some_and(|n| n != node);
        p.node = Some(node);
        if restarted {
            self.forget_sessions(now, from, store);
        }
        let Some(p) = self.peers.get(from) else {
            return;
        };
        let retry_after = p.retry_after.max(p.penalized_until);
        let mine = (self.files.len() as u32, self.content_hash);
        if hash == self.content_hash
            || self.sync_cache.contains(hash, self.content_hash)
            || self.initiators.contains_key(from)
            || self.responding_to(now, from)
            || now < retry_after
            || !beacon::should_initiate(mine, (count, hash))
        {
            return;
        }
        let session = self.rng.random();
        let files: Vec<LocalFile> = self.local.values().copied().collect();
        let mut initiator = Initiator::new(
            session,
            &files,
            self.cfg.params(),
            self.cfg.discovery_timeout,
            self.cfg.discovery_retries,
            &mut self.rng,
        );
        let step = initiator.start(now);
        self.events.push_back(Event::SyncStarted {
            peer: from.clone(),
            initiator: true,
        });
        self.send_interest(from);
        self.initiators.insert(
            from.clone(),
            InitiatorSlot {
                initiator,
                their_hash: hash,
                my_hash: self.content_hash,
                failed: false,
            },
        );
        self.apply_step(now, from, step);
    }

    /// Whether `peer` is running a sync with us as responder (then we do not
    /// start a second one the other way).
    fn responding_to(&self, now: Instant, peer: &A) -> bool {
        let live =
            self.cfg.discovery_timeout * (self.cfg.discovery_retries + 1) + self.offer_wait();
        self.responders
            .get(peer)
            .is_some_and(|r| now.saturating_since(r.last_active) < live)
    }

    pub(super) fn apply_step(&mut self, now: Instant, peer: &A, step: Step) {
        match step {
            Step::Ignored => {}
            Step::Send(pkts) => {
                for p in pkts {
                    self.send(Destination::Peer(peer.clone()), p);
                }
            }
            Step::Exchange(list) => {
                for (file, action) in list {
                    if action == Action::Pull {
                        // The responder pulls: this node (initiator) offers.
                        if let Some(cert) = self.files.get(&file).cloned() {
                            self.start_offer(now, peer, cert);
                        } else {
                            self.resolve(now, peer, &file, Outcome::Done);
                        }
                    }
                }
            }
            Step::Done => {
                if let Some(slot) = self.initiators.remove(peer) {
                    self.events.push_back(Event::SyncFinished {
                        peer: peer.clone(),
                        rounds: slot.initiator.rounds(),
                    });
                    self.sync_ended(now, peer, &slot);
                }
            }
        }
    }

    /// Records a finished sync as done only if every exchange it planned
    /// ended completed or refused for a reason; otherwise schedules a retry
    /// with doubling back-off (at the next beacon from this or any peer
    /// whose content differs).
    fn sync_ended(&mut self, now: Instant, peer: &A, slot: &InitiatorSlot) {
        let Some(p) = self.peers.get_mut(peer) else {
            return;
        };
        if slot.failed {
            let after = p.backoff;
            p.retry_after = now + after;
            p.backoff = (after * 2).min(self.cfg.retry_backoff * 64);
            self.events.push_back(Event::SyncRetry {
                peer: peer.clone(),
                after,
            });
        } else {
            p.backoff = self.cfg.retry_backoff;
            self.sync_cache.insert(slot.their_hash, slot.my_hash);
        }
    }

    /// A peer restarted (its beacon carries a new node id): what it knew of
    /// our syncs, offers and transfers is gone, so they end now rather than
    /// at their timeouts; receives from it keep their partials.
    fn forget_sessions(&mut self, now: Instant, peer: &A, store: &mut dyn Storage) {
        self.initiators.remove(peer);
        self.responders.remove(peer);
        self.offers.retain(|(a, _), _| a != peer);
        self.uploads.retain(|(a, _), _| a != peer);
        self.eligible_dirty = true;
        let files: Vec<FileId> = self
            .fetches
            .iter()
            .filter(|(_, f)| f.lane(peer).is_some())
            .map(|(k, _)| *k)
            .collect();
        for file in files {
            self.drop_source(now, file, peer, None, store);
        }
        for f in self.fetches.values_mut() {
            f.standby.retain(|a| a != peer);
        }
    }

    /// One planned exchange with `peer` ended; the initiator may move on.
    pub(super) fn resolve(&mut self, now: Instant, peer: &A, file: &FileId, outcome: Outcome) {
        let step = match self.initiators.get_mut(peer) {
            Some(s) => {
                s.failed |= outcome == Outcome::Retry;
                s.initiator.resolve(now, file)
            }
            None => return,
        };
        self.apply_step(now, peer, step);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_filters(
        &mut self,
        now: Instant,
        from: &A,
        session: u32,
        round: u16,
        salt: u32,
        k: u8,
        ff: &[u8],
        vf: &[u8],
    ) {
        let mut slot = self.responders.remove(from);
        let fresh = slot.as_ref().is_none_or(|r| !r.is_session(session));
        if let Some(reply) = Responder::on_filters(
            &mut slot,
            now,
            &self.local,
            self.cfg.params(),
            session,
            round,
            salt,
            k,
            ff,
            vf,
        ) {
            if fresh {
                self.events.push_back(Event::SyncStarted {
                    peer: from.clone(),
                    initiator: false,
                });
                self.send_interest(from);
            }
            self.send(Destination::Peer(from.clone()), reply);
        }
        if let Some(r) = slot {
            self.responders.insert(from.clone(), r);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_records(
        &mut self,
        now: Instant,
        from: &A,
        session: u32,
        round: u16,
        seq: u16,
        total: u16,
        recs: &[u8],
    ) {
        let Some(r) = self.responders.get_mut(from) else {
            return;
        };
        let Some(RecordsReply::Plan(plan, pushes, decided)) =
            r.on_records(now, &self.local, session, round, seq, total, recs)
        else {
            return;
        };
        self.send(Destination::Peer(from.clone()), plan);
        for (file, action) in decided {
            self.events.push_back(Event::Candidate {
                peer: from.clone(),
                file,
                action,
            });
        }
        for file in pushes {
            if let Some(cert) = self.files.get(&file).cloned() {
                self.start_offer(now, from, cert);
            }
        }
    }

    /// Offers `cert` to `peer`; an offer already open is sent again at once
    /// (the receiver may have restarted or lost it: no waiting for timeouts).
    pub(super) fn start_offer(&mut self, now: Instant, peer: &A, cert: Certificate) {
        let key = (peer.clone(), cert.instance_id());
        self.send_to(
            peer,
            Message::Offer {
                cert: cert.encoded(),
            },
        );
        let deadline = now + self.cfg.offer_timeout;
        if let Some(o) = self.offers.get_mut(&key) {
            o.deadline = deadline;
            o.retries = 0;
            return;
        }
        self.offers.insert(
            key,
            Offer {
                cert,
                stage: OfferStage::AwaitWant,
                deadline,
                retries: 0,
            },
        );
    }

    pub(super) fn close(&mut self, peer: &A, instance: InstanceId, status: CloseCode) {
        self.send_to(peer, Message::Close { instance, status });
    }

    /// Whether this node takes a file it does not hold: wanted by fileId or
    /// from a subscribed provider.
    pub(super) fn wants(&self, cert: &Certificate) -> bool {
        self.wanted.contains(&cert.file_id()) || self.subscribed.contains(&cert.provider())
    }

    /// A peer's subscriptions: offer it every file held from those providers
    /// (it closes at once the ones it already has).
    pub(super) fn on_interest(&mut self, now: Instant, from: &A, keys: &[u8]) {
        let offers: Vec<Certificate> = keys
            .chunks_exact(wire::KEY_LEN)
            .flat_map(|k| {
                self.files
                    .values()
                    .filter(move |c| c.provider().0 == k)
                    .cloned()
            })
            .collect();
        for cert in offers {
            self.start_offer(now, from, cert);
        }
    }

    /// Sends our subscriptions to a peer a sync just started with.
    fn send_interest(&mut self, peer: &A) {
        if self.subscribed.is_empty() {
            return;
        }
        let max = (self.cfg.packet_size - wire::HEADER_LEN) / wire::KEY_LEN;
        let keys: Vec<u8> = self.subscribed.iter().take(max).flat_map(|k| k.0).collect();
        self.send_to(peer, Message::Interest { keys: &keys });
    }

    pub(super) fn initiator_timers(&mut self, now: Instant) {
        let wait = self.offer_wait();
        let peers: Vec<A> = self.initiators.keys().cloned().collect();
        for peer in peers {
            let Some(slot) = self.initiators.get_mut(&peer) else {
                continue;
            };
            if let Some(d) = slot.initiator.deadline() {
                if now < d {
                    continue;
                }
                match slot.initiator.on_timeout(now) {
                    Some(pkts) => self.apply_step(now, &peer, Step::Send(pkts)),
                    None => {
                        let round = slot.initiator.round();
                        self.initiators.remove(&peer);
                        if let Some(p) = self.peers.get_mut(&peer) {
                            p.retry_after = now + self.cfg.discovery_timeout;
                        }
                        self.events.push_back(Event::SyncAbandoned { peer, round });
                    }
                }
                continue;
            }
            // Planned pushes whose offer never came (or whose fetch ended without resolving).
            let Some((since, pending)) = slot.initiator.pending() else {
                continue;
            };
            if now.saturating_since(since) < wait {
                continue;
            }
            let overdue: Vec<FileId> = pending
                .filter(|(file, action)| {
                    **action == Action::Push
                        && self.fetches.get(file).is_none_or(|f| !f.has_source(&peer))
                        || **action == Action::Pull
                            && !self.files.get(file).is_some_and(|c| {
                                self.offers.contains_key(&(peer.clone(), c.instance_id()))
                            })
                })
                .map(|(f, _)| *f)
                .collect();
            if let Some(slot) = self.initiators.get_mut(&peer) {
                slot.initiator.recheck_after(now);
            }
            for file in overdue {
                self.resolve(now, &peer, &file, Outcome::Retry);
            }
        }
    }

    pub(super) fn offer_timers(&mut self, now: Instant) {
        let due: Vec<(A, InstanceId)> = self
            .offers
            .iter()
            .filter(|(_, o)| matches!(o.stage, OfferStage::AwaitWant) && now >= o.deadline)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let Some(o) = self.offers.get_mut(&key) else {
                continue;
            };
            if o.retries >= self.cfg.offer_retries {
                if let Some(o) = self.offers.remove(&key) {
                    self.events.push_back(Event::OfferClosed {
                        peer: key.0.clone(),
                        name: o.cert.name().into(),
                        status: None,
                    });
                    self.resolve(now, &key.0, &o.cert.file_id(), Outcome::Retry);
                }
                continue;
            }
            o.retries += 1;
            o.deadline = now + self.cfg.offer_timeout;
            let bytes = Message::Offer {
                cert: o.cert.encoded(),
            }
            .to_vec();
            self.send(Destination::Peer(key.0.clone()), bytes);
        }
    }
}
