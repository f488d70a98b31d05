//! Waiting for something to change in a job directory without busy polling: the file-system
//! watcher wakes us at once; a timed look covers what it cannot see (a remote file system, a
//! full watch table, a watcher that could not start).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::jobs::fs::notify::{Backend, FsWatcher, WatchMode};

/// The fallback poll: slow on purpose, events do the real work.
pub const SLOW_POLL: Duration = Duration::from_secs(2);

pub struct DirWatch {
    watcher: FsWatcher,
    rx: Receiver<()>,
    /// Keeps the channel open while polling, when no watcher holds the other end (waiting is
    /// then a plain timeout, never a closed channel), and lets a [`Stop`] wake the wait.
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

    pub fn mode(&self) -> WatchMode {
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
        check: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        self.until_stopped(deadline, &Stop::default(), check)
    }

    /// As [`until`](DirWatch::until), and `None` at once when `stop` is stopped (before the
    /// first look, or while waiting: the stop wakes the wait).
    pub fn until_stopped<T>(
        &self,
        deadline: Option<Instant>,
        stop: &Stop,
        mut check: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        stop.wake_on_stop(self.tx.clone());
        loop {
            if stop.is_stopped() {
                return None;
            }
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

/// A request to give up waiting, shared between the waiter and whoever may ask it to stop (a
/// client gone, a signal). Stopping wakes every wait that watches it at once. Meant for one
/// exchange (a question and its answer): each wait adds a waker that stays until it is dropped.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    stopped: AtomicBool,
    /// Why, in words a person reads in the history (`the agent was stopped (SIGTERM)`).
    reason: Mutex<Option<String>>,
    wakers: Mutex<Vec<Sender<()>>>,
}

impl Stop {
    /// [`Stop::stop`], saying why.
    pub fn stop_because(&self, reason: String) {
        *self.0.reason.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        self.stop();
    }

    /// Why it was stopped, when the stopper said.
    pub fn reason(&self) -> Option<String> {
        self.0
            .reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        let wakers = self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        for w in wakers.iter() {
            let _ = w.send(());
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Registers a wait to wake; registered before the flag is looked at, so no stop is missed.
    fn wake_on_stop(&self, tx: Sender<()>) {
        let mut wakers = self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        wakers.push(tx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_wakes_a_wait_without_a_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let stop = Stop::default();
        let stopper = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            stopper.stop();
        });
        let started = Instant::now();
        let found: Option<()> = DirWatch::new(dir.path()).until_stopped(None, &stop, || None);
        t.join().unwrap();
        assert_eq!(found, None);
        assert!(started.elapsed() < SLOW_POLL, "woken, not polled");
        let again: Option<()> = DirWatch::new(dir.path()).until_stopped(None, &stop, || None);
        assert_eq!(again, None, "a stopped stop stops at once");
    }
}
