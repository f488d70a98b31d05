//! The cockpit's background readers for insight: a worker that scans logs for known issues (each
//! log incrementally, so a log is read once however often it grows, and the log on screen from
//! what the output pane's follower read), and a thread that looks at the server's memory and
//! load every few seconds. Both report with events, and only changes.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::worker::Worker;
use crate::jobs::JobId;
use crate::jobs::fs::follow::Handoff;
use crate::jobs::insight::known_issues::Findings;
use crate::jobs::insight::known_issues::{IssueCache, PatternSet, scan_problem};
use crate::jobs::os::system;
use crate::tui::effect::LogScan;
use crate::tui::event::Event;

/// Jobs scanned between two reports, so the first results show while a large root is scanned.
const REPORT_EVERY: usize = 256;

/// What the scanning worker keeps: the patterns and one incremental scanner per log.
struct Scanning {
    patterns: Arc<PatternSet>,
    cache: IssueCache,
    events: UnboundedSender<Event>,
}

/// Bytes of handed lines waiting for the scanning worker at most. Past this, the output pane
/// hands on where it stands and not what it read, and the worker reads those bytes itself when
/// it comes to them: a burst must not pile up in memory behind a busy worker.
const HANDED_CAP: u64 = 4 * 1024 * 1024;

/// Hands logs to the scanning worker.
#[derive(Clone)]
pub struct IssueWorker {
    worker: Worker<Scanning>,
    /// Bytes handed in and not yet scanned.
    handed: Arc<AtomicU64>,
}

impl IssueWorker {
    /// Starts the worker; it compiles the patterns first when none are given (built in, plus
    /// the `known_issues` file) and reports them, with what was wrong in the file.
    pub fn start(
        patterns: Option<Arc<PatternSet>>,
        known_issues: Option<PathBuf>,
        events: UnboundedSender<Event>,
    ) -> io::Result<IssueWorker> {
        let worker = Worker::start("luzia-issues", 1, move || Scanning {
            // Compiled at once, beside the first listing (a few ms of one core), so the
            // output pane can mark lines as soon as it shows any.
            patterns: patterns
                .clone()
                .unwrap_or_else(|| compile(known_issues.as_deref(), &events)),
            cache: IssueCache::new(),
            events: events.clone(),
        })?;
        Ok(IssueWorker {
            worker,
            handed: Arc::default(),
        })
    }

    /// Nothing asked of the worker after this runs before `go` says so (or is dropped): the
    /// first frame goes first, and reading 10,000 logs must not delay it.
    pub fn hold_until(&self, go: std::sync::mpsc::Receiver<()>) {
        self.worker.run(move |_| {
            let _ = go.recv();
        });
    }

    pub fn scan(&self, logs: Vec<LogScan>) {
        self.worker.run(move |s| s.scan(logs));
    }

    /// These jobs are gone: their scanners go too, so a cockpit open for weeks does not grow.
    pub fn forget(&self, gone: Vec<JobId>) {
        self.worker.run(move |s| s.cache.forget(&gone));
    }

    /// What the output pane's follower read of this job's log: scanned without reading it
    /// again, and the log left to the follower until [`IssueWorker::unfollow`].
    pub fn take(&self, id: JobId, path: PathBuf, mut handed: Handoff) {
        let waiting = self.handed.load(Ordering::Relaxed);
        if handed.reset.is_none() && waiting + handed.text.len() as u64 > HANDED_CAP {
            handed = Handoff::at(&handed.end);
        }
        let len = handed.text.len() as u64;
        self.handed.fetch_add(len, Ordering::Relaxed);
        let counter = self.handed.clone();
        self.worker.run(move |s| {
            match s.cache.take(&id, &path, &handed, &s.patterns) {
                Ok(true) => {
                    let found = s.cache.findings(&id).cloned().unwrap_or_default();
                    s.report(vec![(id, found)]);
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("{}", scan_problem(&path, &e)),
            }
            drop(handed);
            counter.fetch_sub(len, Ordering::Relaxed);
        });
    }

    pub fn unfollow(&self, id: JobId) {
        self.worker.run(move |s| s.cache.unfollow(&id));
    }
}

fn compile(known_issues: Option<&Path>, events: &UnboundedSender<Event>) -> Arc<PatternSet> {
    let (set, problems) = match known_issues {
        Some(path) => PatternSet::with_file(path),
        None => (PatternSet::builtin(), Vec::new()),
    };
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for p in &problems {
        tracing::warn!("{p}");
    }
    let set = Arc::new(set);
    let _ = events.send(Event::PatternsReady {
        patterns: set.clone(),
        problems,
    });
    set
}

impl Scanning {
    fn scan(&mut self, mut logs: Vec<LogScan>) {
        let mut seen = std::collections::HashSet::new();
        logs.retain(|l| seen.insert(l.id.clone()));
        let mut changed = Vec::new();
        let n = logs.len();
        for (i, LogScan { id, at, settled }) in logs.into_iter().enumerate() {
            let path = at.path(&id);
            match self.cache.advance(&id, &path, &self.patterns) {
                Ok(true) => {
                    let found = self.cache.findings(&id).cloned().unwrap_or_default();
                    changed.push((id.clone(), found));
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("{}", scan_problem(&path, &e)),
            }
            if settled {
                // Its log will not grow: the cockpit keeps its findings, the scanner nothing.
                self.cache.settle(&id);
            }
            if (i + 1) % REPORT_EVERY == 0 && !changed.is_empty() {
                self.report(std::mem::take(&mut changed));
            }
        }
        if !changed.is_empty() {
            self.report(changed);
        }
        if n >= REPORT_EVERY {
            // Each log was read through a buffer of its own, freed: give those pages back.
            crate::jobs::os::heap::release_free_pages();
        }
    }

    /// Sends the whole findings of these jobs.
    fn report(&self, found: Vec<(JobId, Findings)>) {
        let _ = self.events.send(Event::IssuesFound(found));
    }
}

/// How often memory and load are looked at.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// Reads `<proc>/meminfo`, `loadavg` and `stat` every [`PROBE_EVERY`] and reports the alerts
/// when they change. `LUZIA_PROC` names another proc root (containers, tests).
pub fn start_probe(memory_percent: u8, events: UnboundedSender<Event>) {
    let root = std::env::var_os("LUZIA_PROC").map_or_else(|| PathBuf::from("/proc"), PathBuf::from);
    let _ = std::thread::Builder::new()
        .name("luzia-probe".into())
        .spawn(move || probe_loop(&root, memory_percent, &events));
}

fn probe_loop(root: &Path, memory_percent: u8, events: &UnboundedSender<Event>) {
    let mut last = Vec::new();
    loop {
        match system::read(root) {
            Ok(load) => {
                let alerts = system::alerts(&load, memory_percent);
                // Rounded as shown: a percent that moves by a fraction is no news.
                let shown: Vec<String> = alerts.iter().map(ToString::to_string).collect();
                if shown != last {
                    last = shown;
                    if events.send(Event::SystemAlerts(alerts)).is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                // No /proc (or not Linux): nothing to alert on, and no point asking again.
                tracing::info!("no system alerts: {e}");
                return;
            }
        }
        std::thread::sleep(PROBE_EVERY);
        if events.is_closed() {
            return;
        }
    }
}
