//! What a job leaves in its project's repository, removed when the job is collected (`luzia
//! gc`): its worktree (if a merge or discard has not removed it already), its branch
//! `luzia/<id>` and its snapshots `refs/luzia/<id>/*`. Never those of a worktree job whose
//! branch holds work that is in neither the project's HEAD nor a decision (merged or
//! discarded): that job is unmerged, and stays.

use std::path::Path;

use super::git::Git;
use super::merge::remove_worktree;
use super::{ReviewError, job_account};
use crate::jobs::model::job::Job;
use crate::jobs::model::review::{Isolation, Review};

/// What was (or, in a dry run, would be) removed of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tidied {
    /// The worktree's bytes, when it was still there.
    pub worktree: Option<u64>,
    pub branch: bool,
    pub refs: usize,
}

fn recorded(job: &Job) -> Option<&Review> {
    job.meta
        .as_ref()?
        .review
        .as_deref()
        .filter(|r| r.isolation != Isolation::None && !r.repo.is_empty())
}

/// A worktree job nobody merged or discarded whose branch has commits the project's HEAD
/// does not.
pub fn is_unmerged(job: &Job) -> Result<bool, ReviewError> {
    let Some(review) = recorded(job) else {
        return Ok(false);
    };
    if review.isolation != Isolation::Worktree || !review.outcome.is_empty() {
        return Ok(false);
    }
    if !Path::new(&review.repo).is_dir() {
        return Ok(false);
    }
    let git = Git::new(Path::new(&review.repo), job_account(job)?.as_ref());
    let branch = format!("refs/heads/{}", review.branch);
    let Some(tip) = git.commit(&branch)? else {
        // No branch: nothing of it to lose. A worktree left without one is work all the same.
        return Ok(Path::new(&review.worktree).is_dir());
    };
    let Some(head) = git.commit("HEAD")? else {
        return Ok(true);
    };
    let merged = git
        .output(["merge-base", "--is-ancestor", tip.as_str(), head.as_str()])?
        .status
        .success();
    Ok(!merged || Path::new(&review.worktree).is_dir() && has_loose_work(&git, review))
}

/// The worktree holds changes not committed on its branch.
fn has_loose_work(git: &Git, review: &Review) -> bool {
    let wt = Git::new(Path::new(&review.worktree), git.user.as_ref());
    wt.run(["status", "--porcelain", "-z"])
        .map(|out| !out.is_empty())
        .unwrap_or(true)
}

/// Removes the job's worktree, branch and refs (only says what it would in a dry run).
pub fn tidy(job: &Job, dry_run: bool) -> Result<Tidied, ReviewError> {
    let Some(review) = recorded(job) else {
        return Ok(Tidied::default());
    };
    let repo = Path::new(&review.repo);
    if !repo.is_dir() {
        return Ok(Tidied::default());
    }
    let git = Git::new(repo, job_account(job)?.as_ref());
    let mut done = Tidied::default();
    if review.isolation == Isolation::Worktree {
        let tree = Path::new(&review.worktree);
        if tree.is_dir() {
            done.worktree = Some(size(tree));
        }
        let branch = format!("refs/heads/{}", review.branch);
        done.branch = git.commit(&branch)?.is_some();
        if !dry_run {
            remove_worktree(&git, review)?;
            if done.branch {
                git.run(["branch", "-D", "-q", review.branch.as_str()])?;
            }
        }
    }
    let prefix = format!("refs/luzia/{}/", job.id);
    let refs = git.text(["for-each-ref", "--format=%(refname)", prefix.as_str()])?;
    let refs: Vec<&str> = refs.lines().filter(|l| !l.is_empty()).collect();
    done.refs = refs.len();
    if !dry_run && !refs.is_empty() {
        let input: String = refs.iter().map(|r| format!("delete {r}\n")).collect();
        let args = ["update-ref", "--stdin"];
        let out = git.output_with_input(args, input.as_bytes())?;
        if !out.status.success() {
            return Err(git.failed(args, &out));
        }
    }
    Ok(done)
}

/// Bytes held by the files under `dir` (links not followed).
pub fn size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
