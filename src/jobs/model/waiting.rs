//! Questions and approval gates, as they sit on disk: reading them and deciding what is pending.
//! Answering them is `hitl::operator` (operator side) and `hitl::agent` (agent side).
//!
//! Every question and gate is one *instance*, named by its `id`. A gate file written without
//! one (by hand, by an older agent) gets an id derived from its content and from the file itself
//! (`g-` and 12 hex digits): rewriting the gate, even with the same words, makes a new instance,
//! so a decision meant for the old one never lands on the new one.

use crate::jobs::fs::names::{DECISION_FILE, GATE_FILE, QUESTION_FILE, RESPONSE_FILE};
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::jobs::fs::files::{SMALL_FILE_CAP, open_nofollow, read_small};
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
    /// A short title (`Database`), empty when none is given.
    pub header: String,
    /// What each option means, one per option (empty text where none is given); empty when
    /// the file gives no descriptions.
    pub descriptions: Vec<String>,
    /// A choice where several options may be taken (the answer names them, `, `-joined).
    pub multi_select: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// The instance: `approval.json`'s `id` (`g3`), or one derived from the file when it has
    /// none (see the module's comment).
    pub id: String,
    pub gate: String,
    pub description: String,
    pub context: String,
    pub awaiting_since: Option<DateTime<Utc>>,
    pub auto_approve_after_minutes: Option<f64>,
    /// The gate may be approved for the session (the agent then stops asking for calls like
    /// this one): what that covers, in the agent's words (empty when it says nothing). `None`:
    /// it may be approved only once (`approval.json` has no `allow_session`).
    pub allow_session: Option<String>,
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
        let (options, descriptions) = options(&m);
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
            header: text(&m, "header"),
            descriptions,
            multi_select: kind == QuestionType::Choice
                && matches!(m.get("multi_select"), Some(Value::Bool(true))),
        })
    }
}

/// The options and their descriptions. An option is its text, or an object with a `label` (and
/// a `description`), as Claude Code asks; descriptions may also come as `option_descriptions`,
/// one per option. Anything else is shown as its JSON.
fn options(m: &Map<String, Value>) -> (Vec<String>, Vec<String>) {
    let Some(Value::Array(items)) = m.get("options") else {
        return (Vec::new(), Vec::new());
    };
    let listed: Vec<String> = match m.get("option_descriptions") {
        Some(Value::Array(d)) => d
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    let mut described = false;
    let (options, descriptions) = items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (label, own) = match v {
                Value::String(s) => (s.clone(), None),
                Value::Object(o) if o.get("label").is_some_and(Value::is_string) => {
                    (text(o, "label"), Some(text(o, "description")))
                }
                other => (other.to_string(), None),
            };
            let description = own.or_else(|| listed.get(i).cloned()).unwrap_or_default();
            described |= !description.is_empty();
            (label, description)
        })
        .unzip();
    (options, if described { descriptions } else { Vec::new() })
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

    /// `1) production<sep>2) staging`, sanitized; an option's description, when it has one,
    /// follows it (`1) staging (the nightly copy)`).
    pub fn numbered_options(&self, sep: &str) -> String {
        use crate::jobs::text::sanitize::plain_text;
        let numbered: Vec<String> = self
            .options
            .iter()
            .enumerate()
            .map(
                |(i, o)| match self.descriptions.get(i).filter(|d| !d.is_empty()) {
                    Some(d) => format!("{}) {} ({})", i + 1, plain_text(o), plain_text(d)),
                    None => format!("{}) {}", i + 1, plain_text(o)),
                },
            )
            .collect();
        numbered.join(sep)
    }
}

impl Gate {
    /// When the agent approves by itself, if it was told to.
    pub fn deadline(&self) -> Option<DateTime<Utc>> {
        deadline(self.awaiting_since, self.auto_approve_after_minutes)
    }

    /// The gate as written; `id` is empty when the file names none (reading the file gives it
    /// its derived one).
    pub fn parse(bytes: &[u8], mtime: Option<DateTime<Utc>>) -> Result<Gate, FormatError> {
        let m = object(bytes)?;
        Ok(Gate {
            id: text(&m, "id"),
            gate: text(&m, "gate"),
            description: text(&m, "description"),
            context: text(&m, "context"),
            awaiting_since: m
                .get("awaiting_since")
                .and_then(Value::as_str)
                .and_then(parse_timestamp)
                .or(mtime),
            auto_approve_after_minutes: minutes(&m, "auto_approve_after_minutes"),
            allow_session: match m.get("allow_session") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Bool(true)) => Some(String::new()),
                _ => None,
            },
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
    match read_question(dir) {
        Ok(None) => {}
        Err(e) => out.problems.push((QUESTION_FILE, e)),
        Ok(Some(q)) => match answered_id(dir) {
            Ok(Some(ref answered)) if *answered == q.id => {}
            Ok(_) => out.question = Some(q),
            Err(e) => {
                out.problems.push((RESPONSE_FILE, e));
                out.question = Some(q);
            }
        },
    }
    match read_gate(dir) {
        Ok(None) => {}
        Err(e) => out.problems.push((GATE_FILE, e)),
        Ok(Some(g)) => match decided(dir) {
            // A decision names its instance; one for another instance is stale.
            Ok(Some((ref id, ref name))) if decides(id, name, &g.id, &g.gate) => {}
            Ok(_) => out.gate = Some(g),
            Err(e) => {
                out.problems.push((DECISION_FILE, e));
                out.gate = Some(g);
            }
        },
    }
    out
}

/// The question `clarification.json` asks, answered or not.
pub fn read_question(dir: &Path) -> Result<Option<Question>, FileError> {
    let Some((bytes, md)) = read_with_metadata(dir, QUESTION_FILE)? else {
        return Ok(None);
    };
    Ok(Some(Question::parse(&bytes, mtime(&md))?))
}

/// The gate `approval.json` stops at, decided or not, with its instance id.
pub fn read_gate(dir: &Path) -> Result<Option<Gate>, FileError> {
    let Some((bytes, md)) = read_with_metadata(dir, GATE_FILE)? else {
        return Ok(None);
    };
    let mut gate = Gate::parse(&bytes, mtime(&md))?;
    if gate.id.is_empty() {
        gate.id = derived_gate_id(&bytes, &md);
    }
    Ok(Some(gate))
}

/// Whether a decision naming instance `decision_id` and gate `decision_gate` decides gate
/// instance `id` named `name`: by the instance, or, in the older form that names no instance,
/// by the gate's name (a decision naming no gate either decides whatever is pending).
pub fn decides(decision_id: &str, decision_gate: &str, id: &str, name: &str) -> bool {
    if decision_id.is_empty() {
        decision_gate.is_empty() || decision_gate == name
    } else {
        decision_id == id
    }
}

/// An id for a gate file that names none: a digest (64-bit FNV-1a) of its bytes and of the file's
/// identity and modification time, so that any rewrite makes a new one.
fn derived_gate_id(bytes: &[u8], md: &Metadata) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let stamp = [
        md.dev(),
        md.ino(),
        md.mtime() as u64,
        md.mtime_nsec() as u64,
    ];
    for b in bytes
        .iter()
        .copied()
        .chain(stamp.iter().flat_map(|n| n.to_le_bytes()))
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("g-{:012x}", h >> 16)
}

fn mtime(md: &Metadata) -> Option<DateTime<Utc>> {
    md.modified().ok().map(DateTime::<Utc>::from)
}

/// A small file's bytes and the metadata of that very file (one open: a file replaced between a
/// read and a `stat` would give a mix of two).
fn read_with_metadata(dir: &Path, name: &str) -> Result<Option<(Vec<u8>, Metadata)>, FileError> {
    let path = dir.join(name);
    let Some(file) = open_nofollow(&path)? else {
        return Ok(None);
    };
    let md = file.metadata()?;
    let mut bytes = Vec::with_capacity(4096);
    file.take(SMALL_FILE_CAP + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > SMALL_FILE_CAP {
        return Err(FileError::Read(std::io::Error::other(format!(
            "is larger than {} KiB, which no job file should be",
            SMALL_FILE_CAP / 1024
        ))));
    }
    Ok(Some((bytes, md)))
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

/// The instance id and gate name an `approved.json` decides (each empty when it names none).
fn decided(dir: &Path) -> Result<Option<(String, String)>, FileError> {
    let Some(bytes) = read_small(&dir.join(DECISION_FILE))? else {
        return Ok(None);
    };
    let m = object(&bytes)?;
    Ok(Some((text(&m, "gate_id"), text(&m, "gate"))))
}

#[cfg(test)]
mod tests;
