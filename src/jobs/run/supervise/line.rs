//! One of the project's setup or check lines, run by the supervisor: `sh -c LINE` in the job's
//! tree, as the agent runs (the project's user, the agent's environment with `LUZIA_PORT`, its
//! own process group, dying with the supervisor), its output appended to output.log. A stop
//! (SIGTERM to the supervisor) is passed on to its group as it would be to the agent's.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use super::{Plan, Signals, die_with_supervisor, run_as, run_to_end};
use crate::jobs::run::account::{AgentEnv, agent_env};
use crate::jobs::run::agents::Kind;
use crate::jobs::run::shell;

/// Runs `line` to its end; its exit code (minus the signal that ended it), or why it could not
/// be started.
pub(in crate::jobs::run) fn run_line(
    rt: &tokio::runtime::Runtime,
    (dir, plan): (&Path, &Plan),
    log: &File,
    signals: Option<&mut Signals>,
    rules: &AgentEnv,
    line: &str,
) -> Result<i32, String> {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(line)
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log.try_clone().map_err(|e| e.to_string())?)
        .process_group(0);
    let account = run_as(dir, plan, &mut cmd).map_err(|e| e.to_string())?;
    die_with_supervisor(&mut cmd);
    let mut env = agent_env(
        std::env::vars_os(),
        rules,
        Kind::Command,
        account.as_ref(),
        (dir, &plan.id),
    );
    add_port(&mut env, plan.port);
    shell::for_the_shell(&mut env, shell::luzia_dir().as_deref());
    cmd.env_clear().envs(env);
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| e.to_string())?;
    Ok(rt.block_on(run_to_end(child, signals)))
}

/// `LUZIA_PORT`, the first of the job's ports, when it has some.
pub(in crate::jobs::run) fn add_port(
    env: &mut std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString>,
    port: Option<u16>,
) {
    if let Some(p) = port {
        env.insert("LUZIA_PORT".into(), p.to_string().into());
        env.insert(
            "LUZIA_PORT_COUNT".into(),
            crate::jobs::run::steps::ports::COUNT.to_string().into(),
        );
    }
}
