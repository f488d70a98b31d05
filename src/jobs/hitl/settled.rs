//! What became of the questions and gates a job's record no longer shows pending, in the
//! wire's words: `luzia watch --json` says it on the line that saw them go, so another
//! machine (a cockpit, the Telegram bridge) can tell who answered and how.

use std::path::Path;

use crate::jobs::hitl::once::{Closed, Outcome, PublishError, what_became_of};
use crate::jobs::hitl::operator::{Decision, Response};
use crate::jobs::wire::{How, Pending, Record, Settlement};

/// The instances pending in `old` and not in `new`, and how `dir`'s files say each ended
/// (those they say nothing of are left out).
pub fn gone(dir: &Path, old: &Record, new: &Record) -> Vec<Settlement> {
    let (was, is) = (old.pending(), new.pending());
    [Pending::Question, Pending::Gate]
        .into_iter()
        .zip(was.into_iter().zip(is))
        .filter_map(|(kind, (was, is))| match was {
            Some(id) if Some(id) != is => of(dir, kind, id),
            _ => None,
        })
        .collect()
}

/// How instance `id` (a question or a gate) of the job in `dir` ended, if its files say.
pub fn of(dir: &Path, kind: Pending, id: &str) -> Option<Settlement> {
    let settlement = |how, by: &str, source: &str, text: &str| Settlement {
        kind,
        id: id.to_owned(),
        how,
        by: by.to_owned(),
        source: source.to_owned(),
        text: text.to_owned(),
    };
    let closed = |c: Closed| match c {
        Closed::Withdrawn => Some(settlement(How::Withdrawn, "", "", "")),
        Closed::Unanswered => Some(settlement(How::Unanswered, "", "", "")),
        Closed::Unrecorded => None,
    };
    match kind {
        Pending::Question => match what_became_of::<Response>(dir, id) {
            Ok(Outcome::Already(r) | Outcome::Done(r)) => Some(settlement(
                How::Answered,
                &r.answered_by,
                &r.source,
                &r.answer,
            )),
            Err(PublishError::Closed(c)) => closed(c),
            Err(PublishError::Io(_)) => None,
        },
        Pending::Gate => match what_became_of::<Decision>(dir, id) {
            Ok(Outcome::Already(d) | Outcome::Done(d)) => {
                let how = if d.approved {
                    How::Approved
                } else {
                    How::Denied
                };
                Some(settlement(how, &d.decided_by, &d.source, &d.reason))
            }
            Err(PublishError::Closed(c)) => closed(c),
            Err(PublishError::Io(_)) => None,
        },
        Pending::Unknown => None,
    }
}
