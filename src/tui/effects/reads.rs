//! The reads worker: listing the root, reading jobs, prompts, histories and the feed, and the
//! inotify watches. One thread, so results come back in the order they were asked for (a job
//! read later never arrives before one read earlier), and the watcher lives beside the reads
//! whose jobs it watches, as do the pidfds of the live jobs' processes (`exits.rs`). None of it
//! can block: job files are opened without waiting and refused unless regular.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc::UnboundedSender;

use crate::jobs::insight::timeline::{read_history, read_notifications};
use crate::jobs::model::index::refresh;
use crate::jobs::model::job::read_prompt;
use crate::jobs::model::process::Processes;
use crate::jobs::model::scan::{INDEX_MIN, IndexUse, list_ids, load_index, read_all_with};
use crate::jobs::os::exits::ExitSet;
use crate::jobs::{Job, JobId, Status, read_job};
use crate::tui::effect::FEED_EVENTS;
use crate::tui::event::{Event, Synced};
use crate::watch::{JobWatcher, Signal, WatchChange};

use super::exits::ExitWatch;

pub struct Reads {
    root: PathBuf,
    index: IndexFile,
    tx: UnboundedSender<Event>,
    watcher: JobWatcher,
    /// Whether the watcher polls, for the loop's timer.
    polling: Arc<AtomicBool>,
    notifications: Option<PathBuf>,
    exits: ExitWatch,
}

/// The index of settled jobs the cockpit reads the root through (in the user's cache directory),
/// and whether it may write it anew (never when read-only).
#[derive(Clone, Debug, Default)]
pub struct IndexFile {
    pub path: Option<PathBuf>,
    pub writable: bool,
    /// Settled jobs the last full read took from their files: the index wants them.
    misses: usize,
    /// A refresh is running (on a thread of its own: it reads every job not yet indexed).
    refreshing: Arc<AtomicBool>,
}

impl IndexFile {
    pub fn new(path: Option<PathBuf>, writable: bool) -> IndexFile {
        IndexFile {
            path,
            writable,
            ..IndexFile::default()
        }
    }
}

impl Reads {
    /// Starts watching the root (on the worker's thread: a `statfs` and inotify set-up) and
    /// says how the cockpit watches.
    pub fn start(
        root: &Path,
        tx: &UnboundedSender<Event>,
        polling: &Arc<AtomicBool>,
        notifications: Option<PathBuf>,
        exits: Option<ExitSet>,
        index: IndexFile,
    ) -> Reads {
        let sink = tx.clone();
        let watcher = JobWatcher::start(root, move |signal| {
            let _ = sink.send(match signal {
                Signal::Changed(ids) => Event::JobsChanged(ids),
                Signal::Output(ids) => Event::OutputGrew(ids),
                Signal::Rescan => Event::Rescan,
                Signal::RootGone => Event::RootGone,
                Signal::RootBack => Event::RootBack,
            });
        });
        polling.store(watcher.is_polling(), Ordering::Relaxed);
        let _ = tx.send(Event::WatchMode(watcher.mode()));
        Reads {
            root: root.to_owned(),
            index,
            tx: tx.clone(),
            watcher,
            polling: polling.clone(),
            notifications,
            exits: ExitWatch::new(exits),
        }
    }

    fn send(&self, ev: Event) {
        // The loop has gone: the cockpit is shutting down, nothing to report to.
        let _ = self.tx.send(ev);
    }

    pub fn sync(&mut self, skip: &HashSet<JobId>) {
        let (synced, used) = sync(&self.root, skip, self.index.path.as_deref());
        self.index.misses = used.misses;
        tracing::debug!(
            from_index = used.hits,
            settled_from_files = used.misses,
            "jobs read"
        );
        let live = live_processes(synced.read.iter().map(|j| (&j.id, Some(j))));
        // The listing's ids are looked up after the jobs are sent: the loop waits for them,
        // and at 100,000 jobs a set of the ids takes milliseconds to make.
        let present = synced.error.is_none().then(|| synced.present.clone());
        self.send(Event::Synced(synced));
        // What parsing every meta.json freed on the reading threads goes back to the system
        // (here, while the loop takes the jobs in and draws): at 100,000 jobs, tens of MB.
        crate::jobs::os::heap::release_free_pages();
        if let Some(present) = present {
            let present: HashSet<JobId> = present.into_iter().collect();
            self.exits.retain(|id| present.contains(id));
        }
        self.watch_exits(live);
        let (watched, polled) = self.exits.counts();
        tracing::debug!(watched, polled, "live jobs' ends: by event, polled");
    }

    /// Writes the index anew on a thread of its own, if the last full read found settled jobs
    /// it lacks and the cockpit may write. Asked for once the first frame is on screen, so that
    /// reading those jobs once more does not delay it.
    pub fn refresh_index(&mut self) {
        let IndexFile {
            path: Some(path),
            writable: true,
            misses,
            refreshing,
        } = &self.index
        else {
            return;
        };
        if *misses == 0 || refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (root, path, refreshing) = (self.root.clone(), path.clone(), refreshing.clone());
        let spawned = std::thread::Builder::new()
            .name("luzia-index".into())
            .spawn(move || {
                match refresh(&root, &path, chrono::Utc::now()) {
                    Ok(done) => tracing::info!(
                        kept = done.kept,
                        taken = done.taken,
                        left = done.left,
                        path = %path.display(),
                        "jobs index written"
                    ),
                    Err(e) => tracing::warn!(
                        path = %path.display(),
                        "cannot write the jobs index ({e}); jobs are read from their files"
                    ),
                }
                crate::jobs::os::heap::release_free_pages();
                refreshing.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the jobs index's writer: {e}");
            self.index.refreshing.store(false, Ordering::Release);
        }
    }

    pub fn read_jobs(&mut self, ids: Vec<JobId>) {
        let now = chrono::Utc::now();
        let read: Vec<(JobId, Option<Job>)> = ids
            .into_iter()
            .map(|id| {
                let job = read_job(&self.root, &id, now);
                (id, job)
            })
            .collect();
        let live = live_processes(read.iter().map(|(id, j)| (id, j.as_ref())));
        let count = read.len();
        self.send(Event::JobsRead(read));
        self.watch_exits(live);
        // The point from which a live job's end can only be noticed by its pidfd or a poll
        // (what the exit tests wait for before they end a process).
        tracing::debug!(jobs = count, "jobs read again, their ends watched");
    }

    /// Watches the ends of the live jobs just read (after the screen has them), and forgets the
    /// others; those whose processes ended meanwhile are read again.
    fn watch_exits(&mut self, jobs: Vec<(JobId, Option<Processes>)>) {
        let ended: Vec<JobId> = jobs
            .into_iter()
            .filter(|(id, live)| self.exits.update(id, live.as_ref()))
            .map(|(id, _)| id)
            .collect();
        if !ended.is_empty() {
            self.read_jobs(ended);
        }
    }

    /// Watched processes ended: their jobs are read again, as a poll that found them gone did.
    pub fn exited(&mut self, tokens: &[u64]) {
        let ended = self.exits.ended(tokens);
        if !ended.is_empty() {
            tracing::debug!(jobs = ended.len(), "processes ended, noticed by event");
            self.read_jobs(ended);
        }
    }

    /// Re-reads the polled live jobs whose process is gone or is no longer the job's (or which
    /// have none yet). Those watched by event are not asked after.
    pub fn check_alive(&mut self) {
        let gone = self.exits.polled_gone();
        if !gone.is_empty() {
            tracing::debug!(jobs = gone.len(), "processes ended, noticed by polling");
            self.read_jobs(gone);
        }
    }

    pub fn exits_failed(&mut self) {
        self.exits.poll_all();
    }

    pub fn load_prompt(&mut self, id: JobId) {
        let text = match read_job(&self.root, &id, chrono::Utc::now()) {
            Some(job) => read_prompt(&job).map_err(|p| p.to_string()),
            None => Err(format!(
                "the job directory {} is gone",
                self.root.join(id.as_str()).display()
            )),
        };
        self.send(Event::PromptLoaded { id, text });
    }

    pub fn load_history(&mut self, id: JobId) {
        let history = read_history(&self.root.join(id.as_str())).map_err(|e| e.to_string());
        self.send(Event::HistoryLoaded { id, history });
    }

    /// Up to 200 small files and the end of one log.
    pub fn load_feed(&mut self, ids: Vec<JobId>) {
        let mut problems = Vec::new();
        let histories = ids
            .into_iter()
            .map(|id| {
                let h = read_history(&self.root.join(id.as_str())).unwrap_or_else(|e| {
                    problems.push(e.to_string());
                    Vec::new()
                });
                (id, h)
            })
            .collect();
        let notifications = self
            .notifications
            .as_ref()
            .map(|path| {
                read_notifications(path, FEED_EVENTS).unwrap_or_else(|e| {
                    problems.push(e.to_string());
                    Vec::new()
                })
            })
            .unwrap_or_default();
        self.send(Event::FeedLoaded {
            histories,
            notifications,
            problems,
        });
    }

    /// Keeps inotify watches on the jobs that can still change.
    pub fn apply_watches(&mut self, plan: Vec<(JobId, bool)>) {
        let mut newly_watched = Vec::new();
        for (id, wanted) in plan {
            match self.watcher.set_watched(&id, wanted) {
                WatchChange::Added => newly_watched.push(id),
                WatchChange::Unchanged => {}
                WatchChange::SwitchedToPolling => {
                    self.polling.store(true, Ordering::Relaxed);
                    self.send(Event::WatchMode(self.watcher.mode()));
                    return;
                }
            }
        }
        // Whatever was written between reading a job and watching it brought no event: read
        // those jobs once more (a directory created and filled at once is the usual case).
        if !newly_watched.is_empty() {
            tracing::debug!(jobs = newly_watched.len(), "jobs watched, read once more");
            self.send(Event::JobsChanged(newly_watched));
        }
    }
}

/// What the cockpit checks the liveness of: the processes of each job read that runs or waits
/// (`None` for the others, which are not).
fn live_processes<'a>(
    read: impl Iterator<Item = (&'a JobId, Option<&'a Job>)>,
) -> Vec<(JobId, Option<Processes>)> {
    read.map(|(id, job)| {
        let live = job
            .filter(|j| matches!(j.status, Status::Running | Status::Waiting))
            .map(Job::processes);
        (id.clone(), live)
    })
    .collect()
}

/// A job whose directory may still change on its own (and so deserves a watch).
pub fn can_change(job: &Job) -> bool {
    !job.is_settled()
}

fn sync(root: &Path, skip: &HashSet<JobId>, index: Option<&Path>) -> (Synced, IndexUse) {
    let now = chrono::Utc::now();
    match list_ids(root) {
        Ok(present) => {
            let wanted: Vec<JobId> = present
                .iter()
                .filter(|id| !skip.contains(id))
                .cloned()
                .collect();
            // Loaded for this read and dropped after it: at 100,000 jobs it is tens of MB.
            let index = load_index(index, root, wanted.len());
            let (read, mut used) = read_all_with(root, &wanted, now, index.as_ref());
            if wanted.len() < INDEX_MIN {
                // Not worth an index: none is written for it either.
                used.misses = 0;
            }
            let synced = Synced {
                present,
                read,
                error: None,
            };
            (synced, used)
        }
        Err(e) => {
            let synced = Synced {
                present: skip.iter().cloned().collect(),
                read: vec![],
                error: Some(e.to_string()),
            };
            (synced, IndexUse::default())
        }
    }
}
