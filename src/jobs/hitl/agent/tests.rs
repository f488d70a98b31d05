use super::*;
use crate::jobs::fs::names::HISTORY_FILE;
use crate::jobs::hitl::history::next_question_id;
use crate::jobs::hitl::operator::{answer, decide, operator};
use crate::jobs::{JobId, read_job};
use serde_json::Value;

fn percent(p: f64) -> ProgressReport {
    ProgressReport {
        percent: Some(p),
        ..ProgressReport::default()
    }
}

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
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
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
    assert_eq!(next_question_id(&dir).unwrap(), "q2");
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
        allow_session: None,
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

/// The files as written today, byte for byte, times and random tokens aside.
#[test]
fn files_keep_their_fields_and_their_order() {
    let at = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    let token = regex::Regex::new(r#""token":"[0-9a-f]{32}""#).unwrap();
    let (_root, dir) = job_dir();
    let read = |name: &str| {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let text = at.replace_all(&text, "T");
        token.replace_all(&text, r#""token":"R""#).into_owned()
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
        allow_session: None,
    };
    gate(&dir, &gate_spec).unwrap();
    let progress = ProgressReport {
        percent: Some(40.0),
        step: Some(2),
        total_steps: Some(5),
        step_name: Some("x".into()),
        eta_seconds: Some(90),
        updated_at: None,
    };
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
        token: "tok1".into(),
    };
    // Still asked, or the answer is taken back.
    std::fs::write(dir.join(QUESTION_FILE), r#"{"id": "q2", "question": "?"}"#).unwrap();
    publish_response(&dir, &r).unwrap();
    assert_eq!(read(RESPONSE_FILE), GOLDEN_RESPONSE);
    let d = Decision {
        gate: "deploy".into(),
        gate_id: "g2".into(),
        approved: false,
        reason: "not now".into(),
        decided_by: "a@b".into(),
        decided_at: "t2".into(),
        source: "tui".into(),
        token: "tok2".into(),
        scope: Default::default(),
    };
    std::fs::write(dir.join(GATE_FILE), r#"{"id": "g2", "gate": "deploy"}"#).unwrap();
    publish_decision(&dir, &d).unwrap();
    assert_eq!(read(DECISION_FILE), GOLDEN_DECISION);
}

const GOLDEN_HISTORY: &str = include_str!("../../../../tests/golden/history.jsonl");
const GOLDEN_RESPONSE: &str = include_str!("../../../../tests/golden/response.json");
const GOLDEN_DECISION: &str = include_str!("../../../../tests/golden/approved.json");

#[test]
fn progress_milestones_reach_the_history_and_ticks_do_not() {
    let (_root, dir) = job_dir();
    let named = |p: f64| ProgressReport {
        step_name: Some("testing".into()),
        ..percent(p)
    };
    for p in [
        percent(5.0),
        percent(10.0),
        percent(24.0),
        percent(26.0),
        named(30.0),
        named(31.0),
        named(100.0),
    ] {
        report_progress(&dir, &p).unwrap();
    }
    let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
    let percents: Vec<f64> = history
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["progress"]["percent"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(percents, [5.0, 26.0, 30.0, 100.0]);
    // A step named like a question does not make the next question's id skip.
    let tricky = ProgressReport {
        step_name: Some("\"clarification\"".into()),
        ..ProgressReport::default()
    };
    report_progress(&dir, &tricky).unwrap();
    assert_eq!(next_question_id(&dir).unwrap(), "q1");
}

#[test]
fn a_plain_question_is_written_as_before_and_a_richer_one_with_its_fields() {
    let keys = |dir: &std::path::Path| -> Vec<String> {
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.join(QUESTION_FILE)).unwrap()).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    };
    let rich = Ask {
        header: "DB".into(),
        descriptions: vec!["live".into(), "copy".into()],
        multi_select: true,
        ..choice()
    };
    for (spec, want) in [
        (
            choice(),
            &[
                "id",
                "type",
                "question",
                "options",
                "context",
                "asked_at",
                "timeout_minutes",
                "default_if_timeout",
            ][..],
        ),
        (
            rich,
            &[
                "id",
                "type",
                "question",
                "options",
                "context",
                "asked_at",
                "timeout_minutes",
                "default_if_timeout",
                "header",
                "option_descriptions",
                "multi_select",
            ][..],
        ),
    ] {
        let (_root, dir) = job_dir();
        let stop = Stop::default();
        let asker = {
            let (dir, stop) = (dir.clone(), stop.clone());
            std::thread::spawn(move || ask_or_stop(&dir, &spec, &stop))
        };
        while !dir.join(QUESTION_FILE).exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(keys(&dir), want);
        stop.stop();
        assert!(matches!(asker.join().unwrap(), Err(AgentError::Stopped(_))));
        assert!(!dir.join(QUESTION_FILE).exists(), "withdrawn");
    }
}

/// Waits (with a deadline) for job `j1` under `root` to show a pending gate.
fn wait_gate(root: &std::path::Path) -> crate::jobs::Job {
    let id = JobId::parse("j1").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let j = read_job(root, &id, Utc::now()).unwrap();
        if j.gate.is_some() {
            return j;
        }
        assert!(std::time::Instant::now() < deadline, "no gate appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_gate_that_offers_the_session_is_approved_for_it_and_the_history_says_so() {
    use crate::jobs::hitl::operator::{Answerer, Scope, Verdict, decide_gate};
    let (root, dir) = job_dir();
    let spec = GateSpec {
        gate: "execute: touch a".into(),
        description: "Gemini CLI asks permission: touch a".into(),
        context: String::new(),
        auto_approve_after: None,
        allow_session: Some("Allow for this session".into()),
    };
    let waiter = {
        let (dir, spec) = (dir.clone(), spec.clone());
        std::thread::spawn(move || gate(&dir, &spec).unwrap())
    };
    let job = wait_gate(root.path());
    let g = job.gate.as_ref().unwrap();
    assert_eq!(g.allow_session.as_deref(), Some("Allow for this session"));
    let who = Answerer {
        source: "cli",
        by: "ana@host",
    };
    let session = Verdict::approve(Scope::Session, "");
    let d = match decide_gate(&job, None, session, who, Utc::now()).unwrap() {
        Outcome::Done(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!((d.approved, d.scope), (true, Scope::Session));
    let GateResult::Decided(got) = waiter.join().unwrap() else {
        panic!("decided by the operator");
    };
    assert_eq!(got.scope, Scope::Session, "the agent reads the scope");
    let history = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
    let record: Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(
        record["approval"]["allow_session"], "Allow for this session",
        "{record}"
    );
    assert_eq!(record["decision"]["scope"], "session", "{record}");
    assert_eq!(
        record["decision"]["approved"], true,
        "an older reader sees an approval"
    );
}

#[test]
fn approving_for_the_session_is_refused_at_a_gate_that_does_not_offer_it() {
    use crate::jobs::hitl::operator::{AnswerError, Answerer, Scope, Verdict, decide_gate};
    let (root, dir) = job_dir();
    let spec = GateSpec {
        gate: "deploy".into(),
        description: "Deploy".into(),
        context: String::new(),
        auto_approve_after: None,
        allow_session: None,
    };
    let waiter = {
        let (dir, spec) = (dir.clone(), spec.clone());
        std::thread::spawn(move || gate(&dir, &spec).unwrap())
    };
    let job = wait_gate(root.path());
    let who = Answerer {
        source: "cli",
        by: "ana@host",
    };
    let session = Verdict::approve(Scope::Session, "");
    let err = decide_gate(&job, None, session, who, Utc::now()).unwrap_err();
    assert!(
        matches!(err, AnswerError::NoSessionApproval { .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "gate 'deploy' (g1) of job j1 cannot be approved for the session: its agent did not \
         offer it (it asks again for each request); approve it once with `luzia approve j1`"
    );
    assert!(!dir.join(DECISION_FILE).exists(), "nothing was published");
    let raw = std::fs::read_to_string(dir.join(GATE_FILE)).unwrap();
    assert!(!raw.contains("allow_session"), "written as before: {raw}");
    decide(&job, true, "", "cli", "me", Utc::now()).unwrap();
    let GateResult::Decided(got) = waiter.join().unwrap() else {
        panic!("decided by the operator");
    };
    assert_eq!(got.scope, Scope::Once);
    let published = std::fs::read_to_string(dir.join(HISTORY_FILE)).unwrap();
    assert!(
        !published.contains("\"scope\""),
        "a plain approval is written as before"
    );
}

proptest::proptest! {
    /// What `approval.json` offers is what a reader of it finds; a gate that offers nothing
    /// is written without the field, as before.
    #[test]
    fn a_gate_offering_the_session_reads_back_as_written(
        gate in "\\PC{0,12}",
        covers in proptest::option::of("\\PC{0,24}"),
    ) {
        let approval = Approval {
            id: "g3".into(),
            gate: &gate,
            description: "d",
            context: "",
            awaiting_since: "2026-01-01T00:00:00Z".into(),
            auto_approve_after_minutes: None,
            allow_session: covers.as_deref(),
        };
        let bytes = serde_json::to_vec(&approval).unwrap();
        let read = crate::jobs::Gate::parse(&bytes, None).unwrap();
        proptest::prop_assert_eq!(&read.gate, &gate);
        proptest::prop_assert_eq!(read.allow_session, covers.clone());
        let text = String::from_utf8(bytes).unwrap();
        proptest::prop_assert_eq!(text.contains("allow_session"), covers.is_some());
    }
}
