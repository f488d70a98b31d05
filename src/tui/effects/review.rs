//! The review worker: a job's change read from git, what a merge or discard would do, and doing
//! it. One thread of its own: git on a large repository can take seconds, which must hold up
//! neither the job reads nor the writes; and one merge or discard at a time, in the order asked.
//! What git may and may not do is decided in `jobs::review`; this only says what came of it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedSender;

use crate::jobs::review;
use crate::jobs::review::gate::Gate;
use crate::jobs::{Job, JobId, read_job};
use crate::tui::effect::ReviewOp;
use crate::tui::event::Event;

pub struct Reviews {
    root: PathBuf,
    tx: UnboundedSender<Event>,
    /// The projects whose config has checks: their jobs merge once the checks passed.
    checked: BTreeSet<String>,
}

impl Reviews {
    pub fn new(root: PathBuf, tx: UnboundedSender<Event>, checked: BTreeSet<String>) -> Reviews {
        Reviews { root, tx, checked }
    }

    /// The cockpit never forces a merge past the checks (`luzia merge --force` does).
    fn gate(&self, job: &Job) -> Gate {
        Gate {
            project_has_checks: self.checked.contains(job.project()),
            forced_by: None,
        }
    }

    fn send(&self, ev: Event) {
        // The loop has gone: the cockpit is shutting down, nothing to report to.
        let _ = self.tx.send(ev);
    }

    /// The job as its directory says now (a merge must see the job ended, not as it was when
    /// the key was pressed).
    fn job(&self, id: &JobId) -> Result<Job, String> {
        read_job(&self.root, id, chrono::Utc::now()).ok_or_else(|| {
            format!(
                "the job directory {} is gone",
                self.root.join(id.as_str()).display()
            )
        })
    }

    pub fn load_change(&mut self, id: JobId) {
        let change = self
            .job(&id)
            .and_then(|job| review::change(&job).map_err(|e| e.to_string()));
        self.send(Event::ChangeLoaded { id, change });
    }

    /// Which of `ids` (unmerged worktree jobs) touch the same files: read from the paths each
    /// recorded when it ended, no git run.
    pub fn overlaps(&mut self, ids: Vec<JobId>) {
        let jobs: Vec<Job> = ids.iter().filter_map(|id| self.job(id).ok()).collect();
        let found = review::overlap::overlaps(&jobs)
            .into_iter()
            .map(|(id, others)| (id, review::overlap::describe(&others)))
            .collect();
        self.send(Event::Overlaps(found));
    }

    pub fn preview(&mut self, job: JobId, op: ReviewOp) {
        let preview = self.job(&job).and_then(|j| {
            match op {
                ReviewOp::Merge => review::merge_preview(&j, &self.gate(&j)),
                ReviewOp::Discard => review::discard_preview(&j),
            }
            .map_err(|e| e.to_string())
        });
        self.send(Event::ReviewPreviewed { job, op, preview });
    }

    /// Merges or discards (a read-only cockpit has refused this before it got here), then has
    /// the job read again: its row shows what is left of its change.
    pub fn perform(&mut self, job: JobId, op: ReviewOp) {
        let result = self.job(&job).and_then(|j| {
            match op {
                ReviewOp::Merge => review::merge(&j, &self.gate(&j)),
                ReviewOp::Discard => review::discard(&j),
            }
            .map_err(|e| e.to_string())
        });
        self.send(Event::Reviewed { job, op, result });
    }
}
