//! The report against jobs built in memory (and logs on disk where scanning is the point), with
//! a chosen clock.

use chrono::{Duration as Ch, TimeZone};

use super::*;
use crate::jobs::insight::alarms::AlarmKind;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::{Meta, Progress};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
}

fn job(id: &str, project: &str, status: Status, started_min: i64) -> Job {
    Job {
        meta: Some(Box::new(Meta {
            project: project.into(),
            task: "a task".into(),
            ..Meta::default()
        })),
        status,
        started: Some(t0() + Ch::minutes(started_min)),
        log_mtime: Some(t0() + Ch::minutes(started_min)),
        ..Job::bare(
            JobId::parse(id).unwrap(),
            format!("/nonexistent/{id}").into(),
        )
    }
}

fn question(text: &str, asked_min: i64) -> Question {
    Question {
        id: "q1".into(),
        kind: QuestionType::Choice,
        question: text.into(),
        options: vec!["production".into(), "sta\x1b[2Jging".into()],
        context: String::new(),
        asked_at: Some(t0() + Ch::minutes(asked_min)),
        timeout_minutes: None,
        default_if_timeout: None,
        note: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }
}

fn load(used_percent: u64) -> SystemLoad {
    SystemLoad {
        mem_total_kib: 1000,
        mem_available_kib: 1000 - used_percent * 10,
        load1: 0.5,
        cores: 4,
    }
}

fn report(jobs: &[Job], cache: &IssueCache, set: &PatternSet, now: DateTime<Utc>) -> Report {
    build(Sources {
        jobs_root: Path::new("/srv/jobs"),
        project: None,
        note: None,
        jobs,
        queued: 2,
        cache,
        set,
        rules: &AlarmRules::default(),
        system: Ok(load(50)),
        recent: Vec::new(),
        now,
    })
}

#[test]
fn counts_every_status_and_the_queue() {
    let statuses = [
        Status::Running,
        Status::Running,
        Status::Waiting,
        Status::NeedsInput,
        Status::Completed,
        Status::Failed,
        Status::Died,
        Status::Killed,
        Status::Unknown,
    ];
    let jobs: Vec<Job> = statuses
        .iter()
        .enumerate()
        .map(|(i, s)| job(&format!("j{i}"), "p", *s, 0))
        .collect();
    let c = Counts::of(&jobs, 3);
    assert_eq!(
        c,
        Counts {
            running: 2,
            waiting: 1,
            needs_input: 1,
            limited: 0,
            queued: 3,
            completed: 1,
            failed: 1,
            checks_failed: 0,
            died: 1,
            killed: 1,
            unknown: 1,
        }
    );
    let total: usize = c.by_status().iter().map(|(_, n)| n).sum();
    assert_eq!(total, 12);
    assert_eq!(c.by_status()[2], (Status::NeedsInput, 1));
}

#[test]
fn live_jobs_are_scanned_first_then_the_feed_each_once() {
    let mut jobs = vec![
        job("done-new", "p", Status::Completed, 50),
        job("live-old", "p", Status::Running, 0),
        job("asking", "p", Status::Waiting, 10),
        job("stopped", "p", Status::NeedsInput, 20),
        job("done-old", "p", Status::Failed, 5),
    ];
    jobs[0].finished = Some(t0() + Ch::minutes(55));
    let ids: Vec<&str> = jobs_to_scan(&jobs).iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        ["live-old", "asking", "stopped", "done-new", "done-old"]
    );
}

#[test]
fn the_issue_cache_reads_only_new_bytes_and_forgets_jobs_no_longer_shown() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job("scan-me", "p", Status::Running, 0);
    j.set_dir(dir.path().into());
    let log = j.log_path();
    let first = "building\nModuleNotFoundError: No module named 'yaml'\n";
    std::fs::write(&log, first).unwrap();
    let set = PatternSet::builtin();
    let mut cache = IssueCache::new();
    assert!(cache.refresh(&[&j], &set).is_empty());
    assert_eq!(cache.bytes_scanned(), first.len() as u64);
    let found = cache.findings(&j.id).unwrap();
    assert_eq!(
        set.pattern(found.worst().unwrap().pattern).name,
        "python-module-not-found"
    );

    // Nothing new: nothing read.
    cache.refresh(&[&j], &set);
    assert_eq!(cache.bytes_scanned(), first.len() as u64);

    let more = "ModuleNotFoundError: No module named 'requests'\n";
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, more.as_bytes()).unwrap();
    cache.refresh(&[&j], &set);
    assert_eq!(cache.bytes_scanned(), (first.len() + more.len()) as u64);
    let worst = cache.findings(&j.id).unwrap().worst().unwrap().clone();
    assert_eq!(worst.count, 2);
    assert!(worst.last_line.contains("requests"), "{worst:?}");

    cache.refresh(&[], &set);
    assert!(cache.findings(&j.id).is_none());
}

#[test]
fn rows_carry_progress_estimates_questions_alarms_and_plain_text() {
    let now = t0() + Ch::minutes(30);
    let mut bar = job("with-bar", "musica", Status::Running, 25);
    bar.progress = Some(Box::new(Progress {
        step: Some(2),
        total_steps: Some(5),
        step_name: Some("Run\x1b]0;pwned\x07ning tests".into()),
        ..Progress::default()
    }));
    let mut est = job("estimated", "musica", Status::Running, 25);
    est.meta.as_mut().unwrap().estimated_duration_seconds = Some(600);
    let silent = job("silent", "librec", Status::Running, 0);
    let mut asks = job("asks", "musica", Status::Waiting, 0);
    asks.question = Some(Box::new(question("Which\x1b[31m database?\u{202e}", 20)));
    let mut gated = job("gated", "musica", Status::Waiting, 0);
    gated.gate = Some(Box::new(Gate {
        id: "g1".into(),
        gate: "migrate".into(),
        description: "3 migrations\non staging".into(),
        context: String::new(),
        awaiting_since: Some(t0() + Ch::minutes(2)),
        auto_approve_after_minutes: None,
        allow_session: None,
    }));
    let jobs = vec![bar, est, silent, asks, gated];
    let set = PatternSet::builtin();
    let r = report(&jobs, &IssueCache::new(), &set, now);

    assert_eq!(r.counts.running, 3);
    assert_eq!(r.counts.queued, 2);
    let running: Vec<(&str, Option<f64>, bool, &str)> = r
        .running
        .iter()
        .map(|row| {
            (
                row.id.as_str(),
                row.percent,
                row.estimated,
                row.step.as_str(),
            )
        })
        .collect();
    assert_eq!(
        running,
        [
            ("with-bar", Some(40.0), false, "2/5 Running tests"),
            ("estimated", Some(50.0), true, ""),
            ("silent", None, false, ""),
        ]
    );
    assert_eq!(
        r.running[2].alarm.as_ref().map(|a| a.kind),
        Some(AlarmKind::Stalled)
    );

    // Oldest question first; agent text arrives plain.
    let waiting: Vec<(&str, &str)> = r
        .waiting
        .iter()
        .map(|w| (w.id.as_str(), w.text.as_str()))
        .collect();
    assert_eq!(
        waiting,
        [
            ("gated", "gate migrate: 3 migrations on staging"),
            ("asks", "Which database?"),
        ]
    );
    assert_eq!(r.waiting[1].options, ["production", "staging"]);

    // Every alarm: the stalled job, and the approval waiting 28 minutes (the question waits 10).
    let alarms: Vec<(&str, AlarmKind)> = r
        .alarms
        .iter()
        .map(|a| (a.id.as_str(), a.alarm.kind))
        .collect();
    assert_eq!(
        alarms,
        [
            ("silent", AlarmKind::Stalled),
            ("gated", AlarmKind::QuestionWaiting),
            ("asks", AlarmKind::QuestionWaiting),
        ]
    );
    assert_eq!(r.alert_count(), 3);
}

#[test]
fn alerts_keep_alarms_system_alerts_and_serious_issues_of_live_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut jobs = Vec::new();
    for (id, status, line) in [
        (
            "live-error",
            Status::Running,
            "ModuleNotFoundError: No module named 'x'",
        ),
        (
            "done-error",
            Status::Failed,
            "ModuleNotFoundError: No module named 'y'",
        ),
    ] {
        let mut j = job(id, "p", status, 29);
        j.set_dir(dir.path().join(id));
        std::fs::create_dir(j.dir()).unwrap();
        std::fs::write(j.log_path(), format!("{line}\n")).unwrap();
        jobs.push(j);
    }
    let set = PatternSet::builtin();
    let mut cache = IssueCache::new();
    cache.refresh(&jobs_to_scan(&jobs), &set);
    let now = t0() + Ch::minutes(30);
    let r = report(&jobs, &cache, &set, now);
    assert_eq!(r.issues.len(), 2);
    assert_eq!(
        r.running[0].issue.as_ref().unwrap().1,
        "python-module-not-found"
    );
    assert_eq!(r.alert_count(), 1, "only the live job's issue is an alert");

    let mut r = r;
    r.system = SystemSection::new(Ok(load(90)), 80);
    assert_eq!(r.system.alerts.len(), 1);
    let alerts = r.into_alerts();
    assert!(alerts.alerts_only && alerts.running.is_empty() && alerts.recent.is_empty());
    let ids: Vec<&str> = alerts.issues.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["live-error"]);
    assert_eq!(alerts.alert_count(), 2);
}

#[test]
fn an_unknown_project_is_told_with_the_known_ones() {
    let jobs = vec![
        job("a", "musica", Status::Running, 0),
        job("b", "libr\x1b[2Jec", Status::Failed, 0),
        job("c", "", Status::Failed, 0),
    ];
    assert!(filter_project(jobs.clone(), Some("nope")).is_empty());
    assert_eq!(filter_project(jobs.clone(), Some("musica")).len(), 1);
    assert_eq!(filter_project(jobs.clone(), None).len(), 3);
    assert_eq!(
        project_note("nope", &jobs, &["overbits".into()]),
        "no jobs of project 'nope' (known projects: librec, musica, overbits)"
    );
    assert_eq!(
        project_note("x", &[], &[]),
        "no jobs of project 'x' (no project has any)"
    );
}

#[test]
fn a_project_feed_leaves_out_the_notifications_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("notifications.log");
    std::fs::write(&log, "[09:10:00] Agent 091000-ffff finished (exit 0)\n").unwrap();
    let jobs = vec![job("090000-ab12", "musica", Status::Running, 0)];
    let set = PatternSet::builtin();
    let rules = AlarmRules::default();
    let cache = IssueCache::new();
    let now = Utc::now();
    let texts = |notes: Option<&Path>| -> Vec<String> {
        let issues = |job: &Job| cache.findings(&job.id).cloned();
        let (events, problems) = timeline::feed(&jobs, &issues, &set, &rules, notes, now, 10, true);
        assert!(problems.is_empty(), "{problems:?}");
        events.into_iter().map(|e| e.text).collect()
    };
    let all = texts(Some(&log));
    assert!(
        all.iter().any(|t| t.contains("091000-ffff")),
        "the log is read without a project: {all:?}"
    );
    let project = texts(None);
    assert!(
        !project.iter().any(|t| t.contains("091000-ffff")),
        "{project:?}"
    );
    assert!(
        project.iter().any(|t| t.starts_with("started:")),
        "{project:?}"
    );
}

#[test]
fn a_stopped_job_shows_its_answer_until_retried_then_leaves_waiting() {
    use crate::jobs::model::lifecycle::{Answer, Exchange};
    let now = t0() + Ch::minutes(60);
    let mut asked = job("110000-asks", "p", Status::NeedsInput, 0);
    asked.exchange = Some(Box::new(Exchange {
        question: question("Which database?", 5),
        answer: None,
    }));
    asked.question = asked
        .exchange
        .as_deref()
        .map(|e| e.question.clone())
        .map(Box::new);
    let mut answered = job("110500-answ", "p", Status::NeedsInput, 5);
    answered.exchange = Some(Box::new(Exchange {
        question: question("Which tables?", 8),
        answer: Some(Answer {
            question_id: "q1".into(),
            answer: "no\x1b[2Jne".into(),
            answered_by: "ana@host".into(),
            answered_at: Some(t0() + Ch::minutes(30)),
            source: "tui".into(),
        }),
    }));
    let mut retried = answered.clone();
    retried.id = JobId::parse("111000-retr").unwrap();
    retried.retried_by = Box::new([JobId::parse("120000-next").unwrap()]);
    let bare = job("111500-bare", "p", Status::NeedsInput, 10);
    let r = report(
        &[asked, answered, retried, bare],
        &IssueCache::default(),
        &PatternSet::builtin(),
        now,
    );
    let rows: Vec<(&str, &str, Option<&str>)> = r
        .waiting
        .iter()
        .map(|w| {
            let answer = w.answer.as_ref().map(|a| a.answer.as_str());
            (w.id.as_str(), w.text.as_str(), answer)
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("110000-asks", "Which database?", None),
            ("110500-answ", "Which tables?", Some("none")),
            (
                "111500-bare",
                "stopped needing input without writing a question: see its log, then retry",
                None
            ),
        ]
    );
    assert!(r.waiting.iter().all(|w| w.stopped));
}
