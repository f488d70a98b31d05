//! What a job changed, and bringing it in: diff, merge, discard, checks, push, pr.

use clap::Args;

use crate::jobs::JobId;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// The files and their counts only, without the diff
    #[arg(long)]
    pub stat: bool,
    /// As JSON: files, patch, truncated, notes, stat
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Merge although the project's checks failed or never ran for this job (who forced it is
    /// recorded)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ChecksArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// Print the recorded result as JSON (meta.json's `checks`) after running them
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The job: its id, or the start of it that names one job (as the cockpit shows ids)
    pub id: JobId,
    /// The remote to push to (default: the project branch's upstream remote, else `origin`)
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}
