//! The operator's side of a question or gate: checking an answer against the question, and
//! publishing it exactly once (`response.json` / `approved.json`, whose form is
//! [`published`](crate::jobs::hitl::published)'s). The CLI and the cockpit both answer through
//! here.

use crate::jobs::fs::names::{DECISION_FILE, HISTORY_FILE, QUESTION_FILE, RESPONSE_FILE};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use std::path::Path;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::publish::{Published, publish_once};
use crate::jobs::model::format::{from_object, lenient};
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::{Job, Standing, read_job};
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::text::sanitize::plain_text;

pub use crate::jobs::hitl::published::{Decision, Response};

/// Who is answering: `$USER@hostname`.
pub fn operator() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    format!("{user}@{host}")
}

pub fn timestamp(now: DateTime<Utc>) -> String {
    now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("job {0} has no pending question (`luzia questions` lists them)")]
    NoQuestion(String),
    #[error("job {0} has no pending approval gate (`luzia questions` lists them)")]
    NoGate(String),
    #[error(
        "job {0}'s agent is not running, so nobody would read the answer: the question is orphaned"
    )]
    Orphaned(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    NotAnAnswer(#[from] NotAnAnswer),
    #[error(
        "cannot write the answer in {path}: {source} (check that the directory is writable and the disk not full)"
    )]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// An answer that does not fit its question.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotAnAnswer {
    #[error("'{input}' is not one of the options: {options}")]
    NotAnOption { input: String, options: String },
    #[error("'{0}' is not an answer to a yes/no question: answer yes or no")]
    NotYesOrNo(String),
    #[error("the answer is empty")]
    Empty,
}

/// What came of answering.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    Done(T),
    /// Someone answered first; theirs stands.
    Already(T),
}

/// The answer as it will be published: an option's text for a choice (given as itself or as its
/// 1-based number), `yes`/`no` for a confirm, the text for free text.
pub fn normalize(q: &Question, input: &str) -> Result<String, NotAnAnswer> {
    let trimmed = input.trim();
    match q.kind {
        QuestionType::Choice => {
            let list = || q.numbered_options(", ");
            if let Some(o) = q.options.iter().find(|o| o.as_str() == trimmed) {
                return Ok(o.clone());
            }
            if let Some(o) = q.options.iter().find(|o| o.eq_ignore_ascii_case(trimmed)) {
                return Ok(o.clone());
            }
            match trimmed.parse::<usize>() {
                Ok(n) if (1..=q.options.len()).contains(&n) => Ok(q.options[n - 1].clone()),
                _ => Err(NotAnAnswer::NotAnOption {
                    input: plain_text(trimmed),
                    options: list(),
                }),
            }
        }
        QuestionType::Confirm => match trimmed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok("yes".into()),
            "n" | "no" | "false" => Ok("no".into()),
            _ => Err(NotAnAnswer::NotYesOrNo(plain_text(trimmed))),
        },
        QuestionType::Text if trimmed.is_empty() => Err(NotAnAnswer::Empty),
        // Free text keeps its lines and spaces: it goes to the agent word for word.
        QuestionType::Text => Ok(input.to_owned()),
    }
}

fn io_error(job: &Job, source: std::io::Error) -> AnswerError {
    AnswerError::Io {
        path: job.dir.display().to_string(),
        source,
    }
}

fn check_standing(job: &Job) -> Result<(), AnswerError> {
    match job.standing() {
        Standing::Orphaned => Err(AnswerError::Orphaned(job.id.to_string())),
        Standing::Pending | Standing::AnswerThenRetry => Ok(()),
    }
}

/// Answers the job's pending question, exactly once.
pub fn answer(
    job: &Job,
    input: &str,
    source: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Result<Outcome<Response>, AnswerError> {
    let Some(q) = job.question.as_ref() else {
        // A question file that cannot be read is the thing to say, not "no question".
        if let Some(p) = job
            .problems
            .iter()
            .find(|p| p.path.ends_with(QUESTION_FILE))
        {
            return Err(AnswerError::Invalid(format!(
                "{p}: the agent's question cannot be read, so it cannot be answered"
            )));
        }
        // Nothing pending: if it was settled a moment ago, say by whom rather than "no question".
        return match settled(&job.dir, None) {
            Some(r) => Ok(Outcome::Already(r)),
            None => Err(AnswerError::NoQuestion(job.id.to_string())),
        };
    };
    check_standing(job)?;
    let answer = normalize(q, input)?;
    let response = Response {
        question_id: q.id.clone(),
        answer,
        answered_by: by.to_owned(),
        answered_at: timestamp(now),
        source: source.to_owned(),
    };
    publish_response(&job.dir, &response).map_err(|e| io_error(job, e))
}

/// Publishes a response (an operator's, or the agent's timeout default): exactly one ever
/// stands for a question. A stale `response.json` (for another question) is set aside first;
/// an answer that lands after the question was archived is taken back and the loser told who
/// settled it.
pub fn publish_response(dir: &Path, r: &Response) -> std::io::Result<Outcome<Response>> {
    let bytes = serde_json::to_vec_pretty(r).expect("JSON of strings");
    for _ in 0..3 {
        match publish_once(dir, RESPONSE_FILE, &bytes)? {
            Published::Won if still_asked(dir, &r.question_id) => {
                return Ok(Outcome::Done(r.clone()));
            }
            Published::Won => {
                // The question is gone: either the agent already took this very answer and
                // archived it, or it archived another one first and will never read ours.
                // (Only the history can say which: response.json is now ours.)
                let stands = archived(dir, Some(&r.question_id));
                if stands.as_ref() == Some(r) {
                    return Ok(Outcome::Done(r.clone()));
                }
                remove_if_unchanged(&dir.join(RESPONSE_FILE), &bytes);
                return Ok(Outcome::Already(
                    stands.unwrap_or_else(|| unreadable_response(r)),
                ));
            }
            Published::Lost(existing) => match Response::parse(&existing) {
                Some(e) if e.question_id == r.question_id => return Ok(Outcome::Already(e)),
                Some(_) => set_aside(dir, RESPONSE_FILE, &existing)?,
                // Gone between the link and the read: archived, so settled.
                None if existing.is_empty() => {
                    return Ok(Outcome::Already(
                        settled(dir, Some(&r.question_id))
                            .unwrap_or_else(|| unreadable_response(r)),
                    ));
                }
                None => return Ok(Outcome::Already(unreadable_response(r))),
            },
        }
    }
    Ok(Outcome::Already(
        settled(dir, Some(&r.question_id)).unwrap_or_else(|| unreadable_response(r)),
    ))
}

/// Whether `clarification.json` still asks question `id`.
fn still_asked(dir: &Path, id: &str) -> bool {
    read_small(&dir.join(QUESTION_FILE))
        .ok()
        .flatten()
        .and_then(|b| Question::parse(&b, None).ok())
        .is_some_and(|q| q.id == id)
}

/// Removes `path` only if it still holds exactly `bytes` (ours, not someone else's).
fn remove_if_unchanged(path: &Path, bytes: &[u8]) {
    if read_small(path).ok().flatten().as_deref() == Some(bytes) {
        let _ = std::fs::remove_file(path);
    }
}

/// Moves a stale answer out of the way (it answers no pending question), keeping it for a
/// person to read: `.response.json.stale-<nanos>`.
fn set_aside(dir: &Path, name: &str, existing: &[u8]) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let aside = dir.join(format!(".{name}.stale-{nanos}"));
    match std::fs::rename(dir.join(name), &aside) {
        Ok(()) => {
            // If it changed under us (a real answer replaced the stale one), put it back.
            if read_small(&aside).ok().flatten().as_deref() != Some(existing) {
                let _ = std::fs::hard_link(&aside, dir.join(name));
                let _ = std::fs::remove_file(&aside);
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Who settled question `id` (or the latest one): `response.json`, else the last record of it in
/// `history.jsonl` (the agent archives both files once it has the answer).
pub fn settled(dir: &Path, id: Option<&str>) -> Option<Response> {
    let matches = |r: &Response| id.is_none_or(|id| r.question_id == id);
    if let Some(r) = read_small(&dir.join(RESPONSE_FILE))
        .ok()
        .flatten()
        .and_then(|b| Response::parse(&b))
        .filter(matches)
    {
        return Some(r);
    }
    archived(dir, id)
}

/// A `history.jsonl` line as far as the answer it archived goes.
#[derive(Deserialize)]
struct ArchivedAnswer {
    response: Option<Response>,
    #[serde(default, deserialize_with = "lenient::string")]
    archived_at: Option<String>,
}

impl ArchivedAnswer {
    fn is_recent(&self) -> bool {
        self.archived_at
            .as_deref()
            .and_then(crate::jobs::model::time::parse_timestamp)
            .is_some_and(|t| Utc::now() - t < chrono::Duration::seconds(60))
    }
}

/// The answer to question `id` (or the latest one, if recent) as archived in `history.jsonl`.
pub fn archived(dir: &Path, id: Option<&str>) -> Option<Response> {
    let matches = |r: &Response| id.is_none_or(|id| r.question_id == id);
    let file = crate::jobs::fs::files::open_nofollow(&dir.join(HISTORY_FILE)).ok()??;
    let len = file.metadata().ok()?.len();
    let recent = crate::jobs::fs::tail::last_lines(&file, len, 20).ok()?;
    recent.iter().rev().find_map(|line| {
        let record: ArchivedAnswer = from_object(&line.bytes).ok()?;
        // Only moments ago: an old exchange says nothing about a question asked now.
        let fresh = id.is_some() || record.is_recent();
        record.response.filter(|r| matches(r) && fresh)
    })
}

fn unreadable_response(r: &Response) -> Response {
    Response {
        answer: String::new(),
        answered_by: "someone (the answer is no longer on disk)".into(),
        answered_at: String::new(),
        source: String::new(),
        ..r.clone()
    }
}

/// Approves or denies the job's pending gate, exactly once. A denial needs a reason: the agent
/// receives it word for word.
pub fn decide(
    job: &Job,
    approved: bool,
    reason: &str,
    source: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Result<Outcome<Decision>, AnswerError> {
    let g: &Gate = job
        .gate
        .as_ref()
        .ok_or_else(|| AnswerError::NoGate(job.id.to_string()))?;
    check_standing(job)?;
    if !approved && reason.trim().is_empty() {
        return Err(AnswerError::Invalid(
            "a denial needs a reason (--reason): the agent is told it word for word".into(),
        ));
    }
    let d = Decision {
        gate: g.gate.clone(),
        approved,
        reason: reason.to_owned(),
        decided_by: by.to_owned(),
        decided_at: timestamp(now),
        source: source.to_owned(),
    };
    publish_decision(&job.dir, &d).map_err(|e| io_error(job, e))
}

pub fn publish_decision(dir: &Path, d: &Decision) -> std::io::Result<Outcome<Decision>> {
    let bytes = serde_json::to_vec_pretty(d).expect("JSON of strings");
    Ok(match publish_once(dir, DECISION_FILE, &bytes)? {
        Published::Won => Outcome::Done(d.clone()),
        Published::Lost(existing) => {
            Outcome::Already(Decision::parse(&existing).unwrap_or_else(|| Decision {
                decided_by: "someone (approved.json is unreadable)".into(),
                ..d.clone()
            }))
        }
    })
}

/// Who answers, and through what (`tui`, `cli`): what a published answer or decision records.
#[derive(Clone, Copy, Debug)]
pub struct Answerer<'a> {
    pub source: &'a str,
    pub by: &'a str,
}

/// Why what the operator was shown cannot be answered: it is no longer pending (the job is gone,
/// or its question or gate was answered, withdrawn or replaced meanwhile), or answering failed.
#[derive(Debug, thiserror::Error)]
pub enum NotPending {
    #[error("job {0} is gone")]
    Gone(String),
    #[error("job {job}'s question {question} is no longer pending")]
    Question { job: String, question: String },
    #[error("job {job}'s gate '{gate}' is no longer pending")]
    Gate { job: String, gate: String },
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

/// Answers question `question_id` of job `id` under `root`, if it is still the one pending.
/// The job is read afresh: an answer typed against a question that has since been settled or
/// replaced by another must not be given to the other one.
pub fn answer_if_pending(
    root: &Path,
    id: &JobId,
    question_id: &str,
    input: &str,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome<Response>, NotPending> {
    let job = read_job(root, id, now).ok_or_else(|| NotPending::Gone(id.to_string()))?;
    if job.question.as_ref().is_none_or(|q| q.id != question_id) {
        return Err(NotPending::Question {
            job: id.to_string(),
            question: question_id.to_owned(),
        });
    }
    Ok(answer(&job, input, who.source, who.by, now)?)
}

/// Approves or denies gate `gate` of job `id` under `root`, if it is still the one pending (the
/// job read afresh, as for [`answer_if_pending`]).
pub fn decide_if_pending(
    root: &Path,
    id: &JobId,
    gate: &str,
    approved: bool,
    reason: &str,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome<Decision>, NotPending> {
    let job = read_job(root, id, now).ok_or_else(|| NotPending::Gone(id.to_string()))?;
    if job.gate.as_ref().is_none_or(|g| g.gate != gate) {
        return Err(NotPending::Gate {
            job: id.to_string(),
            gate: gate.to_owned(),
        });
    }
    Ok(decide(&job, approved, reason, who.source, who.by, now)?)
}

#[cfg(test)]
#[path = "operator_pending_tests.rs"]
mod pending_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn q(kind: QuestionType, options: &[&str]) -> Question {
        Question {
            id: "q1".into(),
            kind,
            question: "?".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            context: String::new(),
            asked_at: None,
            timeout_minutes: None,
            default_if_timeout: None,
            note: None,
        }
    }

    #[test]
    fn normalize_table() {
        let choice = q(QuestionType::Choice, &["production", "staging"]);
        let confirm = q(QuestionType::Confirm, &[]);
        let text = q(QuestionType::Text, &[]);
        let cases: &[(&Question, &str, Result<&str, &str>)] = &[
            (&choice, "staging", Ok("staging")),
            (&choice, " Staging ", Ok("staging")),
            (&choice, "2", Ok("staging")),
            (&choice, "1", Ok("production")),
            (&choice, "3", Err("1) production, 2) staging")),
            (&choice, "0", Err("not one of the options")),
            (&choice, "dev", Err("'dev' is not one of the options")),
            (&confirm, "Y", Ok("yes")),
            (&confirm, "no", Ok("no")),
            (&confirm, "maybe", Err("answer yes or no")),
            (&text, "  two\nlines ", Ok("  two\nlines ")),
            (&text, "   ", Err("empty")),
        ];
        for (question, input, want) in cases {
            match (normalize(question, input), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, *w, "{input:?}"),
                (Err(got), Err(w)) => assert!(got.to_string().contains(w), "{input:?}: {got}"),
                (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_failed_write_keeps_its_io_error() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("j1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
        std::fs::write(dir.join(QUESTION_FILE), r#"{"id": "q1", "question": "?"}"#).unwrap();
        let id = crate::jobs::JobId::parse("j1").unwrap();
        let job = crate::jobs::read_job(root.path(), &id, Utc::now()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        match answer(&job, "yes", "cli", "me", Utc::now()) {
            Err(e @ AnswerError::Io { .. }) => {
                let kind = std::error::Error::source(&e)
                    .and_then(|s| s.downcast_ref::<std::io::Error>())
                    .map(std::io::Error::kind);
                assert_eq!(kind, Some(std::io::ErrorKind::NotFound), "{e}");
                assert!(e.to_string().contains("cannot write the answer in"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn responses_round_trip_and_read_the_old_form() {
        let r = Response {
            question_id: "q2".into(),
            answer: "x".into(),
            answered_by: "a@b".into(),
            answered_at: "t".into(),
            source: "cli".into(),
        };
        let bytes = serde_json::to_vec(&r).unwrap();
        assert_eq!(Response::parse(&bytes), Some(r));
        let old = Response::parse(br#"{"choice": "staging"}"#).unwrap();
        assert_eq!(
            (old.question_id.as_str(), old.answer.as_str()),
            ("q1", "staging")
        );
        assert_eq!(Response::parse(b"{}"), None);
        let d =
            Decision::parse(br#"{"gate": "g", "approved": false, "reason": "not now"}"#).unwrap();
        assert!(!d.approved);
        assert_eq!(d.reason, "not now");
        assert_eq!(
            Decision::parse(br#"{"gate": "g"}"#),
            None,
            "no decision without `approved`"
        );
    }
}
