//! Messages and their generator, after The ONE's message model
//! (`core/Message.java`, `input/MessageEventGenerator.java`).
//!
//! A message has an id, a source and a destination host, a size in bytes,
//! a creation time and a time to live in minutes; it may be created at
//! further hosts at the same time (The ONE accepts a creation event that
//! repeats an id at another host: each holds a copy of its own, and no
//! host takes a second copy of an id it holds). As in The ONE
//! (`Message.getTtl`), the TTL left is counted in whole minutes, rounded
//! toward zero, so a message counts as expired once less than a minute of
//! it is left.
//!
//! The generator follows `MessageEventGenerator`'s settings: an interval
//! range and a size range (each drawn uniformly from `[lo, hi)`, or fixed
//! when `lo == hi`), a range of source hosts `[lo, hi)`, an optional range
//! of destination hosts (otherwise the source range; never the source
//! itself), and an optional time window. The first message comes one
//! interval after the window's start. The draws are ours (a
//! `wayside_sim::rng::Stream` per generator), not Java's `Random`.

use wayside_sim::rng::Stream;

/// One message as created.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub from: u32,
    pub to: u32,
    pub size: u64,
    pub created: f64,
    /// Minutes; `None` lives for ever.
    pub ttl_min: Option<u32>,
    /// Further hosts creating the same message at `created`.
    pub also_at: Vec<u32>,
}

impl Message {
    /// Whether less than a whole minute of the TTL is left at `now` (The
    /// ONE's `getTtl() <= 0`).
    pub fn expired(&self, now: f64) -> bool {
        match self.ttl_min {
            None => false,
            Some(m) => ((m as f64 * 60.0 - (now - self.created)) / 60.0).trunc() <= 0.0,
        }
    }
}

/// `MessageEventGenerator`'s settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Generator {
    /// Seconds between messages, `[lo, hi)` (or fixed).
    pub interval: (u32, u32),
    /// Bytes, `[lo, hi)` (or fixed).
    pub size: (u64, u64),
    /// Source hosts `[lo, hi)`.
    pub hosts: (u32, u32),
    /// Destination hosts `[lo, hi)`; the source range when `None`.
    pub to_hosts: Option<(u32, u32)>,
    /// Messages only from `time.0` to `time.1`, s.
    pub time: Option<(f64, f64)>,
    /// Names the generator's random stream (The ONE: the id prefix).
    pub prefix: String,
}

/// A generator setting that cannot work; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GeneratorError(pub String);

fn draw(rng: &mut Stream, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        lo
    } else {
        lo + rng.integer_inclusive((hi - lo - 1) as u32) as u64
    }
}

impl Generator {
    /// Checks the ranges against the number of hosts.
    pub fn check(&self, hosts: usize) -> Result<(), GeneratorError> {
        let bad = |what: &str, (lo, hi): (u32, u32)| {
            (lo >= hi || hi as usize > hosts).then(|| {
                GeneratorError(format!(
                    "{what} {lo},{hi}: give a range LO,HI of host numbers with LO < HI <= {hosts} (HI excluded)"
                ))
            })
        };
        if let Some(e) = bad("hosts", self.hosts).or(self.to_hosts.and_then(|r| bad("tohosts", r)))
        {
            return Err(e);
        }
        let to = self.to_hosts.unwrap_or(self.hosts);
        if to.1 - to.0 < 2 && (self.hosts.1 - self.hosts.0 < 2) && to == self.hosts {
            return Err(GeneratorError(
                "hosts: a single host cannot send to itself; give two hosts or a tohosts range"
                    .into(),
            ));
        }
        if self.interval.0 == 0 || self.interval.1 < self.interval.0 || self.size.1 < self.size.0 {
            return Err(GeneratorError(format!(
                "interval {:?} s and size {:?} B: give LO <= HI, an interval of at least 1 s",
                self.interval, self.size
            )));
        }
        Ok(())
    }

    /// Every message created before `end`, in time order.
    pub fn messages(&self, end: f64, ttl_min: Option<u32>, seed: u64, run: u64) -> Vec<Message> {
        let mut rng = Stream::new("run", seed, run, &format!("dtn/generator/{}", self.prefix));
        let (start, stop) = self.time.unwrap_or((0.0, f64::INFINITY));
        let interval =
            |rng: &mut Stream| draw(rng, self.interval.0 as u64, self.interval.1 as u64) as f64;
        let mut t = start + interval(&mut rng);
        let mut out = Vec::new();
        while t < end && t <= stop {
            let from = draw(&mut rng, self.hosts.0 as u64, self.hosts.1 as u64) as u32;
            let (lo, hi) = self.to_hosts.unwrap_or(self.hosts);
            let to = loop {
                let to = draw(&mut rng, lo as u64, hi as u64) as u32;
                if to != from {
                    break to;
                }
            };
            let size = draw(&mut rng, self.size.0, self.size.1);
            out.push(Message {
                from,
                to,
                size,
                created: t,
                ttl_min,
                also_at: Vec::new(),
            });
            t += interval(&mut rng);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen() -> Generator {
        Generator {
            interval: (25, 35),
            size: (500_000, 1_000_000),
            hosts: (0, 10),
            to_hosts: None,
            time: None,
            prefix: "M".into(),
        }
    }

    #[test]
    fn messages_fall_in_the_ranges_and_never_to_their_source() {
        let ms = gen().messages(10_000.0, Some(300), 1, 0);
        assert!(ms.len() > 250 && ms.len() < 400, "{}", ms.len());
        for w in ms.windows(2) {
            let dt = w[1].created - w[0].created;
            assert!((25.0..35.0).contains(&dt), "{dt}");
        }
        assert!(ms
            .iter()
            .all(|m| m.from != m.to && m.from < 10 && m.to < 10));
        assert!(ms.iter().all(|m| (500_000..1_000_000).contains(&m.size)));
        assert_eq!(ms, gen().messages(10_000.0, Some(300), 1, 0));
        let windowed = Generator {
            time: Some((100.0, 200.0)),
            ..gen()
        };
        assert!(windowed
            .messages(1e4, None, 1, 0)
            .iter()
            .all(|m| (125.0..=200.0).contains(&m.created)));
    }

    #[test]
    fn ttl_counts_whole_minutes_as_the_one_does() {
        let m = Message {
            from: 0,
            to: 1,
            size: 1,
            created: 10.0,
            ttl_min: Some(2),
            also_at: Vec::new(),
        };
        assert!(!m.expired(10.0 + 60.0));
        assert!(m.expired(10.0 + 60.5), "less than a minute left");
    }

    #[test]
    fn bad_ranges_are_clear_errors() {
        let e = Generator {
            hosts: (0, 20),
            ..gen()
        }
        .check(10)
        .unwrap_err()
        .0;
        assert!(e.contains("hosts 0,20") && e.contains("<= 10"), "{e}");
        let e = Generator {
            hosts: (3, 4),
            ..gen()
        }
        .check(10)
        .unwrap_err()
        .0;
        assert!(e.contains("cannot send to itself"), "{e}");
        assert!(Generator {
            hosts: (3, 4),
            to_hosts: Some((5, 6)),
            ..gen()
        }
        .check(10)
        .is_ok());
    }
}
