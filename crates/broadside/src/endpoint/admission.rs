//! Admission of peers: address validation by token echo, the peer table
//! and its per-peer rate limits.

use super::*;

impl<A: PeerAddr> Endpoint<A> {
    /// Asks an address that is not validated to echo a token, if the reply
    /// is at most three times what it sent (it is never larger, in fact:
    /// the smallest packet that gets one is a Token packet itself).
    pub(super) fn challenge(&mut self, now: Instant, to: &A, received: usize) {
        if wire::TOKEN_PACKET_LEN > received || !self.challenges.try_take(now, 1.0) {
            return;
        }
        let token = self.tokens.issue(to, now, &[0; TOKEN_LEN]);
        self.send_to(
            to,
            Message::Token {
                echo: [0; TOKEN_LEN],
                token,
            },
        );
    }

    /// A Token packet (see [`validate`](crate::validate) for the exchange).
    /// A challenge is answered with its echo and a token bound to it. An
    /// echo of this node's challenge, or of its answer to the token the
    /// packet carries, proves the sender receives at its address: it is
    /// admitted (or stays), the echoed token becomes a secret its Wants may
    /// carry, and the token it sent the one this node's Wants carry. Only
    /// an echo of a challenge is replied to (echoing the answer, which
    /// completes the exchange on the other side).
    pub(super) fn on_token(&mut self, now: Instant, from: &A, echo: Token, token: Token) {
        let absent = [0u8; TOKEN_LEN];
        if echo == absent {
            if token == absent || !self.challenges.try_take(now, 1.0) {
                return;
            }
            let answer = self.tokens.issue(from, now, &token);
            if let Some(p) = self.peers.get_mut(from) {
                // A validated peer runs the exchange again (it restarted, or
                // the last Token was lost): only the address's owner sees
                // the answer, so its Wants may carry it at once.
                p.rx += wire::TOKEN_PACKET_LEN as u64;
                p.remember(answer);
            }
            return self.send_to(
                from,
                Message::Token {
                    echo: token,
                    token: answer,
                },
            );
        }
        let challenged = self.tokens.check(from, now, &echo, &absent);
        let answered =
            !challenged && token != absent && self.tokens.check(from, now, &echo, &token);
        if !challenged && !answered {
            self.counters.unvalidated += 1;
            return;
        }
        let fresh = !self.peers.contains_key(from);
        if fresh && !self.admit_peer(now, from) {
            return;
        }
        if let Some(p) = self.peers.get_mut(from) {
            p.last_seen = now;
            p.rx += wire::TOKEN_PACKET_LEN as u64;
            p.remember(echo);
            if token != absent {
                p.theirs = token;
            }
        }
        if fresh {
            // Let the new peer see our content at once, not at the next beacon.
            let beacon = self.beacon_message();
            self.send_to(from, beacon);
        }
        if challenged && token != absent {
            self.send_to(
                from,
                Message::Token {
                    echo: token,
                    token: echo,
                },
            );
        }
    }

    pub(super) fn beacon_message(&self) -> Message<'static> {
        Message::Beacon {
            node: self.node_id,
            file_count: self.files.len() as u32,
            content_hash: self.content_hash,
        }
    }

    /// Whether a peer holds a sync, offer or transfer with this node.
    fn busy_with(&self, a: &A) -> bool {
        self.initiators.contains_key(a)
            || self.responders.contains_key(a)
            || self.offers.keys().any(|(p, _)| p == a)
            || self.fetches.values().any(|f| f.has_source(a))
            || self.uploads.keys().any(|(p, _)| p == a)
    }

    /// Creates the state of a validated peer, within the limits on peers in
    /// all and per network prefix; idle peers make room.
    fn admit_peer(&mut self, now: Instant, from: &A) -> bool {
        let prefix = from.prefix();
        let full = |ep: &Self| {
            ep.peers.len() >= ep.cfg.max_peers
                || ep.peers.keys().filter(|a| a.prefix() == prefix).count()
                    >= ep.cfg.max_peers_per_prefix
        };
        if full(self) {
            let idle = self.cfg.beacon_interval * 4;
            let gone: Vec<A> = self
                .peers
                .iter()
                .filter(|(a, p)| now.saturating_since(p.last_seen) >= idle && !self.busy_with(a))
                .map(|(a, _)| a.clone())
                .collect();
            for a in gone {
                self.peers.remove(&a);
            }
        }
        if full(self) {
            self.counters.rate_limited += 1;
            return false;
        }
        let c = &self.cfg;
        self.peers.insert(
            from.clone(),
            PeerState {
                last_seen: now,
                secrets: Vec::with_capacity(SECRETS_KEPT),
                theirs: [0; TOKEN_LEN],
                rx: 0,
                tx: 0,
                proven: false,
                acked: false,
                node: None,
                penalized_until: now,
                backoff: c.retry_backoff,
                buckets: [
                    TokenBucket::new(c.beacon_rate, 2.0 * c.beacon_rate, now),
                    TokenBucket::new(c.request_rate, 2.0 * c.request_rate, now),
                    TokenBucket::new(
                        c.transfer_rate,
                        (2.0 * c.transfer_rate).max(2.0 * c.group_size as f64),
                        now,
                    ),
                ],
                last_beacon: None,
                limited_reported: [false; 3],
                retry_after: now,
            },
        );
        true
    }

    /// Takes a token from `bucket` (0 beacons, 1 discovery, 2 transfer);
    /// logs the first refusal of an episode. Malformed packets (`kind ==
    /// None`) draw from the discovery bucket and are never logged as limited.
    pub(super) fn take(
        &mut self,
        now: Instant,
        from: &A,
        bucket: usize,
        kind: Option<MsgType>,
    ) -> bool {
        let ok = self
            .peers
            .get_mut(from)
            .is_some_and(|p| p.buckets[bucket].try_take(now, 1.0));
        match kind {
            Some(k) => self.after_limit(from, ok, k, bucket),
            None => ok,
        }
    }

    fn after_limit(&mut self, from: &A, ok: bool, kind: MsgType, bucket: usize) -> bool {
        let Some(p) = self.peers.get_mut(from) else {
            return ok;
        };
        if ok {
            p.limited_reported[bucket] = false;
        } else {
            self.counters.rate_limited += 1;
            if !p.limited_reported[bucket] {
                p.limited_reported[bucket] = true;
                self.reject(from, RejectReason::RateLimited(kind));
            }
        }
        ok
    }
}
