//! Outgoing files: Wants start uploads, Acks and Closes steer them, and
//! the pacer and window decide which upload sends its next block.

use super::*;

impl<A: PeerAddr> Endpoint<A> {
    /// Builds (once per version) the tree of a v2 file this node sends,
    /// from the leaves the store keeps if they match the certificate's
    /// root, else from its stored bytes; refuses a file whose bytes do not
    /// match it.
    fn ensure_tree(
        &mut self,
        cert: &Certificate,
        store: &mut dyn Storage,
    ) -> Result<(), RejectReason> {
        let Some((block_size, root)) = cert.tree() else {
            return Ok(());
        };
        if self.trees.contains_key(&cert.instance_id()) {
            return Ok(());
        }
        // A list padded with empty leaves has the same root: check the count too.
        let blocks = cert.size().div_ceil(u64::from(block_size)).max(1);
        let kept = store
            .tree_leaves(cert)
            .filter(|l| l.len() as u64 == blocks)
            .and_then(|l| Tree::new(l, block_size))
            .filter(|t| t.root() == root);
        if let Some(t) = kept {
            self.trees.insert(cert.instance_id(), t);
            return Ok(());
        }
        let mut b = TreeBuilder::new(block_size);
        let mut buf = vec![0u8; 1 << 16];
        let mut off = 0u64;
        while off < cert.size() {
            let n = (cert.size() - off).min(buf.len() as u64) as usize;
            store
                .read(cert, off, &mut buf[..n])
                .map_err(RejectReason::Storage)?;
            b.update(&buf[..n]);
            off += n as u64;
        }
        let (_, _, leaves) = b.finish();
        match Tree::new(leaves, block_size) {
            Some(t) if t.root() == root => {
                self.trees.insert(cert.instance_id(), t);
                Ok(())
            }
            _ => Err(RejectReason::ContentMismatch {
                name: cert.name().into(),
                version: cert.version(),
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_want(
        &mut self,
        now: Instant,
        from: &A,
        transfer: u32,
        instance: InstanceId,
        block_size: u16,
        first: u32,
        vector: BitVec,
        store: &mut dyn Storage,
    ) {
        // The vector of a file being sent answers the blocks in flight, and
        // a new request starts afresh; an idle Want of a file waiting its
        // turn says nothing of them.
        let waiting = self
            .uploads
            .get(&(from.clone(), transfer))
            .is_some_and(|u| u.sender.probe().is_none());
        if !waiting {
            self.unanswered.remove(from);
        }
        if let Some(up) = self.uploads.get_mut(&(from.clone(), transfer)) {
            if let Some(p) = self.peers.get_mut(from) {
                p.proven = true;
            }
            if !up.sender.on_request(&vector, now) {
                self.reject(from, RejectReason::InvalidVector("vector length changed"));
            }
            self.eligible_dirty = true;
            return;
        }
        let Some(cert) = self
            .by_instance
            .get(&instance)
            .and_then(|f| self.files.get(f))
            .cloned()
        else {
            self.close(from, instance, CloseCode::Gone);
            return;
        };
        if usize::from(block_size) > self.cfg.packet_size - wire::DATA_HEADER_LEN || block_size < 16
        {
            return self.reject(from, RejectReason::InvalidVector("block size"));
        }
        let Some(layout) =
            Layout::new(cert.size(), u32::from(block_size), wire::MAX_SEGMENT_BLOCKS)
        else {
            return self.reject(from, RejectReason::InvalidVector("block size"));
        };
        // v2: the vector is [hash chunks][blocks] over whole chunks.
        let (mut hdr, mut first_chunk, mut count) = (0, 0, vector.len());
        if let Some((tree_block, _)) = cert.tree() {
            let shape = Shape::new(layout.blocks(), tree_block);
            let Some(m) = shape
                .filter(|_| tree_block == u32::from(block_size))
                .map(|s| s.chunk_leaves())
            else {
                return self.reject(from, RejectReason::InvalidVector("block size"));
            };
            count = vector.len() - vector.len().div_ceil(m + 1);
            hdr = count.div_ceil(m);
            if first & (m - 1) != 0 || hdr + count != vector.len() {
                return self.reject(
                    from,
                    RejectReason::InvalidVector("segment not made of whole chunks"),
                );
            }
            first_chunk = first / m;
        }
        let fits = first
            .checked_add(count)
            .is_some_and(|end| end <= layout.blocks());
        if count == 0 || !fits {
            return self.reject(
                from,
                RejectReason::InvalidVector("segment outside the file"),
            );
        }
        if self.uploads.len() >= self.cfg.max_peers * 4 {
            return self.reject(from, RejectReason::RateLimited(MsgType::Want));
        }
        if let Err(reason) = self.ensure_tree(&cert, store) {
            self.reject(from, reason);
            self.close(from, instance, CloseCode::Gone);
            return;
        }
        // A new Want for the same version replaces an older transfer (the
        // receiver restarted, moved on to another segment, or switched to us).
        self.uploads
            .retain(|(a, _), u| !(a == from && u.cert.instance_id() == instance));
        if let Some(o) = self.offers.get_mut(&(from.clone(), instance)) {
            o.stage = OfferStage::Sending;
        }
        self.next_upload_seq += 1;
        self.eligible_dirty = true;
        self.uploads.insert(
            (from.clone(), transfer),
            Upload {
                cert,
                layout,
                sender: SegmentSender::new(first, vector, now),
                hdr,
                first_chunk,
                first_block: first,
                seq: self.next_upload_seq,
                resending_since: None,
                probe_at: now,
            },
        );
    }

    pub(super) fn on_ack(&mut self, now: Instant, from: &A, transfer: u32, vector: &BitVec) {
        let key = (from.clone(), transfer);
        let Some(up) = self.uploads.get_mut(&key) else {
            return;
        };
        self.unanswered.remove(from);
        self.eligible_dirty = true;
        if let Some(p) = self.peers.get_mut(from) {
            // Its transfer id, which only the authenticated Want carried,
            // answers the data sent (see `PeerState::proven`).
            p.proven = true;
        }
        if !up.sender.on_vector(vector, now) {
            return self.reject(
                from,
                RejectReason::InvalidVector("vector length does not match the segment"),
            );
        }
        if up.sender.is_complete() {
            let instance = up.cert.instance_id();
            self.uploads.remove(&key);
            // Wait for the receiver's next Want or its Close.
            if let Some(o) = self.offers.get_mut(&(from.clone(), instance)) {
                o.stage = OfferStage::AwaitWant;
                o.deadline = now + self.cfg.offer_timeout;
                o.retries = 0;
            }
        }
    }

    pub(super) fn on_close(
        &mut self,
        now: Instant,
        from: &A,
        instance: InstanceId,
        status: CloseCode,
    ) {
        self.uploads
            .retain(|(a, _), u| !(a == from && u.cert.instance_id() == instance));
        self.eligible_dirty = true;
        let Some(offer) = self.offers.remove(&(from.clone(), instance)) else {
            return;
        };
        self.events.push_back(Event::OfferClosed {
            peer: from.clone(),
            name: offer.cert.name().into(),
            status: Some(status),
        });
        let outcome = match status {
            CloseCode::Complete
            | CloseCode::HaveNewer
            | CloseCode::Refused
            | CloseCode::NotCommon => Outcome::Done,
            CloseCode::Busy | CloseCode::Failed | CloseCode::Gone => Outcome::Retry,
        };
        self.resolve(now, from, &offer.cert.file_id(), outcome);
    }

    /// Longest interval between the idle acks of a fetch: three per
    /// `transfer_timeout`, so that a fetch waiting its turn stays alive at the
    /// sender even if one or two of them are lost.
    pub(super) fn ack_cap(&self) -> Duration {
        self.cfg.transfer_timeout / 3
    }

    /// How often a sender whose pass has ended re-sends its last block while
    /// no vector comes: the receiver acks a duplicate at most once per
    /// `dup_ack_holdoff`, so probing faster draws nothing more.
    fn probe_interval(&self) -> Duration {
        self.cfg.dup_ack_holdoff.max(Duration::from_millis(1))
    }

    /// Whether `peer` may be sent another block before a vector from it
    /// (see [`Config::window`]).
    pub(super) fn window_open(&self, peer: &A) -> bool {
        self.cfg.window == 0
            || self
                .unanswered
                .get(peer)
                .is_none_or(|&n| n < self.cfg.window)
    }

    /// How long a re-send pass may go unanswered before the upload pauses.
    pub(super) fn silence(&self) -> Duration {
        self.cfg.ack_idle * 4
    }

    pub(super) fn offer_wait(&self) -> Duration {
        self.cfg.offer_timeout * (self.cfg.offer_retries + 2)
    }

    /// Appends the next datagram to `out`.
    pub(super) fn write_next(
        &mut self,
        now: Instant,
        store: &mut dyn Storage,
        out: &mut Vec<u8>,
    ) -> Option<(Destination<A>, PacketKind)> {
        if let Some(t) = self.queue.pop_front() {
            self.counters.tx.add(t.kind, t.payload.len());
            out.extend_from_slice(&t.payload);
            return Some((t.destination, t.kind));
        }
        let silence = self.silence();
        loop {
            let key = self.next_upload(now)?;
            if self
                .uploads
                .get(&key)
                .is_some_and(|u| u.paused(now, silence))
            {
                self.eligible_dirty = true;
                continue;
            }
            if !self.may_send(&key.0, self.cfg.packet_size) {
                // Left out of `eligible` once it is rebuilt.
                self.eligible_dirty = true;
                continue;
            }
            if let Some(p) = &mut self.pacer {
                if !p.try_take(now, self.cfg.packet_size as f64) {
                    return None;
                }
            }
            let probe = self.probe_interval();
            let open = self.window_open(&key.0);
            let up = self.uploads.get_mut(&key)?;
            self.last_upload = Some(key.clone());
            let next = if up.sender.in_pass() && open {
                if up.sender.at_pass_end() && up.resending_since.is_none() {
                    up.resending_since = Some(now);
                }
                up.sender.next_block()
            } else {
                up.resending_since.get_or_insert(now);
                up.sender.probe()
            };
            let Some((rel, _)) = next else {
                self.eligible_dirty = true;
                continue;
            };
            if !up.sender.in_pass() || !open {
                // The pass has ended, or this was a probe: wait for the vector.
                up.probe_at = now + probe;
                self.eligible_dirty = true;
            }
            let start = out.len();
            wire::emit_data_header(out, key.1, rel);
            let rel = u32::from(rel);
            let len = if rel < up.hdr {
                let tree = self.trees.get(&up.cert.instance_id())?;
                tree.chunk(up.first_chunk + rel, out);
                out.len() - start - wire::DATA_HEADER_LEN
            } else {
                let abs = up.first_block + rel - up.hdr;
                let (offset, len) = up.layout.block_range(abs);
                let at = out.len();
                out.resize(at + len, 0);
                if let Err(e) = store.read(&up.cert, offset, &mut out[at..]) {
                    out.truncate(start);
                    self.uploads.remove(&key);
                    self.eligible_dirty = true;
                    self.reject(&key.0, RejectReason::Storage(e));
                    continue;
                }
                len
            };
            self.counters.tx.add(PacketKind::Data, out.len() - start);
            if let Some(p) = self.peers.get_mut(&key.0) {
                p.tx += (out.len() - start) as u64;
            }
            self.counters.file_bytes_sent += len as u64;
            let blind = self.unanswered.entry(key.0.clone()).or_insert(0);
            *blind += 1;
            if *blind == self.cfg.window {
                self.eligible_dirty = true;
            }
            return Some((Destination::Peer(key.0), PacketKind::Data));
        }
    }

    /// The key of the upload to send the next data block of: round-robin
    /// over the eligible uploads, which are recomputed (sorted) only when an
    /// ack, a want, a close or the end of a pass changed them, not per packet.
    fn next_upload(&mut self, now: Instant) -> Option<(A, u32)> {
        if self.eligible_dirty || self.next_probe.is_some_and(|t| now >= t) {
            self.eligible_dirty = false;
            self.rebuild_eligible(now);
        }
        // `eligible` is sorted: the next key after the last one served.
        let at = self
            .last_upload
            .as_ref()
            .map_or(0, |last| self.eligible.partition_point(|k| k <= last));
        self.eligible.get(at).or(self.eligible.first()).cloned()
    }

    fn rebuild_eligible(&mut self, now: Instant) {
        let silence = self.silence();
        // Uploads are keyed (peer, transfer): each peer's are contiguous.
        let mut chosen = std::mem::take(&mut self.eligible);
        chosen.clear();
        let mut next_probe: Option<Instant> = None;
        let mut peer: Vec<(&(A, u32), &Upload)> = Vec::new();
        let mut flush = |peer: &mut Vec<(&(A, u32), &Upload)>| {
            peer.sort_by_key(|(_, u)| (u.sender.remaining(u.layout.blocks()), u.seq));
            let n = self.cfg.uploads_per_peer;
            let before = chosen.len();
            // While a window is open, files whose pass waits for its vector
            // give way to the next ones; a closed window stops them all.
            let open = peer.first().is_some_and(|(k, _)| self.window_open(&k.0));
            // A peer over its amplification bound gets nothing, not even probes.
            if peer
                .first()
                .is_some_and(|(k, _)| !self.may_send(&k.0, self.cfg.packet_size))
            {
                peer.clear();
                return;
            }
            chosen.extend(
                peer.iter()
                    .filter(|(_, u)| open && u.sender.in_pass())
                    .take(n)
                    .map(|(k, _)| (*k).clone()),
            );
            if chosen.len() == before {
                // Every pass has ended or the window is closed: probe those
                // due (the last block they sent), wait for the others.
                let sent = |u: &Upload| u.sender.probe().is_some();
                for (k, u) in peer.iter().filter(|(_, u)| sent(u)).take(n) {
                    if now >= u.probe_at {
                        chosen.push((*k).clone());
                    } else {
                        next_probe = Some(next_probe.map_or(u.probe_at, |t| t.min(u.probe_at)));
                    }
                }
            }
            peer.clear();
        };
        for (k, u) in &self.uploads {
            if u.sender.is_complete() || u.paused(now, silence) {
                continue;
            }
            if peer.first().is_some_and(|(p, _)| p.0 != k.0) {
                flush(&mut peer);
            }
            peer.push((k, u));
        }
        flush(&mut peer);
        chosen.sort();
        self.eligible = chosen;
        self.next_probe = next_probe;
    }
}
