//! The command line: global flags shared by every subcommand, one variant per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::jobs::{JobId, Status};

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
    /// A simulated agent, used by `tui --demo`
    #[command(hide = true)]
    DemoAgent(DemoAgentArgs),
}

#[derive(Debug, Args)]
pub struct DemoAgentArgs {
    #[arg(long, value_name = "DIR")]
    pub job_dir: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub scenario: String,
}

#[derive(Debug, Args)]
pub struct TuiArgs {
    /// Only jobs of this project (repeatable; `p` changes it in the cockpit)
    #[arg(long = "project", short = 'p', value_name = "P")]
    pub projects: Vec<String>,
    /// A wall display: shows everything, writes nothing, anywhere (also `read_only = true`)
    #[arg(long)]
    pub read_only: bool,
    /// Rotate the output pane through running and waiting jobs every SECONDS
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub cycle: Option<u64>,
    /// Open on a fresh demo jobs root with simulated agents (its path is printed on exit)
    #[arg(long, conflicts_with = "jobs_dir")]
    pub demo: bool,
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
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    pub id: JobId,
    /// Number of lines from the end
    #[arg(short = 'n', long = "lines", default_value_t = 50, value_name = "N")]
    pub lines: usize,
    /// Keep printing lines as they are appended; stop after the job's exit line
    #[arg(short = 'f', long)]
    pub follow: bool,
}
