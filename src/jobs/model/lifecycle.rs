//! What became of a job that stopped for an answer (exit 100, `needs_input`): the question it
//! asked, the answer given since, and the job that retried it.
//!
//! `answered` and `retried` are *stages* of `needs_input`, not statuses of their own. The status
//! is what the exit line says (protocol.md's table, which scripts and `--status needs_input`
//! rely on); the stage only says whether a person is still needed. So filters, `--status`
//! values, the sort and the colours keep working on the status, and the few places that mean
//! "waiting for a person" ask [`Job::awaits_person`] instead.
//!
//! The agent that would archive the exchange has stopped, so both files stay in its directory:
//! `clarification.json` and, once answered, `response.json`. The retry is found among the other
//! jobs: one whose meta.json's `retry_of` names this job ([`link_retries`]).

use std::collections::HashMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::{HISTORY_FILE, RESPONSE_FILE};
use crate::jobs::model::format::object;
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::Job;
use crate::jobs::model::status::Status;
use crate::jobs::model::time::parse_timestamp;
use crate::jobs::model::waiting::{Question, read_question};

/// An answer as `response.json` holds it, read leniently (the older `{"choice": ...}` form
/// answers `q1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub question_id: String,
    pub answer: String,
    pub answered_by: String,
    pub answered_at: Option<DateTime<Utc>>,
    /// `tui`, `cli`, `timeout`, or empty.
    pub source: String,
}

impl Answer {
    pub fn parse(bytes: &[u8]) -> Option<Answer> {
        let m = object(bytes).ok()?;
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Answer {
            question_id: text("question_id").unwrap_or_else(|| "q1".into()),
            answer: text("answer").or_else(|| text("choice"))?,
            answered_by: text("answered_by").unwrap_or_default(),
            answered_at: text("answered_at").as_deref().and_then(parse_timestamp),
            source: text("source").unwrap_or_default(),
        })
    }
}

/// The question a stopped job asked, and its answer when one was given.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub question: Question,
    pub answer: Option<Answer>,
}

/// Where a `needs_input` job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage<'a> {
    /// Nobody has answered it: a person is needed.
    Asking,
    /// Answered; a retry will take the answer along.
    Answered,
    /// Retried: the newest retry carries on.
    Retried(&'a JobId),
}

/// The question in `dir` and its answer, for a job that stopped for one. Without
/// `clarification.json`, the last question of `history.jsonl` if nobody answered it (an agent
/// whose `luzia ask` timed out, and that then stopped for the answer). `None` when there is no
/// readable question (its problems are the job reader's to report).
pub fn read_exchange(dir: &Path) -> Option<Exchange> {
    let Some(question) = read_question(dir).ok()? else {
        return unanswered_in_history(dir).map(|question| Exchange {
            question,
            answer: None,
        });
    };
    let answer = read_small(&dir.join(RESPONSE_FILE))
        .ok()
        .flatten()
        .and_then(|b| Answer::parse(&b))
        .filter(|a| a.question_id == question.id);
    Some(Exchange { question, answer })
}

/// How much of `history.jsonl` is read for the question a stopped job asked: its end is what
/// counts, and this is only ever shown.
const HISTORY_TAIL: u64 = 1024 * 1024;

/// The last question archived in `dir`'s history, if it was archived with no answer.
fn unanswered_in_history(dir: &Path) -> Option<Question> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::jobs::fs::files::open_nofollow(&dir.join(HISTORY_FILE)).ok()??;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(HISTORY_TAIL)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(HISTORY_TAIL).read_to_end(&mut bytes).ok()?;
    let record = bytes
        .split(|b| *b == b'\n')
        .rev()
        .filter(|line| memchr::memmem::find(line, b"\"clarification\"").is_some())
        .find_map(|line| {
            object(line)
                .ok()
                .filter(|m| m.contains_key("clarification"))
        })?;
    if record.get("response").is_some_and(|r| !r.is_null()) {
        // Answered while the agent waited: it went on, and stopped for something else.
        return None;
    }
    let asked = serde_json::to_vec(record.get("clarification")?).ok()?;
    Question::parse(&asked, None).ok()
}

impl Job {
    /// The stage of a `needs_input` job; `None` for any other status.
    pub fn stage(&self) -> Option<Stage<'_>> {
        if self.status != Status::NeedsInput {
            return None;
        }
        if let Some(newest) = self.retried_by.last() {
            return Some(Stage::Retried(newest));
        }
        let answered = self.exchange.as_ref().is_some_and(|e| e.answer.is_some());
        Some(if answered {
            Stage::Answered
        } else {
            Stage::Asking
        })
    }

    /// Someone must act before the job can go on: a question or gate its live agent waits on,
    /// or a stopped job nobody has answered or retried yet.
    pub fn awaits_person(&self) -> bool {
        match self.status {
            Status::Waiting => true,
            Status::NeedsInput => self.stage() == Some(Stage::Asking),
            _ => false,
        }
    }

    /// The job this one retries (meta.json's `retry_of`), if it names a valid id.
    pub fn retry_of(&self) -> Option<JobId> {
        let of = self.meta.as_ref()?.retry_of.as_str();
        // Most jobs retry none: an empty field is not parsed (a refused id builds its message,
        // and every frame of a large root asks every job).
        if of.is_empty() {
            return None;
        }
        JobId::parse(of).ok().filter(|id| *id != self.id)
    }
}

/// Every job's retries, oldest first (by start, then id): `retry_of` read the other way round.
pub fn retries<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> HashMap<JobId, Vec<JobId>> {
    let mut found: HashMap<JobId, Vec<(Option<DateTime<Utc>>, JobId)>> = HashMap::new();
    for job in jobs {
        if let Some(of) = job.retry_of() {
            // A remote job's retry_of names a job of its own host.
            let of = match job.id.host() {
                Some(host) => JobId::on_host(host, &of),
                None => of,
            };
            found
                .entry(of)
                .or_default()
                .push((job.started, job.id.clone()));
        }
    }
    found
        .into_iter()
        .map(|(of, mut by)| {
            by.sort();
            (of, by.into_iter().map(|(_, id)| id).collect())
        })
        .collect()
}

/// Fills in `retried_by` of every job from the others' `retry_of`.
pub fn link_retries(jobs: &mut [Job]) {
    let mut by = retries(jobs.iter());
    for job in jobs {
        job.retried_by = by.remove(&job.id).unwrap_or_default().into();
    }
}

/// The retries of one job, found without reading every job: only directories changed since it
/// finished can hold one (a retry is made after its original ended), and only their meta.json is
/// read. Directories that cannot be read are passed over.
pub fn find_retries(root: &Path, job: &Job) -> Vec<JobId> {
    let Ok(ids) = crate::jobs::model::scan::list_ids(root) else {
        return Vec::new();
    };
    // A file system's clock may lag the one that wrote `finished` by a little.
    let since = job
        .finished
        .map(|t| std::time::SystemTime::from(t - chrono::Duration::seconds(5)));
    let mut found: Vec<(Option<DateTime<Utc>>, JobId)> = ids
        .into_iter()
        .filter(|id| *id != job.id)
        .filter(|id| {
            let changed = std::fs::symlink_metadata(root.join(id.as_str()))
                .and_then(|m| m.modified())
                .ok();
            match (since, changed) {
                (Some(since), Some(changed)) => changed >= since,
                _ => true,
            }
        })
        .filter_map(|id| {
            let dir = root.join(id.as_str());
            let bytes = crate::jobs::fs::files::read_capped(
                &dir.join(crate::jobs::fs::names::META_FILE),
                crate::jobs::fs::files::META_FILE_CAP,
            )
            .ok()??;
            let meta = crate::jobs::model::meta::Meta::parse(&bytes).ok()?;
            (meta.retry_of == job.id.as_str()).then_some((meta.started, id))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests;
