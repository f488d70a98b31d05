//! The list of `luzia questions`: one row per pending question or gate, made from a job read
//! here or from an element of another host's `luzia questions --json`, laid out by one code.

use std::io::Write;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::commands::table::{Column, Span, Table, plain};
use crate::jobs::model::job::Standing;
use crate::jobs::model::time::format_duration;
use crate::jobs::text::sanitize::plain_text;

/// How long the agent still waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// It waits for ever.
    Unbounded,
    Secs(i64),
    TimedOut,
}

/// What a row shows of one question or gate.
#[derive(Clone, Debug, PartialEq)]
pub struct QuestionRow {
    /// Its host, when several are shown.
    pub host: Option<String>,
    pub job_id: String,
    pub project: String,
    /// `question` or `approval`.
    pub kind: String,
    /// The instance id an answer names (`--question` / `--gate`).
    pub instance: String,
    pub standing: Standing,
    pub waiting_secs: Option<i64>,
    pub left: Left,
    pub text: String,
    pub note: Option<String>,
}

/// The sections of `luzia questions`, in the order they are printed.
pub const SECTIONS: [(Standing, &str); 3] = [
    (Standing::Pending, "Waiting for you"),
    (
        Standing::AnswerThenRetry,
        "Stopped for an answer (answer, then retry)",
    ),
    (
        Standing::Orphaned,
        "Orphaned (the agent is gone; nobody will read an answer)",
    ),
];

impl QuestionRow {
    /// Left to wait, from the deadline.
    pub fn left_of(deadline: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Left {
        match deadline {
            Some(d) if d > now => Left::Secs((d - now).num_seconds()),
            Some(_) => Left::TimedOut,
            None => Left::Unbounded,
        }
    }

    /// From one element of `luzia questions --json`.
    pub fn from_json(host: &str, v: &Value) -> QuestionRow {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let kind = text("kind");
        let content = &v[kind.as_str()];
        let shown = if kind == "question" {
            plain_text(content["question"].as_str().unwrap_or_default())
        } else {
            plain_text(&format!(
                "{}: {}",
                content["gate"].as_str().unwrap_or_default(),
                content["description"].as_str().unwrap_or_default()
            ))
        };
        let standing = match v["standing"].as_str() {
            Some("answer_then_retry") => Standing::AnswerThenRetry,
            Some("orphaned") => Standing::Orphaned,
            _ => Standing::Pending,
        };
        QuestionRow {
            host: Some(host.to_owned()),
            job_id: text("job_id"),
            project: text("project"),
            instance: content["id"].as_str().unwrap_or_default().to_owned(),
            kind,
            standing,
            waiting_secs: v["waiting_seconds"].as_i64(),
            left: match v["seconds_left"].as_i64() {
                None => Left::Unbounded,
                Some(s) if s > 0 => Left::Secs(s),
                Some(_) => Left::TimedOut,
            },
            text: shown,
            note: content["note"].as_str().map(plain_text),
        }
    }

    fn cells(&self, hosts: bool) -> Vec<Span> {
        let age = self.waiting_secs.map_or("-".into(), format_duration);
        let left = match self.left {
            Left::Secs(s) => format!("  [{} left]", format_duration(s)),
            Left::TimedOut => "  [timed out]".into(),
            Left::Unbounded => String::new(),
        };
        let mut row = Vec::new();
        if hosts {
            row.push(plain(plain_text(self.host.as_deref().unwrap_or(""))));
        }
        row.extend([
            plain(plain_text(&self.job_id)),
            plain(plain_text(&self.project)),
            plain(plain_text(&self.kind)),
            plain(plain_text(&self.instance)),
            plain(age),
            plain(format!("{}{left}", self.text)),
        ]);
        row
    }
}

/// Longest waiting first, as one root's list is ordered.
pub fn sort_oldest_first(rows: &mut [QuestionRow]) {
    rows.sort_by_key(|r| (r.waiting_secs.is_some(), std::cmp::Reverse(r.waiting_secs)));
}

/// The rows by section, in one table so that the columns line up from one section to the
/// next; a HOST column first when any row has a host. Returns whether there was any.
pub fn write_sections(rows: &[QuestionRow], out: &mut dyn Write) -> Result<bool> {
    let hosts = rows.iter().any(|r| r.host.is_some());
    let shown: Vec<&QuestionRow> = SECTIONS
        .iter()
        .flat_map(|(standing, _)| rows.iter().filter(|r| r.standing == *standing))
        .collect();
    let mut columns = if hosts {
        vec![Column::left().min(4).gap(1)]
    } else {
        vec![]
    };
    columns.extend([
        Column::left().min(13).gap(1),
        Column::left().min(10).gap(1),
        Column::left().min(8).gap(1),
        Column::left().min(3).gap(1),
        Column::right().min(7),
        Column::left(),
    ]);
    let mut table = Table::new(columns).indent("  ");
    for r in &shown {
        table.push(r.cells(hosts));
    }
    // A note goes under the text: past the host and id columns.
    let before_note: usize = table
        .widths()
        .iter()
        .take(if hosts { 2 } else { 1 })
        .sum::<usize>()
        + if hosts { 1 } else { 0 };
    let mut lines = table.lines().into_iter();
    for (standing, title) in SECTIONS {
        let these: Vec<&&QuestionRow> = shown.iter().filter(|r| r.standing == standing).collect();
        if these.is_empty() {
            continue;
        }
        writeln!(out, "{title}:")?;
        for (r, line) in these.into_iter().zip(lines.by_ref()) {
            writeln!(out, "{}", line.render(false, None))?;
            if let Some(note) = r.note.as_ref().filter(|_| r.kind == "question") {
                writeln!(out, "  {:<before_note$} note: {note}", "")?;
            }
        }
    }
    Ok(!shown.is_empty())
}
