//! Being told that files changed, with one set of fallbacks for every caller (the cockpit,
//! `luzia logs -f`, an agent waiting at `ask` or `gate`).
//!
//! The native watcher (inotify) is a hint, used where it can be trusted. Where it cannot, the
//! watcher says so ([`WatchMode::Polling`]) and the caller looks again on its own timer: on a
//! remote or FUSE file system (inotify misses other machines' writes), when the watcher cannot
//! start (no inotify instances left), and when the watch table is full. Open, read and
//! close-without-write events are dropped: reading a file causes them, and a reader woken by
//! its own reads would never rest.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ::notify::event::{AccessKind, AccessMode, EventKind};
use ::notify::{Event, RecursiveMode, Watcher};

/// How often the cockpit looks again when it polls.
pub const POLL_EVERY: Duration = Duration::from_secs(2);

/// The environment variable that turns the native watcher off (`LUZIA_WATCH=poll`).
pub const WATCH_ENV: &str = "LUZIA_WATCH";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchMode {
    Inotify,
    Polling { reason: String },
}

/// What a watcher tells its owner.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// These paths changed (the watched directories' entries, or the directories themselves).
    Paths(Vec<PathBuf>),
    /// Events were lost (the queue overflowed, the watcher reported an error): look at everything.
    Rescan,
}

/// What the native watcher's thread calls with each event.
pub type Handler = Box<dyn FnMut(::notify::Result<Event>) + Send>;

/// Makes the native watcher. The platform's own is [`platform_watcher`]; another one stands in
/// where a test must see the fallback taken.
pub type NativeWatcher = fn(Handler) -> ::notify::Result<Box<dyn Watcher + Send>>;

/// The platform's recommended watcher (inotify on Linux).
pub fn platform_watcher(handler: Handler) -> ::notify::Result<Box<dyn Watcher + Send>> {
    Ok(Box::new(::notify::recommended_watcher(handler)?))
}

#[derive(Clone, Debug)]
pub enum Backend {
    /// The native watcher where it can be trusted, polling where it cannot.
    Native(NativeWatcher),
    /// Polling, for the reason given (the operator asked for it).
    Poll(String),
}

impl Default for Backend {
    fn default() -> Backend {
        Backend::Native(platform_watcher)
    }
}

impl Backend {
    /// The native watcher, unless `LUZIA_WATCH=poll` asks for polling.
    pub fn from_env() -> Backend {
        if std::env::var(WATCH_ENV).is_ok_and(|v| v == "poll") {
            Backend::Poll(format!("{WATCH_ENV}=poll"))
        } else {
            Backend::default()
        }
    }
}

/// Why a directory could not be added.
#[derive(Debug, PartialEq, Eq)]
pub enum AddError {
    /// The watch table is full: the watcher has switched to polling.
    SwitchedToPolling,
    /// This one directory cannot be watched (gone already, unreadable); the rest still are.
    Failed(String),
}

pub struct FsWatcher {
    inner: Option<Box<dyn Watcher + Send>>,
    mode: WatchMode,
}

impl FsWatcher {
    /// Watches `dir` (not recursively); `sink` is called from the watcher's own thread.
    pub fn start(
        dir: &Path,
        backend: Backend,
        sink: impl Fn(Change) + Send + 'static,
    ) -> FsWatcher {
        FsWatcher::start_in(dir, RecursiveMode::NonRecursive, backend, sink)
    }

    /// Watches `dir` and every directory below it, those made later too (a tree a few
    /// directories large, such as the queue).
    pub fn start_recursive(
        dir: &Path,
        backend: Backend,
        sink: impl Fn(Change) + Send + 'static,
    ) -> FsWatcher {
        FsWatcher::start_in(dir, RecursiveMode::Recursive, backend, sink)
    }

    fn start_in(
        dir: &Path,
        mode: RecursiveMode,
        backend: Backend,
        sink: impl Fn(Change) + Send + 'static,
    ) -> FsWatcher {
        let native = match backend {
            Backend::Poll(reason) => return FsWatcher::polling(reason),
            Backend::Native(native) => native,
        };
        if let Some(fs) = remote_fs_name(dir) {
            return FsWatcher::polling(format!("{fs} file system"));
        }
        let handler: Handler = Box::new(move |res| {
            if let Some(change) = change_of(res) {
                sink(change);
            }
        });
        let started = native(handler).and_then(|mut w| w.watch(dir, mode).map(|()| w));
        let mut watcher = FsWatcher {
            inner: None,
            mode: WatchMode::Inotify,
        };
        match started {
            Ok(inner) => watcher.inner = Some(inner),
            Err(e) => watcher.fall_back(&e),
        }
        watcher
    }

    fn polling(reason: String) -> FsWatcher {
        FsWatcher {
            inner: None,
            mode: WatchMode::Polling { reason },
        }
    }

    pub fn mode(&self) -> &WatchMode {
        &self.mode
    }

    pub fn is_polling(&self) -> bool {
        matches!(self.mode, WatchMode::Polling { .. })
    }

    /// Watches one more directory (not recursively). Polling already, there is nothing to add.
    pub fn add(&mut self, dir: &Path) -> Result<(), AddError> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        match inner.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.kind, ::notify::ErrorKind::MaxFilesWatch) => {
                self.fall_back(&e);
                Err(AddError::SwitchedToPolling)
            }
            Err(e) => Err(AddError::Failed(e.to_string())),
        }
    }

    /// Stops watching a directory added before.
    pub fn remove(&mut self, dir: &Path) {
        if let Some(inner) = self.inner.as_mut() {
            let _ = inner.unwatch(dir);
        }
    }

    fn fall_back(&mut self, e: &::notify::Error) {
        let reason = match e.kind {
            ::notify::ErrorKind::MaxFilesWatch => "inotify watch limit reached".to_string(),
            _ => format!("file watching failed: {e}"),
        };
        tracing::warn!("polling instead of watching: {reason}");
        self.inner = None;
        self.mode = WatchMode::Polling { reason };
    }
}

/// What one event from the native watcher means, if anything.
pub fn change_of(res: ::notify::Result<Event>) -> Option<Change> {
    match res {
        Ok(ev) => change(&ev),
        Err(e) => {
            tracing::warn!("watcher error: {e}; rescanning");
            Some(Change::Rescan)
        }
    }
}

/// What one event means: nothing for a reader's own open, read or close-without-write.
pub fn change(ev: &Event) -> Option<Change> {
    if ev.need_rescan() {
        return Some(Change::Rescan);
    }
    if is_own_access(ev) {
        return None;
    }
    Some(Change::Paths(ev.paths.clone()))
}

/// An open, read or close-without-write: what reading a file causes, not a change.
pub fn is_own_access(ev: &Event) -> bool {
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
    use std::sync::mpsc;

    /// What inotify_init1 gives when the user's inotify instances are used up.
    fn no_instances_left(_: Handler) -> ::notify::Result<Box<dyn Watcher + Send>> {
        Err(::notify::Error::io(rustix::io::Errno::MFILE.into()))
    }

    /// A watcher that starts but finds the watch table full.
    struct FullTable;

    impl Watcher for FullTable {
        fn new<F: ::notify::EventHandler>(_: F, _: ::notify::Config) -> ::notify::Result<Self> {
            Ok(FullTable)
        }
        fn watch(&mut self, _: &Path, _: RecursiveMode) -> ::notify::Result<()> {
            Err(::notify::Error::new(::notify::ErrorKind::MaxFilesWatch))
        }
        fn unwatch(&mut self, _: &Path) -> ::notify::Result<()> {
            Ok(())
        }
        fn kind() -> ::notify::WatcherKind {
            ::notify::WatcherKind::NullWatcher
        }
    }

    fn full_table(_: Handler) -> ::notify::Result<Box<dyn Watcher + Send>> {
        Ok(Box::new(FullTable))
    }

    #[test]
    fn every_way_the_native_watcher_fails_ends_in_polling() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(Backend, &str); 3] = [
            (Backend::Native(no_instances_left), "file watching failed"),
            (Backend::Native(full_table), "inotify watch limit reached"),
            (Backend::Poll("LUZIA_WATCH=poll".into()), "LUZIA_WATCH=poll"),
        ];
        for (backend, reason) in cases {
            let w = FsWatcher::start(dir.path(), backend.clone(), |_| {});
            match w.mode() {
                WatchMode::Polling { reason: got } => {
                    assert!(got.contains(reason), "{backend:?}: {got}")
                }
                WatchMode::Inotify => panic!("{backend:?} did not fall back"),
            }
        }
    }

    #[test]
    fn own_reads_are_no_change_and_an_overflow_is_a_rescan() {
        let ev = |kind| Event::new(kind).add_path(PathBuf::from("/j/a1/meta.json"));
        let open = ev(EventKind::Access(AccessKind::Open(AccessMode::Any)));
        assert_eq!(change(&open), None);
        let read_close = ev(EventKind::Access(AccessKind::Close(AccessMode::Read)));
        assert_eq!(change(&read_close), None);
        let write_close = ev(EventKind::Access(AccessKind::Close(AccessMode::Write)));
        assert_eq!(
            change(&write_close),
            Some(Change::Paths(vec![PathBuf::from("/j/a1/meta.json")]))
        );
        let overflow = Event::new(EventKind::Other).set_flag(::notify::event::Flag::Rescan);
        assert_eq!(change(&overflow), Some(Change::Rescan));
        assert_eq!(
            change_of(Err(::notify::Error::generic("queue overflow"))),
            Some(Change::Rescan)
        );
    }

    #[test]
    fn local_tmp_is_not_remote() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(remote_fs_name(dir.path()), None);
    }

    #[test]
    fn a_native_watcher_reports_writes_in_added_directories() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut w = FsWatcher::start(dir.path(), Backend::default(), move |c| {
            let _ = tx.send(c);
        });
        assert_eq!(w.mode(), &WatchMode::Inotify);
        let sub = dir.path().join("j1");
        std::fs::create_dir(&sub).unwrap();
        let created = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(created, Change::Paths(vec![sub.clone()]));
        assert_eq!(w.add(&sub), Ok(()));
        assert!(matches!(
            w.add(&dir.path().join("gone")),
            Err(AddError::Failed(_))
        ));
        std::fs::write(sub.join("output.log"), b"x\n").unwrap();
        let written = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            matches!(&written, Change::Paths(p) if p.contains(&sub.join("output.log"))),
            "{written:?}"
        );
    }
}
