//! Waiting for something to change in a job directory without busy polling: the file-system
//! watcher wakes us at once; a timed look covers what it cannot see (a remote file system, a
//! full watch table, a watcher that could not start).

use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use crate::jobs::fs::notify::{Backend, FsWatcher, WatchMode};

/// The fallback poll: slow on purpose, events do the real work.
pub const SLOW_POLL: Duration = Duration::from_secs(2);

pub struct DirWatch {
    watcher: FsWatcher,
    rx: Receiver<()>,
    /// Keeps the channel open while polling, when no watcher holds the other end: waiting is
    /// then a plain timeout, never a closed channel.
    tx: Sender<()>,
}

impl DirWatch {
    /// Watches `dir` with the native watcher where it can be trusted.
    pub fn new(dir: &Path) -> DirWatch {
        DirWatch::with_backend(dir, Backend::default())
    }

    pub fn with_backend(dir: &Path, backend: Backend) -> DirWatch {
        let (tx, rx) = mpsc::channel();
        let wake = tx.clone();
        let watcher = FsWatcher::start(dir, backend, move |_| {
            let _ = wake.send(());
        });
        DirWatch { watcher, rx, tx }
    }

    /// Something that wakes [`DirWatch::wait`] from elsewhere (a signal's thread): a send is
    /// taken for a change in the directory.
    pub fn waker(&self) -> Sender<()> {
        self.tx.clone()
    }

    pub fn mode(&self) -> &WatchMode {
        self.watcher.mode()
    }

    /// Sleeps until something in the directory changes or `timeout` passes. A burst of events
    /// is one wake-up: one look covers it.
    pub fn wait(&self, timeout: Duration) {
        let _ = self.rx.recv_timeout(timeout);
        while self.rx.try_recv().is_ok() {}
    }

    /// Returns the first `Some` that `check` gives, looking again on every change in the
    /// directory (and every `SLOW_POLL`), or `None` once `deadline` has passed.
    pub fn until<T>(
        &self,
        deadline: Option<Instant>,
        mut check: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        loop {
            if let Some(found) = check() {
                return Some(found);
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(d) if d <= now => return None,
                Some(d) => (d - now).min(SLOW_POLL),
                None => SLOW_POLL,
            };
            self.wait(wait);
        }
    }
}
