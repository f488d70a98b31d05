//! The running jobs that have no entry in `.running/`: the orchestrator's, an interactive
//! session's, and those started before entries existed. They count against `max_concurrent`
//! while running, as they always did, without reading the whole root at every dispatch.
//!
//! `<queue root>/.running/.others.json` lists the jobs that had no exit line (and were not dead)
//! when the jobs root was last read whole, with the root's path and modification time then. A count reads only those
//! jobs, dropping the ones that have ended, as long as the root's modification time is the one
//! recorded; a new directory in the root changes it, and the next count reads the root whole
//! again. A job luzia starts itself changes it too: the starter, holding the slots lock, records
//! its own change by setting the root's modification time to a value of its own (just before
//! the kernel's, which a later change cannot give again) when nothing else changed the root
//! since the last count. Where luzia may not set that time (it does not own the root), every
//! count after a start reads the root whole, as before.

use std::io;
use std::path::Path;

use chrono::{DateTime, Utc};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, UTIME_OMIT};
use serde::{Deserialize, Serialize};

use super::RUNNING_DIR;
use crate::jobs::fs::files::read_capped;
use crate::jobs::fs::publish::write_unsynced;
use crate::jobs::{Job, JobId, ScanError, Status, read_job, scan};

const INDEX_FILE: &str = ".others.json";
/// An index of a root with more unfinished jobs than this is not worth keeping.
const INDEX_CAP: u64 = 16 * 1024 * 1024;

/// The root's modification time, to the nanosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    sec: i64,
    nsec: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    /// The jobs root read (one queue may serve several, one at a time).
    root: String,
    root_mtime: Option<Stamp>,
    jobs: Vec<String>,
}

/// The root's modification time now; `None` when it cannot be read.
pub fn stamp(root: &Path) -> Option<Stamp> {
    let st = rustix::fs::stat(root).ok()?;
    Some(Stamp {
        sec: st.st_mtime,
        nsec: st.st_mtime_nsec as i64,
    })
}

/// How many jobs without an entry (`luzia_live` holds those with one) are running or waiting for
/// a person. The caller holds the slots lock.
pub fn count(
    root: &Path,
    queue: &Path,
    luzia_live: &std::collections::HashSet<String>,
    now: DateTime<Utc>,
) -> Result<usize, ScanError> {
    let index = load(root, queue);
    let before = stamp(root);
    if before.is_some() && index.root_mtime == before {
        return Ok(recount(root, queue, index, luzia_live, now));
    }
    let jobs = scan(root, now)?;
    let kept: Vec<&Job> = jobs
        .iter()
        .filter(|j| may_run(j) && !luzia_live.contains(j.id.as_str()))
        .collect();
    save(
        queue,
        &Index {
            root: root.display().to_string(),
            root_mtime: before,
            jobs: kept.iter().map(|j| j.id.to_string()).collect(),
        },
    );
    Ok(kept.iter().filter(|j| counts(j)).count())
}

/// Reads the listed jobs again; the ones that ended leave the list.
fn recount(
    root: &Path,
    queue: &Path,
    mut index: Index,
    luzia_live: &std::collections::HashSet<String>,
    now: DateTime<Utc>,
) -> usize {
    let listed = index.jobs.len();
    let mut running = 0;
    index.jobs.retain(|id| {
        let Ok(id) = JobId::parse(id) else {
            return false;
        };
        let Some(job) = read_job(root, &id, now) else {
            return false;
        };
        if !may_run(&job) {
            return false;
        }
        if counts(&job) && !luzia_live.contains(id.as_str()) {
            running += 1;
        }
        true
    });
    if index.jobs.len() != listed {
        save(queue, &index);
    }
    running
}

/// Not ended for good: no exit line, and not dead (a job with nothing readable yet may be
/// being written).
fn may_run(job: &Job) -> bool {
    job.exit_code.is_none() && !matches!(job.status, Status::Died | Status::Killed)
}

/// What the count of running agents has always counted.
fn counts(job: &Job) -> bool {
    matches!(job.status, Status::Running | Status::Waiting)
}

/// After a job luzia started itself (with an entry) was made in the root: when the root had not
/// changed otherwise since `before` (the time read just before the job was made) and the index
/// is current as of `before`, the root is given a modification time of luzia's own and the
/// index that time, so the next count need not read the root whole. The caller holds the slots
/// lock.
pub fn record_own_change(root: &Path, queue: &Path, before: Option<Stamp>) {
    let mut index = load(root, queue);
    if before.is_none() || index.root_mtime != before {
        return;
    }
    let Some(after) = stamp(root) else { return };
    // One nanosecond before the kernel's: any later change is stamped at or after `after`.
    let mine = if after.nsec > 0 {
        Stamp {
            sec: after.sec,
            nsec: after.nsec - 1,
        }
    } else {
        Stamp {
            sec: after.sec - 1,
            nsec: 999_999_999,
        }
    };
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: mine.sec,
            tv_nsec: mine.nsec as _,
        },
    };
    if rustix::fs::utimensat(CWD, root, &times, AtFlags::empty()).is_err() {
        return;
    }
    // A change made by another process between the read above and this call would be hidden
    // (microseconds; documented in protocol.md). One made after it is not: the value read back
    // is ours only if nothing changed the root since.
    if stamp(root) == Some(mine) {
        index.root_mtime = Some(mine);
        save(queue, &index);
    }
}

/// The index, if it is of `root`.
fn load(root: &Path, queue: &Path) -> Index {
    let path = queue.join(RUNNING_DIR).join(INDEX_FILE);
    read_capped(&path, INDEX_CAP)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
        .filter(|i| Path::new(&i.root) == root)
        .unwrap_or_default()
}

/// Best effort, and not made durable: an index that is lost or cannot be written only means the
/// next count reads the root whole.
fn save(queue: &Path, index: &Index) {
    let dir = queue.join(RUNNING_DIR);
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let bytes = serde_json::to_vec(index).map_err(io::Error::other)?;
        write_unsynced(&dir, INDEX_FILE, &bytes)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(dir.join(INDEX_FILE));
    }
}
