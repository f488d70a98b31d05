//! The isolation of one job, on the supervisor's side: planned at dispatch (which directory the
//! agent will run in, recorded in meta.json's `review`), set up before the agent starts (the
//! before-snapshot, or the worktree and its branch), and recorded when it ends (the
//! after-snapshot and the size of the change, so that a listing never has to run git).
//!
//! A failure is never silent and never loses the task: a snapshot that cannot be taken leaves
//! the job to run unrecorded (isolation only records, the agent works the same); a worktree
//! that cannot be made stops the job before its agent starts (running it in the shared project
//! instead would break the promise that jobs do not see each other's edits), and a retry runs it
//! once the cause is fixed. Either way the reason is in output.log and meta.json's
//! `review.error`.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::git::{Git, toplevel};
use super::{ReviewError, account_of, diff, include, overlap, snapshot};
use crate::jobs::fs::files::{self, META_FILE_CAP, open_write, read_capped, read_small};
use crate::jobs::fs::names::META_FILE;
use crate::jobs::fs::publish::update_meta;
use crate::jobs::model::id::JobId;
use crate::jobs::model::review::{ChangeStat, Isolation, Review};
use crate::jobs::os::account::Account;

/// The name of a worktree job's directory inside its job directory.
pub const WORKTREE_DIR: &str = "worktree";

/// What dispatch records: the `review` object (if any) and the directory the agent runs in.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub review: Option<Review>,
    pub cwd: PathBuf,
}

/// Decides a new job's isolation. `wanted` is the project's `isolation`, `None` when not
/// configured: a snapshot for a project in a git repository, nothing otherwise. Never fails: a
/// reason it cannot be had is recorded in `review.error`, acted on when the job starts.
pub fn plan(
    project_path: &Path,
    wanted: Option<Isolation>,
    user: &str,
    job_dir: &Path,
    id: &str,
) -> Planned {
    let unisolated = Planned {
        review: None,
        cwd: project_path.to_owned(),
    };
    if wanted.is_none() && !in_a_repository(project_path) {
        return unisolated;
    }
    let top = account_of(user).and_then(|a| toplevel(project_path, a.as_ref()));
    let isolation = match (wanted, &top) {
        (Some(Isolation::None), _) | (None, Err(_)) => return unisolated,
        (None, Ok(_)) => Isolation::Snapshot,
        (Some(i), _) => i,
    };
    let mut review = Review {
        isolation,
        ..Review::default()
    };
    let top = match top {
        Ok(top) => top,
        Err(e) => {
            review.error = e.to_string();
            return Planned {
                review: Some(review),
                cwd: project_path.to_owned(),
            };
        }
    };
    review.repo = top.display().to_string();
    let mut cwd = project_path.to_owned();
    if isolation == Isolation::Worktree {
        let tree = job_dir.join(WORKTREE_DIR);
        // The agent starts where it would have in the project: the same subdirectory.
        let real = std::fs::canonicalize(project_path).unwrap_or_else(|_| project_path.into());
        cwd = match real.strip_prefix(&top) {
            Ok(sub) if !sub.as_os_str().is_empty() => tree.join(sub),
            _ => tree.clone(),
        };
        review.worktree = tree.display().to_string();
        review.branch = format!("luzia/{id}");
    }
    Planned {
        review: Some(review),
        cwd,
    }
}

/// Whether `dir` or a directory above it holds `.git`: the cheap look that spares a project
/// outside any repository a `git` process at every dispatch.
fn in_a_repository(dir: &Path) -> bool {
    dir.ancestors()
        .any(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
}

fn read_review(dir: &Path) -> Option<Review> {
    let bytes = read_capped(&dir.join(META_FILE), META_FILE_CAP).ok()??;
    let meta: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    Review::from_meta(meta.get("review")).map(|b| *b)
}

fn write_review(dir: &Path, change: impl FnOnce(&mut Review)) -> Result<(), ReviewError> {
    update_meta(dir, |meta| {
        let mut review = Review::from_meta(meta.get("review"))
            .map(|b| *b)
            .unwrap_or_default();
        change(&mut review);
        match serde_json::to_value(&review) {
            Ok(v) => {
                meta.insert("review".into(), v);
                true
            }
            Err(_) => false,
        }
    })
    .map_err(|source| ReviewError::Io {
        path: dir.join(META_FILE),
        source,
    })
}

/// What the supervisor does with the result of [`begin`].
#[derive(Debug, PartialEq, Eq)]
pub enum Begun {
    /// Isolated as asked, or nothing was asked.
    Ready,
    /// The agent runs, but its change is not recorded: the line says why.
    Unrecorded(String),
    /// The agent must not start: the line says why.
    Refused(String),
    /// Isolated as asked, with something to say in the log (a file the worktree could not
    /// receive).
    Noted(String),
}

/// Sets up the job's isolation before its agent starts.
pub fn begin(dir: &Path, id: &str, user: &str) -> Begun {
    let Some(review) = read_review(dir) else {
        return Begun::Ready;
    };
    if review.isolation == Isolation::None || !review.base.is_empty() {
        return Begun::Ready;
    }
    let done = if review.error.is_empty() {
        account_of(user).and_then(|a| match review.isolation {
            Isolation::Worktree => make_worktree(dir, id, &review, a.as_ref()),
            _ => before_snapshot(dir, id, &review, a.as_ref()).map(|()| None),
        })
    } else {
        Err(ReviewError::NotRecorded {
            id: id.to_owned(),
            why: review.error.clone(),
        })
    };
    let e = match done {
        Ok(None) => return Begun::Ready,
        Ok(Some(said)) => return Begun::Noted(said),
        Err(e) => e,
    };
    let message = match &e {
        ReviewError::NotRecorded { why, .. } => why.clone(),
        other => other.to_string(),
    };
    let _ = write_review(dir, |r| r.error = message.clone());
    match review.isolation {
        Isolation::Worktree => Begun::Refused(format!(
            "luzia: cannot give the job its own worktree: {message}; the agent was not started \
             (the task is kept: retry the job once this is fixed)\n"
        )),
        _ => Begun::Unrecorded(format!(
            "luzia: cannot take a snapshot of the project: {message}; the agent runs, but its \
             change will not be recorded\n"
        )),
    }
}

fn before_snapshot(
    dir: &Path,
    id: &str,
    review: &Review,
    user: Option<&Account>,
) -> Result<(), ReviewError> {
    let git = Git::new(Path::new(&review.repo), user);
    let snap = snapshot::take(&git, id, &format!("luzia: job {id}, before"))?;
    snapshot::store(&git, &snapshot::ref_name(id, "before"), &snap.commit)?;
    running::enter(&git, dir, id, user);
    write_review(dir, |r| r.base = snap.commit.clone())
}

fn make_worktree(
    dir: &Path,
    id: &str,
    review: &Review,
    user: Option<&Account>,
) -> Result<Option<String>, ReviewError> {
    let repo = PathBuf::from(&review.repo);
    let git = Git::new(&repo, user);
    let head = git
        .commit("HEAD")?
        .ok_or(ReviewError::NoCommit(repo.clone()))?;
    let branch_ref = format!("refs/heads/{}", review.branch);
    if git.commit(&branch_ref)?.is_some() {
        return Err(ReviewError::BranchTaken {
            branch: review.branch.clone(),
            repo,
        });
    }
    let tree = PathBuf::from(&review.worktree);
    // Made here, empty, and given to the project's user, who makes the worktree in it.
    std::fs::create_dir_all(&tree).map_err(|source| ReviewError::Io {
        path: tree.clone(),
        source,
    })?;
    if let Some(a) = user {
        let _ = rustix::fs::chown(&tree, Some(a.uid()), None);
    }
    let args: [&std::ffi::OsStr; 6] = [
        "worktree".as_ref(),
        "add".as_ref(),
        "-b".as_ref(),
        review.branch.as_ref(),
        tree.as_os_str(),
        head.as_ref(),
    ];
    git.run(args)?;
    snapshot::store(&git, &snapshot::ref_name(id, "before"), &head)?;
    write_review(dir, |r| r.base = head.clone())?;
    // What the person's checkout has and git does not (`.env`, …): the worktree is usable then.
    let said = match include::copy(&git, &repo, &tree, &review.include, user) {
        Ok(c) if c.paths.is_empty() && c.failed.is_empty() => None,
        Ok(c) => {
            let mut s = String::new();
            if !c.paths.is_empty() {
                s.push_str(&format!(
                    "luzia: the worktree received {} from the project's checkout\n",
                    c.paths.join(", ")
                ));
            }
            for f in c.failed {
                s.push_str(&format!("luzia: not copied into the worktree: {f}\n"));
            }
            Some(s)
        }
        Err(e) => Some(format!(
            "luzia: the files the project lists for its worktrees were not copied: {e}\n"
        )),
    };
    Ok(said)
}

/// Records the job's change when its agent has ended. Returns a line for output.log when
/// something could not be recorded.
pub fn end(dir: &Path, id: &str, user: &str) -> Option<String> {
    let review = read_review(dir)?;
    if review.isolation == Isolation::None || review.base.is_empty() || !review.after.is_empty() {
        return None;
    }
    let done = account_of(user).and_then(|a| after_snapshot(dir, id, &review, a.as_ref()));
    let e = done.err()?;
    let message = e.to_string();
    let _ = write_review(dir, |r| r.error = message.clone());
    Some(format!(
        "luzia: cannot record the job's change: {message} (`luzia diff {id}` shows the change \
         up to now)\n"
    ))
}

fn after_snapshot(
    dir: &Path,
    id: &str,
    review: &Review,
    user: Option<&Account>,
) -> Result<(), ReviewError> {
    let git = Git::new(Path::new(&review.repo), user);
    let tree = diff::tree_dir(review);
    let mut notes: Vec<String> = Vec::new();
    let after = if tree.is_dir() {
        let snap = snapshot::take(
            &Git::new(&tree, user),
            id,
            &format!("luzia: job {id}, after"),
        )?;
        if review.isolation == Isolation::Snapshot {
            let before_head = git.commit(&format!("{}^", review.base))?;
            if before_head != snap.head {
                notes.push(format!(
                    "the project's HEAD moved while the job ran ({} to {}): the commits made \
                     meanwhile, by the agent or anyone else, are part of this change",
                    before_head.as_deref().map_or("no commit", diff::short),
                    snap.head.as_deref().map_or("no commit", diff::short),
                ));
            }
            let others = running::leave(&git, id);
            if !others.is_empty() {
                notes.push(running::note(&others));
            }
        }
        snap.commit
    } else {
        notes.push(format!(
            "the worktree {} was removed before the job ended: the change is what its branch \
             holds",
            tree.display()
        ));
        git.commit(&format!("refs/heads/{}", review.branch))?
            .ok_or_else(|| ReviewError::NoBranch {
                branch: review.branch.clone(),
                repo: PathBuf::from(&review.repo),
            })?
    };
    snapshot::store(&git, &snapshot::ref_name(id, "after"), &after)?;
    let files = diff::files(&git, &review.base, &after)?;
    // The paths it touched, for the overlap with other unmerged jobs (see `overlap`).
    let _ = overlap::record(dir, &files);
    let stat = crate::jobs::model::review::Change {
        files,
        ..Default::default()
    }
    .stat();
    write_review(dir, |r| {
        r.after = after.clone();
        r.changes = Some(stat);
        let mut all: Vec<String> = r.note.lines().map(str::to_owned).collect();
        for n in notes {
            if !all.contains(&n) {
                all.push(n);
            }
        }
        r.note = all.join("\n");
    })
}

/// Jobs running in the same project with snapshot isolation at the same time see each other's
/// edits: each one is marked in `<git common dir>/luzia-running/<job id>` while it runs, so
/// that the others can say so.
mod running {
    use super::*;

    fn marks(git: &Git) -> Option<PathBuf> {
        let common = git
            .text(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .ok()?;
        Some(PathBuf::from(common).join("luzia-running"))
    }

    /// The other jobs marked and still running; `ours` is not one of them.
    fn live_others(marks: &Path, ours: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(marks) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ours {
                continue;
            }
            let body = read_small(&e.path()).ok().flatten().unwrap_or_default();
            let dir = String::from_utf8_lossy(&body);
            let dir = PathBuf::from(dir.lines().next().unwrap_or_default());
            let live = match (JobId::parse(&name), dir.parent()) {
                (Ok(jid), Some(root)) => crate::jobs::model::job::read_job(root, &jid, Utc::now())
                    .is_some_and(|j| super::super::is_live(&j)),
                _ => false,
            };
            if live {
                out.push(name);
            } else {
                // Its supervisor died without leaving: the mark is stale.
                let _ = std::fs::remove_file(e.path());
            }
        }
        out.sort();
        out
    }

    /// Marks the job as running, with the others running now; and tells each of them of this
    /// one. Every overlap is then known to both jobs: whichever started second saw the other.
    pub(super) fn enter(git: &Git, dir: &Path, id: &str, user: Option<&Account>) {
        use std::io::Write;
        let Some(marks) = marks(git) else {
            return;
        };
        let _ = std::fs::create_dir_all(&marks);
        let others = live_others(&marks, id);
        let mark = marks.join(id);
        let body = format!("{}\n{}\n", dir.display(), others.join(" "));
        // The marks' directory is the agent's user's (it is given to it below): a mark may be a
        // link or a FIFO it put there, written through by neither (see `files`).
        let written = open_write(&mark, files::Write::Truncate, 0o644)
            .and_then(|mut f| f.write_all(body.as_bytes()));
        if written.is_ok()
            && let Some(a) = user
        {
            let _ = rustix::fs::chown(&marks, Some(a.uid()), None);
            let _ = rustix::fs::chown(&mark, Some(a.uid()), None);
        }
        for other in &others {
            let appended = open_write(
                &marks.join(other),
                files::Write::Append { create: false },
                0,
            )
            .and_then(|mut f| f.write_all(format!("{id}\n").as_bytes()));
            drop(appended);
        }
    }

    /// Removes the job's mark; returns the other jobs that ran at some time with it.
    pub(super) fn leave(git: &Git, id: &str) -> Vec<String> {
        let Some(marks) = marks(git) else {
            return Vec::new();
        };
        let mark = marks.join(id);
        let body = read_small(&mark).ok().flatten().unwrap_or_default();
        let body = String::from_utf8_lossy(&body);
        let _ = std::fs::remove_file(&mark);
        let mut all: Vec<String> = body
            .lines()
            .skip(1)
            .flat_map(str::split_whitespace)
            .filter(|o| *o != id)
            .map(str::to_owned)
            .collect();
        all.sort();
        all.dedup();
        all
    }

    pub(super) fn note(others: &[String]) -> String {
        let (jobs, their) = match others {
            [one] => (format!("job {one}"), "its"),
            _ => (format!("jobs {}", others.join(", ")), "their"),
        };
        format!(
            "{jobs} ran in the same project at the same time: {their} edits may be part of \
             this change (isolation = \"worktree\" keeps jobs apart)"
        )
    }
}

/// How much `from..to` changed, without the patch.
pub fn stat(git: &Git, from: &str, to: &str) -> Result<ChangeStat, ReviewError> {
    diff::stat(git, from, to)
}
