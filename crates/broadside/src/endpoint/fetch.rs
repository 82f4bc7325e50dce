//! Incoming files: an accepted offer becomes a fetch from one or more
//! sources, each asked for a range by Want and answered by Acks; the
//! fetch persists its vector, drops sources that fail and commits the
//! complete file.

use super::*;

impl<A: PeerAddr> Endpoint<A> {
    /// Block layout and tree shape a receive of `cert` uses.
    fn fetch_layout(&self, cert: &Certificate) -> Result<(Layout, Option<Shape>), RejectReason> {
        let too_large = || RejectReason::FileTooLarge {
            size: cert.size(),
            max: self.cfg.max_file_size,
        };
        let Some((block_size, _)) = cert.tree() else {
            let l = Layout::new(
                cert.size(),
                self.cfg.block_size(),
                self.cfg.segment_blocks(),
            );
            return l.map(|l| (l, None)).ok_or_else(too_large);
        };
        let too_big = || RejectReason::BlockTooLarge {
            name: cert.name().into(),
            block_size,
            packet_size: self.cfg.packet_size,
        };
        if block_size > self.cfg.block_size() {
            return Err(too_big());
        }
        // Segments hold whole chunks, and their vector holds the chunk bits too.
        let probe = Layout::new(cert.size(), block_size, 1).ok_or_else(too_large)?;
        let shape = Shape::new(probe.blocks(), block_size).ok_or_else(too_big)?;
        let m = shape.chunk_leaves();
        let seg = self.cfg.segment_blocks() / (m + 1) * m;
        let layout = Layout::new(cert.size(), block_size, seg).ok_or_else(too_big)?;
        Ok((layout, Some(shape)))
    }

    pub(super) fn on_offer(
        &mut self,
        now: Instant,
        from: &A,
        bytes: &[u8],
        store: &mut dyn Storage,
    ) {
        let cert = match Certificate::decode(bytes)
            .and_then(|c| c.check_trusted(&self.trusted).map(|()| c))
        {
            Ok(c) => c,
            Err(e) => {
                self.reject(from, RejectReason::Certificate(e));
                self.close(from, Id160::hash(&[bytes]), CloseCode::Refused);
                return;
            }
        };
        let (file, instance) = (cert.file_id(), cert.instance_id());
        match self.files.get(&file) {
            None if !self.wants(&cert) => {
                self.close(from, instance, CloseCode::NotCommon);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            None => {}
            Some(have) if have.instance_id() == instance => {
                self.close(from, instance, CloseCode::HaveNewer);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            Some(have) if have.version() == cert.version() => {
                let have = have.clone();
                if !self.fork(from, &have, &cert) {
                    // Ours is kept: the peer gets it, so that both converge.
                    self.close(from, instance, CloseCode::HaveNewer);
                    self.resolve(now, from, &file, Outcome::Done);
                    return self.start_offer(now, from, have);
                }
            }
            Some(have) if have.version() > cert.version() => {
                let reason = RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: have.version(),
                    offered: cert.version(),
                };
                self.reject(from, reason);
                self.close(from, instance, CloseCode::HaveNewer);
                return self.resolve(now, from, &file, Outcome::Done);
            }
            Some(_) => {}
        }
        if cert.size() > self.cfg.max_file_size {
            self.reject(
                from,
                RejectReason::FileTooLarge {
                    size: cert.size(),
                    max: self.cfg.max_file_size,
                },
            );
            self.close(from, instance, CloseCode::Refused);
            return self.resolve(now, from, &file, Outcome::Done);
        }
        if self.committing.contains_key(&file) {
            // Answered after the commit (HaveNewer), when the offer comes again.
            return;
        }
        if let Some(f) = self.fetches.get_mut(&file) {
            if f.cert.instance_id() != instance {
                self.close(from, instance, CloseCode::Busy);
                return self.resolve(now, from, &file, Outcome::Retry);
            }
            if f.lane(from).is_some() {
                // A repeated offer: our Want may have been lost.
                if let Some(w) = self.want_message(&file, from) {
                    self.send_to(from, w);
                }
            } else if f.lanes.len() < self.cfg.sources {
                // Another source of the same version: it sends another
                // part of the file at the same time.
                self.events.push_back(Event::TransferStarted {
                    peer: from.clone(),
                    name: cert.name().into(),
                    version: cert.version(),
                    resumed_blocks: f.received.count_ones(),
                    total_blocks: f.received.len(),
                });
                self.start_lane(now, file, from.clone(), store);
            } else if !f.standby.contains(from) {
                // Every slot is taken: it takes over if a source turns out
                // slow, silent or lying.
                f.standby.push(from.clone());
            }
            return;
        }
        let (layout, shape) = match self.fetch_layout(&cert) {
            Ok(x) => x,
            Err(reason) => {
                self.reject(from, reason);
                self.close(from, instance, CloseCode::Refused);
                return self.resolve(now, from, &file, Outcome::Done);
            }
        };
        let received = match store.partial_load(&cert) {
            Ok(Some(p))
                if p.block_size == layout.block_size() && p.received.len() == layout.blocks() =>
            {
                p.received
            }
            Ok(_) => BitVec::new(layout.blocks()),
            Err(e) => {
                self.reject(from, RejectReason::Storage(e));
                self.close(from, instance, CloseCode::Failed);
                return self.resolve(now, from, &file, Outcome::Retry);
            }
        };
        self.events.push_back(Event::TransferStarted {
            peer: from.clone(),
            name: cert.name().into(),
            version: cert.version(),
            resumed_blocks: received.count_ones(),
            total_blocks: layout.blocks(),
        });
        let tree = shape
            .zip(cert.tree())
            .map(|(shape, (_, root))| (shape, root));
        self.fetches.insert(
            file,
            Fetch {
                cert,
                layout,
                received,
                tree,
                lanes: Vec::new(),
                standby: Vec::new(),
                unpersisted: 0,
                last_persist: now,
            },
        );
        self.start_lane(now, file, from.clone(), store);
    }

    /// Makes `peer` a source of a fetch, asking it for the range
    /// [`Fetch::choose_range`] picks.
    fn start_lane(&mut self, now: Instant, file: FileId, peer: A, store: &mut dyn Storage) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        let tree = f.tree.map(|(shape, root)| TreeRx {
            shape,
            root,
            leaves: Vec::new(),
            unverified: Vec::new(),
        });
        let transfer = self.new_transfer_id(file);
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let placeholder = SegmentReceiver::new(transfer, 0, 0, &f.received, 0, now);
        f.lanes.push(Lane {
            peer: peer.clone(),
            segment: placeholder,
            tree,
            hdr: 0,
            last_progress: now,
        });
        self.next_segment(now, file, &peer, store);
    }

    fn new_transfer_id(&mut self, file: FileId) -> u32 {
        self.next_transfer = self.next_transfer.wrapping_add(1);
        self.transfer_ids.insert(self.next_transfer, file);
        self.next_transfer
    }

    /// Moves source `peer` of a fetch to the next range to ask it for
    /// (with a new transfer id), or finishes the file. A source left with
    /// nothing to send goes back to standby.
    pub(super) fn next_segment(
        &mut self,
        now: Instant,
        file: FileId,
        peer: &A,
        store: &mut dyn Storage,
    ) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        if f.received.is_full() {
            return self.finish_fetch(now, file, store);
        }
        let Some((first, count)) = f.choose_range(Some(peer)) else {
            let Some(f) = self.fetches.get_mut(&file) else {
                return;
            };
            // (The last source stays: the fetch always has one.)
            let i = f.lanes.iter().position(|l| l.peer == *peer);
            if let Some(i) = i.filter(|_| f.lanes.len() > 1) {
                let lane = f.lanes.remove(i);
                self.transfer_ids.remove(&lane.segment.transfer);
                f.standby.push(lane.peer);
            }
            return;
        };
        let Some(old) = f.lane(peer).map(|l| l.segment.transfer) else {
            return;
        };
        self.transfer_ids.remove(&old);
        let transfer = self.new_transfer_id(file);
        let ack_every = self.cfg.window / 4;
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let held = f.received.slice(first, count);
        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *peer) else {
            return;
        };
        lane.segment = match &mut lane.tree {
            None => SegmentReceiver::new(transfer, first, count, &f.received, ack_every, now),
            Some(t) => {
                // Chunk bits first: a chunk is needed unless all its blocks are held.
                let m = t.shape.chunk_leaves();
                let hdr = count.div_ceil(m);
                let mut v = BitVec::new(hdr + count);
                for c in 0..hdr {
                    if (c * m..(c * m + m).min(count)).all(|i| held.get(i)) {
                        v.set(c);
                    }
                }
                for i in held.iter_ones() {
                    v.set(hdr + i);
                }
                t.leaves.clear();
                t.leaves.resize(count as usize, merkle::EMPTY);
                t.unverified.clear();
                t.unverified.resize(count as usize, false);
                lane.hdr = hdr;
                SegmentReceiver::with_vector(transfer, first, v, ack_every, now)
            }
        };
        if let Some(w) = self.want_message(&file, peer) {
            self.send_to(peer, w);
        }
    }

    /// Logs the fork of `have` and `offered` (same file and version, other
    /// instances) met at `peer`; returns whether the offered one wins.
    fn fork(&mut self, peer: &A, have: &Certificate, offered: &Certificate) -> bool {
        let wins = offered.supersedes(have);
        let (kept, dropped) = if wins {
            (offered, have)
        } else {
            (have, offered)
        };
        self.events.push_back(Event::ForkResolved {
            peer: peer.clone(),
            name: have.name().into(),
            version: have.version(),
            kept: kept.instance_id(),
            dropped: dropped.instance_id(),
        });
        wins
    }

    pub(super) fn want_message(&self, file: &FileId, peer: &A) -> Option<Message<'static>> {
        let f = self.fetches.get(file)?;
        let l = f.lane(peer)?;
        Some(Message::Want {
            auth: self.peers.get(peer).map_or([0; TOKEN_LEN], |p| p.theirs),
            transfer: l.segment.transfer,
            instance: f.cert.instance_id(),
            block_size: f.layout.block_size() as u16,
            segment: l.segment.first(),
            vector: l.segment.vector().clone(),
        })
    }

    /// Sends the segment's receive vector. The vector is persisted apart
    /// from acks (see `persist_due`): after a crash, blocks acknowledged
    /// but not persisted are simply asked for again.
    pub(super) fn send_ack(&mut self, now: Instant, file: FileId, peer: &A) {
        let Some(l) = self.fetches.get_mut(&file).and_then(|f| f.lane_mut(peer)) else {
            return;
        };
        l.segment.acked(now);
        if let Some(p) = self.peers.get_mut(peer) {
            p.acked = true;
        }
        let msg = Message::Ack {
            transfer: l.segment.transfer,
            vector: l.segment.vector().clone(),
        };
        self.send_to(peer, msg);
    }

    /// Persists the whole-file receive vector through storage.
    pub(super) fn persist(&mut self, file: FileId, now: Instant, store: &mut dyn Storage) -> bool {
        let Some(f) = self.fetches.get_mut(&file) else {
            return false;
        };
        let partial = Partial {
            block_size: f.layout.block_size(),
            received: f.received.clone(),
        };
        f.unpersisted = 0;
        f.last_persist = now;
        self.counters.persists += 1;
        match store.partial_persist(&f.cert, &partial) {
            Ok(()) => true,
            Err(e) => {
                self.fail_fetch(now, file, RejectReason::Storage(e));
                false
            }
        }
    }

    fn remove_fetch(&mut self, file: &FileId) -> Option<Fetch<A>> {
        let f = self.fetches.remove(file)?;
        for l in &f.lanes {
            self.transfer_ids.remove(&l.segment.transfer);
        }
        Some(f)
    }

    fn remember_finished(
        &mut self,
        now: Instant,
        lane: &Lane<A>,
        instance: InstanceId,
        status: CloseCode,
    ) {
        if self.finished.len() >= FINISHED_KEPT {
            self.finished.pop_front();
        }
        self.finished.push_back(Finished {
            transfer: lane.segment.transfer,
            peer: lane.peer.clone(),
            instance,
            status,
            last_close: now,
        });
    }

    pub(super) fn fail_fetch(&mut self, now: Instant, file: FileId, reason: RejectReason) {
        if let Some(f) = self.remove_fetch(&file) {
            let instance = f.cert.instance_id();
            self.reject(&f.lanes[0].peer, reason);
            for l in &f.lanes {
                self.close(&l.peer, instance, CloseCode::Failed);
                self.remember_finished(now, l, instance, CloseCode::Failed);
            }
            for a in f.standby.iter().chain(f.lanes.iter().map(|l| &l.peer)) {
                self.resolve(now, a, &file, Outcome::Retry);
            }
        }
    }

    /// Source `peer` of a fetch is done with (silent, slow or lying): the
    /// partial is persisted and the source's range is left to the others
    /// (a source that finishes its own takes it: see
    /// [`Fetch::choose_range`]); a standby peer takes the free slot. With
    /// no source left the fetch stops (the partial is kept for a later
    /// contact).
    pub(super) fn drop_source(
        &mut self,
        now: Instant,
        file: FileId,
        peer: &A,
        status: Option<CloseCode>,
        store: &mut dyn Storage,
    ) {
        if !self.persist(file, now, store) {
            return;
        }
        let peers = &self.peers;
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let Some(i) = f.lanes.iter().position(|l| l.peer == *peer) else {
            return;
        };
        let lane = f.lanes.remove(i);
        let instance = f.cert.instance_id();
        let name: String = f.cert.name().into();
        f.standby
            .retain(|a| peers.get(a).is_some_and(|p| now >= p.penalized_until));
        let next = (!f.standby.is_empty()).then(|| f.standby.remove(0));
        let to = next
            .clone()
            .or_else(|| f.lanes.first().map(|l| l.peer.clone()));
        self.transfer_ids.remove(&lane.segment.transfer);
        if let Some(code) = status {
            self.close(peer, instance, code);
        }
        self.remember_finished(now, &lane, instance, status.unwrap_or(CloseCode::Busy));
        match to {
            Some(to) => self.events.push_back(Event::SourceSwitched {
                name,
                from: peer.clone(),
                to,
            }),
            None => {
                if let Some(f) = self.remove_fetch(&file) {
                    self.events.push_back(Event::TransferStalled {
                        peer: peer.clone(),
                        name,
                        received_blocks: f.received.count_ones(),
                        total_blocks: f.received.len(),
                    });
                }
            }
        }
        if let Some(next) = next {
            self.start_lane(now, file, next, store);
        }
        self.resolve(now, peer, &file, Outcome::Retry);
    }

    /// A block or chunk from `peer` failed verification: the sender is
    /// penalised and dropped as a source; what was verified before stays.
    pub(super) fn poisoned(
        &mut self,
        now: Instant,
        file: FileId,
        peer: &A,
        what: &'static str,
        index: u32,
        store: &mut dyn Storage,
    ) {
        let Some(f) = self.fetches.get(&file) else {
            return;
        };
        let name = f.cert.name().into();
        self.counters.poisoned_blocks += 1;
        self.reject(peer, RejectReason::Poisoned { name, what, index });
        if let Some(p) = self.peers.get_mut(peer) {
            p.penalized_until = now + self.cfg.penalty;
        }
        self.drop_source(now, file, peer, Some(CloseCode::Failed), store);
    }

    /// Every block is in: checks (v1) and commits the file, and closes
    /// every source (the one that sent the last block is named in the event).
    fn finish_fetch(&mut self, now: Instant, file: FileId, store: &mut dyn Storage) {
        let Some(mut f) = self.remove_fetch(&file) else {
            return;
        };
        if let Some(i) = f.lanes.iter().position(|l| l.segment.last_data == now) {
            f.lanes.swap(0, i);
        }
        // v2: every block was verified against the tree as it arrived. v1:
        // only the whole-file hash can tell, so read the file back.
        let verdict = match f.tree {
            Some(_) => Ok(true),
            None => hash_partial(store, &f.cert).map(|h| h == f.cert.content_hash()),
        };
        let cert = f.cert.clone();
        let outcome = match verdict {
            Ok(true) => match self.files.get(&file) {
                Some(have) if !cert.supersedes(have) => Err(RejectReason::StaleVersion {
                    name: cert.name().into(),
                    have: have.version(),
                    offered: cert.version(),
                }),
                _ => match store.partial_commit_begin(&cert) {
                    Ok(true) => Ok(()),
                    Ok(false) => {
                        self.committing.insert(file, f);
                        return;
                    }
                    Err(e) => Err(RejectReason::Storage(e)),
                },
            },
            Ok(false) => Err(RejectReason::ContentMismatch {
                name: cert.name().into(),
                version: cert.version(),
            }),
            Err(e) => Err(RejectReason::Storage(e)),
        };
        self.conclude_fetch(now, f, outcome, store);
    }

    /// The store finished the commit of `cert` that
    /// [`Storage::partial_commit_begin`] left pending: the file becomes
    /// held (or, on an error, the fetch fails) and its sources are closed.
    pub fn commit_finished(
        &mut self,
        now: Instant,
        cert: &Certificate,
        result: Result<(), StorageError>,
        store: &mut dyn Storage,
    ) {
        let file = cert.file_id();
        let ours = self
            .committing
            .get(&file)
            .is_some_and(|f| f.cert.instance_id() == cert.instance_id());
        if let Some(f) = ours.then(|| self.committing.remove(&file)).flatten() {
            self.conclude_fetch(now, f, result.map_err(RejectReason::Storage), store);
        }
    }

    /// Ends a complete fetch whose commit succeeded or failed.
    fn conclude_fetch(
        &mut self,
        now: Instant,
        f: Fetch<A>,
        outcome: Result<(), RejectReason>,
        store: &mut dyn Storage,
    ) {
        let file = f.cert.file_id();
        let cert = f.cert.clone();
        let peer = f.lanes[0].peer.clone();
        let (status, result) = match outcome {
            Ok(()) => {
                // Trust and version were checked on offer and just above.
                let _ = self.add_file(cert.clone());
                self.events.push_back(Event::FileUpdated {
                    peer: peer.clone(),
                    name: cert.name().into(),
                    version: cert.version(),
                    instance: cert.instance_id(),
                });
                (CloseCode::Complete, Outcome::Done)
            }
            Err(reason) => {
                // Discarding a partial is best effort; the committed file is untouched either way.
                let _ = store.partial_discard(&cert);
                self.reject(&peer, reason);
                (CloseCode::Failed, Outcome::Retry)
            }
        };
        for l in &f.lanes {
            self.close(&l.peer, cert.instance_id(), status);
            self.remember_finished(now, l, cert.instance_id(), status);
            self.resolve(now, &l.peer, &file, result);
        }
        for a in &f.standby {
            let code = if status == CloseCode::Complete {
                CloseCode::HaveNewer
            } else {
                CloseCode::Failed
            };
            self.close(a, cert.instance_id(), code);
            self.resolve(now, a, &file, result);
        }
    }

    /// Data for a transfer this node no longer runs: if it ended recently,
    /// the sender missed the Close; send it again (at most once per `ack_idle`).
    pub(super) fn lost_close(&mut self, now: Instant, from: &A, transfer: u32) {
        let idle = self.cfg.ack_idle;
        let Some(f) = self
            .finished
            .iter_mut()
            .find(|f| f.transfer == transfer && f.peer == *from)
        else {
            return;
        };
        if now.saturating_since(f.last_close) < idle {
            return;
        }
        f.last_close = now;
        let (instance, status) = (f.instance, f.status);
        self.close(from, instance, status);
    }

    /// Idle acks, persists, slow sources and stalls. A fetch stalls when
    /// its *peer* has sent no data block for any of our fetches for
    /// `transfer_timeout`: a sender serves one file (or `uploads_per_peer`)
    /// at a time, so a fetch waiting its turn gets no data for as long as
    /// the files before it take, while the sender is alive and busy for us.
    /// Its idle acks (at least three per `transfer_timeout`) keep it alive
    /// at the sender meanwhile. Each source of a fetch is watched apart:
    /// one that makes no progress for `slow_peer_timeout` while another
    /// peer sends or offered the same version loses its slot (its range is
    /// left to the others, or to a standby peer).
    pub(super) fn fetch_timers(&mut self, now: Instant, store: &mut dyn Storage) {
        let files: Vec<FileId> = self.fetches.keys().copied().collect();
        let cap = self.ack_cap();
        for file in files {
            let Some(f) = self.fetches.get(&file) else {
                continue;
            };
            let others = f.lanes.len() > 1 || !f.standby.is_empty();
            let (mut silent, mut slow) = (Vec::new(), Vec::new());
            for l in &f.lanes {
                let heard = self
                    .data_from
                    .get(&l.peer)
                    .map_or(l.segment.last_data, |&t| t.max(l.segment.last_data));
                if now.saturating_since(heard) >= self.cfg.transfer_timeout {
                    silent.push(l.peer.clone());
                } else if others
                    && now.saturating_since(l.last_progress) >= self.cfg.slow_peer_timeout
                {
                    slow.push(l.peer.clone());
                }
            }
            for p in &silent {
                self.drop_source(now, file, p, None, store);
            }
            for p in &slow {
                // The last source keeps its slot: there is no one to give it to.
                let alone = self
                    .fetches
                    .get(&file)
                    .is_none_or(|f| f.lanes.len() < 2 && f.standby.is_empty());
                if !alone {
                    self.drop_source(now, file, p, Some(CloseCode::Busy), store);
                }
            }
            let Some(f) = self.fetches.get(&file) else {
                continue;
            };
            if f.unpersisted > 0
                && now.saturating_since(f.last_persist) >= self.cfg.persist_interval
                && !self.persist(file, now, store)
            {
                continue;
            }
            let Some(f) = self.fetches.get_mut(&file) else {
                continue;
            };
            let mut idle = Vec::new();
            for l in &mut f.lanes {
                if now >= l.segment.idle_deadline(self.cfg.ack_idle, cap) {
                    // The idle vector goes as a Want: it also (re)creates the
                    // upload at a sender that lost the first Want.
                    l.segment.idle_acks += 1;
                    l.segment.acked(now);
                    idle.push(l.peer.clone());
                }
            }
            for p in idle {
                if let Some(w) = self.want_message(&file, &p) {
                    self.send_to(&p, w);
                }
            }
        }
    }
}

/// `H` over a partial file's bytes, read back from storage.
fn hash_partial(store: &mut dyn Storage, cert: &Certificate) -> Result<Id160, StorageError> {
    let mut h = ContentHasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut off = 0u64;
    while off < cert.size() {
        let n = (cert.size() - off).min(buf.len() as u64) as usize;
        store.partial_read(cert, off, &mut buf[..n])?;
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok(h.finish())
}
