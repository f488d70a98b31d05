//! The supervisor (`luzia supervise JOB_DIR`): runs the agent of a dispatched job with
//! `prompt.txt` on stdin in the project's directory, appends its output to `output.log` as it
//! comes (Claude Code's stream-json rendered, see `stream`), then the exit line, `finished`/`exit_code` (and a requested stop) into meta.json, and
//! one line in the notifications log. A SIGTERM (from `luzia kill`, or a shutdown) is passed on
//! to the agent's process group, followed by SIGKILL after a grace period; the exit line is
//! written either way, and only once nothing the agent started is left to write after it.
//! The agent dies with the supervisor, however the supervisor ends. Both are recorded in
//! `process.json` with their start times, so that neither is ever mistaken for a later process
//! of the same pid.

use crate::jobs::fs::names::{LOG_FILE, META_FILE, PID_FILE, PRIVATE_DIR, PROCESS_FILE};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Local;
use serde_json::Value;

use crate::jobs::fs::files::{META_FILE_CAP, open_append, read_capped};
use crate::jobs::fs::private::Private;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::checks::{CheckState, Checks, failure};
use crate::jobs::model::process::{ProcessRecord, Recorded};
use crate::jobs::model::stop::{self, StopRequest};
use crate::jobs::review::record::{self, Begun};
use crate::jobs::run::account::AgentEnv;
use crate::jobs::run::acp;
use crate::jobs::run::agents::{Kind, speaks_acp};
use crate::jobs::run::stream::{self, JobSink, reader::Pump};
use crate::jobs::run::{finish, leftovers, steps};
use crate::jobs::text::sanitize::plain_text;

mod line;
mod signals;
mod spawn;
pub(super) use line::{add_port, run_line};
pub use signals::Signals;
pub(super) use signals::{on_stop_signal, run_to_end, status_code};
pub use spawn::may_stream;
use spawn::spawn_agent;
pub(super) use spawn::{die_with_supervisor, run_as};

/// How long an agent has to stop after SIGTERM before it is killed.
pub const KILL_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    #[error("{path}: {message}")]
    Job { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: is not valid JSON ({source})")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write in {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the supervisor needs from meta.json.
pub(super) struct Plan {
    pub(super) id: String,
    /// Whose `[projects.NAME]` settings (the agent's environment) apply.
    pub(super) project: String,
    pub(super) argv: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) user: String,
    /// For an agent that speaks ACP: the session to continue (`session_id` of a job that
    /// `resumes` another).
    pub(super) load: Option<String>,
    /// The job it continues (`resumes`).
    pub(super) resumes: Option<String>,
    /// The first of the job's ports (`LUZIA_PORT`): the one recorded, or a free block now.
    pub(super) port: Option<u16>,
}

pub(super) fn plan(dir: &Path) -> Result<Plan, SuperviseError> {
    let path = dir.join(META_FILE);
    let bad = |message: String| SuperviseError::Job {
        path: path.clone(),
        message,
    };
    let bytes = read_capped(&path, META_FILE_CAP)
        .and_then(|b| b.ok_or_else(|| rustix::io::Errno::NOENT.into()))
        .map_err(|source| SuperviseError::Read {
            path: path.clone(),
            source,
        })?;
    let meta: Value = serde_json::from_slice(&bytes).map_err(|source| SuperviseError::Json {
        path: path.clone(),
        source,
    })?;
    let argv: Vec<String> = meta["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if argv.is_empty() {
        return Err(bad(
            "has no `argv`: only jobs dispatched by `luzia run` can be supervised".into(),
        ));
    }
    let id = meta["id"].as_str().unwrap_or_default().to_owned();
    let port = meta["port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .or_else(|| steps::ports::choose(&id));
    Ok(Plan {
        port,
        id,
        project: meta["project"].as_str().unwrap_or_default().to_owned(),
        argv,
        cwd: meta["cwd"]
            .as_str()
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.to_owned()),
        user: meta["user"].as_str().unwrap_or_default().to_owned(),
        load: meta["session_id"]
            .as_str()
            .filter(|s| !s.is_empty() && meta["resumes"].as_str().is_some_and(|r| !r.is_empty()))
            .map(str::to_owned),
        resumes: meta["resumes"]
            .as_str()
            .filter(|r| !r.is_empty())
            .map(str::to_owned),
    })
}

/// Runs the job's agent to the end with no more environment than the allowlist. Returns the
/// exit code written to the exit line.
pub fn supervise(dir: &Path, notifications: Option<&Path>) -> Result<i32, SuperviseError> {
    supervise_with(dir, notifications, &|_| AgentEnv::default(), &|_| {})
}

/// [`supervise`], with what the config adds to the environment of an agent of each project,
/// and `ending`, called with the agent's exit code just before the exit line is written: what
/// must be on disk by the time anyone sees the job end (the hold of a usage limit).
pub fn supervise_with(
    dir: &Path,
    notifications: Option<&Path>,
    env: &dyn Fn(&str) -> AgentEnv,
    ending: &dyn Fn(i32),
) -> Result<i32, SuperviseError> {
    let plan = plan(dir)?;
    let io = |path: PathBuf| move |source| SuperviseError::Io { path, source };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io(dir.to_owned()))?;
    let _inside = rt.enter();
    // Signals are caught before the pid is published: whoever reads the pid and sends SIGTERM
    // finds us ready to pass it on and record the kill.
    let signals = std::cell::RefCell::new(Signals::new().ok());
    let log_path = dir.join(LOG_FILE);
    let log = open_append(&log_path).map_err(io(log_path.clone()))?;
    let rules = env(&plan.project);
    let mut line = |text: &str| {
        let mut held = signals.borrow_mut();
        run_line(&rt, (dir, &plan), &log, held.as_mut(), &rules, text)
    };
    run_recorded(
        dir,
        &log,
        notifications,
        &plan,
        ending,
        &mut line,
        |private| {
            run_agent(
                &rt,
                (dir, private),
                &plan,
                &log,
                signals.borrow_mut().as_mut(),
                &rules,
            )
        },
    )
}

/// The part every way of running a job shares (detached or in the operator's terminal): this
/// process published as the job's, the agent run by `run` (its exit code; it records the agent
/// in the job's private directory it is given), then the exit line, the finish in meta.json,
/// the notification, and the reserve given back.
pub(super) fn run_recorded(
    dir: &Path,
    log: &File,
    notifications: Option<&Path>,
    plan: &Plan,
    ending: &dyn Fn(i32),
    line: &mut steps::RunLine<'_>,
    run: impl FnOnce(&Private) -> i32,
) -> Result<i32, SuperviseError> {
    let id = plan.id.as_str();
    let code = match publish_self(dir, id) {
        Ok(private) => match record::begin(dir, id, &plan.user) {
            Begun::Refused(said) => {
                let _ = finish::append(dir, log, &said);
                127
            }
            begun => {
                if let Begun::Unrecorded(said) | Begun::Noted(said) = begun {
                    let _ = finish::append(dir, log, &said);
                }
                run_between_steps(dir, log, plan, line, run, &private)
            }
        },
        Err(message) => {
            let _ = finish::append(
                dir,
                log,
                &format!("luzia: {message}; the agent was not started\n"),
            );
            127
        }
    };
    ending(code);
    finish::exit_line(dir, log, code).map_err(|source| SuperviseError::Io {
        path: dir.join(LOG_FILE),
        source,
    })?;
    // Published before any signal was sent: if a stop was asked for, it is on disk by now.
    let stop = stop::read(dir).map(|(request, _)| request);
    let _ = finish::record_finish(dir, code, stop.as_ref());
    if let Some(n) = notifications {
        let checks = steps::checks_of(dir).filter(|c| c.state == CheckState::Failed);
        notify(n, id, code, stop.as_ref(), checks.as_ref());
    }
    finish::discard_reserve(dir);
    Ok(code)
}

/// The job's port recorded, its setup, the agent, its change recorded, then its checks: all of
/// it before the exit line, so whoever sees the job end finds its change and its checks (and
/// reads it as `checks_failed` from the first, never `completed` first).
fn run_between_steps(
    dir: &Path,
    log: &File,
    plan: &Plan,
    line: &mut steps::RunLine<'_>,
    run: impl FnOnce(&Private) -> i32,
    private: &Private,
) -> i32 {
    let id = plan.id.as_str();
    if let Some(port) = plan.port {
        // Not made durable: it means something only while this supervisor runs.
        let _ = crate::jobs::fs::publish::update_meta_unsynced(dir, |m| {
            m.insert("port".into(), port.into());
            true
        });
    }
    if steps::setup(dir, id, log, line).is_err() {
        steps::record_not_run(dir, "the setup failed");
        return 127;
    }
    let code = run(private);
    // What an agent printed of its figures is on disk before the job is seen to end.
    stream::text::record_usage(dir, Kind::of(&plan.argv));
    if let Some(said) = record::end(dir, id, &plan.user) {
        let _ = finish::append(dir, log, &said);
    }
    if let Some(checks) = steps::checks_of(dir) {
        let stopped = || stop::read(dir).is_some();
        match steps::not_run_because(code, stopped()) {
            Some(why) => steps::record_not_run(dir, &why),
            None => {
                steps::run_checks_logged(dir, log, checks.commands, line, &stopped);
            }
        }
    }
    code
}

/// Makes this process the reaper of whatever the agent leaves behind when its parent ends, so
/// that the leftovers of its process group can be waited for and reaped (see `leftovers`).
/// For the `luzia supervise` process only: it changes the whole process.
pub fn adopt_orphans() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// The room for the last words, then `process.json` (in the job's private directory, made here
/// before the job directory is given to the agent's user) and `pid`: from here on the job is
/// known by this process, and cannot be confused with a later one of the same pid.
pub(super) fn publish_self(dir: &Path, id: &str) -> Result<Private, String> {
    finish::ensure_reserve(dir).map_err(|e| {
        format!(
            "cannot reserve room for the exit line in {}: {e}",
            dir.display()
        )
    })?;
    let record = ProcessRecord {
        supervisor: Recorded::of(std::process::id()),
        agent: None,
        job: Some(id.to_owned()),
    };
    let private_file = dir.join(PRIVATE_DIR).join(PROCESS_FILE);
    let private = Private::create(dir)
        .and_then(|p| p.write(PROCESS_FILE, &record.to_json(), true).map(|()| p))
        .map_err(|e| format!("cannot write {}: {e}", private_file.display()))?;
    // For the orchestrator and `kill $(cat pid)`; luzia itself believes the private record.
    write_atomic(
        dir,
        PID_FILE,
        format!("{}\n", std::process::id()).as_bytes(),
    )
    .map_err(|e| format!("cannot write {}: {e}", dir.join(PID_FILE).display()))?;
    Ok(private)
}

/// The record of the job `id` with its supervisor (this process) and its agent, replaced in its
/// private directory. Not fsynced: a start time means nothing after a reboot, and the sooner the
/// agent is recorded, the smaller the window in which its supervisor could die unrecorded.
pub(super) fn record_agent(private: &Private, id: &str, agent: &Recorded) {
    let record = ProcessRecord {
        supervisor: Recorded::of(std::process::id()),
        agent: Some(agent.clone()),
        job: Some(id.to_owned()),
    };
    let _ = private.write(PROCESS_FILE, &record.to_json(), false);
}

/// Starts the agent, records it beside the supervisor, and waits until it and what it left
/// running in its process group have ended. Returns the agent's exit code.
fn run_agent(
    rt: &tokio::runtime::Runtime,
    (dir, private): (&Path, &Private),
    plan: &Plan,
    log: &File,
    mut signals: Option<&mut Signals>,
    rules: &AgentEnv,
) -> i32 {
    // Spawning registers the child with the runtime's reaper.
    let (mut child, tokens, keys) = match spawn_agent(dir, plan, log, rules) {
        Ok(spawned) => spawned,
        Err(message) => {
            let line = format!(
                "luzia: cannot start the agent {:?}: {message}\n",
                plan.argv[0]
            );
            let _ = finish::append(dir, log, &line);
            return 127;
        }
    };
    let agent = child.id().and_then(Recorded::of);
    if let Some(a) = &agent {
        record_agent(private, &plan.id, a);
    }
    if speaks_acp(&plan.argv) {
        return rt.block_on(acp::supervised::run_job(
            child,
            (dir, log),
            plan,
            (agent.as_ref(), tokens, keys),
            signals,
        ));
    }
    rt.block_on(async {
        let stdout = child.stdout.take();
        let pump = stdout
            .zip(log.try_clone().ok())
            .map(|(out, log)| Pump::start(out, JobSink::new(dir, log)));
        let code = run_to_end(child, signals.as_deref_mut()).await;
        let note = match &agent {
            Some(a) => leftovers::wait_out(&a.process(), signals.as_deref_mut()).await,
            None => None,
        };
        // Nothing the agent started is left in its group: what it wrote is read to the end
        // before the note and the exit line.
        if let Some(p) = pump {
            p.finish().await;
        }
        if let Some(note) = note {
            let _ = finish::append(dir, log, &note);
        }
        code
    })
}

/// `[HH:MM:SS] Agent <job id> finished (exit <code>)`, one line, one write; after a requested
/// stop it goes on with `, killed by <user@host> (<cli|tui>)`, after failed checks with `,
/// checks failed: <the first that failed>`.
pub(super) fn notify(
    path: &Path,
    id: &str,
    code: i32,
    stop: Option<&StopRequest>,
    failed: Option<&Checks>,
) {
    let killed = stop.map_or(String::new(), |s| format!(", killed by {}", s.by()));
    let checks = failed
        .and_then(|c| c.first_failure())
        .map_or(String::new(), |f| {
            format!(", checks failed: {}", plain_text(&failure(f)))
        });
    let line = format!(
        "[{}] Agent {id} finished (exit {code}){killed}{checks}\n",
        Local::now().format("%H:%M:%S")
    );
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    // The operator's file, not a job's, by the same rule all the same: a FIFO there must not
    // keep a finished job's supervisor (and its slot) waiting for a reader.
    if let Ok(mut f) = open_append(path) {
        let _ = f.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests;
