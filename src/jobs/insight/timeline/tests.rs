use crate::jobs::fs::names::HISTORY_FILE;
use chrono::{Duration as Ch, TimeZone};
use serde_json::json;

use super::*;
use crate::jobs::insight::known_issues::scan_text;
use crate::jobs::{JobId, Meta};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
}

fn ts(min: i64) -> String {
    (t0() + Ch::minutes(min)).to_rfc3339()
}

fn finished_job() -> Job {
    Job {
        meta: Some(Box::new(Meta {
            project: "musica".into(),
            task: "Fix the \x1b]0;pwned\x07flaky test".into(),
            more: Some(Box::new(crate::jobs::model::meta::MetaMore {
                estimated_duration_seconds: Some(600),
                ..Default::default()
            })),
            ..Meta::default()
        })),
        status: Status::Failed,
        exit_code: Some(1),
        started: Some(t0()),
        finished: Some(t0() + Ch::minutes(20)),
        log_len: 10,
        log_mtime: Some(t0() + Ch::minutes(20)),
        ..Job::bare(JobId::parse("090000-ab12").unwrap(), "/nonexistent".into())
    }
}

#[test]
fn a_jobs_life_in_order_from_meta_history_issues_and_alarms() {
    let history = vec![
        json!({"progress": {"percent": 25.0, "step_name": "reading code"}, "at": ts(2)}),
        json!({"clarification": {"question": "Which DB?", "asked_at": ts(3)},
               "response": {"answer": "staging", "answered_by": "ana", "answered_at": ts(4), "source": "cli"},
               "archived_at": ts(4)}),
        json!({"approval": {"gate": "migrate", "description": "3 migrations", "awaiting_since": ts(5)},
               "decision": {"approved": false, "reason": "not today", "decided_by": "bo", "decided_at": ts(6)},
               "archived_at": ts(6)}),
        json!({"stale": {"answer": "x"}, "file": "response.json", "archived_at": ts(7)}),
    ];
    let set = PatternSet::builtin();
    let mut findings = scan_text(&set, b"ModuleNotFoundError: No module named 'psycopg'\n");
    std::sync::Arc::make_mut(&mut findings.found)[0].seen_at = Some(t0() + Ch::minutes(19));
    let job = finished_job();
    let events = job_timeline(
        &job,
        &history,
        Some((&findings, &set)),
        &AlarmRules::default(),
        t0() + Ch::hours(1),
    );
    let lines: Vec<String> = events
        .iter()
        .map(|e| {
            let m = (e.at.unwrap() - t0()).num_minutes();
            format!("{m:>2} {} {}", e.kind.label(), e.text)
        })
        .collect();
    assert_eq!(
        lines,
        [
            " 0 started started: Fix the flaky test",
            " 2 progress progress 25%: reading code",
            " 3 asked asked: Which DB?",
            " 4 answered answered by ana: staging",
            " 5 asked approval asked at gate migrate: 3 migrations",
            " 6 answered gate migrate denied by bo: not today",
            "10 alarm over budget: 200% of its 10m00s budget",
            "19 issue error python-module-not-found: ModuleNotFoundError: No module named 'psycopg'",
            "20 finished finished: failed (exit 1)",
        ]
    );
}

#[test]
fn a_timeout_answer_is_not_shown_as_a_person() {
    let r = json!({"clarification": {"question": "Go on?"},
                   "response": {"answer": "yes", "answered_by": "luzia", "source": "timeout"},
                   "archived_at": ts(9)});
    let events = history_events(&r, None);
    assert_eq!(events[1].text, "answered by the timeout's default: yes");
    assert_eq!(events[1].at, Some(t0() + Ch::minutes(9)));
    assert_eq!(events[0].at, None);
}

#[test]
fn a_torn_history_line_is_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(HISTORY_FILE),
        format!(
            "{}\n{{\"clarification\": {{\"quest\n[1,2]\n{}\n",
            json!({"progress": {"percent": 10}, "at": ts(1)}),
            json!({"progress": {"percent": 50}, "at": ts(2)})
        ),
    )
    .unwrap();
    let h = read_history(dir.path()).unwrap();
    assert_eq!(h.len(), 2);
    assert!(
        read_history(&dir.path().join("missing"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn notification_dates_are_inferred_back_across_midnight() {
    let written = Local
        .from_local_datetime(
            &chrono::NaiveDate::from_ymd_opt(2026, 11, 21)
                .unwrap()
                .and_hms_opt(0, 10, 0)
                .unwrap(),
        )
        .unwrap();
    let lines = [
        "[23:50:00] Agent 235000-aaaa finished (exit 0)",
        "garbage without a time",
        "[00:05:00] Agent 000500-bbbb finished (exit 1)",
    ];
    let events = dated_notifications(lines.iter().map(|l| (*l).into()), written);
    assert_eq!(events.len(), 3);
    let local = |e: &TimelineEvent| {
        e.at.unwrap()
            .with_timezone(&Local)
            .format("%d %H:%M")
            .to_string()
    };
    assert_eq!(local(&events[0]), "20 23:50");
    assert_eq!(events[0].job.as_ref().unwrap().as_str(), "235000-aaaa");
    assert_eq!(events[1].at, None);
    assert_eq!(local(&events[2]), "21 00:05");
    assert_eq!(events[2].text, "Agent 000500-bbbb finished (exit 1)");
}

#[test]
fn the_feed_is_newest_first_and_drops_notifications_about_jobs_it_already_shows() {
    let job = finished_job();
    let timeline = job_timeline(&job, &[], None, &AlarmRules::default(), t0() + Ch::hours(1));
    let notes = vec![
        TimelineEvent {
            at: Some(t0() + Ch::minutes(20)),
            job: Some(job.id.clone()),
            kind: EventKind::Notification,
            text: "Agent 090000-ab12 finished (exit 1)".into(),
        },
        TimelineEvent {
            at: Some(t0() + Ch::minutes(30)),
            job: None,
            kind: EventKind::Notification,
            text: "orchestrator restarted".into(),
        },
    ];
    let feed = recent_events(vec![timeline], notes, 3);
    let texts: Vec<&str> = feed.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "orchestrator restarted",
            "finished: failed (exit 1)",
            "over budget: 200% of its 10m00s budget"
        ]
    );
}

#[test]
fn a_requested_stop_is_an_event_before_the_killed_end() {
    let mut job = finished_job();
    job.status = Status::Killed;
    job.exit_code = Some(0);
    job.stop = Some(Box::new(crate::jobs::model::stop::StopRequest {
        requested_by: "ana@host".into(),
        requested_at: ts(19),
        source: "tui".into(),
    }));
    let events = job_timeline(&job, &[], None, &AlarmRules::default(), t0());
    let tail: Vec<(EventKind, &str)> = events
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|e| (e.kind, e.text.as_str()))
        .collect();
    assert_eq!(
        tail,
        [
            (EventKind::Stop, "stop requested by ana@host (tui)"),
            (EventKind::Finished, "finished: killed (exit 0)"),
        ]
    );
    assert_eq!(events[events.len() - 2].at, Some(t0() + Ch::minutes(19)));
}

#[test]
fn each_result_of_a_run_is_in_the_timeline_with_its_own_figures() {
    use crate::jobs::model::session::{RunResult, Usage};
    let result = |min: i64, turns: u64, cost: f64| RunResult {
        at: Some(t0() + Ch::minutes(min)),
        usage: Usage {
            turns: Some(turns),
            input_tokens: Some(1200),
            output_tokens: Some(40),
            cost_usd: Some(cost),
            outcome: "success".into(),
            ..Usage::default()
        },
    };
    let mut job = finished_job();
    let meta = job.meta.as_mut().unwrap();
    meta.results = vec![result(5, 3, 0.0302), result(19, 1, 0.0044)];
    let events = job_timeline(&job, &[], None, &AlarmRules::default(), t0() + Ch::hours(1));
    let shown: Vec<(EventKind, &str)> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Result | EventKind::Finished))
        .map(|e| (e.kind, e.text.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                EventKind::Result,
                "result 1 of 2: success · 3 turns · 1,200 in / 40 out tokens · $0.0302"
            ),
            (
                EventKind::Result,
                "result 2 of 2: success · 1 turn · 1,200 in / 40 out tokens · $0.0044"
            ),
            (EventKind::Finished, "finished: failed (exit 1)"),
        ]
    );
    assert_eq!(
        events
            .iter()
            .find(|e| e.kind == EventKind::Result)
            .unwrap()
            .at,
        Some(t0() + Ch::minutes(5))
    );

    // One result is just the result; one recorded without its time is placed at the end.
    let meta = job.meta.as_mut().unwrap();
    meta.results = vec![RunResult {
        at: None,
        ..result(0, 2, 0.01)
    }];
    let events = job_timeline(&job, &[], None, &AlarmRules::default(), t0() + Ch::hours(1));
    let one = events.iter().find(|e| e.kind == EventKind::Result).unwrap();
    assert_eq!(one.at, job.finished);
    assert!(
        one.text.starts_with("result: success · 2 turns"),
        "{}",
        one.text
    );
}
