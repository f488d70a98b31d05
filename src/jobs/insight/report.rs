//! What `luzia status` reports, built from the domain's pieces and nothing else: counts by
//! status, the running and waiting jobs, every alarm, the known issues found in the logs of the
//! jobs worth looking at, and the recent events. Plain data with plain (sanitized) text: the
//! terminal, JSON and Markdown front ends only lay it out.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::jobs::insight::alarms::{self, Alarm, AlarmRules};
pub use crate::jobs::insight::known_issues::IssueCache;
use crate::jobs::insight::known_issues::{Findings, PatternSet, Severity};
use crate::jobs::insight::timeline::{self, TimelineEvent};
use crate::jobs::insight::totals::Totals;
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::Job;
pub use crate::jobs::model::lifecycle::Answer;
use crate::jobs::model::status::Status;
use crate::jobs::model::waiting::Waiting;
use crate::jobs::os::system::{self, SystemAlert, SystemError, SystemLoad};
use crate::jobs::text::sanitize::plain_text;

/// A job with an agent still alive, or one stopped until someone answers it.
pub fn is_live(status: Status) -> bool {
    matches!(
        status,
        Status::Running | Status::Waiting | Status::NeedsInput
    )
}

/// How many jobs are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub running: usize,
    pub waiting: usize,
    pub needs_input: usize,
    pub limited: usize,
    pub queued: usize,
    pub completed: usize,
    pub failed: usize,
    pub checks_failed: usize,
    pub died: usize,
    pub killed: usize,
    pub unknown: usize,
}

impl Counts {
    /// The jobs read from disk, plus `queued` tasks still in the queue.
    pub fn of(jobs: &[Job], queued: usize) -> Counts {
        let mut c = Counts {
            queued,
            ..Counts::default()
        };
        for job in jobs {
            let slot = match job.status {
                Status::Running => &mut c.running,
                Status::Waiting => &mut c.waiting,
                Status::NeedsInput => &mut c.needs_input,
                Status::Limited => &mut c.limited,
                Status::Queued => &mut c.queued,
                Status::Completed => &mut c.completed,
                Status::Failed => &mut c.failed,
                Status::ChecksFailed => &mut c.checks_failed,
                Status::Died => &mut c.died,
                Status::Killed => &mut c.killed,
                Status::Unknown => &mut c.unknown,
            };
            *slot += 1;
        }
        c
    }

    /// `(status, count)` in the order the header shows them; the status as `jobs --json` spells it.
    pub fn by_status(&self) -> [(Status, usize); 11] {
        [
            (Status::Running, self.running),
            (Status::Waiting, self.waiting),
            (Status::NeedsInput, self.needs_input),
            (Status::Limited, self.limited),
            (Status::Queued, self.queued),
            (Status::Completed, self.completed),
            (Status::Failed, self.failed),
            (Status::ChecksFailed, self.checks_failed),
            (Status::Died, self.died),
            (Status::Killed, self.killed),
            (Status::Unknown, self.unknown),
        ]
    }
}

/// Memory and load, or why they could not be read, and the alerts they raise.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemSection {
    pub load: Result<SystemLoad, SystemError>,
    pub alerts: Vec<SystemAlert>,
    /// The `[alarms] memory_percent` the memory alert is raised above.
    pub memory_percent: u8,
}

impl SystemSection {
    pub fn new(load: Result<SystemLoad, SystemError>, memory_percent: u8) -> SystemSection {
        let alerts = load
            .as_ref()
            .map(|l| system::alerts(l, memory_percent))
            .unwrap_or_default();
        SystemSection {
            load,
            alerts,
            memory_percent,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunningRow {
    pub id: JobId,
    pub project: String,
    pub elapsed_secs: Option<i64>,
    /// Percent done as reported, or estimated from `estimated_duration_seconds`.
    pub percent: Option<f64>,
    /// `percent` is an estimate from the expected duration, not the agent's word.
    pub estimated: bool,
    /// `2/5 Running tests`, the step name alone, or empty.
    pub step: String,
    /// The most severe known issue in its log.
    pub issue: Option<(Severity, String)>,
    pub alarm: Option<Alarm>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WaitingRow {
    pub id: JobId,
    pub project: String,
    /// `None` for a job that stopped needing input without writing a question.
    pub kind: Option<Waiting>,
    /// The question, or `gate NAME: description`.
    pub text: String,
    pub options: Vec<String>,
    pub since: Option<DateTime<Utc>>,
    /// The agent has stopped (exit 100): answer, then retry.
    pub stopped: bool,
    /// A stopped job's answer, once given (it then waits only for its retry); plain text.
    pub answer: Option<Answer>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AlarmRow {
    pub id: JobId,
    pub project: String,
    pub alarm: Alarm,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IssueRow {
    pub id: JobId,
    pub project: String,
    pub status: Status,
    pub severity: Severity,
    pub pattern: String,
    pub description: String,
    pub fix: String,
    pub count: u64,
    pub last_line: String,
    pub seen_at: Option<DateTime<Utc>>,
}

impl IssueRow {
    /// An error or worse in a job that is still live: something to act on now.
    pub fn is_alert(&self) -> bool {
        is_live(self.status) && self.severity >= Severity::Error
    }
}

/// Everything `luzia status` shows, every text already plain.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub generated_at: DateTime<Utc>,
    pub jobs_root: String,
    pub project: Option<String>,
    /// Why the dashboard is empty, when the project matches no job.
    pub note: Option<String>,
    /// Only alerts were kept (`--alerts`).
    pub alerts_only: bool,
    pub counts: Counts,
    /// Jobs with files that could not be read (`luzia jobs` marks them `!`).
    pub jobs_with_problems: usize,
    pub system: SystemSection,
    pub running: Vec<RunningRow>,
    /// Oldest first.
    pub waiting: Vec<WaitingRow>,
    /// Worst first, then oldest first.
    pub alarms: Vec<AlarmRow>,
    /// Live jobs first, then the others most recent first; most severe first within a job.
    pub issues: Vec<IssueRow>,
    /// Newest first.
    pub recent: Vec<TimelineEvent>,
    /// Tokens and cost of the jobs whose runs recorded them, per project and per day.
    pub usage: Totals,
}

impl Report {
    /// Job alarms, system alerts, and error or critical issues of live jobs.
    pub fn alert_count(&self) -> usize {
        self.alarms.len()
            + self.system.alerts.len()
            + self.issues.iter().filter(|i| i.is_alert()).count()
    }

    /// The report `--alerts` shows: alarms, system alerts and the issues that are alerts.
    pub fn into_alerts(mut self) -> Report {
        self.alerts_only = true;
        self.running.clear();
        self.waiting.clear();
        self.recent.clear();
        self.usage = Totals::default();
        self.issues.retain(IssueRow::is_alert);
        self
    }
}

/// Only the jobs of `project` (all of them without one).
pub fn filter_project(jobs: Vec<Job>, project: Option<&str>) -> Vec<Job> {
    match project {
        None => jobs,
        Some(p) => jobs.into_iter().filter(|j| j.project() == p).collect(),
    }
}

/// What to say when `project` matches no job: which projects do have jobs (sanitized, sorted).
pub fn project_note(project: &str, all_jobs: &[Job], configured: &[String]) -> String {
    let mut seen: Vec<String> = all_jobs
        .iter()
        .map(|j| j.project())
        .chain(configured.iter().map(String::as_str))
        .filter(|p| !p.is_empty())
        .map(plain_text)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    seen.retain(|p| p != project);
    let known = if seen.is_empty() {
        "no project has any".to_string()
    } else {
        format!("known projects: {}", seen.join(", "))
    };
    format!("no jobs of project '{}' ({known})", plain_text(project))
}

/// The jobs whose logs are scanned for known issues: the live ones, then the recent ones the
/// feed shows ([`timeline::feed_jobs`]), each once.
pub fn jobs_to_scan(jobs: &[Job]) -> Vec<&Job> {
    let mut seen = HashSet::new();
    jobs.iter()
        .filter(|j| is_live(j.status))
        .chain(timeline::feed_jobs(jobs))
        .filter(|j| seen.insert(&j.id))
        .collect()
}

/// What [`build`] reads from.
pub struct Sources<'a> {
    pub jobs_root: &'a Path,
    pub project: Option<&'a str>,
    pub note: Option<String>,
    /// Already filtered to the project.
    pub jobs: &'a [Job],
    pub queued: usize,
    pub cache: &'a IssueCache,
    pub set: &'a PatternSet,
    pub rules: &'a AlarmRules,
    pub system: Result<SystemLoad, SystemError>,
    pub recent: Vec<TimelineEvent>,
    pub now: DateTime<Utc>,
}

pub fn build(src: Sources<'_>) -> Report {
    let now = src.now;
    let mut running = Vec::new();
    let mut waiting = Vec::new();
    let mut alarm_rows = Vec::new();
    for job in src.jobs {
        let raised = alarms::job_alarms(job, src.rules, now);
        match job.status {
            Status::Running => running.push(running_row(job, &src, &raised)),
            // Answered but not yet retried, a stopped job still waits for its retry; once
            // retried, for nothing (its retry is listed in its own right).
            Status::Waiting => waiting.push(waiting_row(job)),
            Status::NeedsInput if job.retried_by.is_empty() => waiting.push(waiting_row(job)),
            _ => {}
        }
        alarm_rows.extend(raised.into_iter().map(|alarm| AlarmRow {
            id: job.id.clone(),
            project: plain_text(job.project()),
            alarm,
        }));
    }
    // Oldest first; a question with no time at all last.
    waiting.sort_by_key(|w| (w.since.is_none(), w.since));
    alarm_rows.sort_by_key(|a| (a.alarm.kind, a.alarm.since));
    Report {
        generated_at: now,
        jobs_root: plain_text(&src.jobs_root.display().to_string()),
        project: src.project.map(plain_text),
        note: src.note,
        alerts_only: false,
        counts: Counts::of(src.jobs, src.queued),
        jobs_with_problems: src.jobs.iter().filter(|j| !j.problems.is_empty()).count(),
        system: SystemSection::new(src.system, src.rules.memory_percent),
        running,
        waiting,
        alarms: alarm_rows,
        issues: issue_rows(src.jobs, src.cache, src.set),
        recent: src.recent,
        usage: Totals::of(src.jobs),
    }
}

fn running_row(job: &Job, src: &Sources<'_>, raised: &[Alarm]) -> RunningRow {
    let elapsed = job.elapsed_secs(src.now);
    let reported = job.progress.as_ref().and_then(|p| p.percent_done());
    let estimate = job
        .meta
        .as_ref()
        .and_then(|m| m.estimated_duration_seconds)
        .filter(|&e| e > 0)
        .zip(elapsed)
        .map(|(est, el)| (el as f64 / est as f64 * 100.0).clamp(0.0, 99.0));
    let step = job.progress.as_ref().map_or(String::new(), |p| {
        let name = p.step_name.as_deref().map(plain_text).unwrap_or_default();
        match (p.step, p.total_steps) {
            (Some(k), Some(n)) => format!("{k}/{n} {name}").trim_end().to_string(),
            _ => name,
        }
    });
    let issue = src
        .cache
        .findings(&job.id)
        .and_then(Findings::worst)
        .map(|f| (f.severity, plain_text(&src.set.pattern(f.pattern).name)));
    RunningRow {
        id: job.id.clone(),
        project: plain_text(job.project()),
        elapsed_secs: elapsed,
        percent: reported.or(estimate),
        estimated: reported.is_none() && estimate.is_some(),
        step,
        issue,
        alarm: alarms::worst(raised).cloned(),
    }
}

fn waiting_row(job: &Job) -> WaitingRow {
    let exchange = job.exchange.as_ref();
    let question = job.question.as_deref().or(exchange.map(|e| &e.question));
    let (kind, text, options, since) = match (question, &job.gate) {
        (Some(q), _) => (
            Some(Waiting::Question),
            plain_text(&q.question),
            q.options.iter().map(|o| plain_text(o)).collect(),
            q.asked_at,
        ),
        (None, Some(g)) => {
            let what = plain_text(&g.description);
            let gate = plain_text(&g.gate);
            let text = if what.is_empty() {
                format!("gate {gate}")
            } else {
                format!("gate {gate}: {what}")
            };
            (Some(Waiting::Approval), text, Vec::new(), g.awaiting_since)
        }
        (None, None) => (
            None,
            "stopped needing input without writing a question: see its log, then retry".to_string(),
            Vec::new(),
            job.finished,
        ),
    };
    let answer = exchange.and_then(|e| e.answer.as_ref()).map(|a| Answer {
        answer: plain_text(&a.answer),
        answered_by: plain_text(&a.answered_by),
        source: plain_text(&a.source),
        ..a.clone()
    });
    WaitingRow {
        id: job.id.clone(),
        project: plain_text(job.project()),
        kind,
        text,
        options,
        since,
        stopped: job.status == Status::NeedsInput,
        answer,
    }
}

fn issue_rows(jobs: &[Job], cache: &IssueCache, set: &PatternSet) -> Vec<IssueRow> {
    let mut rows = Vec::new();
    for job in jobs_to_scan(jobs) {
        let Some(findings) = cache.findings(&job.id) else {
            continue;
        };
        for f in findings.found.iter() {
            let p = set.pattern(f.pattern);
            rows.push(IssueRow {
                id: job.id.clone(),
                project: plain_text(job.project()),
                status: job.status,
                severity: f.severity,
                pattern: plain_text(&p.name),
                description: plain_text(&p.description),
                fix: plain_text(&p.fix),
                count: u64::from(f.count),
                last_line: plain_text(&f.last_line),
                seen_at: f.seen_at,
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests;
