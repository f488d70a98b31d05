//! What a row says of a job's place in the needs-input lifecycle, worked out here so that
//! drawing only reads it: `answered · r retries` (the retry key as the key map has it),
//! `retried → <id>`, and on a retry `retry of <id>`; a job the usage limit stopped, when the
//! limit resets, and a queued task, the limit that holds it (`held: claude limit until 17:00`).

use crate::jobs::model::lifecycle::Stage;
use crate::jobs::{Job, Status};
use crate::tui::action::NormalAction;
use crate::tui::app::App;

/// A row's lifecycle words: `stage` for a job that stopped for an answer and needs nobody now
/// (it outranks what the job was doing), `link` for a retry (shown where nothing more telling,
/// such as progress, is known).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowNote {
    pub stage: Option<String>,
    /// Shorter, for a narrow column.
    pub stage_short: Option<String>,
    pub link: Option<String>,
}

impl App {
    pub fn row_note(&self, job: &Job) -> RowNote {
        let (stage, stage_short) = match job.stage() {
            Some(Stage::Answered) => {
                let key = self.opts.keymap.first_key(NormalAction::Retry);
                (
                    Some(format!("answered · {key} retries")),
                    Some("answered".to_string()),
                )
            }
            Some(Stage::Retried(id)) => (Some(format!("retried → {id}")), Some(format!("→ {id}"))),
            Some(Stage::Asking) => (None, None),
            None if job.status == Status::Queued => self.held_note(job),
            None => limit_note(job, self.now),
        };
        RowNote {
            stage,
            stage_short,
            link: job.retry_of().map(|of| format!("retry of {of}")),
        }
    }
}

impl App {
    /// A task of this machine's queue while the usage limit holds it: what it waits for (it
    /// outranks its place in the queue, which it keeps).
    fn held_note(&self, job: &Job) -> (Option<String>, Option<String>) {
        match self.hold_of(job) {
            Some(h) => {
                let clock = crate::jobs::model::limit::clock(h.resets_at, self.now);
                let why = crate::jobs::text::sanitize::plain_text(&h.why(self.now));
                (Some(why), Some(format!("held {clock}")))
            }
            None => (None, None),
        }
    }
}

/// A job the usage limit stopped: when the limit resets, or the job that continued it.
fn limit_note(job: &Job, now: chrono::DateTime<chrono::Utc>) -> (Option<String>, Option<String>) {
    if job.status != Status::Limited {
        return (None, None);
    }
    if let Some(by) = job.continued_by() {
        return (Some(format!("resumed → {by}")), Some(format!("→ {by}")));
    }
    match job.limit_resets_at() {
        Some(at) => {
            let clock = crate::jobs::model::limit::clock(at, now);
            (
                Some(format!("limit · resets {clock}")),
                Some(format!("limit {clock}")),
            )
        }
        None => (None, None),
    }
}
