//! `luzia reply`, `luzia attach` and `luzia run --fg`: a job's Claude Code session continued
//! with a message, or run in this terminal.

use std::io::{IsTerminal, Write};

use anyhow::{Result, bail};

use crate::cli::{AttachArgs, ReplyArgs};
use crate::config::Config;
use crate::dispatcher::{Dispatcher, Request, attach as attach_to, reply as reply_with};
use crate::jobs::run::dispatch::Created;
use crate::jobs::run::foreground;

pub fn reply(cfg: &Config, args: &ReplyArgs, out: &mut dyn Write) -> Result<u8> {
    let job = super::find_job(cfg, &args.id)?;
    let text = args.text.join(" ");
    if text.trim().is_empty() {
        bail!("the reply is empty: say what the agent should do next");
    }
    let created = Dispatcher::new(cfg)?.resume(&job, &reply_with(&text))?;
    crate::say!("luzia: {} continues the session of {}", created.id, job.id);
    writeln!(out, "{}", created.id)?;
    Ok(0)
}

/// `luzia attach ID`: the job's session, continued interactively here as a job of its own.
pub fn attach(cfg: &Config, args: &AttachArgs) -> Result<u8> {
    let job = super::find_job(cfg, &args.id)?;
    let terminal = terminal()?;
    let created = Dispatcher::new(cfg)?.resume(&job, &attach_to(&job))?;
    crate::say!(
        "luzia: {} opens the session of {} in this terminal",
        created.id,
        job.id
    );
    run_here(cfg, &created, job.project(), &terminal)
}

/// `luzia run --fg PROJECT TASK`.
pub fn run_foreground(cfg: &Config, req: &Request) -> Result<u8> {
    super::ensure_jobs_root(cfg)?;
    let terminal = terminal()?;
    let created = Dispatcher::new(cfg)?.foreground(req)?;
    crate::say!("luzia: {} runs in this terminal", created.id);
    run_here(cfg, &created, &req.project, &terminal)
}

fn run_here(cfg: &Config, created: &Created, project: &str, terminal: &str) -> Result<u8> {
    let code = foreground::run(
        &created.dir,
        Some(&cfg.notifications_log),
        &cfg.agent_env(project),
        terminal,
    )?;
    crate::say!("luzia: {} ended (exit:{code})", created.id);
    // An agent a signal ended: 128 + the signal, as a shell says it.
    let code = if code < 0 { 128 - code } else { code };
    Ok(u8::try_from(code).unwrap_or(1))
}

/// This terminal, as the log names it (`/dev/pts/3 of bruno@host`); an error when stdin is not
/// a terminal, which an interactive agent needs.
fn terminal() -> Result<String> {
    if !std::io::stdin().is_terminal() {
        bail!("an interactive session needs a terminal, and stdin is not one");
    }
    let tty = std::fs::read_link("/proc/self/fd/0")
        .map_or_else(|_| "a terminal".to_owned(), |p| p.display().to_string());
    Ok(format!(
        "{tty} of {}",
        crate::jobs::hitl::operator::operator()
    ))
}
