//! luzia's private directory in a job directory (`.luzia/`): where it keeps what an agent must
//! not be able to write, which processes are the job's (`process.json`).
//!
//! An agent run as a project's user owns its job directory, so it can rename any entry there, a
//! root-owned one included: its own `output.log`, full of bytes it chose, renamed to
//! `process.json`, is still root's file. A file's owner proves nothing where someone else may
//! rename into its directory. The private directory is made by the supervisor before the job
//! directory is given away, owned by it and writable by nobody else, so none of its entries can
//! be the agent's. The agent can still rename the directory itself, but only within the job
//! directory (moving a directory to another parent needs write permission on the directory, to
//! change its `..`): where it is not under its name, it is looked for among the job directory's
//! own subdirectories, and a record counts only if it names its job.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::jobs::fs::files::{SMALL_FILE_CAP, trusted_owner};
use crate::jobs::fs::names::PRIVATE_DIR;

/// A job's private directory, opened and found to be luzia's.
#[derive(Debug)]
pub struct Private {
    fd: OwnedFd,
}

impl Private {
    /// Makes the private directory of the job directory `dir` (or takes the one there, if it is
    /// luzia's). To be called before the agent may write in `dir`.
    pub fn create(dir: &Path) -> io::Result<Private> {
        let path = dir.join(PRIVATE_DIR);
        match rustix::fs::mkdir(&path, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        Private::open(&path, root_of(dir))
    }

    /// Opens `path` if it is a private directory: a directory (not a link to one), owned by a
    /// trusted owner (see `trusted_owner`; `root` is the jobs root), that nobody else may write.
    fn open(path: &Path, root: &Path) -> io::Result<Private> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => {
                io::Error::other("is not luzia's directory: it is a link or a file")
            }
            e => e.into(),
        })?;
        let st = rustix::fs::fstat(&fd)?;
        if !trusted_owner(st.st_uid, root) {
            return Err(io::Error::other(format!(
                "is owned by uid {}, not by root, the user luzia runs as or the jobs root's \
                 owner, so it is not trusted to name the job's processes",
                st.st_uid
            )));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "may be written by others (mode {:o}), so it is not trusted to name the job's \
                 processes",
                st.st_mode & 0o7777
            )));
        }
        Ok(Private { fd })
    }

    /// Replaces its file `name` with `bytes` atomically (a temporary name, then a rename, both
    /// inside it), made durable when `durable`.
    pub fn write(&self, name: &str, bytes: &[u8], durable: bool) -> io::Result<()> {
        // Nobody else can make an entry here: a name of this process's own is enough.
        let tmp = format!(".{name}.{}.tmp", std::process::id());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let written = (|| {
            let mut file = File::from(rustix::fs::openat(
                &self.fd,
                &tmp,
                flags,
                Mode::from_raw_mode(0o644),
            )?);
            file.write_all(bytes)?;
            if durable {
                file.sync_all()?;
            }
            rustix::fs::renameat(&self.fd, &tmp, &self.fd, name)?;
            if durable {
                rustix::fs::fsync(&self.fd)?;
            }
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, rustix::fs::AtFlags::empty());
        }
        written
    }

    /// Its file `name`, if it is a regular file of at most a small file's size.
    fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let mut file = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("is not a regular file"));
        }
        let mut bytes = Vec::new();
        (&mut file)
            .take(SMALL_FILE_CAP + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > SMALL_FILE_CAP {
            return Err(io::Error::other("is larger than any record luzia writes"));
        }
        Ok(Some(bytes))
    }
}

/// The jobs root a job directory is in, whose owner is trusted.
fn root_of(dir: &Path) -> &Path {
    dir.parent().unwrap_or(dir)
}

/// The file `name` of the private directory at `path`; `Ok(None)` when either is absent.
fn read_at(path: &Path, root: &Path, name: &str) -> io::Result<Option<Vec<u8>>> {
    match Private::open(path, root) {
        Ok(private) => private.read(name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The file `name` of the job directory `dir`'s private directory, if `accept` takes its bytes
/// (a record of the job's own). In a job directory given away ([`given_away`]), a private
/// directory renamed within it is looked for among its subdirectories. `Ok(None)`: there is no
/// private directory (a job of the orchestrator's, or of an older luzia), or no such file yet.
pub fn read(dir: &Path, name: &str, accept: impl Fn(&[u8]) -> bool) -> io::Result<Option<Vec<u8>>> {
    let root = root_of(dir);
    let first = read_at(&dir.join(PRIVATE_DIR), root, name);
    if matches!(&first, Ok(Some(bytes)) if accept(bytes)) {
        return first;
    }
    if given_away(dir).is_some()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let moved = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != PRIVATE_DIR)
            .find_map(|e| {
                read_at(&e.path(), root, name)
                    .ok()
                    .flatten()
                    .filter(|b| accept(b))
            });
        if moved.is_some() {
            return Ok(moved);
        }
    }
    match first {
        Ok(Some(_)) => Err(io::Error::other("is not this job's record")),
        other => other,
    }
}

/// Why any file of the job directory `dir` may hold bytes luzia did not write: its owner is not
/// one luzia trusts (it was given to the agent's user), or anyone may write in it. `None` when
/// only trusted users may (a directory writable by its group is taken to be the operators').
pub fn given_away(dir: &Path) -> Option<String> {
    let md = std::fs::symlink_metadata(dir).ok()?;
    if !trusted_owner(md.uid(), root_of(dir)) {
        return Some(format!("belongs to uid {}", md.uid()));
    }
    (md.mode() & 0o002 != 0).then(|| "may be written by anyone".to_owned())
}

#[cfg(test)]
mod tests;
