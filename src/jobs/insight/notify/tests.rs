//! Which events a job gives at a chosen moment, and the ledger's promise: a key is sent once,
//! and the rate limit holds back but never drops.

use std::collections::HashSet;
use std::time::Duration as Std;

use chrono::{Duration as Ch, TimeZone};

use super::ledger::{Claimed, Ledger, Limits};
use super::*;
use crate::jobs::model::stop::StopRequest;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::{JobId, Meta};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
}

fn job(status: Status) -> Job {
    Job {
        meta: Some(Box::new(Meta {
            project: "musica".into(),
            task: "Run the \x1b[31mmigration\x1b[0m".into(),
            ..Meta::default()
        })),
        status,
        pid: Some(1),
        started: Some(t0()),
        log_len: 10,
        log_mtime: Some(t0()),
        ..Job::bare(
            JobId::parse("090000-ab12").unwrap(),
            "/srv/jobs/090000-ab12".into(),
        )
    }
}

fn question() -> Question {
    Question {
        id: "q3".into(),
        kind: QuestionType::Choice,
        question: "Which database?\x1b]0;pwned\x07".into(),
        options: vec!["production".into(), "staging".into()],
        context: String::new(),
        asked_at: Some(t0() + Ch::minutes(1)),
        timeout_minutes: None,
        default_if_timeout: None,
        note: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }
}

fn gate() -> Gate {
    Gate {
        id: "g2".into(),
        gate: "db_migration".into(),
        description: "migrate the production database".into(),
        context: String::new(),
        awaiting_since: Some(t0() + Ch::minutes(2)),
        auto_approve_after_minutes: None,
        allow_session: None,
    }
}

fn ended(status: Status, code: i32, stop: bool) -> Job {
    let mut j = job(status);
    j.exit_code = Some(code);
    j.finished = Some(t0() + Ch::minutes(3));
    j.stop = stop.then(StopRequest::default).map(Box::new);
    j
}

fn keys(j: &Job, rules: &AlarmRules, now: DateTime<Utc>) -> Vec<String> {
    events_of(j, rules, now, "here")
        .into_iter()
        .map(|e| e.key)
        .collect()
}

#[test]
fn each_kind_of_event_and_its_key() {
    let rules = AlarmRules {
        project_budgets: [("musica".to_string(), Std::from_secs(30 * 60))].into(),
        ..AlarmRules::default()
    };
    let soon = t0() + Ch::minutes(4);
    let asking = Job {
        question: Some(Box::new(question())),
        ..job(Status::Waiting)
    };
    let gated = Job {
        gate: Some(Box::new(gate())),
        ..job(Status::Waiting)
    };
    let stopped_for_input = Job {
        question: Some(Box::new(question())),
        ..ended(Status::NeedsInput, 100, false)
    };
    let orphaned = Job {
        question: Some(Box::new(question())),
        ..job(Status::Died)
    };
    let cases: Vec<(&str, Job, DateTime<Utc>, Vec<&str>)> = vec![
        ("running quietly", job(Status::Running), soon, vec![]),
        ("a question", asking, soon, vec!["090000-ab12:question:q3"]),
        ("a gate", gated, soon, vec!["090000-ab12:gate:g2"]),
        (
            "exit 100 with its question",
            stopped_for_input,
            soon,
            vec!["090000-ab12:question:q3"],
        ),
        (
            "a question nobody will read, and a death",
            orphaned,
            soon,
            vec!["090000-ab12:failed"],
        ),
        (
            "failed",
            ended(Status::Failed, 1, false),
            soon,
            vec!["090000-ab12:failed"],
        ),
        (
            "completed",
            ended(Status::Completed, 0, false),
            soon,
            vec![],
        ),
        (
            "killed by an operator is no failure",
            ended(Status::Killed, -15, true),
            soon,
            vec![],
        ),
        (
            "killed with nobody asking (the OOM killer)",
            ended(Status::Killed, -9, false),
            soon,
            vec!["090000-ab12:failed"],
        ),
        (
            "a failure older than a day is history",
            ended(Status::Failed, 2, false),
            t0() + Ch::minutes(3) + FAILED_HORIZON + Ch::seconds(1),
            vec![],
        ),
        (
            "stalled since 10 minutes after its last output",
            job(Status::Running),
            t0() + Ch::minutes(11),
            vec!["090000-ab12:stalled:1795252200"],
        ),
        (
            "over budget (and stalled) after 40 minutes",
            job(Status::Running),
            t0() + Ch::minutes(40),
            vec![
                "090000-ab12:stalled:1795252200",
                "090000-ab12:budget:1795253400",
            ],
        ),
        (
            "near budget is no event",
            Job {
                log_mtime: Some(t0() + Ch::minutes(25)),
                ..job(Status::Running)
            },
            t0() + Ch::minutes(26),
            vec![],
        ),
    ];
    for (what, j, now, want) in cases {
        assert_eq!(keys(&j, &rules, now), want, "{what}");
    }
}

#[test]
fn the_same_stall_keeps_its_key_and_a_new_one_gets_another() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Running);
    let first = keys(&j, &rules, t0() + Ch::minutes(11));
    assert_eq!(first, keys(&j, &rules, t0() + Ch::minutes(50)));
    j.log_mtime = Some(t0() + Ch::minutes(51));
    let second = keys(&j, &rules, t0() + Ch::minutes(62));
    assert_eq!(second.len(), 1);
    assert_ne!(first, second);
}

#[test]
fn agent_text_is_made_plain_and_the_event_says_how_to_answer() {
    let j = Job {
        question: Some(Box::new(question())),
        ..job(Status::Waiting)
    };
    let e = &events_of(&j, &AlarmRules::default(), t0() + Ch::minutes(4), "box")[0];
    assert_eq!(e.kind, Kind::Question);
    assert_eq!(e.question.as_deref(), Some("Which database?"));
    assert_eq!(e.task, "Run the migration");
    assert_eq!(e.options, ["production", "staging"]);
    assert_eq!(e.instance_id.as_deref(), Some("q3"));
    assert_eq!(e.at, "2026-11-21T09:01:00Z");
    assert_eq!(e.host, "box");
    assert!(
        e.body
            .contains("luzia answer 090000-ab12 --question q3 ANSWER"),
        "{}",
        e.body
    );
    let json = serde_json::to_value(e).unwrap();
    for field in [
        "kind", "key", "job_id", "project", "task", "title", "body", "question", "options",
        "job_dir", "host", "at",
    ] {
        assert!(json.get(field).is_some(), "{field} missing from {json}");
    }
    assert_eq!(json["kind"], "question");
}

#[test]
fn the_filter_takes_kinds_and_projects() {
    let j = Job {
        question: Some(Box::new(question())),
        ..job(Status::Waiting)
    };
    let e = &events_of(&j, &AlarmRules::default(), t0() + Ch::minutes(4), "h")[0];
    assert!(Filter::default().wants(e));
    let only_failed = Filter {
        kinds: [Kind::Failed].into(),
        projects: None,
    };
    assert!(!only_failed.wants(e));
    let other_project = Filter {
        projects: Some(["web".to_string()].into()),
        ..Filter::default()
    };
    assert!(!other_project.wants(e));
    assert_eq!(Kind::filterable("gate"), Some(Kind::Gate));
    assert_eq!(Kind::filterable("more"), None);
}

fn event(key: &str) -> Event {
    let mut e = Event::sample(t0(), "h");
    e.kind = Kind::Failed;
    e.key = key.into();
    e.title = format!("title of {key}");
    e
}

fn sent_keys(c: &Claimed) -> Vec<String> {
    c.send.iter().map(|e| e.key.clone()).collect()
}

#[test]
fn a_key_is_sent_once_whoever_looks_again() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_per_minute: 10 };
    let ledger = Ledger::new(dir.path());
    let first = ledger
        .claim(
            "/jobs",
            vec![event("a"), event("b")],
            None,
            limits,
            t0(),
            "h",
        )
        .unwrap();
    assert_eq!(sent_keys(&first), ["a", "b"]);
    // Another notifier (a new Ledger on the same directory) sees them as sent.
    let again = Ledger::new(dir.path())
        .claim(
            "/jobs",
            vec![event("a"), event("b"), event("c")],
            None,
            limits,
            t0(),
            "h",
        )
        .unwrap();
    assert_eq!(sent_keys(&again), ["c"]);
    // Another jobs root has keys of its own.
    let other = ledger
        .claim("/other", vec![event("a")], None, limits, t0(), "h")
        .unwrap();
    assert_eq!(sent_keys(&other), ["a"]);
}

#[test]
fn threads_claiming_at_once_send_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_per_minute: 1000,
    };
    let all: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    let events: Vec<Event> = (0..20).map(|i| event(&format!("k{i}"))).collect();
                    let c = Ledger::new(dir.path())
                        .claim("/jobs", events, None, limits, t0(), "h")
                        .unwrap();
                    sent_keys(&c)
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 20, "{all:?}");
    assert_eq!(unique.len(), 20);
}

#[test]
fn the_rate_limit_sums_up_and_holds_but_never_drops() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::new(dir.path());
    let limits = Limits { max_per_minute: 3 };
    let five: Vec<Event> = ["a", "b", "c", "d", "e"].map(event).into();
    let first = ledger.claim("/j", five, None, limits, t0(), "h").unwrap();
    // Two single events and one `more` for the other three.
    assert_eq!(first.send.len(), 3);
    assert_eq!(first.send[0].kind, Kind::More);
    let summed: Vec<&str> = first.send[0]
        .events
        .iter()
        .map(|b| b.key.as_str())
        .collect();
    assert_eq!(summed, ["c", "d", "e"]);
    assert!(first.send[0].title.starts_with("3 more"));
    assert_eq!(sent_keys(&first)[1..], ["a", "b"]);
    // Within the same minute nothing more may run: new events are held.
    let later = t0() + Ch::seconds(30);
    let held = ledger
        .claim("/j", vec![event("f"), event("g")], None, limits, later, "h")
        .unwrap();
    assert_eq!(
        held,
        Claimed {
            send: vec![],
            held: 2
        }
    );
    // A minute on, the held ones come as one `more`, and a new one fits beside it.
    let free = t0() + Ch::seconds(61);
    let flushed = ledger
        .claim("/j", vec![event("h")], None, limits, free, "h")
        .unwrap();
    assert_eq!(flushed.send.len(), 2);
    let summed: Vec<&str> = flushed.send[0]
        .events
        .iter()
        .map(|b| b.key.as_str())
        .collect();
    assert_eq!(summed, ["f", "g"]);
    assert_eq!(flushed.send[1].key, "h");
    // Nothing is left, and nothing is sent twice.
    let after = ledger
        .claim(
            "/j",
            ["a", "f", "h"].map(event).into(),
            None,
            limits,
            free + Ch::minutes(5),
            "h",
        )
        .unwrap();
    assert_eq!(after, Claimed::default());
}

#[test]
fn keys_no_longer_standing_are_forgotten_after_a_week() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::new(dir.path());
    let limits = Limits { max_per_minute: 10 };
    ledger
        .claim(
            "/j",
            vec![event("old"), event("kept")],
            None,
            limits,
            t0(),
            "h",
        )
        .unwrap();
    let standing: HashSet<String> = ["kept".to_string()].into();
    let week = t0() + Ch::days(8);
    ledger
        .claim("/j", vec![], Some(&standing), limits, week, "h")
        .unwrap();
    let text = std::fs::read_to_string(ledger.path()).unwrap();
    assert!(
        !text.contains("\"old\"") && text.contains("\"kept\""),
        "{text}"
    );
    // A standing key is still known: not sent again.
    let again = ledger
        .claim(
            "/j",
            vec![event("kept")],
            Some(&standing),
            limits,
            week,
            "h",
        )
        .unwrap();
    assert!(again.send.is_empty());
}

#[test]
fn a_corrupt_state_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(ledger::LEDGER_FILE), b"{not json").unwrap();
    let err = Ledger::new(dir.path())
        .claim(
            "/j",
            vec![event("a")],
            None,
            Limits { max_per_minute: 1 },
            t0(),
            "h",
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(ledger::LEDGER_FILE) && err.contains("move it aside"),
        "{err}"
    );
}

#[test]
fn a_failure_ends_with_its_last_lines_of_output_made_plain() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("output.log"),
        "one\ntwo\n\x1b[31mTraceback\x1b[0m\x1b]0;title\x07\nValueError: x\n\nexit:1\n",
    )
    .unwrap();
    assert_eq!(last_output(dir.path(), 2), ["Traceback", "ValueError: x"]);
    assert!(last_output(&dir.path().join("gone"), 5).is_empty());
}

/// A job the limit stopped at t0 + 3m, its reset at 10:00 UTC (Unix 1795255200).
fn limited() -> Job {
    let mut j = ended(Status::Limited, 1, false);
    if let Some(m) = j.meta.as_mut() {
        m.usage = Some(Box::new(crate::jobs::model::session::Usage {
            error: "Claude AI usage limit reached|1795255200".into(),
            ..Default::default()
        }));
    }
    j
}

#[test]
fn a_limit_stop_is_told_once_with_its_reset_and_its_resume_once() {
    let rules = AlarmRules::default();
    let reset = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap();
    let stopped = limited();
    let soon = t0() + Ch::minutes(4);
    let events = events_of(&stopped, &rules, soon, "here");
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(
        (e.kind, e.key.as_str()),
        (Kind::Limited, "090000-ab12:limited")
    );
    assert_eq!(e.resets_at.as_deref(), Some("2026-11-21T10:00:00Z"));
    assert_eq!(e.at, "2026-11-21T09:03:00Z");
    assert!(
        e.title.contains("stopped by the usage limit · resets "),
        "{}",
        e.title
    );
    assert!(
        e.body.contains("resets at 2026-11-21T10:00:00Z"),
        "{}",
        e.body
    );
    // The same at every look: one key for the stop.
    assert_eq!(
        keys(&stopped, &rules, reset - Ch::minutes(1)),
        ["090000-ab12:limited"]
    );

    let mut resumed = limited();
    if let Some(m) = resumed.meta.as_mut() {
        m.resumed_by = vec!["100001-cd34".into()];
    }
    let after = reset + Ch::minutes(1);
    let events = events_of(&resumed, &rules, after, "here");
    let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.key.clone())).collect();
    assert_eq!(
        kinds,
        [
            (Kind::Limited, "090000-ab12:limited".to_string()),
            (Kind::Resumed, "090000-ab12:resumed".to_string()),
        ]
    );
    assert!(
        events[1]
            .title
            .contains("resumed after the usage limit as 100001-cd34")
    );
    assert_eq!(events[1].resets_at.as_deref(), Some("2026-11-21T10:00:00Z"));

    // Long after: history, not news.
    assert!(keys(&resumed, &rules, reset + FAILED_HORIZON + Ch::seconds(1)).is_empty());
    // Not a failure, and no limit without a reset to tell.
    assert!(keys(&ended(Status::Limited, 1, false), &rules, soon).is_empty());
    assert!(Kind::filterable("limited").is_some() && Kind::filterable("resumed").is_some());
}
