use super::*;
use std::fs;

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, body) in files {
        fs::write(d.path().join(name), body).unwrap();
    }
    d
}

const Q: &str = r#"{"id": "q1", "type": "choice", "question": "Which database?",
    "options": ["production", "staging"], "context": "migration",
    "asked_at": "2026-01-11T14:30:00Z", "timeout_minutes": 30, "default_if_timeout": "staging"}"#;
const G: &str = r#"{"gate": "database_migration", "description": "3 migrations",
    "awaiting_since": "2026-01-11T14:30:00Z", "auto_approve_after_minutes": null}"#;
const G2: &str = r#"{"id": "g2", "gate": "deploy", "description": "to PRODUCTION"}"#;

#[test]
fn pending_table() {
    // (files, question pending, gate pending, problems)
    type Case<'a> = (&'a [(&'a str, &'a str)], bool, bool, usize);
    let cases: &[Case] = &[
        (&[], false, false, 0),
        (&[(QUESTION_FILE, Q)], true, false, 0),
        (
            &[
                (QUESTION_FILE, Q),
                (RESPONSE_FILE, r#"{"question_id": "q1", "answer": "x"}"#),
            ],
            false,
            false,
            0,
        ),
        (
            &[
                (QUESTION_FILE, Q),
                (RESPONSE_FILE, r#"{"question_id": "q0", "answer": "x"}"#),
            ],
            true,
            false,
            0,
        ),
        (
            &[
                (QUESTION_FILE, Q),
                (RESPONSE_FILE, r#"{"choice": "staging"}"#),
            ],
            false,
            false,
            0,
        ),
        (
            &[(QUESTION_FILE, Q), (RESPONSE_FILE, "{trunc")],
            true,
            false,
            1,
        ),
        (
            &[(QUESTION_FILE, "{\"id\": \"q1\", \"ques")],
            false,
            false,
            1,
        ),
        (&[(GATE_FILE, G)], false, true, 0),
        (
            &[
                (GATE_FILE, G),
                (
                    DECISION_FILE,
                    r#"{"gate": "database_migration", "approved": false}"#,
                ),
            ],
            false,
            false,
            0,
        ),
        (
            &[
                (GATE_FILE, G),
                (DECISION_FILE, r#"{"gate": "other", "approved": true}"#),
            ],
            false,
            true,
            0,
        ),
        (
            &[
                (GATE_FILE, G2),
                (
                    DECISION_FILE,
                    r#"{"gate": "deploy", "gate_id": "g2", "approved": true}"#,
                ),
            ],
            false,
            false,
            0,
        ),
        // A decision for the previous gate of the same name does not decide this one.
        (
            &[
                (GATE_FILE, G2),
                (
                    DECISION_FILE,
                    r#"{"gate": "deploy", "gate_id": "g1", "approved": true}"#,
                ),
            ],
            false,
            true,
            0,
        ),
        (&[(GATE_FILE, G), (QUESTION_FILE, Q)], true, true, 0),
        (&[(GATE_FILE, "[]")], false, false, 1),
    ];
    for (files, q, g, problems) in cases {
        let d = dir_with(files);
        let got = read_pending(d.path());
        assert_eq!(got.question.is_some(), *q, "{files:?}");
        assert_eq!(got.gate.is_some(), *g, "{files:?}");
        assert_eq!(
            got.problems.len(),
            *problems,
            "{files:?}: {:?}",
            got.problems
        );
    }
}

#[test]
fn a_gate_is_its_id_or_one_derived_from_the_file() {
    let d = dir_with(&[(GATE_FILE, G2)]);
    assert_eq!(read_gate(d.path()).unwrap().unwrap().id, "g2");
    let d = dir_with(&[(GATE_FILE, G)]);
    let id = read_gate(d.path()).unwrap().unwrap().id;
    assert!(
        id.len() == 14 && id.starts_with("g-") && id[2..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(
        read_pending(d.path()).gate.unwrap().id,
        id,
        "the same file, the same id"
    );
    // The same words written again, the way files are replaced (a new file renamed over
    // the old one): another gate.
    fs::write(d.path().join(".approval.json.tmp"), G).unwrap();
    fs::rename(
        d.path().join(".approval.json.tmp"),
        d.path().join(GATE_FILE),
    )
    .unwrap();
    assert_ne!(read_gate(d.path()).unwrap().unwrap().id, id);
}

#[test]
fn question_defaults() {
    let mtime = parse_timestamp("2026-02-02T00:00:00Z");
    let q = Question::parse(br#"{"question": "Go on?", "options": ["y", 2]}"#, mtime).unwrap();
    assert_eq!(q.id, "q1");
    assert_eq!(q.kind, QuestionType::Choice);
    assert_eq!(q.options, ["y", "2"]);
    assert_eq!(q.asked_at, mtime);
    let full = Question::parse(Q.as_bytes(), None).unwrap();
    assert_eq!(full.timeout_minutes, Some(30.0));
    assert_eq!(full.default_if_timeout.as_deref(), Some("staging"));
    assert_eq!(
        Question::parse(br#"{"question": "why?"}"#, None)
            .unwrap()
            .kind,
        QuestionType::Text
    );
}

#[test]
fn richer_questions_are_read_and_older_ones_read_as_before() {
    let old = Question::parse(Q.as_bytes(), None).unwrap();
    assert_eq!(
        (
            old.header.as_str(),
            old.descriptions.len(),
            old.multi_select
        ),
        ("", 0, false)
    );
    let listed = r#"{"id": "q2", "type": "choice", "question": "Which checks?", "header": "Checks",
        "options": ["unit", "load"], "option_descriptions": ["fast", "slow"], "multi_select": true}"#;
    let q = Question::parse(listed.as_bytes(), None).unwrap();
    assert_eq!(q.options, ["unit", "load"]);
    assert_eq!(q.descriptions, ["fast", "slow"]);
    assert_eq!((q.header.as_str(), q.multi_select), ("Checks", true));
    // Claude Code's own form of options; a description missing reads as empty.
    let objects = r#"{"question": "Which?", "options": [{"label": "a", "description": "first"},
        {"label": "b"}, 7]}"#;
    let q = Question::parse(objects.as_bytes(), None).unwrap();
    assert_eq!(q.kind, QuestionType::Choice);
    assert_eq!(q.options, ["a", "b", "7"]);
    assert_eq!(q.descriptions, ["first", "", ""]);
    // multi_select means something only for a choice, and only when it is true.
    for (body, multi) in [
        (
            r#"{"type": "text", "question": "?", "multi_select": true}"#,
            false,
        ),
        (r#"{"options": ["a"], "multi_select": "yes"}"#, false),
        (r#"{"options": ["a"], "multi_select": true}"#, true),
    ] {
        assert_eq!(
            Question::parse(body.as_bytes(), None).unwrap().multi_select,
            multi,
            "{body}"
        );
    }
}
