//! What happened to a job, in order, derived from what is on disk (no daemon records anything):
//! meta.json's start and end, a requested stop, progress milestones and answered questions and decided gates from
//! `history.jsonl`, the question pending now, known issues found in the log, and the alarms the
//! rules raise. The global feed merges these for recent jobs with the notifications log.

use crate::jobs::fs::names::HISTORY_FILE;
use std::path::Path;

use chrono::{DateTime, Local, NaiveTime, TimeZone, Utc};
use serde_json::Value;

use crate::jobs::fs::files::read_capped;
use crate::jobs::insight::alarms::{self, AlarmRules};
use crate::jobs::insight::known_issues::{Findings, PatternSet};
use crate::jobs::model::format::ReadError;
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::Job;
use crate::jobs::model::status::Status;
use crate::jobs::model::time::parse_timestamp;
use crate::jobs::run::stream::render::figures::described;
use crate::jobs::text::sanitize::{ellipsize, plain_text};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Started,
    Progress,
    Asked,
    Answered,
    Issue,
    Alarm,
    /// Someone asked for the agent to be stopped (`luzia kill`, the cockpit's kill).
    Stop,
    /// A result of a Claude Code run, with its own figures (a run may give several).
    Result,
    /// The project's setup failed, or its checks ran (each, then the verdict).
    Check,
    Finished,
    /// A line of the notifications log about a job not (or no longer) on disk.
    Notification,
}

impl EventKind {
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Started => "started",
            EventKind::Progress => "progress",
            EventKind::Asked => "asked",
            EventKind::Answered => "answered",
            EventKind::Issue => "issue",
            EventKind::Alarm => "alarm",
            EventKind::Stop => "stop",
            EventKind::Result => "result",
            EventKind::Check => "check",
            EventKind::Finished => "finished",
            EventKind::Notification => "notice",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// `None` when nothing on disk says when (it is then shown first).
    pub at: Option<DateTime<Utc>>,
    pub job: Option<JobId>,
    pub kind: EventKind,
    /// One line of plain text, safe to print.
    pub text: String,
}

/// history.jsonl is appended for every question and milestone; a job's whole history is small,
/// but a hostile one is capped like every file.
const HISTORY_CAP: u64 = 4 * 1024 * 1024;

/// The records of `history.jsonl` (none when it does not exist). Lines that are not JSON
/// objects are skipped: one torn line must not hide the rest.
pub fn read_history(dir: &Path) -> Result<Vec<Value>, ReadError> {
    let path = dir.join(HISTORY_FILE);
    let bytes = read_capped(&path, HISTORY_CAP)
        .map_err(ReadError::at(&path))?
        .unwrap_or_default();
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(Value::is_object)
        .collect())
}

fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .map(|x| match x {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
        .map(|s| plain_text(&s))
        .unwrap_or_default()
}

fn time_of(v: &Value, key: &str) -> Option<DateTime<Utc>> {
    v.get(key).and_then(Value::as_str).and_then(parse_timestamp)
}

/// The events one history.jsonl record stands for.
pub fn history_events(record: &Value, job: Option<&JobId>) -> Vec<TimelineEvent> {
    let archived = time_of(record, "archived_at");
    let event = |at, kind, text| TimelineEvent {
        at,
        job: job.cloned(),
        kind,
        text,
    };
    let mut out = Vec::new();
    if let Some(q) = record.get("clarification") {
        out.push(event(
            time_of(q, "asked_at"),
            EventKind::Asked,
            format!("asked: {}", ellipsize(&text_of(q, "question"), 120)),
        ));
        if let Some(r) = record.get("response").filter(|r| r.is_object()) {
            let by = match text_of(r, "source").as_str() {
                "timeout" => "the timeout's default".to_string(),
                _ => text_of(r, "answered_by"),
            };
            let by = if by.is_empty() { "someone".into() } else { by };
            out.push(event(
                time_of(r, "answered_at").or(archived),
                EventKind::Answered,
                format!(
                    "answered by {by}: {}",
                    ellipsize(&text_of(r, "answer"), 120)
                ),
            ));
        }
    } else if let Some(g) = record.get("approval") {
        let gate = text_of(g, "gate");
        out.push(event(
            time_of(g, "awaiting_since"),
            EventKind::Asked,
            format!(
                "approval asked at gate {gate}: {}",
                ellipsize(&text_of(g, "description"), 100)
            ),
        ));
        // `decision` as luzia archives it; `approved` as the decision file is named.
        if let Some(d) = record
            .get("decision")
            .or_else(|| record.get("approved"))
            .filter(|d| d.is_object())
        {
            let verdict = if d.get("approved").and_then(Value::as_bool) == Some(true) {
                "approved"
            } else {
                "denied"
            };
            let by = match text_of(d, "source").as_str() {
                "timeout" => "automatically".to_string(),
                _ => format!("by {}", text_of(d, "decided_by")),
            };
            let reason = text_of(d, "reason");
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(": {}", ellipsize(&reason, 100))
            };
            out.push(event(
                time_of(d, "decided_at").or(archived),
                EventKind::Answered,
                format!("gate {gate} {verdict} {by}{reason}"),
            ));
        }
    } else if let Some(p) = record.get("progress") {
        let percent = p.get("percent").and_then(Value::as_f64);
        let steps = match (p.get("step"), p.get("total_steps")) {
            (Some(s), Some(t)) if s.is_u64() && t.is_u64() => format!("step {s}/{t}"),
            _ => String::new(),
        };
        let mut text = String::from("progress");
        if let Some(pc) = percent {
            text.push_str(&format!(" {pc:.0}%"));
        }
        if !steps.is_empty() {
            text.push_str(&format!(" {steps}"));
        }
        let name = text_of(p, "step_name");
        if !name.is_empty() {
            text.push_str(&format!(": {}", ellipsize(&name, 100)));
        }
        out.push(event(time_of(record, "at"), EventKind::Progress, text));
    } else if let Some(r) = record.get("limit_resume") {
        // A job the usage limit stopped that could not be continued at the reset (luzia's
        // queue starter writes it, once).
        out.push(event(
            time_of(r, "at"),
            EventKind::Issue,
            format!(
                "not resumed after the usage limit: {}",
                ellipsize(&text_of(r, "why"), 240)
            ),
        ));
    }
    out
}

/// Sorts events by time; events without one come first, in the order given.
pub fn sort(events: &mut [TimelineEvent]) {
    events.sort_by_key(|e| e.at);
}

/// Everything known about `job`, oldest first.
pub fn job_timeline(
    job: &Job,
    history: &[Value],
    issues: Option<(&Findings, &PatternSet)>,
    rules: &AlarmRules,
    now: DateTime<Utc>,
) -> Vec<TimelineEvent> {
    let id = Some(job.id.clone());
    let event = |at, kind, text: String| TimelineEvent {
        at,
        job: id.clone(),
        kind,
        text,
    };
    let mut out = Vec::new();
    if let Some(started) = job.started {
        let retry = job
            .retry_of()
            .map_or(String::new(), |of| format!(" (retry of {of})"));
        out.push(event(
            Some(started),
            EventKind::Started,
            format!(
                "started{retry}: {}",
                ellipsize(&plain_text(job.task()), 100)
            ),
        ));
    }
    for record in history {
        out.extend(history_events(record, Some(&job.id)));
    }
    exchange::events(job, &mut out);
    if let Some(g) = &job.gate {
        out.push(event(
            g.awaiting_since,
            EventKind::Asked,
            format!(
                "approval at gate {} ({})",
                plain_text(&g.gate),
                exchange::standing(job)
            ),
        ));
    }
    if let Some((findings, set)) = issues {
        for f in findings.found.iter() {
            let p = set.pattern(f.pattern);
            let times = if f.count > 1 {
                format!(" (×{})", f.count)
            } else {
                String::new()
            };
            // Seen in a log written last at `seen_at`; without it, the log's own age.
            out.push(event(
                f.seen_at.or(job.log_mtime).or(job.finished),
                EventKind::Issue,
                format!(
                    "{} {}{times}: {}",
                    p.severity,
                    p.name,
                    ellipsize(&f.last_line, 100)
                ),
            ));
        }
    }
    let mut raised = alarms::job_alarms(job, rules, now);
    if job.finished.is_some()
        && let Some(b) = alarms::budget_alarm(job, rules, now)
    {
        raised.push(b);
    }
    for a in raised {
        out.push(event(
            Some(a.since),
            EventKind::Alarm,
            format!("{}: {}", a.kind, a.detail),
        ));
    }
    results(job, &mut out);
    checks(job, &mut out);
    if let Some(stop) = &job.stop {
        out.push(event(
            stop.at(),
            EventKind::Stop,
            format!("stop requested by {}", stop.by()),
        ));
    }
    if let Some(finished) = job.finished {
        let how = match (job.status, job.exit_code) {
            (s, Some(code)) => format!("{} (exit {code})", s.as_str()),
            (Status::Died, None) => "died: its process is gone without an exit line".into(),
            (s, None) => s.as_str().to_string(),
        };
        out.push(event(
            Some(finished),
            EventKind::Finished,
            format!("finished: {how}"),
        ));
    }
    sort(&mut out);
    out
}

/// Each result of the job's run (meta.json `results`), with its own figures: `result:
/// success · 3 turns · ...`, or `result 2 of 2: ...` when the run gave several.
fn results(job: &Job, out: &mut Vec<TimelineEvent>) {
    let Some(meta) = job.meta.as_ref() else {
        return;
    };
    let n = meta.results.len();
    for (i, r) in meta.results.iter().enumerate() {
        let which = if n > 1 {
            format!("result {} of {n}", i + 1)
        } else {
            "result".to_owned()
        };
        // The index is said here, not by the words, which would say it again.
        let words = plain_text(&described(&r.usage, None, 1));
        out.push(TimelineEvent {
            at: r.at.or(job.finished),
            job: Some(job.id.clone()),
            kind: EventKind::Result,
            text: format!("{which}: {}", ellipsize(&words, 200)),
        });
    }
}

/// The setup that failed; each check that ran (its exit code and duration), then the verdict.
fn checks(job: &Job, out: &mut Vec<TimelineEvent>) {
    let Some(meta) = job.meta.as_ref() else {
        return;
    };
    let event = |at, text: String| TimelineEvent {
        at,
        job: Some(job.id.clone()),
        kind: EventKind::Check,
        text,
    };
    if !meta.setup_error.is_empty() {
        out.push(event(
            job.started,
            format!("setup failed: {}", plain_text(&meta.setup_error)),
        ));
    }
    let Some(c) = meta.checks.as_deref() else {
        return;
    };
    let at = c.finished.or(c.started).or(job.finished);
    for r in &c.results {
        let how = match r.exit_code {
            Some(0) => "passed".to_owned(),
            Some(code) => format!("failed (exit {code})"),
            None => "could not start".to_owned(),
        };
        out.push(event(
            at,
            format!(
                "check {}: {how} in {:.1}s",
                ellipsize(&plain_text(&r.command), 80),
                r.seconds
            ),
        ));
    }
    out.push(event(at, format!("checks {}", plain_text(&c.summary()))));
}

/// Lines read from the end of the notifications log.
const NOTIFICATIONS_CAP: usize = 500;

/// The last lines of the notifications log (`[HH:MM:SS] text`), with dates inferred: the last
/// line is on the day the file was last written, and each step back in time past midnight is a
/// day earlier. A missing log is no events.
pub fn read_notifications(path: &Path, n: usize) -> Result<Vec<TimelineEvent>, ReadError> {
    let Some(file) = crate::jobs::fs::files::open_nofollow(path).map_err(ReadError::at(path))?
    else {
        return Ok(Vec::new());
    };
    let md = file.metadata().map_err(ReadError::at(path))?;
    let lines = crate::jobs::fs::tail::last_lines(&file, md.len(), n.min(NOTIFICATIONS_CAP))
        .map_err(ReadError::at(path))?;
    let written: DateTime<Local> = md
        .modified()
        .map(DateTime::<Local>::from)
        .unwrap_or_else(|_| Local::now());
    Ok(dated_notifications(
        lines.iter().map(|l| String::from_utf8_lossy(&l.bytes)),
        written,
    ))
}

fn dated_notifications<'a>(
    lines: impl DoubleEndedIterator<Item = std::borrow::Cow<'a, str>>,
    written: DateTime<Local>,
) -> Vec<TimelineEvent> {
    let mut day = written.date_naive();
    let mut later: Option<NaiveTime> = Some(written.time());
    let mut out = Vec::new();
    for line in lines.rev() {
        let line = plain_text(line.trim());
        if line.is_empty() {
            continue;
        }
        let (time, text) = match line
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(t, rest)| Some((NaiveTime::parse_from_str(t, "%H:%M:%S").ok()?, rest)))
        {
            Some((t, rest)) => (Some(t), rest.trim().to_string()),
            None => (None, line.clone()),
        };
        let at = time.and_then(|t| {
            if later.is_some_and(|l| t > l) {
                day = day.pred_opt()?;
            }
            later = Some(t);
            Local
                .from_local_datetime(&day.and_time(t))
                .earliest()
                .map(|d| d.with_timezone(&Utc))
        });
        let job = text
            .split_whitespace()
            .nth(1)
            .filter(|_| text.starts_with("Agent "))
            .and_then(|w| JobId::parse(w).ok());
        out.push(TimelineEvent {
            at,
            job,
            kind: EventKind::Notification,
            text,
        });
    }
    out.reverse();
    out
}

/// Jobs whose histories the global feed reads: the most recently active.
pub const FEED_JOBS: usize = 200;

/// The jobs of `jobs` the feed looks at: the `FEED_JOBS` most recently started or finished.
pub fn feed_jobs<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Vec<&'a Job> {
    let mut recent: Vec<&Job> = jobs
        .into_iter()
        .filter(|j| j.status != Status::Queued)
        .collect();
    recent.sort_by(|a, b| {
        (b.finished.or(b.started))
            .cmp(&a.finished.or(a.started))
            .then_with(|| a.id.cmp(&b.id))
    });
    recent.truncate(FEED_JOBS);
    recent
}

/// The global feed: the timelines of `jobs` (with their histories) and the notifications about
/// jobs not among them, newest first, at most `n`.
pub fn recent_events(
    timelines: Vec<Vec<TimelineEvent>>,
    notifications: Vec<TimelineEvent>,
    n: usize,
) -> Vec<TimelineEvent> {
    recent_events_where(timelines, notifications, n, |_| true)
}

/// [`recent_events`] of the events `keep` keeps, `n` of them (the others do not take the room
/// of the ones kept: progress milestones would crowd out everything else).
pub fn recent_events_where(
    timelines: Vec<Vec<TimelineEvent>>,
    notifications: Vec<TimelineEvent>,
    n: usize,
    keep: impl Fn(&TimelineEvent) -> bool,
) -> Vec<TimelineEvent> {
    let known: std::collections::HashSet<JobId> = timelines
        .iter()
        .flatten()
        .filter_map(|e| e.job.clone())
        .collect();
    let mut all: Vec<TimelineEvent> = timelines.into_iter().flatten().collect();
    all.extend(
        notifications
            .into_iter()
            .filter(|e| e.job.as_ref().is_none_or(|j| !known.contains(j))),
    );
    all.retain(|e| e.at.is_some() && keep(e));
    // Ties (one second, several jobs) in a stable order: by job, each job's own order kept.
    all.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.job.cmp(&b.job)));
    all.truncate(n);
    all
}

/// The global feed as `luzia status` shows it: the recent jobs' timelines (their histories read
/// from disk, their issues from `issues`) and the notifications log, newest first, at most `n`.
/// With no log (a project filter: its lines name no project) only the jobs speak. Progress
/// milestones only with `progress` (they are most of what is recorded). Files that cannot be
/// read are said in the second list.
#[allow(clippy::too_many_arguments)]
pub fn feed(
    jobs: &[Job],
    issues: &dyn Fn(&Job) -> Option<Findings>,
    set: &PatternSet,
    rules: &AlarmRules,
    notifications_log: Option<&Path>,
    now: DateTime<Utc>,
    n: usize,
    progress: bool,
) -> (Vec<TimelineEvent>, Vec<ReadError>) {
    let mut problems = Vec::new();
    let timelines = feed_jobs(jobs)
        .into_iter()
        .map(|job| {
            let history = read_history(&job.dir()).unwrap_or_else(|e| {
                problems.push(e);
                Vec::new()
            });
            let found = issues(job);
            job_timeline(job, &history, found.as_ref().map(|f| (f, set)), rules, now)
        })
        .collect();
    let notes = notifications_log
        .map(|log| {
            read_notifications(log, n).unwrap_or_else(|e| {
                problems.push(e);
                Vec::new()
            })
        })
        .unwrap_or_default();
    let keep = |e: &TimelineEvent| progress || e.kind != EventKind::Progress;
    (recent_events_where(timelines, notes, n, keep), problems)
}

mod exchange;
#[cfg(test)]
mod tests;
