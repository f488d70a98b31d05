//! Stopping a job. A job luzia dispatched is stopped through its supervisor (SIGTERM to it; it
//! passes the signal on to the agent's process group, escalates to SIGKILL after the grace
//! period, and writes the exit line). A job started some other way (the orchestrator's) has no
//! supervisor to write the exit line, so luzia signals the agent itself and writes it.

use crate::jobs::fs::names::LOG_FILE;
use std::io::Write;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::jobs::fs::tail::exit_code;
use crate::jobs::model::job::Job;
use crate::jobs::os::process::is_alive;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KillError {
    #[error("job {0} has already finished")]
    Finished(String),
    #[error("job {0} has no pid, so there is nothing to signal")]
    NoPid(String),
    #[error("job {0} is not running (its process is gone)")]
    NotRunning(String),
    #[error("cannot signal pid {pid} of job {id}: {message}")]
    Signal {
        id: String,
        pid: u32,
        message: String,
    },
    #[error("job {id} did not stop within {secs} s")]
    Stuck { id: String, secs: u64 },
}

/// How long an agent has to stop after SIGTERM, unless the operator says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// Stops the job and returns the exit code recorded for it.
pub fn kill(job: &Job, grace: Duration) -> Result<i32, KillError> {
    let id = job.id.to_string();
    if job.exit_code.is_some() {
        return Err(KillError::Finished(id));
    }
    let pid = job.pid.ok_or_else(|| KillError::NoPid(id.clone()))?;
    if !is_alive(pid) {
        return Err(KillError::NotRunning(id));
    }
    let p = Pid::from_raw(pid as i32).ok_or_else(|| KillError::NoPid(id.clone()))?;
    let signal_err = |e: rustix::io::Errno| KillError::Signal {
        id: id.clone(),
        pid,
        message: e.to_string(),
    };
    let supervised = job.meta.as_ref().is_some_and(|m| m.supervised);
    if supervised {
        // The supervisor passes SIGTERM on; a second SIGTERM after our grace period makes it
        // kill the agent's group at once. It writes the exit line either way.
        kill_process(p, Signal::TERM).map_err(signal_err)?;
        if let Some(code) = wait_for_exit_line(job, grace) {
            return Ok(code);
        }
        let _ = kill_process(p, Signal::TERM);
        let within = Duration::from_secs(5);
        return wait_for_exit_line(job, within).ok_or(KillError::Stuck {
            id,
            secs: (grace + within).as_secs(),
        });
    }
    // No supervisor: signal the agent's group if it leads one, else the agent alone.
    let term = |sig| match rustix::process::getpgid(Some(p)) {
        Ok(g) if g == p => kill_process_group(p, sig),
        _ => kill_process(p, sig),
    };
    term(Signal::TERM).map_err(signal_err)?;
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
        .map_err(|e| KillError::Signal {
            id: id.clone(),
            pid,
            message: format!("stopped, but cannot write the exit line: {e}"),
        })?;
    let _ = writeln!(log, "\nexit:{code}");
    Ok(code)
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
