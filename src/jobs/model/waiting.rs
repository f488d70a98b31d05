//! Questions and approval gates, as they sit on disk: reading them and deciding what is pending.
//! Answering them is `answer.rs` (operator side) and `agent.rs` (agent side).

use crate::jobs::fs::names::{DECISION_FILE, GATE_FILE, QUESTION_FILE, RESPONSE_FILE};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::jobs::fs::files::read_small;
use crate::jobs::model::format::{FileError, FormatError, object};
use crate::jobs::model::time::parse_timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuestionType {
    Choice,
    Text,
    Confirm,
}

impl QuestionType {
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionType::Choice => "choice",
            QuestionType::Text => "text",
            QuestionType::Confirm => "confirm",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub id: String,
    pub kind: QuestionType,
    pub question: String,
    pub options: Vec<String>,
    pub context: String,
    pub asked_at: Option<DateTime<Utc>>,
    pub timeout_minutes: Option<f64>,
    pub default_if_timeout: Option<String>,
    /// Something odd about the file that the operator should know (it is still answerable).
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    pub gate: String,
    pub description: String,
    pub context: String,
    pub awaiting_since: Option<DateTime<Utc>>,
    pub auto_approve_after_minutes: Option<f64>,
}

/// What a running job is waiting for, in the words of `luzia jobs --json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    Question,
    Approval,
}

impl Waiting {
    pub fn as_str(self) -> &'static str {
        match self {
            Waiting::Question => "question",
            Waiting::Approval => "approval",
        }
    }
}

fn text(m: &Map<String, Value>, k: &str) -> String {
    match m.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn minutes(m: &Map<String, Value>, k: &str) -> Option<f64> {
    match m.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|f: &f64| f.is_finite() && *f >= 0.0)
}

impl Question {
    /// `mtime` stands in for a missing `asked_at`, as the protocol says.
    pub fn parse(bytes: &[u8], mtime: Option<DateTime<Utc>>) -> Result<Question, FormatError> {
        let m = object(bytes)?;
        let options: Vec<String> = match m.get("options") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect(),
            _ => Vec::new(),
        };
        let declared = text(&m, "type");
        let (kind, note) = match declared.as_str() {
            "choice" if options.is_empty() => (
                QuestionType::Text,
                Some("a choice with no options: answer in free text".to_string()),
            ),
            "choice" => (QuestionType::Choice, None),
            "confirm" => (QuestionType::Confirm, None),
            "text" => (QuestionType::Text, None),
            // Hand-written files often omit the type: options make it a choice.
            "" if !options.is_empty() => (QuestionType::Choice, None),
            "" => (QuestionType::Text, None),
            other => (
                QuestionType::Text,
                Some(format!(
                    "unknown question type '{}': answer in free text",
                    other.escape_debug()
                )),
            ),
        };
        let id = Some(text(&m, "id"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "q1".into());
        Ok(Question {
            id,
            kind,
            question: text(&m, "question"),
            options,
            context: text(&m, "context"),
            asked_at: m
                .get("asked_at")
                .and_then(Value::as_str)
                .and_then(parse_timestamp)
                .or(mtime),
            timeout_minutes: minutes(&m, "timeout_minutes"),
            default_if_timeout: m
                .get("default_if_timeout")
                .and_then(|v| v.as_str().map(str::to_owned)),
            note,
        })
    }
}

fn deadline(since: Option<DateTime<Utc>>, minutes: Option<f64>) -> Option<DateTime<Utc>> {
    // The file may say 1e300 minutes: a deadline past what a date can hold is no deadline.
    let after = chrono::Duration::try_milliseconds((minutes? * 60_000.0) as i64)?;
    since?.checked_add_signed(after)
}

impl Question {
    /// When a waiting agent takes its default (or gives up).
    pub fn deadline(&self) -> Option<DateTime<Utc>> {
        deadline(self.asked_at, self.timeout_minutes)
    }

    /// `1) production<sep>2) staging`, sanitized.
    pub fn numbered_options(&self, sep: &str) -> String {
        let numbered: Vec<String> = self
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}) {}", i + 1, crate::jobs::text::sanitize::plain_text(o)))
            .collect();
        numbered.join(sep)
    }
}

impl Gate {
    /// When the agent approves by itself, if it was told to.
    pub fn deadline(&self) -> Option<DateTime<Utc>> {
        deadline(self.awaiting_since, self.auto_approve_after_minutes)
    }

    pub fn parse(bytes: &[u8], mtime: Option<DateTime<Utc>>) -> Result<Gate, FormatError> {
        let m = object(bytes)?;
        Ok(Gate {
            gate: text(&m, "gate"),
            description: text(&m, "description"),
            context: text(&m, "context"),
            awaiting_since: m
                .get("awaiting_since")
                .and_then(Value::as_str)
                .and_then(parse_timestamp)
                .or(mtime),
            auto_approve_after_minutes: minutes(&m, "auto_approve_after_minutes"),
        })
    }
}

/// A question and a gate that are pending in `dir`, and what could not be read, as
/// (file name, message) pairs.
#[derive(Debug, Default)]
pub struct PendingRead {
    pub question: Option<Question>,
    pub gate: Option<Gate>,
    pub problems: Vec<(&'static str, FileError)>,
}

pub fn read_pending(dir: &Path) -> PendingRead {
    let mut out = PendingRead::default();
    match read_with_mtime(dir, QUESTION_FILE) {
        Ok(None) => {}
        Err(e) => out.problems.push((QUESTION_FILE, e)),
        Ok(Some((bytes, mtime))) => match Question::parse(&bytes, mtime) {
            Err(e) => out.problems.push((QUESTION_FILE, e.into())),
            Ok(q) => match answered_id(dir) {
                Ok(Some(ref answered)) if *answered == q.id => {}
                Ok(_) => out.question = Some(q),
                Err(e) => {
                    out.problems.push((RESPONSE_FILE, e));
                    out.question = Some(q);
                }
            },
        },
    }
    match read_with_mtime(dir, GATE_FILE) {
        Ok(None) => {}
        Err(e) => out.problems.push((GATE_FILE, e)),
        Ok(Some((bytes, mtime))) => match Gate::parse(&bytes, mtime) {
            Err(e) => out.problems.push((GATE_FILE, e.into())),
            Ok(g) => match decided_gate(dir) {
                // A decision names its gate; one for another gate is stale.
                Ok(Some(ref decided)) if decided.is_empty() || *decided == g.gate => {}
                Ok(_) => out.gate = Some(g),
                Err(e) => {
                    out.problems.push((DECISION_FILE, e));
                    out.gate = Some(g);
                }
            },
        },
    }
    out
}

/// A small file's bytes and its modification time.
type FileRead = (Vec<u8>, Option<DateTime<Utc>>);

fn read_with_mtime(dir: &Path, name: &str) -> Result<Option<FileRead>, FileError> {
    let path = dir.join(name);
    let Some(bytes) = read_small(&path)? else {
        return Ok(None);
    };
    let mtime = std::fs::symlink_metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    Ok(Some((bytes, mtime)))
}

/// The question id a `response.json` answers. The older `{"choice": ...}` form names none
/// and answers whatever is asked: that is what agents written against it expect.
fn answered_id(dir: &Path) -> Result<Option<String>, FileError> {
    let Some(bytes) = read_small(&dir.join(RESPONSE_FILE))? else {
        return Ok(None);
    };
    let m = object(&bytes)?;
    Ok(Some(match m.get("question_id") {
        Some(Value::String(id)) => id.clone(),
        _ => "q1".into(),
    }))
}

/// The gate name an `approved.json` decides (empty when it names none).
fn decided_gate(dir: &Path) -> Result<Option<String>, FileError> {
    let Some(bytes) = read_small(&dir.join(DECISION_FILE))? else {
        return Ok(None);
    };
    Ok(Some(text(&object(&bytes)?, "gate")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, body) in files {
            fs::write(d.path().join(name), body).unwrap();
        }
        d
    }

    const Q: &str = r#"{"id": "q1", "type": "choice", "question": "Which database?",
        "options": ["production", "staging"], "context": "migration",
        "asked_at": "2026-01-11T14:30:00Z", "timeout_minutes": 30, "default_if_timeout": "staging"}"#;
    const G: &str = r#"{"gate": "database_migration", "description": "3 migrations",
        "awaiting_since": "2026-01-11T14:30:00Z", "auto_approve_after_minutes": null}"#;

    #[test]
    fn pending_table() {
        // (files, question pending, gate pending, problems)
        type Case<'a> = (&'a [(&'a str, &'a str)], bool, bool, usize);
        let cases: &[Case] = &[
            (&[], false, false, 0),
            (&[(QUESTION_FILE, Q)], true, false, 0),
            (
                &[
                    (QUESTION_FILE, Q),
                    (RESPONSE_FILE, r#"{"question_id": "q1", "answer": "x"}"#),
                ],
                false,
                false,
                0,
            ),
            (
                &[
                    (QUESTION_FILE, Q),
                    (RESPONSE_FILE, r#"{"question_id": "q0", "answer": "x"}"#),
                ],
                true,
                false,
                0,
            ),
            (
                &[
                    (QUESTION_FILE, Q),
                    (RESPONSE_FILE, r#"{"choice": "staging"}"#),
                ],
                false,
                false,
                0,
            ),
            (
                &[(QUESTION_FILE, Q), (RESPONSE_FILE, "{trunc")],
                true,
                false,
                1,
            ),
            (
                &[(QUESTION_FILE, "{\"id\": \"q1\", \"ques")],
                false,
                false,
                1,
            ),
            (&[(GATE_FILE, G)], false, true, 0),
            (
                &[
                    (GATE_FILE, G),
                    (
                        DECISION_FILE,
                        r#"{"gate": "database_migration", "approved": false}"#,
                    ),
                ],
                false,
                false,
                0,
            ),
            (
                &[
                    (GATE_FILE, G),
                    (DECISION_FILE, r#"{"gate": "other", "approved": true}"#),
                ],
                false,
                true,
                0,
            ),
            (&[(GATE_FILE, G), (QUESTION_FILE, Q)], true, true, 0),
            (&[(GATE_FILE, "[]")], false, false, 1),
        ];
        for (files, q, g, problems) in cases {
            let d = dir_with(files);
            let got = read_pending(d.path());
            assert_eq!(got.question.is_some(), *q, "{files:?}");
            assert_eq!(got.gate.is_some(), *g, "{files:?}");
            assert_eq!(
                got.problems.len(),
                *problems,
                "{files:?}: {:?}",
                got.problems
            );
        }
    }

    #[test]
    fn question_defaults() {
        let mtime = parse_timestamp("2026-02-02T00:00:00Z");
        let q = Question::parse(br#"{"question": "Go on?", "options": ["y", 2]}"#, mtime).unwrap();
        assert_eq!(q.id, "q1");
        assert_eq!(q.kind, QuestionType::Choice);
        assert_eq!(q.options, ["y", "2"]);
        assert_eq!(q.asked_at, mtime);
        let full = Question::parse(Q.as_bytes(), None).unwrap();
        assert_eq!(full.timeout_minutes, Some(30.0));
        assert_eq!(full.default_if_timeout.as_deref(), Some("staging"));
        assert_eq!(
            Question::parse(br#"{"question": "why?"}"#, None)
                .unwrap()
                .kind,
            QuestionType::Text
        );
    }
}
