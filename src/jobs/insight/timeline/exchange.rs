//! A job's question and its answer in its timeline: the question on disk (pending, or the one a
//! stopped job asked) and the answer given to a stopped job since.

use super::{EventKind, TimelineEvent};
use crate::jobs::model::job::{Job, Standing};
use crate::jobs::text::sanitize::{ellipsize, plain_text};

/// Pending only while the agent waits; otherwise how it stands.
pub(super) fn standing(job: &Job) -> &'static str {
    match job.standing() {
        Standing::Pending => "pending",
        other => other.note(),
    }
}

/// The question on disk (pending, or the one a stopped job asked) and the answer given to a
/// stopped job since (its agent is gone, so it is in no history yet).
pub(super) fn events(job: &Job, out: &mut Vec<TimelineEvent>) {
    let exchange = job.exchange.as_ref();
    let answer = exchange.and_then(|e| e.answer.as_ref());
    let standing = if answer.is_some() {
        "answered"
    } else {
        standing(job)
    };
    let event = |at, kind, text| TimelineEvent {
        at,
        job: Some(job.id.clone()),
        kind,
        text,
    };
    if let Some(q) = job.question.as_deref().or(exchange.map(|e| &e.question)) {
        out.push(event(
            q.asked_at,
            EventKind::Asked,
            format!(
                "asked ({standing}): {}",
                ellipsize(&plain_text(&q.question), 120)
            ),
        ));
    }
    if let Some(a) = answer {
        let by = Some(plain_text(&a.answered_by))
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "someone".into());
        out.push(event(
            a.answered_at.or(job.finished),
            EventKind::Answered,
            format!(
                "answered by {by}: {}",
                ellipsize(&plain_text(&a.answer), 120)
            ),
        ));
    }
}
