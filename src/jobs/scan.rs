//! Scanning a jobs root: every directory whose name is a job id becomes a [`Job`]; anything
//! else (stray files, `.tmp` dirs, links) is passed over.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::id::{JobId, is_valid};
use super::job::{Job, read_listed_job};

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
            .filter(|n| is_valid(n))
            .map(str::to_owned)
        else {
            continue;
        };
        // d_type from the directory listing: no stat, and a symlink is not a directory.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            ids.push(JobId::parse(&name).expect("checked by is_valid"));
        }
    }
    Ok(ids)
}

/// Every job under `root`, newest first (by start time, then by id).
pub fn scan(root: &Path, now: DateTime<Utc>) -> Result<Vec<Job>, ScanError> {
    let ids = list_ids(root)?;
    let mut jobs = read_all(root, &ids, now);
    sort_newest_first(&mut jobs);
    Ok(jobs)
}

/// Reads `ids` on all cores: each job is a handful of small reads, so the scan is bound by
/// system-call latency and two threads nearly halve it.
pub fn read_all(root: &Path, ids: &[JobId], now: DateTime<Utc>) -> Vec<Job> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if ids.len() < PARALLEL_MIN || threads == 1 {
        return ids
            .iter()
            .filter_map(|id| read_listed_job(root, id, now))
            .collect();
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|id| read_listed_job(root, id, now))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

pub fn sort_newest_first(jobs: &mut [Job]) {
    jobs.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
}
