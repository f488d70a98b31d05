//! Unmerged worktree jobs of the same project whose changes touch the same files: each is told
//! of the others (`overlaps 182001-ab`), so the operator can choose the order of their merges;
//! after a merge, the others say whether they still merge cleanly into the project
//! (`git merge-tree`, objects only).
//!
//! The paths a job touched are recorded in its directory when it ends (`changed-files`), so
//! working out the overlaps of many jobs reads a small file per job and runs no git: its cost
//! does not grow with the repository. A job still running has no such record yet, and is told
//! once it ends.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::ReviewError;
use super::git::Git;
use crate::jobs::fs::files::read_capped;
use crate::jobs::fs::names::CHANGED_FILE;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::id::JobId;
use crate::jobs::model::job::Job;
use crate::jobs::model::review::{FileChange, Isolation};

/// The most of a job's list of paths read (a change of some 100,000 paths).
const CHANGED_CAP: u64 = 8 * 1024 * 1024;

/// Records the paths `files` touch (a renamed file's old path too).
pub(super) fn record(dir: &Path, files: &[FileChange]) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    for f in files {
        for p in std::iter::once(&f.path).chain(f.from.as_ref()) {
            bytes.extend_from_slice(p.as_bytes());
            bytes.push(0);
        }
    }
    write_atomic(dir, CHANGED_FILE, &bytes)
}

/// The paths job `dir` recorded, or none.
pub fn changed(dir: &Path) -> Vec<String> {
    let Ok(Some(bytes)) = read_capped(&dir.join(CHANGED_FILE), CHANGED_CAP) else {
        return Vec::new();
    };
    bytes
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// A worktree job that ended, with its change recorded, and nobody merged or discarded yet.
pub fn is_unmerged_worktree(job: &Job) -> bool {
    let Some(r) = job.meta.as_ref().and_then(|m| m.review.as_deref()) else {
        return false;
    };
    r.isolation == Isolation::Worktree
        && r.outcome.is_empty()
        && !r.after.is_empty()
        && !job.status.is_active()
}

/// One job's overlaps: the other job, and the paths both touch.
pub type Overlaps = BTreeMap<JobId, Vec<(JobId, Vec<String>)>>;

/// The overlaps among `jobs` (those that are unmerged worktree jobs; others are left out), by
/// repository: each job with the others that touch one of its paths.
pub fn overlaps<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Overlaps {
    // path -> the jobs touching it, per repository.
    let mut by_path: HashMap<(String, String), Vec<JobId>> = HashMap::new();
    for job in jobs.into_iter().filter(|j| is_unmerged_worktree(j)) {
        let repo = job
            .meta
            .as_ref()
            .and_then(|m| m.review.as_deref())
            .map_or(String::new(), |r| r.repo.clone());
        for path in changed(&job.dir()) {
            by_path
                .entry((repo.clone(), path))
                .or_default()
                .push(job.id.clone());
        }
    }
    let mut pairs: BTreeMap<(JobId, JobId), BTreeSet<String>> = BTreeMap::new();
    for ((_, path), ids) in by_path.into_iter().filter(|(_, ids)| ids.len() > 1) {
        for a in &ids {
            for b in ids.iter().filter(|b| *b != a) {
                pairs
                    .entry((a.clone(), b.clone()))
                    .or_default()
                    .insert(path.clone());
            }
        }
    }
    let mut out = Overlaps::new();
    for ((a, b), paths) in pairs {
        out.entry(a)
            .or_default()
            .push((b, paths.into_iter().collect()));
    }
    out
}

/// `overlaps 182001-ab (a.txt), 182002-cd (2 files)`.
pub fn describe(others: &[(JobId, Vec<String>)]) -> String {
    let each: Vec<String> = others
        .iter()
        .map(|(id, paths)| match paths.as_slice() {
            [one] => format!("{id} ({one})"),
            many => format!("{id} ({} files)", many.len()),
        })
        .collect();
    format!("overlaps {}", each.join(", "))
}

/// Whether `job`'s branch still merges into the project's HEAD without a conflict (after
/// another job was merged); `Err` names the files that conflict.
pub fn merges_cleanly(job: &Job) -> Result<Result<(), Vec<String>>, ReviewError> {
    let review = super::review_of(job)?;
    let git = Git::new(Path::new(&review.repo), super::job_account(job)?.as_ref());
    let branch = format!("refs/heads/{}", review.branch);
    let (Some(head), Some(tip)) = (git.commit("HEAD")?, git.commit(&branch)?) else {
        return Ok(Ok(()));
    };
    // With what the agent left uncommitted, as a merge would take it.
    let (tip, _) = super::merge::with_leftover(job, &git, review, tip)?;
    let out = git.output([
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        head.as_str(),
        tip.as_str(),
    ])?;
    match out.status.code() {
        Some(0) => Ok(Ok(())),
        Some(1) => Ok(Err(String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect())),
        _ => Err(git.failed(["merge-tree", "--write-tree"], &out)),
    }
}

/// Records in `job`'s meta.json what a merge of another job did to it (`review.merges`).
pub fn record_after_merge(job: &Job, said: &str) {
    let _ = crate::jobs::fs::publish::update_meta(&job.dir(), |m| {
        super::merge::set_review(m, "merges", said)
    });
}
