//! Jobs read from disk coming into the state: a full listing, jobs re-read by id, and what
//! follows from them (the bell for a new question, the rows, insight).

use std::collections::HashSet;

use super::App;
use crate::jobs::model::limit::{Hold, Holds};
use crate::jobs::run::agents::account;
use crate::jobs::{Job, JobId, Status};
use crate::tui::effect::Effect;
use crate::tui::event::Synced;

impl App {
    pub(super) fn on_synced(&mut self, s: Synced) -> Vec<Effect> {
        let first = !self.loaded;
        self.loaded = true;
        // The first listing's settled logs wait for the first frame (`on_first_frame`).
        self.insight.settled_after_frame |= first;
        let newly_waiting = !first && s.read.iter().any(|j| self.starts_waiting(j));
        self.scan_error = s.error;
        let present: HashSet<&JobId> = s.present.iter().collect();
        let fresh: Vec<JobId> = s.read.iter().map(|j| j.id.clone()).collect();
        // Queued tasks are not in the root: the queue's own listing keeps their rows; nor
        // are other hosts' jobs, which their links keep.
        self.jobs
            .retain(|id, _| id.is_queued() || id.host().is_some() || present.contains(id));
        self.jobs
            .reserve(s.read.len().saturating_sub(self.jobs.len()));
        for job in s.read {
            self.jobs.insert(job.id.clone(), Box::new(job));
        }
        self.link_retries();
        let effects = self.after_read(newly_waiting, None, &fresh);
        self.insight.primed = true;
        effects
    }

    pub(super) fn on_jobs_changed(&mut self, ids: Vec<JobId>) -> Vec<Effect> {
        self.dirty = false; // nothing on screen changes until the jobs are read
        let mut effects = vec![Effect::ReadJobs(ids.clone())];
        if let Some(sel) = &self.log.job
            && ids.contains(sel)
        {
            effects.push(Effect::PollLog(sel.clone()));
        }
        effects
    }

    /// Only output grew: the followed log is polled at once; a running job is read again at the
    /// next tick (its log scanned then), any other at once (its output may have ended it).
    pub(super) fn on_output_grew(&mut self, ids: Vec<JobId>) -> Vec<Effect> {
        self.dirty = false;
        let mut effects = Vec::new();
        if let Some(sel) = &self.log.job
            && ids.contains(sel)
        {
            effects.push(Effect::PollLog(sel.clone()));
        }
        let (later, now): (Vec<JobId>, Vec<JobId>) = ids.into_iter().partition(|id| {
            self.jobs
                .get(id)
                .is_some_and(|j| matches!(j.status, Status::Running | Status::Waiting))
        });
        self.output_grew.extend(later);
        if !now.is_empty() {
            effects.insert(0, Effect::ReadJobs(now));
        }
        effects
    }

    pub(super) fn on_jobs_read(&mut self, read: Vec<(JobId, Option<Job>)>) -> Vec<Effect> {
        let ids: Vec<JobId> = read.iter().map(|(id, _)| id.clone()).collect();
        // A job's retries are not in its own files: keep what the others said.
        let mut read = read;
        for (id, job) in &mut read {
            if let (Some(job), Some(old)) = (job.as_mut(), self.jobs.get(id)) {
                job.retried_by.clone_from(&old.retried_by);
            }
        }
        // A job re-read because its log grew usually shows nothing new: no frame for that.
        let unchanged = read.iter().all(|(id, job)| match (self.jobs.get(id), job) {
            (Some(old), Some(new)) => same_on_screen(old, new),
            _ => false,
        });
        if unchanged {
            for (id, job) in read.into_iter().filter_map(|(id, j)| j.map(|j| (id, j))) {
                self.jobs.insert(id, Box::new(job));
            }
            // Its log grew (scan it) or its output moved (an alarm may clear).
            let (changed, effects) = self.insight_after_read(self.now, Some(&ids), &ids);
            self.dirty = changed;
            return effects;
        }
        let newly_waiting = read
            .iter()
            .filter_map(|(_, j)| j.as_ref())
            .any(|j| self.starts_waiting(j));
        for (id, job) in read {
            match job {
                Some(job) => {
                    self.jobs.insert(id, Box::new(job));
                }
                None => {
                    self.jobs.remove(&id);
                }
            }
        }
        self.link_retries();
        let mut effects = self.after_read(newly_waiting, Some(&ids), &ids);
        effects.extend(self.overlap_after_read(&ids));
        effects
    }

    /// The queue as listed, and the usage limits that stand: its rows replace the queued rows
    /// there were. The same queue and holds as before change nothing (it is listed once a
    /// second while jobs are live).
    pub(super) fn on_queue_listed(&mut self, queued: Vec<Job>, holds: Holds) -> Vec<Effect> {
        // Compared with the last listing, whose rows are the only queued ones (they are put
        // nowhere else), not with every job: this comes every second.
        let same = self.holds == holds
            && self.queue_listed.len() == queued.len()
            && self.queue_listed.iter().zip(&queued).all(|(id, b)| {
                self.jobs.get(id).is_some_and(|a| {
                    a.id == b.id && a.queue_position == b.queue_position && same_on_screen(a, b)
                })
            });
        if same {
            self.dirty = false;
            return vec![];
        }
        // The held rows say so: what the table shows changed.
        self.changes += 1;
        self.holds = holds;
        self.queue_listed = queued.iter().map(|j| j.id.clone()).collect();
        self.jobs
            .retain(|id, _| !id.is_queued() || id.host().is_some());
        for job in queued {
            self.jobs.insert(job.id.clone(), Box::new(job));
        }
        self.refresh_view()
    }

    /// The usage limits that stand now, the first to reset first, and how many of the queue's
    /// tasks wait on each (the queue's rows, not every job: the header asks at each frame).
    pub fn held(&self) -> Vec<(&Hold, usize)> {
        self.holds
            .standing(self.now)
            .map(|hold| {
                let waiting = self
                    .queue_listed
                    .iter()
                    .filter_map(|id| self.jobs.get(id))
                    .filter(|j| j.status == Status::Queued && self.hold_of(j) == Some(hold))
                    .count();
                (hold, waiting)
            })
            .collect()
    }

    /// The usage limit that holds a queued task of this machine's queue, if one stands: the
    /// limit of the account its agent runs on.
    pub fn hold_of(&self, job: &Job) -> Option<&Hold> {
        if job.id.host().is_some() {
            return None;
        }
        let program = job.meta.as_ref().map_or("", |m| m.agent.as_str());
        self.holds.of(&account(program), self.now)
    }

    /// Fills in every job's retries from the others' `retry_of` (a job read alone cannot know
    /// them). One pass over the jobs, only when some were read anew.
    fn link_retries(&mut self) {
        let mut by = crate::jobs::model::lifecycle::retries(self.jobs.values().map(|j| &**j));
        for job in self.jobs.values_mut() {
            // Once every retry is placed, the rest of a large root is not hashed for nothing.
            let found = match by.is_empty() {
                true => Vec::new(),
                false => by.remove(&job.id).unwrap_or_default(),
            };
            if *job.retried_by != *found {
                job.retried_by = found.into();
            }
        }
    }

    /// A job that was not waiting for a person and now is.
    fn starts_waiting(&self, job: &Job) -> bool {
        job.status == Status::Waiting
            && self
                .jobs
                .get(&job.id)
                .is_none_or(|old| old.status != Status::Waiting)
    }

    /// `read`: the jobs just read, or `None` after a full listing; `fresh`: the jobs read (all
    /// of `read`, or those the full listing read).
    pub(super) fn after_read(
        &mut self,
        newly_waiting: bool,
        read: Option<&[JobId]>,
        fresh: &[JobId],
    ) -> Vec<Effect> {
        self.answered.forget_gone(&self.jobs);
        let mut effects = self.refresh_view();
        let (_, insight) = self.insight_after_read(self.now, read, fresh);
        let rings = insight.contains(&Effect::Bell);
        effects.extend(insight.into_iter().filter(|e| *e != Effect::Bell));
        if (newly_waiting && self.opts.bell) || rings {
            effects.push(Effect::Bell);
        }
        effects
    }
}

/// Whether everything the table, header and detail view show of a job is the same.
fn same_on_screen(a: &Job, b: &Job) -> bool {
    a.status == b.status
        && a.exit_code == b.exit_code
        && a.pid == b.pid
        && a.progress == b.progress
        && a.question == b.question
        && a.gate == b.gate
        && a.started == b.started
        && a.finished == b.finished
        && a.problems == b.problems
        && a.stop == b.stop
        && a.exchange == b.exchange
        && a.retried_by == b.retried_by
        && a.project() == b.project()
        && a.task() == b.task()
        // The CHANGES column: the change recorded when the job ended, and once merged or
        // discarded, that.
        && a.meta.as_ref().map(|m| &m.review) == b.meta.as_ref().map(|m| &m.review)
}
