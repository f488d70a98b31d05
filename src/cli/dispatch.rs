//! Starting and stopping agents: run, kill, retry, reply, attach, and the queue.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::values::duration;
use crate::jobs::JobId;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum PriorityArg {
    High,
    Normal,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Which project:
  luzia run \"TASK\"              one word (quote the task): the git repository you stand in
  luzia run -C DIR \"TASK\"       the git repository holding DIR
  luzia run PROJECT TASK...     several words: the first names a configured project
  luzia run --project P TASK... the configured project P
A repository the config names runs under its configured name; any other is named after its
directory and runs with the defaults.")]
pub struct RunArgs {
    /// A configured project then the task, or the task alone (one quoted word) to run it in
    /// the git repository you stand in; several words are joined with spaces
    #[arg(required = true, num_args = 1.., value_name = "[PROJECT] TASK")]
    pub words: Vec<String>,
    /// The configured project to run in; every word is then the task
    #[arg(long, short = 'p', value_name = "P", conflicts_with = "dir")]
    pub project: Option<String>,
    /// Run in the git repository holding DIR; every word is then the task
    #[arg(short = 'C', value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Where it goes in the queue when it has to wait: high goes before every normal task
    #[arg(long, value_enum, default_value = "normal")]
    pub priority: PriorityArg,
    /// Queue it even if a slot is free
    #[arg(long, conflicts_with = "fg")]
    pub queue: bool,
    /// The agent to run, by name (claude, codex, gemini, opencode, qwen, or an [agents.NAME]
    /// of the config), over the project's and [agent] kind
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Run the agent here, interactively, in this terminal (Claude Code without print mode, the
    /// task as its first prompt); the job is recorded all the same
    #[arg(long)]
    pub fg: bool,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// How long the agent has to stop after SIGTERM before SIGKILL
    #[arg(long, value_parser = duration, default_value = "10s", value_name = "DURATION")]
    pub grace: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Answer the job's pending question first (a job that stopped needing input)
    #[arg(long, value_name = "TEXT")]
    pub answer: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReplyArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// What to tell the agent (several words are joined with spaces)
    #[arg(required = true, num_args = 1.., value_name = "TEXT")]
    pub text: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: Option<QueueAction>,
}

#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// Remove a queued task, or one that failed to start
    Cancel {
        /// The queue id, as `luzia queue` lists it, or the start of it that names one task
        id: String,
    },
    /// Put tasks that failed to start back in the queue (once what stopped them is fixed)
    Retry {
        /// Queue ids, as `luzia queue` lists them (or the start of each that names one task)
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<String>,
        /// Every task that failed to start
        #[arg(long)]
        all: bool,
    },
}
