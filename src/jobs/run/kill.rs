//! Stopping a job. The request is recorded first (`stop.json`: who, when, from where, published
//! once), then the signal is sent: a crash in between cannot lose the record, and a job whose
//! agent ends after it reads as `killed` whatever its exit code. A job luzia dispatched is
//! stopped through its supervisor (SIGTERM to it; it passes the signal on to the agent's process
//! group, escalates to SIGKILL after the grace period, and writes the exit line). A job started
//! some other way (the orchestrator's), or whose supervisor is gone while what its agent started
//! lives on, has nobody to write the exit line, so luzia signals the agent itself and writes it.
//! A process is signalled only while it is still the job's: a pid whose recorded start time (or,
//! without a record, the job's start time) does not match names another process, which is left
//! alone.

use crate::jobs::fs::names::{LOG_FILE, STOP_FILE};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::jobs::fs::files::open_append;
use crate::jobs::fs::publish::{Published, publish_once};
use crate::jobs::fs::tail::exit_code;
use crate::jobs::hitl::operator::operator;
use crate::jobs::model::job::Job;
use crate::jobs::model::stop::{self, StopRequest, StopSource};
use crate::jobs::os::process::{Found, ProcessRef, SignalError};
use crate::jobs::run::finish;

#[derive(Debug, thiserror::Error)]
pub enum KillError {
    #[error("job {0} has already finished")]
    Finished(String),
    #[error("job {0} has no pid, so there is nothing to signal")]
    NoPid(String),
    #[error("job {0} is not running (its process is gone)")]
    NotRunning(String),
    #[error(
        "job {id} is not running: pid {pid} now belongs to another process, which was left alone"
    )]
    NotOurs { id: String, pid: u32 },
    #[error("cannot signal pid {pid} of job {id}: {source}")]
    Signal {
        id: String,
        pid: u32,
        source: std::io::Error,
    },
    #[error(
        "job {id} has stopped (pid {pid}), but its exit line cannot be written to {}: {source}; \
         it reads as killed", path.display()
    )]
    ExitLine {
        id: String,
        pid: u32,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "job {id}: its supervisor (pid {pid}) is stopped or does not answer, and nothing of its \
         agent is left to stop; the exit line is the supervisor's to write once it runs again"
    )]
    SupervisorStuck { id: String, pid: u32 },
    #[error(
        "job {0} has stopped, but its supervisor ended before writing the exit line; it reads as killed"
    )]
    Unrecorded(String),
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
    let started = with_its_pid(job, PID_WAIT);
    kill_with(started.as_ref().unwrap_or(job), grace, &request)
}

/// How long a stop waits for a job just dispatched to publish its pid.
pub const PID_WAIT: Duration = Duration::from_secs(10);

/// A job just dispatched reads as running before its supervisor has published its pid (see
/// `STARTUP_GRACE_SECS`): a stop asked for in that moment (a `K` pressed on the row as it
/// appears, `luzia run ... && luzia kill`) waits up to `wait` for the pid, reading the job again,
/// rather than saying there is nothing to signal. `None`: the job as given is the one to stop.
fn with_its_pid(job: &Job, wait: Duration) -> Option<Job> {
    let starting =
        |j: &Job| j.exit_code.is_none() && j.status.is_active() && j.processes().main.is_none();
    if !starting(job) {
        return None;
    }
    let root = job.root()?.clone();
    let deadline = Instant::now() + wait;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let again = crate::jobs::model::job::read_job(&root, &job.id, chrono::Utc::now())?;
        if !starting(&again) || Instant::now() >= deadline {
            return Some(again);
        }
    }
}

/// How long an agent has to stop after SIGTERM, unless the operator says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// How long SIGKILL may take to show.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Whom a stop is sent to. Only processes that are still the job's own are ever signalled.
enum Target {
    /// A live supervisor: it passes the stop on to the agent's group, escalates, and writes the
    /// exit line.
    Supervisor(ProcessRef),
    /// An agent that nobody will write the exit line for: the orchestrator's, or one whose
    /// supervisor is gone. `group`: its whole process group is signalled. `supervised`: a job of
    /// luzia's, whose meta.json is given the finish too.
    Agent {
        process: ProcessRef,
        group: bool,
        supervised: bool,
    },
}

fn target(job: &Job) -> Result<Target, KillError> {
    let id = job.id.to_string();
    let processes = job.processes();
    // luzia's private record of a supervisor makes a job luzia's, whatever meta.json says (in a
    // directory given to the agent's user, meta.json may be the agent's; the record luzia
    // believes is not). Only the private record names its job: a `process.json` among the job's
    // files (the orchestrator's, a test's, an older luzia's) leaves the question to meta.json.
    let supervised = job.meta.as_ref().is_some_and(|m| m.supervised)
        || job
            .process_record
            .as_ref()
            .is_some_and(|r| r.supervisor.is_some() && r.job.is_some());
    let main = processes.main.as_ref().map(|p| (p, p.find()));
    if let Some((p, found)) = &main
        && found.is_alive()
    {
        if supervised {
            return Ok(Target::Supervisor((*p).clone()));
        }
        // Without a supervisor, the agent's group is signalled if it leads one.
        return Ok(Target::Agent {
            process: (*p).clone(),
            group: leads_group(p.pid),
            supervised: false,
        });
    }
    // The supervisor is gone, but what its agent started may live on.
    if let Some(agent) = processes.agent.filter(|a| a.find_group().is_alive()) {
        return Ok(Target::Agent {
            process: agent,
            group: true,
            supervised,
        });
    }
    match main {
        None => Err(KillError::NoPid(id)),
        Some((p, Found::Other)) => Err(KillError::NotOurs { id, pid: p.pid }),
        Some(_) => Err(KillError::NotRunning(id)),
    }
}

fn leads_group(pid: u32) -> bool {
    let p = i32::try_from(pid).ok().and_then(Pid::from_raw);
    p.is_some_and(|p| rustix::process::getpgid(Some(p)) == Ok(p))
}

fn send(process: &ProcessRef, group: bool, sig: Signal) -> Result<(), SignalError> {
    if group {
        process.signal_group(sig)
    } else {
        process.signal(sig)
    }
}

fn signal_error(job: &Job, e: SignalError) -> KillError {
    let id = job.id.to_string();
    match e {
        SignalError::Gone(_) => KillError::NotRunning(id),
        SignalError::NotOurs(pid) => KillError::NotOurs { id, pid },
        SignalError::Os { pid, source } => KillError::Signal { id, pid, source },
    }
}

/// Records `request` (unless a stop was asked for already: the first request stands), then
/// stops the job and returns the agent's exit code recorded for it.
pub fn kill_with(job: &Job, grace: Duration, request: &StopRequest) -> Result<i32, KillError> {
    if let (Some(code), crate::jobs::Status::Limited) = (job.exit_code, job.status) {
        // Its agent is gone, but it waits to be continued at the reset: the stop cancels that,
        // and makes it `killed`.
        record(job, request)?;
        return Ok(code);
    }
    if job.exit_code.is_some() {
        return Err(KillError::Finished(job.id.to_string()));
    }
    let target = target(job)?;
    let ours = record(job, request)?;
    let sent = match &target {
        Target::Supervisor(p) => p.signal(Signal::TERM),
        Target::Agent { process, group, .. } => send(process, *group, Signal::TERM),
    };
    if let Err(e) = sent {
        // Nothing was signalled: a request just made is withdrawn, so the job is not taken for
        // killed when it ends by itself.
        if ours {
            let _ = std::fs::remove_file(job.file(STOP_FILE));
        }
        return Err(signal_error(job, e));
    }
    match target {
        Target::Supervisor(p) => stop_supervised(job, &p, grace),
        Target::Agent {
            process,
            group,
            supervised,
        } => stop_agent(job, &process, group, supervised, grace),
    }
}

/// The supervisor has been sent SIGTERM. A second one after our grace period makes it kill the
/// agent's group at once; it writes the exit line either way. Should it end without writing it,
/// whatever its agent left is stopped here; should it not answer (stopped, or hung), its agent's
/// group is stopped from here all the same.
fn stop_supervised(job: &Job, supervisor: &ProcessRef, grace: Duration) -> Result<i32, KillError> {
    let within = Duration::from_secs(5);
    for (i, wait) in [grace, within].into_iter().enumerate() {
        if i > 0 {
            let _ = supervisor.signal(Signal::TERM);
        }
        match wait_for_exit_line(job, wait, supervisor) {
            Waited::Code(code) => return Ok(code),
            Waited::SupervisorGone => return take_over(job, grace),
            Waited::Stopped => break,
            Waited::TimedOut => {}
        }
    }
    past_the_supervisor(job, supervisor, grace)
}

/// The supervisor does not answer: stopped (SIGSTOP, a debugger) or hung. It is woken (SIGCONT:
/// its SIGTERM is waiting for it), and its agent's group is stopped from here. Its exit line is
/// waited for a moment; if it does not come (a supervisor still stopped), it is written here.
fn past_the_supervisor(
    job: &Job,
    supervisor: &ProcessRef,
    grace: Duration,
) -> Result<i32, KillError> {
    let _ = supervisor.signal(Signal::CONT);
    let agent = job.processes().agent;
    let Some(agent) = agent.filter(|a| send(a, true, Signal::TERM).is_ok()) else {
        return match wait_for_exit_line(job, KILL_WAIT, supervisor) {
            Waited::Code(code) => Ok(code),
            _ => Err(KillError::SupervisorStuck {
                id: job.id.to_string(),
                pid: supervisor.pid,
            }),
        };
    };
    let code = end_group(&agent, true, grace);
    match wait_for_exit_line(job, KILL_WAIT, supervisor) {
        Waited::Code(code) => Ok(code),
        _ => write_last_words(job, agent.pid, code, true),
    }
}

/// The supervisor ended without an exit line: its agent's group, if anything of it lives, is
/// stopped here.
fn take_over(job: &Job, grace: Duration) -> Result<i32, KillError> {
    match job.processes().agent {
        Some(agent) if send(&agent, true, Signal::TERM).is_ok() => {
            stop_agent(job, &agent, true, true, grace)
        }
        _ => Err(KillError::Unrecorded(job.id.to_string())),
    }
}

/// Waits for an agent (or its group) signalled with SIGTERM to end, kills it after the grace
/// period, and writes its exit line; for a job of luzia's, meta.json's finish too.
fn stop_agent(
    job: &Job,
    process: &ProcessRef,
    group: bool,
    supervised: bool,
    grace: Duration,
) -> Result<i32, KillError> {
    let code = end_group(process, group, grace);
    write_last_words(job, process.pid, code, supervised)
}

/// Waits for a process (or its group) signalled with SIGTERM to end, and kills it after the
/// grace period. Returns the code its exit line gives: -15, or -9 when it had to be killed.
fn end_group(process: &ProcessRef, group: bool, grace: Duration) -> i32 {
    let alive = || {
        if group {
            process.find_group().is_alive()
        } else {
            process.is_alive()
        }
    };
    let mut code = -15;
    if !gone_within(grace, alive) {
        let _ = send(process, group, Signal::KILL);
        code = -9;
        // Written only once nothing of it can write after the exit line.
        gone_within(KILL_WAIT, alive);
    }
    code
}

/// Writes the exit line `code` of a job whose agent (`pid`) was stopped here; for a job of
/// luzia's (`supervised`), meta.json's finish too. The log is opened as any job file is
/// written: never through a link the agent planted, never waiting on a FIFO.
fn write_last_words(job: &Job, pid: u32, code: i32, supervised: bool) -> Result<i32, KillError> {
    let path = job.file(LOG_FILE);
    let exit_line_error = |source| KillError::ExitLine {
        id: job.id.to_string(),
        pid,
        path: path.clone(),
        source,
    };
    let log = open_append(&path).map_err(exit_line_error)?;
    let dir = job.dir();
    finish::exit_line(&dir, &log, code).map_err(exit_line_error)?;
    if supervised {
        let stop = stop::read(&dir).map(|(request, _)| request);
        let _ = finish::record_finish(&dir, code, stop.as_ref());
        finish::discard_reserve(&dir);
    }
    Ok(code)
}

fn gone_within(within: Duration, alive: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while alive() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Publishes the request in the job directory, durably, before any signal. `true` when it is
/// ours, `false` when an earlier request stands (a second kill escalates; the first asker is
/// the one recorded).
fn record(job: &Job, request: &StopRequest) -> Result<bool, KillError> {
    match publish_once(&job.dir(), STOP_FILE, &request.to_json()) {
        Ok(Published::Won) => Ok(true),
        Ok(Published::Lost(_)) => Ok(false),
        Err(e) => Err(KillError::Record {
            id: job.id.to_string(),
            path: job.file(STOP_FILE),
            source: e,
        }),
    }
}

enum Waited {
    Code(i32),
    SupervisorGone,
    /// The supervisor is stopped: it will write nothing until it is continued.
    Stopped,
    TimedOut,
}

fn wait_for_exit_line(job: &Job, within: Duration, supervisor: &ProcessRef) -> Waited {
    let deadline = Instant::now() + within;
    let path = job.file(LOG_FILE);
    // Never blocks, and refuses anything but a regular file (a FIFO would wait forever).
    let read = || {
        let f = crate::jobs::fs::files::open_nofollow(&path).ok()??;
        let len = f.metadata().ok()?.len();
        exit_code(&f, len).ok().flatten()
    };
    while Instant::now() < deadline {
        if let Some(code) = read() {
            return Waited::Code(code);
        }
        if !supervisor.is_alive() {
            // It may have written the line just before it ended.
            return read().map_or(Waited::SupervisorGone, Waited::Code);
        }
        if supervisor.is_stopped() {
            return Waited::Stopped;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Waited::TimedOut
}

#[cfg(test)]
mod tests;
