//! `luzia gc`: finished jobs older than an age leave the jobs root, moved whole to an archive
//! directory beside it (the default) or deleted, and what they left in their project's
//! repository (a worktree, the branch `luzia/<id>`, the refs `refs/luzia/<id>/*`) is removed
//! with them; a worktree job nobody merged or discarded stays whole.
//!
//! Only a job that is over for good goes: an exit line, no open question or gate (not waiting
//! for an answer), no supervisor or agent alive (its running entry free, its recorded
//! processes gone), and nothing written in it for the given age (the newest of its directory,
//! meta.json and output.log). A job being created is never one: luzia makes a job in a hidden
//! `.partial-` directory and renames it in whole, with meta.json in it, and a job without an
//! exit line is never touched whoever made it. Each job is checked again and moved holding the
//! queue's slots lock (which every start of a job, a retry and a reply holds) and the job
//! directory's own lock (which every rewrite of meta.json and removal of an answer holds), and
//! moved by one `rename()`: a reader sees it in the root or not at all. A deletion is a rename to
//! a hidden `.gc-<id>` first, then the removal, so no half-deleted job is ever listed; one left
//! by a gc that was stopped is removed by the next.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::read_trusted;
use crate::jobs::fs::names::{
    DECISION_FILE, GATE_FILE, LOG_FILE, META_FILE, PROCESS_FILE, QUESTION_FILE, RESPONSE_FILE,
};
use crate::jobs::fs::publish::locked;
use crate::jobs::model::process::{self, ProcessRecord, Processes, Source};
use crate::jobs::model::scan::list_ids;
use crate::jobs::review::tidy::{self, Tidied, size};
use crate::jobs::run::queue::Slots;
use crate::jobs::run::slots;
use crate::jobs::{Job, JobId, ScanError, Status, read_job};

/// Where collected jobs go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposal {
    /// Moved into this directory, on the root's file system.
    Archive(PathBuf),
    Delete,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub older_than: Duration,
    pub how: Disposal,
    pub dry_run: bool,
}

/// Why a job stayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kept {
    /// No exit line: running, starting, or died without one.
    Unfinished,
    /// Stopped for an answer, or a question or gate is open.
    Waiting,
    /// Has its exit line, but its supervisor or agent is still alive.
    Running,
    /// Finished, or written in, more recently than the age.
    Recent,
    /// A job of that id is in the archive already.
    InArchive,
    /// A worktree job whose branch holds work nobody merged, discarded or has in the project.
    Unmerged,
}

impl Kept {
    pub fn describe(self) -> &'static str {
        match self {
            Kept::Unfinished => "unfinished",
            Kept::Waiting => "waiting for an answer",
            Kept::Running => "still running",
            Kept::Recent => "newer than the age",
            Kept::InArchive => "already in the archive under the same id (left in place)",
            Kept::Unmerged => "unmerged (merge or discard them: luzia merge / discard ID)",
        }
    }
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub collected: usize,
    pub bytes: u64,
    /// What the collected jobs left in their repositories, removed with them.
    pub worktrees: usize,
    pub worktree_bytes: u64,
    pub branches: usize,
    pub refs: usize,
    pub kept: std::collections::BTreeMap<Kept, usize>,
    /// Jobs that could not be moved, and why.
    pub failed: Vec<(JobId, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error("cannot use {path} as the archive: {message}")]
    Archive { path: PathBuf, message: String },
    #[error("cannot use the queue at {0}: {1}")]
    Queue(PathBuf, String),
}

/// Parses an age: whole numbers each with a unit, `s`, `m`, `h`, `d` or `w` (`30d`, `1d12h`); a
/// bare number is refused (days or seconds?).
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "'{}' is not an age: give whole numbers each with a unit, s, m, h, d or w (30d, 12h, \
             1d12h)",
            text.escape_debug()
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    // Whole numbers each with its unit, as many as given: `30d`, `1w3d`, `1h30m`.
    let mut total: u64 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let secs = match &rest[digits..digits + unit_len] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(bad()),
        };
        total = n
            .checked_mul(secs)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    Ok(Duration::from_secs(total))
}

/// The default archive: `<root>-archive` beside the root.
pub fn default_archive(root: &Path) -> Option<PathBuf> {
    let name = root.file_name()?;
    let mut archive = name.to_os_string();
    archive.push("-archive");
    Some(root.with_file_name(archive))
}

/// Collects the jobs `plan` names in `root`, holding `queue`'s slots lock for each move.
pub fn collect(
    root: &Path,
    queue: &Path,
    plan: &Plan,
    now: DateTime<Utc>,
) -> Result<Outcome, GcError> {
    if !plan.dry_run {
        if let Disposal::Archive(archive) = &plan.how {
            check_archive(root, archive)?;
        }
        remove_leftovers(root);
    }
    let cutoff = SystemTime::from(now)
        .checked_sub(plan.older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = Outcome::default();
    for id in list_ids(root)? {
        // Read unlocked first: most jobs stay, and dispatch need not wait for them.
        let Some(job) = read_job(root, &id, now) else {
            continue;
        };
        if let Err(why) = eligible(queue, &job, cutoff) {
            *out.kept.entry(why).or_default() += 1;
            continue;
        }
        let bytes = size(&job.dir());
        if plan.dry_run {
            out.collected += 1;
            out.bytes += bytes;
            match tidy::tidy(&job, true) {
                Ok(t) => out.add(&t),
                Err(e) => out.failed.push((id, e.to_string())),
            }
            continue;
        }
        match dispose(root, queue, &id, plan, cutoff, now)? {
            Ok(tidied) => {
                out.collected += 1;
                out.bytes += bytes;
                out.add(&tidied);
            }
            Err(Moved::Kept(why)) => *out.kept.entry(why).or_default() += 1,
            Err(Moved::Gone) => {}
            Err(Moved::Failed(e)) => out.failed.push((id, e)),
        }
    }
    if !plan.dry_run && out.collected > 0 {
        refresh_running_index(root, queue, now);
    }
    Ok(out)
}

impl Outcome {
    fn add(&mut self, t: &Tidied) {
        if let Some(bytes) = t.worktree {
            self.worktrees += 1;
            self.worktree_bytes += bytes;
        }
        self.branches += usize::from(t.branch);
        self.refs += t.refs;
    }
}

enum Moved {
    Kept(Kept),
    /// Removed by someone else meanwhile.
    Gone,
    Failed(String),
}

/// Checks `id` again and moves it, under both locks.
fn dispose(
    root: &Path,
    queue: &Path,
    id: &JobId,
    plan: &Plan,
    cutoff: SystemTime,
    now: DateTime<Utc>,
) -> Result<Result<Tidied, Moved>, GcError> {
    let lock = Slots::lock(queue).map_err(|e| GcError::Queue(queue.to_owned(), e.to_string()))?;
    let dir = root.join(id.as_str());
    let mut verdict = Ok(Tidied::default());
    let moved = locked(&dir, || {
        let Some(job) = read_job(root, id, now) else {
            verdict = Err(Moved::Gone);
            return Ok(());
        };
        if let Err(why) = eligible(queue, &job, cutoff) {
            verdict = Err(Moved::Kept(why));
            return Ok(());
        }
        // Its worktree, branch and refs first: a job moved keeps nothing in the repository.
        let tidied = match tidy::tidy(&job, false) {
            Ok(t) => t,
            Err(e) => {
                verdict = Err(Moved::Failed(format!(
                    "cannot remove what it left in its repository: {e}"
                )));
                return Ok(());
            }
        };
        verdict = match &plan.how {
            Disposal::Archive(archive) => archive_one(&dir, &archive.join(id.as_str())),
            Disposal::Delete => delete_one(root, &dir, id),
        }
        .map(|()| tidied);
        Ok(())
    });
    drop(lock);
    match moved {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Err(Moved::Gone)),
        _ => {}
    }
    if let Err(e) = moved {
        return Ok(Err(Moved::Failed(format!(
            "cannot lock {}: {e}",
            dir.display()
        ))));
    }
    Ok(verdict)
}

fn archive_one(dir: &Path, to: &Path) -> Result<(), Moved> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, dir, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::EXIST) => Err(Moved::Kept(Kept::InArchive)),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(Moved::Kept(Kept::InArchive));
            }
            std::fs::rename(dir, to).map_err(|e| failed(dir, to, e))
        }
        Err(e) => Err(failed(dir, to, e.into())),
    }
}

fn failed(dir: &Path, to: &Path, e: std::io::Error) -> Moved {
    Moved::Failed(format!(
        "cannot move {} to {}: {e}",
        dir.display(),
        to.display()
    ))
}

fn delete_one(root: &Path, dir: &Path, id: &JobId) -> Result<(), Moved> {
    let doomed = root.join(format!(".gc-{id}"));
    std::fs::rename(dir, &doomed).map_err(|e| failed(dir, &doomed, e))?;
    std::fs::remove_dir_all(&doomed).map_err(|e| {
        Moved::Failed(format!(
            "moved out of the root but not removed ({e}): the next `luzia gc` removes {}",
            doomed.display()
        ))
    })
}

/// Whether `job` may go, or why it stays.
fn eligible(queue: &Path, job: &Job, cutoff: SystemTime) -> Result<(), Kept> {
    if job.exit_code.is_none() {
        return Err(Kept::Unfinished);
    }
    let dir = job.dir();
    if job.status == Status::NeedsInput
        || job.question.is_some()
        || job.gate.is_some()
        || open(&dir, QUESTION_FILE, RESPONSE_FILE)
        || open(&dir, GATE_FILE, DECISION_FILE)
    {
        return Err(Kept::Waiting);
    }
    if slots::is_held(queue, job.id.as_str()) || alive(job) {
        return Err(Kept::Running);
    }
    let newest = [dir.join(META_FILE), dir.join(LOG_FILE), dir]
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok())
        .max();
    match newest {
        Some(t) if t <= cutoff => {}
        _ => return Err(Kept::Recent),
    }
    // Asked of git last, and only of the jobs old enough to go: a question that can fail
    // keeps the job.
    match tidy::is_unmerged(job) {
        Ok(false) => Ok(()),
        _ => Err(Kept::Unmerged),
    }
}

/// A request (`ask`) with no answer beside it: the agent has ended, but a person may still
/// answer it and retry the job.
fn open(dir: &Path, request: &str, answer: &str) -> bool {
    let exists = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    exists(request) && !exists(answer)
}

/// The job's recorded supervisor or agent, or the process of its pid file, is alive. The
/// record is read here: a job with an exit line is read without it.
fn alive(job: &Job) -> bool {
    let dir = job.dir();
    let (pid, record) = match process::source(&dir, job.id.as_str(), &mut |_, _| ()) {
        Source::Private(record) => (record.supervisor.as_ref().map(|s| s.pid), Some(record)),
        Source::JobFiles => {
            let root = dir.parent().unwrap_or(&dir);
            let record = read_trusted(&dir.join(PROCESS_FILE), root)
                .ok()
                .flatten()
                .and_then(|b| ProcessRecord::parse(&b).ok());
            (job.pid, record)
        }
        Source::Nowhere => return false,
    };
    Processes::identify(pid, record.as_ref(), job.started).is_alive()
}

/// The archive is a directory outside the root, on its file system; made (only then) if need
/// be, in a parent that exists.
fn check_archive(root: &Path, archive: &Path) -> Result<(), GcError> {
    use std::os::unix::fs::MetadataExt;
    let bad = |message: String| GcError::Archive {
        path: archive.to_owned(),
        message,
    };
    let exists = archive.is_dir();
    // Where it is (or will be): the directory itself, or the parent it will be made in.
    let at = if exists {
        archive.to_owned()
    } else {
        match archive.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        }
    };
    let (Ok(a), Ok(r)) = (at.canonicalize(), root.canonicalize()) else {
        return Err(bad(format!(
            "{} does not exist (make it, or choose a directory that does)",
            at.display()
        )));
    };
    if a.starts_with(&r) {
        return Err(bad(format!(
            "it is inside the jobs root {}, where it would be read as a job: choose a directory \
             beside the root",
            r.display()
        )));
    }
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if dev(&a) != dev(&r) {
        return Err(bad(format!(
            "it is on another file system than the jobs root {}, and a job is moved whole only \
             by a rename within one file system: choose a directory on the same file system \
             (the default is beside the root), or --delete",
            r.display()
        )));
    }
    if !exists {
        std::fs::create_dir(archive).map_err(|e| bad(format!("{e}")))?;
    }
    Ok(())
}

/// Removes what a gc stopped halfway through a deletion left (hidden: never listed).
fn remove_leftovers(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        if e.file_name().to_string_lossy().starts_with(".gc-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The root changed: the next dispatch would read it whole to count the jobs without an entry.
/// Read it now, while the root is smaller, so that the next dispatch need not.
fn refresh_running_index(root: &Path, queue: &Path, now: DateTime<Utc>) {
    if let Ok(lock) = Slots::lock(queue)
        && let Ok(live) = slots::live(&lock)
    {
        let _ = slots::others::count(root, queue, &live, now);
    }
}

#[cfg(test)]
mod tests;
