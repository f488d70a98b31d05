//! The only place the cockpit touches the disk. `App::update` asks for effects; the executor
//! hands each to a worker and returns at once, and the workers report back with events, so the
//! state is changed only by the loop and the loop never waits for the disk, a lock or a process.
//!
//! | worker | threads | effects |
//! |---|---|---|
//! | `luzia-reads` (`reads.rs`) | 1, in order | listing, job reads, pid checks, prompt, history, feed, inotify watches, pidfd watches (`exits.rs`) |
//! | `luzia-exits` (`exits.rs`) | 1 | waits for watched processes to end; hands their ends to `luzia-reads` |
//! | `luzia-log` (`log.rs`) | 1, in order | the output pane's follower: open, poll, close |
//! | `luzia-issues` (`insight.rs`) | 1, in order | known-issue scans and what the pane's follower read, after the first frame |
//! | `luzia-writes` (`writes.rs`) | 4, a pool | answers, decisions, dispatch, retry, reply, kill, the queue |
//! | `luzia-review` (`review.rs`) | 1, in order | a job's change from git; what a merge or discard would do, and doing it |
//! | `luzia-fleet` (`fleet.rs`) | 2 per host, each in order | effects on another host's jobs, by its `luzia` over ssh |
//! | `luzia-link` (`links.rs`) | 1 per host | that host's link: its jobs and faults, as `Event::Host` |
//!
//! A job key with a host (`"<id>@<host>"`) is never turned into a path: effects on it go to the
//! fleet worker, its output pane follows `luzia logs -f` over ssh, and the reads of local files
//! leave it out.
//!
//! A worker of one thread keeps order, so a later result never overtakes an earlier one; results
//! name their job, and the app drops those for a job no longer selected.

mod exits;
mod fleet;
mod insight;
mod links;
mod log;
mod reads;
mod remote_log;
mod remote_text;
mod review;
mod worker;
mod writes;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use tokio::sync::mpsc::UnboundedSender;

use crate::config::{Config, HostConfig, LOCAL_HOST};
use crate::jobs::JobId;
use crate::jobs::insight::known_issues::PatternSet;
use crate::jobs::model::index;
use crate::jobs::os::exits::{self as os_exits, ExitSet};

use super::effect::Effect;
use super::event::Event;
use fleet::Fleet;
pub use fleet::Runner;
use links::Links;
use reads::Reads;
use review::Reviews;
use worker::Worker;
use writes::Writes;

/// What the executor is started with, besides the channel it reports on.
pub struct Setup {
    pub root: PathBuf,
    pub read_only: bool,
    /// What dispatch needs (projects, agent command, queue); `None` when unknown.
    pub config: Option<Config>,
    /// Compiled known-issue patterns, when the caller has them; else the worker compiles them.
    pub patterns: Option<Arc<PatternSet>>,
    pub known_issues: Option<PathBuf>,
    pub memory_percent: u8,
    /// The user's cache directory, where the index of settled jobs is kept (`None`: every job
    /// is read from its files).
    pub cache: Option<PathBuf>,
}

pub struct Executor {
    tx: UnboundedSender<Event>,
    read_only: bool,
    reads: Worker<Reads>,
    log: Worker<log::LogPane>,
    writes: Worker<Writes>,
    review: Worker<Reviews>,
    issues: insight::IssueWorker,
    /// Whether the watcher polls (set by the reads worker), for the loop's timer.
    polling: Arc<AtomicBool>,
    /// Lets the scanning worker start: what it is asked before the first full frame waits for
    /// it, so reading 10,000 logs does not delay the screen (`None` once it is drawn).
    scans_go: Option<mpsc::Sender<()>>,
    /// The remote hosts shown, once connected (the log worker follows their logs).
    hosts: Arc<OnceLock<HashMap<String, HostConfig>>>,
    fleet: Option<Fleet>,
    /// Kept for their ssh: dropped with the executor, which ends them.
    _links: Option<Links>,
}

impl Executor {
    /// Starts the workers. Nothing here touches the disk: each worker builds its state (the
    /// watcher, the compiled patterns) on its own thread.
    pub fn new(setup: Setup, tx: UnboundedSender<Event>) -> std::io::Result<Executor> {
        let polling = Arc::new(AtomicBool::new(false));
        let notifications = setup.config.as_ref().map(|c| c.notifications_log.clone());
        let (exit_set, waiter) = match ExitSet::new(os_exits::raise_fd_limit()) {
            Ok((set, waiter)) => (Some(set), Some(waiter)),
            Err(e) => {
                tracing::info!("no epoll set ({e}): live jobs' ends are polled once a second");
                (None, None)
            }
        };
        let reads = {
            let (root, tx, polling) = (setup.root.clone(), tx.clone(), polling.clone());
            let (cache, writable) = (setup.cache.clone(), !setup.read_only);
            // Built once, on the worker's one thread (naming the index resolves the root's path).
            let exit_set = Mutex::new(exit_set);
            Worker::start("luzia-reads", 1, move || {
                let exits = exit_set.lock().ok().and_then(|mut s| s.take());
                let index = cache.as_ref().map(|c| index::path_for(c, &root));
                let index = reads::IndexFile::new(index, writable);
                Reads::start(&root, &tx, &polling, notifications.clone(), exits, index)
            })?
        };
        if let Some(waiter) = waiter {
            exits::start_waiter(waiter, reads.clone())?;
        }
        let issues = insight::IssueWorker::start(setup.patterns, setup.known_issues, tx.clone())?;
        let (scans_go, go) = mpsc::channel();
        issues.hold_until(go);
        let hosts: Arc<OnceLock<HashMap<String, HostConfig>>> = Arc::default();
        let log = {
            let (root, tx, issues) = (setup.root.clone(), tx.clone(), issues.clone());
            let hosts = hosts.clone();
            Worker::start("luzia-log", 1, move || {
                log::LogPane::new(root.clone(), tx.clone(), issues.clone(), hosts.clone())
            })?
        };
        let review = {
            let (root, tx) = (setup.root.clone(), tx.clone());
            let checked: std::collections::BTreeSet<String> = setup
                .config
                .iter()
                .flat_map(|c| c.projects.iter())
                .filter(|(_, p)| !p.checks.is_empty())
                .map(|(name, _)| name.clone())
                .collect();
            Worker::start("luzia-review", 1, move || {
                Reviews::new(root.clone(), tx.clone(), checked.clone())
            })?
        };
        let writes = {
            let w = Writes::new(setup.root, tx.clone(), setup.config, setup.read_only);
            Worker::start("luzia-writes", writes::WRITERS, move || w.clone())?
        };
        insight::start_probe(setup.memory_percent, tx.clone());
        Ok(Executor {
            tx,
            read_only: setup.read_only,
            reads,
            log,
            writes,
            review,
            issues,
            polling,
            scans_go: Some(scans_go),
            hosts,
            fleet: None,
            _links: None,
        })
    }

    /// Starts a link to each remote host (its jobs come as `Event::Host`) and the fleet worker
    /// that performs effects on them. Called once; nothing here waits for a host.
    pub fn connect(&mut self, hosts: Vec<(String, HostConfig)>) -> std::io::Result<()> {
        if hosts.is_empty() {
            return Ok(());
        }
        self._links = Some(Links::start(&hosts, &self.tx)?);
        self.run_remote_with(hosts, &fleet::ssh_runner())
    }

    /// The fleet worker alone, running remote commands with `run`.
    fn run_remote_with(
        &mut self,
        hosts: Vec<(String, HostConfig)>,
        run: &Runner,
    ) -> std::io::Result<()> {
        self.fleet = Some(Fleet::start(&hosts, run, &self.tx)?);
        let _ = self.hosts.set(hosts.into_iter().collect());
        Ok(())
    }

    /// The first full frame is on screen: the background work it waited for may start.
    pub fn first_frame_drawn(&mut self) {
        if let Some(go) = self.scans_go.take() {
            let _ = go.send(());
            self.reads.run(Reads::refresh_index);
        }
    }

    pub fn is_polling(&self) -> bool {
        self.polling.load(Ordering::Relaxed)
    }

    /// Hands `effect` to its worker; returns at once.
    pub fn perform(&mut self, effect: Effect) {
        if effect.writes() && self.read_only {
            self.refuse(effect);
            return;
        }
        let Some(effect) = self.route_remote(effect) else {
            return;
        };
        match effect {
            Effect::Sync { skip } => self.reads.run(move |r| r.sync(&skip)),
            Effect::ReadJobs(ids) => self.reads.run(move |r| r.read_jobs(ids)),
            Effect::CheckAlive => self.reads.run(Reads::check_alive),
            Effect::LoadPrompt(id) => self.reads.run(move |r| r.load_prompt(id)),
            Effect::LoadHistory(id) => self.reads.run(move |r| r.load_history(id)),
            Effect::LoadFeed(ids) => self.reads.run(move |r| r.load_feed(ids)),
            Effect::OpenLog(id) => self.log.run(move |l| l.open(id)),
            Effect::PollLog(id) => self.log.run(move |l| l.poll(&id)),
            Effect::CloseLog => self.log.run(log::LogPane::close),
            Effect::ScanIssues(logs) => self.issues.scan(logs),
            Effect::ForgetIssues(gone) => self.issues.forget(gone),
            Effect::SyncQueue => self.writes.run(Writes::sync_queue),
            Effect::LoadChange(id) => self.review.run(move |r| r.load_change(id)),
            Effect::CheckOverlaps(ids) => self.review.run(move |r| r.overlaps(ids)),
            Effect::PreviewReview { job, op } => self.review.run(move |r| r.preview(job, op)),
            // Writes (read-only has already refused it above), on the review worker: one at a
            // time, after the reads of the change it was asked about.
            Effect::Review { job, op } => self.review.run(move |r| r.perform(job, op)),
            // Everything that writes (read-only has already refused it above).
            writes @ (Effect::Answer { .. }
            | Effect::Decide { .. }
            | Effect::Dispatch { .. }
            | Effect::Retry(_)
            | Effect::Reply { .. }
            | Effect::Kill(_)) => self.writes.run(move |w| w.perform(writes)),
            // The loop's own: it owns the terminal, and quitting is leaving the loop.
            Effect::Bell | Effect::Quit | Effect::Attach(_) => {}
        }
    }

    /// Hands an effect on another host's job to the fleet worker, answers those that have no
    /// remote form, and leaves other hosts' keys out of reads of local files. What is left is
    /// performed here.
    fn route_remote(&mut self, effect: Effect) -> Option<Effect> {
        if let Some(host) = remote_host(&effect) {
            match &self.fleet {
                Some(fleet) => fleet.perform(&host, effect),
                None => self.notice(format!("host {host} is not one this cockpit shows")),
            }
            return None;
        }
        let local = |id: &JobId| id.host().is_none();
        match effect {
            Effect::LoadPrompt(id) if !local(&id) => {
                let text = Err(remote_text::no_prompt(id.host().unwrap_or_default(), &id));
                let _ = self.tx.send(Event::PromptLoaded { id, text });
                None
            }
            Effect::LoadHistory(id) if !local(&id) => {
                let history = Err(remote_text::no_history(id.host().unwrap_or_default(), &id));
                let _ = self.tx.send(Event::HistoryLoaded { id, history });
                None
            }
            Effect::ReadJobs(ids) => {
                let ids: Vec<JobId> = ids.into_iter().filter(local).collect();
                (!ids.is_empty()).then_some(Effect::ReadJobs(ids))
            }
            Effect::LoadFeed(ids) => {
                Some(Effect::LoadFeed(ids.into_iter().filter(local).collect()))
            }
            Effect::ScanIssues(logs) => {
                let logs: Vec<_> = logs.into_iter().filter(|l| local(&l.id)).collect();
                (!logs.is_empty()).then_some(Effect::ScanIssues(logs))
            }
            other => Some(other),
        }
    }

    fn notice(&self, message: String) {
        let _ = self.tx.send(Event::Notice(message));
    }

    /// A read-only cockpit writes nothing: checked here, where effects are performed, not
    /// only by hiding keys.
    fn refuse(&self, effect: Effect) {
        tracing::warn!("refused in read-only mode: {effect:?}");
        let message = "read-only: this cockpit writes nothing".to_string();
        let _ = self.tx.send(match effect {
            Effect::Answer { job, .. } | Effect::Decide { job, .. } => Event::Answered {
                job,
                ok: false,
                message,
            },
            _ => Event::Notice(message),
        });
    }

    /// Which jobs an event says should (not) be watched: those that can still change. Taken
    /// before the app consumes the event, applied after the next frame is drawn.
    pub fn watch_plan(ev: &Event) -> Vec<(JobId, bool)> {
        match ev {
            Event::Synced(s) => s
                .read
                .iter()
                .map(|j| (j.id.clone(), reads::can_change(j)))
                .collect(),
            Event::JobsRead(read) => read
                .iter()
                .map(|(id, j)| (id.clone(), j.as_ref().is_some_and(reads::can_change)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Keeps inotify watches on the jobs that can still change (on the reads worker, after
    /// the reads already asked for).
    pub fn apply_watches(&mut self, plan: Vec<(JobId, bool)>) {
        if !plan.is_empty() {
            self.reads.run(move |r| r.apply_watches(plan));
        }
    }
}

/// The host whose `luzia` performs this effect, if it is another host's: every effect on a
/// job keyed with a host, and a dispatch to one. The output pane's effects go to the log
/// worker, which follows a remote log itself.
fn remote_host(effect: &Effect) -> Option<String> {
    let job = match effect {
        Effect::Answer { job, .. }
        | Effect::Decide { job, .. }
        | Effect::Retry(job)
        | Effect::Reply { job, .. }
        | Effect::Kill(job)
        | Effect::LoadChange(job)
        | Effect::PreviewReview { job, .. }
        | Effect::Review { job, .. } => job,
        Effect::Dispatch { host, .. } => return host.clone().filter(|h| h != LOCAL_HOST),
        _ => return None,
    };
    job.host().map(str::to_owned)
}

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod tests;
