//! File-system events -> "these jobs changed" / "read everything again".
//!
//! The watcher is a hint, never the truth: every event only names jobs to re-read. It watches
//! the jobs root (jobs appearing and vanishing) and the directory of each job that can still
//! change; finished jobs are not watched, so 10,000 old jobs cost no inotify watches. On a
//! remote file system (NFS, CIFS, 9p, FUSE), where inotify misses other machines' writes, or
//! when the watch limit runs out, it gives up and the cockpit polls instead.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use crate::jobs::JobId;
use crate::jobs::model::id::is_valid;

pub const POLL_EVERY: Duration = Duration::from_secs(2);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchMode {
    Inotify,
    Polling { reason: String },
}

/// What the watcher tells its owner.
#[derive(Debug, PartialEq, Eq)]
pub enum Signal {
    Changed(Vec<JobId>),
    Rescan,
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
    inner: Option<RecommendedWatcher>,
    watched: HashSet<JobId>,
    mode: WatchMode,
}

impl JobWatcher {
    /// Starts watching `root`; `sink` is called from the watcher's own thread.
    pub fn start(root: &Path, sink: impl Fn(Signal) + Send + 'static) -> JobWatcher {
        let mut w = JobWatcher {
            root: root.to_owned(),
            inner: None,
            watched: HashSet::new(),
            mode: WatchMode::Inotify,
        };
        if std::env::var("LUZIA_WATCH").is_ok_and(|v| v == "poll") {
            w.mode = WatchMode::Polling {
                reason: "LUZIA_WATCH=poll".into(),
            };
            return w;
        }
        if let Some(fs) = remote_fs_name(root) {
            w.mode = WatchMode::Polling {
                reason: format!("{fs} file system"),
            };
            return w;
        }
        let root_for_events = root.to_owned();
        let handler = move |res: notify::Result<notify::Event>| match res {
            Ok(ev) => {
                if let Some(signal) = classify(&root_for_events, &ev) {
                    sink(signal);
                }
            }
            Err(e) => {
                tracing::warn!("watcher error: {e}; rescanning");
                sink(Signal::Rescan);
            }
        };
        match notify::recommended_watcher(handler) {
            Ok(mut inner) => match inner.watch(root, RecursiveMode::NonRecursive) {
                Ok(()) => w.inner = Some(inner),
                Err(e) => w.fall_back(&e),
            },
            Err(e) => w.fall_back(&e),
        }
        w
    }

    pub fn mode(&self) -> &WatchMode {
        &self.mode
    }

    pub fn is_polling(&self) -> bool {
        matches!(self.mode, WatchMode::Polling { .. })
    }

    /// Watches (or stops watching) one job's directory.
    pub fn set_watched(&mut self, id: &JobId, wanted: bool) -> WatchChange {
        let Some(inner) = self.inner.as_mut() else {
            return WatchChange::Unchanged;
        };
        let dir = self.root.join(id.as_str());
        if wanted && !self.watched.contains(id) {
            match inner.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(id.clone());
                    return WatchChange::Added;
                }
                Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                    self.fall_back(&e);
                    return WatchChange::SwitchedToPolling;
                }
                // Gone already, or unreadable: the next read of the job will say so.
                Err(e) => tracing::debug!("cannot watch {}: {e}", dir.display()),
            }
        } else if !wanted && self.watched.remove(id) {
            let _ = inner.unwatch(&dir);
        }
        WatchChange::Unchanged
    }

    pub fn watched_count(&self) -> usize {
        self.watched.len()
    }

    fn fall_back(&mut self, e: &notify::Error) {
        let reason = match e.kind {
            notify::ErrorKind::MaxFilesWatch => "inotify watch limit reached".to_string(),
            _ => format!("file watching failed: {e}"),
        };
        tracing::warn!("polling every {}s: {reason}", POLL_EVERY.as_secs());
        self.inner = None;
        self.watched.clear();
        self.mode = WatchMode::Polling { reason };
    }
}

/// Watches the queue root (tasks queued, started or cancelled, from this machine's CLI or any
/// other writer) and calls `sink` on every change there. `None` where it cannot be trusted or
/// started (no queue root yet, a remote file system, `LUZIA_WATCH=poll`): the cockpit then
/// lists the queue on its ticks. `sink` must only read the queue: what it reads raises no event
/// (opens and reads are ignored), so nothing loops.
pub struct QueueWatcher {
    _inner: RecommendedWatcher,
}

impl QueueWatcher {
    pub fn start(queue: &Path, sink: impl Fn() + Send + 'static) -> Option<QueueWatcher> {
        if std::env::var("LUZIA_WATCH").is_ok_and(|v| v == "poll")
            || remote_fs_name(queue).is_some()
        {
            return None;
        }
        let handler = move |res: notify::Result<notify::Event>| {
            let wanted = res.as_ref().map_or(true, |ev| {
                // Temporary files and the slot lock (dot names) come before or around a real
                // change, which brings its own event.
                !is_own_access(ev)
                    && ev.paths.iter().any(|p| {
                        p.file_name()
                            .is_none_or(|n| !n.to_string_lossy().starts_with('.'))
                    })
            });
            if wanted {
                sink();
            }
        };
        let mut inner = notify::recommended_watcher(handler).ok()?;
        inner.watch(queue, RecursiveMode::Recursive).ok()?;
        Some(QueueWatcher { _inner: inner })
    }

    /// Watches the queue and hands `sink` its rows (as `luzia queue` lists them) on every
    /// change. With `create`, a missing queue root is made first, as `luzia run` makes it,
    /// so that there is something to watch.
    pub fn listing(
        queue: &Path,
        create: bool,
        sink: impl Fn(Vec<crate::jobs::Job>) + Send + 'static,
    ) -> Option<QueueWatcher> {
        if create {
            let _ = std::fs::create_dir_all(queue);
        }
        let dir = queue.to_owned();
        QueueWatcher::start(queue, move || {
            sink(crate::jobs::run::queue::listed_rows(&dir))
        })
    }
}

/// Maps one event to the jobs it touches. The cockpit's own reads cause open and close-nowrite
/// events; those are ignored, or every read would cause another.
pub fn classify(root: &Path, ev: &notify::Event) -> Option<Signal> {
    if ev.need_rescan() {
        return Some(Signal::Rescan);
    }
    if is_own_access(ev) {
        return None;
    }
    let mut ids: Vec<JobId> = Vec::new();
    for path in &ev.paths {
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let Some(first) = rel.components().next() else {
            // The root itself moved or vanished.
            return Some(Signal::Rescan);
        };
        let name = first.as_os_str().to_string_lossy();
        if is_valid(&name) {
            let id = JobId::parse(&name).expect("checked");
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    (!ids.is_empty()).then_some(Signal::Changed(ids))
}

/// An open, read or close-without-write: what reading a file causes, not a change.
pub fn is_own_access(ev: &notify::Event) -> bool {
    match ev.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

/// The name of a remote or FUSE file system under `path`, where inotify cannot be trusted.
pub fn remote_fs_name(path: &Path) -> Option<&'static str> {
    let st = rustix::fs::statfs(path).ok()?;
    // Magic numbers from statfs(2); f_type's width differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as i64 as u32 {
        0x6969 => Some("NFS"),
        0xFF53_4D42 => Some("CIFS"),
        0xFE53_4D42 => Some("SMB2"),
        0x517B => Some("SMB"),
        0x0102_1997 => Some("9p"),
        0x6573_5546 => Some("FUSE"),
        0x00C3_6400 => Some("Ceph"),
        0x0BD0_0BD0 => Some("Lustre"),
        0x7461_636F => Some("OCFS2"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, ModifyKind};

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut ev = notify::Event::new(kind);
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
            (
                event(modify, &["/jobs/a1/output.log"]),
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
                    EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
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
                    EventKind::Remove(notify::event::RemoveKind::Folder),
                    &["/jobs"],
                ),
                Some(Signal::Rescan),
            ),
        ];
        for (ev, want) in cases {
            assert_eq!(classify(root, &ev), want, "{ev:?}");
        }
        let overflow = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        assert_eq!(classify(root, &overflow), Some(Signal::Rescan));
    }

    #[test]
    fn local_tmp_is_not_remote() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(remote_fs_name(dir.path()), None);
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
        // Let the burst of one enqueue end, then read: no event.
        while rx.recv_timeout(Duration::from_millis(300)).is_ok() {}
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
        assert_eq!(w.mode(), &WatchMode::Inotify);
        std::fs::create_dir(dir.path().join("j1")).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(first, Signal::Changed(vec![JobId::parse("j1").unwrap()]));
        assert_eq!(
            w.set_watched(&JobId::parse("j1").unwrap(), true),
            WatchChange::Added
        );
        std::fs::write(dir.path().join("j1/output.log"), b"x\n").unwrap();
        let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(got, Signal::Changed(vec![JobId::parse("j1").unwrap()]));
        assert_eq!(w.watched_count(), 1);
    }
}
