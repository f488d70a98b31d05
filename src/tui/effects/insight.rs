//! The cockpit's background readers for insight: a thread that scans logs for known issues (each
//! log incrementally, so a log is read once however often it grows), and a thread that looks at
//! the server's memory and load every few seconds. Both report with events, and only changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::jobs::JobId;
use crate::jobs::insight::known_issues::{IssueCache, PatternSet, scan_problem};
use crate::jobs::os::system;
use crate::tui::event::Event;

/// Jobs scanned between two reports, so the first results show while a large root is scanned.
const REPORT_EVERY: usize = 256;

/// What the scanning thread is asked: logs to scan (an empty path list with `forget` only
/// drops the scanners of jobs that are gone, so a cockpit open for weeks does not grow).
struct Request {
    scan: Vec<(JobId, PathBuf)>,
    forget: Vec<JobId>,
}

/// Hands logs to the scanning thread.
pub struct IssueWorker {
    tx: Sender<Request>,
}

impl IssueWorker {
    /// Starts the thread; it compiles the patterns first when none are given (built in, plus
    /// the `known_issues` file) and reports them, with what was wrong in the file.
    pub fn start(
        patterns: Option<Arc<PatternSet>>,
        known_issues: Option<PathBuf>,
        events: UnboundedSender<Event>,
    ) -> IssueWorker {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("luzia-issues".into())
            .spawn(move || {
                // Compiled at once, beside the first listing (a few ms of one core), so the
                // output pane can mark lines as soon as it shows any.
                let patterns = patterns.unwrap_or_else(|| compile(known_issues, &events));
                scan_loop(&patterns, &rx, &events)
            })
            .expect("spawning a thread");
        IssueWorker { tx }
    }

    pub fn scan(&self, logs: Vec<(JobId, PathBuf)>) {
        // The thread has gone only when the cockpit is shutting down.
        let _ = self.tx.send(Request {
            scan: logs,
            forget: Vec::new(),
        });
    }

    pub fn forget(&self, gone: Vec<JobId>) {
        let _ = self.tx.send(Request {
            scan: Vec::new(),
            forget: gone,
        });
    }
}

fn compile(known_issues: Option<PathBuf>, events: &UnboundedSender<Event>) -> Arc<PatternSet> {
    let (set, problems) = match &known_issues {
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

fn scan_loop(patterns: &PatternSet, rx: &Receiver<Request>, events: &UnboundedSender<Event>) {
    let mut cache = IssueCache::new();
    while let Ok(first) = rx.recv() {
        // Everything asked meanwhile, each log once, in the order first asked.
        let mut queue = Vec::new();
        for request in std::iter::once(first).chain(rx.try_iter()) {
            cache.forget(&request.forget);
            queue.retain(|(id, _)| !request.forget.contains(id));
            queue.extend(request.scan);
        }
        let mut seen = std::collections::HashSet::new();
        queue.retain(|(id, _)| seen.insert(id.clone()));
        let mut found = Vec::new();
        for (i, (id, path)) in queue.into_iter().enumerate() {
            match cache.advance(&id, &path, patterns) {
                Ok(true) => {
                    let findings = cache.findings(&id).cloned().unwrap_or_default();
                    found.push((id, findings));
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("{}", scan_problem(&path, &e)),
            }
            if (i + 1) % REPORT_EVERY == 0 && !found.is_empty() {
                let _ = events.send(Event::IssuesFound(std::mem::take(&mut found)));
            }
        }
        if !found.is_empty() && events.send(Event::IssuesFound(found)).is_err() {
            return;
        }
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
