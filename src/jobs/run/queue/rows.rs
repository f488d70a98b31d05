//! The queue as rows of the jobs table: each task `queued` at its place, those that failed to
//! start `failed` with the reason, every entry exactly one row under a key no job directory has.

use std::collections::HashSet;
use std::path::Path;

use super::{Failed, Listing, Queued, listing};
use crate::jobs::{Job, JobId, Meta, Problem, Status};

impl Queued {
    /// The task as a row of the jobs table: status `queued`, at `position` (1 starts next),
    /// keyed by `key` (see [`rows`]).
    fn row(&self, key: JobId, position: usize) -> Job {
        let meta = Meta {
            id: self.id.as_str().into(),
            project: self.project.as_str().into(),
            task: self.task.as_str().into(),
            ..Default::default()
        };
        Job {
            meta: Some(Box::new(meta)),
            status: Status::Queued,
            queue_position: u32::try_from(position).ok(),
            ..Job::bare(key, self.path.clone())
        }
    }
}

impl Failed {
    /// The task as a row of the jobs table: status `failed`, no place in the queue, the reason
    /// as its problem.
    fn row(&self, key: JobId) -> Job {
        let mut job = self.entry.row(key, 0);
        job.status = Status::Failed;
        job.queue_position = None;
        job.problems = Box::new([Problem {
            path: self.entry.path.clone(),
            message: self.why(),
        }]);
        job
    }
}

/// The queue (as [`list`] gives it) as rows of the jobs table, in order, each at its place.
/// A row is keyed by [`JobId::queued`] of its queue id, which no job directory can have; an
/// entry whose id cannot be a key (empty, not an id, or already taken by an earlier entry) is
/// keyed by its place instead, so every entry is exactly one row.
pub fn rows(queued: &[Queued]) -> Vec<Job> {
    rows_keyed(queued, &mut HashSet::new())
}

fn rows_keyed(queued: &[Queued], taken: &mut HashSet<JobId>) -> Vec<Job> {
    keyed(queued.iter().map(|q| &q.id), taken)
        .zip(queued)
        .enumerate()
        .map(|(i, (key, q))| q.row(key, i + 1))
        .collect()
}

/// One key each, in order: the queue id's, else the place's (counted on from `taken.len()`).
fn keyed<'a>(
    ids: impl Iterator<Item = &'a String> + 'a,
    taken: &'a mut HashSet<JobId>,
) -> impl Iterator<Item = JobId> + 'a {
    ids.map(move |id| {
        let key = JobId::queued(id)
            .filter(|k| !taken.contains(k))
            .unwrap_or_else(|| JobId::queued_at(taken.len() + 1));
        taken.insert(key.clone());
        key
    })
}

/// The tasks that failed to start as rows, keyed apart from `queued`'s rows: those first (no
/// place in the queue sorts first), then the queue's, so that the listing is in the order of
/// `queue_position`.
fn failed_rows(failed: &[Failed], taken: &mut HashSet<JobId>) -> Vec<Job> {
    let keys: Vec<JobId> = keyed(failed.iter().map(|f| &f.entry.id), taken).collect();
    let mut rows: Vec<Job> = failed.iter().zip(keys).map(|(f, k)| f.row(k)).collect();
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows
}

/// The queue as rows, the tasks that failed to start among them; none when it cannot be listed
/// (`luzia queue` says why).
pub fn listed_rows(queue: &Path) -> Vec<Job> {
    listed_rows_of(queue, &|_| None)
}

/// [`listed_rows`], each queued task's row naming the program its agent runs (meta.json's
/// `agent`, as a job's does), as `program` says it: what the queue alone does not know.
pub fn listed_rows_of(queue: &Path, program: &dyn Fn(&Queued) -> Option<String>) -> Vec<Job> {
    let Listing { queued, failed } = listing(queue).unwrap_or_default();
    let mut taken = HashSet::new();
    let mut queued_rows = rows_keyed(&queued, &mut taken);
    for (row, q) in queued_rows.iter_mut().zip(&queued) {
        if let (Some(meta), Some(p)) = (row.meta.as_mut(), program(q)) {
            meta.agent = p.into();
        }
    }
    let mut all = failed_rows(&failed, &mut taken);
    all.extend(queued_rows);
    all
}
