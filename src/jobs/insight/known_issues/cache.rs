//! One [`IssueScanner`] per job, kept between scans so that each scan reads only what the logs
//! gained since the last one: the cockpit's scanning thread and `luzia status --watch` both
//! keep one. A log another follower reads (the cockpit's output pane) is scanned from what that
//! follower hands in, not read a second time.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use super::{Findings, IssueScanner, PatternSet, SCAN_WINDOW};
use crate::jobs::fs::follow::Handoff;
use crate::jobs::{Job, JobId};

#[derive(Debug, Default)]
pub struct IssueCache {
    scanners: HashMap<JobId, IssueScanner>,
    /// Jobs whose log another follower reads and hands in: `advance` leaves them to it.
    followed: HashSet<JobId>,
}

impl IssueCache {
    pub fn new() -> IssueCache {
        IssueCache::default()
    }

    /// Scans what the log of `id` at `path` gained (the last [`SCAN_WINDOW`] on first sight).
    /// Returns whether its findings changed. A followed log is left to its follower.
    pub fn advance(&mut self, id: &JobId, path: &Path, set: &PatternSet) -> io::Result<bool> {
        if self.followed.contains(id) {
            return Ok(false);
        }
        self.scanners
            .entry(id.clone())
            .or_default()
            .advance(path, set, SCAN_WINDOW)
    }

    /// Scans the lines another follower of the log of `id` read, and leaves that log to it
    /// from now on (until [`IssueCache::unfollow`]). Returns whether its findings changed.
    pub fn take(
        &mut self,
        id: &JobId,
        path: &Path,
        handed: &Handoff,
        set: &PatternSet,
    ) -> io::Result<bool> {
        self.followed.insert(id.clone());
        self.scanners
            .entry(id.clone())
            .or_default()
            .take(path, handed, set, SCAN_WINDOW)
    }

    /// The follower of this job's log has stopped: `advance` reads it again.
    pub fn unfollow(&mut self, id: &JobId) {
        self.followed.remove(id);
    }

    /// Drops the scanner of a log that will not grow (its job is settled), unless a follower
    /// hands its lines in: the findings are kept by whoever was told them. Should the log grow
    /// after all, `advance` reads it again from the start of its window.
    pub fn settle(&mut self, id: &JobId) {
        if !self.followed.contains(id) {
            self.scanners.remove(id);
        }
    }

    /// Drops the scanners of these jobs (they are gone).
    pub fn forget(&mut self, ids: &[JobId]) {
        for id in ids {
            self.scanners.remove(id);
            self.followed.remove(id);
        }
    }

    /// Scans what the logs of `jobs` gained and forgets the jobs not among them. Returns the
    /// logs that could not be read.
    pub fn refresh(&mut self, jobs: &[&Job], set: &PatternSet) -> Vec<String> {
        let wanted: HashSet<&JobId> = jobs.iter().map(|j| &j.id).collect();
        self.scanners.retain(|id, _| wanted.contains(id));
        self.followed.retain(|id| wanted.contains(id));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::fs::follow::Follower;

    #[test]
    fn a_settled_log_leaves_no_scanner_and_is_read_again_if_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        let id = JobId::parse("100002-settled").unwrap();
        std::fs::write(&path, b"No space left on device\n\nexit:1\n").unwrap();
        let mut cache = IssueCache::new();
        assert!(cache.advance(&id, &path, &set).unwrap());
        let found = cache.findings(&id).unwrap().clone();
        assert_eq!(found.worst().unwrap().count, 1);
        cache.settle(&id);
        assert!(
            cache.findings(&id).is_none(),
            "nothing kept of a settled log"
        );
        assert_eq!(cache.bytes_scanned(), 0);
        // It grew after all: read from the start of its window again, so nothing is lost.
        std::fs::write(
            &path,
            b"No space left on device\n\nexit:1\nNo space left on device\n",
        )
        .unwrap();
        assert!(cache.advance(&id, &path, &set).unwrap());
        assert_eq!(cache.findings(&id).unwrap().worst().unwrap().count, 2);
        // A log a follower hands in keeps its scanner.
        let mut pane = Follower::from_start(&path);
        let chunk = pane.poll().unwrap();
        cache.take(&id, &path, &pane.handoff(&chunk), &set).unwrap();
        cache.settle(&id);
        assert!(cache.findings(&id).is_some());
    }

    #[test]
    fn a_followed_log_is_left_to_its_follower_until_unfollowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        let id = JobId::parse("100001-followed").unwrap();
        std::fs::write(&path, b"ok\n").unwrap();
        let mut cache = IssueCache::new();
        let mut pane = Follower::from_start(&path);
        let chunk = pane.poll().unwrap();
        cache.take(&id, &path, &pane.handoff(&chunk), &set).unwrap();
        assert_eq!(cache.bytes_scanned(), 0);

        std::fs::write(&path, b"ok\nNo space left on device\n").unwrap();
        assert!(
            !cache.advance(&id, &path, &set).unwrap(),
            "left to the pane"
        );
        assert_eq!(cache.bytes_scanned(), 0);

        cache.unfollow(&id);
        assert!(cache.advance(&id, &path, &set).unwrap());
        assert_eq!(cache.bytes_scanned(), 24, "only what the pane had not read");
        assert!(!cache.findings(&id).unwrap().is_empty());
    }
}
