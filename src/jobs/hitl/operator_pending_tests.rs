//! `answer_if_pending` and `decide_if_pending`: only what is still pending is answered.

use super::*;

const QUESTION: &str = r#"{"id": "q2", "type": "choice", "question": "Which database?",
    "options": ["production", "staging"]}"#;
const GATE: &str = r#"{"id": "g4", "gate": "migrate", "description": "About to migrate"}"#;

/// A job waiting on a question and a gate, its agent alive (this very process).
fn waiting_job() -> (tempfile::TempDir, JobId) {
    let root = tempfile::tempdir().unwrap();
    let id = JobId::parse("100001-waits").unwrap();
    let dir = root.path().join(id.as_str());
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    std::fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
    std::fs::write(dir.join(QUESTION_FILE), QUESTION).unwrap();
    std::fs::write(dir.join(crate::jobs::fs::names::GATE_FILE), GATE).unwrap();
    (root, id)
}

const WHO: Answerer<'static> = Answerer {
    source: "tui",
    by: "ops@host",
};

#[test]
fn only_the_question_still_pending_is_answered() {
    let (root, id) = waiting_job();
    let now = Utc::now();
    let stale = answer_if_pending(root.path(), &id, "q1", "staging", WHO, now);
    assert_eq!(
        stale.unwrap_err().to_string(),
        "job 100001-waits's question q1 is no longer pending"
    );
    assert!(!root.path().join(id.as_str()).join(RESPONSE_FILE).exists());

    let wrong = answer_if_pending(root.path(), &id, "q2", "dev", WHO, now).unwrap_err();
    assert!(
        matches!(wrong, NotPending::Answer(AnswerError::NotAnAnswer(_))),
        "{wrong}"
    );
    match answer_if_pending(root.path(), &id, "q2", "2", WHO, now).unwrap() {
        Outcome::Done(r) => assert_eq!(
            (r.question_id.as_str(), r.answer.as_str()),
            ("q2", "staging")
        ),
        other => panic!("{other:?}"),
    }
    // Answered: a second answer to it is refused, whatever it says.
    let again = answer_if_pending(root.path(), &id, "q2", "1", WHO, now).unwrap_err();
    assert!(matches!(again, NotPending::Question { .. }), "{again}");

    let gone = JobId::parse("100002-gone").unwrap();
    let err = answer_if_pending(root.path(), &gone, "q2", "2", WHO, now).unwrap_err();
    assert!(
        matches!(&err, NotPending::Gone(id) if id == "100002-gone"),
        "{err}"
    );
}

const APPROVE: Verdict = Verdict {
    approved: true,
    scope: Scope::Once,
    reason: "",
};

/// The gate is named by its instance: the previous gate of the same name (`g3`) is not the one
/// pending (`g4`).
#[test]
fn only_the_gate_still_pending_is_decided() {
    let (root, id) = waiting_job();
    let now = Utc::now();
    let err = decide_if_pending(root.path(), &id, "g3", APPROVE, WHO, now).unwrap_err();
    assert_eq!(
        err.to_string(),
        "job 100001-waits's gate g3 is no longer pending"
    );
    match decide_if_pending(root.path(), &id, "g4", APPROVE, WHO, now).unwrap() {
        Outcome::Done(d) => assert!(d.approved && d.gate == "migrate" && d.gate_id == "g4"),
        other => panic!("{other:?}"),
    }
    let again = decide_if_pending(root.path(), &id, "g4", Verdict::deny("no"), WHO, now);
    match again {
        Err(e @ NotPending::Gate { .. }) => assert!(
            e.to_string()
                .contains("gate g4 is no longer pending: approved by ops@host at "),
            "told who decided it: {e}"
        ),
        other => panic!("{other:?}"),
    }
}
