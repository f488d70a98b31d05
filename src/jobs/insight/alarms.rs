//! Alarms: what an operator with twenty agents must not have to notice by reading. Each is a
//! pure function of a job as read from disk, the rules, and the time, so the cockpit, `luzia
//! status` and the timeline all raise the same alarm at the same moment.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::jobs::model::job::Job;
use crate::jobs::model::status::Status;
use crate::jobs::model::time::format_duration;

/// When alarms are raised; from the `[alarms]` table of the config (and `[projects.X] budget`).
#[derive(Clone, Debug, PartialEq)]
pub struct AlarmRules {
    /// A running job that wrote no output and no progress for this long, with nothing in
    /// flight, is stalled.
    pub stall_after: Duration,
    /// A question or gate unanswered for this long is called out.
    pub question_after: Duration,
    /// "Near budget" at this share of the budget (percent); "over budget" at 100.
    pub budget_warn_percent: u8,
    /// A system alert when memory in use is above this (percent).
    pub memory_percent: u8,
    /// Budgets for projects whose jobs carry no `estimated_duration_seconds`.
    pub project_budgets: BTreeMap<String, Duration>,
}

pub const DEFAULT_STALL_AFTER: Duration = Duration::from_secs(10 * 60);
pub const DEFAULT_QUESTION_AFTER: Duration = Duration::from_secs(5 * 60);

impl Default for AlarmRules {
    fn default() -> Self {
        AlarmRules {
            stall_after: DEFAULT_STALL_AFTER,
            question_after: DEFAULT_QUESTION_AFTER,
            budget_warn_percent: 80,
            memory_percent: 80,
            project_budgets: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlarmKind {
    /// Worst first: the order rows and the header show them in.
    Stalled,
    OverBudget,
    QuestionWaiting,
    NearBudget,
}

impl AlarmKind {
    pub fn label(self) -> &'static str {
        match self {
            AlarmKind::Stalled => "stalled",
            AlarmKind::OverBudget => "over budget",
            AlarmKind::QuestionWaiting => "question waiting",
            AlarmKind::NearBudget => "near budget",
        }
    }
}

impl fmt::Display for AlarmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alarm {
    pub kind: AlarmKind,
    /// When the rule was crossed (not when anyone noticed): derived from the files' times.
    pub since: DateTime<Utc>,
    /// What it means for this job, in a few words.
    pub detail: String,
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

fn secs(d: chrono::Duration) -> i64 {
    d.num_seconds().max(0)
}

/// The job's budget: its own estimate, else its project's.
pub fn budget(job: &Job, rules: &AlarmRules) -> Option<Duration> {
    let own = job
        .meta
        .as_ref()
        .and_then(|m| m.estimated_duration_seconds)
        .filter(|&s| s > 0)
        .map(Duration::from_secs);
    own.or_else(|| rules.project_budgets.get(job.project()).copied())
}

/// The last sign of life of a job: its output, its progress, the start of what it is doing
/// now, or its start.
pub fn last_activity(job: &Job) -> Option<DateTime<Utc>> {
    let progress = job.progress.as_ref().and_then(|p| p.updated_at);
    let in_flight = job.activity.as_ref().and_then(|a| a.since);
    [job.log_mtime, progress, in_flight, job.started]
        .into_iter()
        .flatten()
        .max()
}

/// The alarms standing for `job` at `now`, worst first.
pub fn job_alarms(job: &Job, rules: &AlarmRules, now: DateTime<Utc>) -> Vec<Alarm> {
    let mut alarms = Vec::new();
    // A call in flight (activity.json) is not silence, however long it takes: a test suite, a
    // build, a question to a person. Stalled is nothing happening and nothing in flight.
    if job.status == Status::Running
        && job.activity.is_none()
        && let Some(last) = last_activity(job)
    {
        let silent = now - last;
        if silent >= chrono_of(rules.stall_after) {
            alarms.push(Alarm {
                kind: AlarmKind::Stalled,
                since: last + chrono_of(rules.stall_after),
                detail: format!(
                    "no output or progress for {}",
                    format_duration(secs(silent))
                ),
            });
        }
    }
    if matches!(job.status, Status::Running | Status::Waiting) {
        alarms.extend(budget_alarm(job, rules, now));
    }
    // A job that stopped for an answer (exit 100) waits for a person just the same, until it is
    // answered or retried.
    if job.awaits_person() {
        let asked = match (&job.question, &job.gate) {
            (Some(q), _) => q.asked_at,
            (None, Some(g)) => g.awaiting_since,
            _ => None,
        };
        if let Some(asked) = asked {
            let waited = now - asked;
            if waited >= chrono_of(rules.question_after) {
                let what = if job.question.is_some() {
                    "question"
                } else {
                    "approval"
                };
                alarms.push(Alarm {
                    kind: AlarmKind::QuestionWaiting,
                    since: asked + chrono_of(rules.question_after),
                    detail: format!("{what} unanswered for {}", format_duration(secs(waited))),
                });
            }
        }
    }
    alarms.sort_by_key(|a| a.kind);
    alarms
}

/// Over (or near) budget at `now`, or at the job's end for a finished job.
pub fn budget_alarm(job: &Job, rules: &AlarmRules, now: DateTime<Utc>) -> Option<Alarm> {
    let budget = budget(job, rules)?;
    let started = job.started?;
    let elapsed = job.finished.unwrap_or(now) - started;
    let budget_c = chrono_of(budget);
    let warn = chrono_of(budget.mul_f64(f64::from(rules.budget_warn_percent) / 100.0));
    let percent = elapsed.num_milliseconds() as f64 / budget.as_millis().max(1) as f64 * 100.0;
    let (kind, since) = if elapsed >= budget_c {
        (AlarmKind::OverBudget, started + budget_c)
    } else if elapsed >= warn {
        (AlarmKind::NearBudget, started + warn)
    } else {
        return None;
    };
    Some(Alarm {
        kind,
        since,
        detail: format!(
            "{percent:.0}% of its {} budget",
            format_duration(budget.as_secs() as i64)
        ),
    })
}

/// The first instant after `now` at which the alarms of `job` (as read) can come or go by the
/// passing of time alone: a rule's threshold not crossed yet. `None` when no rule can change
/// for it until it is read again. What [`job_alarms`] raises is constant between `now` and that
/// instant, so it needs working out again only then, or when the job is read.
pub fn next_change(job: &Job, rules: &AlarmRules, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let after = |from: Option<DateTime<Utc>>, wait: chrono::Duration| {
        from.and_then(|t| t.checked_add_signed(wait))
            .filter(|&t| t > now)
    };
    let mut thresholds = Vec::with_capacity(4);
    if job.status == Status::Running && job.activity.is_none() {
        thresholds.push(after(last_activity(job), chrono_of(rules.stall_after)));
    }
    // A finished job's elapsed time no longer moves.
    if matches!(job.status, Status::Running | Status::Waiting)
        && job.finished.is_none()
        && let Some(budget) = budget(job, rules)
    {
        let warn = budget.mul_f64(f64::from(rules.budget_warn_percent) / 100.0);
        thresholds.push(after(job.started, chrono_of(warn)));
        thresholds.push(after(job.started, chrono_of(budget)));
    }
    if job.awaits_person() {
        let asked = match (&job.question, &job.gate) {
            (Some(q), _) => q.asked_at,
            (None, Some(g)) => g.awaiting_since,
            _ => None,
        };
        thresholds.push(after(asked, chrono_of(rules.question_after)));
    }
    thresholds.into_iter().flatten().min()
}

/// The worst alarm of a job, for a table cell.
pub fn worst(alarms: &[Alarm]) -> Option<&Alarm> {
    alarms.iter().min_by_key(|a| a.kind)
}

#[cfg(test)]
mod tests;
