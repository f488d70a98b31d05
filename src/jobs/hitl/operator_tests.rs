//! The operator's side: normalizing answers, and what a failed write says.
use super::*;

fn q(kind: QuestionType, options: &[&str]) -> Question {
    Question {
        id: "q1".into(),
        kind,
        question: "?".into(),
        options: options.iter().map(|s| s.to_string()).collect(),
        context: String::new(),
        asked_at: None,
        timeout_minutes: None,
        default_if_timeout: None,
        note: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }
}

#[test]
fn normalize_table() {
    let choice = q(QuestionType::Choice, &["production", "staging"]);
    let confirm = q(QuestionType::Confirm, &[]);
    let text = q(QuestionType::Text, &[]);
    let cases: &[(&Question, &str, Result<&str, &str>)] = &[
        (&choice, "staging", Ok("staging")),
        (&choice, " Staging ", Ok("staging")),
        (&choice, "2", Ok("staging")),
        (&choice, "1", Ok("production")),
        (&choice, "3", Err("1) production, 2) staging")),
        (&choice, "0", Err("not one of the options")),
        (&choice, "dev", Err("'dev' is not one of the options")),
        (&confirm, "Y", Ok("yes")),
        (&confirm, "no", Ok("no")),
        (&confirm, "maybe", Err("answer yes or no")),
        (&text, "  two\nlines ", Ok("  two\nlines ")),
        (&text, "   ", Err("empty")),
    ];
    for (question, input, want) in cases {
        match (normalize(question, input), want) {
            (Ok(got), Ok(w)) => assert_eq!(got, *w, "{input:?}"),
            (Err(got), Err(w)) => assert!(got.to_string().contains(w), "{input:?}: {got}"),
            (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_failed_write_keeps_its_io_error() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("j1");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    std::fs::write(dir.join(QUESTION_FILE), r#"{"id": "q1", "question": "?"}"#).unwrap();
    let id = crate::jobs::JobId::parse("j1").unwrap();
    let job = crate::jobs::read_job(root.path(), &id, Utc::now()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    match answer(&job, "yes", "cli", "me", Utc::now()) {
        Err(e @ AnswerError::Io { .. }) => {
            let kind = std::error::Error::source(&e)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .map(std::io::Error::kind);
            assert_eq!(kind, Some(std::io::ErrorKind::NotFound), "{e}");
            assert!(e.to_string().contains("cannot write the answer in"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn responses_round_trip_and_read_the_old_form() {
    let r = Response {
        question_id: "q2".into(),
        answer: "x".into(),
        answered_by: "a@b".into(),
        answered_at: "t".into(),
        source: "cli".into(),
        token: "t0".into(),
    };
    let bytes = serde_json::to_vec(&r).unwrap();
    assert_eq!(Response::parse(&bytes), Some(r));
    let old = Response::parse(br#"{"choice": "staging"}"#).unwrap();
    assert_eq!(
        (old.question_id.as_str(), old.answer.as_str()),
        ("q1", "staging")
    );
    assert_eq!(Response::parse(b"{}"), None);
    let d = Decision::parse(br#"{"gate": "g", "approved": false, "reason": "not now"}"#).unwrap();
    assert!(!d.approved);
    assert_eq!(d.reason, "not now");
    assert_eq!(
        Decision::parse(br#"{"gate": "g"}"#),
        None,
        "no decision without `approved`"
    );
}

#[test]
fn a_choice_of_several_takes_options_by_text_or_number_in_their_order() {
    let mut many = q(
        QuestionType::Choice,
        &["unit tests", "smoke, then load", "docs"],
    );
    many.multi_select = true;
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("docs", Ok("docs")),
        ("3,1", Ok("unit tests, docs")),
        ("docs, Unit Tests", Ok("unit tests, docs")),
        ("1, 1 ,", Ok("unit tests")),
        ("smoke, then load", Ok("smoke, then load")),
        ("docs, smoke, then load", Ok("smoke, then load, docs")),
        ("2,3", Ok("smoke, then load, docs")),
        ("4", Err("'4' is not one of the options")),
        ("docs, nope", Err("'nope' is not one of the options")),
        (" , ", Err("empty")),
    ];
    for (input, want) in cases {
        match (normalize(&many, input), want) {
            (Ok(got), Ok(w)) => assert_eq!(got, *w, "{input:?}"),
            (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{input:?}: {e}"),
            (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
        }
    }
    many.descriptions = vec!["fast".into(), String::new(), "the manual".into()];
    assert_eq!(
        many.numbered_options(", "),
        "1) unit tests (fast), 2) smoke, then load, 3) docs (the manual)"
    );
}

#[test]
fn the_operator_is_named_by_the_environment_else_by_the_uid() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let uid = || Some("ana".to_owned());
    assert_eq!(
        user_name(env(&[("USER", "bo"), ("LOGNAME", "cy")]), uid),
        "bo"
    );
    assert_eq!(user_name(env(&[("LOGNAME", "cy")]), uid), "cy");
    assert_eq!(user_name(env(&[]), uid), "ana", "no $USER: the uid's name");
    assert_eq!(
        user_name(env(&[("USER", "")]), uid),
        "ana",
        "an empty $USER says nothing"
    );
    assert_eq!(user_name(env(&[]), || None), "unknown");
}
