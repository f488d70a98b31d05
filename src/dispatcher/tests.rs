//! What a retry takes from the job it retries.

use super::*;
use crate::jobs::{JobId, Meta, Status};

fn job(meta: &str) -> Job {
    let id = JobId::parse("142315-a1b2").unwrap();
    Job {
        meta: Some(Box::new(Meta::parse(meta.as_bytes()).unwrap())),
        ..Job::bare(id, PathBuf::from("/jobs/142315-a1b2"))
    }
}

/// A project the config does not name is retried where its job ran: the directory meta.json
/// records, or for a worktree job the repository its worktree came from.
#[test]
fn a_retry_runs_where_the_job_ran() {
    let cases = [
        (
            r#"{"project": "shop", "task": "t", "cwd": "/home/ana/shop"}"#,
            Some("/home/ana/shop"),
        ),
        (
            r#"{"project": "shop", "task": "t", "cwd": "/jobs/142315-a1b2/worktree",
                "review": {"isolation": "worktree", "repo": "/home/ana/shop",
                           "worktree": "/jobs/142315-a1b2/worktree", "base": "abc"}}"#,
            Some("/home/ana/shop"),
        ),
        (r#"{"project": "shop", "task": "t"}"#, None),
        (
            r#"{"project": "shop", "task": "t", "cwd": "relative"}"#,
            None,
        ),
    ];
    for (meta, want) in cases {
        let req = retry_request(&job(meta), None).unwrap();
        assert_eq!(req.path.as_deref(), want.map(Path::new), "{meta}");
        assert_eq!(req.retry_of.as_deref(), Some("142315-a1b2"));
    }
}

/// A task queued from the cockpit for the repository it started in keeps that directory in the
/// queue's file: a supervisor, which reads only the config file, starts it later. A configured
/// project's task does not need it.
#[test]
fn a_queued_task_of_an_unconfigured_project_keeps_its_directory() {
    let d = tempfile::tempdir().unwrap();
    let (root, queue, repo, other) = (
        d.path().join("jobs"),
        d.path().join("queue"),
        d.path().join("shop"),
        d.path().join("musica"),
    );
    for dir in [&root, &repo, &other] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let file = d.path().join("c.toml");
    let body = format!(
        "jobs_dir = {:?}\nqueue_dir = {:?}\n[projects.musica]\npath = {:?}\n",
        root, queue, other
    );
    std::fs::write(&file, body).unwrap();
    let ov = crate::config::Overrides {
        config: Some(file),
        jobs_dir: None,
    };
    let mut cfg = Config::load_with(&ov, &|_| None).unwrap();
    cfg.projects
        .insert("shop".into(), crate::config::Project::at(repo.clone()));
    let dispatcher = Dispatcher::new(&cfg).unwrap();
    let queued = |project: &str, path: Option<&Path>| {
        let req = Request {
            queue: true,
            path: path.map(Path::to_path_buf),
            ..Request::new(project, "later")
        };
        match dispatcher.dispatch(&req).unwrap() {
            Dispatched::Queued(q) => q,
            Dispatched::Started(c) => panic!("started {c:?}"),
        }
    };
    assert_eq!(queued("shop", None).project_path, Some(repo.clone()));
    assert_eq!(queued("elsewhere", Some(&repo)).project_path, Some(repo));
    assert_eq!(queued("musica", Some(&other)).project_path, None);
}

/// The hold is recorded as the job ends, before its exit line: the job still reads as running
/// then, and a task dispatched the moment it reads `limited` must find the hold on disk.
#[test]
fn a_job_ending_on_the_limit_holds_the_queue_before_its_exit_line() {
    let d = tempfile::tempdir().unwrap();
    let (root, queue) = (d.path().join("jobs"), d.path().join("queue"));
    std::fs::create_dir_all(&root).unwrap();
    let file = d.path().join("c.toml");
    let body = format!(
        "jobs_dir = {root:?}\nqueue_dir = {queue:?}\n[agent]\ncommand = [\"claude\", \"-p\"]\n\
         [projects.p]\npath = {:?}\n",
        d.path()
    );
    std::fs::write(&file, body).unwrap();
    let ov = crate::config::Overrides {
        config: Some(file),
        jobs_dir: None,
    };
    let cfg = Config::load_with(&ov, &|_| None).unwrap();
    let dispatcher = Dispatcher::new(&cfg).unwrap();
    let now = Utc::now();
    let reset = now.timestamp() + 3600;
    let mut ending = job(&format!(
        r#"{{"project": "p", "task": "t", "agent": "claude", "session_id": "s1",
            "usage": {{"error": "Claude AI usage limit reached|{reset}"}}}}"#
    ));
    ending.status = Status::Running;
    ending.log_mtime = Some(now);
    assert!(ending.exit_code.is_none());

    // A success, or a kill asked for, holds nothing.
    dispatcher.record_limit(&ending, 0).unwrap();
    assert_eq!(dispatcher.hold_for("p", None, now), None);

    dispatcher.record_limit(&ending, 1).unwrap();
    let hold = dispatcher
        .hold_for("p", None, now)
        .expect("held before the exit line");
    assert_eq!(hold.agent, "claude");
    assert_eq!(hold.job, "142315-a1b2");
    assert!(hold.resets_at > now);
    assert!(dispatcher.resumes_pending());
    match dispatcher.dispatch(&Request::new("p", "later")).unwrap() {
        Dispatched::Queued(_) => {}
        Dispatched::Started(c) => panic!("started {c:?} while the limit stands"),
    }
}
