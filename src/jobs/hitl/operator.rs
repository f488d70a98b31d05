//! The operator's side of a question or gate: checking an answer against the question, and
//! publishing it exactly once for the instance it was meant for (by the rule of
//! [`once`](crate::jobs::hitl::once); the files' form is
//! [`published`](crate::jobs::hitl::published)'s). The CLI and the cockpit both answer through
//! here.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::{QUESTION_FILE, RESPONSE_FILE};
use crate::jobs::hitl::history;
use crate::jobs::hitl::once::{PublishError, what_became_of};
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::{Job, Standing, read_job};
use crate::jobs::model::waiting::{Question, QuestionType};
use crate::jobs::os::account::Account;
use crate::jobs::text::sanitize::plain_text;

pub use crate::jobs::hitl::once::{Closed, Outcome, publish_decision, publish_response};
pub use crate::jobs::hitl::published::{
    Decision, Response, Scope, decision_verb, new_token, timestamp,
};

/// Who is answering: `user@hostname`, the user as `$USER` (else `$LOGNAME`) names it, else
/// the name of the process's uid.
pub fn operator() -> String {
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let user = user_name(|name| std::env::var(name).ok(), Account::current_name);
    format!("{user}@{host}")
}

/// The operator's user name: from the environment `var` when it says (an empty value does
/// not), else from the uid's account, else `unknown`.
fn user_name(
    var: impl Fn(&str) -> Option<String>,
    account: impl FnOnce() -> Option<String>,
) -> String {
    ["USER", "LOGNAME"]
        .into_iter()
        .find_map(|name| var(name).filter(|v| !v.is_empty()))
        .or_else(account)
        .unwrap_or_else(|| "unknown".into())
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("job {0} has no pending question (`luzia questions` lists them)")]
    NoQuestion(String),
    #[error("job {0} has no pending approval gate (`luzia questions` lists them)")]
    NoGate(String),
    #[error(
        "job {0}'s agent is not running, so nobody would read the answer: the question is orphaned"
    )]
    Orphaned(String),
    /// The instance aimed at is no longer pending, and nobody's answer to it stands.
    #[error("{what} of job {job} is no longer pending: {closed}")]
    Closed {
        job: String,
        /// `question q3`, `gate 'deploy' (g2)`.
        what: String,
        closed: Closed,
    },
    /// Approving for the session, at a gate that may only be approved once.
    #[error(
        "{what} of job {job} cannot be approved for the session: its agent did not offer it \
         (it asks again for each request); approve it once with `luzia approve {job}`"
    )]
    NoSessionApproval { job: String, what: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    NotAnAnswer(#[from] NotAnAnswer),
    #[error(
        "cannot write the answer in {path}: {source} (check that the directory is writable and the disk not full)"
    )]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// An answer that does not fit its question.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotAnAnswer {
    #[error("'{input}' is not one of the options: {options}")]
    NotAnOption { input: String, options: String },
    #[error("'{0}' is not an answer to a yes/no question: answer yes or no")]
    NotYesOrNo(String),
    #[error("the answer is empty")]
    Empty,
}

/// The answer as it will be published: an option's text for a choice (given as itself or as its
/// 1-based number), `yes`/`no` for a confirm, the text for free text.
pub fn normalize(q: &Question, input: &str) -> Result<String, NotAnAnswer> {
    let trimmed = input.trim();
    match q.kind {
        QuestionType::Choice if q.multi_select => normalize_many(q, trimmed),
        QuestionType::Choice => {
            let list = || q.numbered_options(", ");
            if let Some(o) = q.options.iter().find(|o| o.as_str() == trimmed) {
                return Ok(o.clone());
            }
            if let Some(o) = q.options.iter().find(|o| o.eq_ignore_ascii_case(trimmed)) {
                return Ok(o.clone());
            }
            match trimmed.parse::<usize>() {
                Ok(n) if (1..=q.options.len()).contains(&n) => Ok(q.options[n - 1].clone()),
                _ => Err(NotAnAnswer::NotAnOption {
                    input: plain_text(trimmed),
                    options: list(),
                }),
            }
        }
        QuestionType::Confirm => match trimmed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok("yes".into()),
            "n" | "no" | "false" => Ok("no".into()),
            _ => Err(NotAnAnswer::NotYesOrNo(plain_text(trimmed))),
        },
        QuestionType::Text if trimmed.is_empty() => Err(NotAnAnswer::Empty),
        // Free text keeps its lines and spaces: it goes to the agent word for word.
        QuestionType::Text => Ok(input.to_owned()),
    }
}

/// The options of a multi-select question an answer names, in the order of the options and
/// `, `-joined (as Claude Code gives them to its model). Each is named by its text or its number,
/// `,`-separated (`1,3`, `auth, billing`); an option whose own text holds a comma is named whole.
fn normalize_many(q: &Question, input: &str) -> Result<String, NotAnAnswer> {
    let find = |item: &str| {
        q.options
            .iter()
            .position(|o| o == item)
            .or_else(|| q.options.iter().position(|o| o.eq_ignore_ascii_case(item)))
            .or_else(|| match item.parse::<usize>() {
                Ok(n) if (1..=q.options.len()).contains(&n) => Some(n - 1),
                _ => None,
            })
    };
    let mut chosen = vec![false; q.options.len()];
    let mut rest = input;
    while !rest.is_empty() {
        // The longest option text at the start of what is left, else up to the next comma.
        let whole = q
            .options
            .iter()
            .enumerate()
            .filter(|(_, o)| o.contains(',') && rest.starts_with(o.as_str()))
            .max_by_key(|(_, o)| o.len());
        let (index, used) = match whole {
            Some((i, o)) => (Some(i), o.len()),
            None => {
                let end = rest.find(',').unwrap_or(rest.len());
                (find(rest[..end].trim()), end)
            }
        };
        match index {
            Some(i) => chosen[i] = true,
            None if rest[..used].trim().is_empty() => {}
            None => {
                return Err(NotAnAnswer::NotAnOption {
                    input: plain_text(rest[..used].trim()),
                    options: q.numbered_options(", "),
                });
            }
        }
        rest = rest[used..].trim_start_matches([',', ' ']);
    }
    let picked: Vec<&str> = q
        .options
        .iter()
        .zip(&chosen)
        .filter(|(_, c)| **c)
        .map(|(o, _)| o.as_str())
        .collect();
    if picked.is_empty() {
        return Err(NotAnAnswer::Empty);
    }
    Ok(picked.join(", "))
}

/// What publishing for `what` (an instance of `job`) came to, in the operator's terms.
fn published<T>(job: &Job, what: String, r: Result<Outcome<T>, PublishError>) -> Answered<T> {
    r.map_err(|e| match e {
        PublishError::Io(source) => AnswerError::Io {
            path: job.dir().display().to_string(),
            source,
        },
        PublishError::Closed(closed) => AnswerError::Closed {
            job: job.id.to_string(),
            what,
            closed,
        },
    })
}

type Answered<T> = Result<Outcome<T>, AnswerError>;

fn check_standing(job: &Job) -> Result<(), AnswerError> {
    match job.standing() {
        Standing::Orphaned => Err(AnswerError::Orphaned(job.id.to_string())),
        Standing::Pending | Standing::AnswerThenRetry => Ok(()),
    }
}

/// The source of an answer given in the cockpit, on this machine's jobs or relayed to another
/// host's luzia, so that both histories say "in the cockpit".
pub const IN_COCKPIT: &str = "tui";

/// Who answers, and through what (`tui`, `cli`): what a published answer or decision records.
#[derive(Clone, Copy, Debug)]
pub struct Answerer<'a> {
    pub source: &'a str,
    pub by: &'a str,
}

/// Answers the job's pending question, whichever it is, exactly once.
pub fn answer(
    job: &Job,
    input: &str,
    source: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Answered<Response> {
    answer_question(job, None, input, Answerer { source, by }, now)
}

/// Answers question `target` of the job (without one: the question pending now), exactly once.
/// A question that is no longer pending is not answered: `Already` says who answered it.
pub fn answer_question(
    job: &Job,
    target: Option<&str>,
    input: &str,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Answered<Response> {
    let aimed = job
        .question
        .as_ref()
        .filter(|q| target.is_none_or(|t| t == q.id));
    let q = match (aimed, target) {
        (Some(q), _) => q,
        (None, _) if job.problems.iter().any(|p| p.path.ends_with(QUESTION_FILE)) => {
            // A question file that cannot be read is the thing to say, not "no question".
            let p = job
                .problems
                .iter()
                .find(|p| p.path.ends_with(QUESTION_FILE));
            return Err(AnswerError::Invalid(format!(
                "{}: the agent's question cannot be read, so it cannot be answered",
                p.map(ToString::to_string).unwrap_or_default()
            )));
        }
        (None, Some(t)) => {
            return published(job, format!("question {t}"), what_became_of(&job.dir(), t));
        }
        // Nothing pending: if it was settled a moment ago, say by whom rather than "no question".
        (None, None) => {
            return match settled(&job.dir(), None) {
                Some(r) => Ok(Outcome::Already(r)),
                None => Err(AnswerError::NoQuestion(job.id.to_string())),
            };
        }
    };
    check_standing(job)?;
    let response = Response {
        question_id: q.id.clone(),
        answer: normalize(q, input)?,
        answered_by: who.by.to_owned(),
        answered_at: timestamp(now),
        source: who.source.to_owned(),
        token: new_token(),
    };
    let what = format!("question {}", q.id);
    published(job, what, publish_response(&job.dir(), &response))
}

/// Who settled question `id` (or the latest one, a moment ago): by the history, or by the
/// `response.json` the agent has not archived yet ([`what_became_of`]).
pub fn settled(dir: &Path, id: Option<&str>) -> Option<Response> {
    let id = match id {
        Some(id) => id.to_owned(),
        None => match read_small(&dir.join(RESPONSE_FILE))
            .ok()
            .flatten()
            .and_then(|b| Response::parse(&b))
        {
            Some(r) => r.question_id,
            None => return history::recent_answer(dir).ok().flatten(),
        },
    };
    match what_became_of::<Response>(dir, &id) {
        Ok(Outcome::Already(r) | Outcome::Done(r)) => Some(r),
        Err(_) => None,
    }
}

/// What an operator decides at a gate: approve (once, or for the session where the gate offers
/// it) or deny, with a reason (which a denial needs: the agent receives it word for word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict<'a> {
    pub approved: bool,
    pub scope: Scope,
    pub reason: &'a str,
}

impl<'a> Verdict<'a> {
    pub fn approve(scope: Scope, reason: &'a str) -> Verdict<'a> {
        Verdict {
            approved: true,
            scope,
            reason,
        }
    }

    pub fn deny(reason: &'a str) -> Verdict<'a> {
        Verdict {
            approved: false,
            scope: Scope::Once,
            reason,
        }
    }
}

/// Approves (once) or denies the job's pending gate, whichever it is, exactly once.
pub fn decide(
    job: &Job,
    approved: bool,
    reason: &str,
    source: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Answered<Decision> {
    let verdict = Verdict {
        approved,
        scope: Scope::Once,
        reason,
    };
    decide_gate(job, None, verdict, Answerer { source, by }, now)
}

/// Decides gate instance `target` of the job (without one: the gate pending now), exactly
/// once. A denial needs a reason: the agent receives it word for word. Approving for the
/// session is refused at a gate that does not offer it.
pub fn decide_gate(
    job: &Job,
    target: Option<&str>,
    verdict: Verdict<'_>,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Answered<Decision> {
    let aimed = job
        .gate
        .as_ref()
        .filter(|g| target.is_none_or(|t| t == g.id));
    let g = match (aimed, target) {
        (Some(g), _) => g,
        (None, Some(t)) => {
            return published(job, format!("gate {t}"), what_became_of(&job.dir(), t));
        }
        (None, None) => return Err(AnswerError::NoGate(job.id.to_string())),
    };
    check_standing(job)?;
    let what = format!("gate '{}' ({})", plain_text(&g.gate), g.id);
    let Verdict {
        approved,
        scope,
        reason,
    } = verdict;
    if !approved && reason.trim().is_empty() {
        return Err(AnswerError::Invalid(
            "a denial needs a reason (--reason): the agent is told it word for word".into(),
        ));
    }
    if scope == Scope::Session && (!approved || g.allow_session.is_none()) {
        return Err(AnswerError::NoSessionApproval {
            job: job.id.to_string(),
            what,
        });
    }
    let d = Decision {
        gate: g.gate.clone(),
        gate_id: g.id.clone(),
        approved,
        reason: reason.to_owned(),
        decided_by: who.by.to_owned(),
        decided_at: timestamp(now),
        source: who.source.to_owned(),
        token: new_token(),
        scope,
    };
    published(job, what, publish_decision(&job.dir(), &d))
}

/// Why what the operator was shown cannot be answered: it is no longer pending (the job is gone,
/// or its question or gate was answered, withdrawn or replaced meanwhile: `fate` says how, when
/// it is known), or answering failed.
#[derive(Debug, thiserror::Error)]
pub enum NotPending {
    #[error("job {0} is gone")]
    Gone(String),
    #[error("job {job}'s question {question} is no longer pending{}", colon(.fate))]
    Question {
        job: String,
        question: String,
        fate: Option<String>,
    },
    #[error("job {job}'s gate {gate} is no longer pending{}", colon(.fate))]
    Gate {
        job: String,
        gate: String,
        fate: Option<String>,
    },
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

fn colon(fate: &Option<String>) -> String {
    fate.as_deref()
        .map(|f| format!(": {f}"))
        .unwrap_or_default()
}

/// What became of an instance that is no longer pending, in a few words (`None` when nothing
/// is on record).
fn fate_words<T>(
    r: Result<Outcome<T>, PublishError>,
    words: impl Fn(&T) -> String,
) -> Option<String> {
    match r {
        Ok(Outcome::Already(t) | Outcome::Done(t)) => Some(words(&t)),
        Err(PublishError::Closed(c @ (Closed::Unanswered | Closed::Withdrawn))) => {
            Some(c.to_string())
        }
        Err(_) => None,
    }
}

/// Answers question `question_id` of job `id` under `root`, if it is still the one pending.
/// The job is read afresh: an answer typed against a question that has since been settled or
/// replaced by another must not be given to the other one.
pub fn answer_if_pending(
    root: &Path,
    id: &JobId,
    question_id: &str,
    input: &str,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome<Response>, NotPending> {
    let job = read_job(root, id, now).ok_or_else(|| NotPending::Gone(id.to_string()))?;
    if job.question.as_ref().is_none_or(|q| q.id != question_id) {
        let fate = fate_words(what_became_of::<Response>(&job.dir(), question_id), |r| {
            format!("answered by {}: '{}'", r.who(), plain_text(&r.answer))
        });
        return Err(NotPending::Question {
            job: id.to_string(),
            question: question_id.to_owned(),
            fate,
        });
    }
    Ok(answer_question(&job, Some(question_id), input, who, now)?)
}

/// Approves or denies gate instance `gate_id` of job `id` under `root`, if it is still the one
/// pending (the job read afresh, as for [`answer_if_pending`]).
pub fn decide_if_pending(
    root: &Path,
    id: &JobId,
    gate_id: &str,
    verdict: Verdict<'_>,
    who: Answerer<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome<Decision>, NotPending> {
    let job = read_job(root, id, now).ok_or_else(|| NotPending::Gone(id.to_string()))?;
    if job.gate.as_ref().is_none_or(|g| g.id != gate_id) {
        let fate = fate_words(what_became_of::<Decision>(&job.dir(), gate_id), |d| {
            format!("{} by {}", d.verb(), d.who())
        });
        return Err(NotPending::Gate {
            job: id.to_string(),
            gate: gate_id.to_owned(),
            fate,
        });
    }
    Ok(decide_gate(&job, Some(gate_id), verdict, who, now)?)
}

#[cfg(test)]
#[path = "operator_pending_tests.rs"]
mod pending_tests;

#[cfg(test)]
#[path = "operator_tests.rs"]
mod tests;
