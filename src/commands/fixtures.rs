//! Jobs built in memory for the commands' tests: one of each kind the machine-readable output
//! describes (a question, a gate, progress, a problem, finished, stopped for an answer).

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::jobs::model::job::Problem;
use crate::jobs::model::lifecycle::{Answer, Exchange};
use crate::jobs::model::session::{Activity, Usage};
use crate::jobs::{Gate, Job, JobId, Meta, Progress, Question, QuestionType, Status};

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
}

fn job(id: &str, status: Status, started_min: i64) -> Job {
    let started = now() - Duration::minutes(started_min);
    Job {
        meta: Some(Box::new(Meta {
            project: "musica".into(),
            task: format!("task of {id}").into(),
            ..Meta::default()
        })),
        status,
        pid: Some(4242),
        started: Some(started),
        log_len: 10,
        log_mtime: Some(started),
        ..Job::bare(JobId::parse(id).unwrap(), format!("/srv/jobs/{id}").into())
    }
}

fn question(kind: QuestionType, options: &[&str]) -> Question {
    Question {
        id: "q1".into(),
        kind,
        question: "Which database?".into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        context: "migration".into(),
        asked_at: Some(now() - Duration::minutes(3)),
        timeout_minutes: Some(30.0),
        default_if_timeout: Some("staging".into()),
        note: None,
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    }
}

pub fn jobs() -> Vec<Job> {
    let mut asking = job("w1", Status::Waiting, 10);
    asking.question = Some(Box::new(question(
        QuestionType::Choice,
        &["production", "staging"],
    )));
    asking.progress = Some(Box::new(Progress {
        percent: Some(40.0),
        step: Some(2),
        total_steps: Some(5),
        step_name: Some("Running tests".into()),
        ..Progress::default()
    }));
    asking.problems = Box::new([Problem {
        path: "/srv/jobs/w1/progress.json".into(),
        message: "is not valid JSON (EOF)".into(),
    }]);
    let mut gated = job("g2", Status::Waiting, 20);
    gated.gate = Some(Box::new(Gate {
        id: "g1".into(),
        gate: "deploy".into(),
        description: "Deploy to staging".into(),
        context: String::new(),
        awaiting_since: Some(now() - Duration::minutes(1)),
        auto_approve_after_minutes: Some(5.0),
        allow_session: None,
    }));
    gated.activity = Some(Box::new(Activity {
        what: "Bash: rm -rf build".into(),
        since: Some(now() - Duration::minutes(1)),
    }));
    let mut done = job("d3", Status::Completed, 60);
    done.exit_code = Some(0);
    if let Some(m) = done.meta.as_mut() {
        m.session_id = "5f0c6a1e-9d7b-4c1a-8f3e-2b6d0a9c7e41".into();
        m.resumes = "c0".into();
        m.usage = Some(Box::new(Usage {
            model: "claude-sonnet-4-5".into(),
            turns: Some(7),
            duration_ms: Some(192_400),
            input_tokens: Some(1_234),
            output_tokens: Some(5_678),
            cache_read_tokens: Some(90_000),
            cache_creation_tokens: None,
            cost_usd: Some(0.4213),
            outcome: "success".into(),
            error: String::new(),
            resets_at: None,
        }));
    }
    done.finished = Some(now() - Duration::minutes(30));
    done.progress = Some(Box::new(Progress {
        percent: Some(12.5),
        ..Progress::default()
    }));
    let mut stopped = job("n4", Status::NeedsInput, 40);
    stopped.exit_code = Some(100);
    stopped.finished = Some(now() - Duration::minutes(35));
    let mut q = question(QuestionType::Text, &[]);
    q.timeout_minutes = None;
    q.default_if_timeout = None;
    q.note = Some("a choice with no options: answer in free text".into());
    stopped.exchange = Some(Box::new(Exchange {
        question: q.clone(),
        answer: None,
    }));
    stopped.question = Some(Box::new(q));
    let (answered, retry) = answered_and_retried();
    vec![asking, gated, done, stopped, answered, retry]
}

/// A job that stopped for an answer, was answered and retried, and its retry.
fn answered_and_retried() -> (Job, Job) {
    let mut answered = job("a5", Status::NeedsInput, 50);
    answered.exit_code = Some(100);
    answered.finished = Some(now() - Duration::minutes(45));
    answered.exchange = Some(Box::new(Exchange {
        question: question(QuestionType::Choice, &["production", "staging"]),
        answer: Some(Answer {
            question_id: "q1".into(),
            answer: "staging".into(),
            answered_by: "ana@host".into(),
            answered_at: Some(now() - Duration::minutes(44)),
            source: "tui".into(),
        }),
    }));
    answered.retried_by = Box::new([JobId::parse("r6").unwrap()]);
    let mut retry = job("r6", Status::Completed, 43);
    retry.exit_code = Some(0);
    retry.finished = Some(now() - Duration::minutes(42));
    if let Some(m) = retry.meta.as_mut() {
        m.retry_of = "a5".into();
    }
    (answered, retry)
}
