//! The agent's side of the conversation: asking a question or stopping at a gate, waiting for
//! the operator, taking the default or auto-approval when the time comes (by the same
//! exactly-once rule as an operator, so a late operator is told), and archiving the exchange to
//! `history.jsonl` so the next question can be asked.

use crate::jobs::fs::names::{
    DECISION_FILE, GATE_FILE, HISTORY_FILE, PROGRESS_FILE, QUESTION_FILE, RESPONSE_FILE,
};
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Value, json};

use crate::jobs::fs::files::read_small;
use crate::jobs::fs::publish::{append_line, write_atomic};
use crate::jobs::fs::wait::DirWatch;
use crate::jobs::hitl::operator::{
    Decision, Outcome, Response, publish_decision, publish_response, timestamp,
};
use crate::jobs::model::progress::Progress;
use crate::jobs::model::waiting::{QuestionType, read_pending};

#[derive(Clone, Debug)]
pub struct Ask {
    pub question: String,
    pub kind: QuestionType,
    pub options: Vec<String>,
    pub context: String,
    pub timeout: Option<Duration>,
    pub default: Option<String>,
}

#[derive(Clone, Debug)]
pub struct GateSpec {
    pub gate: String,
    pub description: String,
    pub context: String,
    pub auto_approve_after: Option<Duration>,
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

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0} does not exist: run inside a job (LUZIA_JOB_DIR) or pass --job-dir DIR")]
    NoJobDir(String),
    #[error("a question is already pending in {0}: ask one at a time")]
    QuestionPending(String),
    #[error("an approval gate is already pending in {0}: wait at one gate at a time")]
    GatePending(String),
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

fn minutes(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs_f64() / 60.0))
}

/// The next question id: one more than the questions already archived.
fn next_question_id(dir: &Path) -> String {
    let asked = read_small(&dir.join(HISTORY_FILE))
        .ok()
        .flatten()
        .map_or(0, |h| {
            h.split(|b| *b == b'\n')
                .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
                .filter(|record| record.get("clarification").is_some())
                .count()
        });
    format!("q{}", asked + 1)
}

fn check_dir(dir: &Path) -> Result<(), AgentError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(AgentError::NoJobDir(dir.display().to_string()))
    }
}

/// Asks, waits, archives. Returns how it ended.
pub fn ask(dir: &Path, spec: &Ask) -> Result<AskResult, AgentError> {
    check_dir(dir)?;
    if spec.kind == QuestionType::Choice && spec.options.is_empty() {
        return Err(AgentError::Invalid(
            "a choice needs --option (at least one)".into(),
        ));
    }
    if let Some(d) = &spec.default
        && spec.kind == QuestionType::Choice
        && !spec.options.contains(d)
    {
        return Err(AgentError::Invalid(format!(
            "the default '{d}' is not one of the options"
        )));
    }
    if read_pending(dir).question.is_some() {
        return Err(AgentError::QuestionPending(dir.display().to_string()));
    }
    // An answer left from an earlier, unfinished exchange would make every new answer fail to
    // publish (the name is taken): it is stale by now, so it goes to the history.
    archive_stale(dir, RESPONSE_FILE)?;
    let id = next_question_id(dir);
    let clarification = json!({
        "id": id, "type": spec.kind.as_str(), "question": spec.question, "options": spec.options,
        "context": spec.context, "asked_at": timestamp(Utc::now()),
        "timeout_minutes": minutes(spec.timeout), "default_if_timeout": spec.default,
    });
    write_atomic(
        dir,
        QUESTION_FILE,
        &serde_json::to_vec_pretty(&clarification).expect("JSON"),
    )
    .map_err(io(dir))?;

    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let read_answer = || {
        let bytes = read_small(&dir.join(RESPONSE_FILE)).ok()??;
        Response::parse(&bytes).filter(|r| r.question_id == id)
    };
    let watch = DirWatch::new(dir);
    let result = match watch.until(deadline, read_answer) {
        Some(r) => AskResult::Answered(r),
        None => match &spec.default {
            None => AskResult::TimedOut,
            Some(default) => {
                let ours = Response {
                    question_id: id.clone(),
                    answer: default.clone(),
                    answered_by: "timeout".into(),
                    answered_at: timestamp(Utc::now()),
                    source: "timeout".into(),
                };
                match publish_response(dir, &ours).map_err(io(dir))? {
                    Outcome::Done(r) => AskResult::TimedOutDefault(r),
                    // An operator got there first: theirs stands.
                    Outcome::Already(r) => AskResult::Answered(r),
                }
            }
        },
    };
    let response = match &result {
        AskResult::Answered(r) | AskResult::TimedOutDefault(r) => Some(r.to_json()),
        AskResult::TimedOut => None,
    };
    archive(
        dir,
        "clarification",
        clarification,
        "response",
        response,
        QUESTION_FILE,
        RESPONSE_FILE,
    )?;
    Ok(result)
}

/// Stops at a gate, waits for the decision (or auto-approves when asked to), archives.
pub fn gate(dir: &Path, spec: &GateSpec) -> Result<GateResult, AgentError> {
    check_dir(dir)?;
    if read_pending(dir).gate.is_some() {
        return Err(AgentError::GatePending(dir.display().to_string()));
    }
    archive_stale(dir, DECISION_FILE)?;
    let approval = json!({
        "gate": spec.gate, "description": spec.description, "context": spec.context,
        "awaiting_since": timestamp(Utc::now()), "auto_approve_after_minutes": minutes(spec.auto_approve_after),
    });
    write_atomic(
        dir,
        GATE_FILE,
        &serde_json::to_vec_pretty(&approval).expect("JSON"),
    )
    .map_err(io(dir))?;
    let deadline = spec.auto_approve_after.map(|t| Instant::now() + t);
    let read_decision = || {
        let bytes = read_small(&dir.join(DECISION_FILE)).ok()??;
        Decision::parse(&bytes).filter(|d| d.gate.is_empty() || d.gate == spec.gate)
    };
    let watch = DirWatch::new(dir);
    let result = match watch.until(deadline, read_decision) {
        Some(d) => GateResult::Decided(d),
        None => {
            // Only reachable with a deadline: without auto-approval a gate waits for a person.
            let after = spec.auto_approve_after.map_or(0, |d| d.as_secs());
            let ours = Decision {
                gate: spec.gate.clone(),
                approved: true,
                reason: format!(
                    "approved automatically after {}",
                    crate::jobs::model::time::format_duration(after as i64)
                ),
                decided_by: "auto".into(),
                decided_at: timestamp(Utc::now()),
                source: "auto".into(),
            };
            match publish_decision(dir, &ours).map_err(io(dir))? {
                Outcome::Done(d) => GateResult::AutoApproved(d),
                Outcome::Already(d) => GateResult::Decided(d),
            }
        }
    };
    let decision = match &result {
        GateResult::Decided(d) | GateResult::AutoApproved(d) => d.to_json(),
    };
    archive(
        dir,
        "approval",
        approval,
        "decision",
        Some(decision),
        GATE_FILE,
        DECISION_FILE,
    )?;
    Ok(result)
}

/// Appends the exchange to `history.jsonl`, then removes the request and the answer (request
/// first: a cockpit must never see the request without its answer and think it pending again).
fn archive(
    dir: &Path,
    request_key: &str,
    request: Value,
    answer_key: &str,
    answer: Option<Value>,
    request_file: &str,
    answer_file: &str,
) -> Result<(), AgentError> {
    let mut record = serde_json::Map::new();
    record.insert(request_key.into(), request);
    record.insert(answer_key.into(), answer.unwrap_or(Value::Null));
    record.insert("archived_at".into(), json!(timestamp(Utc::now())));
    append_line(dir, HISTORY_FILE, &Value::Object(record).to_string()).map_err(io(dir))?;
    for name in [request_file, answer_file] {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(dir)(e)),
        }
    }
    Ok(())
}

fn archive_stale(dir: &Path, name: &str) -> Result<(), AgentError> {
    let Some(bytes) = read_small(&dir.join(name)).map_err(io(dir))? else {
        return Ok(());
    };
    let stale: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)));
    let record = json!({"stale": stale, "file": name, "archived_at": timestamp(Utc::now())});
    append_line(dir, HISTORY_FILE, &record.to_string()).map_err(io(dir))?;
    std::fs::remove_file(dir.join(name)).map_err(io(dir))
}

/// Replaces `progress.json` atomically; a milestone (a new step, or a quarter of the way
/// passed) is also appended to `history.jsonl`, so the job's timeline can show it later.
pub fn report_progress(dir: &Path, progress: &Value) -> Result<(), AgentError> {
    check_dir(dir)?;
    let previous = read_small(&dir.join(PROGRESS_FILE))
        .ok()
        .flatten()
        .and_then(|b| Progress::parse(&b).ok());
    let now = timestamp(Utc::now());
    let mut p = progress.clone();
    p["updated_at"] = json!(now);
    write_atomic(dir, PROGRESS_FILE, &serde_json::to_vec(&p).expect("JSON")).map_err(io(dir))?;
    let current = Progress::parse(&serde_json::to_vec(progress).expect("JSON")).unwrap_or_default();
    if is_milestone(previous.as_ref(), &current) {
        let record = json!({"progress": progress, "at": now});
        append_line(dir, HISTORY_FILE, &record.to_string()).map_err(io(dir))?;
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
mod tests {
    use super::*;
    use crate::jobs::hitl::operator::{answer, decide, operator};
    use crate::jobs::{JobId, read_job};

    fn job_dir() -> (tempfile::TempDir, std::path::PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("j1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
        (root, dir)
    }

    fn choice() -> Ask {
        Ask {
            question: "Which database?".into(),
            kind: QuestionType::Choice,
            options: vec!["production".into(), "staging".into()],
            context: "migration".into(),
            timeout: None,
            default: None,
        }
    }

    #[test]
    fn an_operator_answer_reaches_the_agent_and_is_archived() {
        let (root, dir) = job_dir();
        let asker = {
            let dir = dir.clone();
            std::thread::spawn(move || ask(&dir, &choice()).unwrap())
        };
        let id = JobId::parse("j1").unwrap();
        let job = loop {
            let j = read_job(root.path(), &id, Utc::now()).unwrap();
            if j.question.is_some() {
                break j;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(job.status, crate::jobs::Status::Waiting);
        let out = answer(&job, "2", "cli", &operator(), Utc::now()).unwrap();
        assert!(matches!(out, Outcome::Done(ref r) if r.answer == "staging"));
        let got = asker.join().unwrap();
        assert!(
            matches!(got, AskResult::Answered(ref r) if r.answer == "staging" && r.source == "cli")
        );
        assert!(!dir.join(QUESTION_FILE).exists() && !dir.join(RESPONSE_FILE).exists());
        let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
        assert_eq!(history.lines().count(), 1);
        assert!(history.contains("\"staging\"") && history.contains("\"clarification\""));
        // The next question gets the next id.
        assert_eq!(next_question_id(&dir), "q2");
    }

    #[test]
    fn the_default_is_published_on_timeout_and_a_stale_answer_is_ignored() {
        let (_root, dir) = job_dir();
        std::fs::write(
            dir.join(RESPONSE_FILE),
            r#"{"question_id": "q0", "answer": "production"}"#,
        )
        .unwrap();
        let spec = Ask {
            timeout: Some(Duration::from_millis(200)),
            default: Some("staging".into()),
            ..choice()
        };
        let got = ask(&dir, &spec).unwrap();
        assert!(
            matches!(got, AskResult::TimedOutDefault(ref r) if r.answer == "staging" && r.source == "timeout")
        );
        let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
        assert!(history.lines().next().unwrap().contains("\"stale\""));
        let no_default = Ask {
            timeout: Some(Duration::from_millis(50)),
            ..choice()
        };
        assert_eq!(ask(&dir, &no_default).unwrap(), AskResult::TimedOut);
        assert!(
            !dir.join(QUESTION_FILE).exists(),
            "a question nobody will read is not left pending"
        );
    }

    #[test]
    fn gates_deny_with_the_reason_and_auto_approve_only_when_asked() {
        let (root, dir) = job_dir();
        let spec = GateSpec {
            gate: "deploy".into(),
            description: "Deploy".into(),
            context: String::new(),
            auto_approve_after: None,
        };
        let waiter = {
            let dir = dir.clone();
            let spec = spec.clone();
            std::thread::spawn(move || gate(&dir, &spec).unwrap())
        };
        let id = JobId::parse("j1").unwrap();
        let job = loop {
            let j = read_job(root.path(), &id, Utc::now()).unwrap();
            if j.gate.is_some() {
                break j;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(
            decide(&job, false, "  ", "cli", "me", Utc::now()).is_err(),
            "a denial needs a reason"
        );
        decide(
            &job,
            false,
            "not during business hours",
            "cli",
            "me",
            Utc::now(),
        )
        .unwrap();
        let got = waiter.join().unwrap();
        assert!(
            matches!(got, GateResult::Decided(ref d) if !d.approved && d.reason == "not during business hours")
        );

        let auto = GateSpec {
            auto_approve_after: Some(Duration::from_millis(100)),
            ..spec
        };
        let got = gate(&dir, &auto).unwrap();
        assert!(matches!(got, GateResult::AutoApproved(ref d) if d.approved && d.source == "auto"));
        assert!(!dir.join(GATE_FILE).exists() && !dir.join(DECISION_FILE).exists());
    }

    #[test]
    fn one_question_at_a_time_and_bad_specs_are_refused() {
        let (_root, dir) = job_dir();
        std::fs::write(dir.join(QUESTION_FILE), r#"{"id": "q1", "question": "?"}"#).unwrap();
        assert!(matches!(
            ask(&dir, &choice()),
            Err(AgentError::QuestionPending(_))
        ));
        std::fs::remove_file(dir.join(QUESTION_FILE)).unwrap();
        let no_options = Ask {
            options: vec![],
            ..choice()
        };
        assert!(matches!(
            ask(&dir, &no_options),
            Err(AgentError::Invalid(_))
        ));
        let bad_default = Ask {
            default: Some("dev".into()),
            ..choice()
        };
        assert!(matches!(
            ask(&dir, &bad_default),
            Err(AgentError::Invalid(_))
        ));
        assert!(matches!(
            ask(&dir.join("nope"), &choice()),
            Err(AgentError::NoJobDir(_))
        ));
    }

    /// The files as written today, byte for byte, times aside.
    #[test]
    fn files_keep_their_fields_and_their_order() {
        let at = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
        let (_root, dir) = job_dir();
        let read = |name: &str| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            at.replace_all(&text, "T").into_owned()
        };
        std::fs::write(
            dir.join(RESPONSE_FILE),
            r#"{"question_id": "q0", "answer": "x"}"#,
        )
        .unwrap();
        let spec = Ask {
            timeout: Some(Duration::from_millis(20)),
            default: Some("staging".into()),
            ..choice()
        };
        ask(&dir, &spec).unwrap();
        let no_default = Ask {
            kind: QuestionType::Text,
            options: vec![],
            default: None,
            ..spec
        };
        ask(&dir, &no_default).unwrap();
        let gate_spec = GateSpec {
            gate: "deploy".into(),
            description: "Deploy".into(),
            context: "ctx".into(),
            auto_approve_after: Some(Duration::from_millis(20)),
        };
        gate(&dir, &gate_spec).unwrap();
        let progress = json!({"percent": 40.0, "step": 2, "total_steps": 5, "step_name": "x", "eta_seconds": 90});
        report_progress(&dir, &progress).unwrap();
        assert_eq!(read(HISTORY_FILE), GOLDEN_HISTORY);
        assert_eq!(
            read(PROGRESS_FILE),
            r#"{"percent":40.0,"step":2,"total_steps":5,"step_name":"x","eta_seconds":90,"updated_at":"T"}"#
        );
        let r = Response {
            question_id: "q2".into(),
            answer: "yes".into(),
            answered_by: "a@b".into(),
            answered_at: "t1".into(),
            source: "cli".into(),
        };
        // Still asked, or the answer is taken back.
        std::fs::write(dir.join(QUESTION_FILE), r#"{"id": "q2", "question": "?"}"#).unwrap();
        publish_response(&dir, &r).unwrap();
        assert_eq!(read(RESPONSE_FILE), GOLDEN_RESPONSE);
        let d = Decision {
            gate: "deploy".into(),
            approved: false,
            reason: "not now".into(),
            decided_by: "a@b".into(),
            decided_at: "t2".into(),
            source: "tui".into(),
        };
        publish_decision(&dir, &d).unwrap();
        assert_eq!(read(DECISION_FILE), GOLDEN_DECISION);
    }

    const GOLDEN_HISTORY: &str = include_str!("../../../tests/golden/history.jsonl");
    const GOLDEN_RESPONSE: &str = include_str!("../../../tests/golden/response.json");
    const GOLDEN_DECISION: &str = include_str!("../../../tests/golden/approved.json");

    #[test]
    fn progress_milestones_reach_the_history_and_ticks_do_not() {
        let (_root, dir) = job_dir();
        for p in [
            json!({"percent": 5}),
            json!({"percent": 10}),
            json!({"percent": 24}),
            json!({"percent": 26}),
            json!({"percent": 30, "step_name": "testing"}),
            json!({"percent": 31, "step_name": "testing"}),
            json!({"percent": 100, "step_name": "testing"}),
        ] {
            report_progress(&dir, &p).unwrap();
        }
        let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
        let percents: Vec<i64> = history
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["progress"]["percent"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(percents, [5, 26, 30, 100]);
        // A step named like a question does not make the next question's id skip.
        report_progress(&dir, &json!({"step_name": "\"clarification\""})).unwrap();
        assert_eq!(next_question_id(&dir), "q1");
    }
}
