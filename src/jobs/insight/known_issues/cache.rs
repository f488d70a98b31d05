//! One [`IssueScanner`] per job, kept between scans so that each scan reads only what the logs
//! gained since the last one: the cockpit's scanning thread and `luzia status --watch` both
//! keep one.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use super::{Findings, IssueScanner, PatternSet, SCAN_WINDOW};
use crate::jobs::{Job, JobId};

#[derive(Debug, Default)]
pub struct IssueCache {
    scanners: HashMap<JobId, IssueScanner>,
}

impl IssueCache {
    pub fn new() -> IssueCache {
        IssueCache::default()
    }

    /// Scans what the log of `id` at `path` gained (the last [`SCAN_WINDOW`] on first sight).
    /// Returns whether its findings changed.
    pub fn advance(&mut self, id: &JobId, path: &Path, set: &PatternSet) -> io::Result<bool> {
        self.scanners
            .entry(id.clone())
            .or_default()
            .advance(path, set, SCAN_WINDOW)
    }

    /// Drops the scanners of these jobs (they are gone).
    pub fn forget(&mut self, ids: &[JobId]) {
        for id in ids {
            self.scanners.remove(id);
        }
    }

    /// Scans what the logs of `jobs` gained and forgets the jobs not among them. Returns the
    /// logs that could not be read.
    pub fn refresh(&mut self, jobs: &[&Job], set: &PatternSet) -> Vec<String> {
        let wanted: HashSet<&JobId> = jobs.iter().map(|j| &j.id).collect();
        self.scanners.retain(|id, _| wanted.contains(id));
        let mut problems = Vec::new();
        for job in jobs {
            let path = job.log_path();
            if let Err(e) = self.advance(&job.id, &path, set) {
                problems.push(scan_problem(&path, &e));
            }
        }
        problems
    }

    pub fn findings(&self, id: &JobId) -> Option<&Findings> {
        self.scanners.get(id).map(|s| &s.findings)
    }

    /// Bytes of logs read so far, over every scan.
    pub fn bytes_scanned(&self) -> u64 {
        self.scanners.values().map(|s| s.bytes_scanned).sum()
    }
}

/// What to say of a log that could not be scanned.
pub fn scan_problem(path: &Path, e: &io::Error) -> String {
    format!("cannot scan {} for known issues: {e}", path.display())
}
