//! What a job changed in its project, and what to do with it: the change read from git (files
//! with their counts, then the patch), merging a worktree job's branch into the project, or
//! discarding it. Also the isolation itself, set up before the agent starts and recorded when
//! it ends (`record`), which the supervisor calls. Every function here runs `git` and blocks:
//! callers that must stay responsive run them off their event loop. See docs/review.md.

mod diff;
pub mod gate;
pub mod git;
pub mod include;
mod merge;
pub mod overlap;
pub mod parse;
pub mod record;
mod remote;
pub mod snapshot;
pub mod tidy;

use std::path::PathBuf;

pub use diff::change;
pub use merge::{discard, discard_preview, merge, merge_preview};
pub use remote::{pull_request, push};

use crate::jobs::model::job::Job;
use crate::jobs::model::review::{Isolation, Review};
use crate::jobs::os::account::Account;

/// Why a change cannot be shown, merged or discarded. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("git is not installed (no `git` on PATH): install git to record and review changes")]
    NoGit,
    #[error(
        "{0} is not in a git repository: run `git init` there, or set isolation = \"none\" for \
         the project"
    )]
    NotARepo(PathBuf),
    #[error("`git {command}` failed in {dir}: {said}")]
    Git {
        dir: PathBuf,
        command: String,
        said: String,
    },
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "job {0} recorded no change: it ran without isolation (isolation = \"none\", a project \
         that is not a git repository, or a job from before luzia recorded changes)"
    )]
    NoReview(String),
    #[error("job {id}'s change was not recorded: {why}")]
    NotRecorded { id: String, why: String },
    #[error(
        "job {id} is still running: wait for it to end (or stop it with `luzia kill {id}`), then {what}"
    )]
    Live { id: String, what: &'static str },
    #[error(
        "job {0} ran in the project itself (isolation = \"snapshot\"): its change is already \
         there, with no branch to merge or discard (see `luzia diff {0}`)"
    )]
    NotWorktree(String),
    #[error(
        "the branch {branch} no longer exists in {repo}: nothing to merge (was it deleted by \
         hand, or discarded?)"
    )]
    NoBranch { branch: String, repo: PathBuf },
    #[error(
        "the project {repo} has uncommitted changes ({files}): commit or stash them, then merge \
         again"
    )]
    Dirty { repo: PathBuf, files: String },
    #[error(
        "the project {0} is on a detached HEAD: check out the branch to merge into (`git switch \
         main`), then merge again"
    )]
    Detached(PathBuf),
    #[error(
        "merging {branch} into {into} would conflict in {files}: nothing was changed; merge it \
         by hand (`git -C {repo} merge {branch}`) or discard the job"
    )]
    Conflict {
        repo: PathBuf,
        branch: String,
        into: String,
        files: String,
    },
    #[error(
        "a branch {branch} already exists in {repo}: a worktree job makes its own; delete or \
         rename that branch (`git -C {repo} branch -m {branch} OTHER`), then retry the job"
    )]
    BranchTaken { branch: String, repo: PathBuf },
    #[error(
        "{0} has no commit yet, and a worktree starts from one: commit once, or set isolation = \
         \"snapshot\" for the project"
    )]
    NoCommit(PathBuf),
    #[error("no user '{0}' on this machine, whose repository this is: fix [projects.NAME] user")]
    NoUser(String),
    #[error(
        "job {id}'s checks failed ({check}): nothing was merged; fix it (`luzia retry {id}`, or \
         `luzia checks {id}` once fixed by hand), or merge anyway with `luzia merge {id} --force`"
    )]
    ChecksFailed { id: String, check: String },
    #[error(
        "job {id}'s checks have not passed ({why}): nothing was merged; run them with `luzia \
         checks {id}`, or merge anyway with `luzia merge {id} --force`"
    )]
    ChecksNotRun { id: String, why: String },
    #[error(
        "the project {repo} has no remote named {remote}: add one (`git -C {repo} remote add \
         {remote} URL`), or name another with --remote"
    )]
    NoRemote { repo: PathBuf, remote: String },
    #[error("the pr_command `{command}` failed (exit {code}): {said}")]
    PrCommand {
        command: String,
        code: i32,
        said: String,
    },
    #[error(
        "the project {0} has no pr_command: add one to its [projects.NAME] table, e.g. \
         pr_command = \"gh pr create --fill --head {{branch}}\""
    )]
    NoPrCommand(String),
}

/// The job's review record, refusing a job that has none (or one without isolation).
pub(crate) fn review_of(job: &Job) -> Result<&Review, ReviewError> {
    let review = job
        .meta
        .as_ref()
        .and_then(|m| m.review.as_deref())
        .filter(|r| r.isolation != Isolation::None)
        .ok_or_else(|| ReviewError::NoReview(job.id.to_string()))?;
    if review.base.is_empty() {
        let why = if review.error.is_empty() {
            "its isolation was not set up yet (the job has not started)".to_owned()
        } else {
            review.error.clone()
        };
        return Err(ReviewError::NotRecorded {
            id: job.id.to_string(),
            why,
        });
    }
    Ok(review)
}

/// Who git runs as for this job: its project's user, when luzia runs as root (so that what
/// git writes in the user's repository stays the user's).
pub fn account_of(user: &str) -> Result<Option<Account>, ReviewError> {
    if user.is_empty() || !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    Account::lookup(user)
        .map(Some)
        .ok_or_else(|| ReviewError::NoUser(user.to_owned()))
}

pub(crate) fn job_account(job: &Job) -> Result<Option<Account>, ReviewError> {
    account_of(job.meta.as_ref().map_or("", |m| m.user.as_str()))
}

/// Whether the job's agent may still be changing things.
pub(crate) fn is_live(job: &Job) -> bool {
    job.exit_code.is_none() && job.status.is_active()
}
