//! The running count: one entry per agent luzia runs, in `<queue root>/.running/` (beside the
//! slots lock, whose holder counts), so that counting what runs (for `max_concurrent`) costs
//! what runs, not what the jobs root has ever held.
//!
//! An entry is an empty file named after its job, made under the queue's slots lock before the
//! supervisor starts and `flock`ed by the process that makes it. The lock passes to the
//! supervisor with the open file (inherited across exec), and the supervisor keeps it for its
//! whole life. The kernel releases it when the supervisor ends, however it ends (SIGKILL too),
//! so an entry whose lock can be taken is one whose supervisor is gone: the count trusts no pid,
//! and a reused pid changes nothing. The supervisor removes its entry after the exit line; one
//! left by a supervisor that died is removed by the next count.
//!
//! Jobs with no entry (the orchestrator's, an interactive session's, those started before
//! entries existed) are counted by [`others`].

pub mod others;

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;

use crate::jobs::fs::files::{self, open_nofollow, open_write};
use crate::jobs::run::queue::Slots;

/// The directory of the entries, in the queue root.
pub const RUNNING_DIR: &str = ".running";

/// A job's entry, locked by this process (and by the supervisor it is passed to).
pub struct Entry {
    file: File,
    path: PathBuf,
}

impl Entry {
    /// Makes job `id`'s entry, locked, under the slots lock. Made under a temporary name and
    /// renamed, so that no count ever sees it unlocked.
    pub fn take(id: &str, slots: &Slots) -> io::Result<Entry> {
        let dir = slots.queue().join(RUNNING_DIR);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(id);
        let tmp = dir.join(format!(".new-{id}"));
        let made = open_write(&tmp, files::Write::Truncate, 0o644).and_then(|file| {
            flock(&file, FlockOperation::NonBlockingLockExclusive)?;
            std::fs::rename(&tmp, &path)?;
            Ok(file)
        });
        match made {
            Ok(file) => Ok(Entry { file, path }),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// The entry a supervisor was started with: descriptor `fd`, inherited from the process that
    /// made it. `None` unless `fd` is open on job `job_dir`'s entry in `queue` (a descriptor that
    /// is not is left alone). Closed on exec from here on, so the agent never holds the slot.
    #[allow(
        unsafe_code,
        reason = "a descriptor inherited across exec can only be named by its number"
    )]
    pub fn inherited(fd: RawFd, queue: &Path, job_dir: &Path) -> Option<Entry> {
        let path = queue.join(RUNNING_DIR).join(job_dir.file_name()?);
        let on_disk = std::fs::metadata(&path).ok()?;
        if fd < 0 {
            return None;
        }
        // SAFETY: only borrowed for the fstat, which fails harmlessly on a closed descriptor.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let st = rustix::fs::fstat(borrowed).ok()?;
        if st.st_dev != on_disk.dev() || st.st_ino != on_disk.ino() {
            return None;
        }
        if fd > 2 {
            rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::CLOEXEC).ok()?;
            // SAFETY: the descriptor is open on the entry, and nothing else in this process owns
            // it (it came from the parent, named only by `--slot-fd`).
            let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            return Some(Entry { file, path });
        }
        // A standard descriptor (the slot arrives as standard input): the entry moves to a
        // descriptor of its own, closed on exec, and /dev/null takes its place, so that no child
        // that inherits the standard ones ever holds the slot.
        let file = File::from(rustix::io::fcntl_dupfd_cloexec(borrowed, 3).ok()?);
        let null = File::open("/dev/null").ok()?;
        // SAFETY: as above; dup2 over it closes the slot's original descriptor, which is then
        // reopened on /dev/null.
        let mut standard = unsafe { OwnedFd::from_raw_fd(fd) };
        let placed = rustix::io::dup2(&null, &mut standard);
        // The descriptor number stays the standard one's: never closed by this process.
        std::mem::forget(standard);
        placed.ok()?;
        Some(Entry { file, path })
    }

    /// The descriptor to pass to the supervisor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// The job no longer runs: the entry goes, then the lock (with the descriptor).
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The jobs whose supervisor holds its entry: luzia's running agents, exactly. Entries whose
/// supervisor is gone are removed (as are temporary ones a starter that died left: they are made
/// only under the slots lock, which the caller holds). An entry that cannot be opened or locked
/// for another reason is counted: a slot is never given twice.
pub fn live(slots: &Slots) -> io::Result<HashSet<String>> {
    let dir = slots.queue().join(RUNNING_DIR);
    let mut live = HashSet::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(live),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let path = entry.path();
        if name.starts_with(".new-") {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if name.starts_with('.') {
            continue;
        }
        if held(&path) {
            live.insert(name);
        }
    }
    Ok(live)
}

/// Whether job `id`'s entry is held by its supervisor (without the slots lock: an entry found
/// free is left where it is, for the next count to remove).
pub fn is_held(queue: &Path, id: &str) -> bool {
    match open_nofollow(&queue.join(RUNNING_DIR).join(id)) {
        Ok(Some(file)) => flock(&file, FlockOperation::NonBlockingLockShared).is_err(),
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Whether a supervisor holds the entry at `path`; removes it when none does.
fn held(path: &Path) -> bool {
    let file = match open_nofollow(path) {
        Ok(Some(f)) => f,
        // Its supervisor just removed it: the job has ended.
        Ok(None) => return false,
        Err(_) => return true,
    };
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Err(Errno::WOULDBLOCK) => true,
        Ok(()) => {
            // Removed while locked: no supervisor can hold it any more, and none ever will.
            let _ = std::fs::remove_file(path);
            false
        }
        Err(_) => true,
    }
}

/// Waits until job `id`'s entry is free, or fails after 10 s. Dropping an [`Entry`] frees it at
/// once unless a child that another thread of the tests is forking holds a copy of its
/// descriptor, and so its lock, until that child execs.
#[cfg(test)]
pub(crate) fn wait_until_free(queue: &Path, id: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while is_held(queue, id) {
        assert!(
            std::time::Instant::now() < deadline,
            "{id}'s entry stays held"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests;
