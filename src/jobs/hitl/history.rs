//! Reading `history.jsonl` back, for the questions and gates: the next instance id, and what
//! became of an instance once its files are gone (who answered it, with what).
//!
//! The history is read line by line from its start, whatever its size, so that no record is
//! ever missed: a capped read taken as "nothing asked yet" would give ids again. A line may be
//! long (a question's context, a long answer) up to [`MAX_LINE`]; a longer one is no record
//! luzia wrote and is skipped. A line that is not a JSON object is skipped too. Only the lines
//! that mention what is looked for (a key, an id as JSON writes it) are parsed: the history is
//! mostly progress milestones, and a loser of a race reads it while the others wait.

use std::io::{self, BufRead, BufReader};
use std::path::Path;

use chrono::Utc;
use serde_json::{Map, Value};

use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::names::HISTORY_FILE;
use crate::jobs::hitl::published::{Decision, Response};
use crate::jobs::model::time::parse_timestamp;

/// The longest history line read: far above what a question (its file is capped at 1 MiB) and
/// its answer make.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// What became of a question or gate instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate<T> {
    /// Settled by this answer or decision.
    Settled(T),
    /// Archived with nobody's answer: the question timed out and had no default.
    Unanswered,
    /// Archived with nobody's answer because the agent stopped waiting for it (its session
    /// ended, it was stopped): the record's `withdrawn` says why.
    Withdrawn,
    /// Nothing on record: never asked here, or withdrawn without an answer.
    Unknown,
}

/// Calls `f` with every line of `dir`'s history, in order, without its newline.
pub fn for_each_line(dir: &Path, mut f: impl FnMut(&[u8])) -> io::Result<()> {
    let Some(file) = open_nofollow(&dir.join(HISTORY_FILE))? else {
        return Ok(());
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let (read, whole) = read_line(&mut reader, &mut line)?;
        if read == 0 {
            return Ok(());
        }
        if whole {
            f(line.strip_suffix(b"\n").unwrap_or(&line));
        }
    }
}

/// Reads one line into `line`, keeping at most `MAX_LINE` bytes of it. Returns the bytes
/// consumed and whether the line was kept whole.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    let (mut read, mut whole) = (0, true);
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((read, whole));
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if whole && line.len() + take <= MAX_LINE + 1 {
            line.extend_from_slice(&buf[..take]);
        } else {
            whole = false;
            line.clear();
        }
        r.consume(take);
        read += take;
        if done {
            return Ok((read, whole));
        }
    }
}

/// A history line as a JSON object, if it is one and mentions `needle` (as bytes: no record
/// that lacks them can be what is looked for).
fn record(line: &[u8], needle: &[u8]) -> Option<Map<String, Value>> {
    memchr::memmem::find(line, needle)?;
    match serde_json::from_slice(line).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The next question id: `q` and one more than both the questions archived and the highest
/// `qN` among them (so an id is never given twice, even if a record was lost or edited).
pub fn next_question_id(dir: &Path) -> io::Result<String> {
    next_id(dir, "clarification", 'q')
}

/// The next gate id, `g` and a number, by the same rule.
pub fn next_gate_id(dir: &Path) -> io::Result<String> {
    next_id(dir, "approval", 'g')
}

fn next_id(dir: &Path, key: &str, prefix: char) -> io::Result<String> {
    let (mut count, mut highest) = (0u64, 0u64);
    let needle = format!("\"{key}\"");
    for_each_line(dir, |line| {
        let Some(m) = record(line, needle.as_bytes()) else {
            return;
        };
        let Some(request) = m.get(key) else { return };
        count += 1;
        let n = request
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix(prefix))
            .and_then(|n| n.parse::<u64>().ok());
        highest = highest.max(n.unwrap_or(0));
    })?;
    Ok(format!("{prefix}{}", count.max(highest).saturating_add(1)))
}

/// `id` as JSON writes it, quotes included: how it appears in the record of its instance.
fn json_string(id: &str) -> String {
    serde_json::Value::from(id).to_string()
}

/// A JSON object read as `T` (an answer or a decision), leniently.
fn read_as<T: serde::de::DeserializeOwned>(v: &Value) -> Option<T> {
    v.is_object()
        .then(|| serde_json::from_value(v.clone()).ok())
        .flatten()
}

/// What the history says of question `id`: the answer of its last record.
pub fn question_fate(dir: &Path, id: &str) -> io::Result<Fate<Response>> {
    let mut fate = Fate::Unknown;
    // A question without an id (`q1`) is found by its key; any other by its id.
    let needle = match id {
        "q1" => "\"clarification\"".to_owned(),
        id => json_string(id),
    };
    for_each_line(dir, |line| {
        let Some(m) = record(line, needle.as_bytes()) else {
            return;
        };
        let Some(asked) = m.get("clarification").and_then(Value::as_object) else {
            return;
        };
        // A question written without an id is `q1`, as it was read when it was pending.
        let asked_id = asked.get("id").and_then(Value::as_str).unwrap_or("q1");
        if asked_id == id {
            fate = match m.get("response").and_then(read_as::<Response>) {
                Some(r) => Fate::Settled(r),
                None if m.contains_key("withdrawn") => Fate::Withdrawn,
                None => Fate::Unanswered,
            };
        }
    })?;
    Ok(fate)
}

/// What the history says of gate instance `id`: the decision of its last record.
pub fn gate_fate(dir: &Path, id: &str) -> io::Result<Fate<Decision>> {
    let mut fate = Fate::Unknown;
    let needle = json_string(id);
    for_each_line(dir, |line| {
        let Some(m) = record(line, needle.as_bytes()) else {
            return;
        };
        let Some(gate) = m.get("approval").and_then(Value::as_object) else {
            return;
        };
        let decision = m.get("decision").and_then(read_as::<Decision>);
        let named = gate.get("id").and_then(Value::as_str) == Some(id);
        if named || decision.as_ref().is_some_and(|d| d.gate_id == id) {
            fate = match decision {
                Some(d) => Fate::Settled(d),
                None if m.contains_key("withdrawn") => Fate::Withdrawn,
                None => Fate::Unknown,
            };
        }
    })?;
    Ok(fate)
}

/// The last answer archived, if that was less than a minute ago: an operator who finds nothing
/// pending is told who answered a moment ago rather than "no question".
pub fn recent_answer(dir: &Path) -> io::Result<Option<Response>> {
    let mut last = None;
    for_each_line(dir, |line| {
        let Some(m) = record(line, b"\"clarification\"") else {
            return;
        };
        if m.get("clarification").is_none() {
            return;
        }
        let at = m.get("archived_at").and_then(Value::as_str);
        let recent = at
            .and_then(parse_timestamp)
            .is_some_and(|t| Utc::now() - t < chrono::Duration::seconds(60));
        last = m
            .get("response")
            .and_then(read_as::<Response>)
            .filter(|_| recent);
    })?;
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn history(lines: &[String]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(d.path().join(HISTORY_FILE)).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        d
    }

    fn question(id: &str, answer: Option<&str>) -> String {
        let response = answer.map_or(Value::Null, |a| {
            serde_json::json!({"question_id": id, "answer": a, "answered_by": "op@h",
                "source": "cli", "token": format!("t-{id}")})
        });
        serde_json::json!({"clarification": {"id": id, "question": "?"}, "response": response,
            "archived_at": "2026-01-01T00:00:00Z"})
        .to_string()
    }

    #[test]
    fn ids_never_repeat_whatever_the_size_of_the_history() {
        // Over 1 MiB of milestones and one line far over 16 KiB before the questions.
        let mut lines: Vec<String> = (0..30_000)
            .map(|i| format!(r#"{{"progress": {{"percent": {}}}, "at": "t"}}"#, i % 100))
            .collect();
        let context = "x".repeat(200 * 1024);
        lines.push(
            serde_json::json!({"clarification": {"id": "q1", "context": context},
            "response": null})
            .to_string(),
        );
        lines.push(question("q2", Some("yes")));
        lines.push("not json".into());
        lines.push(serde_json::json!({"approval": {"id": "g7", "gate": "deploy"}}).to_string());
        let d = history(&lines);
        assert!(
            std::fs::metadata(d.path().join(HISTORY_FILE))
                .unwrap()
                .len()
                > 1 << 20
        );
        assert_eq!(next_question_id(d.path()).unwrap(), "q3");
        assert_eq!(next_gate_id(d.path()).unwrap(), "g8", "after the highest");
        assert_eq!(question_fate(d.path(), "q1").unwrap(), Fate::Unanswered);
        match question_fate(d.path(), "q2").unwrap() {
            Fate::Settled(r) => assert_eq!((r.answer.as_str(), r.token.as_str()), ("yes", "t-q2")),
            other => panic!("{other:?}"),
        }
        assert_eq!(question_fate(d.path(), "q9").unwrap(), Fate::Unknown);
    }

    #[test]
    fn an_unreadable_history_is_an_error_not_a_fresh_start() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(HISTORY_FILE)).unwrap();
        assert!(next_question_id(d.path()).is_err());
        assert!(question_fate(d.path(), "q1").is_err());
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(next_question_id(empty.path()).unwrap(), "q1");
        assert_eq!(next_gate_id(empty.path()).unwrap(), "g1");
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_and_the_rest_read() {
        let mut r = io::Cursor::new(
            [
                vec![b'a'; MAX_LINE + 5],
                b"\nnext\n".to_vec(),
                b"last".to_vec(),
            ]
            .concat(),
        );
        let mut line = Vec::new();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), (MAX_LINE + 6, false));
        line.clear();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), (5, true));
        assert_eq!(line, b"next\n");
        line.clear();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), (4, true));
        assert_eq!(line, b"last", "a last line without its newline");
    }

    #[test]
    fn a_gate_is_found_by_its_id_or_its_decision() {
        let decision = |gate_id: &str, by: &str| {
            serde_json::json!({"gate": "deploy", "gate_id": gate_id, "approved": true,
                "decided_by": by, "source": "cli", "token": by})
        };
        let d = history(&[
            serde_json::json!({"approval": {"id": "g1", "gate": "deploy"},
                "decision": decision("g1", "first")})
            .to_string(),
            serde_json::json!({"approval": {"gate": "deploy"}, "decision": decision("g-ab", "hand")})
                .to_string(),
            serde_json::json!({"stale": decision("g2", "late"), "file": "approved.json"}).to_string(),
        ]);
        let by = |id: &str| match gate_fate(d.path(), id).unwrap() {
            Fate::Settled(d) => d.decided_by,
            other => format!("{other:?}"),
        };
        assert_eq!(by("g1"), "first");
        assert_eq!(by("g-ab"), "hand");
        assert_eq!(by("g2"), "Unknown", "a stale file decided nothing");
    }
}
