use super::*;
use crate::jobs::model::status::Status;
use crate::jobs::os::process::is_alive;
use crate::jobs::{JobId, read_job};
use chrono::{TimeZone, Utc};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A job directory of the orchestrator's kind (no supervisor) whose agent is `child`.
fn orchestrator_job(root: &std::path::Path, child: &Child) -> Job {
    let dir = root.join("120000-orch");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"id": "120000-orch", "project": "p", "task": "t", "pid": {}}}"#,
        child.id()
    );
    std::fs::write(dir.join("meta.json"), meta).unwrap();
    let id = JobId::parse("120000-orch").unwrap();
    read_job(root, &id, Utc::now()).unwrap()
}

fn ana() -> StopRequest {
    let at = Utc.with_ymd_and_hms(2026, 1, 11, 14, 31, 2).unwrap();
    StopRequest::new("ana@host", at, StopSource::Tui)
}

#[test]
fn the_stop_is_recorded_before_the_signal_and_read_as_killed() {
    let root = tempfile::tempdir().unwrap();
    let ready = root.path().join("ready");
    // Tidies up on SIGTERM and exits 0, as Claude Code does.
    let mut child = Command::new("sh")
        .args([
            "-c",
            r#"trap 'exit 0' TERM; : > "$1"; while :; do sleep 0.05; done"#,
        ])
        .arg("sh")
        .arg(&ready)
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    while !ready.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let job = orchestrator_job(root.path(), &child);
    assert_eq!(job.status, Status::Running);
    let reaper = std::thread::spawn(move || child.wait());
    assert_eq!(
        kill_with(&job, Duration::from_secs(5), &ana()).ok(),
        Some(-15)
    );
    let _ = reaper.join();
    let after = read_job(root.path(), &job.id, Utc::now()).unwrap();
    assert_eq!(after.status, Status::Killed);
    assert_eq!(after.stop, Some(Box::new(ana())));
    assert!(matches!(
        kill_with(&after, DEFAULT_GRACE, &ana()),
        Err(KillError::Finished(id)) if id == "120000-orch"
    ));
}

#[test]
fn a_stop_that_cannot_be_recorded_signals_nothing() {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let mut job = orchestrator_job(root.path(), &child);
    job.set_dir(root.path().join("gone"));
    let err = kill_with(&job, DEFAULT_GRACE, &ana()).unwrap_err();
    assert!(
        matches!(&err, KillError::Record { path, .. } if path.ends_with("gone/stop.json")),
        "{err:?}"
    );
    assert!(err.to_string().contains("nothing was signalled"), "{err}");
    assert!(is_alive(child.id()), "the agent was not signalled");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_first_request_stands() {
    let d = tempfile::tempdir().unwrap();
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let job = orchestrator_job(d.path(), &child);
    let first = ana();
    let second = StopRequest {
        requested_by: "bo@host".into(),
        ..ana()
    };
    assert_eq!(record(&job, &first).ok(), Some(true));
    assert_eq!(record(&job, &second).ok(), Some(false));
    let read = read_job(d.path(), &job.id, Utc::now()).unwrap();
    assert_eq!(read.stop, Some(Box::new(first)));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_pid_that_is_another_process_now_is_never_signalled() {
    let d = tempfile::tempdir().unwrap();
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let mut job = orchestrator_job(d.path(), &bystander);
    // The job's own process had this pid but started at another time.
    let mut recorded = crate::jobs::model::process::Recorded::of(bystander.id()).unwrap();
    recorded.start_ticks -= 1;
    job.process_record = Some(Box::new(crate::jobs::model::process::ProcessRecord {
        supervisor: Some(recorded),
        agent: None,
        job: None,
    }));
    let err = kill_with(&job, DEFAULT_GRACE, &ana()).unwrap_err();
    assert!(
        matches!(&err, KillError::NotOurs { pid, .. } if *pid == bystander.id()),
        "{err:?}"
    );
    assert!(err.to_string().contains("left alone"), "{err}");
    assert!(is_alive(bystander.id()), "the bystander was not signalled");
    assert!(!job.file(STOP_FILE).exists(), "nothing recorded either");
    // Without a record: a process that started long after the job is not its agent.
    job.process_record = None;
    job.started = Some(chrono::Utc::now() - chrono::Duration::days(3));
    assert!(matches!(
        kill_with(&job, DEFAULT_GRACE, &ana()),
        Err(KillError::NotOurs { .. })
    ));
    assert!(is_alive(bystander.id()));
    let _ = bystander.kill();
    let _ = bystander.wait();
}

/// A job read before its pid is published (just dispatched): running, with no process.
fn starting_job(root: &std::path::Path) -> Job {
    let dir = root.join("120000-new");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"id": "120000-new", "project": "p", "task": "t", "started": "{}"}}"#,
        Utc::now().to_rfc3339()
    );
    std::fs::write(dir.join("meta.json"), meta).unwrap();
    let job = read_job(root, &JobId::parse("120000-new").unwrap(), Utc::now()).unwrap();
    assert_eq!(job.status, Status::Running);
    assert!(job.processes().main.is_none());
    job
}

#[test]
fn a_stop_asked_before_the_pid_is_published_waits_for_it() {
    let root = tempfile::tempdir().unwrap();
    let job = starting_job(root.path());
    let mut child = Command::new("sh")
        .args(["-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"])
        .process_group(0)
        .spawn()
        .unwrap();
    let (pid, pid_file) = (child.id(), job.dir().join("pid"));
    let publisher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(pid_file, format!("{pid}\n")).unwrap();
    });
    let killed = kill(&job, Duration::from_secs(5), StopSource::Tui);
    publisher.join().unwrap();
    // Whatever the stop did, the child does not outlive the test.
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(killed.ok(), Some(-15));
    let after = read_job(root.path(), &job.id, Utc::now()).unwrap();
    assert_eq!(after.status, Status::Killed);
}

#[test]
fn a_pid_that_never_comes_is_waited_for_a_bounded_time() {
    let root = tempfile::tempdir().unwrap();
    let job = starting_job(root.path());
    let again = with_its_pid(&job, Duration::from_millis(200)).unwrap();
    assert!(matches!(
        kill_with(&again, DEFAULT_GRACE, &ana()),
        Err(KillError::NoPid(id)) if id == "120000-new"
    ));
    // Nothing was signalled, so no stop is left on record.
    assert!(!job.dir().join(STOP_FILE).exists());
}
