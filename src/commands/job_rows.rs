//! The table of `luzia jobs`: one row per job, made from a job read here or from an element of
//! another host's `luzia jobs --json`, so that every host's jobs are laid out by the same code.

use std::io::Write;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};
use serde_json::Value;

use crate::commands::jobs::{progress_text, progress_words, status_color};
use crate::commands::table::{Table, colored, cut, plain};
use crate::jobs::model::time::{format_duration, format_duration_coarse};
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, Status};

/// What a row of the table shows of one job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRow {
    /// Its host, when several are shown.
    pub host: Option<String>,
    pub id: String,
    pub project: String,
    pub status: Status,
    /// Some of its files could not be read (`!` after the status).
    pub troubled: bool,
    /// What a live agent is doing, and since when.
    pub activity: Option<(String, Option<DateTime<Utc>>)>,
    /// `progress_text`.
    pub progress: String,
    pub elapsed_secs: Option<i64>,
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    pub task: String,
}

impl JobRow {
    pub fn of(job: &Job, now: DateTime<Utc>) -> JobRow {
        JobRow {
            host: None,
            id: job.id.to_string(),
            project: job.project().to_owned(),
            status: job.status,
            troubled: !job.problems.is_empty(),
            activity: job
                .activity
                .as_ref()
                .filter(|_| job.status.is_active())
                .map(|a| (a.what.clone(), a.since)),
            progress: progress_text(job),
            elapsed_secs: job.elapsed_secs(now),
            started: job.started,
            finished: job.finished,
            task: job.task().to_owned(),
        }
    }

    /// From one element of `luzia jobs --json` (docs/protocol.md, "Machine-readable CLI
    /// output"); a field it lacks shows as unknown.
    pub fn from_json(host: &str, v: &Value) -> JobRow {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let time = |v: &Value| {
            v.as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        let p = &v["progress"];
        let progress = if p.is_object() {
            progress_words(
                p["step"].as_u64(),
                p["total_steps"].as_u64(),
                p["percent"].as_f64(),
                p["step_name"].as_str(),
            )
        } else {
            "-".into()
        };
        let a = &v["activity"];
        JobRow {
            host: Some(host.to_owned()),
            id: text("id"),
            project: text("project"),
            status: v["status"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(Status::Unknown),
            troubled: v["problems"].as_array().is_some_and(|p| !p.is_empty()),
            activity: a["what"]
                .as_str()
                .map(|w| (w.to_owned(), time(&a["since"]))),
            progress,
            elapsed_secs: v["elapsed_seconds"].as_i64(),
            started: time(&v["started"]),
            finished: time(&v["finished"]),
            task: text("task"),
        }
    }

    /// The progress column: what the agent is doing now (`Bash: npm test 3m`, cut to `cols`
    /// with its time kept), else its progress.
    pub(crate) fn doing_or_progress(&self, now: DateTime<Utc>, cols: usize) -> String {
        let Some((what, since)) = &self.activity else {
            return cut(&self.progress, cols);
        };
        let what = Some(plain_text(what))
            .filter(|w| !w.is_empty())
            .unwrap_or_else(|| "busy".into());
        match since {
            Some(t) => {
                let age = format_duration_coarse((now - *t).num_seconds());
                let room = cols.saturating_sub(age.len() + 1);
                format!("{} {age}", cut(&what, room))
            }
            None => cut(&what, cols),
        }
    }
}

/// Newest first, as `scan` orders one root: by start time, then id; never started last.
pub fn sort_newest_first(rows: &mut [JobRow]) {
    rows.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
}

/// A time in the local zone, `-` when unknown.
pub fn local(t: Option<DateTime<Utc>>) -> String {
    t.map_or("-".into(), |t| {
        t.with_timezone(&Local)
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    })
}

/// The table; a HOST column first when any row has a host.
pub fn write_table(
    rows: &[JobRow],
    timing: bool,
    now: DateTime<Utc>,
    width: Option<usize>,
    colors: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let hosts = rows.iter().any(|r| r.host.is_some());
    let mut header = if hosts { vec!["HOST"] } else { vec![] };
    header.extend(["ID", "PROJECT", "STATUS", "PROGRESS", "ELAPSED"]);
    if timing {
        header.extend(["STARTED", "FINISHED", "DURATION"]);
    }
    header.push("TASK");
    let mut table = Table::with_header(&header, None);
    for j in rows {
        let mut status = j.status.as_str().to_owned();
        if j.troubled {
            status.push('!');
        }
        let mut row = Vec::new();
        if hosts {
            row.push(plain(cut(&plain_text(j.host.as_deref().unwrap_or("")), 16)));
        }
        row.extend([
            plain(plain_text(&j.id)),
            plain(cut(&plain_text(&j.project), 16)),
            if colors {
                colored(status, status_color(j.status))
            } else {
                plain(status)
            },
            plain(j.doing_or_progress(now, 24)),
            plain(j.elapsed_secs.map_or("-".into(), format_duration)),
        ]);
        if timing {
            row.push(plain(local(j.started)));
            row.push(plain(local(j.finished)));
            let duration = match (j.started, j.finished) {
                (Some(s), Some(f)) => format_duration((f - s).num_seconds()),
                _ => "-".into(),
            };
            row.push(plain(duration));
        }
        row.push(plain(plain_text(&j.task)));
        table.push(row);
    }
    // The task takes what is left of the terminal; piped output gets a readable 60.
    let used = table.last_column_start();
    table.cut_last(width.map_or(60, |w| w.saturating_sub(used).max(10)));
    for line in table.lines() {
        writeln!(out, "{}", line.render(colors, None))?;
    }
    if rows.is_empty() {
        writeln!(out, "(no jobs match)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fixtures;
    use crate::commands::jobs::job_json;

    /// A job read here and the same job read from `jobs --json` make the same row: one table
    /// for every host.
    #[test]
    fn a_row_from_json_is_the_row_of_the_job() {
        let now = fixtures::now();
        for job in fixtures::jobs() {
            let json = serde_json::to_value(job_json(&job, now)).unwrap();
            let mut from_json = JobRow::from_json("b", &json);
            assert_eq!(from_json.host.take().as_deref(), Some("b"));
            assert_eq!(from_json, JobRow::of(&job, now), "{}", job.id);
        }
    }
}
