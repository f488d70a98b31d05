//! The only place the cockpit touches the disk. `App::update` asks for effects; this performs
//! them and reports back with events, so the state is changed only by the loop.

mod insight;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::dispatcher::{Dispatched, Dispatcher, Request, retry_request};
use crate::jobs::fs::follow::Follower;
use crate::jobs::fs::tail::last_lines;
use crate::jobs::hitl::operator::{self, Outcome};
use crate::jobs::insight::known_issues::PatternSet;
use crate::jobs::insight::timeline::{read_history, read_notifications};
use crate::jobs::model::job::read_prompt;
use crate::jobs::model::scan::{list_ids, read_all};
use crate::jobs::model::stop::StopSource;
use crate::jobs::run::{kill, queue};
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, JobId, fs::files::open_nofollow, read_job};
use crate::watch::{JobWatcher, QueueWatcher, Signal, WatchChange};

use super::effect::{Effect, FEED_EVENTS};
use super::event::{Event, Synced};

/// Lines read from the end of a log when it is first shown.
pub const INITIAL_LINES: usize = 2000;

pub struct Executor {
    root: PathBuf,
    tx: UnboundedSender<Event>,
    watcher: JobWatcher,
    follower: Option<(JobId, Follower)>,
    read_only: bool,
    /// What dispatch needs (projects, agent command, queue); `None` when unknown.
    config: Option<Config>,
    issues: insight::IssueWorker,
    /// Scans asked for before the first full frame: they wait for it, so reading 10,000 logs
    /// does not delay the screen (`None` once it is drawn).
    scans_held: Option<Vec<(JobId, PathBuf)>>,
    /// Lists the queue whenever it changes.
    queue_watcher: Option<QueueWatcher>,
}

impl Executor {
    pub fn new(
        root: PathBuf,
        tx: UnboundedSender<Event>,
        read_only: bool,
        config: Option<Config>,
        patterns: Option<Arc<PatternSet>>,
        known_issues: Option<PathBuf>,
        memory_percent: u8,
    ) -> Executor {
        let sink = tx.clone();
        let watcher = JobWatcher::start(&root, move |signal| {
            let _ = sink.send(match signal {
                Signal::Changed(ids) => Event::JobsChanged(ids),
                Signal::Rescan => Event::Rescan,
            });
        });
        let _ = tx.send(Event::WatchMode(watcher.mode().clone()));
        insight::start_probe(memory_percent, tx.clone());
        let mut executor = Executor {
            queue_watcher: None,
            issues: insight::IssueWorker::start(patterns, known_issues, tx.clone()),
            scans_held: Some(Vec::new()),
            root,
            tx,
            watcher,
            follower: None,
            read_only,
            config,
        };
        executor.watch_queue();
        executor
    }

    /// Lists the queue whenever it changes (tried again whenever it is listed, while its root
    /// is not there to watch).
    fn watch_queue(&mut self) {
        if let Some(c) = self
            .config
            .as_ref()
            .filter(|_| self.queue_watcher.is_none())
        {
            let sink = self.tx.clone();
            let send = move |rows| drop(sink.send(Event::QueueListed(rows)));
            self.queue_watcher = QueueWatcher::listing(&c.queue_dir, !self.read_only, send);
        }
    }

    /// The first full frame is on screen: the background work it waited for may start.
    pub fn first_frame_drawn(&mut self) {
        if let Some(held) = self.scans_held.take()
            && !held.is_empty()
        {
            self.issues.scan(held);
        }
    }

    pub fn is_polling(&self) -> bool {
        self.watcher.is_polling()
    }

    fn send(&self, ev: Event) {
        // The loop has gone: we are shutting down, nothing to report to.
        let _ = self.tx.send(ev);
    }

    pub fn perform(&mut self, effect: Effect) {
        if effect.writes() && self.read_only {
            tracing::warn!("refused in read-only mode: {effect:?}");
            let message = "read-only: this cockpit writes nothing".to_string();
            match effect {
                Effect::Answer { job, .. } | Effect::Decide { job, .. } => {
                    self.send(Event::Answered {
                        job,
                        ok: false,
                        message,
                    })
                }
                _ => self.send(Event::Notice(message)),
            }
            return;
        }
        match effect {
            Effect::Sync { skip } => {
                let root = self.root.clone();
                let tx = self.tx.clone();
                // A full scan of a large root takes tens of milliseconds: off the loop.
                std::thread::spawn(move || {
                    let _ = tx.send(Event::Synced(sync(&root, &skip)));
                });
            }
            Effect::ReadJobs(ids) => {
                let now = chrono::Utc::now();
                let read = ids.into_iter().map(|id| {
                    let job = read_job(&self.root, &id, now);
                    (id, job)
                });
                self.send(Event::JobsRead(read.collect()));
            }
            Effect::CheckAlive(jobs) => {
                let gone: Vec<JobId> = jobs
                    .into_iter()
                    .filter(|(_, processes)| !processes.is_alive())
                    .map(|(id, _)| id)
                    .collect();
                if !gone.is_empty() {
                    self.perform(Effect::ReadJobs(gone));
                }
            }
            Effect::OpenLog(id) => self.open_log(id),
            Effect::PollLog(id) => self.poll_log(&id),
            Effect::CloseLog => self.follower = None,
            Effect::LoadPrompt(id) => {
                let text = match read_job(&self.root, &id, chrono::Utc::now()) {
                    Some(job) => read_prompt(&job).map_err(|p| p.to_string()),
                    None => Err(format!(
                        "the job directory {} is gone",
                        self.root.join(id.as_str()).display()
                    )),
                };
                self.send(Event::PromptLoaded { id, text });
            }
            // Everything that writes (read-only has already refused it above).
            writes @ (Effect::Answer { .. }
            | Effect::Decide { .. }
            | Effect::Dispatch { .. }
            | Effect::Retry(_)
            | Effect::Kill(_)) => self.perform_write(writes),
            Effect::SyncQueue => self.sync_queue(),
            Effect::ScanIssues(logs) => match self.scans_held.as_mut() {
                Some(held) => held.extend(logs),
                None => self.issues.scan(logs),
            },
            Effect::ForgetIssues(gone) => self.issues.forget(gone),
            Effect::LoadHistory(id) => {
                let history = read_history(&self.root.join(id.as_str())).map_err(|e| e.to_string());
                self.send(Event::HistoryLoaded { id, history });
            }
            Effect::LoadFeed(ids) => self.load_feed(ids),
            Effect::Bell | Effect::Quit => {}
        }
    }

    /// Answers, decisions, dispatch, retry and kill: the effects that change files or processes.
    fn perform_write(&mut self, effect: Effect) {
        match effect {
            Effect::Answer {
                job,
                question_id,
                answer,
            } => {
                let outcome = self.answer(&job, &question_id, &answer);
                self.send(Event::Answered {
                    job,
                    ok: outcome.is_ok(),
                    message: outcome.unwrap_or_else(|e| e),
                });
            }
            Effect::Decide {
                job,
                gate,
                approved,
                reason,
            } => {
                let outcome = self.decide(&job, &gate, approved, &reason);
                self.send(Event::Answered {
                    job,
                    ok: outcome.is_ok(),
                    message: outcome.unwrap_or_else(|e| e),
                });
            }
            Effect::Dispatch {
                project,
                task,
                retry_of,
            } => {
                let mut req = Request::new(&project, &task);
                req.retry_of = retry_of.map(|r| r.to_string());
                let result = self.dispatch(&req);
                self.send(Event::Dispatched(result));
            }
            Effect::Retry(id) => {
                let result = match read_job(&self.root, &id, chrono::Utc::now()) {
                    None => Err(format!("job {id} is gone")),
                    Some(job) => retry_request(&job, None)
                        .map_err(|e| format!("{e:#}"))
                        .and_then(|req| self.dispatch(&req)),
                };
                self.send(Event::Dispatched(result));
            }
            Effect::Kill(id) => {
                let root = self.root.clone();
                let tx = self.tx.clone();
                // A kill waits out the grace period: off the loop.
                std::thread::spawn(move || {
                    let message = match read_job(&root, &id, chrono::Utc::now()) {
                        None => format!("job {id} is gone"),
                        Some(job) => match kill::kill(&job, kill::DEFAULT_GRACE, StopSource::Tui) {
                            Ok(code) => format!("killed {id} (exit:{code})"),
                            Err(e) => e.to_string(),
                        },
                    };
                    let _ = tx.send(Event::Notice(message));
                    let _ = tx.send(Event::JobsChanged(vec![id]));
                });
            }
            _ => {}
        }
    }

    /// Keeps inotify watches on the jobs that can still change, before the app sees them.
    /// Which jobs an event says should (not) be watched: those that can still change. Taken
    /// before the app consumes the event, applied after the next frame is drawn.
    pub fn watch_plan(ev: &Event) -> Vec<(JobId, bool)> {
        match ev {
            Event::Synced(s) => s
                .read
                .iter()
                .map(|j| (j.id.clone(), can_change(j)))
                .collect(),
            Event::JobsRead(read) => read
                .iter()
                .map(|(id, j)| (id.clone(), j.as_ref().is_some_and(can_change)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Keeps inotify watches on the jobs that can still change.
    pub fn apply_watches(&mut self, plan: Vec<(JobId, bool)>) {
        let mut newly_watched = Vec::new();
        for (id, wanted) in plan {
            match self.watcher.set_watched(&id, wanted) {
                WatchChange::Added => newly_watched.push(id),
                WatchChange::Unchanged => {}
                WatchChange::SwitchedToPolling => {
                    self.send(Event::WatchMode(self.watcher.mode().clone()));
                    return;
                }
            }
        }
        // Whatever was written between reading a job and watching it brought no event: read
        // those jobs once more (a directory created and filled at once is the usual case).
        if !newly_watched.is_empty() {
            self.send(Event::JobsChanged(newly_watched));
        }
    }

    /// Reads the job afresh and answers the question the popup showed, if it is still the one
    /// pending. Returns what to tell the operator.
    fn answer(&self, id: &JobId, question_id: &str, text: &str) -> Result<String, String> {
        let job = read_job(&self.root, id, chrono::Utc::now())
            .ok_or_else(|| format!("job {id} is gone"))?;
        match job.question.as_ref() {
            Some(q) if q.id == question_id => {}
            _ => {
                return Err(format!(
                    "job {id}'s question {question_id} is no longer pending"
                ));
            }
        }
        match operator::answer(&job, text, "tui", &operator::operator(), chrono::Utc::now()) {
            Ok(Outcome::Done(r)) => Ok(format!("answered {id}: {}", plain_text(&r.answer))),
            Ok(Outcome::Already(r)) => Err(format!(
                "already answered by {}: '{}'",
                r.who(),
                plain_text(&r.answer)
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    fn decide(
        &self,
        id: &JobId,
        gate: &str,
        approved: bool,
        reason: &str,
    ) -> Result<String, String> {
        let job = read_job(&self.root, id, chrono::Utc::now())
            .ok_or_else(|| format!("job {id} is gone"))?;
        match job.gate.as_ref() {
            Some(g) if g.gate == gate => {}
            _ => return Err(format!("job {id}'s gate '{gate}' is no longer pending")),
        }
        match operator::decide(
            &job,
            approved,
            reason,
            "tui",
            &operator::operator(),
            chrono::Utc::now(),
        ) {
            Ok(Outcome::Done(d)) => Ok(format!(
                "{} {id} at '{}'",
                if d.approved { "approved" } else { "denied" },
                plain_text(&d.gate)
            )),
            Ok(Outcome::Already(d)) => {
                let word = if d.approved { "approved" } else { "denied" };
                Err(format!("already {word} by {}", d.who()))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn dispatch(&self, req: &Request) -> Result<(Option<JobId>, String), String> {
        let cfg = self
            .config
            .as_ref()
            .ok_or("this cockpit has no configuration to dispatch with")?;
        let dispatcher = Dispatcher::new(cfg).map_err(|e| format!("{e:#}"))?;
        match dispatcher.dispatch(req).map_err(|e| format!("{e:#}"))? {
            Dispatched::Started(c) => Ok((
                Some(c.id.clone()),
                format!("started {} on {}", c.id, req.project),
            )),
            Dispatched::Queued(q) => Ok((None, format!("queued {}: every slot is taken", q.id))),
        }
    }

    /// Shows the queue as jobs, and starts queued tasks while slots are free.
    fn sync_queue(&mut self) {
        self.watch_queue();
        let Some(cfg) = self.config.as_ref() else {
            return;
        };
        if !self.read_only
            && let Ok(d) = Dispatcher::new(cfg)
            && let Err(e) = d.start_queued()
        {
            self.send(Event::Notice(format!("cannot start queued tasks: {e:#}")));
        }
        self.send(Event::QueueListed(queue::listed_rows(&cfg.queue_dir)));
    }

    /// Up to 200 small files and the end of one log: off the loop all the same.
    fn load_feed(&self, ids: Vec<JobId>) {
        let root = self.root.clone();
        let tx = self.tx.clone();
        let notes = self.config.as_ref().map(|c| c.notifications_log.clone());
        std::thread::spawn(move || {
            let mut problems = Vec::new();
            let histories = ids
                .into_iter()
                .map(|id| {
                    let h = read_history(&root.join(id.as_str())).unwrap_or_else(|e| {
                        problems.push(e.to_string());
                        Vec::new()
                    });
                    (id, h)
                })
                .collect();
            let notifications = notes
                .map(|path| {
                    read_notifications(&path, FEED_EVENTS).unwrap_or_else(|e| {
                        problems.push(e.to_string());
                        Vec::new()
                    })
                })
                .unwrap_or_default();
            let _ = tx.send(Event::FeedLoaded {
                histories,
                notifications,
                problems,
            });
        });
    }

    fn open_log(&mut self, id: JobId) {
        let path = self
            .root
            .join(id.as_str())
            .join(crate::jobs::fs::names::LOG_FILE);
        let (lines, error, follower) = match open_nofollow(&path) {
            Ok(Some(file)) => match initial_tail(&path, file) {
                Ok((lines, follower)) => (lines, None, Some(follower)),
                Err(e) => (
                    vec![],
                    Some(format!("cannot read {}: {e}", path.display())),
                    None,
                ),
            },
            // Nothing yet: the pane says so until the first line arrives.
            Ok(None) => (vec![], None, Some(Follower::from_start(&path))),
            Err(e) => (
                vec![],
                Some(format!("cannot read {}: {e}", path.display())),
                None,
            ),
        };
        self.follower = follower.map(|f| (id.clone(), f));
        self.send(Event::LogLoaded { id, lines, error });
    }

    fn poll_log(&mut self, id: &JobId) {
        let Some((fid, follower)) = self.follower.as_mut().filter(|(fid, _)| fid == id) else {
            return;
        };
        let fid = fid.clone();
        // Bounded: a log growing faster than we read must not hold the loop forever.
        for _ in 0..4 {
            match follower.poll() {
                Ok(chunk) => {
                    let more = chunk.more;
                    if chunk.reset.is_some() || !chunk.lines.is_empty() {
                        let _ = self.tx.send(Event::LogAppended {
                            id: fid.clone(),
                            reset: chunk.reset,
                            lines: chunk.lines,
                        });
                    }
                    if !more {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!("following {}: {e}", fid);
                    break;
                }
            }
        }
    }
}

fn initial_tail(
    path: &std::path::Path,
    file: std::fs::File,
) -> std::io::Result<(Vec<crate::jobs::fs::tail::RawLine>, Follower)> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut lines = last_lines(&file, len, INITIAL_LINES)?;
    let mut partial = Vec::new();
    let mut last = [0u8];
    if len > 0 && file.read_exact_at(&mut last, len - 1).is_ok() && last[0] != b'\n' {
        // The last line is still being written: the follower completes it.
        partial = lines.pop().map(|l| l.bytes).unwrap_or_default();
    }
    let follower = Follower::resume(path, file, len, partial)?;
    Ok((lines, follower))
}

/// A job whose directory may still change on its own (and so deserves a watch).
fn can_change(job: &Job) -> bool {
    !job.is_settled()
}

fn sync(root: &std::path::Path, skip: &HashSet<JobId>) -> Synced {
    let now = chrono::Utc::now();
    match list_ids(root) {
        Ok(present) => {
            let wanted: Vec<JobId> = present
                .iter()
                .filter(|id| !skip.contains(id))
                .cloned()
                .collect();
            let read = read_all(root, &wanted, now);
            Synced {
                present,
                read,
                error: None,
            }
        }
        Err(e) => Synced {
            present: skip.iter().cloned().collect(),
            read: vec![],
            error: Some(e.to_string()),
        },
    }
}
