//! The queue: tasks waiting for a free slot, one JSON file each, in three states that are
//! directories of the queue root, each split by priority like `pending/`:
//!
//! - `pending/{high,normal}/<priority>_<timestamp>_<project>_<id>.json`: waiting, high before
//!   normal, then oldest first (file name order);
//! - `starting/{high,normal}/`: claimed by a starter, which holds the slots lock until the
//!   task's job exists (then the file is removed) or the task has failed; a file found there by
//!   the next holder of the lock is a starter's that died, recovered by [`claim`];
//! - `failed/{high,normal}/`: could not start, with the reason in the file (`luzia queue` and the
//!   cockpit show it; `luzia queue retry` puts it back in `pending/`).
//!
//! A task therefore leaves the queue only once its job exists, and every move between states is
//! one `rename()`, so a task is never in two states at once.

mod claim;
mod rows;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jobs::fs::files::{META_FILE_CAP, read_capped};
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::meta::lenient_text;

pub use claim::{Claim, Slots, Unrecorded};
pub use rows::{listed_rows, listed_rows_of, rows};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    High,
    Normal,
}

impl Priority {
    pub fn dir(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
        }
    }

    fn number(self) -> u8 {
        match self {
            Priority::High => 1,
            Priority::Normal => 5,
        }
    }
}

/// Where in the queue a task is: the directory under the queue root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Starting,
    Failed,
}

impl State {
    fn dir(self, queue: &Path, priority: Priority) -> PathBuf {
        let state = match self {
            State::Pending => "pending",
            State::Starting => "starting",
            State::Failed => "failed",
        };
        queue.join(state).join(priority.dir())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub id: String,
    pub project: String,
    pub priority: Priority,
    pub task: String,
    pub enqueued_at: String,
    pub enqueued_by: String,
    /// The project's directory, kept for a project the config does not name (the repository
    /// the task was given in); `None` for a configured one.
    pub project_path: Option<PathBuf>,
    /// The agent chosen for it by name (`luzia run --agent`), when one was.
    pub agent: Option<String>,
    pub path: PathBuf,
}

/// A task that could not start, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Failed {
    pub entry: Queued,
    /// What went wrong, as the starter saw it; empty when the file does not say.
    pub reason: String,
    pub failed_at: String,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(
        "cannot use the queue at {path}: {source} (set queue_dir in the config to a writable directory)"
    )]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no queued task '{0}' (`luzia queue` lists them)")]
    NotFound(String),
    #[error(
        "task '{0}' is starting now: it is a job in a moment (`luzia jobs` lists it, `luzia kill` stops it)"
    )]
    Starting(String),
    #[error("task '{0}' is queued, not failed: nothing to retry")]
    NotFailed(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> QueueError + '_ {
    move |source| QueueError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A queue file as it is on disk (protocol.md), in the order its keys are written. Read
/// leniently: a missing field, or one of another type, is empty; unknown fields (the
/// orchestrator's `skill_match`) are ignored.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(default, deserialize_with = "lenient_text")]
    id: String,
    #[serde(default, deserialize_with = "lenient_text")]
    project: String,
    /// 1 (high) or 5 (normal). The directory the file is in is what counts when reading.
    #[serde(default, deserialize_with = "lenient_priority")]
    priority: u8,
    #[serde(default, deserialize_with = "lenient_text")]
    prompt: String,
    #[serde(default, deserialize_with = "lenient_text")]
    enqueued_at: String,
    #[serde(default, deserialize_with = "lenient_text")]
    enqueued_by: String,
    #[serde(default, deserialize_with = "lenient_text")]
    status: String,
    /// The directory of a project the config does not name.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    project_path: String,
    /// The agent chosen by name (`luzia run --agent`), when one was.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    agent: String,
    /// Why it could not start (in `failed/` only).
    #[serde(default, deserialize_with = "lenient_text", skip_serializing)]
    reason: String,
    #[serde(default, deserialize_with = "lenient_text", skip_serializing)]
    failed_at: String,
}

fn lenient_priority<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let text = lenient_text(d)?;
    Ok(text.trim().parse::<u8>().unwrap_or_default())
}

pub fn enqueue(
    queue: &Path,
    project: &str,
    task: &str,
    priority: Priority,
    by: &str,
) -> Result<Queued, QueueError> {
    enqueue_at(queue, project, None, task, priority, (by, None))
}

/// [`enqueue`], with the directory of a project the config does not name, which the file
/// keeps (`project_path`) for the starter, and the agent chosen for it by name (`agent`).
pub fn enqueue_at(
    queue: &Path,
    project: &str,
    project_path: Option<&Path>,
    task: &str,
    priority: Priority,
    (by, agent): (&str, Option<&str>),
) -> Result<Queued, QueueError> {
    let dir = State::Pending.dir(queue, priority);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let now = Utc::now();
    let id = format!(
        "{:08x}",
        (now.timestamp_nanos_opt().unwrap_or_default() as u64 ^ u64::from(std::process::id()) << 32)
            as u32
    );
    let name = format!(
        "{}_{}_{project}_{id}.json",
        priority.number(),
        now.format("%Y%m%dT%H%M%S%.6f")
    );
    let entry = Entry {
        id,
        project: project.into(),
        priority: priority.number(),
        prompt: task.into(),
        enqueued_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        enqueued_by: by.into(),
        status: "pending".into(),
        project_path: project_path
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        agent: agent.unwrap_or_default().to_owned(),
        ..Entry::default()
    };
    // Strings and a number: serializing cannot fail.
    let body = serde_json::to_vec_pretty(&entry).unwrap_or_default();
    write_atomic(&dir, &name, &body).map_err(io(&dir))?;
    Ok(Queued {
        id: entry.id,
        project: entry.project,
        priority,
        task: entry.prompt,
        enqueued_at: entry.enqueued_at,
        enqueued_by: entry.enqueued_by,
        project_path: project_path.map(Path::to_path_buf),
        agent: agent.map(str::to_owned),
        path: dir.join(name),
    })
}

/// The tasks of one state, each priority in name order (oldest first), high before normal.
fn entries(queue: &Path, state: State) -> Result<Vec<(Queued, Entry)>, QueueError> {
    let mut all = Vec::new();
    for priority in [Priority::High, Priority::Normal] {
        let dir = state.dir(queue, priority);
        let listing = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir)(e)),
        };
        let mut these: Vec<(Queued, Entry)> = listing
            .filter_map(Result::ok)
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".json") && !name.starts_with('.')
            })
            .filter_map(|e| read(&e.path(), priority))
            .collect();
        // The file name starts with the time: name order is age order.
        these.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        all.extend(these);
    }
    Ok(all)
}

/// Every task still in the queue, in the order they will start: those being started now, then
/// the pending ones.
pub fn list(queue: &Path) -> Result<Vec<Queued>, QueueError> {
    let mut all = entries(queue, State::Starting)?;
    all.extend(entries(queue, State::Pending)?);
    Ok(latest_sightings(all, Vec::new()).queued)
}

/// The pending tasks only, in order: what a starter may claim.
fn pending(queue: &Path) -> Result<Vec<Queued>, QueueError> {
    Ok(entries(queue, State::Pending)?
        .into_iter()
        .map(|(q, _)| q)
        .collect())
}

/// The tasks that could not start, oldest first.
pub fn failed(queue: &Path) -> Result<Vec<Failed>, QueueError> {
    Ok(latest_sightings(Vec::new(), entries(queue, State::Failed)?).failed)
}

/// A queue file, or `None` when it is not JSON (a file being written by another tool).
fn read(path: &Path, priority: Priority) -> Option<(Queued, Entry)> {
    let value: Value = serde_json::from_slice(&read_capped(path, META_FILE_CAP).ok()??).ok()?;
    // JSON that is not an object is an entry with nothing known about it, as before.
    let entry: Entry = match value {
        v @ Value::Object(_) => serde_json::from_value(v).ok()?,
        _ => Entry::default(),
    };
    let queued = Queued {
        id: entry.id.clone(),
        project: entry.project.clone(),
        priority,
        task: entry.prompt.clone(),
        enqueued_at: entry.enqueued_at.clone(),
        enqueued_by: entry.enqueued_by.clone(),
        project_path: Some(PathBuf::from(&entry.project_path)).filter(|p| p.is_absolute()),
        agent: Some(entry.agent.clone()).filter(|a| !a.is_empty()),
        path: path.to_owned(),
    };
    Some((queued, entry))
}

impl Queued {
    fn file_name(&self) -> &std::ffi::OsStr {
        self.path.file_name().unwrap_or_default()
    }
}

impl Failed {
    /// What a person reads about it: the reason, or that none was recorded.
    pub fn why(&self) -> String {
        if self.reason.is_empty() {
            "could not start (no reason recorded)".into()
        } else {
            format!("could not start: {}", self.reason)
        }
    }
}

/// The whole queue as one listing: what is still queued (starting, then pending) and what
/// failed to start.
#[derive(Debug, Default)]
pub struct Listing {
    pub queued: Vec<Queued>,
    pub failed: Vec<Failed>,
}

/// Reads the three states in the order a task moves through them. A starter may move a task
/// between two of the reads, so the same task can be seen twice (in `starting/`, then in
/// `failed/`): the later read saw it later, so that sighting is the one kept, and a listing never
/// shows one task both waiting and failed.
pub fn listing(queue: &Path) -> Result<Listing, QueueError> {
    let mut queued = entries(queue, State::Starting)?;
    queued.extend(entries(queue, State::Pending)?);
    let failed = entries(queue, State::Failed)?;
    Ok(latest_sightings(queued, failed))
}

fn latest_sightings(queued: Vec<(Queued, Entry)>, failed: Vec<(Queued, Entry)>) -> Listing {
    // An empty id (an entry another tool wrote without one) cannot be matched: always kept.
    let seen_failed: HashSet<String> = failed
        .iter()
        .map(|(q, _)| q.id.clone())
        .filter(|id| !id.is_empty())
        .collect();
    let mut seen_queued = HashSet::new();
    let mut later_first: Vec<Queued> = queued
        .into_iter()
        .rev()
        .map(|(q, _)| q)
        .filter(|q| {
            q.id.is_empty() || (!seen_failed.contains(&q.id) && seen_queued.insert(q.id.clone()))
        })
        .collect();
    later_first.reverse();
    Listing {
        queued: later_first,
        failed: failed
            .into_iter()
            .map(|(entry, e)| Failed {
                entry,
                reason: e.reason,
                failed_at: e.failed_at,
            })
            .collect(),
    }
}

/// Removes a pending task, or one that failed to start. A task being started is refused: it
/// is about to be a job.
pub fn cancel(queue: &Path, id: &str) -> Result<Queued, QueueError> {
    let found = |state| -> Result<Option<Queued>, QueueError> {
        Ok(entries(queue, state)?
            .into_iter()
            .map(|(q, _)| q)
            .find(|q| q.id == id))
    };
    let q = match found(State::Pending)?.or(found(State::Failed)?) {
        Some(q) => q,
        None if found(State::Starting)?.is_some() => {
            return Err(QueueError::Starting(id.to_owned()));
        }
        None => return Err(QueueError::NotFound(id.to_owned())),
    };
    match std::fs::remove_file(&q.path) {
        Ok(()) => Ok(q),
        // A starter claimed it between the listing and now.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(QueueError::Starting(id.to_owned()))
        }
        Err(e) => Err(io(&q.path)(e)),
    }
}

/// Puts a task that failed to start back in the queue, at the place its age gives it.
pub fn retry(queue: &Path, id: &str) -> Result<Queued, QueueError> {
    let Some(f) = failed(queue)?.into_iter().find(|f| f.entry.id == id) else {
        return Err(match list(queue)?.iter().any(|q| q.id == id) {
            true => QueueError::NotFailed(id.to_owned()),
            false => QueueError::NotFound(id.to_owned()),
        });
    };
    let dir = State::Pending.dir(queue, f.entry.priority);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    // Marked pending again where it lies (best effort: the directory is what counts), then
    // moved in one rename, so it is never in both places.
    if let Some(parent) = f.entry.path.parent() {
        let _ = claim::restamp(&f.entry.path, parent, |m| {
            m.insert("status".into(), "pending".into());
            m.remove("reason");
            m.remove("failed_at");
        });
    }
    let to = dir.join(f.entry.file_name());
    std::fs::rename(&f.entry.path, &to).map_err(io(&f.entry.path))?;
    Ok(Queued {
        path: to,
        ..f.entry
    })
}

/// Every directory of the queue below its root that holds task files, `pending/` first.
pub fn task_dirs(queue: &Path) -> Vec<PathBuf> {
    [State::Pending, State::Starting, State::Failed]
        .into_iter()
        .flat_map(|s| [Priority::High, Priority::Normal].map(|p| s.dir(queue, p)))
        .collect()
}

#[cfg(test)]
mod tests;
