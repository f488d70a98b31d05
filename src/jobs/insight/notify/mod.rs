//! Notifications: what about a job is worth telling a person who is not looking (a question or
//! gate arrived, a job failed, stalled or passed its budget), each as one [`Event`] with a key
//! that names it for good, so that the same event is never told twice. Deriving them is a pure
//! function of a job as read from disk, the alarm rules and the time; the [`ledger`] remembers
//! which keys were sent and holds what the rate limit keeps back. Running the command that tells
//! the person is not the domain's business.

pub mod ledger;

use std::collections::BTreeSet;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::fs::tail::{last_lines, parse_exit_line};
use crate::jobs::insight::alarms::{AlarmKind, AlarmRules, job_alarms};
use crate::jobs::model::job::Job;
use crate::jobs::model::status::Status;
use crate::jobs::model::time::format_duration;
use crate::jobs::text::sanitize::{ellipsize, plain_text, sanitize_line};

/// What an event is about. The first seven are what `[notify] events` filters on; `more` sums up
/// what the rate limit held back, `test` is `luzia notify --test`'s sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Question,
    Gate,
    Failed,
    Stalled,
    Budget,
    Limited,
    Resumed,
    More,
    Test,
}

impl Kind {
    /// The kinds a person can ask for in `[notify] events`.
    pub const FILTERABLE: [Kind; 7] = [
        Kind::Question,
        Kind::Gate,
        Kind::Failed,
        Kind::Stalled,
        Kind::Budget,
        Kind::Limited,
        Kind::Resumed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Question => "question",
            Kind::Gate => "gate",
            Kind::Failed => "failed",
            Kind::Stalled => "stalled",
            Kind::Budget => "budget",
            Kind::Limited => "limited",
            Kind::Resumed => "resumed",
            Kind::More => "more",
            Kind::Test => "test",
        }
    }

    /// One of [`Kind::FILTERABLE`] by its name.
    pub fn filterable(name: &str) -> Option<Kind> {
        Kind::FILTERABLE.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One notification, as the command receives it on stdin (one JSON object).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: Kind,
    /// Names this event for good: the same key is never sent twice.
    pub key: String,
    pub job_id: String,
    pub project: String,
    pub task: String,
    /// One line, for a notification's heading.
    pub title: String,
    /// A few lines: what happened and what to do about it.
    pub body: String,
    /// The question's text, for a question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The gate's name and what the agent is about to do, for a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The question's options (empty for free text and for everything else).
    #[serde(default)]
    pub options: Vec<String>,
    /// The question's or gate's id (`q3`, `g2`), to answer exactly that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// When the usage limit resets (RFC 3339, UTC), for `limited` and `resumed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    pub job_dir: String,
    pub host: String,
    /// When it happened (RFC 3339, UTC): asked, ended, stalled, over budget.
    pub at: String,
    /// For `more`: the events it stands for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Brief>,
}

/// An event in a `more` summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    pub kind: Kind,
    pub key: String,
    pub job_id: String,
    pub project: String,
    pub title: String,
}

/// Which events a person wants: by kind, and by project (`None`: every project).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub kinds: BTreeSet<Kind>,
    pub projects: Option<BTreeSet<String>>,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            kinds: Kind::FILTERABLE.into_iter().collect(),
            projects: None,
        }
    }
}

impl Filter {
    pub fn wants(&self, e: &Event) -> bool {
        self.kinds.contains(&e.kind)
            && self
                .projects
                .as_ref()
                .is_none_or(|p| p.contains(&e.project))
    }
}

/// A failure is told only this long after the job ended: a jobs root full of old failures,
/// watched for the first time, is history, not news.
pub const FAILED_HORIZON: chrono::Duration = chrono::Duration::hours(24);

/// Agent text is hostile and a notification's room is small: one plain line, capped.
const TEXT_CAP: usize = 1000;

fn clean(s: &str) -> String {
    ellipsize(&plain_text(s), TEXT_CAP)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The events standing for `job` at `now`, oldest first. `host` names this machine when the
/// job's meta.json names none.
pub fn events_of(job: &Job, rules: &AlarmRules, now: DateTime<Utc>, host: &str) -> Vec<Event> {
    let mut events = Vec::new();
    if matches!(job.status, Status::Waiting | Status::NeedsInput) {
        events.extend(question_event(job, now, host));
        events.extend(gate_event(job, now, host));
    }
    events.extend(failure_event(job, now, host));
    events.extend(limit_events(job, now, host));
    for alarm in job_alarms(job, rules, now) {
        let kind = match alarm.kind {
            AlarmKind::Stalled => Kind::Stalled,
            AlarmKind::OverBudget => Kind::Budget,
            AlarmKind::QuestionWaiting | AlarmKind::NearBudget => continue,
        };
        let mut e = blank(job, kind, alarm.since, host);
        // `since` is derived from the files' times, so it is the same at every look for as
        // long as this stall (this overrun) lasts, and another one for the next.
        e.key = format!("{}:{kind}:{}", job.id, alarm.since.timestamp());
        e.title = format!("{} {kind}: {}", job.id, alarm.detail);
        e.body = format!(
            "{}\n{}\nSee `luzia jobs {}` and `luzia logs {}`.",
            e.task, alarm.detail, job.id, job.id
        );
        events.push(e);
    }
    events.sort_by(|a, b| a.at.cmp(&b.at));
    events
}

fn blank(job: &Job, kind: Kind, at: DateTime<Utc>, host: &str) -> Event {
    let meta_host = job.meta.as_ref().map_or("", |m| m.host.as_str());
    Event {
        kind,
        key: String::new(),
        job_id: job.id.to_string(),
        project: plain_text(job.project()),
        task: clean(job.task()),
        title: String::new(),
        body: String::new(),
        question: None,
        gate: None,
        description: None,
        options: Vec::new(),
        instance_id: None,
        exit_code: job.exit_code,
        resets_at: None,
        job_dir: job.dir().display().to_string(),
        host: if meta_host.is_empty() {
            host.to_owned()
        } else {
            plain_text(meta_host)
        },
        at: rfc3339(at),
        events: Vec::new(),
    }
}

fn question_event(job: &Job, now: DateTime<Utc>, host: &str) -> Option<Event> {
    let q = job.question.as_ref()?;
    let mut e = blank(job, Kind::Question, q.asked_at.unwrap_or(now), host);
    let text = clean(&q.question);
    e.key = format!("{}:question:{}", job.id, q.id);
    e.title = format!("{} asks: {}", job.id, ellipsize(&text, 100));
    e.options = q.options.iter().map(|o| clean(o)).collect();
    let choices = if e.options.is_empty() {
        String::new()
    } else {
        format!("\nOptions: {}", e.options.join(" / "))
    };
    e.body = format!(
        "{text}{choices}\nAnswer: luzia answer {} --question {} ANSWER",
        job.id, q.id
    );
    e.question = Some(text);
    e.instance_id = Some(q.id.clone());
    Some(e)
}

fn gate_event(job: &Job, now: DateTime<Utc>, host: &str) -> Option<Event> {
    let g = job.gate.as_ref()?;
    let mut e = blank(job, Kind::Gate, g.awaiting_since.unwrap_or(now), host);
    let name = clean(&g.gate);
    let what = clean(&g.description);
    e.key = format!("{}:gate:{}", job.id, g.id);
    e.title = format!("{} waits for approval: {name}", job.id);
    e.body = format!(
        "{what}\nApprove: luzia approve {id} --gate {g}\nDeny: luzia deny {id} --gate {g} --reason R",
        id = job.id,
        g = g.id
    );
    e.gate = Some(name);
    e.description = Some(what);
    e.instance_id = Some(g.id.clone());
    Some(e)
}

/// A job that failed (or whose checks failed), died, or was killed by a signal nobody asked for (a stop an operator
/// asked for is no failure), within [`FAILED_HORIZON`] of its end.
fn failure_event(job: &Job, now: DateTime<Utc>, host: &str) -> Option<Event> {
    let what = match (job.status, job.exit_code) {
        (Status::Failed, Some(code)) => format!("failed (exit {code})"),
        (Status::Killed, Some(code)) if job.stop.is_none() => {
            format!("was killed (exit {code}) and nobody asked for it")
        }
        (Status::Died, _) => "died: its agent ended without an exit line".to_owned(),
        (Status::ChecksFailed, _) => match job.checks().and_then(|c| c.first_failure()) {
            Some(f) => format!(
                "failed its checks: {}",
                crate::jobs::model::checks::failure(f)
            ),
            None => "failed its checks".to_owned(),
        },
        _ => return None,
    };
    let ended = job.finished.unwrap_or(now);
    if now - ended > FAILED_HORIZON {
        return None;
    }
    let mut e = blank(job, Kind::Failed, ended, host);
    e.key = format!("{}:failed", job.id);
    e.title = format!("{} {what}", job.id);
    let ran = job
        .elapsed_secs(now)
        .map_or(String::new(), |s| format!(" after {}", format_duration(s)));
    e.body = format!(
        "{}\n{what}{ran}\nSee `luzia logs {}`; `luzia retry {}` starts it again.",
        e.task, job.id, job.id
    );
    Some(e)
}

/// A job the usage limit stopped: `limited` once for the stop (a resume is another job, so
/// another stop is another key), and `resumed` once something continued it. Both within
/// [`FAILED_HORIZON`] of what they tell (the stop, the reset), so a first look at an old root
/// tells no history.
fn limit_events(job: &Job, now: DateTime<Utc>, host: &str) -> Vec<Event> {
    let mut events = Vec::new();
    if job.status != Status::Limited {
        return events;
    }
    let Some(resets) = job.limit_resets_at() else {
        return events;
    };
    let ended = job.finished.unwrap_or(now);
    let when = crate::jobs::model::limit::clock(resets, ended);
    if now - ended <= FAILED_HORIZON {
        let mut e = blank(job, Kind::Limited, ended, host);
        e.key = format!("{}:limited", job.id);
        e.title = format!("{} stopped by the usage limit · resets {when}", job.id);
        let then = if job.continued_by().is_some() {
            "It has been continued already."
        } else {
            "It continues by itself after the reset where its project allows              (`resume_after_limit`); `luzia kill` cancels that."
        };
        e.body = format!(
            "{}
The account's usage limit stopped it; it resets at {}.
{then}",
            e.task,
            rfc3339(resets)
        );
        e.resets_at = Some(rfc3339(resets));
        events.push(e);
    }
    if let Some(by) = job.continued_by()
        && now - resets <= FAILED_HORIZON
    {
        // Told at the first look that sees it: the continuation's start is not on this job.
        let mut e = blank(job, Kind::Resumed, now.max(resets), host);
        e.key = format!("{}:resumed", job.id);
        e.title = format!("{} resumed after the usage limit as {by}", job.id);
        e.body = format!(
            "{}
The usage limit reset at {when}; {by} continues its session.
             See `luzia jobs {by}`.",
            e.task
        );
        e.resets_at = Some(rfc3339(resets));
        events.push(e);
    }
    events
}

/// The last `n` lines of the job's output, as plain text, for a failure's body: read only for
/// the events actually sent.
pub fn last_output(job_dir: &std::path::Path, n: usize) -> Vec<String> {
    let Ok(Some(file)) = open_nofollow(&job_dir.join(LOG_FILE)) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    // A few more than asked: the blank line and the exit line at the end are left out.
    let lines = last_lines(&file, len, n + 2).unwrap_or_default();
    let mut text: Vec<String> = lines
        .iter()
        .map(|l| ellipsize(&sanitize_line(&l.bytes).plain(), 200))
        .filter(|l| !l.trim().is_empty() && parse_exit_line(l.as_bytes()).is_none())
        .collect();
    let drop = text.len().saturating_sub(n);
    text.drain(..drop);
    text
}

/// The events `briefs` stand for, as one `more` event (the rate limit's summary).
pub fn summary(briefs: Vec<Brief>, extra: usize, now: DateTime<Utc>, host: &str) -> Event {
    let total = briefs.len() + extra;
    let mut body: Vec<String> = briefs
        .iter()
        .map(|b| format!("{} · {}", b.kind, b.title))
        .collect();
    if extra > 0 {
        body.push(format!("and {extra} more not listed"));
    }
    Event {
        kind: Kind::More,
        key: format!("more:{}", now.timestamp_millis()),
        job_id: String::new(),
        project: String::new(),
        task: String::new(),
        title: format!("{total} more luzia events (held back by the rate limit)"),
        body: body.join("\n"),
        question: None,
        gate: None,
        description: None,
        options: Vec::new(),
        instance_id: None,
        exit_code: None,
        resets_at: None,
        job_dir: String::new(),
        host: host.to_owned(),
        at: rfc3339(now),
        events: briefs,
    }
}

impl Event {
    pub fn brief(&self) -> Brief {
        Brief {
            kind: self.kind,
            key: self.key.clone(),
            job_id: self.job_id.clone(),
            project: self.project.clone(),
            title: self.title.clone(),
        }
    }

    /// `luzia notify --test`'s sample: a question, as a real one would read.
    pub fn sample(now: DateTime<Utc>, host: &str) -> Event {
        Event {
            kind: Kind::Test,
            key: format!("test:{}", now.timestamp_millis()),
            job_id: "000000-test".into(),
            project: "example".into(),
            task: "A sample event from `luzia notify --test`".into(),
            title: "000000-test asks: Which database: production or staging?".into(),
            body: "Which database: production or staging?\nOptions: production / staging\n\
                   Answer: luzia answer 000000-test --question q1 ANSWER"
                .into(),
            question: Some("Which database: production or staging?".into()),
            gate: None,
            description: None,
            options: vec!["production".into(), "staging".into()],
            instance_id: Some("q1".into()),
            exit_code: None,
            resets_at: None,
            job_dir: String::new(),
            host: host.to_owned(),
            at: rfc3339(now),
            events: Vec::new(),
        }
    }
}

/// This machine's name, for events of jobs whose meta.json names no host.
pub fn this_host() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests;
