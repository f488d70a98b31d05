//! The record of an exchange in `history.jsonl`. Once the answer (or decision) is read, the
//! request and the answer go there as one line and both files are removed, so the next question
//! can be asked; an answer no pending request asked for goes there as stale; progress milestones
//! go there for the timeline. Reading it back (the next id, who answered) is
//! [`history`](crate::jobs::hitl::history).
//!
//! The request files the agent writes (`clarification.json`, `approval.json`) are here too: a
//! record carries them as they were asked.

use std::io;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::HISTORY_FILE;
use crate::jobs::fs::publish::{append_line, locked};
use crate::jobs::hitl::published::{Decision, Response};

/// `clarification.json` as the agent writes it.
#[derive(Clone, Debug, Serialize)]
pub struct Clarification<'a> {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub question: &'a str,
    pub options: &'a [String],
    pub context: &'a str,
    pub asked_at: String,
    pub timeout_minutes: Option<f64>,
    pub default_if_timeout: Option<&'a str>,
    /// The richer fields, written only when used: a question without them is written as it
    /// always was.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub header: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub option_descriptions: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
}

/// `approval.json` as the agent writes it.
#[derive(Clone, Debug, Serialize)]
pub struct Approval<'a> {
    pub id: String,
    pub gate: &'a str,
    pub description: &'a str,
    pub context: &'a str,
    pub awaiting_since: String,
    pub auto_approve_after_minutes: Option<f64>,
    /// Written only when the gate may be approved for the session: what that covers (older
    /// readers ignore it and offer approving once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_session: Option<&'a str>,
}

/// A question and how it ended (`null` when nobody answered and there was no default).
#[derive(Serialize)]
pub struct QuestionRecord<'a> {
    pub clarification: &'a Clarification<'a>,
    pub response: Option<&'a Response>,
    pub archived_at: String,
    /// Why the agent withdrew the question (it stopped waiting), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<&'a str>,
}

/// A gate and its decision (`null` when the gate was withdrawn undecided).
#[derive(Serialize)]
pub struct GateRecord<'a> {
    pub approval: &'a Approval<'a>,
    pub decision: Option<&'a Decision>,
    pub archived_at: String,
    /// Why the agent withdrew the gate (it stopped waiting), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<&'a str>,
}

/// An answer no pending request asked for, kept for a person to read.
#[derive(Serialize)]
struct StaleRecord<'a> {
    /// The file's JSON, or its text when it is not JSON.
    stale: Value,
    file: &'a str,
    archived_at: &'a str,
}

/// Appends one record to `history.jsonl` as one line.
pub fn append(dir: &Path, record: &impl Serialize) -> io::Result<()> {
    let line = serde_json::to_string(record).map_err(io::Error::other)?;
    append_line(dir, HISTORY_FILE, &line)
}

/// Appends the exchange to `history.jsonl`, then removes the request and the answer (request
/// first: a cockpit must never see the request without its answer and think it pending again).
pub fn archive(dir: &Path, record: &impl Serialize, files: [&str; 2]) -> io::Result<()> {
    append(dir, record)?;
    for name in files {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The answer file `name` as `parse` reads it, if `ours` says it settles the request.
pub fn answer_in_place<T>(
    dir: &Path,
    name: &str,
    parse: fn(&[u8]) -> Option<T>,
    ours: impl Fn(&T) -> bool,
) -> Option<T> {
    read_small(&dir.join(name))
        .ok()
        .flatten()
        .and_then(|b| parse(&b))
        .filter(|t| ours(t))
}

/// Withdraws a request nobody will wait for any more: its record (saying so) goes to the
/// history first, so that a publisher arriving now reads there that it was withdrawn; then the
/// request file is removed, and last an answer to it that landed meanwhile (`ours` tells it
/// from an answer to another instance, which is left alone), under the directory's lock.
pub fn withdraw(
    dir: &Path,
    record: &impl Serialize,
    request: &str,
    answer: &str,
    ours: impl Fn(&[u8]) -> bool,
) -> io::Result<()> {
    append(dir, record)?;
    remove_if_there(&dir.join(request))?;
    locked(dir, || match read_small(&dir.join(answer))? {
        Some(bytes) if ours(&bytes) => remove_if_there(&dir.join(answer)),
        _ => Ok(()),
    })
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Moves a left-over answer file into the history, so that a new answer can be published.
pub fn archive_stale(dir: &Path, name: &str, now: &str) -> io::Result<()> {
    locked(dir, || match read_small(&dir.join(name))? {
        Some(bytes) => move_to_history(dir, name, &bytes, now),
        None => Ok(()),
    })
}

/// Moves `name` into the history as stale if it still holds `expected` (an answer to another
/// instance, in the way of the one pending): under the directory's lock, so that it is never
/// someone's answer published a moment ago.
pub fn set_aside(dir: &Path, name: &str, expected: &[u8], now: &str) -> io::Result<()> {
    locked(dir, || match read_small(&dir.join(name))? {
        Some(bytes) if bytes == expected => move_to_history(dir, name, &bytes, now),
        _ => Ok(()),
    })
}

/// Appends the file as a stale record, then removes it: kept for a person to read, out of the
/// way of the next answer. Call with the directory locked.
fn move_to_history(dir: &Path, name: &str, bytes: &[u8], now: &str) -> io::Result<()> {
    let stale = serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    append(
        dir,
        &StaleRecord {
            stale,
            file: name,
            archived_at: now,
        },
    )?;
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
