//! The state behind `luzia watch --json`: the last record sent of each job and of each queued
//! task (and nothing more), the jobs to read again, and the lines their differences make.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::jobs::hitl::settled;
use crate::jobs::model::process::Processes;
use crate::jobs::model::review::Isolation;
use crate::jobs::run::queue;
use crate::jobs::wire::{Change, Line, Record, encode};
use crate::jobs::{Job, JobId, Status, read_job};
use crate::watch::{JobWatcher, Signal, WatchChange};

/// A job's lines come at most this often: an agent streaming its output changes its log at
/// every write, and a reader needs no more than ten pictures a second of it. The first change
/// after a quiet spell goes out at once; what comes within the gap goes out when it ends.
pub const GAP: Duration = Duration::from_millis(100);

struct Sent {
    record: Record,
    at: Instant,
}

pub struct Stream<W> {
    root: PathBuf,
    watcher: JobWatcher,
    /// The queue root: its tasks are rows too, keyed `queued:ID` as in the cockpit.
    queue: PathBuf,
    queue_changed: bool,
    out: W,
    wrote: bool,
    sent: HashMap<JobId, Sent>,
    dirty: HashSet<JobId>,
    rescan: bool,
}

/// How a job's record changed: a question or gate instance that appeared is `raised`, one that
/// went away `settled`.
pub fn change_of(old: Option<&Record>, new: &Record) -> Change {
    let Some(old) = old else {
        return Change::Added;
    };
    let (was, is) = (old.pending(), new.pending());
    let differ = |i: usize| was[i] != is[i];
    if (0..2).any(|i| differ(i) && is[i].is_some()) {
        Change::Raised
    } else if (0..2).any(|i| differ(i) && was[i].is_some()) {
        Change::Settled
    } else {
        Change::Changed
    }
}

/// Whether the job's files can still change what is shown: it has not ended for good, or a
/// worktree's branch waits for a merge or a discard (which records its outcome in meta.json).
fn can_change(job: &Job) -> bool {
    !job.is_settled()
        || job
            .meta
            .as_ref()
            .and_then(|m| m.review.as_ref())
            .is_some_and(|r| {
                r.isolation == Isolation::Worktree && !r.branch.is_empty() && r.outcome.is_empty()
            })
}

impl<W: Write> Stream<W> {
    pub fn new(root: PathBuf, watcher: JobWatcher, queue: PathBuf, out: W) -> Stream<W> {
        Stream {
            root,
            watcher,
            queue,
            queue_changed: false,
            out,
            wrote: false,
            sent: HashMap::new(),
            dirty: HashSet::new(),
            rescan: false,
        }
    }

    pub fn emit(&mut self, line: &Line) -> io::Result<()> {
        self.wrote = true;
        writeln!(self.out, "{}", encode(line))
    }

    pub fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.wrote) {
            self.out.flush()?;
        }
        Ok(())
    }

    pub fn is_polling(&self) -> bool {
        self.watcher.is_polling()
    }

    pub fn signal(&mut self, signal: Signal) -> io::Result<()> {
        match signal {
            // The stream of changes says when a job ends, which its output may say first.
            Signal::Changed(ids) | Signal::Output(ids) => self.dirty.extend(ids),
            Signal::Rescan | Signal::RootBack => self.rescan = true,
            // Its jobs are kept as last sent until a directory is back (then `gone` for those
            // it lacks): a root moved away for a moment loses nothing.
            Signal::RootGone => {
                let message = format!(
                    "the jobs root {} is gone (moved away or removed): it is watched again as \
                     soon as a directory is back at that path",
                    self.root.display()
                );
                self.dirty.clear();
                return self.emit(&Line::Error { message });
            }
        }
        Ok(())
    }

    pub fn rescan(&mut self) {
        self.rescan = true;
    }

    /// The queue changed (or may have: it is not watched).
    pub fn queue_changed(&mut self) {
        self.queue_changed = true;
    }

    /// When the next job is due to be read, if any is.
    pub fn next_due(&self, now: Instant) -> Option<Instant> {
        if self.rescan || self.queue_changed {
            return Some(now);
        }
        self.dirty.iter().map(|id| self.due(id, now)).min()
    }

    fn due(&self, id: &JobId, now: Instant) -> Instant {
        self.sent.get(id).map_or(now, |s| s.at + GAP)
    }

    /// Reads what is due: everything after a rescan (true then), else the changed jobs whose
    /// gap has passed.
    pub fn catch_up(&mut self, now: Instant) -> io::Result<bool> {
        if self.rescan {
            self.full(false)?;
            return Ok(true);
        }
        if self.queue_changed {
            self.sync_queue()?;
        }
        let due: Vec<JobId> = self
            .dirty
            .iter()
            .filter(|id| self.due(id, now) <= now)
            .cloned()
            .collect();
        for id in due {
            self.dirty.remove(&id);
            self.read(id)?;
        }
        Ok(false)
    }

    /// Marks for reading the jobs that should be alive and whose processes are not (or are not
    /// known): no file says so when an agent dies without its exit line.
    pub fn check_alive(&mut self) {
        for (id, s) in &self.sent {
            let r = &s.record;
            if !matches!(r.status, Status::Running | Status::Waiting) {
                continue;
            }
            let processes = Processes::identify(r.pid, r.process.as_ref(), r.started);
            if !processes.is_known() || !processes.is_alive() {
                self.dirty.insert(id.clone());
            }
        }
    }

    /// Reads every job: the initial state (`added` lines, then `synced`), or after lost events
    /// (the differences, and `gone` for what is no longer there).
    pub fn full(&mut self, initial: bool) -> io::Result<()> {
        self.rescan = false;
        self.dirty.clear();
        let jobs = match crate::jobs::scan(&self.root, Utc::now()) {
            Ok(jobs) => jobs,
            Err(e) => {
                return self.emit(&Line::Error {
                    message: e.to_string(),
                });
            }
        };
        let seen: HashSet<JobId> = jobs.iter().map(|j| j.id.clone()).collect();
        let count = jobs.len();
        for job in jobs {
            self.watch(&job);
            self.offer(Record::of(&job), Some(&job.dir()))?;
        }
        let gone: Vec<JobId> = self
            .sent
            .keys()
            .filter(|id| !id.is_queued() && !seen.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.gone(id)?;
        }
        let queued = self.sync_queue()?;
        if initial {
            self.emit(&Line::Synced {
                jobs: count + queued,
            })?;
        }
        Ok(())
    }

    /// Lists the queue (what is waiting, and what failed to start) and says what changed in
    /// it; a task that left it (started, cancelled) is `gone`. Returns how many rows it has.
    fn sync_queue(&mut self) -> io::Result<usize> {
        self.queue_changed = false;
        let rows = queue::listed_rows(&self.queue);
        let seen: HashSet<JobId> = rows.iter().map(|r| r.id.clone()).collect();
        let count = rows.len();
        for row in rows {
            self.offer(Record::of(&row), None)?;
        }
        let left: Vec<JobId> = self
            .sent
            .keys()
            .filter(|id| id.is_queued() && !seen.contains(*id))
            .cloned()
            .collect();
        for id in left {
            self.gone(id)?;
        }
        Ok(count)
    }

    /// Reads one job again and says what changed.
    fn read(&mut self, id: JobId) -> io::Result<()> {
        let Some(mut job) = read_job(&self.root, &id, Utc::now()) else {
            return self.gone(id);
        };
        // Retries are found among the other jobs: what was known stays, and a new retry is
        // added to its original below.
        let previous = self.sent.get(&id);
        let new = previous.is_none();
        job.retried_by = previous
            .map(|s| s.record.retried_by.clone().into())
            .unwrap_or_default();
        self.watch(&job);
        let retry_of = job.retry_of();
        self.offer(Record::of(&job), Some(&job.dir()))?;
        match retry_of {
            Some(of) if new => self.relink(&of, |by| {
                if !by.contains(&id) {
                    by.push(id.clone());
                }
            }),
            _ => Ok(()),
        }
    }

    /// Sends the record if it differs from the last one sent of its job, with how what went
    /// away was settled (read in `dir`, the job's directory; a queued task has none).
    fn offer(&mut self, record: Record, dir: Option<&Path>) -> io::Result<()> {
        let (change, settled) = match self.sent.get(&record.id) {
            Some(old) if old.record == record => return Ok(()),
            old => (
                change_of(old.map(|s| &s.record), &record),
                match (old, dir) {
                    (Some(old), Some(dir)) => settled::gone(dir, &old.record, &record),
                    _ => Vec::new(),
                },
            ),
        };
        let line = Line::Job {
            change,
            job: Box::new(record),
            settled,
        };
        self.emit(&line)?;
        if let Line::Job { job, .. } = line {
            let sent = Sent {
                record: *job,
                at: Instant::now(),
            };
            self.sent.insert(sent.record.id.clone(), sent);
        }
        Ok(())
    }

    fn gone(&mut self, id: JobId) -> io::Result<()> {
        self.watcher.set_watched(&id, false);
        let Some(sent) = self.sent.remove(&id) else {
            return Ok(());
        };
        self.emit(&Line::Gone { id: id.clone() })?;
        let retry_of = sent.record.meta.as_ref().map(|m| m.more.retry_of.clone());
        match retry_of.and_then(|of| JobId::parse(&of).ok()) {
            Some(of) => self.relink(&of, |by| by.retain(|r| *r != id)),
            None => Ok(()),
        }
    }

    /// Changes the `retried_by` of job `of`, as last sent, and sends it if that changed it.
    fn relink(&mut self, of: &JobId, edit: impl FnOnce(&mut Vec<JobId>)) -> io::Result<()> {
        let Some(sent) = self.sent.get(of) else {
            return Ok(());
        };
        let mut record = sent.record.clone();
        edit(&mut record.retried_by);
        self.offer(record, None)
    }

    /// Keeps the job's directory watched while its files can still change; a directory watched
    /// from now on is read once more (what was written before the watch brought no event).
    fn watch(&mut self, job: &Job) {
        if self.watcher.set_watched(&job.id, can_change(job)) == WatchChange::Added {
            self.dirty.insert(job.id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::waiting::{Gate, Question, QuestionType};

    fn record(question: Option<&str>, gate: Option<&str>) -> Record {
        let mut job = Job::bare(JobId::parse("a1").unwrap(), "/r/a1".into());
        job.question = question.map(|id| {
            Box::new(Question {
                id: id.into(),
                kind: QuestionType::Text,
                question: "?".into(),
                options: Vec::new(),
                context: String::new(),
                asked_at: None,
                timeout_minutes: None,
                default_if_timeout: None,
                note: None,
                header: String::new(),
                descriptions: Vec::new(),
                multi_select: false,
            })
        });
        job.gate = gate.map(|id| {
            Box::new(Gate {
                id: id.into(),
                ..Gate::parse(b"{}", None).unwrap()
            })
        });
        Record::of(&job)
    }

    #[test]
    fn raised_and_settled_follow_the_instances() {
        let none = record(None, None);
        let cases = [
            (None, record(None, None), Change::Added),
            (Some(&none), record(Some("q1"), None), Change::Raised),
            (Some(&none), record(None, Some("g1")), Change::Raised),
            (Some(&none), record(None, None), Change::Changed),
        ];
        for (old, new, want) in cases {
            assert_eq!(change_of(old, &new), want, "{old:?} -> {new:?}");
        }
        let asked = record(Some("q1"), None);
        assert_eq!(change_of(Some(&asked), &none), Change::Settled);
        assert_eq!(
            change_of(Some(&asked), &record(Some("q2"), None)),
            Change::Raised,
            "another question"
        );
        assert_eq!(
            change_of(Some(&asked), &record(None, Some("g1"))),
            Change::Raised,
            "answered, then a gate: someone is needed again"
        );
        assert_eq!(
            change_of(Some(&asked), &record(Some("q1"), None)),
            Change::Changed
        );
    }
}
