//! The transfer rules of a contact-level dissemination, as three choices,
//! each with its source.
//!
//! - [`Senders`]: does a holder of the file send to every device in range
//!   at once (Zahn et al. 2009 §5.6 is silent; a one-to-many radio
//!   broadcast), or does each host take part in one transfer at a time,
//!   sending or receiving (The ONE: `ActiveRouter.isTransferring` refuses a
//!   new transfer while any connection of the host carries a message, and
//!   `checkReceiving` answers `TRY_LATER_BUSY`)?
//! - [`Progress`]: when a contact breaks before the file is through, is the
//!   partial progress kept and resumed with any holder (§5.6: "A PND can
//!   store partially transferred content, and can resume transfer when
//!   another PND with the content is encountered"), or lost (The ONE:
//!   `ActiveRouter.update` aborts a transfer whose connection went down,
//!   and the receiver drops the partial message)?
//! - [`Completion`]: does a contact seen at one trace step count for the
//!   whole interval to the next step, so that 20 samples in range complete
//!   a 20 s transfer (§5.6: "if a device is in contact with another PND for
//!   k seconds then k/20th of the content is transferred"; also The ONE's
//!   rule: `ActiveRouter.update` finalizes a transfer whose time is up
//!   before it looks at whether the link is still up), or must the link
//!   also be up at the step the transfer ends (21 samples for 20 s)?
//!
//! [`Rules::PAPER`] is §5.6 read literally, where it is silent taking the
//! broadcast; [`Rules::THE_ONE`] is The ONE's `EpidemicRouter` over a
//! `SimpleBroadcastInterface` with a constant-rate (`CBRConnection`) link.

use std::fmt;
use std::str::FromStr;

/// Who a holder serves at one time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Senders {
    /// A holder sends to every device in range at once; a device receives
    /// at one rate however many holders are around it.
    Broadcast,
    /// Each host takes part in at most one transfer at a time (sending or
    /// receiving); an idle holder starts a transfer over its
    /// longest-standing link to an idle device that lacks the file (The
    /// ONE's order, see `links`).
    OneAtATime,
}

/// What becomes of partial progress when a contact breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Kept, and resumed with any holder.
    Resume,
    /// Lost: the next transfer starts from nothing.
    Restart,
}

/// When a transfer that has had its time is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// As soon as its contact time is credited: a contact seen at a step
    /// lasts until the next step.
    Sampled,
    /// Only at a step at which the receiver is still in contact with a
    /// sender.
    LinkAtEnd,
}

/// The three choices together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    pub senders: Senders,
    pub progress: Progress,
    pub completion: Completion,
}

impl Rules {
    /// Zahn et al. (2009) §5.6 (see the module doc).
    pub const PAPER: Rules = Rules {
        senders: Senders::Broadcast,
        progress: Progress::Resume,
        completion: Completion::Sampled,
    };
    /// The ONE's `EpidemicRouter` (see the module doc).
    pub const THE_ONE: Rules = Rules {
        senders: Senders::OneAtATime,
        progress: Progress::Restart,
        completion: Completion::Sampled,
    };
}

impl Default for Rules {
    fn default() -> Self {
        Rules::PAPER
    }
}

/// A rule name that is not one of the allowed ones.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RulesError(pub String);

fn parse<T: Copy>(what: &str, text: &str, allowed: &[(&str, T)]) -> Result<T, RulesError> {
    allowed
        .iter()
        .find(|(n, _)| *n == text)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
            RulesError(format!("{what} '{text}': allowed: {}", names.join(", ")))
        })
}

const SENDERS: [(&str, Senders); 2] = [
    ("broadcast", Senders::Broadcast),
    ("one-at-a-time", Senders::OneAtATime),
];
const PROGRESS: [(&str, Progress); 2] =
    [("resume", Progress::Resume), ("restart", Progress::Restart)];
const COMPLETION: [(&str, Completion); 2] = [
    ("sampled", Completion::Sampled),
    ("link-at-end", Completion::LinkAtEnd),
];

fn name<T: PartialEq>(v: T, table: &[(&'static str, T)]) -> &'static str {
    table
        .iter()
        .find(|(_, t)| *t == v)
        .expect("every value is named")
        .0
}

impl FromStr for Rules {
    type Err = RulesError;

    /// `paper`, `the-one`, or `SENDERS,PROGRESS,COMPLETION` (e.g.
    /// `one-at-a-time,restart,sampled`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "paper" => return Ok(Rules::PAPER),
            "the-one" => return Ok(Rules::THE_ONE),
            _ => {}
        }
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [a, b, c] = parts[..] else {
            return Err(RulesError(format!(
                "rules '{s}': give paper, the-one, or SENDERS,PROGRESS,COMPLETION \
                 (e.g. one-at-a-time,restart,sampled)"
            )));
        };
        Ok(Rules {
            senders: parse("senders", a, &SENDERS)?,
            progress: parse("progress", b, &PROGRESS)?,
            completion: parse("completion", c, &COMPLETION)?,
        })
    }
}

impl fmt::Display for Rules {
    /// `SENDERS,PROGRESS,COMPLETION`, readable back by `from_str`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{}",
            name(self.senders, &SENDERS),
            name(self.progress, &PROGRESS),
            name(self.completion, &COMPLETION)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_list_the_allowed_ones() {
        for r in [Rules::PAPER, Rules::THE_ONE] {
            assert_eq!(r.to_string().parse::<Rules>().unwrap(), r);
        }
        assert_eq!("the-one".parse::<Rules>().unwrap(), Rules::THE_ONE);
        let r: Rules = "broadcast,restart,link-at-end".parse().unwrap();
        assert_eq!(r.completion, Completion::LinkAtEnd);
        let e = "broadcast,keep,sampled".parse::<Rules>().unwrap_err().0;
        assert!(
            e.contains("progress 'keep'") && e.contains("resume, restart"),
            "{e}"
        );
        let e = "fast".parse::<Rules>().unwrap_err().0;
        assert!(e.contains("paper, the-one"), "{e}");
    }
}
