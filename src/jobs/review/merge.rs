//! Bringing a worktree job's branch into the project's current branch, or throwing it away.
//!
//! A merge decides everything before it touches anything: the branch's tip (with any work the
//! agent left uncommitted in its worktree, taken as a snapshot commit on top of it), the
//! project's branch and a clean tree, then the result with `git merge-tree --write-tree`, which
//! writes objects only. A conflict is refused there, naming the files, with the project's tree,
//! index and HEAD untouched. Only then is the leftover work committed on the job's branch and
//! the project moved, by `git merge --ff-only` to the branch's tip or to a merge commit made
//! with `git commit-tree`: a checkout that itself refuses rather than overwrite anything.

use std::path::{Path, PathBuf};

use super::gate::{self, Gate};
use super::git::Git;
use super::{ReviewError, diff, is_live, job_account, review_of, snapshot};
use crate::jobs::fs::publish::update_meta;
use crate::jobs::model::job::Job;
use crate::jobs::model::review::{Isolation, Review};

/// What a merge would do, as decided before anything is touched.
struct MergePlan {
    repo: PathBuf,
    branch: String,
    /// The project's branch it goes into.
    into: String,
    head: String,
    /// The branch's tip, or the snapshot of the leftover work on top of it.
    tip: String,
    /// Files the agent left uncommitted in its worktree (committed on the branch first).
    leftover: usize,
    commits: usize,
    files: usize,
    how: How,
}

#[derive(PartialEq, Eq)]
enum How {
    AlreadyIn,
    FastForward,
    /// The tree of the merge commit to make.
    Commit(String),
}

pub(super) fn worktree_review<'a>(
    job: &'a Job,
    what: &'static str,
) -> Result<&'a Review, ReviewError> {
    let review = review_of(job)?;
    if review.isolation != Isolation::Worktree {
        return Err(ReviewError::NotWorktree(job.id.to_string()));
    }
    if is_live(job) {
        return Err(ReviewError::Live {
            id: job.id.to_string(),
            what,
        });
    }
    Ok(review)
}

fn count(git: &Git, args: &[&str]) -> Result<usize, ReviewError> {
    Ok(git.text(args)?.trim().parse().unwrap_or(0))
}

fn plan(job: &Job, git: &Git, review: &Review) -> Result<MergePlan, ReviewError> {
    let repo = PathBuf::from(&review.repo);
    let branch = review.branch.clone();
    let tip = git
        .commit(&format!("refs/heads/{branch}"))?
        .ok_or_else(|| ReviewError::NoBranch {
            branch: branch.clone(),
            repo: repo.clone(),
        })?;
    let (tip, leftover) = with_leftover(job, git, review, tip)?;
    let into = git
        .branch()?
        .ok_or_else(|| ReviewError::Detached(repo.clone()))?;
    let head = git
        .commit("HEAD")?
        .ok_or(ReviewError::NoCommit(repo.clone()))?;
    let range = format!("{head}..{tip}");
    let commits = count(git, &["rev-list", "--count", &range])?;
    let files = diff::stat(git, &head, &tip)?.files as usize;
    let mut p = MergePlan {
        repo,
        branch,
        into,
        head,
        tip,
        leftover,
        commits,
        files,
        how: How::AlreadyIn,
    };
    p.how = how(git, &p)?;
    Ok(p)
}

/// The branch's tip with the work the agent left uncommitted in its worktree on top, as a
/// snapshot commit (written as an object only), and how many files that work holds.
pub(super) fn with_leftover(
    job: &Job,
    git: &Git,
    review: &Review,
    tip: String,
) -> Result<(String, usize), ReviewError> {
    let tree = Path::new(&review.worktree);
    if !tree.is_dir() {
        return Ok((tip, 0));
    }
    let wt = Git::new(tree, git.user.as_ref());
    let snap = snapshot::take(
        &wt,
        job.id.as_str(),
        &format!("luzia: work job {} left uncommitted", job.id),
    )?;
    // A worktree moved to another branch by hand: its state is not this branch's to commit.
    if snap.head.as_deref() != Some(tip.as_str()) {
        return Ok((tip, 0));
    }
    let changed = diff::stat(git, &tip, &snap.commit)?.files as usize;
    Ok(match changed {
        0 => (tip, 0),
        n => (snap.commit, n),
    })
}

/// How the branch's tip goes into the project's HEAD: already in, a fast-forward, or a merge
/// commit whose tree `git merge-tree` computed; a conflict is refused here.
fn how(git: &Git, p: &MergePlan) -> Result<How, ReviewError> {
    let ancestor = |a: &str, b: &str| -> Result<bool, ReviewError> {
        Ok(git
            .output(["merge-base", "--is-ancestor", a, b])?
            .status
            .success())
    };
    if ancestor(&p.tip, &p.head)? {
        return Ok(How::AlreadyIn);
    }
    if ancestor(&p.head, &p.tip)? {
        return Ok(How::FastForward);
    }
    let out = git.output([
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        p.head.as_str(),
        p.tip.as_str(),
    ])?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let tree = lines.next().unwrap_or_default().to_owned();
    match out.status.code() {
        Some(0) => Ok(How::Commit(tree)),
        Some(1) => Err(ReviewError::Conflict {
            repo: p.repo.clone(),
            branch: p.branch.clone(),
            into: p.into.clone(),
            files: lines
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(", "),
        }),
        _ => Err(git.failed(["merge-tree", "--write-tree"], &out)),
    }
}

/// The project's uncommitted changes to tracked files, named; a merge refuses them.
fn dirty(git: &Git, repo: &Path) -> Result<(), ReviewError> {
    let out = git.run(["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
    let files: Vec<String> = out
        .split(|&b| b == 0)
        .filter(|r| r.len() > 3)
        .map(|r| String::from_utf8_lossy(&r[3..]).into_owned())
        .collect();
    if files.is_empty() {
        return Ok(());
    }
    let mut named = files.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if files.len() > 5 {
        named.push_str(&format!(" and {} more", files.len() - 5));
    }
    Err(ReviewError::Dirty {
        repo: repo.to_owned(),
        files: named,
    })
}

fn describe(p: &MergePlan) -> String {
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let what = format!(
        "merge {} ({}, {}) into {}",
        p.branch,
        plural(p.commits, "commit"),
        plural(p.files, "file"),
        p.into
    );
    let how = match &p.how {
        How::AlreadyIn => {
            return format!("{} is already in {}: nothing to merge", p.branch, p.into);
        }
        How::FastForward => "fast-forward",
        How::Commit(_) => "with a merge commit",
    };
    let mut s = format!("{what}: {how}");
    if p.leftover > 0 {
        s.push_str(&format!(
            "\n{} left uncommitted in the worktree will be committed on {} first",
            plural(p.leftover, "file"),
            p.branch
        ));
    }
    s
}

pub(super) fn git_of(job: &Job, review: &Review) -> Result<Git, ReviewError> {
    let user = job_account(job)?;
    Ok(Git::new(Path::new(&review.repo), user.as_ref()))
}

/// What `merge` would do, or why it would refuse.
pub fn merge_preview(job: &Job, gate: &Gate) -> Result<String, ReviewError> {
    let review = worktree_review(job, "merge it")?;
    let forced = gate::check(job, gate)?;
    let git = git_of(job, review)?;
    let p = plan(job, &git, review)?;
    if p.how != How::AlreadyIn {
        dirty(&git, &p.repo)?;
    }
    let mut said = describe(&p);
    if let Some(f) = forced {
        said.push_str(&format!("\nforced {f}"));
    }
    Ok(said)
}

/// Merges the job's branch into the project's current branch, then removes its worktree;
/// says what was done.
pub fn merge(job: &Job, gate: &Gate) -> Result<String, ReviewError> {
    let review = worktree_review(job, "merge it")?;
    let forced = gate::check(job, gate)?;
    let git = git_of(job, review)?;
    let p = plan(job, &git, review)?;
    if p.how == How::AlreadyIn {
        return Ok(describe(&p));
    }
    dirty(&git, &p.repo)?;
    if p.leftover > 0 {
        commit_on_branch(&git, review, &p.tip)?;
    }
    let target = match &p.how {
        How::Commit(tree) => {
            let message = format!("Merge branch '{}' (luzia job {})", p.branch, job.id);
            git.as_user().text([
                "commit-tree",
                tree,
                "-p",
                &p.head,
                "-p",
                &p.tip,
                "-m",
                &message,
            ])?
        }
        _ => p.tip.clone(),
    };
    git.run(["merge", "--ff-only", "-q", target.as_str()])?;
    let mut done = describe(&p).replacen("merge ", "merged ", 1);
    let outcome = format!("merged into {} at {}", p.into, diff::short(&target));
    let _ = update_meta(&job.dir(), |m| {
        set_review(m, "outcome", &outcome)
            && forced.as_ref().is_none_or(|f| set_review(m, "forced", f))
    });
    if let Some(f) = &forced {
        done.push_str(&format!("\nforced {f} (recorded in the job)"));
    }
    // Merged: the worktree has nothing left to give (the branch and the refs keep the change).
    match remove_worktree(&git, review) {
        Ok(()) => done.push_str(&format!("\nremoved the worktree {}", review.worktree)),
        Err(e) => done.push_str(&format!(
            "\nthe worktree {} stays ({e}): `luzia discard {}` or `luzia gc` removes it",
            review.worktree, job.id
        )),
    }
    Ok(done)
}

/// Moves the job's branch to `tip` (the snapshot of the work left uncommitted on top of it).
fn commit_on_branch(git: &Git, review: &Review, tip: &str) -> Result<(), ReviewError> {
    let branch_ref = format!("refs/heads/{}", review.branch);
    let old = git.text(["rev-parse", branch_ref.as_str()])?;
    git.run([
        "update-ref",
        "-m",
        "luzia: leftover work",
        &branch_ref,
        tip,
        &old,
    ])?;
    // The worktree's index follows its branch, so that it reads as clean, not as undoing the
    // commit just made; its files are already what the commit holds.
    let wt = Git::new(Path::new(&review.worktree), git.user.as_ref());
    let _ = wt.run(["reset", "-q"]);
    Ok(())
}

/// Commits the work the agent left uncommitted in its worktree on its branch (as a merge
/// would); how many files it held.
pub(super) fn commit_leftover(job: &Job, git: &Git, review: &Review) -> Result<usize, ReviewError> {
    let branch = format!("refs/heads/{}", review.branch);
    let tip = git.commit(&branch)?.ok_or_else(|| ReviewError::NoBranch {
        branch: review.branch.clone(),
        repo: PathBuf::from(&review.repo),
    })?;
    let (tip, leftover) = with_leftover(job, git, review, tip)?;
    if leftover > 0 {
        commit_on_branch(git, review, &tip)?;
    }
    Ok(leftover)
}

/// Sets `review.<key>` in meta.json.
pub(super) fn set_review(
    meta: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
    value: &str,
) -> bool {
    match meta.get_mut("review").and_then(|r| r.as_object_mut()) {
        Some(r) => {
            r.insert(key.into(), value.into());
            true
        }
        None => false,
    }
}

fn set_outcome(meta: &mut serde_json::Map<String, serde_json::Value>, outcome: &str) -> bool {
    set_review(meta, "outcome", outcome)
}

/// Removes the job's worktree (forced: what it holds is in the branch), and git's record of it
/// when it was deleted by hand.
pub(super) fn remove_worktree(git: &Git, review: &Review) -> Result<(), ReviewError> {
    if Path::new(&review.worktree).is_dir() {
        git.run([
            "worktree",
            "remove",
            "--force",
            "--force",
            review.worktree.as_str(),
        ])?;
    }
    git.run(["worktree", "prune"])?;
    Ok(())
}

/// What `discard` would remove, and what would be lost.
pub fn discard_preview(job: &Job) -> Result<String, ReviewError> {
    let review = worktree_review(job, "discard it")?;
    let git = git_of(job, review)?;
    let tip = git.commit(&format!("refs/heads/{}", review.branch))?;
    let mut s = match Path::new(&review.worktree).is_dir() {
        true => format!("remove the worktree {}", review.worktree),
        false => format!("forget the worktree {} (already removed)", review.worktree),
    };
    match &tip {
        Some(tip) => {
            let head = git.commit("HEAD")?;
            let unmerged = match head {
                Some(h) => count(&git, &["rev-list", "--count", &format!("{h}..{tip}")])?,
                None => 0,
            };
            s.push_str(&format!(" and delete the branch {}", review.branch));
            if unmerged > 0 {
                s.push_str(&format!(
                    " ({unmerged} commit{} not in the project's branch)",
                    if unmerged == 1 { "" } else { "s" }
                ));
            }
        }
        None => s.push_str(&format!(" (the branch {} is gone already)", review.branch)),
    }
    s.push_str(&format!(
        "\nits change stays readable with `luzia diff {}` (refs/luzia/{}/)",
        job.id, job.id
    ));
    Ok(s)
}

/// Removes the job's worktree and branch; says what was done.
pub fn discard(job: &Job) -> Result<String, ReviewError> {
    let said = discard_preview(job)?;
    let review = worktree_review(job, "discard it")?;
    let git = git_of(job, review)?;
    // A worktree deleted by hand leaves git's record of it behind; without it the branch could
    // not be deleted ("checked out at ...").
    remove_worktree(&git, review)?;
    let branch_ref = format!("refs/heads/{}", review.branch);
    if git.commit(&branch_ref)?.is_some() {
        git.run(["branch", "-D", "-q", review.branch.as_str()])?;
    }
    let _ = update_meta(&job.dir(), |m| set_outcome(m, "discarded"));
    let first = said.lines().next().unwrap_or_default();
    Ok(format!(
        "discarded: {}",
        first
            .replacen("remove", "removed", 1)
            .replacen("delete ", "deleted ", 1)
    ))
}
