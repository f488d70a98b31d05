//! What became of the questions and gates a job's record no longer shows pending, in the
//! wire's words: `luzia watch --json` says it on the line that saw them go, so another
//! machine (a cockpit, the Telegram bridge) can tell who answered and how.

use std::path::Path;

use crate::jobs::hitl::once::{Closed, Outcome, PublishError, what_became_of};
use crate::jobs::hitl::operator::{Decision, Response, Scope};
use crate::jobs::wire::{Covers, How, Pending, Record, Settlement};

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
        scope: Covers::Once,
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
                Some(Settlement {
                    scope: match d.scope {
                        Scope::Once => Covers::Once,
                        Scope::Session => Covers::Session,
                    },
                    ..settlement(how, &d.decided_by, &d.source, &d.reason)
                })
            }
            Err(PublishError::Closed(c)) => closed(c),
            Err(PublishError::Io(_)) => None,
        },
        Pending::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::fs::names::GATE_FILE;
    use crate::jobs::hitl::operator::publish_decision;
    use crate::jobs::hitl::published::new_token;

    #[test]
    fn an_approval_for_the_session_is_said_so_and_one_for_the_request_says_no_scope() {
        for (scope, covers) in [
            (Scope::Session, Covers::Session),
            (Scope::Once, Covers::Once),
        ] {
            let d = tempfile::tempdir().unwrap();
            std::fs::write(
                d.path().join(GATE_FILE),
                r#"{"id": "g1", "gate": "shell", "description": "x", "allow_session": true}"#,
            )
            .unwrap();
            let decision = Decision {
                gate: "shell".into(),
                gate_id: "g1".into(),
                approved: true,
                reason: String::new(),
                decided_by: "bruno@b".into(),
                decided_at: "2026-01-01T00:00:00Z".into(),
                source: "cli".into(),
                token: new_token(),
                scope,
            };
            publish_decision(d.path(), &decision).unwrap();
            let s = of(d.path(), Pending::Gate, "g1").unwrap();
            assert_eq!((s.how, s.scope), (How::Approved, covers));
            let line = serde_json::to_string(&s).unwrap();
            assert_eq!(
                line.contains(r#""scope":"session""#),
                scope == Scope::Session,
                "{line}"
            );
            assert_eq!(line.contains("scope"), scope == Scope::Session, "{line}");
        }
    }
}
