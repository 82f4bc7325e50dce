//! Version-aware content discovery (§4.1).
//!
//! The initiator splits its files into random groups of `g` and, per group
//! (a *round*), sends a file filter (fileIds) and a version filter
//! (instanceIds), each half of a packet. The responder returns a match
//! filter of the fileIds it holds with a *different* instance; the initiator
//! returns the 22-byte records (fileId, version) of its group files that hit
//! the match filter, packed into as few packets as possible; the responder
//! answers with a plan (push, pull or nothing per record). When every planned
//! exchange is resolved the initiator moves to the next group.
//!
//! Lost messages are recovered by the initiator: it re-sends its last request
//! after `timeout` (the paper restarts discovery after 1 s) and the responder
//! answers a repeated request from its cache, so retransmission is idempotent.
//!
//! Deviation: when the match filter is empty or no group file hits it, the
//! round ends without a records packet (the paper sends one per round).

use crate::bloom::Bloom;
use crate::id::{FileId, InstanceId};
use crate::time::Instant;
use crate::wire::{self, Action, FileRecord, Message};
use core::time::Duration;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;

/// What discovery needs to know about a local file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalFile {
    /// Version-independent id.
    pub file_id: FileId,
    /// Version-dependent id.
    pub instance: InstanceId,
    /// The version.
    pub version: u16,
}

/// Sizes derived from the packet size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Files per group (`g`).
    pub group_size: usize,
    /// Hash functions per filter.
    pub hash_count: u8,
    /// Largest datagram.
    pub packet_size: usize,
}

impl Params {
    /// Bytes of each of the file and version filters (half the payload).
    pub fn filter_bytes(&self) -> usize {
        (self.packet_size - wire::FILTERS_HEADER_LEN) / 2
    }
    /// Bytes of the match filter (a whole payload).
    pub fn match_bytes(&self) -> usize {
        self.packet_size - wire::MATCH_HEADER_LEN
    }
    /// File records per packet.
    pub fn records_per_packet(&self) -> usize {
        (self.packet_size - wire::RECORDS_HEADER_LEN) / wire::RECORD_LEN
    }
}

/// The responder's candidates: local files whose fileId is in the file
/// filter but whose instanceId is not in the version filter.
pub fn candidates<'a>(
    local: impl Iterator<Item = &'a LocalFile>,
    files: &Bloom,
    versions: &Bloom,
) -> Vec<FileId> {
    local
        .filter(|f| files.contains(&f.file_id) && !versions.contains(&f.instance))
        .map(|f| f.file_id)
        .collect()
}

/// Push (responder newer), pull (initiator newer) or nothing, per record.
/// A record of the same version hit the match filter, so its instance
/// differs (a fork) unless that was a false positive: the responder pushes,
/// and the initiator, seeing both certificates, keeps the one that
/// [supersedes](crate::Certificate::supersedes) the other (offering its own
/// back if that is the one).
pub fn decide(record: &FileRecord, local: Option<&LocalFile>) -> Action {
    match local {
        Some(l) if l.version >= record.version => Action::Push,
        Some(_) => Action::Pull,
        None => Action::None,
    }
}

enum Stage {
    AwaitMatch,
    AwaitPlan {
        records: Vec<FileRecord>,
    },
    Exchanging {
        pending: BTreeMap<FileId, Action>,
        since: Instant,
    },
    Done,
}

/// Result of an initiator step.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing changed (stale or unexpected message).
    Ignored,
    /// Send these packets to the responder.
    Send(Vec<Vec<u8>>),
    /// The plan: run these exchanges (push: expect an offer, pull: make one).
    Exchange(Vec<(FileId, Action)>),
    /// All groups processed.
    Done,
}

/// The initiating side of one synchronisation.
pub struct Initiator {
    session: u32,
    params: Params,
    groups: Vec<Vec<LocalFile>>,
    round: u16,
    salt: u32,
    stage: Stage,
    last_sent: Vec<Vec<u8>>,
    deadline: Instant,
    retries: u32,
    timeout: Duration,
    max_retries: u32,
}

impl Initiator {
    /// Partitions `files` into random groups and prepares round 0.
    pub fn new(
        session: u32,
        files: &[LocalFile],
        params: Params,
        timeout: Duration,
        max_retries: u32,
        rng: &mut impl Rng,
    ) -> Self {
        let mut shuffled = files.to_vec();
        shuffled.shuffle(rng);
        let groups: Vec<Vec<LocalFile>> = shuffled
            .chunks(params.group_size.max(1))
            .map(<[_]>::to_vec)
            .collect();
        Initiator {
            session,
            params,
            groups,
            round: 0,
            salt: rng.random(),
            stage: Stage::AwaitMatch,
            last_sent: Vec::new(),
            deadline: Instant::ZERO,
            retries: 0,
            timeout,
            max_retries,
        }
    }

    /// Session id.
    pub fn session(&self) -> u32 {
        self.session
    }
    /// Current round.
    pub fn round(&self) -> u16 {
        self.round
    }
    /// Number of groups (rounds).
    pub fn rounds(&self) -> u16 {
        u16::try_from(self.groups.len()).unwrap_or(u16::MAX)
    }

    /// The first round's filters, or `Done` if there is nothing to offer.
    pub fn start(&mut self, now: Instant) -> Step {
        self.begin_round(now)
    }

    fn send(&mut self, now: Instant, packets: Vec<Vec<u8>>) -> Step {
        self.last_sent = packets.clone();
        self.deadline = now + self.timeout;
        self.retries = 0;
        Step::Send(packets)
    }

    fn begin_round(&mut self, now: Instant) -> Step {
        let Some(group) = self.groups.get(usize::from(self.round)) else {
            self.stage = Stage::Done;
            return Step::Done;
        };
        self.salt = self.salt.wrapping_mul(0x9E37_79B9).wrapping_add(1);
        let (n, k) = (self.params.filter_bytes(), self.params.hash_count);
        let mut files = Bloom::new(n, k, self.salt);
        let mut versions = Bloom::new(n, k, self.salt ^ 0x5555_5555);
        for f in group {
            files.insert(&f.file_id);
            versions.insert(&f.instance);
        }
        let pkt = Message::Filters {
            session: self.session,
            round: self.round,
            rounds: self.rounds(),
            salt: self.salt,
            k,
            file_filter: files.as_bytes(),
            version_filter: versions.as_bytes(),
        }
        .to_vec();
        self.stage = Stage::AwaitMatch;
        self.send(now, vec![pkt])
    }

    fn next_round(&mut self, now: Instant) -> Step {
        self.round = self.round.saturating_add(1);
        self.begin_round(now)
    }

    fn current(&self, session: u32, round: u16) -> bool {
        session == self.session && round == self.round
    }

    /// Handles the responder's match filter.
    pub fn on_match(
        &mut self,
        now: Instant,
        session: u32,
        round: u16,
        salt: u32,
        k: u8,
        filter: &[u8],
    ) -> Step {
        if !self.current(session, round) || !matches!(self.stage, Stage::AwaitMatch) {
            return Step::Ignored;
        }
        let records: Vec<FileRecord> = match Bloom::from_bytes(filter, k, salt) {
            None => Vec::new(),
            Some(m) => self.groups[usize::from(self.round)]
                .iter()
                .filter(|f| m.contains(&f.file_id))
                .map(|f| FileRecord {
                    file_id: f.file_id,
                    version: f.version,
                })
                .collect(),
        };
        if records.is_empty() {
            return self.next_round(now);
        }
        let chunks: Vec<&[FileRecord]> = records.chunks(self.params.records_per_packet()).collect();
        let total = chunks.len() as u16;
        let packets = chunks
            .iter()
            .enumerate()
            .map(|(seq, c)| {
                Message::Records {
                    session,
                    round,
                    seq: seq as u16,
                    total,
                    records: &wire::encode_records(c),
                }
                .to_vec()
            })
            .collect();
        self.stage = Stage::AwaitPlan { records };
        self.send(now, packets)
    }

    /// Handles the responder's plan.
    pub fn on_plan(
        &mut self,
        now: Instant,
        session: u32,
        round: u16,
        count: u16,
        codes: &[u8],
    ) -> Step {
        let Stage::AwaitPlan { records } = &self.stage else {
            return Step::Ignored;
        };
        if !self.current(session, round) || usize::from(count) != records.len() {
            return Step::Ignored;
        }
        let pending: BTreeMap<FileId, Action> = records
            .iter()
            .zip(wire::plan_actions(count, codes))
            .filter_map(|(r, a)| match a {
                Some(a @ (Action::Push | Action::Pull)) => Some((r.file_id, a)),
                _ => None,
            })
            .collect();
        if pending.is_empty() {
            return self.next_round(now);
        }
        let list = pending.iter().map(|(f, a)| (*f, *a)).collect();
        self.stage = Stage::Exchanging {
            pending,
            since: now,
        };
        Step::Exchange(list)
    }

    /// Marks one planned exchange as finished (whatever its outcome).
    pub fn resolve(&mut self, now: Instant, file: &FileId) -> Step {
        let Stage::Exchanging { pending, .. } = &mut self.stage else {
            return Step::Ignored;
        };
        if pending.remove(file).is_none() {
            return Step::Ignored;
        }
        if pending.is_empty() {
            self.next_round(now)
        } else {
            Step::Ignored
        }
    }

    /// Planned exchanges not yet resolved, and since when.
    pub fn pending(&self) -> Option<(Instant, impl Iterator<Item = (&FileId, &Action)>)> {
        match &self.stage {
            Stage::Exchanging { pending, since } => Some((*since, pending.iter())),
            _ => None,
        }
    }

    /// When the initiator wants `on_timeout` (not while exchanging files).
    pub fn deadline(&self) -> Option<Instant> {
        matches!(self.stage, Stage::AwaitMatch | Stage::AwaitPlan { .. }).then_some(self.deadline)
    }

    /// Re-sends the last request, or gives up (`None`) after the retries.
    pub fn on_timeout(&mut self, now: Instant) -> Option<Vec<Vec<u8>>> {
        if self.retries >= self.max_retries {
            return None;
        }
        self.retries += 1;
        self.deadline = now + self.timeout;
        Some(self.last_sent.clone())
    }

    /// Restarts the clock of the current exchange phase (after the caller
    /// checked it for overdue entries).
    pub fn recheck_after(&mut self, now: Instant) {
        if let Stage::Exchanging { since, .. } = &mut self.stage {
            *since = now;
        }
    }

    /// Whether all rounds are done.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }
}

/// The responding side of one synchronisation; caches its answers so that a
/// retransmitted request gets the same answer.
pub struct Responder {
    session: u32,
    round: u16,
    match_reply: Vec<u8>,
    records: BTreeMap<u16, Vec<FileRecord>>,
    total: u16,
    plan_reply: Option<Vec<u8>>,
    /// Last time a request arrived.
    pub last_active: Instant,
}

/// Answer to a records packet.
pub enum RecordsReply {
    /// Waiting for more records packets.
    Incomplete,
    /// The plan packet, and the pushes to start (empty on a repeat).
    Plan(Vec<u8>, Vec<FileId>, Vec<(FileId, Action)>),
}

impl Responder {
    /// Whether this responder belongs to `session`.
    pub fn is_session(&self, session: u32) -> bool {
        self.session == session
    }

    /// Answers a Filters packet: builds (or repeats) the match filter;
    /// `None` if a filter is empty or `k` is zero.
    #[allow(clippy::too_many_arguments)]
    pub fn on_filters(
        slot: &mut Option<Responder>,
        now: Instant,
        local: &BTreeMap<FileId, LocalFile>,
        params: Params,
        session: u32,
        round: u16,
        salt: u32,
        k: u8,
        file_filter: &[u8],
        version_filter: &[u8],
    ) -> Option<Vec<u8>> {
        if let Some(r) = slot.as_mut() {
            if r.session == session && r.round == round {
                r.last_active = now;
                return Some(r.match_reply.clone());
            }
        }
        let files = Bloom::from_bytes(file_filter, k, salt)?;
        let versions = Bloom::from_bytes(version_filter, k, salt ^ 0x5555_5555)?;
        let cands = candidates(local.values(), &files, &versions);
        let filter = if cands.is_empty() {
            Vec::new()
        } else {
            let mut m = Bloom::new(params.match_bytes(), k, salt.rotate_left(16));
            for c in &cands {
                m.insert(c);
            }
            m.as_bytes().to_vec()
        };
        let reply = Message::Match {
            session,
            round,
            salt: salt.rotate_left(16),
            k,
            filter: &filter,
        }
        .to_vec();
        *slot = Some(Responder {
            session,
            round,
            match_reply: reply.clone(),
            records: BTreeMap::new(),
            total: 0,
            plan_reply: None,
            last_active: now,
        });
        Some(reply)
    }

    /// Collects a records packet; with all of them, decides the plan.
    #[allow(clippy::too_many_arguments)]
    pub fn on_records(
        &mut self,
        now: Instant,
        local: &BTreeMap<FileId, LocalFile>,
        session: u32,
        round: u16,
        seq: u16,
        total: u16,
        records: &[u8],
    ) -> Option<RecordsReply> {
        if session != self.session || round != self.round {
            return None;
        }
        self.last_active = now;
        if let Some(p) = &self.plan_reply {
            return Some(RecordsReply::Plan(p.clone(), Vec::new(), Vec::new()));
        }
        if self.total != 0 && self.total != total {
            return None;
        }
        self.total = total;
        self.records
            .insert(seq, wire::decode_records(records).collect());
        if self.records.len() < usize::from(total) {
            return Some(RecordsReply::Incomplete);
        }
        let all: Vec<FileRecord> = self.records.values().flatten().copied().collect();
        let actions: Vec<Action> = all
            .iter()
            .map(|r| decide(r, local.get(&r.file_id)))
            .collect();
        let count = u16::try_from(actions.len()).ok()?;
        let plan = Message::Plan {
            session,
            round,
            count,
            codes: &wire::encode_plan(&actions),
        }
        .to_vec();
        self.plan_reply = Some(plan.clone());
        let pushes = all
            .iter()
            .zip(&actions)
            .filter(|(_, a)| **a == Action::Push)
            .map(|(r, _)| r.file_id)
            .collect();
        let decided = all
            .iter()
            .zip(&actions)
            .filter(|(_, a)| **a != Action::None)
            .map(|(r, a)| (r.file_id, *a))
            .collect();
        Some(RecordsReply::Plan(plan, pushes, decided))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Id160;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn file(n: u32, v: u16) -> LocalFile {
        LocalFile {
            file_id: Id160::hash(&[&n.to_be_bytes()]),
            instance: Id160::hash(&[&n.to_be_bytes(), &v.to_be_bytes()]),
            version: v,
        }
    }

    fn params() -> Params {
        Params {
            group_size: 500,
            hash_count: 12,
            packet_size: 2304,
        }
    }

    /// Runs one initiator against one responder over a perfect link and
    /// returns the decided exchanges and the packets sent.
    fn sync(a: &[LocalFile], b: &[LocalFile]) -> (Vec<(FileId, Action)>, usize) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let local_b: BTreeMap<FileId, LocalFile> = b.iter().map(|f| (f.file_id, *f)).collect();
        let mut init = Initiator::new(1, a, params(), Duration::from_secs(1), 3, &mut rng);
        let mut resp: Option<Responder> = None;
        let now = Instant::ZERO;
        let mut step = init.start(now);
        let (mut found, mut packets) = (Vec::new(), 0);
        loop {
            match step {
                Step::Done => return (found, packets),
                Step::Ignored => panic!("stalled"),
                Step::Exchange(list) => {
                    let files: Vec<FileId> = list.iter().map(|x| x.0).collect();
                    found.extend(list);
                    step = Step::Ignored;
                    for f in files {
                        let s = init.resolve(now, &f);
                        if s != Step::Ignored {
                            step = s;
                        }
                    }
                }
                Step::Send(pkts) => {
                    packets += pkts.len();
                    let mut next = Step::Ignored;
                    for p in &pkts {
                        match Message::parse(p).unwrap() {
                            Message::Filters {
                                session,
                                round,
                                salt,
                                k,
                                file_filter,
                                version_filter,
                                ..
                            } => {
                                let m = Responder::on_filters(
                                    &mut resp,
                                    now,
                                    &local_b,
                                    params(),
                                    session,
                                    round,
                                    salt,
                                    k,
                                    file_filter,
                                    version_filter,
                                )
                                .unwrap();
                                packets += 1;
                                let Message::Match {
                                    session,
                                    round,
                                    salt,
                                    k,
                                    filter,
                                } = Message::parse(&m).unwrap()
                                else {
                                    panic!()
                                };
                                next = init.on_match(now, session, round, salt, k, filter);
                            }
                            Message::Records {
                                session,
                                round,
                                seq,
                                total,
                                records,
                            } => {
                                if let Some(RecordsReply::Plan(p, _, _)) = resp
                                    .as_mut()
                                    .unwrap()
                                    .on_records(now, &local_b, session, round, seq, total, records)
                                {
                                    packets += 1;
                                    let Message::Plan {
                                        session,
                                        round,
                                        count,
                                        codes,
                                    } = Message::parse(&p).unwrap()
                                    else {
                                        panic!()
                                    };
                                    next = init.on_plan(now, session, round, count, codes);
                                }
                            }
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                    step = next;
                }
            }
        }
    }

    #[test]
    fn finds_common_files_with_different_versions_both_directions() {
        let mut a: Vec<LocalFile> = (0..1200).map(|i| file(i, 1)).collect();
        let mut b: Vec<LocalFile> = (600..2000).map(|i| file(i, 1)).collect();
        a[700] = file(700, 3); // initiator newer -> responder pulls
        b[500] = file(1100, 5); // responder newer -> pushes
        let (found, _) = sync(&a, &b);
        assert!(found.contains(&(file(700, 1).file_id, Action::Pull)));
        assert!(found.contains(&(file(1100, 1).file_id, Action::Push)));
        assert!(found.len() <= 3, "{found:?}");
    }

    #[test]
    fn identical_sets_cost_two_packets_per_group() {
        let a: Vec<LocalFile> = (0..1200).map(|i| file(i, 1)).collect();
        let (found, packets) = sync(&a, &a);
        assert!(found.is_empty());
        assert_eq!(
            packets,
            2 * 3,
            "3 groups of <=500, filters + empty match each"
        );
    }

    #[test]
    fn retransmission_repeats_last_request_then_gives_up() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut init = Initiator::new(
            9,
            &[file(1, 1)],
            params(),
            Duration::from_secs(1),
            2,
            &mut rng,
        );
        let Step::Send(first) = init.start(Instant::ZERO) else {
            panic!()
        };
        assert_eq!(init.deadline(), Some(Instant::from_micros(1_000_000)));
        assert_eq!(
            init.on_timeout(Instant::from_micros(1_000_000)),
            Some(first.clone())
        );
        assert_eq!(
            init.on_timeout(Instant::from_micros(2_000_000)),
            Some(first)
        );
        assert_eq!(init.on_timeout(Instant::from_micros(3_000_000)), None);
    }
}
