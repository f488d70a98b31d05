//! Waiting for a file to appear in a job directory without busy polling: inotify wakes us at
//! once; a slow poll covers what inotify cannot see (a remote file system, a full watch table).

use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// The fallback poll: slow on purpose, events do the real work.
pub const SLOW_POLL: Duration = Duration::from_secs(2);

pub struct DirWatch {
    _watcher: Option<RecommendedWatcher>,
    rx: Receiver<()>,
}

impl DirWatch {
    pub fn new(dir: &Path) -> DirWatch {
        let (tx, rx) = mpsc::channel();
        let watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            let real_change = match &ev {
                Ok(e) => !crate::watch::is_own_access(e),
                Err(_) => true,
            };
            if real_change {
                let _ = tx.send(());
            }
        })
        .and_then(|mut w| w.watch(dir, RecursiveMode::NonRecursive).map(|()| w));
        DirWatch {
            _watcher: watcher.ok(),
            rx,
        }
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
            let _ = self.rx.recv_timeout(wait);
            // Drain a burst: one look covers it.
            while self.rx.try_recv().is_ok() {}
        }
    }
}
