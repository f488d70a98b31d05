//! `luzia checks ID`: the project's checks run again in a job's tree, once the job has ended
//! (its agent can no longer change the tree under them). The output goes to the person who
//! asked, not to output.log (whose last line must stay the exit line); the results replace
//! meta.json's `checks`, so the job's status follows them (`checks_failed`, or `completed`
//! again). Each line runs as the job's checks did: `sh -c`, in the tree, as the project's user,
//! with the agent's environment, `LUZIA_JOB_ID` and `LUZIA_PORT`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::{TAIL_WINDOW, run_checks, tail_of};
use crate::jobs::model::checks::Checks;
use crate::jobs::model::job::Job;
use crate::jobs::review;
use crate::jobs::run::account::{AgentEnv, agent_env};
use crate::jobs::run::agents::Kind;
use crate::jobs::run::supervise::add_port;

#[derive(Debug, thiserror::Error)]
pub enum AgainError {
    #[error(
        "job {0} is still running: its checks run by themselves when its agent ends (see `luzia \
         jobs {0}`)"
    )]
    Live(String),
    #[error(
        "the project {project} has no checks: add `checks = [\"cargo test\"]` (command lines) \
         to [projects.{project}] in {config}"
    )]
    NoChecks { project: String, config: String },
    #[error(
        "job {id}'s tree {path} is gone (merged, discarded or collected): there is nothing left \
         to check"
    )]
    NoTree { id: String, path: PathBuf },
    #[error(transparent)]
    Review(#[from] review::ReviewError),
}

/// Runs `commands` in `job`'s tree, its output copied to `out`; records and returns the result.
pub fn run_again(
    job: &Job,
    commands: Vec<String>,
    rules: &AgentEnv,
    by: &str,
    out: &mut dyn Write,
) -> Result<Checks, AgainError> {
    if job.status.is_active() {
        return Err(AgainError::Live(job.id.to_string()));
    }
    let meta = job.meta.as_deref();
    let tree = meta
        .map(|m| PathBuf::from(m.cwd.as_str()))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| job.dir());
    if !tree.is_dir() {
        return Err(AgainError::NoTree {
            id: job.id.to_string(),
            path: tree,
        });
    }
    let account = review::account_of(meta.map_or("", |m| m.user.as_str()))?;
    let dir = job.dir();
    let mut env = agent_env(
        std::env::vars_os(),
        rules,
        Kind::Command,
        account.as_ref(),
        (&dir, job.id.as_str()),
    );
    add_port(&mut env, meta.and_then(|m| m.port));
    let out = std::cell::RefCell::new(out);
    let mut run = |line: &str| -> super::CheckRun {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(line)
            .current_dir(&tree)
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null());
        if let Some(a) = &account {
            a.switch(&mut cmd);
        }
        match tee(cmd, &mut **out.borrow_mut()) {
            Ok((code, bytes)) => (Ok(code), tail_of(&bytes)),
            Err(e) => (Err(e.to_string()), Vec::new()),
        }
    };
    // The headings go to the person too, between the checks' own output.
    let mut say = |s: &str| {
        let _ = out.borrow_mut().write_all(s.as_bytes());
    };
    let note = format!("run again by {by}");
    let checks = run_checks(&dir, commands, &note, &mut run, &mut say, &|| false);
    Ok(checks)
}

/// Runs `cmd` with its stdout and stderr in one pipe, copied to `out` as it comes; its exit
/// code and the end of what it wrote.
fn tee(mut cmd: Command, out: &mut dyn Write) -> std::io::Result<(i32, Vec<u8>)> {
    let (mut reader, writer) = std::io::pipe()?;
    cmd.stdout(writer.try_clone()?).stderr(writer);
    let mut child = cmd.spawn()?;
    // Our copies of the writing end are gone with `cmd`: the pipe ends when the check's do.
    drop(cmd);
    let mut kept: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        let _ = out.write_all(&chunk[..n]);
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 2 * TAIL_WINDOW {
            kept.drain(..kept.len() - TAIL_WINDOW);
        }
    }
    let status = child.wait()?;
    Ok((crate::jobs::run::supervise::status_code(Ok(status)), kept))
}
