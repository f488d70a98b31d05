//! A job's change read from git: the files with their counts (`--raw --numstat -z`), then the
//! unified patch, capped. Between two commits git compares trees and never looks at the working
//! tree, so a finished job's change costs the same however large the repository is.

use std::path::{Path, PathBuf};

use super::git::Git;
use super::{ReviewError, is_live, job_account, parse, review_of, snapshot};
use crate::jobs::model::job::Job;
use crate::jobs::model::review::{Change, FileChange, Isolation, Review};

/// The patch is cut here: a person reads a diff, and 8 MiB is far beyond what one reads.
pub const PATCH_CAP: usize = 8 * 1024 * 1024;

/// The options every diff luzia shows is computed with, whatever the user's config says:
/// renames found, the plain a/ b/ prefixes, no external driver or text conversion, no colour.
const DIFF_OPTIONS: [&str; 7] = [
    "-M",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
];

/// The job's change: files with their counts, then the patch. For a job still running, the
/// change so far (its tree as it is now); with notes on anything that makes it less than exact.
pub fn change(job: &Job) -> Result<Change, ReviewError> {
    let review = review_of(job)?;
    let user = job_account(job)?;
    let git = Git::new(Path::new(&review.repo), user.as_ref());
    let mut notes: Vec<String> = review
        .note
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let target = if !review.after.is_empty() {
        notes.extend(since_end(&git, review)?);
        review.after.clone()
    } else {
        let now = Git::new(&tree_dir(review), user.as_ref());
        if is_live(job) {
            notes.push("the job is still running: this is its change so far, not final".into());
        } else {
            notes.push(
                "no snapshot was taken when the job ended (its supervisor did not finish): this \
                 is the change up to now, with anything done in the project since"
                    .into(),
            );
        }
        snapshot::take(&now, job.id.as_str(), "luzia: the tree now")?.commit
    };
    between(&git, &review.base, &target, notes)
}

/// The change between two commits of `git`'s repository: one `git diff` for the records and
/// the patch together (one walk of the two trees, one process).
pub fn between(git: &Git, from: &str, to: &str, notes: Vec<String>) -> Result<Change, ReviewError> {
    let mut args: Vec<&str> = vec!["diff", "--raw", "--numstat", "-p", "-z"];
    args.extend(DIFF_OPTIONS);
    args.extend([from, to, "--"]);
    // Enough once the patch, after the records, has passed the cap.
    let enough = |out: &[u8]| {
        let (records, patch) = parse::split(out);
        (patch.len() > PATCH_CAP).then(|| records.len() + 1 + PATCH_CAP)
    };
    let (out, truncated) = git.run_until(&args, enough)?;
    let (records, patch) = parse::split(&out);
    let patch = match truncated {
        true => &patch[..patch.len().min(PATCH_CAP)],
        false => patch,
    };
    Ok(Change {
        files: parse::files(records),
        patch: String::from_utf8_lossy(patch).into_owned(),
        truncated,
        notes,
    })
}

/// Where the job's files are: its worktree, or the project itself.
pub(super) fn tree_dir(review: &Review) -> PathBuf {
    match review.isolation {
        Isolation::Worktree => PathBuf::from(&review.worktree),
        _ => PathBuf::from(&review.repo),
    }
}

/// What happened since the job ended that its change does not show: found cheaply (refs only,
/// never a scan of the working tree).
fn since_end(git: &Git, review: &Review) -> Result<Vec<String>, ReviewError> {
    let parent = format!("{}^", review.after);
    let other = match review.isolation {
        Isolation::Worktree => format!("refs/heads/{}", review.branch),
        _ => "HEAD".to_owned(),
    };
    let mut found = git.commits(&[&parent, &other])?.into_iter();
    let (after_parent, other) = (found.next().flatten(), found.next().flatten());
    let mut notes = Vec::new();
    match review.isolation {
        Isolation::Worktree => {
            match other {
                None => notes.push(format!(
                    "the branch {} no longer exists: this change can be read, not merged",
                    review.branch
                )),
                Some(tip) if Some(&tip) != after_parent.as_ref() => notes.push(format!(
                    "the branch {} has moved since the job ended (now {}): `luzia merge` \
                     takes it as it is now",
                    review.branch,
                    short(&tip)
                )),
                Some(_) => {}
            }
            if !Path::new(&review.worktree).is_dir() {
                notes.push(format!(
                    "the worktree {} was removed since the job ended",
                    review.worktree
                ));
            }
        }
        _ => {
            let head = other;
            if head.is_some() && head != after_parent {
                notes.push(format!(
                    "the project's HEAD has moved since the job ended (now {}): the change \
                     shown is the job's, not what the project holds now",
                    head.as_deref().map_or("", short)
                ));
            }
        }
    }
    Ok(notes)
}

pub(super) fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// How much `from..to` changed: the counts alone, without the patch.
pub(super) fn stat(
    git: &Git,
    from: &str,
    to: &str,
) -> Result<crate::jobs::model::review::ChangeStat, ReviewError> {
    Ok(Change {
        files: files(git, from, to)?,
        ..Change::default()
    }
    .stat())
}

/// The files `from..to` changed, with their counts, without the patch.
pub(super) fn files(git: &Git, from: &str, to: &str) -> Result<Vec<FileChange>, ReviewError> {
    let mut args: Vec<&str> = vec!["diff", "--raw", "--numstat", "-z"];
    args.extend(DIFF_OPTIONS);
    args.extend([from, to, "--"]);
    Ok(parse::files(&git.run(&args)?))
}
