//! Starting the agent: its command line, its stdio, its user and its environment.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use super::{Plan, add_port};
use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::names::PROMPT_FILE;
use crate::jobs::run::account::{Account, AgentEnv, agent_env};
use crate::jobs::run::acp::auth::Keys;
use crate::jobs::run::acp::usage::TokensFrom;
use crate::jobs::run::agents::codex::rollout::Sessions;
use crate::jobs::run::agents::{Kind, speaks_acp};
use crate::jobs::run::shell;

/// Why the agent could not be started (written to its log, where a person reads it).
#[derive(Debug, thiserror::Error)]
pub(in crate::jobs::run) enum SpawnError {
    #[error("cannot read prompt.txt: {0}")]
    Prompt(std::io::Error),
    #[error("no user '{0}' on this machine (add it, or fix [projects.NAME] user in the config)")]
    NoUser(String),
    #[error("cannot give the job directory to user '{0}': {1}")]
    TakeDir(String, std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Starts the agent; with it, where the tokens of its turn come from (for an ACP agent: Codex's
/// are in its session file, which its environment says where to find), and the keys of its
/// environment that stand for its ACP logins.
pub(super) fn spawn_agent(
    dir: &Path,
    plan: &Plan,
    log: &File,
    rules: &AgentEnv,
) -> Result<(tokio::process::Child, TokensFrom, Keys), SpawnError> {
    let acp = speaks_acp(&plan.argv);
    // An ACP agent reads its messages on stdin; the task is the prompt the session sends.
    let stdin = if acp {
        Stdio::piped()
    } else {
        open_nofollow(&dir.join(PROMPT_FILE))
            .and_then(|f| f.ok_or_else(|| rustix::io::Errno::NOENT.into()))
            .map(Stdio::from)
            .map_err(SpawnError::Prompt)?
    };
    let mut cmd = std::process::Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..])
        .current_dir(&plan.cwd)
        .stdin(stdin)
        .stdout(if acp || may_stream(&plan.argv) {
            Stdio::piped()
        } else {
            Stdio::from(log.try_clone()?)
        })
        .stderr(log.try_clone()?)
        // Its own process group: a kill reaches everything the agent started.
        .process_group(0);
    let account = run_as(dir, plan, &mut cmd)?;
    // After the switch of user, which would clear the death signal.
    die_with_supervisor(&mut cmd);
    let kind = Kind::of(&plan.argv);
    let mut env = agent_env(
        std::env::vars_os(),
        rules,
        kind,
        account.as_ref(),
        (dir, &plan.id),
    );
    add_port(&mut env, plan.port);
    shell::for_the_shell(&mut env, shell::luzia_dir().as_deref());
    let tokens = if kind == Kind::Codex {
        let var = |k: &str| {
            env.get(OsStr::new(k))
                .map(|v| v.to_string_lossy().into_owned())
        };
        let owner = account
            .as_ref()
            .map_or_else(|| rustix::process::geteuid().as_raw(), |a| a.uid);
        TokensFrom::CodexSessions(Sessions::of(&var, owner))
    } else {
        TokensFrom::Response
    };
    let keys = Keys::of(kind, &|k| {
        env.get(OsStr::new(k)).is_some_and(|v| !v.is_empty())
    });
    cmd.env_clear().envs(env);
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .map_err(SpawnError::Io)?;
    Ok((child, tokens, keys))
}

/// Whether the agent's stdout goes through the supervisor, which then tells stream-json from
/// anything else by the first line: when its command line asks for stream-json (`claude
/// --output-format stream-json`, or a shell command that says it). Any other agent writes
/// output.log itself, as it always did: a pipe would hide from it that the disk is full, and an
/// agent writing for ever would then never learn to stop.
pub fn may_stream(argv: &[String]) -> bool {
    argv.iter().any(|a| a.contains("stream-json"))
}

/// With a project user and luzia running as root, the agent runs as that user, in a job
/// directory that is the user's: see [`Account`]. Returns the account switched to.
pub(in crate::jobs::run) fn run_as(
    dir: &Path,
    plan: &Plan,
    cmd: &mut std::process::Command,
) -> Result<Option<Account>, SpawnError> {
    if plan.user.is_empty() || !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let account =
        Account::lookup(&plan.user).ok_or_else(|| SpawnError::NoUser(plan.user.clone()))?;
    account
        .take_dir(dir)
        .map_err(|e| SpawnError::TakeDir(plan.user.clone(), e))?;
    account.switch(cmd);
    Ok(Some(account))
}

/// The agent gets SIGKILL from the kernel when the supervisor ends, however it ends: even a
/// SIGKILL of the supervisor, which leaves it no chance to pass anything on. Set between fork
/// and exec, after any change of user (which would clear it). The kernel sends it when the
/// thread that spawned the agent ends: the supervisor spawns from the thread that waits for it.
#[allow(
    unsafe_code,
    reason = "pre_exec runs code between fork and exec, which only Rust's unsafe can express; the closure makes only async-signal-safe system calls"
)]
pub(in crate::jobs::run) fn die_with_supervisor(cmd: &mut std::process::Command) {
    let supervisor = rustix::process::getpid();
    // SAFETY: prctl and getppid are system calls that allocate nothing: async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // A supervisor that died before the line above will send no signal: do not start.
            if rustix::process::getppid() != Some(supervisor) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}
