//! Being told that files changed, with one set of fallbacks for every caller (the cockpit,
//! `luzia logs -f`, an agent waiting at `ask` or `gate`).
//!
//! The native watcher (inotify) is a hint, used where it can be trusted. Where it cannot, the
//! watcher says so ([`WatchMode::Polling`]) and the caller looks again on its own timer: on a
//! remote or FUSE file system (inotify misses other machines' writes), when the watcher cannot
//! start (no inotify instances left), and when the watch table is full. Open, read and
//! close-without-write events are dropped: reading a file causes them, and a reader woken by
//! its own reads would never rest.
//!
//! A watch follows a directory, not its path: a directory moved away (`mv jobs jobs.old`) is
//! still the one watched, and one made again at the path is not. So the watched directory's
//! identity (device and inode) is looked at every [`CHECK_EVERY`], and at once when an event
//! names the directory itself (moved or removed): while nothing is at the path the owner is told
//! [`Change::Gone`]; when a directory is there again (the same or another), the watches on the
//! old one are dropped, the new one is watched, and the owner is told [`Change::Back`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
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

/// How often the watched directory's identity is looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a watcher tells its owner.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// These paths changed (the watched directories' entries, or the directories themselves).
    Paths(Vec<PathBuf>),
    /// Events were lost (the queue overflowed, the watcher reported an error): look at everything.
    Rescan,
    /// Nothing is at the watched path any more (the directory was moved away or removed).
    Gone,
    /// A directory is at the watched path again, or another one replaced it: it is watched
    /// from now on (the directories added under the old one are not), look at everything.
    Back,
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
    state: Arc<Mutex<State>>,
}

struct State {
    inner: Option<Box<dyn Watcher + Send>>,
    mode: WatchMode,
    dir: PathBuf,
    recursive: RecursiveMode,
    /// What is at `dir`: `None` while nothing (or not a directory) is there.
    identity: Option<Identity>,
    /// The directories added since the start, which go with the directory they are in.
    added: HashSet<PathBuf>,
    /// Keeps the guard's channel open while polling, when no handler holds it.
    _poke: mpsc::Sender<()>,
}

/// A directory's device and inode.
type Identity = (u64, u64);

fn identity(dir: &Path) -> Option<Identity> {
    let st = rustix::fs::stat(dir).ok()?;
    let is_dir = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
    // st_dev and st_ino differ in width between architectures.
    #[allow(clippy::unnecessary_cast)]
    is_dir.then_some((st.st_dev as u64, st.st_ino as u64))
}

impl FsWatcher {
    /// Watches `dir` (not recursively); `sink` is called from the watcher's own threads.
    pub fn start(
        dir: &Path,
        backend: Backend,
        sink: impl Fn(Change) + Send + Sync + 'static,
    ) -> FsWatcher {
        FsWatcher::start_in(dir, RecursiveMode::NonRecursive, backend, sink)
    }

    /// Watches `dir` and every directory below it, those made later too (a tree a few
    /// directories large, such as the queue).
    pub fn start_recursive(
        dir: &Path,
        backend: Backend,
        sink: impl Fn(Change) + Send + Sync + 'static,
    ) -> FsWatcher {
        FsWatcher::start_in(dir, RecursiveMode::Recursive, backend, sink)
    }

    fn start_in(
        dir: &Path,
        recursive: RecursiveMode,
        backend: Backend,
        sink: impl Fn(Change) + Send + Sync + 'static,
    ) -> FsWatcher {
        let sink: Arc<dyn Fn(Change) + Send + Sync> = Arc::new(sink);
        let (poke, pokes) = mpsc::channel();
        let mut state = State {
            inner: None,
            mode: WatchMode::Inotify,
            dir: dir.to_owned(),
            recursive,
            identity: identity(dir),
            added: HashSet::new(),
            _poke: poke.clone(),
        };
        match backend {
            Backend::Poll(reason) => state.mode = WatchMode::Polling { reason },
            Backend::Native(native) => match remote_fs_name(dir) {
                Some(fs) => {
                    state.mode = WatchMode::Polling {
                        reason: format!("{fs} file system"),
                    }
                }
                None => state.start_native(native, sink.clone(), poke),
            },
        }
        let state = Arc::new(Mutex::new(state));
        spawn_guard(Arc::downgrade(&state), pokes, sink);
        FsWatcher { state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn mode(&self) -> WatchMode {
        self.lock().mode.clone()
    }

    pub fn is_polling(&self) -> bool {
        matches!(self.lock().mode, WatchMode::Polling { .. })
    }

    /// Watches one more directory (not recursively). Polling already, there is nothing to add.
    pub fn add(&mut self, dir: &Path) -> Result<(), AddError> {
        self.lock().add(dir)
    }

    /// Stops watching a directory added before.
    pub fn remove(&mut self, dir: &Path) {
        let mut state = self.lock();
        state.added.remove(dir);
        if let Some(inner) = state.inner.as_mut() {
            let _ = inner.unwatch(dir);
        }
    }

    /// Whether `dir` was added, and is still watched (not dropped with the directory it was in).
    pub fn is_added(&self, dir: &Path) -> bool {
        self.lock().added.contains(dir)
    }

    pub fn added_count(&self) -> usize {
        self.lock().added.len()
    }
}

impl State {
    fn start_native(
        &mut self,
        native: NativeWatcher,
        sink: Arc<dyn Fn(Change) + Send + Sync>,
        poke: mpsc::Sender<()>,
    ) {
        let own = std::path::absolute(&self.dir).unwrap_or_else(|_| self.dir.clone());
        let handler: Handler = Box::new(move |res| {
            if let Some(change) = change_of(res) {
                let about_itself = matches!(&change, Change::Paths(p) if p.contains(&own));
                sink(change);
                // After the change is told, so that what the guard finds comes after it.
                if about_itself {
                    let _ = poke.send(());
                }
            }
        });
        let (dir, recursive) = (self.dir.clone(), self.recursive);
        match native(handler).and_then(|mut w| w.watch(&dir, recursive).map(|()| w)) {
            Ok(inner) => self.inner = Some(inner),
            Err(e) => self.fall_back(&e),
        }
    }

    fn add(&mut self, dir: &Path) -> Result<(), AddError> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        match inner.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                self.added.insert(dir.to_owned());
                Ok(())
            }
            Err(e) if matches!(e.kind, ::notify::ErrorKind::MaxFilesWatch) => {
                self.fall_back(&e);
                Err(AddError::SwitchedToPolling)
            }
            Err(e) => Err(AddError::Failed(e.to_string())),
        }
    }

    fn fall_back(&mut self, e: &::notify::Error) {
        let reason = match e.kind {
            ::notify::ErrorKind::MaxFilesWatch => "inotify watch limit reached".to_string(),
            _ => format!("file watching failed: {e}"),
        };
        tracing::warn!("polling instead of watching: {reason}");
        self.inner = None;
        self.added.clear();
        self.mode = WatchMode::Polling { reason };
    }

    /// Whether the directory at the path is still the one watched; when it is not, the old
    /// one's watches are dropped and the new one (if any) is watched.
    fn check(&mut self) -> Option<Change> {
        let now = identity(&self.dir);
        if now == self.identity {
            return None;
        }
        tracing::info!(
            "{} {}",
            self.dir.display(),
            if now.is_some() {
                "replaced: watched again"
            } else {
                "is gone"
            }
        );
        self.identity = now;
        let dir = self.dir.clone();
        if let Some(inner) = self.inner.as_mut() {
            for added in self.added.drain() {
                let _ = inner.unwatch(&added);
            }
            // Gone already when the directory was removed rather than moved.
            let _ = inner.unwatch(&dir);
        }
        if now.is_none() {
            return Some(Change::Gone);
        }
        let rewatched = match self.inner.as_mut() {
            Some(inner) => inner.watch(&dir, self.recursive),
            None => Ok(()),
        };
        if let Err(e) = rewatched {
            if matches!(e.kind, ::notify::ErrorKind::MaxFilesWatch) {
                self.fall_back(&e);
            } else {
                // Gone again already, or unreadable: looked at again at the next check.
                tracing::warn!("cannot watch {} again: {e}", dir.display());
                self.identity = None;
                return Some(Change::Gone);
            }
        }
        Some(Change::Back)
    }
}

/// Looks at the watched directory every [`CHECK_EVERY`] and at each poke, and tells `sink`
/// what changed; ends with the watcher.
fn spawn_guard(
    state: Weak<Mutex<State>>,
    pokes: mpsc::Receiver<()>,
    sink: Arc<dyn Fn(Change) + Send + Sync>,
) {
    let spawned = std::thread::Builder::new()
        .name("luzia-watch-dir".into())
        .spawn(move || {
            let mut gone = false;
            loop {
                if let Err(RecvTimeoutError::Disconnected) = pokes.recv_timeout(CHECK_EVERY) {
                    return;
                }
                let Some(state) = state.upgrade() else { return };
                let change = state.lock().unwrap_or_else(PoisonError::into_inner).check();
                drop(state);
                match change {
                    // Said once, however many checks find nothing there.
                    Some(Change::Gone) if gone => {}
                    Some(change) => {
                        gone = change == Change::Gone;
                        sink(change);
                    }
                    None => {}
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the thread that checks the watched directory: {e}");
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
mod tests;
