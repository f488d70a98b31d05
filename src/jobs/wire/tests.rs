use std::path::PathBuf;

use chrono::{Duration, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::commands::fixtures;
use crate::commands::jobs::job_json;
use crate::jobs::model::job::{Job, Problem};
use crate::jobs::model::lifecycle::{Answer, Exchange};
use crate::jobs::model::meta::Meta;
use crate::jobs::model::process::{ProcessRecord, Recorded};
use crate::jobs::model::review::{ChangeStat, Isolation, Review};
use crate::jobs::model::session::{Activity, Usage};
use crate::jobs::model::status::Status;
use crate::jobs::model::stop::StopRequest;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};

/// Every field of a job, through a line and back: what it was, keyed and placed as the reader
/// says. `Job` has no `PartialEq` (it is never compared at run time), so its parts are compared
/// one by one, and so is what `luzia jobs --json` makes of it.
fn assert_round_trip(job: &Job) {
    let line = encode(&Line::Job {
        change: Change::Added,
        job: Box::new(Record::of(job)),
        settled: Vec::new(),
    });
    assert!(!line.contains('\n'), "one line: {line}");
    let Ok(Line::Job {
        change,
        job: record,
        settled,
    }) = decode(&line)
    else {
        panic!("{line}")
    };
    assert_eq!(change, Change::Added);
    assert!(settled.is_empty(), "nothing settled said, none read");
    assert_eq!(record.id, job.id);
    let back = record.into_job(job.id.clone(), job.dir());
    let same = |a: &Job, b: &Job| {
        assert_eq!(a.id, b.id);
        assert_eq!(a.dir(), b.dir());
        assert_eq!(a.meta, b.meta, "{}", a.id);
        assert_eq!(a.status, b.status);
        assert_eq!(a.exit_code, b.exit_code);
        assert_eq!(a.pid, b.pid);
        assert_eq!(a.process_record, b.process_record);
        assert_eq!(a.progress, b.progress);
        assert_eq!(a.activity, b.activity);
        assert_eq!(a.question, b.question);
        assert_eq!(a.gate, b.gate);
        assert_eq!(a.started, b.started);
        assert_eq!(a.finished, b.finished);
        assert_eq!(a.log_len, b.log_len);
        assert_eq!(a.log_mtime, b.log_mtime);
        assert_eq!(a.queue_position, b.queue_position);
        assert_eq!(a.stop, b.stop);
        assert_eq!(a.exchange, b.exchange);
        assert_eq!(a.retried_by, b.retried_by);
        assert_eq!(a.problems, b.problems);
    };
    same(job, &back);
    let now = fixtures::now();
    assert_eq!(
        serde_json::to_string(&job_json(job, now)).unwrap(),
        serde_json::to_string(&job_json(&back, now)).unwrap()
    );
    // And the record itself survives a second trip unchanged (what `watch` compares).
    assert_eq!(Record::of(&back), Record::of(job));
}

#[test]
fn every_fixture_job_round_trips() {
    let jobs = fixtures::jobs();
    assert!(jobs.len() >= 6);
    for job in &jobs {
        assert_round_trip(job);
    }
}

/// A job with every optional part filled in, odd text included.
fn everything() -> Job {
    let t =
        Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap() + Duration::nanoseconds(123_456_789);
    let question = Question {
        id: "q7".into(),
        kind: QuestionType::Choice,
        question: "Which \"database\"?\n\x1b[31mred\x1b[0m ✓".into(),
        options: vec!["production".into(), "staging".into(), "".into()],
        context: "ctx".into(),
        asked_at: Some(t),
        timeout_minutes: Some(0.1 + 0.2),
        default_if_timeout: Some("staging".into()),
        note: Some("odd".into()),
        header: "Database".into(),
        descriptions: vec!["live".into(), "".into(), "the nightly copy".into()],
        multi_select: true,
    };
    let meta = Meta {
        id: "120000-full".into(),
        project: "musica".into(),
        task: "do\tit".into(),
        kind: "agent".into(),
        user: "ana".into(),
        pid: Some(77),
        started: Some(t),
        status: "running".into(),
        debug: true,
        finished: Some(t + Duration::seconds(5)),
        exit_code: Some(-9),
        more: Some(Box::new(crate::jobs::model::meta::MetaMore {
            estimated_duration_seconds: Some(600),
            priority: Some("high".into()),
            retry_of: "110000-old".into(),
            host: "gpu2".into(),
            agent: "claude".into(),
            cwd: "/srv/p".into(),
            supervised: true,
            stop: Some(Box::new(StopRequest {
                requested_by: "bo@h".into(),
                requested_at: "2026-11-23T12:00:01Z".into(),
                source: "tui".into(),
            })),
            session_id: "5f0c".into(),
            resumes: "100000-a".into(),
            usage: Some(Box::new(Usage {
                model: "m".into(),
                turns: Some(3),
                duration_ms: Some(1),
                input_tokens: Some(2),
                output_tokens: Some(3),
                cache_read_tokens: Some(4),
                cache_creation_tokens: Some(5),
                cost_usd: Some(1.0 / 3.0),
                outcome: "error_max_turns".into(),
                error: "API error".into(),
                resets_at: Some(chrono::DateTime::from_timestamp(1_795_453_212, 0).unwrap()),
            })),
            results: vec![crate::jobs::model::session::RunResult {
                at: Some(t),
                usage: Usage {
                    turns: Some(3),
                    cost_usd: Some(0.25),
                    ..Usage::default()
                },
            }],
            resumed_by: vec!["130000-b".into()],
            foreground: true,
            review: Some(Box::new(Review {
                isolation: Isolation::Worktree,
                repo: "/srv/p".into(),
                base: "abc".into(),
                after: "def".into(),
                worktree: "/srv/w".into(),
                branch: "luzia/120000-full".into(),
                changes: Some(ChangeStat {
                    files: 2,
                    added: 10,
                    removed: 1,
                }),
                note: "also changed outside".into(),
                error: "e".into(),
                include: vec![".env".into()],
                forced: "by bo@h".into(),
                pushed: "origin".into(),
                pr: "https://example.com/pr/1".into(),
                merges: "job x still merges cleanly".into(),
                outcome: "merged into main at abc".into(),
            })),
            checks: Some(Box::new(crate::jobs::model::checks::Checks {
                commands: vec!["cargo test".into()],
                state: crate::jobs::model::checks::CheckState::Failed,
                results: vec![crate::jobs::model::checks::CheckResult {
                    command: "cargo test".into(),
                    exit_code: Some(101),
                    seconds: 1.5,
                    tail: vec!["failed".into()],
                }],
                started: Some(t),
                finished: Some(t),
                note: String::new(),
            })),
            port: Some(20010),
            setup_error: "setup failed".into(),
        })),
    };
    Job {
        meta: Some(Box::new(meta)),
        status: Status::Waiting,
        exit_code: None,
        pid: Some(78),
        process_record: Some(Box::new(ProcessRecord {
            supervisor: Some(Recorded {
                pid: 78,
                start_ticks: 12345,
                boot_id: Some("b".into()),
            }),
            agent: Some(Recorded {
                pid: 79,
                start_ticks: 12346,
                boot_id: None,
            }),
            job: Some("a1".into()),
        })),
        progress: Some(Box::new(crate::jobs::Progress {
            percent: Some(33.3),
            step: Some(1),
            total_steps: Some(3),
            step_name: Some("one".into()),
            updated_at: Some(t),
            eta_seconds: Some(9),
        })),
        activity: Some(Box::new(Activity {
            what: "Bash: npm test".into(),
            since: Some(t),
        })),
        question: Some(Box::new(question.clone())),
        gate: Some(Box::new(Gate {
            id: "g-0123456789ab".into(),
            gate: "Bash".into(),
            description: "rm -rf build".into(),
            context: "{\"command\":\"rm -rf build\"}".into(),
            awaiting_since: Some(t),
            auto_approve_after_minutes: Some(2.5),
            allow_session: Some("Allow for this session".into()),
        })),
        started: Some(t),
        finished: None,
        log_len: u64::MAX,
        log_mtime: Some(t),
        queue_position: Some(3),
        stop: Some(Box::new(StopRequest::default())),
        exchange: Some(Box::new(Exchange {
            question,
            answer: Some(Answer {
                question_id: "q7".into(),
                answer: "staging, production".into(),
                answered_by: "ana@host".into(),
                answered_at: Some(t),
                source: "cli".into(),
            }),
        })),
        retried_by: Box::new([JobId::parse("130000-b").unwrap()]),
        problems: vec![Problem {
            path: "/srv/jobs/120000-full/progress.json".into(),
            message: "is not valid JSON".into(),
        }]
        .into(),
        ..Job::bare(
            JobId::parse("120000-full").unwrap(),
            PathBuf::from("/srv/jobs/120000-full"),
        )
    }
}

#[test]
fn a_job_with_every_part_round_trips() {
    assert_round_trip(&everything());
    let bare = Job::bare(JobId::parse("x").unwrap(), PathBuf::from("/r/x"));
    assert_round_trip(&bare);
    let mut queued = Job::bare(JobId::queued("00c885a0").unwrap(), PathBuf::from("/q/t"));
    queued.status = Status::Queued;
    queued.queue_position = Some(1);
    assert_round_trip(&queued);
    assert_round_trip(&Job::bare(JobId::queued_at(4), PathBuf::from("/q/u")));
    for kind in [QuestionType::Text, QuestionType::Confirm] {
        let mut job = everything();
        if let Some(q) = job.question.as_mut() {
            q.kind = kind;
        }
        assert_round_trip(&job);
    }
}

#[test]
fn jobs_read_from_real_directories_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let write = |id: &str, files: &[(&str, &str)]| {
        let dir = root.path().join(id);
        std::fs::create_dir(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    };
    let meta = r#"{"id": "a1", "project": "p", "task": "t", "pid": "999999", "argv": ["x"],
        "started": "2026-11-23T12:00:00Z", "usage": {"turns": 2, "cost_usd": 0.5},
        "review": {"isolation": "snapshot", "repo": "/r", "base": "b"}, "zzz": 1}"#;
    write(
        "a1",
        &[
            ("meta.json", meta),
            ("output.log", "hello\n"),
            (
                "approval.json",
                r#"{"gate": "deploy", "description": "go?"}"#,
            ),
            (
                "clarification.json",
                r#"{"question": "which?", "options": [{"label": "a", "description": "first"}, "b"]}"#,
            ),
            ("progress.json", r#"{"percent": "40%"}"#),
        ],
    );
    write(
        "b2",
        &[("meta.json", "{not json"), ("output.log", "x\nexit:100\n")],
    );
    write(
        "c3",
        &[
            ("meta.json", meta),
            ("output.log", "done\nexit:0\n"),
            ("stop.json", "[]"),
        ],
    );
    let jobs = crate::jobs::scan(root.path(), Utc::now()).unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(
        jobs.iter()
            .any(|j| j.gate.as_ref().is_some_and(|g| g.id.starts_with("g-")))
    );
    assert!(jobs.iter().any(|j| !j.problems.is_empty()));
    for job in &jobs {
        assert_round_trip(job);
    }
}

#[test]
fn each_line_type_is_written_as_the_protocol_says() {
    let at = Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 5).unwrap();
    let hello = Hello {
        protocol: PROTOCOL,
        luzia: "0.1.0".into(),
        host: "gpu2".into(),
        root: "/srv/jobs".into(),
        projects: vec!["a".into(), "b".into()],
        heartbeat_secs: 5,
    };
    let cases = [
        (
            Line::Hello(hello),
            r#"{"type":"hello","protocol":1,"luzia":"0.1.0","host":"gpu2","root":"/srv/jobs","projects":["a","b"],"heartbeat_secs":5}"#,
        ),
        (Line::Synced { jobs: 3 }, r#"{"type":"synced","jobs":3}"#),
        (
            Line::Gone {
                id: JobId::parse("a1").unwrap(),
            },
            r#"{"type":"gone","id":"a1"}"#,
        ),
        (
            Line::Heartbeat { at },
            r#"{"type":"heartbeat","at":"2026-11-23T12:00:05Z"}"#,
        ),
        (
            Line::Error {
                message: "cannot read".into(),
            },
            r#"{"type":"error","message":"cannot read"}"#,
        ),
        (
            Line::Job {
                change: Change::Raised,
                job: Box::new(Record::of(&Job::bare(
                    JobId::parse("a1").unwrap(),
                    "/x".into(),
                ))),
                settled: Vec::new(),
            },
            r#"{"type":"job","change":"raised","job":{"id":"a1","status":"unknown","log_len":0}}"#,
        ),
    ];
    for (line, text) in cases {
        assert_eq!(encode(&line), text);
        assert_eq!(decode(text).unwrap(), line);
        assert_eq!(
            decode(&format!("{text}\n")).unwrap(),
            line,
            "a newline is fine"
        );
    }
}

#[test]
fn a_newer_writer_s_lines_are_read_or_skipped() {
    assert_eq!(
        decode(r#"{"type":"weather","sunny":true}"#).unwrap(),
        Line::Unknown
    );
    let line = decode(
        r#"{"type":"job","change":"moved","extra":1,"job":{"id":"a1","status":"hibernating",
            "log_len":5,"shiny":{"x":[1]},"meta":{"project":"p","new":true},
            "question":{"id":"q1","type":"slider","question":"how much?"},
            "retried_by":["b2","../etc"]},
            "settled":[{"kind":"poll","id":"p1","how":"voted","by":"x"},
                       {"kind":"question","id":"q0","how":"answered","by":"ana@b","source":"cli",
                        "text":"yes","when":"later"}]}"#,
    )
    .unwrap();
    let Line::Job {
        change,
        job,
        settled,
    } = line
    else {
        panic!("{line:?}")
    };
    assert_eq!(change, Change::Changed, "an unknown change is a change");
    assert_eq!(job.status, Status::Unknown);
    assert_eq!(job.log_len, 5);
    assert_eq!(job.meta.unwrap().project, "p");
    assert_eq!(job.question.unwrap().kind, QuestionType::Text);
    assert_eq!(job.retried_by, [JobId::parse("b2").unwrap()]);
    assert_eq!(
        (settled[0].kind, settled[0].how),
        (Pending::Unknown, How::Unknown),
        "an unknown settlement is read as one, not refused"
    );
    assert_eq!(
        (
            settled[1].how,
            settled[1].by.as_str(),
            settled[1].text.as_str()
        ),
        (How::Answered, "ana@b", "yes")
    );
    assert_eq!(settled[1].scope, Covers::Once, "no scope: the one request");
    let scoped = |scope: &str| {
        let line = format!(
            r#"{{"type":"job","change":"settled","job":{{"id":"a1","status":"running","log_len":0}},
                "settled":[{{"kind":"gate","id":"g1","how":"approved","scope":{scope}}}]}}"#
        );
        match decode(&line).unwrap() {
            Line::Job { settled, .. } => settled[0].scope,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(scoped(r#""session""#), Covers::Session);
    assert_eq!(
        scoped(r#""forever""#),
        Covers::Unknown,
        "a newer scope is read"
    );
    let hello = decode(r#"{"type":"hello","protocol":2,"luzia":"9.0.0","quic":true}"#).unwrap();
    assert!(matches!(hello, Line::Hello(Hello { protocol: 2, ref luzia, .. }) if luzia == "9.0.0"));
}

#[test]
fn what_is_not_a_line_is_an_error_that_says_so() {
    for bad in [
        "",
        "not json",
        "[1,2]",
        "{}",
        r#"{"type":7}"#,
        r#"{"type":"gone","id":"../../etc"}"#,
        r#"{"type":"job","change":"added"}"#,
        r#"{"type":"job","change":"added","job":{"id":"a","log_len":-1}}"#,
        r#"{"type":"synced","jobs":"many"}"#,
    ] {
        let e = decode(bad).unwrap_err().to_string();
        assert!(e.contains("luzia watch --json"), "{bad}: {e}");
    }
}

#[test]
fn a_record_compares_by_what_is_shown() {
    let job = everything();
    let mut grown = job.clone();
    grown.log_len -= 1;
    assert_ne!(Record::of(&job), Record::of(&grown));
    assert_eq!(
        Record::of(&job).pending(),
        [Some("q7"), Some("g-0123456789ab")]
    );
    let json = serde_json::to_value(Record::of(&job)).unwrap();
    assert_eq!(json["meta"]["type"], json!("agent"));
    assert_eq!(json["question"]["type"], json!("choice"));
    assert_eq!(
        json["problems"][0]["path"],
        json!("/srv/jobs/120000-full/progress.json")
    );
}

proptest! {
    #[test]
    fn decoding_any_text_never_panics(s in any::<String>()) {
        let _ = decode(&s);
    }

    #[test]
    fn decoding_any_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn decoding_json_shaped_lines_never_panics(
        kind in prop::sample::select(vec!["hello", "job", "synced", "gone", "heartbeat", "error", "x"]),
        body in "[-\\[\\]{}\":,a-z0-9 .]{0,200}",
    ) {
        let _ = decode(&format!(r#"{{"type":"{kind}",{body}"#));
        let _ = decode(&format!(r#"{{"type":"job","change":"added","job":{{{body}}}}}"#));
    }

    #[test]
    fn any_text_in_a_job_survives_the_trip(task in any::<String>(), what in any::<String>(), len in any::<u64>()) {
        let mut job = everything();
        if let Some(m) = job.meta.as_mut() {
            m.task = task.into();
        }
        job.activity = Some(Box::new(Activity { what, since: None }));
        job.log_len = len;
        let back = decode(&encode(&Line::Job { change: Change::Changed, job: Box::new(Record::of(&job)), settled: Vec::new() })).unwrap();
        prop_assert_eq!(back, Line::Job { change: Change::Changed, job: Box::new(Record::of(&job)), settled: Vec::new() });
    }
}
