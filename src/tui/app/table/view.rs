//! Which jobs the table shows, in what order: tabs by state, the project filter, the text
//! filter, and the sort key. Pure functions over the job map.

use std::cmp::Reverse;
use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::jobs::model::lifecycle::Stage;
use crate::jobs::{Job, JobId, Status};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    All,
    Active,
    Waiting,
    Done,
    Failed,
}

impl Tab {
    pub const ALL: [Tab; 5] = [Tab::All, Tab::Active, Tab::Waiting, Tab::Done, Tab::Failed];

    pub fn title(self) -> &'static str {
        match self {
            Tab::All => "All",
            Tab::Active => "Active",
            Tab::Waiting => "Waiting",
            Tab::Done => "Done",
            Tab::Failed => "Failed",
        }
    }

    /// Whether the tab lists the job. Waiting is for what a person must act on: a job that
    /// stopped for an answer leaves it once answered or retried (see `Job::awaits_person`).
    pub fn admits(self, job: &Job) -> bool {
        let status = job.status;
        match self {
            Tab::All => true,
            Tab::Active => status.is_active(),
            Tab::Waiting => job.awaits_person(),
            Tab::Done => status == Status::Completed,
            Tab::Failed => matches!(
                status,
                Status::Failed | Status::ChecksFailed | Status::Killed | Status::Died
            ),
        }
    }

    pub fn step(self, forward: bool) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        let n = Tab::ALL.len();
        Tab::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Jobs that need a person first, then running, then the rest; newest first within each.
    Status,
    Started,
    Project,
    Elapsed,
}

impl SortKey {
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Status => SortKey::Started,
            SortKey::Started => SortKey::Project,
            SortKey::Project => SortKey::Elapsed,
            SortKey::Elapsed => SortKey::Status,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            SortKey::Status => "status",
            SortKey::Started => "newest",
            SortKey::Project => "project",
            SortKey::Elapsed => "longest",
        }
    }
}

/// The filters a view applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewSpec<'a> {
    pub tab: Tab,
    pub projects: &'a [String],
    pub text: &'a str,
    pub sort: SortKey,
}

pub fn matches_text(job: &Job, needle_lower: &str) -> bool {
    needle_lower.is_empty()
        || job.id.as_str().to_lowercase().contains(needle_lower)
        || job.project().to_lowercase().contains(needle_lower)
        || job.task().to_lowercase().contains(needle_lower)
}

pub fn in_projects(job: &Job, projects: &[String]) -> bool {
    projects.is_empty() || projects.iter().any(|p| p == job.project())
}

/// The ids to show, in order.
pub fn build(jobs: &crate::tui::app::Jobs, spec: &ViewSpec, now: DateTime<Utc>) -> Vec<JobId> {
    let needle = spec.text.to_lowercase();
    // Each job's key is worked out once, beside it: at 100,000 jobs a sort that looked into two
    // jobs per comparison spent most of its time waiting for memory.
    let mut rows: Vec<(RowKey, &Job)> = jobs
        .values()
        .map(|j| &**j)
        .filter(|j| spec.tab.admits(j) && in_projects(j, spec.projects) && matches_text(j, &needle))
        .map(|j| (RowKey::of(j, spec.sort, now), j))
        .collect();
    // Ids are unique: the order is total, and an unstable sort gives the one order there is.
    rows.sort_unstable_by(|(ka, a), (kb, b)| ka.cmp(kb).then_with(|| b.id.cmp(&a.id)));
    // Into a vector of its own size: collected from `rows`, it would keep their allocation,
    // four times as large, for as long as the view lives.
    let mut view = Vec::with_capacity(rows.len());
    view.extend(rows.iter().map(|(_, j)| j.id.clone()));
    view
}

/// Where a row goes, but for the id that breaks the last ties: the sort key, then queued tasks
/// in the order they will start, then the newest first.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct RowKey<'a> {
    primary: Primary<'a>,
    queue_position: Option<u32>,
    newest: Reverse<Option<DateTime<Utc>>>,
}

/// One sort's key: every row of a view has the same variant.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Primary<'a> {
    Status((Status, u8)),
    Started,
    Project(&'a str),
    Longest(Reverse<Option<i64>>),
}

impl<'a> RowKey<'a> {
    fn of(job: &'a Job, sort: SortKey, now: DateTime<Utc>) -> RowKey<'a> {
        RowKey {
            primary: match sort {
                SortKey::Status => Primary::Status(status_rank(job)),
                SortKey::Started => Primary::Started,
                SortKey::Project => Primary::Project(job.project()),
                SortKey::Elapsed => Primary::Longest(Reverse(job.elapsed_secs(now))),
            },
            queue_position: job.queue_position,
            newest: Reverse(job.started),
        }
    }
}

/// Where the status sort puts a job: by status, except that a job that stopped for an answer
/// and was answered comes after those still asking, and once retried goes among the finished
/// (its retry carries on).
fn status_rank(job: &Job) -> (Status, u8) {
    match job.stage() {
        Some(Stage::Asking) | None => (job.status, 0),
        Some(Stage::Answered) => (job.status, 1),
        Some(Stage::Retried(_)) => (Status::Completed, 1),
    }
}

/// Jobs per status, among those the project filter admits. A `needs_input` job counts only
/// while it awaits a person: answered or retried, it waits for nobody (the header's "waiting
/// for you" adds these to the `waiting` ones).
pub fn counts(jobs: &crate::tui::app::Jobs, projects: &[String]) -> HashMap<Status, usize> {
    let mut c = HashMap::new();
    for j in jobs.values().filter(|j| in_projects(j, projects)) {
        if j.status == Status::NeedsInput && !j.awaits_person() {
            continue;
        }
        *c.entry(j.status).or_insert(0) += 1;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    /// The order as it was defined before the keys were worked out once per row: two jobs
    /// compared field by field.
    fn by_comparison(
        jobs: &crate::tui::app::Jobs,
        sort: SortKey,
        now: DateTime<Utc>,
    ) -> Vec<JobId> {
        let mut rows: Vec<&Job> = jobs.values().map(|j| &**j).collect();
        let newest = |a: &Job, b: &Job| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id));
        rows.sort_by(|a, b| {
            let primary = match sort {
                SortKey::Status => status_rank(a).cmp(&status_rank(b)),
                SortKey::Started => std::cmp::Ordering::Equal,
                SortKey::Project => a.project().cmp(b.project()),
                SortKey::Elapsed => b.elapsed_secs(now).cmp(&a.elapsed_secs(now)),
            };
            primary
                .then_with(|| a.queue_position.cmp(&b.queue_position))
                .then_with(|| newest(a, b))
        });
        rows.into_iter().map(|j| j.id.clone()).collect()
    }

    fn job(
        i: usize,
        status: usize,
        started: Option<i64>,
        finished: Option<i64>,
        project: usize,
        queued: Option<usize>,
    ) -> Job {
        let t = |s: i64| Utc.timestamp_opt(1_767_225_600 + s, 0).single();
        let id = JobId::parse(&format!("job-{i:03}")).unwrap();
        Job {
            status: Status::ALL[status % Status::ALL.len()],
            started: started.and_then(t),
            finished: finished.and_then(t),
            queue_position: queued.and_then(|q| u32::try_from(q).ok()),
            meta: Some(Box::new(crate::jobs::Meta {
                project: ["musica", "admin", "dss"][project % 3].into(),
                ..Default::default()
            })),
            ..Job::bare(id, std::path::PathBuf::from("/jobs"))
        }
    }

    proptest! {
        /// Few distinct times, projects and places, so that ties (down to the id) are common.
        #[test]
        fn the_order_is_the_one_two_jobs_compared_field_by_field_give(
            specs in proptest::collection::vec(
                (0usize..9, proptest::option::of(0i64..4), proptest::option::of(0i64..8),
                 0usize..3, proptest::option::of(1usize..3)),
                0..40,
            )
        ) {
            let jobs: crate::tui::app::Jobs = specs
                .into_iter()
                .enumerate()
                .map(|(i, (s, st, fi, p, q))| job(i, s, st, fi, p, q))
                .map(|j| (j.id.clone(), Box::new(j)))
                .collect();
            let now = Utc.timestamp_opt(1_767_225_610, 0).single().unwrap();
            for sort in [SortKey::Status, SortKey::Started, SortKey::Project, SortKey::Elapsed] {
                let spec = ViewSpec { tab: Tab::All, projects: &[], text: "", sort };
                prop_assert_eq!(build(&jobs, &spec, now), by_comparison(&jobs, sort, now));
            }
        }
    }
}
