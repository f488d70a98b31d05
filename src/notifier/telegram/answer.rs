//! An answer or a decision from Telegram, given to the one instance its message was posted for,
//! through the same exactly-once path as the cockpit's and the CLI's: on this machine the
//! domain's `answer_if_pending`/`decide_if_pending`; on another host (`[hosts.NAME]`) that host's
//! own luzia over ssh, which refuses, saying who answered, once the instance is no longer
//! pending. Either way it is recorded as `telegram:@user (id)`. And what became of an instance
//! that closed without the bridge: who answered it, and where.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::Utc;

use super::format::{UNANSWERED, User, WITHDRAWN, answered, decided};
use super::state::{Posted, What};
use crate::config::HostConfig;
use crate::fleet::RemoteError;
use crate::fleet::args::{self, Relayed};
use crate::jobs::hitl::once::{Closed, PublishError, what_became_of};
use crate::jobs::hitl::operator::{
    AnswerError, Answerer, Decision, NotPending, Outcome, Response, Verdict, answer_if_pending,
    decide_if_pending, decision_verb,
};
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, JobId, Status};

/// The source every answer from Telegram is recorded with.
pub const SOURCE: &str = "telegram";

/// A post's job key: the job's own id, and its host (`None`: this machine).
pub fn job_key(key: &str) -> Option<(JobId, Option<&str>)> {
    match key.split_once('@') {
        Some((id, host)) => Some((JobId::parse(id).ok()?, Some(host))),
        None => Some((JobId::parse(key).ok()?, None)),
    }
}

/// What came of an answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// It stands, given now (or by this same person before a restart): in the message's words.
    Done(String),
    /// Settled before, by someone else or by the agent: how.
    Already(String),
    /// No answer to it (not an option, an empty reason): told to the person; it stays open.
    Refused(String),
    /// It could not be tried (a host out of reach, a disk error): told; it stays open.
    Failed(String),
}

/// What is given: an answer, or a verdict (approve once or for the session, deny with a
/// reason), decided by the domain's `decide_gate` here and by `luzia approve|deny` there, as
/// the cockpit's and the CLI's are.
#[derive(Clone, Copy, Debug)]
pub enum Act<'a> {
    Answer(&'a str),
    Decide(Verdict<'a>),
}

/// Where answers go: this machine's jobs root, and the other hosts.
pub struct Target {
    pub root: PathBuf,
    pub hosts: BTreeMap<String, HostConfig>,
}

impl Target {
    pub fn apply(&self, posted: &Posted, act: Act<'_>, user: &User) -> Applied {
        let Some((id, host)) = job_key(&posted.job) else {
            return Applied::Failed(format!("'{}' names no job", plain_text(&posted.job)));
        };
        match host {
            None => self.apply_here(&id, posted, act, user),
            Some(host) => match self.hosts.get(host) {
                Some(config) => apply_there(host, config, &id, posted, act, user),
                None => Applied::Failed(format!(
                    "host {host} is no longer in the config ([hosts.{host}])"
                )),
            },
        }
    }

    fn apply_here(&self, id: &JobId, posted: &Posted, act: Act<'_>, user: &User) -> Applied {
        let by = user.recorded();
        let who = Answerer {
            source: SOURCE,
            by: &by,
        };
        let now = Utc::now();
        let ours = |source: &str, author: &str| source == SOURCE && author == by;
        match act {
            Act::Answer(text) => {
                match answer_if_pending(&self.root, id, &posted.instance, text, who, now) {
                    Ok(Outcome::Done(r)) => Applied::Done(answered(&r)),
                    Ok(Outcome::Already(r)) if ours(&r.source, &r.answered_by) => {
                        Applied::Done(answered(&r))
                    }
                    Ok(Outcome::Already(r)) => Applied::Already(answered(&r)),
                    Err(e) => self.not_pending(e, posted),
                }
            }
            Act::Decide(verdict) => {
                let id_ = &posted.instance;
                match decide_if_pending(&self.root, id, id_, verdict, who, now) {
                    Ok(Outcome::Done(d)) => Applied::Done(decided(&d)),
                    Ok(Outcome::Already(d)) if ours(&d.source, &d.decided_by) => {
                        Applied::Done(decided(&d))
                    }
                    Ok(Outcome::Already(d)) => Applied::Already(decided(&d)),
                    Err(e) => self.not_pending(e, posted),
                }
            }
        }
    }

    fn not_pending(&self, e: NotPending, posted: &Posted) -> Applied {
        match e {
            NotPending::Answer(AnswerError::NotAnAnswer(why)) => Applied::Refused(why.to_string()),
            NotPending::Answer(AnswerError::Invalid(why)) => Applied::Refused(why),
            NotPending::Answer(e @ AnswerError::NoSessionApproval { .. }) => {
                Applied::Refused(e.to_string())
            }
            NotPending::Answer(e @ AnswerError::Io { .. }) => Applied::Failed(e.to_string()),
            NotPending::Gone(_) => Applied::Already("the job is gone".into()),
            _ => Applied::Already(self.fate(posted, None)),
        }
    }

    /// What became of `posted`'s instance, on this machine: `job` as just read, if it was.
    pub fn fate(&self, posted: &Posted, job: Option<&Job>) -> String {
        let Some((id, None)) = job_key(&posted.job) else {
            return "no longer pending".into();
        };
        let dir = job.map_or_else(|| self.root.join(id.as_str()), Job::dir);
        let stopped =
            job.is_some_and(|j| !matches!(j.status, Status::Waiting | Status::NeedsInput));
        let words = match posted.what {
            What::Question => {
                fate_words(what_became_of::<Response>(&dir, &posted.instance), answered)
            }
            What::Gate => fate_words(what_became_of::<Decision>(&dir, &posted.instance), decided),
        };
        match words {
            Some(w) => w,
            None if stopped => "the agent stopped before anyone answered".into(),
            None if job.is_none() && !dir.exists() => "the job is gone".into(),
            None => "no longer pending".into(),
        }
    }
}

fn fate_words<T>(
    r: Result<Outcome<T>, PublishError>,
    words: impl Fn(&T) -> String,
) -> Option<String> {
    match r {
        Ok(Outcome::Already(t) | Outcome::Done(t)) => Some(words(&t)),
        Err(PublishError::Closed(Closed::Withdrawn)) => Some(WITHDRAWN.into()),
        Err(PublishError::Closed(Closed::Unanswered)) => Some(UNANSWERED.into()),
        Err(_) => None,
    }
}

/// The answer given on `host` by its own luzia.
fn apply_there(
    host: &str,
    config: &HostConfig,
    id: &JobId,
    posted: &Posted,
    act: Act<'_>,
    user: &User,
) -> Applied {
    let by = user.recorded();
    let relay = Relayed {
        source: SOURCE,
        by: &by,
    };
    let build = |relay: Option<Relayed<'_>>| match act {
        Act::Answer(text) => args::answer(id, &posted.instance, text, relay),
        Act::Decide(verdict) => args::decide(id, &posted.instance, verdict, relay),
    };
    // A luzia there older than the relay flags still takes the answer, as its ssh user's.
    let refused = |r: &Result<_, RemoteError>| {
        matches!(r, Err(RemoteError::Failed { code, stderr, .. })
            if args::relay_refused(Some(*code), stderr.as_bytes()))
    };
    let run = |argv: &[String]| crate::fleet::run(host, config, argv);
    match args::relayed(relay, build, run, refused) {
        Ok(out) => {
            // `answered ID: TEXT`, `denied ID at gate 'NAME'`.
            let said = String::from_utf8_lossy(&out.stdout);
            let said = plain_text(said.lines().next().unwrap_or("").trim());
            let name = user.name();
            Applied::Done(match act {
                Act::Answer(text) => {
                    let answer = said.split_once(": ").map_or(text, |(_, a)| a);
                    format!("answered by {name} from Telegram: '{answer}' (on {host})")
                }
                Act::Decide(Verdict {
                    approved,
                    scope,
                    reason,
                }) => {
                    let verb = decision_verb(approved, scope);
                    let reason = match reason.trim() {
                        "" => String::new(),
                        r => format!(": '{}'", plain_text(r)),
                    };
                    format!("{verb} by {name} from Telegram{reason} (on {host})")
                }
            })
        }
        Err(RemoteError::Failed { stderr, .. }) => remote_refusal(host, &stderr, &by),
        Err(e) => Applied::Failed(e.to_string()),
    }
}

/// What another host's luzia said when it did not answer: settled already (by whom), or not an
/// answer to the question.
fn remote_refusal(host: &str, stderr: &str, by: &str) -> Applied {
    let said = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let said = said.strip_prefix("luzia: ").unwrap_or(said);
    let said = plain_text(said.strip_prefix("error: ").unwrap_or(said));
    if said.contains(&format!("by {by}")) {
        // Given by this same person before a restart: it stands.
        return Applied::Done(format!("{said} (on {host})"));
    }
    if said.contains("already") || said.contains("no longer pending") {
        Applied::Already(format!("{said} (on {host})"))
    } else if said.contains("not one of the options")
        || said.contains("not an answer")
        || said.contains("is empty")
        || said.contains("needs a reason")
        || said.contains("cannot be approved for the session")
    {
        Applied::Refused(said)
    } else {
        Applied::Failed(format!("on {host}: {said}"))
    }
}
