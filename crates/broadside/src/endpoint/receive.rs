//! Received blocks and hash chunks: checked against the block tree,
//! written, and marked in every source's vector.

use super::*;

impl<A: PeerAddr> Endpoint<A> {
    pub(super) fn on_data(
        &mut self,
        now: Instant,
        from: &A,
        transfer: u32,
        block: u16,
        bytes: &[u8],
        store: &mut dyn Storage,
    ) {
        let Some(&file) = self.transfer_ids.get(&transfer) else {
            return self.lost_close(now, from, transfer);
        };
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let Some(lane) = f
            .lanes
            .iter_mut()
            .find(|l| l.peer == *from && l.segment.transfer == transfer)
        else {
            return;
        };
        let rel = u32::from(block);
        match lane.segment.classify(rel) {
            BlockKind::OutOfRange => self.reject(from, RejectReason::BadBlock),
            BlockKind::Duplicate { resumed } => {
                // The peer is alive and serving us: fetches waiting their turn
                // behind this one stay open (see `fetch_timers`).
                self.data_from.insert(from.clone(), now);
                self.counters.duplicate_blocks += 1;
                if resumed {
                    self.counters.resumed_blocks_resent += 1;
                }
                if lane.segment.duplicate(now, self.cfg.dup_ack_holdoff) {
                    self.send_ack(now, file, from);
                }
            }
            BlockKind::New if rel < lane.hdr => {
                // A hash chunk of a v2 file.
                let Some(t) = &mut lane.tree else {
                    return;
                };
                let m = t.shape.chunk_leaves();
                let chunk = lane.segment.first() / m + rel;
                let Some(leaves) = t.shape.verify_chunk(&t.root, chunk, bytes) else {
                    return self.poisoned(now, file, from, "hash chunk", chunk, store);
                };
                let at = (rel * m) as usize;
                t.leaves[at..at + leaves.len()].copy_from_slice(&leaves);
                let early: Vec<u32> = (at..at + leaves.len())
                    .filter(|&i| t.unverified[i])
                    .map(|i| i as u32)
                    .collect();
                let held = !early.is_empty();
                for i in early {
                    match self.verify_stored(file, from, i, store) {
                        Ok(Some(abs)) => self.held_elsewhere(now, file, from, abs, store),
                        Ok(None) => {}
                        Err(bad) => return self.poisoned(now, file, from, "block", bad, store),
                    }
                }
                self.accept(now, file, from, rel, store);
                // Blocks held since their chunk was lost are in the vector
                // now: tell the sender before its pass sends them again.
                let acked = self
                    .fetches
                    .get(&file)
                    .and_then(|f| f.lane(from))
                    .is_none_or(|l| l.segment.last_ack == now);
                if held && !acked {
                    self.send_ack(now, file, from);
                }
            }
            BlockKind::New => {
                let i = rel - lane.hdr;
                let abs = lane.segment.first() + i;
                let (offset, len) = f.layout.block_range(abs);
                if let Some(t) = &mut lane.tree {
                    if bytes.len() != len {
                        return self.poisoned(now, file, from, "block", abs, store);
                    }
                    if !lane.segment.vector().get(i / t.shape.chunk_leaves()) {
                        // Its hash chunk was lost: keep the block, unmarked,
                        // and check it when the chunk comes (unless another
                        // source's copy waits there already: the first one
                        // stored is the one checked).
                        self.data_from.insert(from.clone(), now);
                        let taken = |l: &Lane<A>| {
                            l.covers(abs)
                                && l.tree.as_ref().is_some_and(|t| {
                                    t.unverified[(abs - l.segment.first()) as usize]
                                })
                        };
                        let free = !f.lanes.iter().any(taken);
                        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *from) else {
                            return;
                        };
                        let Some(t) = &mut lane.tree else {
                            return;
                        };
                        // A stored block is marked in this source's
                        // vector (not in the file's, nor persisted), so that
                        // its sender does not send it again: only the chunk
                        // must come again. The chunk's bit stays clear until
                        // then, so the source's range is not complete before.
                        let mut due = false;
                        if free {
                            if let Err(e) = store.partial_write(&f.cert, offset, bytes) {
                                return self.fail_fetch(now, file, RejectReason::Storage(e));
                            }
                            t.unverified[i as usize] = true;
                            self.counters.unverified_blocks += 1;
                            due = lane.segment.mark(rel, now);
                        }
                        // The pass is over, and the chunk must come again:
                        // the vector goes as a Want, which starts the next
                        // pass at once (an Ack without this block would not).
                        if lane.segment.ends_pass(rel) {
                            lane.segment.acked(now);
                            if let Some(w) = self.want_message(&file, from) {
                                self.send_to(from, w);
                            }
                        } else if due {
                            self.send_ack(now, file, from);
                        }
                        return;
                    }
                    if merkle::leaf(bytes) != t.leaves[i as usize] {
                        return self.poisoned(now, file, from, "block", abs, store);
                    }
                } else if bytes.len() != len {
                    return self.reject(from, RejectReason::BadBlock);
                }
                if let Err(e) = store.partial_write(&f.cert, offset, bytes) {
                    return self.fail_fetch(now, file, RejectReason::Storage(e));
                }
                self.counters.file_bytes_received += len as u64;
                f.received.set(abs);
                f.unpersisted += 1;
                self.accept(now, file, from, rel, store);
                self.held_elsewhere(now, file, from, abs, store);
            }
        }
    }

    /// Checks lane-relative block `i` of source `peer`, stored before its
    /// hash chunk came, against the chunk's leaf; marks it if it matches
    /// (returning its absolute index unless another source delivered it
    /// meanwhile), else returns its absolute index as an error (the source
    /// lied).
    fn verify_stored(
        &mut self,
        file: FileId,
        peer: &A,
        i: u32,
        store: &mut dyn Storage,
    ) -> Result<Option<u32>, u32> {
        let Some(f) = self.fetches.get_mut(&file) else {
            return Ok(None);
        };
        let Some(lane) = f.lanes.iter_mut().find(|l| l.peer == *peer) else {
            return Ok(None);
        };
        let Some(t) = &mut lane.tree else {
            return Ok(None);
        };
        t.unverified[i as usize] = false;
        let abs = lane.segment.first() + i;
        if f.received.get(abs) {
            return Ok(None);
        }
        let (offset, len) = f.layout.block_range(abs);
        let mut buf = vec![0u8; len];
        let ok = store.partial_read(&f.cert, offset, &mut buf).is_ok()
            && merkle::leaf(&buf) == t.leaves[i as usize];
        if !ok {
            return Err(abs);
        }
        f.received.set(abs);
        f.unpersisted += 1;
        lane.segment.mark(lane.hdr + i, lane.segment.last_data);
        self.counters.file_bytes_received += len as u64;
        Ok(Some(abs))
    }

    /// Marks a new, verified block or chunk; acks, persists and moves to
    /// the next range as due.
    fn accept(&mut self, now: Instant, file: FileId, from: &A, rel: u32, store: &mut dyn Storage) {
        self.data_from.insert(from.clone(), now);
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let persist = f.unpersisted >= self.cfg.persist_blocks
            || (f.unpersisted > 0
                && now.saturating_since(f.last_persist) >= self.cfg.persist_interval);
        let Some(lane) = f.lane_mut(from) else {
            return;
        };
        lane.last_progress = now;
        // The first data from a peer is acked at once: until then its
        // sender keeps to three times what it heard from this node.
        let first = self.peers.get(from).is_some_and(|p| !p.acked);
        let due = lane.segment.mark(rel, now) || first;
        let complete = lane.segment.is_complete();
        if persist && !complete && !self.persist(file, now, store) {
            return;
        }
        if due {
            self.send_ack(now, file, from);
        }
        if complete {
            self.next_segment(now, file, from, store);
        }
    }

    /// Block `abs` arrived from `from`: the other sources whose range holds
    /// it mark it too (their senders learn it from their next vector); a
    /// source whose range is then complete moves on.
    fn held_elsewhere(
        &mut self,
        now: Instant,
        file: FileId,
        from: &A,
        abs: u32,
        store: &mut dyn Storage,
    ) {
        let Some(f) = self.fetches.get_mut(&file) else {
            return;
        };
        let mut due = Vec::new();
        let mut complete = Vec::new();
        for l in f
            .lanes
            .iter_mut()
            .filter(|l| l.peer != *from && l.covers(abs))
        {
            let i = abs - l.segment.first();
            let mut ack = l.segment.held_elsewhere(l.hdr + i);
            if let Some(t) = &mut l.tree {
                t.unverified[i as usize] = false;
                // A chunk whose blocks are all held is needed no more.
                let m = t.shape.chunk_leaves();
                let c = i / m;
                let count = l.segment.vector().len() - l.hdr;
                let v = l.segment.vector();
                // (Held and verified: a block of this source's kept
                // unverified still needs the chunk.)
                let held = |j: u32| v.get(l.hdr + j) && !t.unverified[j as usize];
                if (c * m..(c * m + m).min(count)).all(held) {
                    ack |= l.segment.held_elsewhere(c);
                }
            }
            if l.segment.is_complete() {
                complete.push(l.peer.clone());
            } else if ack {
                due.push(l.peer.clone());
            }
        }
        for p in due {
            self.send_ack(now, file, &p);
        }
        for p in complete {
            self.next_segment(now, file, &p, store);
        }
    }
}
