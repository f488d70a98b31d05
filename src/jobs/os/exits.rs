//! Process exits as events. A pidfd (Linux 5.3 and later) becomes readable when its process
//! ends, and one epoll set holds them all: one thread sleeps until some process ends, instead of
//! asking after every pid in turn. A pidfd holds the process, not its number: opened, and then
//! found to be the process meant, it can never stand for a later process given the same number.
//!
//! Each pidfd is a file descriptor. The set takes no more than its budget, and says so: what it
//! cannot watch (the budget spent, descriptors run out, a kernel without pidfds, a process the
//! kernel will not give one for) is left to the caller to poll. No knowledge of jobs.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit, getrlimit, pidfd_open, setrlimit};

use super::process::{Found, ProcessRef};

/// Descriptors kept for everything but pidfds: logs being followed, job files being read, the
/// watcher's, the terminal's, the writers'.
pub const RESERVED_FDS: u64 = 512;

/// Raises this process's soft limit of open files to its hard limit, and returns how many
/// pidfds may be opened under it: the limit, less [`RESERVED_FDS`].
pub fn raise_fd_limit() -> usize {
    let limit = getrlimit(Resource::Nofile);
    let soft = match (limit.current, limit.maximum) {
        (Some(soft), Some(hard)) if hard > soft => {
            let raised = Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => hard,
                Err(e) => {
                    tracing::info!("open files stay limited to {soft} ({e})");
                    soft
                }
            }
        }
        (Some(_), None) | (None, _) => u64::from(u32::MAX),
        (Some(soft), Some(_)) => soft,
    };
    usize::try_from(soft.saturating_sub(RESERVED_FDS)).unwrap_or(usize::MAX)
}

/// What became of a request to watch a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// Its end will be reported under this token.
    Watching(u64),
    /// It has ended already, or its number names another process now.
    Ended,
    /// Not watched: see why; the caller polls it.
    Unwatchable(Refusal),
}

/// Why a process is not watched by event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The set holds as many pidfds as its budget allows.
    Budget,
    /// The kernel refused a pidfd, or the epoll set (no pidfds before Linux 5.3, descriptors
    /// run out, not permitted).
    Kernel(Errno),
}

/// The pidfds being watched, by token. Used from one thread; its [`ExitWaiter`] waits on
/// another.
pub struct ExitSet {
    epoll: Arc<OwnedFd>,
    fds: HashMap<u64, OwnedFd>,
    next: u64,
    budget: usize,
}

/// Waits for the processes of an [`ExitSet`] to end.
pub struct ExitWaiter {
    epoll: Arc<OwnedFd>,
}

impl ExitSet {
    /// An empty set that will hold at most `budget` pidfds, and what waits on it.
    pub fn new(budget: usize) -> io::Result<(ExitSet, ExitWaiter)> {
        let epoll = Arc::new(epoll::create(CreateFlags::CLOEXEC)?);
        let waiter = ExitWaiter {
            epoll: epoll.clone(),
        };
        let set = ExitSet {
            epoll,
            fds: HashMap::new(),
            next: 0,
            budget,
        };
        Ok((set, waiter))
    }

    /// Watches `process` for its end. Tokens are never reused, so a report about a process
    /// unwatched since names no other.
    pub fn watch(&mut self, process: &ProcessRef) -> Watched {
        if self.fds.len() >= self.budget {
            return Watched::Unwatchable(Refusal::Budget);
        }
        let Some(pid) = i32::try_from(process.pid).ok().and_then(Pid::from_raw) else {
            return Watched::Ended;
        };
        let fd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(Errno::SRCH) => return Watched::Ended,
            Err(e) => return Watched::Unwatchable(Refusal::Kernel(e)),
        };
        // Checked after opening: the pidfd holds whatever process had the number then. If that
        // one is the process meant, the pidfd is about it for good; if not (it ended, and the
        // number went to another), the process meant has ended.
        match process.find() {
            Found::Ours | Found::Unverified => {}
            Found::Gone | Found::Other => return Watched::Ended,
        }
        let token = self.next;
        // Once: a pidfd stays readable after its process ended, and one report is enough.
        let flags = EventFlags::IN | EventFlags::ONESHOT;
        if let Err(e) = epoll::add(&*self.epoll, &fd, EventData::new_u64(token), flags) {
            return Watched::Unwatchable(Refusal::Kernel(e));
        }
        self.next += 1;
        self.fds.insert(token, fd);
        Watched::Watching(token)
    }

    /// Stops watching. Taken out of the epoll set by name: closing the pidfd alone does not
    /// while a child another thread is forking holds a copy of it (until that child execs),
    /// and the process's end would still be reported.
    pub fn unwatch(&mut self, token: u64) {
        if let Some(fd) = self.fds.remove(&token) {
            let _ = epoll::delete(&*self.epoll, &fd);
        }
    }

    /// How many processes are watched.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }
}

impl ExitWaiter {
    /// Blocks until some watched processes end (or `timeout` passes) and returns their tokens.
    /// Each end is reported once.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<Vec<u64>> {
        let timeout = timeout.map(|d| rustix::event::Timespec {
            tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(d.subsec_nanos()),
        });
        let mut events = Vec::with_capacity(256);
        loop {
            match epoll::wait(
                &*self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                timeout.as_ref(),
            ) {
                Ok(_) => return Ok(events.iter().map(|e| e.data.u64()).collect()),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests;
