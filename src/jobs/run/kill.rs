//! Stopping a job. The request is recorded first (`stop.json`: who, when, from where, published
//! once), then the signal is sent: a crash in between cannot lose the record, and a job whose
//! agent ends after it reads as `killed` whatever its exit code. A job luzia dispatched is
//! stopped through its supervisor (SIGTERM to it; it passes the signal on to the agent's process
//! group, escalates to SIGKILL after the grace period, and writes the exit line). A job started
//! some other way (the orchestrator's) has no supervisor to write the exit line, so luzia
//! signals the agent itself and writes it.

use crate::jobs::fs::names::{LOG_FILE, STOP_FILE};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::jobs::fs::publish::{Published, publish_once};
use crate::jobs::fs::tail::exit_code;
use crate::jobs::hitl::operator::operator;
use crate::jobs::model::job::Job;
use crate::jobs::model::stop::{StopRequest, StopSource};
use crate::jobs::os::process::is_alive;

#[derive(Debug, thiserror::Error)]
pub enum KillError {
    #[error("job {0} has already finished")]
    Finished(String),
    #[error("job {0} has no pid, so there is nothing to signal")]
    NoPid(String),
    #[error("job {0} is not running (its process is gone)")]
    NotRunning(String),
    #[error("cannot signal pid {pid} of job {id}: {source}")]
    Signal {
        id: String,
        pid: u32,
        source: std::io::Error,
    },
    #[error(
        "cannot signal pid {pid} of job {id}: stopped, but cannot write the exit line: {source}"
    )]
    ExitLine {
        id: String,
        pid: u32,
        source: std::io::Error,
    },
    #[error("job {id} did not stop within {secs} s")]
    Stuck { id: String, secs: u64 },
    #[error(
        "cannot record the stop of job {id} in {path}: {source}; nothing was signalled \
         (run this as a user who may write in the job directory)"
    )]
    Record {
        id: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Stops the job on behalf of this operator (`user@host`, asking now, from `source`); see
/// [`kill_with`].
pub fn kill(job: &Job, grace: Duration, source: StopSource) -> Result<i32, KillError> {
    let request = StopRequest::new(&operator(), chrono::Utc::now(), source);
    kill_with(job, grace, &request)
}

/// How long an agent has to stop after SIGTERM, unless the operator says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// Records `request` (unless a stop was asked for already: the first request stands), then
/// stops the job and returns the agent's exit code recorded for it.
pub fn kill_with(job: &Job, grace: Duration, request: &StopRequest) -> Result<i32, KillError> {
    let id = job.id.to_string();
    if job.exit_code.is_some() {
        return Err(KillError::Finished(id));
    }
    let pid = job.pid.ok_or_else(|| KillError::NoPid(id.clone()))?;
    if !is_alive(pid) {
        return Err(KillError::NotRunning(id));
    }
    let p = Pid::from_raw(pid as i32).ok_or_else(|| KillError::NoPid(id.clone()))?;
    let ours = record(job, request)?;
    let supervised = job.meta.as_ref().is_some_and(|m| m.supervised);
    // A supervisor passes SIGTERM on to the agent's group. Without one, the agent's group is
    // signalled if it leads one, else the agent alone.
    let term = |sig| match rustix::process::getpgid(Some(p)) {
        Ok(g) if g == p && !supervised => kill_process_group(p, sig),
        _ => kill_process(p, sig),
    };
    if let Err(e) = term(Signal::TERM) {
        // Nothing was signalled: a request just made is withdrawn, so the job is not taken for
        // killed when it ends by itself.
        if ours {
            let _ = std::fs::remove_file(job.dir.join(STOP_FILE));
        }
        return Err(KillError::Signal {
            id,
            pid,
            source: e.into(),
        });
    }
    if !supervised {
        return stop_unsupervised(job, pid, grace, term);
    }
    // A second SIGTERM after our grace period makes the supervisor kill the agent's group at
    // once. It writes the exit line either way.
    if let Some(code) = wait_for_exit_line(job, grace) {
        return Ok(code);
    }
    let _ = kill_process(p, Signal::TERM);
    let within = Duration::from_secs(5);
    wait_for_exit_line(job, within).ok_or(KillError::Stuck {
        id,
        secs: (grace + within).as_secs(),
    })
}

/// Waits for a job without a supervisor (signalled with SIGTERM by `term`) to end, kills it
/// after the grace period, and writes its exit line.
fn stop_unsupervised(
    job: &Job,
    pid: u32,
    grace: Duration,
    term: impl Fn(Signal) -> rustix::io::Result<()>,
) -> Result<i32, KillError> {
    let deadline = Instant::now() + grace;
    let mut code = -15;
    while is_alive(pid) {
        if Instant::now() >= deadline {
            let _ = term(Signal::KILL);
            code = -9;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(job.dir.join(LOG_FILE))
        .map_err(|source| KillError::ExitLine {
            id: job.id.to_string(),
            pid,
            source,
        })?;
    let _ = writeln!(log, "\nexit:{code}");
    Ok(code)
}

/// Publishes the request in the job directory, durably, before any signal. `true` when it is
/// ours, `false` when an earlier request stands (a second kill escalates; the first asker is
/// the one recorded).
fn record(job: &Job, request: &StopRequest) -> Result<bool, KillError> {
    match publish_once(&job.dir, STOP_FILE, &request.to_json()) {
        Ok(Published::Won) => Ok(true),
        Ok(Published::Lost(_)) => Ok(false),
        Err(e) => Err(KillError::Record {
            id: job.id.to_string(),
            path: job.dir.join(STOP_FILE),
            source: e,
        }),
    }
}

fn wait_for_exit_line(job: &Job, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    let path = job.dir.join(LOG_FILE);
    while Instant::now() < deadline {
        // Never blocks, and refuses anything but a regular file (a FIFO would wait forever).
        if let Ok(Some(f)) = crate::jobs::fs::files::open_nofollow(&path)
            && let Ok(md) = f.metadata()
            && let Ok(Some(code)) = exit_code(&f, md.len())
        {
            return Some(code);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::status::Status;
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
        assert_eq!(after.stop, Some(ana()));
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
        job.dir = root.path().join("gone");
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
        assert_eq!(read.stop, Some(first));
        let _ = child.kill();
        let _ = child.wait();
    }
}
