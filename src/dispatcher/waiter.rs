//! The waiter: a luzia process of its own (`luzia __limit-waiter --queue DIR`, a session of its
//! own, so neither the supervisor's exit nor the terminal's hangup ends it) that sleeps until
//! the usage limit's reset and its margin, then looks once as the queue's starter does
//! ([`Dispatcher::start_queued`]): a job the limit stopped is continued, and the tasks held for
//! it start, with nobody else looking (no cockpit, no `luzia notify --watch`, no later `luzia
//! run`). The look's own claim (`limit-resume.json`, published once) keeps it exactly-once
//! beside every other looker; a resume cancelled meanwhile (a kill, a retry) makes it a no-op.
//!
//! One waiter per queue at most: the supervisor of a job the limit stopped takes the queue's
//! waiter lock (`limits/.waiter.lock`, `flock`ed) and hands it to the waiter it starts, as its
//! standard input; when it is taken, a waiter is there already, and will see the new hold at
//! its next look. A waiter sleeps until the first hold or resume due, looks, and goes on to the
//! next; with none left it removes the lock file, lets go of the lock, and looks once more (a
//! stop recorded meanwhile found the lock taken) before it ends. A reboot ends it: the other
//! lookers still carry the resume out, from what is on disk.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;

use super::Dispatcher;
use super::limits::limits_dir;
use crate::jobs::fs::files::{Write, open_write};

/// The queue's waiter lock, in its `limits/`.
const LOCK_FILE: &str = ".waiter.lock";

/// The longest the waiter sleeps at once: a clock set forward, or a machine suspended past the
/// reset, is noticed within it.
const NAP: Duration = Duration::from_secs(30);

/// The queue's waiter lock, held. Dropped, it removes its file and lets go.
pub struct WaiterLock {
    file: File,
    path: PathBuf,
    /// Whether dropping it lets go: not once it is handed to the waiter.
    held: bool,
}

impl WaiterLock {
    /// Takes the lock of `queue`'s waiter; `None` when a waiter holds it.
    pub fn try_take(queue: &Path) -> io::Result<Option<WaiterLock>> {
        let dir = limits_dir(queue);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(LOCK_FILE);
        loop {
            let file = open_write(&path, Write::Append { create: true }, 0o644)?;
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(Errno::WOULDBLOCK) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
            // A waiter that ended removed the file it held: the lock counts only on the file
            // the name gives now.
            if names(&file, &path) {
                return Ok(Some(WaiterLock {
                    file,
                    path,
                    held: true,
                }));
            }
        }
    }

    /// The lock as its starter handed it over, on this process's standard input; `None` when
    /// that is not the queue's lock (the waiter takes it then, or leaves it to the waiter that
    /// has it).
    fn inherited(queue: &Path) -> Option<WaiterLock> {
        let file = File::from(io::stdin().as_fd().try_clone_to_owned().ok()?);
        let path = limits_dir(queue).join(LOCK_FILE);
        // The lock of this open file already: taking it again succeeds, and proves it ours.
        flock(&file, FlockOperation::NonBlockingLockExclusive).ok()?;
        names(&file, &path).then_some(WaiterLock {
            file,
            path,
            held: true,
        })
    }
}

impl Drop for WaiterLock {
    fn drop(&mut self) {
        if self.held {
            // Removed while still held, so that no one locks a name on its way out.
            let _ = std::fs::remove_file(&self.path);
            let _ = flock(&self.file, FlockOperation::Unlock);
        }
    }
}

/// Whether `file` is the file `path` names.
fn names(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Starts the waiter of `d`'s queue, unless one waits already: called by the supervisor of a
/// job the usage limit stopped, once its hold (and its resume) are on disk.
pub fn start(d: &Dispatcher) -> io::Result<()> {
    let queue = &d.cfg.queue_dir;
    let Some(mut lock) = WaiterLock::try_take(queue)? else {
        return Ok(());
    };
    let mut cmd = Command::new(&d.exe);
    cmd.arg("--jobs-dir").arg(&d.cfg.jobs_dir);
    if let Some(c) = &d.cfg.file {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("__limit-waiter")
        .arg("--queue")
        .arg(queue)
        .arg("--inherit-lock")
        .stdin(Stdio::from(lock.file.try_clone()?))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn()?;
    // The waiter holds the lock now, through its own descriptor of the same open file.
    lock.held = false;
    // Reaped if it ends before this process does; this process never waits for it.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// The waiter's life: until no hold stands and no resume waits ahead, sleeps to the next one
/// due and looks. `inherit` when its starter handed it the lock.
pub fn run(d: &Dispatcher, inherit: bool) {
    let queue = &d.cfg.queue_dir;
    let mut handed = if inherit {
        WaiterLock::inherited(queue)
    } else {
        None
    };
    loop {
        let lock = match handed.take() {
            Some(lock) => lock,
            None => match WaiterLock::try_take(queue) {
                Ok(Some(lock)) => lock,
                // Another waiter has it; or, unable to lock, nothing is safe to do alone.
                Ok(None) | Err(_) => return,
            },
        };
        watch(d);
        drop(lock);
        // A stop recorded while the lock was held started no waiter: seen here, or by the
        // waiter its supervisor started once the lock was let go.
        if d.next_due(Utc::now()).is_none() {
            return;
        }
    }
}

/// Looks whenever something is due, until nothing is due ahead.
fn watch(d: &Dispatcher) {
    loop {
        if d.limits_due(Utc::now()) {
            // What the look could not do is for a person at a terminal, and the waiter has
            // none: a resume that failed for good is recorded in its job, and one that could
            // not be done now (every slot taken) is done by the next look, as a job ends.
            let _ = d.start_queued();
        }
        let Some(at) = d.next_due(Utc::now()) else {
            return;
        };
        sleep_until(at);
    }
}

fn sleep_until(at: DateTime<Utc>) {
    while let Ok(left) = (at - Utc::now()).to_std() {
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(NAP));
    }
}
