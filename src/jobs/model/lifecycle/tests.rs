use super::*;
use crate::jobs::model::job::read_job;

const QUESTION: &str = r#"{"id": "q1", "type": "choice", "question": "Which tables may I drop?",
    "options": ["all", "none"]}"#;
const ANSWER: &str = r#"{"question_id": "q1", "answer": "none", "answered_by": "ana@host",
    "answered_at": "2026-11-23T12:00:00Z", "source": "tui", "token": "t"}"#;

/// A job directory under `root`: meta.json (with `extra` fields), output.log ending in `exit`,
/// and the given files.
fn job_dir(root: &Path, id: &str, extra: &str, exit: Option<i32>, files: &[(&str, &str)]) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"id": "{id}", "project": "p", "task": "t", "started": "2026-11-23T11:00:00Z"{extra}}}"#
    );
    std::fs::write(dir.join("meta.json"), meta).unwrap();
    let log = exit.map_or("working\n".to_string(), |c| format!("out\n\nexit:{c}\n"));
    std::fs::write(dir.join("output.log"), log).unwrap();
    for (name, body) in files {
        std::fs::write(dir.join(name), body).unwrap();
    }
}

fn read(root: &Path, id: &str) -> Job {
    read_job(root, &JobId::parse(id).unwrap(), Utc::now()).unwrap()
}

#[test]
fn the_stage_of_a_job_that_stopped_for_an_answer() {
    let stale = r#"{"question_id": "q0", "answer": "old"}"#;
    let older = r#"{"choice": "none"}"#;
    // (case, exit code, files, retried, stage, awaits a person)
    type Case<'a> = (&'a str, i32, Vec<(&'a str, &'a str)>, bool, &'a str, bool);
    let cases: Vec<Case> = vec![
        (
            "asked",
            100,
            vec![("clarification.json", QUESTION)],
            false,
            "asking",
            true,
        ),
        ("no question on disk", 100, vec![], false, "asking", true),
        (
            "a question that timed out, in the history",
            100,
            vec![("history.jsonl", TIMED_OUT)],
            false,
            "asking",
            true,
        ),
        (
            "answered",
            100,
            vec![("clarification.json", QUESTION), ("response.json", ANSWER)],
            false,
            "answered",
            false,
        ),
        (
            "answered in the older form",
            100,
            vec![("clarification.json", QUESTION), ("response.json", older)],
            false,
            "answered",
            false,
        ),
        (
            "a stale answer answers nothing",
            100,
            vec![("clarification.json", QUESTION), ("response.json", stale)],
            false,
            "asking",
            true,
        ),
        (
            "retried unanswered",
            100,
            vec![("clarification.json", QUESTION)],
            true,
            "retried",
            false,
        ),
        (
            "answered and retried",
            100,
            vec![("clarification.json", QUESTION), ("response.json", ANSWER)],
            true,
            "retried",
            false,
        ),
        ("completed", 0, vec![], true, "-", false),
        (
            "failed",
            1,
            vec![("clarification.json", QUESTION)],
            false,
            "-",
            false,
        ),
    ];
    for (name, code, files, retried, want, awaits) in cases {
        let tmp = tempfile::tempdir().unwrap();
        job_dir(tmp.path(), "120000-orig", "", Some(code), &files);
        let mut job = read(tmp.path(), "120000-orig");
        if retried {
            job.retried_by = Box::new([JobId::parse("130000-next").unwrap()]);
        }
        let stage = match job.stage() {
            None => "-",
            Some(Stage::Asking) => "asking",
            Some(Stage::Answered) => "answered",
            Some(Stage::Retried(id)) => {
                assert_eq!(id.as_str(), "130000-next", "{name}");
                "retried"
            }
        };
        assert_eq!(stage, want, "{name}");
        assert_eq!(job.awaits_person(), awaits, "{name}");
    }
}

const TIMED_OUT: &str = concat!(
    r#"{"clarification": {"id": "q1", "question": "First?"}, "response": {"question_id": "q1", "answer": "yes"}}"#,
    "\n",
    r#"{"progress": {"percent": 50}, "at": "2026-11-23T11:30:00Z"}"#,
    "\n",
    r#"{"clarification": {"id": "q2", "type": "text", "question": "Which branch?"}, "response": null}"#,
    "\n",
);

#[test]
fn a_question_archived_unanswered_is_the_one_it_stopped_for() {
    let tmp = tempfile::tempdir().unwrap();
    job_dir(
        tmp.path(),
        "120000-hist",
        "",
        Some(100),
        &[("history.jsonl", TIMED_OUT)],
    );
    let e = read(tmp.path(), "120000-hist")
        .exchange
        .expect("from the history");
    assert_eq!(
        (e.question.id.as_str(), e.question.question.as_str()),
        ("q2", "Which branch?")
    );
    assert_eq!(e.answer, None);
    // Answered while it waited: not what it stopped for.
    let answered = TIMED_OUT.lines().next().unwrap();
    job_dir(
        tmp.path(),
        "120500-went",
        "",
        Some(100),
        &[("history.jsonl", answered)],
    );
    assert!(read(tmp.path(), "120500-went").exchange.is_none());
}

#[test]
fn the_exchange_keeps_the_question_and_who_answered_it() {
    let tmp = tempfile::tempdir().unwrap();
    let files = [("clarification.json", QUESTION), ("response.json", ANSWER)];
    job_dir(tmp.path(), "120000-orig", "", Some(100), &files);
    let job = read(tmp.path(), "120000-orig");
    assert_eq!(job.question, None, "answered: no longer pending");
    let e = job.exchange.expect("the exchange");
    assert_eq!(e.question.question, "Which tables may I drop?");
    let a = e.answer.expect("the answer");
    assert_eq!(
        (a.answer.as_str(), a.answered_by.as_str(), a.source.as_str()),
        ("none", "ana@host", "tui")
    );
    assert_eq!(a.answered_at, parse_timestamp("2026-11-23T12:00:00Z"));
    // A live job's question is its pending question, never an exchange.
    job_dir(tmp.path(), "120500-live", "", None, &files[..1]);
    assert!(read(tmp.path(), "120500-live").exchange.is_none());
}

#[test]
fn retries_are_linked_both_ways_and_found_cheaply() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    job_dir(
        root,
        "120000-orig",
        "",
        Some(100),
        &[("clarification.json", QUESTION)],
    );
    let retry = r#", "retry_of": "120000-orig""#;
    job_dir(root, "130000-next", retry, None, &[]);
    let later = r#", "retry_of": "120000-orig", "started": "2026-11-23T13:30:00Z""#;
    // meta.json's last `started` wins: a later start.
    job_dir(root, "133000-last", later, Some(0), &[]);
    job_dir(
        root,
        "140000-self",
        r#", "retry_of": "140000-self""#,
        Some(0),
        &[],
    );
    job_dir(
        root,
        "150000-junk",
        r#", "retry_of": "../etc""#,
        Some(0),
        &[],
    );
    let mut jobs = crate::jobs::scan(root, Utc::now()).unwrap();
    link_retries(&mut jobs);
    let get = |id: &str| jobs.iter().find(|j| j.id.as_str() == id).unwrap();
    let orig = get("120000-orig");
    let names: Vec<&str> = orig.retried_by.iter().map(JobId::as_str).collect();
    assert_eq!(names, ["130000-next", "133000-last"]);
    assert_eq!(orig.stage(), Some(Stage::Retried(&orig.retried_by[1])));
    assert!(!orig.awaits_person());
    assert_eq!(
        get("130000-next").retry_of().unwrap().as_str(),
        "120000-orig"
    );
    assert!(
        get("140000-self").retry_of().is_none(),
        "never its own retry"
    );
    assert!(get("150000-junk").retry_of().is_none());
    assert!(get("140000-self").retried_by.is_empty());
    assert_eq!(find_retries(root, orig), orig.retried_by.to_vec());
    assert!(find_retries(root, get("130000-next")).is_empty());
}
