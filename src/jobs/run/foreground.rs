//! A job run in the operator's terminal (`luzia run --fg`, `luzia attach`): the agent reads and
//! writes the terminal, and this process is its supervisor, recording what a detached one would
//! (`.luzia/process.json`, `pid`, the exit line, `finished`/`exit_code` in meta.json, the notification
//! line). The agent stays in the terminal's foreground process group, so the terminal's own
//! keys reach it; the supervisor lets a Ctrl-C go to the agent alone, and passes SIGTERM and
//! SIGHUP (`luzia kill`, a closed terminal) on to it, with SIGKILL after the grace period.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::fs::private::Private;
use crate::jobs::model::process::Recorded;
use crate::jobs::run::account::{AgentEnv, agent_env};
use crate::jobs::run::agents::Kind;
use crate::jobs::run::supervise::{
    KILL_GRACE, Plan, SuperviseError, add_port, plan, record_agent, run_as, run_line, run_recorded,
    status_code,
};
use crate::jobs::run::{finish, shell};

/// Runs the job in `dir` in this terminal to the end. Returns its exit code, as written to the
/// exit line.
pub fn run(
    dir: &Path,
    notifications: Option<&Path>,
    rules: &AgentEnv,
    terminal: &str,
) -> Result<i32, SuperviseError> {
    let plan = plan(dir)?;
    let io = |path: std::path::PathBuf| move |source| SuperviseError::Io { path, source };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io(dir.to_owned()))?;
    let _inside = rt.enter();
    let signals = Signals::new().map_err(io(dir.to_owned()))?;
    let log_path = dir.join(LOG_FILE);
    let log = crate::jobs::fs::files::open_append(&log_path).map_err(io(log_path.clone()))?;
    let note = format!(
        "luzia: this job runs in the foreground of {terminal}: its output goes to that \
         terminal, not to this log\n"
    );
    let _ = finish::append(dir, &log, &note);
    // A job in the operator's terminal is watched: the usage limit's hold is the detached
    // supervisor's business.
    // The setup and checks write to the log, not the terminal, and stop with this process.
    let mut line = |text: &str| run_line(&rt, (dir, &plan), &log, None, rules, text);
    run_recorded(
        dir,
        &log,
        notifications,
        &plan,
        &|_| {},
        &mut line,
        |private| rt.block_on(run_agent((dir, private), &plan, &log, signals, rules)),
    )
}

async fn run_agent(
    (dir, private): (&Path, &Private),
    plan: &Plan,
    log: &File,
    mut signals: Signals,
    rules: &AgentEnv,
) -> i32 {
    let child = match spawn(dir, plan, rules) {
        Ok(child) => child,
        Err(message) => {
            let line = format!(
                "luzia: cannot start the agent {:?}: {message}\n",
                plan.argv[0]
            );
            let _ = finish::append(dir, log, &line);
            return 127;
        }
    };
    if let Some(agent) = child.id().and_then(Recorded::of) {
        record_agent(private, &plan.id, &agent);
    }
    wait(child, &mut signals).await
}

fn spawn(dir: &Path, plan: &Plan, rules: &AgentEnv) -> Result<tokio::process::Child, String> {
    let mut cmd = std::process::Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..])
        .current_dir(&plan.cwd)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    let account = run_as(dir, plan, &mut cmd).map_err(|e| e.to_string())?;
    let mut env = agent_env(
        std::env::vars_os(),
        rules,
        Kind::of(&plan.argv),
        account.as_ref(),
        (dir, &plan.id),
    );
    add_port(&mut env, plan.port);
    shell::for_the_shell(&mut env, shell::luzia_dir().as_deref());
    cmd.env_clear().envs(env);
    tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| e.to_string())
}

/// Waits for the agent. A Ctrl-C reached the agent as well (it shares the terminal's process
/// group): it is the agent's to act on. SIGTERM or SIGHUP is passed on, then SIGKILL after
/// [`KILL_GRACE`] (at once on a second one).
async fn wait(mut child: tokio::process::Child, signals: &mut Signals) -> i32 {
    let pid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let kill_at = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            status = child.wait() => return status_code(status),
            _ = signals.int.recv() => {}
            _ = signals.term.recv() => deadline = Some(pass_on(deadline, pid)),
            _ = signals.hup.recv() => deadline = Some(pass_on(deadline, pid)),
            _ = kill_at => {
                if let Some(p) = pid {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
                deadline = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
        }
    }
}

/// SIGTERM the first time (and the grace period starts), SIGKILL the next.
fn pass_on(
    deadline: Option<tokio::time::Instant>,
    pid: Option<rustix::process::Pid>,
) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let (sig, at) = match deadline {
        None => (rustix::process::Signal::TERM, now + KILL_GRACE),
        Some(_) => (
            rustix::process::Signal::KILL,
            now + Duration::from_secs(3600),
        ),
    };
    if let Some(p) = pid {
        let _ = rustix::process::kill_process(p, sig);
    }
    at
}

struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }
}
