//! Every rule against a controlled clock: the job is built in memory, `now` is chosen.

use chrono::{Duration as Ch, TimeZone};

use super::*;
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::{JobId, Meta, Progress};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
}

fn job(status: Status) -> Job {
    Job {
        meta: Some(Box::new(Meta {
            project: "musica".into(),
            ..Meta::default()
        })),
        status,
        pid: Some(1),
        started: Some(t0()),
        log_len: 10,
        log_mtime: Some(t0()),
        ..Job::bare(
            JobId::parse("090000-ab12").unwrap(),
            "/nonexistent/090000-ab12".into(),
        )
    }
}

fn kinds(alarms: &[Alarm]) -> Vec<AlarmKind> {
    alarms.iter().map(|a| a.kind).collect()
}

#[test]
fn stalled_after_ten_minutes_of_silence_and_not_a_second_before() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Running);
    j.log_mtime = Some(t0() + Ch::minutes(5));
    let at = |m: i64, s: i64| job_alarms(&j, &rules, t0() + Ch::minutes(m) + Ch::seconds(s));
    assert!(at(14, 59).is_empty());
    let raised = at(15, 0);
    assert_eq!(kinds(&raised), [AlarmKind::Stalled]);
    assert_eq!(raised[0].since, t0() + Ch::minutes(15));
    assert_eq!(raised[0].detail, "no output or progress for 10m00s");
}

#[test]
fn progress_is_a_sign_of_life_even_without_output() {
    let rules = AlarmRules {
        stall_after: std::time::Duration::from_secs(60),
        ..AlarmRules::default()
    };
    let mut j = job(Status::Running);
    j.progress = Some(Box::new(Progress {
        percent: Some(50.0),
        updated_at: Some(t0() + Ch::minutes(30)),
        ..Progress::default()
    }));
    assert!(job_alarms(&j, &rules, t0() + Ch::seconds(30 * 60 + 59)).is_empty());
    assert_eq!(
        kinds(&job_alarms(&j, &rules, t0() + Ch::minutes(31))),
        [AlarmKind::Stalled]
    );
}

#[test]
fn only_a_running_job_stalls() {
    let rules = AlarmRules::default();
    let late = t0() + Ch::hours(5);
    for status in [
        Status::Waiting,
        Status::Completed,
        Status::Failed,
        Status::Died,
        Status::Queued,
        Status::Killed,
        Status::NeedsInput,
        Status::Unknown,
    ] {
        let alarms = job_alarms(&job(status), &rules, late);
        assert!(
            !kinds(&alarms).contains(&AlarmKind::Stalled),
            "{status:?}: {alarms:?}"
        );
    }
}

#[test]
fn budget_from_the_estimate_warns_at_80_and_alarms_at_100_percent() {
    let rules = AlarmRules {
        stall_after: std::time::Duration::from_secs(86_400),
        ..AlarmRules::default()
    };
    let mut j = job(Status::Running);
    j.meta.as_mut().unwrap().estimated_duration_seconds = Some(600);
    let at = |s: i64| job_alarms(&j, &rules, t0() + Ch::seconds(s));
    assert!(at(479).is_empty());
    let near = at(480);
    assert_eq!(kinds(&near), [AlarmKind::NearBudget]);
    assert_eq!(near[0].detail, "80% of its 10m00s budget");
    assert_eq!(near[0].since, t0() + Ch::seconds(480));
    let over = at(900);
    assert_eq!(kinds(&over), [AlarmKind::OverBudget]);
    assert_eq!(over[0].detail, "150% of its 10m00s budget");
    assert_eq!(over[0].since, t0() + Ch::seconds(600));
}

#[test]
fn a_project_budget_applies_when_the_job_has_no_estimate_and_the_estimate_wins() {
    let mut rules = AlarmRules::default();
    rules
        .project_budgets
        .insert("musica".into(), std::time::Duration::from_secs(3600));
    let mut j = job(Status::Waiting);
    assert_eq!(
        kinds(&job_alarms(&j, &rules, t0() + Ch::minutes(61))),
        [AlarmKind::OverBudget]
    );
    j.meta.as_mut().unwrap().estimated_duration_seconds = Some(7200);
    assert!(job_alarms(&j, &rules, t0() + Ch::minutes(61)).is_empty());
    j.meta.as_mut().unwrap().project = "other".into();
    j.meta.as_mut().unwrap().estimated_duration_seconds = None;
    assert_eq!(budget(&j, &rules), None);
}

#[test]
fn a_finished_job_raises_no_live_alarm_but_its_budget_is_judged_at_its_end() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Completed);
    j.meta.as_mut().unwrap().estimated_duration_seconds = Some(600);
    j.finished = Some(t0() + Ch::minutes(20));
    assert!(job_alarms(&j, &rules, t0() + Ch::hours(3)).is_empty());
    let end = budget_alarm(&j, &rules, t0() + Ch::hours(3)).unwrap();
    assert_eq!(end.detail, "200% of its 10m00s budget");
}

#[test]
fn a_question_waiting_past_five_minutes_is_called_out_and_so_is_a_gate() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Waiting);
    j.question = Some(Box::new(Question {
        id: "q1".into(),
        kind: QuestionType::Text,
        question: "Which branch?".into(),
        options: Vec::new(),
        context: String::new(),
        asked_at: Some(t0() + Ch::minutes(2)),
        timeout_minutes: None,
        default_if_timeout: None,
        note: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }));
    assert!(job_alarms(&j, &rules, t0() + Ch::seconds(419)).is_empty());
    let waiting = job_alarms(&j, &rules, t0() + Ch::minutes(9));
    assert_eq!(kinds(&waiting), [AlarmKind::QuestionWaiting]);
    assert_eq!(waiting[0].detail, "question unanswered for 7m00s");
    assert_eq!(waiting[0].since, t0() + Ch::minutes(7));

    j.question = None;
    j.gate = Some(Box::new(Gate {
        id: "g1".into(),
        gate: "deploy".into(),
        description: String::new(),
        context: String::new(),
        awaiting_since: Some(t0()),
        auto_approve_after_minutes: None,
        allow_session: None,
    }));
    let gate = job_alarms(&j, &rules, t0() + Ch::minutes(6));
    assert_eq!(gate[0].detail, "approval unanswered for 6m00s");
    // Stopped for the answer (exit 100): still waiting for a person.
    j.status = Status::NeedsInput;
    assert_eq!(
        kinds(&job_alarms(&j, &rules, t0() + Ch::minutes(6))),
        [AlarmKind::QuestionWaiting]
    );
    j.status = Status::Died;
    assert!(job_alarms(&j, &rules, t0() + Ch::minutes(6)).is_empty());
}

#[test]
fn several_alarms_come_worst_first() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Running);
    j.meta.as_mut().unwrap().estimated_duration_seconds = Some(60);
    let alarms = job_alarms(&j, &rules, t0() + Ch::hours(1));
    assert_eq!(kinds(&alarms), [AlarmKind::Stalled, AlarmKind::OverBudget]);
    assert_eq!(worst(&alarms).unwrap().kind, AlarmKind::Stalled);
}

fn activity(what: &str, since: DateTime<Utc>) -> Option<crate::jobs::model::session::Activity> {
    Some(crate::jobs::model::session::Activity {
        what: what.into(),
        since: Some(since),
    })
}

#[test]
fn a_call_in_flight_is_never_stalled_however_long_it_takes() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Running);
    j.activity = activity("Bash: npm test", t0() + Ch::minutes(1)).map(Box::new);
    for hours in [1, 5, 48] {
        assert!(
            job_alarms(&j, &rules, t0() + Ch::hours(hours)).is_empty(),
            "{hours}h into one call"
        );
    }
    // A message being written, or a call that names no start, is in flight all the same.
    j.activity = Some(Box::new(crate::jobs::model::session::Activity {
        what: "writing".into(),
        since: None,
    }));
    assert!(job_alarms(&j, &rules, t0() + Ch::hours(3)).is_empty());
}

#[test]
fn silence_after_a_call_is_counted_from_its_start_at_the_earliest() {
    let rules = AlarmRules::default();
    let mut j = job(Status::Running);
    // The call began at 30m (its start is a sign of life) and ended; nothing since.
    j.activity = activity("Bash: make", t0() + Ch::minutes(30)).map(Box::new);
    assert_eq!(last_activity(&j), Some(t0() + Ch::minutes(30)));
    j.activity = None;
    j.log_mtime = Some(t0() + Ch::minutes(50));
    assert!(job_alarms(&j, &rules, t0() + Ch::minutes(59)).is_empty());
    let raised = job_alarms(&j, &rules, t0() + Ch::minutes(60));
    assert_eq!(kinds(&raised), [AlarmKind::Stalled]);
    assert_eq!(raised[0].since, t0() + Ch::minutes(60));
}

#[test]
fn a_call_in_flight_does_not_hide_the_budget() {
    let rules = AlarmRules {
        project_budgets: [("musica".to_string(), std::time::Duration::from_secs(600))].into(),
        ..AlarmRules::default()
    };
    let mut j = job(Status::Running);
    j.activity = activity("Bash: sleep 9999", t0()).map(Box::new);
    assert_eq!(
        kinds(&job_alarms(&j, &rules, t0() + Ch::hours(1))),
        [AlarmKind::OverBudget]
    );
}

#[test]
fn alarms_change_only_at_the_next_change_that_was_announced() {
    let rules = AlarmRules {
        stall_after: std::time::Duration::from_secs(900),
        project_budgets: [("musica".to_string(), std::time::Duration::from_secs(1800))].into(),
        ..AlarmRules::default()
    };
    let gate = Gate {
        id: "g1".into(),
        gate: "deploy".into(),
        description: String::new(),
        context: String::new(),
        awaiting_since: Some(t0() + Ch::minutes(3)),
        auto_approve_after_minutes: None,
        allow_session: None,
    };
    let mut cases = Vec::new();
    let mut silent = job(Status::Running);
    silent.log_mtime = Some(t0() + Ch::minutes(4));
    cases.push(silent.clone());
    silent.meta.as_mut().unwrap().estimated_duration_seconds = Some(1000);
    cases.push(silent.clone());
    silent.activity = activity("Bash: make", t0() + Ch::minutes(1)).map(Box::new);
    cases.push(silent);
    let mut waiting = job(Status::Waiting);
    waiting.gate = Some(Box::new(gate.clone()));
    cases.push(waiting.clone());
    waiting.status = Status::NeedsInput;
    cases.push(waiting);
    let mut done = job(Status::Completed);
    done.finished = Some(t0() + Ch::minutes(40));
    cases.push(done);
    let mut unbudgeted = job(Status::Running);
    unbudgeted.meta.as_mut().unwrap().project = "other".into();
    cases.push(unbudgeted);
    for (i, j) in cases.iter().enumerate() {
        let at = |s: i64| t0() + Ch::seconds(s);
        let mut changes = 0;
        for s in -60..3 * 3600 {
            let (now, next) = (at(s), at(s + 1));
            let announced = next_change(j, &rules, now);
            assert!(announced.is_none_or(|a| a > now), "case {i} at {s} s");
            let before = kinds(&job_alarms(j, &rules, now));
            if kinds(&job_alarms(j, &rules, next)) != before {
                changes += 1;
                assert!(
                    announced.is_some_and(|a| a <= next),
                    "case {i}: alarms changed at {}s, next change said {announced:?}",
                    s + 1
                );
            }
        }
        let expected = [3, 3, 2, 3, 1, 0, 1][i];
        assert_eq!(
            changes, expected,
            "case {i}: the walk crosses its thresholds"
        );
    }
}
