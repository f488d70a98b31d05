//! `luzia notify --watch`: the job watcher's events (a question written, an exit line appended,
//! a job directory made) bring a look at the jobs they name at once; a tick re-reads the jobs
//! that can still change, for what no file event announces (a stall, a budget passed, an agent
//! that died); now and then, or when the watcher lost events, every job is looked at. Commands
//! run on a thread of their own, in order, so a slow notifier never delays the next look.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::Utc;

use super::Notifier;
use super::telegram::Bridge;
use crate::jobs::insight::notify::Event;
use crate::jobs::{Job, JobId, Status, read_job};
use crate::watch::{JobWatcher, POLL_EVERY, Signal};

/// How often the jobs that can still change are read again.
const TICK: Duration = Duration::from_secs(5);
/// How often every job is read again, even with a watcher that lost nothing.
const FULL_EVERY: Duration = Duration::from_secs(10 * 60);
/// Looks brought by file events come at most this often: an agent streaming its output brings
/// an event a write, and a question needs no more than a quarter of a second to be told.
const MIN_GAP: Duration = Duration::from_millis(250);

/// Exit codes when a signal ends the watch (the shell's 128 + signal number; Ctrl-C is 0).
const SIGTERM_EXIT: i32 = 143;
const SIGHUP_EXIT: i32 = 129;

/// Watches until Ctrl-C (exit 0), SIGTERM or SIGHUP; the jobs read are handed to `bridge` too.
pub fn watch(n: Notifier, bridge: Option<Bridge>, out: &mut dyn Write) -> Result<u8> {
    on_signals()?;
    let (tx, rx) = mpsc::channel();
    let mut watcher = JobWatcher::start(n.root(), move |s| {
        let _ = tx.send(s);
    });
    let n = Arc::new(n);
    let queue = sender(&n)?;
    say_how(&n, &watcher, out)?;
    let mut w = Watch {
        n: &n,
        watcher: &mut watcher,
        active: HashSet::new(),
        queue,
        bridge,
        last_error: None,
    };
    w.full();
    let mut last_full = Instant::now();
    let mut last_look = Instant::now();
    let mut next_tick = Instant::now() + TICK;
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(first) => {
                let (ids, rescan) = gather(first, &rx, last_look + MIN_GAP);
                if rescan {
                    w.full();
                    last_full = Instant::now();
                } else {
                    w.partial(ids, false);
                }
                last_look = Instant::now();
            }
            Err(RecvTimeoutError::Timeout) => {
                let every = if w.watcher.is_polling() {
                    POLL_EVERY
                } else {
                    TICK
                };
                next_tick = Instant::now() + every;
                w.n.start_after_limits();
                if w.watcher.is_polling() || last_full.elapsed() >= FULL_EVERY {
                    w.full();
                    last_full = Instant::now();
                } else {
                    let ids = w.active.iter().cloned().collect();
                    // Always to the ledger: what the rate limit held may be sent now.
                    w.partial(ids, true);
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(1),
        }
    }
}

/// Ends the process on Ctrl-C, SIGTERM or SIGHUP, killing the command running then (it is in
/// a process group of its own, so a signal to luzia's does not reach it).
fn on_signals() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    // Registered here, before the first look: a signal from now on is caught.
    let mut signals = rt.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })?;
    std::thread::Builder::new()
        .name("notify-signals".into())
        .spawn(move || {
            let (int, term, hup) = &mut signals;
            let code = rt.block_on(async {
                tokio::select! {
                    _ = int.recv() => 0,
                    _ = term.recv() => SIGTERM_EXIT,
                    _ = hup.recv() => SIGHUP_EXIT,
                }
            });
            super::command::kill_running();
            std::process::exit(code);
        })?;
    Ok(())
}

/// The first line: how the jobs are watched, and where the ledger is.
fn say_how(n: &Notifier, watcher: &JobWatcher, out: &mut dyn Write) -> std::io::Result<()> {
    let how = match watcher.mode() {
        crate::watch::WatchMode::Inotify => "watching".to_string(),
        crate::watch::WatchMode::Polling { reason } => format!("polling ({reason})"),
    };
    writeln!(
        out,
        "luzia notify: {how} {}; sent events are remembered in {}",
        n.root().display(),
        n.ledger_path().display()
    )?;
    out.flush()
}

/// The thread that runs the commands, one event after the other, in the order they were
/// claimed; it says what came of each on stdout.
fn sender(n: &Arc<Notifier>) -> std::io::Result<mpsc::Sender<Event>> {
    let (queue, to_send) = mpsc::channel::<Event>();
    let n = Arc::clone(n);
    std::thread::Builder::new()
        .name("notify-send".into())
        .spawn(move || {
            for event in to_send {
                n.send(event, &mut std::io::stdout());
            }
        })?;
    Ok(queue)
}

/// The first signal and every one that comes behind it until `until`: the jobs they name, and
/// whether any asks for a look at everything.
fn gather(first: Signal, rx: &mpsc::Receiver<Signal>, until: Instant) -> (Vec<JobId>, bool) {
    let mut signals = vec![first];
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(s) => signals.push(s),
            Err(_) => break,
        }
    }
    signals.extend(rx.try_iter());
    let mut ids: Vec<JobId> = Vec::new();
    let mut rescan = false;
    for s in signals {
        match s {
            // Output may end with the exit line: read like any change.
            Signal::Changed(changed) | Signal::Output(changed) => ids.extend(changed),
            // A root gone is said by the look that cannot read it; one back is read whole.
            Signal::Rescan | Signal::RootGone | Signal::RootBack => rescan = true,
        }
    }
    ids.sort();
    ids.dedup();
    (ids, rescan)
}

struct Watch<'a> {
    n: &'a Notifier,
    watcher: &'a mut JobWatcher,
    /// The jobs that can still give an event: watched, and read again at each tick.
    active: HashSet<JobId>,
    queue: mpsc::Sender<Event>,
    bridge: Option<Bridge>,
    /// Said once until another error (or none) comes: a broken state file must not fill the log.
    last_error: Option<String>,
}

/// A job worth watching: one whose files can still change what it gives. A job the usage
/// limit stopped is, until something continues it (its `resumed` event): no file of a job
/// settled otherwise would announce that, and a tick reads it again.
fn can_change(job: &Job, now: chrono::DateTime<Utc>) -> bool {
    if job.status == Status::Limited {
        return job.continued_by().is_none()
            && job
                .limit_resets_at()
                .is_some_and(|at| now - at <= crate::jobs::insight::notify::FAILED_HORIZON);
    }
    !job.is_settled() && job.status != Status::Died
}

impl Watch<'_> {
    fn full(&mut self) {
        let now = Utc::now();
        match crate::jobs::scan(self.n.root(), now) {
            Ok(jobs) => {
                let live: HashSet<JobId> = jobs
                    .iter()
                    .filter(|j| can_change(j, now))
                    .map(|j| j.id.clone())
                    .collect();
                for gone in self.active.difference(&live).cloned().collect::<Vec<_>>() {
                    self.watcher.set_watched(&gone, false);
                }
                for id in &live {
                    self.watcher.set_watched(id, true);
                }
                self.active = live;
                if let Some(b) = &self.bridge {
                    b.seen(&jobs, &[], true);
                }
                self.claim(&jobs, true, true, now);
            }
            Err(e) => self.error(format!("{e}")),
        }
    }

    /// Reads the jobs `ids`; `tick`: go to the ledger even when they give no event.
    fn partial(&mut self, ids: Vec<JobId>, tick: bool) {
        let now = Utc::now();
        let mut jobs = Vec::new();
        for id in &ids {
            let id = id.clone();
            match read_job(self.n.root(), &id, now) {
                Some(job) => {
                    let live = can_change(&job, now);
                    self.watcher.set_watched(&id, live);
                    if live {
                        self.active.insert(id);
                    } else {
                        self.active.remove(&id);
                    }
                    jobs.push(job);
                }
                None => {
                    self.watcher.set_watched(&id, false);
                    self.active.remove(&id);
                }
            }
        }
        if let Some(b) = &self.bridge {
            b.seen(&jobs, &ids, false);
        }
        self.claim(&jobs, false, tick, now);
    }

    fn claim(&mut self, jobs: &[Job], full: bool, always: bool, now: chrono::DateTime<Utc>) {
        match self.n.look(jobs, full, always, now) {
            Ok(claimed) => {
                self.last_error = None;
                for event in claimed.send {
                    let _ = self.queue.send(event);
                }
            }
            Err(e) => self.error(e.to_string()),
        }
    }

    fn error(&mut self, message: String) {
        if self.last_error.as_ref() != Some(&message) {
            crate::say!("luzia: error: {message}");
            self.last_error = Some(message);
        }
    }
}
