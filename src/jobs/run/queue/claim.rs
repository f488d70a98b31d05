//! Claiming queued tasks: the slots lock, the move to `starting/`, and what becomes of a claim
//! (its job exists; it failed, and why; it goes back). A claim is made and settled only under
//! the lock, so a file in `starting/` that the next holder of the lock finds was left by a
//! starter that died: [`Slots::recover`] settles it by whether its job exists.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::{Map, Value};

use super::{Failed, QueueError, Queued, State, io, pending};
use crate::jobs::fs::files::{self, META_FILE_CAP, read_capped};
use crate::jobs::fs::names::META_FILE;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::model::id::is_valid;

/// The slots lock, held by whoever counts the running agents and starts queued tasks: an
/// exclusive `flock` on `<queue root>/.slots.lock`, released when this is dropped or the
/// process dies. Claims borrow it, so none can be made or settled without it.
pub struct Slots {
    _file: File,
    queue: PathBuf,
}

/// A task taken out of `pending/` into `starting/`. Settle it with [`Claim::started`] once its
/// job exists, or [`Claim::fail`] / [`Claim::release`]; one left unsettled (the starter died) is
/// settled by the next [`Slots::recover`].
pub struct Claim<'a> {
    _slots: &'a Slots,
    entry: Queued,
}

/// A failure that could not be written down (the queue's disk is full): the task went back to
/// `pending/` instead, or, if even that failed, stays in `starting/` until it is recovered.
#[derive(Debug, thiserror::Error)]
#[error("its failure could not be recorded in {path}: {source}, so it stays queued")]
pub struct Unrecorded {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl Slots {
    /// Waits for the lock.
    pub fn lock(queue: &Path) -> Result<Slots, QueueError> {
        std::fs::create_dir_all(queue).map_err(io(queue))?;
        let path = queue.join(".slots.lock");
        // Only locked, never written: appending is as good as any other way to make it.
        let file = files::open_append(&path).map_err(io(&path))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io(&path)(e.into()))?;
        Ok(Slots {
            _file: file,
            queue: queue.to_owned(),
        })
    }

    /// The queue root this lock is of.
    pub fn queue(&self) -> &Path {
        &self.queue
    }

    /// Whether a task waits in `pending/`.
    pub fn has_pending(&self) -> Result<bool, QueueError> {
        Ok(!pending(&self.queue)?.is_empty())
    }

    /// Takes the next pending task (high before normal, then oldest first) into `starting/`;
    /// `None` when nothing waits.
    pub fn claim_next(&self) -> Result<Option<Claim<'_>>, QueueError> {
        self.claim_next_where(&|_| true)
    }

    /// [`Slots::claim_next`] among the tasks `may_start` lets start (those a usage limit does
    /// not hold): the others keep their places.
    pub fn claim_next_where(
        &self,
        may_start: &dyn Fn(&Queued) -> bool,
    ) -> Result<Option<Claim<'_>>, QueueError> {
        for q in pending(&self.queue)?.into_iter().filter(|q| may_start(q)) {
            let dir = State::Starting.dir(&self.queue, q.priority);
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            let to = dir.join(q.file_name());
            match std::fs::rename(&q.path, &to) {
                Ok(()) => {
                    return Ok(Some(Claim {
                        _slots: self,
                        entry: Queued { path: to, ..q },
                    }));
                }
                // Cancelled since it was listed.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&q.path)(e)),
            }
        }
        Ok(None)
    }

    /// Settles what a starter that died left in `starting/`: a task whose job exists under
    /// `jobs_root` (its meta.json names the task's queue id, project and task) has left the
    /// queue; any other goes back to `pending/`. Returns the tasks put back. A task whose jobs
    /// root cannot be read stays where it is, for a later try: putting it back could start it
    /// twice.
    pub fn recover(&self, jobs_root: &Path) -> Result<Vec<Queued>, QueueError> {
        let mut returned = Vec::new();
        for (q, _) in super::entries(&self.queue, State::Starting)? {
            let claimed_at = std::fs::symlink_metadata(&q.path).map_or(0, |m| m.ctime());
            match job_exists(jobs_root, &q, claimed_at) {
                Ok(true) => {
                    let _ = std::fs::remove_file(&q.path);
                }
                Ok(false) => returned.push(
                    Claim {
                        _slots: self,
                        entry: q,
                    }
                    .release()?,
                ),
                Err(_) => {}
            }
        }
        Ok(returned)
    }
}

impl Claim<'_> {
    pub fn entry(&self) -> &Queued {
        &self.entry
    }

    /// Its job exists: the task leaves the queue. A file that cannot be removed is settled by
    /// the next [`Slots::recover`], which finds the job.
    pub fn started(self) {
        let _ = std::fs::remove_file(&self.entry.path);
    }

    /// Back to `pending/`, at the place its age gives it.
    pub fn release(self) -> Result<Queued, QueueError> {
        let dir = State::Pending.dir(&self.entry.path_queue(), self.entry.priority);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let to = dir.join(self.entry.file_name());
        std::fs::rename(&self.entry.path, &to).map_err(io(&self.entry.path))?;
        Ok(Queued {
            path: to,
            ..self.entry
        })
    }

    /// Into `failed/`, with `reason` written in the file. When that cannot be written (the
    /// queue's disk is full), the task goes back to `pending/` instead: never lost, it starts
    /// once the fault is gone.
    pub fn fail(self, reason: &str) -> Result<Failed, Unrecorded> {
        let failed_at = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let queue = self.entry.path_queue();
        let dir = State::Failed.dir(&queue, self.entry.priority);
        let to = dir.join(self.entry.file_name());
        let recorded = std::fs::create_dir_all(&dir)
            .and_then(|()| {
                let parent = self.entry.path.parent().unwrap_or(&queue);
                restamp(&self.entry.path, parent, |m| {
                    m.insert("status".into(), "failed".into());
                    m.insert("reason".into(), reason.into());
                    m.insert("failed_at".into(), failed_at.as_str().into());
                })
            })
            .and_then(|()| std::fs::rename(&self.entry.path, &to));
        match recorded {
            Ok(()) => Ok(Failed {
                entry: Queued {
                    path: to,
                    ..self.entry
                },
                reason: reason.to_owned(),
                failed_at,
            }),
            Err(source) => {
                let path = self.entry.path.clone();
                // If even this fails, the next recovery puts it back.
                let _ = self.release();
                Err(Unrecorded { path, source })
            }
        }
    }
}

impl Queued {
    /// The queue root of a task file: `<root>/<state>/<priority>/<name>`.
    fn path_queue(&self) -> PathBuf {
        self.path
            .ancestors()
            .nth(3)
            .map_or_else(PathBuf::new, Path::to_path_buf)
    }
}

/// Rewrites the task file at `path` (in `dir`) atomically with `change` applied to its JSON;
/// a file that is not a JSON object becomes one holding only what `change` puts in. Unknown
/// fields are kept.
pub(super) fn restamp(
    path: &Path,
    dir: &Path,
    change: impl FnOnce(&mut Map<String, Value>),
) -> std::io::Result<()> {
    let bytes = read_capped(path, META_FILE_CAP)?.unwrap_or_default();
    let mut map = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    change(&mut map);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // A map of JSON values: serializing cannot fail.
    let body = serde_json::to_vec_pretty(&Value::Object(map)).unwrap_or_default();
    write_atomic(dir, &name, &body)
}

/// Whether a job started from `q` exists under `jobs_root`: a job directory changed since the
/// claim (`claimed_at`, Unix seconds) whose meta.json names the task's queue id, project and
/// task.
fn job_exists(jobs_root: &Path, q: &Queued, claimed_at: i64) -> std::io::Result<bool> {
    for e in std::fs::read_dir(jobs_root)? {
        let e = e?;
        let name = e.file_name();
        if !is_valid(&name.to_string_lossy()) {
            continue;
        }
        let dir = e.path();
        // Created after the claim; a second of slack for coarse time stamps.
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && m.mtime() >= claimed_at - 1 => {}
            _ => continue,
        }
        let Ok(Some(bytes)) = read_capped(&dir.join(META_FILE), META_FILE_CAP) else {
            continue;
        };
        let Ok(meta) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if meta["queue_id"] == q.id.as_str()
            && meta["project"] == q.project.as_str()
            && meta["task"] == q.task.as_str()
        {
            return Ok(true);
        }
    }
    Ok(false)
}
