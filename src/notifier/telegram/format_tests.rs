//! The bridge's words: who answered, a gate's message and buttons, another host's settlement.

use super::*;

fn response(source: &str, by: &str) -> Response {
    Response {
        question_id: "q1".into(),
        answer: "staging".into(),
        answered_by: by.into(),
        answered_at: String::new(),
        source: source.into(),
        token: String::new(),
    }
}

#[test]
fn who_answered_is_said_in_the_chat_s_words() {
    let bruno = User {
        id: 111,
        username: Some("bruno".into()),
        first_name: "Bruno".into(),
    };
    assert_eq!(bruno.recorded(), "telegram:@bruno (111)");
    let nameless = User {
        username: None,
        ..bruno.clone()
    };
    assert_eq!(nameless.recorded(), "telegram:Bruno (111)");
    let cases = [
        (
            response("tui", "bruno@host"),
            "answered in the cockpit by bruno@host: 'staging'",
        ),
        (
            response("telegram", "telegram:@bruno (111)"),
            "answered by @bruno from Telegram: 'staging'",
        ),
        (
            response("timeout", "agent"),
            "the agent took the default: 'staging'",
        ),
    ];
    for (r, want) in cases {
        assert_eq!(answered(&r), want);
    }
    let d = Decision {
        gate: "deploy".into(),
        gate_id: "g1".into(),
        approved: false,
        reason: "not on friday".into(),
        decided_by: "telegram:@bruno (111)".into(),
        decided_at: String::new(),
        source: "telegram".into(),
        token: String::new(),
        scope: Default::default(),
    };
    assert_eq!(
        decided(&d),
        "denied by @bruno from Telegram: 'not on friday'"
    );
    let session = Decision {
        approved: true,
        reason: String::new(),
        source: "tui".into(),
        decided_by: "bruno@host".into(),
        scope: Scope::Session,
        ..d
    };
    assert_eq!(
        decided(&session),
        "approved for the session in the cockpit by bruno@host"
    );
}

fn gated(allow_session: Option<&str>) -> (Job, Gate) {
    let gate = Gate {
        id: "g1".into(),
        gate: "shell".into(),
        description: "Run make test".into(),
        context: String::new(),
        awaiting_since: None,
        auto_approve_after_minutes: None,
        allow_session: allow_session.map(str::to_owned),
    };
    let id = crate::jobs::JobId::parse("160000-aaaa").unwrap();
    (Job::bare(id, "/nowhere".into()), gate)
}

fn labels(keyboard: &Value) -> Vec<(String, String)> {
    let rows = keyboard["inline_keyboard"].as_array().unwrap();
    rows.iter()
        .flat_map(|r| r.as_array().unwrap())
        .map(|b| {
            let (t, d) = (&b["text"], &b["callback_data"]);
            (t.as_str().unwrap().into(), d.as_str().unwrap().into())
        })
        .collect()
}

#[test]
fn a_gate_offering_the_session_says_what_it_covers_and_has_its_button() {
    let now = Utc::now();
    let (job, once) = gated(None);
    let (text, countdown) = gate_text(&job, &once, now);
    assert!(countdown.is_none(), "it waits until someone decides");
    assert!(
        text.ends_with("\nApprove or Deny. To deny with a reason, reply to this message with it.")
    );
    assert!(!text.contains("session"), "{text}");
    let once = labels(&gate_keyboard(7, false));
    assert_eq!(
        once,
        [
            ("✅ Approve".into(), "7:a".into()),
            ("⛔ Deny".into(), "7:d".into())
        ]
    );

    let (job, session) = gated(Some("Always allow make\x1b]0;x\x07"));
    let (text, _) = gate_text(&job, &session, now);
    assert!(
        text.contains("It may be approved for the session: 'Always allow make'\n"),
        "the agent's words, made plain: {text}"
    );
    assert!(text.contains("Approve (this request), Approve for session, or Deny"));
    let (_, nothing_said) = gated(Some(" "));
    assert!(
        gate_text(&job, &nothing_said, now)
            .0
            .contains("for the session: the agent then stops asking for requests like this one")
    );
    let keys = labels(&gate_keyboard(7, true));
    assert_eq!(keys[..2], once[..], "Approve and Deny where they were");
    assert_eq!(keys[2], ("✅ Approve for session".into(), "7:s".into()));
    assert_eq!(
        gate_keyboard(7, true)["inline_keyboard"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "a row of its own"
    );
}

#[test]
fn a_session_approval_on_another_host_is_said_so_and_an_older_host_s_plainly() {
    let mut s: Settlement = serde_json::from_value(serde_json::json!({"kind": "gate",
        "id": "g1", "how": "approved", "by": "bruno@b", "source": "cli"}))
    .unwrap();
    let plain = settlement_words(&s).unwrap();
    assert_eq!(plain, "approved at the command line by bruno@b");
    s.scope = Covers::Session;
    assert_eq!(
        settlement_words(&s).unwrap(),
        "approved for the session at the command line by bruno@b"
    );
    s.scope = Covers::Unknown;
    assert_eq!(
        settlement_words(&s).unwrap(),
        plain,
        "a newer scope: approved, as is true"
    );
    s.how = How::Denied;
    s.scope = Covers::Session;
    s.text = "no".into();
    assert_eq!(
        settlement_words(&s).unwrap(),
        "denied at the command line by bruno@b: 'no'"
    );
}

#[test]
fn the_time_left_is_said_to_the_minute_then_ten_minutes_then_the_hour_rounded_up() {
    let ms = chrono::Duration::milliseconds;
    let s = chrono::Duration::seconds;
    let rows = [
        (s(-5), "time is up"),
        (s(0), "time is up"),
        (ms(1), "within a minute"),
        (s(60), "within a minute"),
        (ms(60_001), "in 2m"),
        (s(1799), "in 30m"),
        (s(1800), "in 30m"),
        (s(3600), "in 1h00m"),
        (ms(3_600_001), "in 1h10m"),
        (s(24 * 3600), "in 1d00h"),
        (s(24 * 3600 + 1), "in 1d01h"),
        (s(3 * 86_400 + 5 * 3600), "in 3d05h"),
    ];
    for (left, want) in rows {
        assert_eq!(time_left(left), want, "{left}");
    }
    let rows = [
        (s(0), None),
        (s(60), Some(s(60))),
        (ms(60_001), Some(ms(1))),
        (s(1799), Some(s(59))),
        (s(3 * 3600), Some(s(600))),
        (s(2 * 86_400), Some(s(3600))),
    ];
    for (left, want) in rows {
        assert_eq!(time_left_changes_in(left), want, "{left}");
    }
}

proptest::proptest! {
    /// The words change exactly when said, and then not again for at least a minute: a
    /// countdown is never edited more often than that for its words.
    #[test]
    fn the_time_left_changes_when_said_and_at_most_once_a_minute(left in 1i64..400_000_000) {
        let left = chrono::Duration::milliseconds(left);
        let change = time_left_changes_in(left).unwrap();
        let at = left - change;
        proptest::prop_assert!(change > chrono::Duration::zero());
        proptest::prop_assert_eq!(time_left(at + chrono::Duration::milliseconds(1)), time_left(left));
        proptest::prop_assert_ne!(time_left(at), time_left(left));
        if let Some(next) = time_left_changes_in(at) {
            proptest::prop_assert!(next >= chrono::Duration::seconds(60), "{} then {}", at, next);
        }
    }
}

#[test]
fn a_question_with_a_default_says_how_soon_and_how_long_it_has_waited() {
    let id = crate::jobs::JobId::parse("160000-aaaa").unwrap();
    let job = Job::bare(id, "/nowhere".into());
    let q = Question::parse(
        br#"{"id": "q1", "question": "Which database?", "options": ["production", "staging"],
            "asked_at": "2026-01-11T14:30:00Z", "timeout_minutes": 30,
            "default_if_timeout": "staging"}"#,
        None,
    )
    .unwrap();
    let now = q.asked_at.unwrap() + chrono::Duration::seconds(125);
    let (text, countdown) = question_text(&job, &q, now);
    let c = countdown.expect("a default and a deadline: a countdown");
    assert_eq!(c.shown, "in 28m");
    assert_eq!(
        &text[c.at..c.at + c.len],
        "Waiting since 14:30 UTC (2m ago)\nIf nobody answers, the agent takes 'staging' at \
         15:00 UTC (in 28m)\n"
    );
    let no_default = Question {
        default_if_timeout: None,
        ..q
    };
    let (text, countdown) = question_text(&job, &no_default, now);
    assert!(countdown.is_none());
    assert!(
        text.contains("Waiting since 14:30 UTC (2m ago)\n\nTap an option"),
        "{text}"
    );
}
