//! The command line: global flags shared by every subcommand, one variant per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::jobs::{JobId, Status};

mod agent_side;
mod answers;
mod dispatch;
mod review;
mod values;

pub use agent_side::*;
pub use answers::*;
pub use dispatch::*;
pub use review::*;
use values::{cycle_period, heartbeat_period, interval};

#[derive(Debug, Parser)]
#[command(
    name = "luzia",
    version,
    about = "A cockpit for fleets of background AI coding agents"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Directory holding the job directories (else LUZIA_JOBS_DIR, else jobs_dir in the config)
    #[arg(long, global = true, value_name = "DIR")]
    pub jobs_dir: Option<PathBuf>,
    /// Config file (else LUZIA_CONFIG, $XDG_CONFIG_HOME/luzia/config.toml, /etc/luzia/config.toml)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List jobs newest first, or show one job in full
    Jobs(JobsArgs),
    /// Print the end of a job's output, or follow it until the job exits
    Logs(LogsArgs),
    /// The full-screen cockpit: live jobs, their output, and what needs you
    Tui(TuiArgs),
    /// A one-shot dashboard: counts, system, running and waiting jobs, alarms, issues, events
    Status(StatusArgs),
    /// Pending questions and approval gates across all jobs, oldest first
    Questions(QuestionsArgs),
    /// Answer a job's pending question
    Answer(AnswerArgs),
    /// Approve a job's pending gate
    Approve(ApproveArgs),
    /// Deny a job's pending gate (the agent receives the reason word for word)
    Deny(DenyArgs),
    /// (agent) Ask the operator a question and print the answer
    Ask(AskArgs),
    /// (agent) Wait at an approval gate: exit 0 approved, 4 denied
    Gate(GateArgs),
    /// (agent) Report progress
    Progress(ProgressArgs),
    /// (agent) The MCP server Claude Code starts for a job: permission requests and questions
    /// go to the operator, progress to progress.json (stdio, JSON-RPC)
    Mcp(McpArgs),
    /// Start an agent on a task in a project (or queue it when every slot is taken)
    Run(RunArgs),
    /// Stop a running job (SIGTERM, then SIGKILL after a grace period); the exit line is recorded
    Kill(KillArgs),
    /// Start a job again: same project and task, `retry_of` set (a Claude Code job continues
    /// its session)
    Retry(RetryArgs),
    /// Continue a finished job's Claude Code session with a message, as a new job
    Reply(ReplyArgs),
    /// Open a finished job's Claude Code session interactively in this terminal
    Attach(AttachArgs),
    /// What a job changed in its project: the files with +/- counts, then the diff
    Diff(DiffArgs),
    /// Bring a worktree job's branch into the project's current branch (fast-forward or a
    /// merge commit; refused on conflict, with nothing changed)
    Merge(MergeArgs),
    /// Remove a worktree job's worktree and branch (its change stays readable with `diff`)
    Discard(ReviewArgs),
    /// Run the project's checks again in a finished job's tree, and record the result
    Checks(ChecksArgs),
    /// Push a worktree job's branch to the project's remote
    Push(PushArgs),
    /// Open a pull request for a worktree job's branch with the project's `pr_command`, and
    /// record the address it prints
    Pr(ReviewArgs),
    /// Tasks waiting for a free slot, and those that failed to start with the reason
    Queue(QueueArgs),
    /// Move finished jobs older than an age out of the jobs root (to an archive beside it, or delete them)
    Gc(GcArgs),
    /// Check what a first job needs: the agent program and its credentials (by name), the
    /// directories, inotify, git, tmux and ssh; exit 1 when something blocks a job
    Doctor(DoctorArgs),
    /// Run the [notify] command for each new question, gate, failure, stall or overrun
    Notify(NotifyArgs),
    /// The jobs root as JSON lines: every job, then each change as it happens, and a heartbeat
    /// (what another machine's cockpit reads over ssh); ends when its stdin or stdout closes
    Watch(WatchArgs),
    /// Run a job's agent to the end (started by `run`; not for people)
    #[command(hide = true)]
    Supervise(SuperviseArgs),
    /// Wait for the usage limit's reset and continue what it stopped (started by a supervisor;
    /// not for people)
    #[command(hide = true, name = "__limit-waiter")]
    LimitWaiter(LimitWaiterArgs),
    /// Write a commented config file from what is found here: the agent CLIs on PATH, the git
    /// repository you stand in as a project, the jobs root in use
    Init(InitArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout: `luzia man > ~/.local/share/man/man1/luzia.1`
    Man,
    /// The orchestrator's form: `luzia PROJECT TASK...`
    #[command(external_subcommand)]
    Shorthand(Vec<String>),
    /// A simulated agent, used by `tui --demo`
    #[command(hide = true)]
    DemoAgent(DemoAgentArgs),
    /// What the completion scripts offer: job ids, projects or hosts, one a line (not for people)
    #[command(hide = true, name = "__candidates")]
    Candidates(CandidatesArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CandidateKind {
    Jobs,
    Projects,
    Hosts,
}

#[derive(Debug, Args)]
pub struct CandidatesArgs {
    /// What to list: jobs (their ids, newest first), projects or hosts
    #[arg(value_enum)]
    pub kind: CandidateKind,
    /// Only those that start with this (the word being completed)
    #[arg(default_value = "", allow_hyphen_values = true)]
    pub prefix: String,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Write the config to stdout instead of the file
    #[arg(long)]
    pub print: bool,
    /// Replace the file when it exists
    #[arg(long, conflicts_with = "print")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct DemoAgentArgs {
    #[arg(long, env = "LUZIA_JOB_DIR", value_name = "DIR")]
    pub job_dir: PathBuf,
    /// claude, tests, build, question, gate, stream, fail, stall, long, needs_input (default: from
    /// the task)
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,
    /// Claude Code's own flag, named on the demo's command line so that the supervisor reads
    /// the agent's stdout as it would read claude's (the claude scenario prints stream-json;
    /// the others print text, which passes through unchanged)
    #[arg(long, value_name = "FORMAT")]
    pub output_format: Option<String>,
}

#[derive(Debug, Args)]
pub struct TuiArgs {
    /// Only jobs of this project (repeatable; `p` changes it in the cockpit)
    #[arg(long = "project", short = 'p', value_name = "P")]
    pub projects: Vec<String>,
    /// A wall display: shows everything, writes nothing, anywhere (also `read_only = true`)
    #[arg(long)]
    pub read_only: bool,
    /// Rotate the output pane through running and waiting jobs this often (10s, 2m; a bare
    /// number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = cycle_period)]
    pub cycle: Option<u64>,
    /// Open on a fresh demo jobs root with simulated agents (its path is printed on exit)
    #[arg(long, conflicts_with = "jobs_dir")]
    pub demo: bool,
    /// With --demo: leave the demo's agents running when the cockpit quits (else they are
    /// stopped)
    #[arg(long, requires = "demo")]
    pub keep: bool,
    /// Also show the jobs of this host of the config (`[hosts.NAME]`), over ssh (repeatable);
    /// this machine's jobs are always shown
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// Also show the jobs of every host of the config
    #[arg(long, conflicts_with = "hosts")]
    pub all_hosts: bool,
}

#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Show this job in full instead of the list
    pub id: Option<JobId>,
    /// Only jobs of this project (repeatable)
    #[arg(long = "project", short = 'p', value_name = "P")]
    pub projects: Vec<String>,
    /// Only jobs with this status (repeatable): running, waiting, completed, failed, killed,
    /// needs_input, died, unknown
    #[arg(long = "status", short = 's', value_name = "S")]
    pub statuses: Vec<Status>,
    /// Print JSON (an array for the list, an object for one job)
    #[arg(long)]
    pub json: bool,
    /// Add started, finished and duration columns
    #[arg(long)]
    pub timing: bool,
    /// Show at most N jobs
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// The jobs of this host of the config (`[hosts.NAME]`, over ssh; `local` is this
    /// machine) instead of this machine's (repeatable)
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// The jobs of this machine and of every host of the config, with a HOST column
    #[arg(long, conflicts_with = "hosts")]
    pub all_hosts: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Number of lines from the end
    #[arg(short = 'n', long = "lines", default_value_t = 50, value_name = "N")]
    pub lines: usize,
    /// Keep printing lines as they are appended; stop after the job's exit line
    #[arg(short = 'f', long)]
    pub follow: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    #[value(alias = "markdown")]
    Md,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only jobs of this project
    #[arg(long, short = 'p', value_name = "P")]
    pub project: Option<String>,
    /// Only alarms, system alerts and error/critical issues of live jobs; exit 3 when there is one
    #[arg(long)]
    pub alerts: bool,
    /// How many recent events to show
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub recent: usize,
    /// Show progress milestones among the recent events (hidden by default)
    #[arg(long)]
    pub progress: bool,
    /// Write the report to a file (json or md) and print its path
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "watch")]
    pub export: Option<ExportFormat>,
    /// The file (or directory) to export to [default: ./luzia-status-YYYYMMDD-HHMMSS.EXT]
    #[arg(long, value_name = "PATH", requires = "export")]
    pub output: Option<PathBuf>,
    /// Redraw in place every --interval until Ctrl-C
    #[arg(long)]
    pub watch: bool,
    /// How often --watch redraws (500ms, 2s, 1m)
    #[arg(long, value_parser = interval, default_value = "2s", value_name = "DURATION")]
    pub interval: std::time::Duration,
    /// The dashboard of this host of the config (`[hosts.NAME]`, over ssh; `local` is this
    /// machine) instead of this machine's, under its name (repeatable)
    #[arg(long = "host", value_name = "NAME", conflicts_with_all = ["watch", "export"])]
    pub hosts: Vec<String>,
    /// The dashboards of this machine and of every host of the config, one after the other
    #[arg(long, conflicts_with_all = ["hosts", "watch", "export"])]
    pub all_hosts: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["watch", "once", "test"])))]
pub struct NotifyArgs {
    /// Keep watching the jobs and notify as events come (no cockpit needed); until Ctrl-C
    #[arg(long)]
    pub watch: bool,
    /// Look once, send what is new since the last look, and exit (for cron)
    #[arg(long)]
    pub once: bool,
    /// Send one sample event, to check the [notify] command
    #[arg(long)]
    pub test: bool,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// One JSON object a line: hello, each job, each change, heartbeats (the only form for now)
    #[arg(long)]
    pub json: bool,
    /// Time between heartbeat lines, 1s to 1h (5s, 1m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = heartbeat_period)]
    pub heartbeat: u64,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Collect jobs finished longer ago than this: the duration syntax, with w for weeks (30d,
    /// 2w, 1d12h; a bare number is refused)
    #[arg(long, value_name = "AGE")]
    pub older_than: String,
    /// Say what would be collected, and touch nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Delete the jobs instead of archiving them
    #[arg(long, conflicts_with = "archive_to")]
    pub delete: bool,
    /// Move the jobs here (on the jobs root's file system); default: `<jobs root>-archive` beside it
    #[arg(long, value_name = "DIR")]
    pub archive_to: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// One JSON object: `ready`, and each check's level, topic, what it says and its fix
    #[arg(long)]
    pub json: bool,
    /// Check the agent of this name (as `luzia run --agent NAME` runs it) rather than
    /// [agent] kind's or [agent] command
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct LimitWaiterArgs {
    /// The queue root whose holds and resumes it waits for
    #[arg(long)]
    pub queue: PathBuf,
    /// Its standard input is the queue's waiter lock, taken by its starter
    #[arg(long)]
    pub inherit_lock: bool,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The open descriptor of the job's entry in `.running/`, inherited from the starter.
    #[arg(long, hide = true)]
    pub slot_fd: Option<i32>,
    pub job_dir: PathBuf,
}

#[cfg(test)]
mod tests;
