//! The agent's side of the conversation: asking, waiting at a gate, reporting progress.

use std::path::PathBuf;

use clap::Args;

use super::values::duration;

/// The job directory an agent command works in.
#[derive(Debug, Args)]
pub struct JobDirArg {
    /// The job's directory (set for agents by the supervisor)
    #[arg(long, env = "LUZIA_JOB_DIR", value_name = "DIR")]
    pub job_dir: PathBuf,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AskType {
    Choice,
    Text,
    Confirm,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question, as the operator will read it
    pub question: String,
    /// An option to choose from (repeatable; makes the question a choice)
    #[arg(long = "option", short = 'o', value_name = "O")]
    pub options: Vec<String>,
    /// choice, text or confirm (default: choice with options, else text)
    #[arg(long = "type", value_enum)]
    pub kind: Option<AskType>,
    /// What the operator needs to know to answer (shown below the question)
    #[arg(long, value_name = "C", default_value = "")]
    pub context: String,
    /// Stop waiting after this long (90s, 30m, 2h)
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub timeout: Option<std::time::Duration>,
    /// The answer taken when the timeout passes (published as source "timeout")
    #[arg(long, requires = "timeout", value_name = "VALUE")]
    pub default: Option<String>,
    /// What an option means, one per --option in their order (repeatable)
    #[arg(long = "describe", value_name = "TEXT", requires = "options")]
    pub descriptions: Vec<String>,
    /// A short title shown above the question
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub header: String,
    /// Several options may be picked (the answer names them, ", "-joined)
    #[arg(long, requires = "options")]
    pub several: bool,
    #[command(flatten)]
    pub dir: JobDirArg,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub dir: JobDirArg,
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The gate's short name (`deploy`, `migrate-db`)
    pub name: String,
    /// What is about to happen, as the operator will read it
    pub description: String,
    /// What the operator needs to know to decide (shown below the description)
    #[arg(long, value_name = "C", default_value = "")]
    pub context: String,
    /// Approve by itself after this long (a gate never opens by itself otherwise)
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub auto_approve_after: Option<std::time::Duration>,
    /// Let the operator approve for the session too (WHAT: what that covers, shown with the
    /// gate); the scope approved, `once` or `session`, is then printed on stdout
    #[arg(long, value_name = "WHAT", num_args = 0..=1, default_missing_value = "")]
    pub allow_session: Option<String>,
    #[command(flatten)]
    pub dir: JobDirArg,
}

#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Percent done, 0-100
    pub percent: Option<f64>,
    /// The step being worked on (with --of)
    #[arg(long, requires = "of", value_name = "K")]
    pub step: Option<u64>,
    /// How many steps there are
    #[arg(long, requires = "step", value_name = "N")]
    pub of: Option<u64>,
    /// What the step is called
    #[arg(long, value_name = "TEXT")]
    pub name: Option<String>,
    /// Expected time left (90s, 5m)
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub eta: Option<std::time::Duration>,
    #[command(flatten)]
    pub dir: JobDirArg,
}
