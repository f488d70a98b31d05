//! The exactly-once rule, step by step: each step of `publish` met in the state a race would
//! leave, set up by hand so that it is met every time.

use super::*;
use crate::jobs::fs::names::{GATE_FILE, HISTORY_FILE, QUESTION_FILE};
use std::fs;

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn ask(d: &Path, id: &str) {
    fs::write(
        d.join(QUESTION_FILE),
        format!(r#"{{"id": "{id}", "question": "?"}}"#),
    )
    .unwrap();
}

fn answer(id: &str, text: &str, by: &str) -> Response {
    Response {
        question_id: id.into(),
        answer: text.into(),
        answered_by: by.into(),
        answered_at: "2026-01-01T00:00:00Z".into(),
        source: "cli".into(),
        token: crate::jobs::hitl::published::new_token(),
    }
}

fn decision(gate_id: &str, approved: bool, by: &str) -> Decision {
    Decision {
        gate: "deploy".into(),
        gate_id: gate_id.into(),
        approved,
        reason: if approved { "" } else { "no" }.into(),
        decided_by: by.into(),
        decided_at: "2026-01-01T00:00:00Z".into(),
        source: "cli".into(),
        token: crate::jobs::hitl::published::new_token(),
        scope: Default::default(),
    }
}

/// The agent archived question `id` with `r` (or with nobody's answer).
fn archived(d: &Path, id: &str, r: Option<&Response>) {
    let line = serde_json::json!({"clarification": {"id": id}, "response": r});
    crate::jobs::fs::publish::append_line(d, HISTORY_FILE, &line.to_string()).unwrap();
}

/// Everything in the directory but the request and the history.
fn left(d: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| ![QUESTION_FILE, GATE_FILE, HISTORY_FILE].contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn the_first_wins_and_the_same_answer_sent_later_loses_by_its_token() {
    let d = dir();
    ask(d.path(), "q3");
    let first = answer("q3", "yes", "ops@h");
    assert_eq!(
        publish_response(d.path(), &first).unwrap(),
        Outcome::Done(first.clone())
    );
    // Same user, same answer, same second: only the token tells them apart.
    let second = Response {
        token: crate::jobs::hitl::published::new_token(),
        ..first.clone()
    };
    assert_eq!(
        publish_response(d.path(), &second).unwrap(),
        Outcome::Already(first)
    );
    assert_eq!(left(d.path()), [RESPONSE_FILE]);
}

#[test]
fn nothing_is_written_for_a_question_no_longer_pending() {
    let d = dir();
    let winner = answer("q3", "alpha", "op1@h");
    archived(d.path(), "q3", Some(&winner));
    ask(d.path(), "q4");
    let late = answer("q3", "bravo", "op2@h");
    assert_eq!(
        publish_response(d.path(), &late).unwrap(),
        Outcome::Already(winner),
        "told who answered it, from the history"
    );
    assert!(left(d.path()).is_empty(), "nothing for q4 to take");

    archived(d.path(), "q4", None);
    fs::remove_file(d.path().join(QUESTION_FILE)).unwrap();
    let closed = publish_response(d.path(), &answer("q4", "x", "op@h")).unwrap_err();
    assert!(
        matches!(closed, PublishError::Closed(Closed::Unanswered)),
        "{closed}"
    );
    let never = publish_response(d.path(), &answer("q9", "x", "op@h")).unwrap_err();
    assert!(
        matches!(never, PublishError::Closed(Closed::Unrecorded)),
        "{never}"
    );
}

#[test]
fn a_link_that_won_after_the_agent_settled_is_taken_back() {
    // The agent settled q3 by its timeout and archived it; our link landed on the empty name.
    let d = dir();
    let timeout = Response {
        answered_by: "timeout".into(),
        source: "timeout".into(),
        ..answer("q3", "staging", "timeout")
    };
    archived(d.path(), "q3", Some(&timeout));
    let ours = answer("q3", "production", "op@h");
    fs::write(
        d.path().join(RESPONSE_FILE),
        serde_json::to_vec(&ours).unwrap(),
    )
    .unwrap();
    assert_eq!(recheck(d.path(), &ours).unwrap(), Outcome::Already(timeout));
    assert!(
        left(d.path()).is_empty(),
        "a late answer never outlives its refusal"
    );
}

#[test]
fn a_link_the_agent_took_and_archived_at_once_stands() {
    let d = dir();
    let ours = answer("q3", "production", "op@h");
    archived(d.path(), "q3", Some(&ours));
    assert_eq!(recheck(d.path(), &ours).unwrap(), Outcome::Done(ours));
}

#[test]
fn taking_back_never_removes_someone_elses_file() {
    let d = dir();
    let ours = decision("g2", true, "op1@h");
    let theirs = decision("g3", false, "op2@h");
    let path = d.path().join(DECISION_FILE);
    fs::write(&path, serde_json::to_vec(&theirs).unwrap()).unwrap();
    take_back(d.path(), &ours).unwrap();
    assert_eq!(Decision::parse(&fs::read(&path).unwrap()), Some(theirs));
    fs::write(&path, serde_json::to_vec(&ours).unwrap()).unwrap();
    take_back(d.path(), &ours).unwrap();
    assert!(!path.exists());
}

#[test]
fn a_stale_decision_in_the_way_goes_to_the_history_and_ours_is_published() {
    let d = dir();
    fs::write(
        d.path().join(GATE_FILE),
        r#"{"id": "g3", "gate": "deploy", "description": "to PRODUCTION"}"#,
    )
    .unwrap();
    let stale = decision("g2", true, "late@h");
    fs::write(
        d.path().join(DECISION_FILE),
        serde_json::to_vec(&stale).unwrap(),
    )
    .unwrap();
    let ours = decision("g3", false, "op@h");
    assert_eq!(
        publish_decision(d.path(), &ours).unwrap(),
        Outcome::Done(ours.clone())
    );
    let history = fs::read_to_string(d.path().join(HISTORY_FILE)).unwrap();
    assert!(
        history.contains("\"stale\"") && history.contains("late@h"),
        "{history}"
    );
    assert_eq!(left(d.path()), [DECISION_FILE]);
    // An older-form decision (no instance) of the same gate name decides it: it stands.
    let d2 = dir();
    fs::copy(d.path().join(GATE_FILE), d2.path().join(GATE_FILE)).unwrap();
    fs::write(
        d2.path().join(DECISION_FILE),
        r#"{"gate": "deploy", "approved": true, "decided_by": "old@tool"}"#,
    )
    .unwrap();
    match publish_decision(d2.path(), &ours).unwrap() {
        Outcome::Already(d) => assert_eq!(d.decided_by, "old@tool"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_in_the_way_that_is_no_answer_is_left_alone_and_said() {
    let d = dir();
    ask(d.path(), "q1");
    fs::write(d.path().join(RESPONSE_FILE), "{trunc").unwrap();
    let err = publish_response(d.path(), &answer("q1", "x", "op@h")).unwrap_err();
    assert!(err.to_string().contains("is in the way"), "{err}");
    assert_eq!(fs::read(d.path().join(RESPONSE_FILE)).unwrap(), b"{trunc");
}

#[test]
fn a_gate_written_without_an_id_is_decided_by_its_derived_one() {
    let d = dir();
    let gate = d.path().join(GATE_FILE);
    fs::write(&gate, r#"{"gate": "deploy", "description": "staging"}"#).unwrap();
    let first = read_gate(d.path()).unwrap().unwrap().id;
    assert!(first.starts_with("g-"), "{first}");
    assert_eq!(read_gate(d.path()).unwrap().unwrap().id, first, "stable");
    // Rewritten (same words, a new file): a new instance, and a decision for the old one is
    // refused without a word written.
    let tmp = d.path().join(".approval.json.new");
    fs::write(&tmp, r#"{"gate": "deploy", "description": "staging"}"#).unwrap();
    fs::rename(&tmp, &gate).unwrap();
    let second = read_gate(d.path()).unwrap().unwrap().id;
    assert_ne!(first, second);
    let err = publish_decision(d.path(), &decision(&first, true, "op@h")).unwrap_err();
    assert!(
        matches!(err, PublishError::Closed(Closed::Unrecorded)),
        "{err}"
    );
    assert!(left(d.path()).is_empty());
    let ours = decision(&second, true, "op@h");
    assert_eq!(
        publish_decision(d.path(), &ours).unwrap(),
        Outcome::Done(ours)
    );
}
