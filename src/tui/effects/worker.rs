//! How every effect runs: on a worker, never on the event loop. A worker is one or more named
//! threads fed by a channel of jobs; each thread builds its own state on itself (so building
//! it — a watcher, compiled patterns — is off the loop too) and runs the jobs it takes with it.
//!
//! A worker of one thread runs its jobs one after another in the order they were sent, which
//! is what state such as the log follower needs (open, poll, close, in that order). A worker of
//! several threads is a pool: a job that blocks (a dispatch waiting for the slot lock) holds
//! one thread, and the others go on. Nothing ever waits for a worker: when the cockpit quits,
//! a thread still blocked simply ends with the process.

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// A job for a worker: run on one of its threads, with that thread's state.
type Job<S> = Box<dyn FnOnce(&mut S) + Send>;

pub struct Worker<S> {
    tx: Sender<Job<S>>,
}

impl<S> Clone for Worker<S> {
    fn clone(&self) -> Self {
        Worker {
            tx: self.tx.clone(),
        }
    }
}

impl<S: 'static> Worker<S> {
    /// Starts `threads` threads named `name` (`name-2`, ... after the first), each with the
    /// state `init` builds on it.
    pub fn start(
        name: &str,
        threads: usize,
        init: impl Fn() -> S + Send + Sync + 'static,
    ) -> io::Result<Worker<S>> {
        let (tx, rx) = mpsc::channel::<Job<S>>();
        let rx = Arc::new(Mutex::new(rx));
        let init = Arc::new(init);
        for i in 0..threads.max(1) {
            let thread_name = match i {
                0 => name.to_owned(),
                _ => format!("{name}-{}", i + 1),
            };
            let (rx, init) = (rx.clone(), init.clone());
            std::thread::Builder::new()
                .name(thread_name)
                .spawn(move || run(&rx, &*init))?;
        }
        Ok(Worker { tx })
    }

    /// Hands `job` to the worker and returns at once.
    pub fn run(&self, job: impl FnOnce(&mut S) + Send + 'static) {
        // The threads end only with the process (or after a panic, which ends the cockpit).
        let _ = self.tx.send(Box::new(job));
    }
}

fn run<S>(rx: &Mutex<Receiver<Job<S>>>, init: &dyn Fn() -> S) {
    let mut state = init();
    loop {
        // Only the wait for a job holds the lock; the job runs without it.
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(&mut state),
            // Every sender is gone: the executor was dropped.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_thread_keeps_the_order_and_its_state() {
        let (tx, rx) = mpsc::channel();
        let w = Worker::start("test-order", 1, Vec::<u32>::new).unwrap();
        for i in 0..100 {
            w.run(move |seen: &mut Vec<u32>| seen.push(i));
        }
        w.run(move |seen| tx.send(seen.clone()).unwrap());
        let seen = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_blocked_job_holds_one_thread_of_a_pool_and_run_never_waits() {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (done_tx, done_rx) = mpsc::channel();
        let w = Worker::start("test-pool", 2, || ()).unwrap();
        let blocked = done_tx.clone();
        w.run(move |_| {
            let _ = release_rx.lock().unwrap().recv();
            blocked.send("blocked one").unwrap();
        });
        w.run(move |_| done_tx.send("other").unwrap());
        assert_eq!(
            done_rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            "other"
        );
        release_tx.send(()).unwrap();
        assert_eq!(
            done_rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            "blocked one"
        );
    }
}
