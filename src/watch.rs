//! File-system events -> "these jobs changed" / "read everything again".
//!
//! The watcher is a hint, never the truth: every event only names jobs to re-read. It watches
//! the jobs root (jobs appearing and vanishing) and the directory of each job that can still
//! change; finished jobs are not watched, so 10,000 old jobs cost no inotify watches. On a
//! remote file system (NFS, CIFS, 9p, FUSE), where inotify misses other machines' writes, or
//! when the watch limit runs out, it gives up and the cockpit polls instead (the fallbacks are
//! [`crate::jobs::fs::notify`]'s, shared with `luzia logs -f` and `ask`/`gate`; this layer adds
//! which directories to watch and which jobs an event touches).

use std::path::{Path, PathBuf};

use crate::jobs::JobId;
use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::fs::notify::{self as changes, AddError, Backend, Change, FsWatcher};
use crate::jobs::model::id::is_valid;

pub use crate::jobs::fs::notify::{POLL_EVERY, WatchMode};

/// What the watcher tells its owner.
#[derive(Debug, PartialEq, Eq)]
pub enum Signal {
    Changed(Vec<JobId>),
    /// Only these jobs' `output.log` was written: an agent printing, which changes nothing
    /// else about the job until it ends (and its end is an event of its own).
    Output(Vec<JobId>),
    Rescan,
    /// The jobs root is no longer at its path (moved away, removed).
    RootGone,
    /// A directory is at the root's path again (the same or a new one), watched from now on:
    /// read everything again, and watch its jobs anew (the old root's watches are dropped).
    RootBack,
}

#[derive(Debug, PartialEq, Eq)]
pub enum WatchChange {
    Added,
    Unchanged,
    /// The watch limit ran out: the watcher now polls.
    SwitchedToPolling,
}

pub struct JobWatcher {
    root: PathBuf,
    inner: FsWatcher,
    /// The owner knows the watcher polls (told at the start, or by a `SwitchedToPolling`).
    said_polling: bool,
}

impl JobWatcher {
    /// Starts watching `root`; `sink` is called from the watcher's own thread.
    pub fn start(root: &Path, sink: impl Fn(Signal) + Send + Sync + 'static) -> JobWatcher {
        // Events name absolute paths: a relative root (`--jobs-dir jobs`) would match none of
        // them, and jobs appearing or vanishing would go unseen.
        let root_for_events = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        let inner = FsWatcher::start(root, Backend::from_env(), move |change| {
            if let Some(signal) = jobs_of(&root_for_events, change) {
                sink(signal);
            }
        });
        JobWatcher {
            root: root.to_owned(),
            said_polling: inner.is_polling(),
            inner,
        }
    }

    pub fn mode(&self) -> WatchMode {
        self.inner.mode()
    }

    pub fn is_polling(&self) -> bool {
        self.inner.is_polling()
    }

    /// Watches (or stops watching) one job's directory. A directory watched under a root that
    /// has been replaced since is not watched any more: it is added again when wanted.
    pub fn set_watched(&mut self, id: &JobId, wanted: bool) -> WatchChange {
        if self.inner.is_polling() {
            // The watch table may have filled up while the root was watched again.
            if !std::mem::replace(&mut self.said_polling, true) {
                return WatchChange::SwitchedToPolling;
            }
            return WatchChange::Unchanged;
        }
        let dir = self.root.join(id.as_str());
        let watched = self.inner.is_added(&dir);
        if wanted && !watched {
            match self.inner.add(&dir) {
                Ok(()) => return WatchChange::Added,
                Err(AddError::SwitchedToPolling) => {
                    self.said_polling = true;
                    return WatchChange::SwitchedToPolling;
                }
                // Gone already, or unreadable: the next read of the job will say so.
                Err(AddError::Failed(e)) => tracing::debug!("cannot watch {}: {e}", dir.display()),
            }
        } else if !wanted && watched {
            self.inner.remove(&dir);
        }
        WatchChange::Unchanged
    }

    pub fn watched_count(&self) -> usize {
        self.inner.added_count()
    }
}

/// How long after a directory appears in the queue it is listed once more.
const NEW_DIR_SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

/// Watches the queue root (tasks queued, started or cancelled, from this machine's CLI or any
/// other writer) and calls `sink` on every change there. `None` where it cannot be trusted or
/// started (no queue root yet, a remote file system, `LUZIA_WATCH=poll`): the cockpit then
/// lists the queue on its ticks. `sink` must only read the queue: what it reads raises no event
/// (opens and reads are ignored), so nothing loops.
pub struct QueueWatcher {
    _inner: FsWatcher,
}

impl QueueWatcher {
    pub fn start(queue: &Path, sink: impl Fn() + Send + Sync + 'static) -> Option<QueueWatcher> {
        let sink = std::sync::Arc::new(sink);
        let sink = move |change: Change| {
            let (wanted, new_dir) = match change {
                Change::Rescan | Change::Gone | Change::Back => (true, false),
                // Temporary files and the slot lock (dot names) come before or around a real
                // change, which brings its own event.
                Change::Paths(paths) => (
                    paths.iter().any(|p| {
                        p.file_name()
                            .is_none_or(|n| !n.to_string_lossy().starts_with('.'))
                    }),
                    paths.iter().any(|p| p.is_dir()),
                ),
            };
            if wanted {
                sink();
            }
            if new_dir {
                // A directory made just now may have been filled before its own watch was
                // added (`luzia run --queue` makes `pending/normal/` and its task at once):
                // those files bring no event, so look once more when the burst is over.
                let again = sink.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(NEW_DIR_SETTLE);
                    again();
                });
            }
        };
        if !queue.is_dir() {
            return None;
        }
        // Recursive: the priority directories may be made after the cockpit starts.
        let inner = FsWatcher::start_recursive(queue, Backend::from_env(), sink);
        (!inner.is_polling()).then_some(QueueWatcher { _inner: inner })
    }
}

/// Maps one event to the jobs it touches. The cockpit's own reads cause open and close-nowrite
/// events; those are ignored, or every read would cause another.
pub fn classify(root: &Path, ev: &::notify::Event) -> Option<Signal> {
    jobs_of(root, changes::change(ev)?)
}

/// The jobs a change touches: the first component below the root that is a job id.
fn jobs_of(root: &Path, change: Change) -> Option<Signal> {
    let paths = match change {
        Change::Rescan => return Some(Signal::Rescan),
        Change::Gone => return Some(Signal::RootGone),
        Change::Back => return Some(Signal::RootBack),
        Change::Paths(paths) => paths,
    };
    let mut ids: Vec<JobId> = Vec::new();
    let mut output_only = true;
    for path in &paths {
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let mut parts = rel.components();
        let Some(first) = parts.next() else {
            // The root itself moved or vanished: the watcher, woken by this event, says whether
            // it is gone or another directory took its place (`RootGone`, `RootBack`).
            continue;
        };
        let name = first.as_os_str().to_string_lossy();
        if is_valid(&name)
            && let Ok(id) = JobId::parse(&name)
        {
            output_only &= parts.as_path() == Path::new(LOG_FILE);
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    match (ids.is_empty(), output_only) {
        (true, _) => None,
        (false, true) => Some(Signal::Output(ids)),
        (false, false) => Some(Signal::Changed(ids)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::notify::event::{AccessKind, AccessMode, CreateKind, EventKind, ModifyKind};
    use std::time::Duration;

    fn event(kind: EventKind, paths: &[&str]) -> ::notify::Event {
        let mut ev = ::notify::Event::new(kind);
        for p in paths {
            ev = ev.add_path(PathBuf::from(p));
        }
        ev
    }

    #[test]
    fn classify_table() {
        let root = Path::new("/jobs");
        let id = |s: &str| JobId::parse(s).unwrap();
        let modify = EventKind::Modify(ModifyKind::Any);
        let cases = [
            // An agent printing: its job needs no reading for that alone.
            (
                event(modify, &["/jobs/a1/output.log"]),
                Some(Signal::Output(vec![id("a1")])),
            ),
            (
                event(modify, &["/jobs/a1/output.log", "/jobs/c3/output.log"]),
                Some(Signal::Output(vec![id("a1"), id("c3")])),
            ),
            (
                event(modify, &["/jobs/a1/output.log", "/jobs/a1/meta.json"]),
                Some(Signal::Changed(vec![id("a1")])),
            ),
            (
                event(modify, &["/jobs/a1/sub/output.log"]),
                Some(Signal::Changed(vec![id("a1")])),
            ),
            (
                event(EventKind::Create(CreateKind::Folder), &["/jobs/b2"]),
                Some(Signal::Changed(vec![id("b2")])),
            ),
            (
                event(modify, &["/jobs/a1/x", "/jobs/a1/y", "/jobs/c3/z"]),
                Some(Signal::Changed(vec![id("a1"), id("c3")])),
            ),
            (
                event(
                    EventKind::Access(AccessKind::Open(::notify::event::AccessMode::Any)),
                    &["/jobs/a1/meta.json"],
                ),
                None,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Close(AccessMode::Read)),
                    &["/jobs/a1/meta.json"],
                ),
                None,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Close(AccessMode::Write)),
                    &["/jobs/a1/progress.json"],
                ),
                Some(Signal::Changed(vec![id("a1")])),
            ),
            (event(modify, &["/jobs/.partial"]), None),
            (event(modify, &["/elsewhere/a1"]), None),
            (
                event(
                    EventKind::Remove(::notify::event::RemoveKind::Folder),
                    &["/jobs"],
                ),
                None,
            ),
        ];
        for (ev, want) in cases {
            assert_eq!(classify(root, &ev), want, "{ev:?}");
        }
        let overflow =
            ::notify::Event::new(EventKind::Other).set_flag(::notify::event::Flag::Rescan);
        assert_eq!(classify(root, &overflow), Some(Signal::Rescan));
    }

    #[test]
    fn a_task_queued_or_taken_is_noticed_and_reading_the_queue_is_not() {
        let dir = tempfile::tempdir().unwrap();
        assert!(QueueWatcher::start(&dir.path().join("none"), || {}).is_none());
        let (tx, rx) = std::sync::mpsc::channel();
        let _w = QueueWatcher::start(dir.path(), move || {
            let _ = tx.send(());
        })
        .unwrap();
        let q = crate::jobs::run::queue::enqueue(
            dir.path(),
            "p",
            "t",
            crate::jobs::run::queue::Priority::Normal,
            "me",
        )
        .unwrap();
        rx.recv_timeout(Duration::from_secs(5))
            .expect("an event for a queued task");
        // Let the burst of one enqueue end, then read: no event. The burst is over only after a
        // long quiet: on a loaded machine its last event once came more than 300 ms late.
        while rx.recv_timeout(Duration::from_secs(2)).is_ok() {}
        assert_eq!(crate::jobs::run::queue::list(dir.path()).unwrap().len(), 1);
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        crate::jobs::run::queue::cancel(dir.path(), &q.id).unwrap();
        rx.recv_timeout(Duration::from_secs(5))
            .expect("an event for a cancelled task");
    }

    #[test]
    fn real_events_arrive_for_a_watched_job() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut w = JobWatcher::start(dir.path(), move |s| {
            let _ = tx.send(s);
        });
        assert_eq!(w.mode(), WatchMode::Inotify);
        std::fs::create_dir(dir.path().join("j1")).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(first, Signal::Changed(vec![JobId::parse("j1").unwrap()]));
        assert_eq!(
            w.set_watched(&JobId::parse("j1").unwrap(), true),
            WatchChange::Added
        );
        std::fs::write(dir.path().join("j1/output.log"), b"x\n").unwrap();
        let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(got, Signal::Output(vec![JobId::parse("j1").unwrap()]));
        std::fs::write(dir.path().join("j1/progress.json"), b"{}").unwrap();
        let got = loop {
            match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
                // The log's own close may come after its write.
                Signal::Output(_) => continue,
                other => break other,
            }
        };
        assert_eq!(got, Signal::Changed(vec![JobId::parse("j1").unwrap()]));
        assert_eq!(w.watched_count(), 1);
    }

    #[test]
    fn a_relative_root_still_hears_jobs_appear() {
        let dir = tempfile::tempdir().unwrap();
        // The same directory, named relative to the test's working directory.
        let cwd = std::env::current_dir().unwrap();
        let up = cwd.components().count() - 1;
        let relative: PathBuf = std::iter::repeat_n(Path::new(".."), up)
            .collect::<PathBuf>()
            .join(dir.path().strip_prefix("/").unwrap());
        assert!(relative.is_relative() && relative.exists(), "{relative:?}");
        let (tx, rx) = std::sync::mpsc::channel();
        let _w = JobWatcher::start(&relative, move |s| {
            let _ = tx.send(s);
        });
        std::fs::create_dir(dir.path().join("j1")).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).expect("an event");
        assert_eq!(first, Signal::Changed(vec![JobId::parse("j1").unwrap()]));
    }
}
