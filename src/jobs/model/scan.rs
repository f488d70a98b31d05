//! Scanning a jobs root: every directory whose name is a job id becomes a [`Job`]; anything
//! else (stray files, `.tmp` dirs, links) is passed over.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::{borrow, open_root};
use crate::jobs::model::id::{JobId, is_valid};
use crate::jobs::model::index::Index;
use crate::jobs::model::job::{Job, read_listed_job_in, replay_job};
use crate::jobs::model::lifecycle::link_retries;

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(
        "the jobs root {0} does not exist: point luzia at your jobs directory with \
         --jobs-dir DIR, the LUZIA_JOBS_DIR environment variable, or jobs_dir in the config file"
    )]
    Missing(PathBuf),
    #[error(
        "the jobs root {0} is not a directory: --jobs-dir must name the directory that holds the job directories"
    )]
    NotADirectory(PathBuf),
    #[error("cannot read the jobs root {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Job directories below this many are read on one thread: spawning costs more than it saves.
const PARALLEL_MIN: usize = 256;

/// The ids of the job directories under `root`, unsorted.
pub fn list_ids(root: &Path) -> Result<Vec<JobId>, ScanError> {
    list_ids_where(root, |_| true)
}

/// The ids of the job directories under `root` whose name `keep` accepts, unsorted: the name
/// is asked about before anything is allocated for it, so a search of a large root costs its
/// listing alone.
pub fn list_ids_where(root: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<JobId>, ScanError> {
    let entries = std::fs::read_dir(root).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ScanError::Missing(root.to_owned()),
        std::io::ErrorKind::NotADirectory => ScanError::NotADirectory(root.to_owned()),
        _ => ScanError::Io {
            path: root.to_owned(),
            source,
        },
    })?;
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ScanError::Io {
            path: root.to_owned(),
            source,
        })?;
        let Some(name) = entry
            .file_name()
            .to_str()
            .filter(|n| keep(n) && is_valid(n))
            .map(str::to_owned)
        else {
            continue;
        };
        // d_type from the directory listing: no stat, and a symlink is not a directory.
        if entry.file_type().is_ok_and(|t| t.is_dir())
            && let Ok(id) = JobId::parse(&name)
        {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Every job under `root`, newest first (by start time, then by id), each with its retries.
pub fn scan(root: &Path, now: DateTime<Utc>) -> Result<Vec<Job>, ScanError> {
    scan_through(root, now, None)
}

/// [`scan`], reading the settled jobs through the index at `index` where it matches the disk.
pub fn scan_through(
    root: &Path,
    now: DateTime<Utc>,
    index: Option<&Path>,
) -> Result<Vec<Job>, ScanError> {
    let ids = list_ids(root)?;
    let index = load_index(index, root, ids.len());
    let (mut jobs, _) = read_all_with(root, &ids, now, index.as_ref());
    drop(index);
    link_retries(&mut jobs);
    sort_newest_first(&mut jobs);
    Ok(jobs)
}

/// A read of fewer jobs than this does not load the index of settled jobs: it is read whole, and
/// a few jobs cost less read from their files.
pub const INDEX_MIN: usize = 256;

/// The index at `path` of `root`, for a read of `jobs` jobs, when there are enough to be worth
/// loading it (and it is there, and usable).
pub fn load_index(path: Option<&Path>, root: &Path, jobs: usize) -> Option<Index> {
    path.filter(|_| jobs >= INDEX_MIN)
        .and_then(|path| Index::load(path, root))
}

/// Reads `ids` on all cores: each job is a handful of small reads, so the scan is bound by
/// system-call latency and two threads nearly halve it.
pub fn read_all(root: &Path, ids: &[JobId], now: DateTime<Utc>) -> Vec<Job> {
    read_all_with(root, ids, now, None).0
}

/// How a read of many jobs used the index of settled jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexUse {
    /// Jobs taken from the index, their stamps matching the disk.
    pub hits: usize,
    /// Settled jobs read from their files without a problem: the index could hold them and
    /// does not (yet).
    pub misses: usize,
}

/// [`read_all`], taking each settled job from `index` while the disk says it is unchanged (see
/// [`index`](crate::jobs::model::index)): a few `statx` instead of opening its files.
pub fn read_all_with(
    root: &Path,
    ids: &[JobId],
    now: DateTime<Utc>,
    index: Option<&Index>,
) -> (Vec<Job>, IndexUse) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    // Each job's files are opened relative to the root, opened once; if it cannot be, by their
    // paths (each job then says what it could not read).
    let root_fd = open_root(root).ok();
    let root_fd = borrow(&root_fd);
    let index = index.filter(|i| !i.is_empty());
    // In the order of the ids, as the index holds them: each thread reads its part of the
    // index a block at a time, once.
    let mut sorted: Vec<&JobId> = ids.iter().collect();
    if index.is_some() {
        sorted.sort_unstable();
    }
    // Every job keeps the root, shared: not a path of its own.
    let shared: std::sync::Arc<Path> = std::sync::Arc::from(root);
    let shared = &shared;
    let read_part = |part: &[&JobId]| {
        let mut used = IndexUse::default();
        let mut cursor = index.map(Index::cursor);
        let jobs: Vec<Job> = part
            .iter()
            .filter_map(|&id| {
                let indexed = cursor.as_mut().zip(root_fd).and_then(|(cursor, fd)| {
                    let (tape, _) = cursor.find(id.as_str())?;
                    tape.still_matches(fd, id.as_str())
                        .then(|| replay_job(shared, id, &tape))?
                });
                if let Some(job) = indexed {
                    used.hits += 1;
                    return Some(job);
                }
                let job = read_listed_job_in(shared, root_fd, id, now)?;
                used.misses += usize::from(job.is_settled() && job.problems.is_empty());
                Some(job)
            })
            .collect();
        (jobs, used)
    };
    if ids.len() < PARALLEL_MIN || threads == 1 {
        return read_part(&sorted);
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = sorted
            .chunks(chunk)
            .map(|part| s.spawn(move || read_part(part)))
            .collect();
        let mut all = Vec::with_capacity(ids.len());
        let mut used = IndexUse::default();
        for h in handles {
            let (jobs, u) = h.join().unwrap_or_default();
            all.extend(jobs);
            used.hits += u.hits;
            used.misses += u.misses;
        }
        (all, used)
    })
}

/// Scans a root again and again (`luzia status --watch`), reading again only the jobs that can
/// still change: at 10,000 jobs a refresh costs what the live ones cost. The jobs are kept once,
/// in the order they are returned in, and lent out: a copy of every job per refresh would double
/// what a large root costs in memory.
#[derive(Debug, Default)]
pub struct Rescan {
    jobs: Vec<Job>,
    /// The index of settled jobs, read through while many jobs are to be read.
    index: Option<PathBuf>,
}

impl Rescan {
    pub fn through(index: Option<PathBuf>) -> Rescan {
        Rescan {
            jobs: Vec::new(),
            index,
        }
    }

    pub fn scan(&mut self, root: &Path, now: DateTime<Utc>) -> Result<&[Job], ScanError> {
        let ids = list_ids(root)?;
        let present: std::collections::HashSet<&JobId> = ids.iter().collect();
        let mut jobs = std::mem::take(&mut self.jobs);
        // A directory that went is gone, settled or not; what can change is read again below
        // (and is gone if it vanished in between).
        jobs.retain(|j| j.is_settled() && present.contains(&j.id));
        let settled: std::collections::HashSet<&JobId> = jobs.iter().map(|j| &j.id).collect();
        let wanted: Vec<JobId> = ids
            .iter()
            .filter(|id| !settled.contains(*id))
            .cloned()
            .collect();
        drop(settled);
        let index = load_index(self.index.as_deref(), root, wanted.len());
        jobs.extend(read_all_with(root, &wanted, now, index.as_ref()).0);
        drop(index);
        link_retries(&mut jobs);
        sort_newest_first(&mut jobs);
        self.jobs = jobs;
        Ok(&self.jobs)
    }
}

pub fn sort_newest_first(jobs: &mut [Job]) {
    jobs.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(root: &Path, id: &str, task: &str, log: &str) {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("meta.json"),
            format!(r#"{{"project": "p", "task": "{task}", "started": "2026-01-09T10:00:00Z"}}"#),
        )
        .unwrap();
        std::fs::write(dir.join("output.log"), log).unwrap();
        std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    }

    fn tasks(jobs: &[Job]) -> Vec<String> {
        let mut t: Vec<String> = jobs
            .iter()
            .map(|j| format!("{} {}", j.id, j.task()))
            .collect();
        t.sort();
        t
    }

    #[test]
    fn the_jobs_read_together_share_their_root_and_each_is_in_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let ids: Vec<JobId> = (0..PARALLEL_MIN + 10)
            .map(|i| {
                let id = format!("j{i:04}");
                job(root, &id, "t", "ok\n\nexit:0\n");
                JobId::parse(&id).unwrap()
            })
            .collect();
        let jobs = read_all(root, &ids, Utc::now());
        assert_eq!(jobs.len(), ids.len());
        let first = jobs[0].root().expect("named by its id under the root");
        for j in &jobs {
            assert!(std::sync::Arc::ptr_eq(j.root().unwrap(), first), "{}", j.id);
            assert_eq!(j.dir(), root.join(j.id.as_str()));
            assert_eq!(j.log_path(), root.join(j.id.as_str()).join("output.log"));
        }
    }

    #[test]
    fn a_rescan_reads_again_only_what_can_change() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let now = Utc::now();
        job(root, "done", "first", "ok\n\nexit:0\n");
        job(root, "live", "first", "working\n");
        let mut r = Rescan::default();
        assert_eq!(
            tasks(r.scan(root, now).unwrap()),
            ["done first", "live first"]
        );
        // Both meta.json files change: only the live job is read again.
        job(root, "done", "second", "ok\n\nexit:0\n");
        job(root, "live", "second", "working\n");
        job(root, "new", "second", "starting\n");
        assert_eq!(
            tasks(r.scan(root, now).unwrap()),
            ["done first", "live second", "new second"]
        );
        // A directory that goes is gone, settled or not.
        std::fs::remove_dir_all(root.join("done")).unwrap();
        std::fs::remove_dir_all(root.join("live")).unwrap();
        assert_eq!(tasks(r.scan(root, now).unwrap()), ["new second"]);
        // What a full scan sees, a rescan sees for every job that can change.
        assert_eq!(tasks(&scan(root, now).unwrap()), ["new second"]);
    }
}
