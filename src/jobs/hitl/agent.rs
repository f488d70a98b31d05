//! The agent's side of the conversation: asking a question or stopping at a gate, waiting for
//! the operator, taking the default or auto-approval when the time comes (by the same
//! exactly-once rule as an operator, so a late operator is told), and reporting progress. The
//! exchange is archived to `history.jsonl` ([`archive`](crate::jobs::hitl::archive)) so the next
//! question can be asked.

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde::Serialize;

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::names::{
    DECISION_FILE, GATE_FILE, PROGRESS_FILE, QUESTION_FILE, RESPONSE_FILE,
};
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::fs::wait::{DirWatch, Stop};
use crate::jobs::hitl::archive::{self, Approval, Clarification, GateRecord, QuestionRecord};
use crate::jobs::hitl::history::{next_gate_id, next_question_id};
use crate::jobs::hitl::once::PublishError;
use crate::jobs::hitl::operator::{
    Decision, Outcome, Response, Scope, new_token, publish_decision, publish_response, timestamp,
};
use crate::jobs::model::progress::Progress;
use crate::jobs::model::time::format_duration;
use crate::jobs::model::waiting::{QuestionType, read_pending};

#[derive(Clone, Debug)]
pub struct Ask {
    pub question: String,
    pub kind: QuestionType,
    pub options: Vec<String>,
    pub context: String,
    pub timeout: Option<Duration>,
    pub default: Option<String>,
    /// A short title for the question (`Database`); empty for none.
    pub header: String,
    /// What each option means, in the order of `options` (empty: none given).
    pub descriptions: Vec<String>,
    /// Whether several options may be chosen (a choice only).
    pub multi_select: bool,
}

#[derive(Clone, Debug)]
pub struct GateSpec {
    pub gate: String,
    pub description: String,
    pub context: String,
    pub auto_approve_after: Option<Duration>,
    /// Offered to the operator: approving for the session, covering what this says (the
    /// agent's words; empty for nothing more). `None`: approved once only.
    pub allow_session: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum AskResult {
    /// An operator answered.
    Answered(Response),
    /// Nobody answered in time; the default stands (published by us).
    TimedOutDefault(Response),
    /// Nobody answered in time and there is no default.
    TimedOut,
}

#[derive(Debug, PartialEq, Eq)]
pub enum GateResult {
    Decided(Decision),
    /// Approved automatically when the time came (published by us).
    AutoApproved(Decision),
}

/// What `luzia progress` reports (`progress.json`). Every field is optional and an absent one
/// is not written.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProgressReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<u64>,
    /// Stamped when written; a milestone in the history goes without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

impl ProgressReport {
    pub fn is_empty(&self) -> bool {
        *self == ProgressReport::default()
    }

    /// A report as an agent gives it (`luzia progress`, the progress tool of `luzia mcp`),
    /// checked: a percent within 0-100, step K of N with K <= N, and something to report.
    pub fn checked(
        percent: Option<f64>,
        steps: Option<(u64, u64)>,
        step_name: Option<String>,
        eta_seconds: Option<u64>,
    ) -> Result<ProgressReport, AgentError> {
        let mut report = ProgressReport::default();
        if let Some(pct) = percent {
            if !(0.0..=100.0).contains(&pct) {
                return Err(AgentError::Invalid(format!(
                    "percent must be between 0 and 100, not {pct}"
                )));
            }
            report.percent = Some(pct);
        }
        if let Some((k, n)) = steps {
            if n == 0 || k > n {
                return Err(AgentError::Invalid(format!(
                    "step {k} of {n}: the step must be between 1 and the number of steps"
                )));
            }
            report.step = Some(k);
            report.total_steps = Some(n);
        }
        report.step_name = step_name;
        report.eta_seconds = eta_seconds;
        if report.is_empty() {
            return Err(AgentError::Invalid(
                "nothing to report: give a percent, a step of a number of steps, a step name \
                 or an estimate of the time left"
                    .into(),
            ));
        }
        Ok(report)
    }
}

/// A progress milestone in `history.jsonl`.
#[derive(Serialize)]
struct Milestone<'a> {
    progress: &'a ProgressReport,
    at: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0} does not exist: run inside a job (LUZIA_JOB_DIR) or pass --job-dir DIR")]
    NoJobDir(String),
    #[error("a question is already pending in {0}: ask one at a time")]
    QuestionPending(String),
    #[error("an approval gate is already pending in {0}: wait at one gate at a time")]
    GatePending(String),
    #[error("{0} was removed while the agent waited for its answer: nobody answered it")]
    Withdrawn(String),
    /// The wait was stopped (the agent's session ended, it was told to stop): the request was
    /// withdrawn and recorded so in the history.
    #[error("the agent stopped waiting: {0} was withdrawn")]
    Stopped(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot write in {path}: {source} (is the job directory writable, the disk not full?)")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn io(dir: &Path) -> impl FnOnce(std::io::Error) -> AgentError + '_ {
    move |source| AgentError::Io {
        path: dir.display().to_string(),
        source,
    }
}

/// Publishing the agent's own default failed: it could not write, or its request was removed
/// from under it.
fn publish_failed(dir: &Path, request: &str) -> impl FnOnce(PublishError) -> AgentError {
    let path = dir.join(request).display().to_string();
    let dir = dir.display().to_string();
    move |e| match e {
        PublishError::Io(source) => AgentError::Io { path: dir, source },
        PublishError::Closed(_) => AgentError::Withdrawn(path),
    }
}

fn minutes(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64() / 60.0)
}

/// A request file as the agent writes it: pretty, for the person who opens it.
fn pretty(value: &impl Serialize) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec_pretty(value).map_err(std::io::Error::other)
}

fn check_dir(dir: &Path) -> Result<(), AgentError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(AgentError::NoJobDir(dir.display().to_string()))
    }
}

fn check_ask(spec: &Ask) -> Result<(), AgentError> {
    if spec.kind == QuestionType::Choice && spec.options.is_empty() {
        return Err(AgentError::Invalid(
            "a choice needs --option (at least one)".into(),
        ));
    }
    if !spec.descriptions.is_empty() && spec.descriptions.len() != spec.options.len() {
        return Err(AgentError::Invalid(
            "give one description for each option, or none".into(),
        ));
    }
    if spec.multi_select && spec.kind != QuestionType::Choice {
        return Err(AgentError::Invalid(
            "only a choice can take several options".into(),
        ));
    }
    match &spec.default {
        Some(d) if spec.kind == QuestionType::Choice && !spec.options.contains(d) => Err(
            AgentError::Invalid(format!("the default '{d}' is not one of the options")),
        ),
        _ => Ok(()),
    }
}

/// Asks, waits, archives. Returns how it ended.
pub fn ask(dir: &Path, spec: &Ask) -> Result<AskResult, AgentError> {
    ask_or_stop(dir, spec, &Stop::default())
}

/// As [`ask`], giving up when `stop` is stopped: the question is then withdrawn (recorded in
/// the history as such, its file removed) and the result is [`AgentError::Stopped`].
pub fn ask_or_stop(dir: &Path, spec: &Ask, stop: &Stop) -> Result<AskResult, AgentError> {
    check_dir(dir)?;
    check_ask(spec)?;
    if stop.is_stopped() {
        // Stopped before asking: nothing to publish, nothing to withdraw.
        return Err(AgentError::Stopped(format!(
            "the question '{}'",
            spec.question
        )));
    }
    if read_pending(dir).question.is_some() {
        return Err(AgentError::QuestionPending(dir.display().to_string()));
    }
    // An answer left from an earlier, unfinished exchange would make every new answer fail to
    // publish (the name is taken): it is stale by now, so it goes to the history.
    archive::archive_stale(dir, RESPONSE_FILE, &timestamp(Utc::now())).map_err(io(dir))?;
    let clarification = Clarification {
        id: next_question_id(dir).map_err(io(dir))?,
        kind: spec.kind.as_str(),
        question: &spec.question,
        options: &spec.options,
        context: &spec.context,
        asked_at: timestamp(Utc::now()),
        timeout_minutes: minutes(spec.timeout),
        default_if_timeout: spec.default.as_deref(),
        header: &spec.header,
        option_descriptions: &spec.descriptions,
        multi_select: spec.multi_select,
    };
    pretty(&clarification)
        .and_then(|b| write_atomic(dir, QUESTION_FILE, &b))
        .map_err(io(dir))?;
    let Some(result) = wait_for_answer(dir, &clarification.id, spec, stop)? else {
        return Err(withdraw_question(dir, &clarification, stop));
    };
    let response = match &result {
        AskResult::Answered(r) | AskResult::TimedOutDefault(r) => Some(r),
        AskResult::TimedOut => None,
    };
    let record = QuestionRecord {
        clarification: &clarification,
        response,
        archived_at: timestamp(Utc::now()),
        withdrawn: None,
    };
    archive::archive(dir, &record, [QUESTION_FILE, RESPONSE_FILE]).map_err(io(dir))?;
    Ok(result)
}

/// Withdraws a question nobody waits for any more; the error says so (or why it could not be).
fn withdraw_question(dir: &Path, clarification: &Clarification<'_>, stop: &Stop) -> AgentError {
    let why = stop.reason();
    let answered = |r: &Response| r.question_id == clarification.id;
    let response = archive::answer_in_place(dir, RESPONSE_FILE, Response::parse, answered);
    let record = QuestionRecord {
        clarification,
        response: response.as_ref(),
        archived_at: timestamp(Utc::now()),
        withdrawn: Some(why.as_deref().unwrap_or(WITHDRAWN)),
    };
    let withdrawn = archive::withdraw(dir, &record, QUESTION_FILE, RESPONSE_FILE, |b| {
        Response::parse(b).is_some_and(|r| answered(&r))
    });
    match withdrawn {
        Ok(()) => AgentError::Stopped(format!(
            "question {} in {}",
            clarification.id,
            dir.display()
        )),
        Err(e) => io(dir)(e),
    }
}

/// The operator's answer to question `id`, or the default once the time is up (published by
/// the same exactly-once rule: an operator who got there first wins). An answer to question `id`
/// is only ever in place while it stands: a late one is taken back by its publisher. `None`
/// when `stop` was stopped first.
fn wait_for_answer(
    dir: &Path,
    id: &str,
    spec: &Ask,
    stop: &Stop,
) -> Result<Option<AskResult>, AgentError> {
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let read_answer = || {
        let bytes = read_small(&dir.join(RESPONSE_FILE)).ok()??;
        Response::parse(&bytes).filter(|r| r.question_id == id)
    };
    if let Some(r) = DirWatch::new(dir).until_stopped(deadline, stop, read_answer) {
        return Ok(Some(AskResult::Answered(r)));
    }
    if stop.is_stopped() {
        return Ok(None);
    }
    let Some(default) = &spec.default else {
        return Ok(Some(AskResult::TimedOut));
    };
    let ours = Response {
        question_id: id.to_owned(),
        answer: default.clone(),
        answered_by: "timeout".into(),
        answered_at: timestamp(Utc::now()),
        source: "timeout".into(),
        token: new_token(),
    };
    Ok(Some(
        match publish_response(dir, &ours).map_err(publish_failed(dir, QUESTION_FILE))? {
            Outcome::Done(r) => AskResult::TimedOutDefault(r),
            // An operator got there first: theirs stands.
            Outcome::Already(r) => AskResult::Answered(r),
        },
    ))
}

/// Why a request was withdrawn, as its record in the history says.
const WITHDRAWN: &str = "the agent stopped waiting for it";

/// Stops at a gate, waits for the decision (or auto-approves when asked to), archives.
pub fn gate(dir: &Path, spec: &GateSpec) -> Result<GateResult, AgentError> {
    gate_or_stop(dir, spec, &Stop::default())
}

/// As [`gate`], giving up when `stop` is stopped: the gate is then withdrawn (recorded in the
/// history as such, its file removed) and the result is [`AgentError::Stopped`].
pub fn gate_or_stop(dir: &Path, spec: &GateSpec, stop: &Stop) -> Result<GateResult, AgentError> {
    check_dir(dir)?;
    if stop.is_stopped() {
        return Err(AgentError::Stopped(format!("the gate '{}'", spec.gate)));
    }
    if read_pending(dir).gate.is_some() {
        return Err(AgentError::GatePending(dir.display().to_string()));
    }
    archive::archive_stale(dir, DECISION_FILE, &timestamp(Utc::now())).map_err(io(dir))?;
    let approval = Approval {
        id: next_gate_id(dir).map_err(io(dir))?,
        gate: &spec.gate,
        description: &spec.description,
        context: &spec.context,
        awaiting_since: timestamp(Utc::now()),
        auto_approve_after_minutes: minutes(spec.auto_approve_after),
        allow_session: spec.allow_session.as_deref(),
    };
    pretty(&approval)
        .and_then(|b| write_atomic(dir, GATE_FILE, &b))
        .map_err(io(dir))?;
    let Some(result) = wait_for_decision(dir, &approval.id, spec, stop)? else {
        return Err(withdraw_gate(dir, &approval, stop));
    };
    let (GateResult::Decided(decision) | GateResult::AutoApproved(decision)) = &result;
    let record = GateRecord {
        approval: &approval,
        decision: Some(decision),
        archived_at: timestamp(Utc::now()),
        withdrawn: None,
    };
    archive::archive(dir, &record, [GATE_FILE, DECISION_FILE]).map_err(io(dir))?;
    Ok(result)
}

/// Withdraws a gate nobody waits at any more; the error says so (or why it could not be).
fn withdraw_gate(dir: &Path, approval: &Approval<'_>, stop: &Stop) -> AgentError {
    let why = stop.reason();
    let decides = |d: &Decision| d.decides(&approval.id, approval.gate);
    let decision = archive::answer_in_place(dir, DECISION_FILE, Decision::parse, decides);
    let record = GateRecord {
        approval,
        decision: decision.as_ref(),
        archived_at: timestamp(Utc::now()),
        withdrawn: Some(why.as_deref().unwrap_or(WITHDRAWN)),
    };
    let withdrawn = archive::withdraw(dir, &record, GATE_FILE, DECISION_FILE, |b| {
        Decision::parse(b).is_some_and(|d| decides(&d))
    });
    match withdrawn {
        Ok(()) => AgentError::Stopped(format!(
            "gate '{}' ({}) in {}",
            approval.gate,
            approval.id,
            dir.display()
        )),
        Err(e) => io(dir)(e),
    }
}

/// The operator's decision at gate instance `id`, or the approval once `auto_approve_after` has
/// passed (by the same exactly-once rule). `None` when `stop` was stopped first.
fn wait_for_decision(
    dir: &Path,
    id: &str,
    spec: &GateSpec,
    stop: &Stop,
) -> Result<Option<GateResult>, AgentError> {
    let deadline = spec.auto_approve_after.map(|t| Instant::now() + t);
    let read_decision = || {
        let bytes = read_small(&dir.join(DECISION_FILE)).ok()??;
        Decision::parse(&bytes).filter(|d| d.decides(id, &spec.gate))
    };
    if let Some(d) = DirWatch::new(dir).until_stopped(deadline, stop, read_decision) {
        return Ok(Some(GateResult::Decided(d)));
    }
    if stop.is_stopped() {
        return Ok(None);
    }
    // Only reachable with a deadline: without auto-approval a gate waits for a person.
    let after = spec.auto_approve_after.map_or(0, |d| d.as_secs());
    let ours = Decision {
        gate: spec.gate.clone(),
        gate_id: id.to_owned(),
        approved: true,
        reason: format!(
            "approved automatically after {}",
            format_duration(after as i64)
        ),
        decided_by: "auto".into(),
        decided_at: timestamp(Utc::now()),
        source: "auto".into(),
        token: new_token(),
        scope: Scope::Once,
    };
    Ok(Some(
        match publish_decision(dir, &ours).map_err(publish_failed(dir, GATE_FILE))? {
            Outcome::Done(d) => GateResult::AutoApproved(d),
            Outcome::Already(d) => GateResult::Decided(d),
        },
    ))
}

/// Replaces `progress.json` atomically; a milestone (a new step, or a quarter of the way
/// passed) is also appended to `history.jsonl`, so the job's timeline can show it later.
pub fn report_progress(dir: &Path, progress: &ProgressReport) -> Result<(), AgentError> {
    check_dir(dir)?;
    let previous = read_small(&dir.join(PROGRESS_FILE))
        .ok()
        .flatten()
        .and_then(|b| Progress::parse(&b).ok());
    let now = timestamp(Utc::now());
    let stamped = ProgressReport {
        updated_at: Some(now.clone()),
        ..progress.clone()
    };
    let bytes = serde_json::to_vec(&stamped)
        .map_err(std::io::Error::other)
        .map_err(io(dir))?;
    write_atomic(dir, PROGRESS_FILE, &bytes).map_err(io(dir))?;
    // Read back by the rule every reader uses (what was just written, less the stamp).
    let current = serde_json::to_vec(progress)
        .ok()
        .and_then(|b| Progress::parse(&b).ok())
        .unwrap_or_default();
    if is_milestone(previous.as_ref(), &current) {
        archive::append(dir, &Milestone { progress, at: &now }).map_err(io(dir))?;
    }
    Ok(())
}

/// A new step (or step name), or a quarter mark passed: what a timeline is worth showing of a
/// job that reports progress every second.
fn is_milestone(previous: Option<&Progress>, current: &Progress) -> bool {
    let Some(prev) = previous else { return true };
    let quarter = |p: &Progress| p.percent_done().map(|pc| (pc / 25.0).floor() as i64);
    current.step != prev.step
        || (current.step_name.is_some() && current.step_name != prev.step_name)
        || quarter(current) > quarter(prev)
}

#[cfg(test)]
mod tests;
