//! Opening files inside a job directory, for reading or for writing: never through a symbolic
//! link (a job directory must not be able to point luzia at `/etc/shadow`), only regular files,
//! never blocking (a FIFO or a device would stop luzia until someone reads or writes at its
//! other end), and never reading more than a small file's cap. Every open of a job file goes
//! through here: an agent owns its job directory and may have replaced any file in it.
//!
//! The open itself never waits: `O_NONBLOCK` makes opening a FIFO return at once (instead of
//! waiting for a writer, or a reader), and `O_NOCTTY` keeps a terminal device from becoming
//! ours; the file is then refused by what `fstat` says it is, before a byte is read or written.
//! A file opened for writing must also have one name only: a hard link the agent made to a file
//! of someone else's would otherwise be written through like a symbolic one.

use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// The most a JSON or pid file may hold; anything larger is not what the protocol writes.
pub const SMALL_FILE_CAP: u64 = 1024 * 1024;

/// Opens `path` for reading, refusing a symbolic link as its last component and anything that
/// is not a regular file. `Ok(None)` when it does not exist. The descriptor is blocking again,
/// as any regular file's is, so that it can be handed to another program (an agent's stdin).
pub fn open_nofollow(path: &Path) -> io::Result<Option<File>> {
    let Some((file, _)) = open_file(path, None)? else {
        return Ok(None);
    };
    blocking(&file)?;
    Ok(Some(file))
}

/// How [`open_write`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Appended to (`O_APPEND`); made when `create` says so and it is missing.
    Append { create: bool },
    /// Written in place, where the caller puts its writes; it must exist.
    InPlace,
    /// Emptied, or made when missing. Emptied only once it is known to be a regular file of
    /// one name: `O_TRUNC` would empty whatever the name was before anything is checked.
    Truncate,
    /// Made anew: refused when anything at all has the name (`O_EXCL`), a link included.
    New,
}

/// Opens `path` for writing as `how` says, made with `mode` (less the umask) when it is made,
/// with the rule of reading: no symbolic link as its last component, no waiting, a regular
/// file only, and of one name only. The descriptor is blocking again once checked, so that it
/// can be an agent's stdout.
pub fn open_write(path: &Path, how: Write, mode: u32) -> io::Result<File> {
    let flags = OFlags::WRONLY
        | match how {
            Write::Append { create: true } => OFlags::APPEND | OFlags::CREATE,
            Write::Append { create: false } => OFlags::APPEND,
            Write::InPlace => OFlags::empty(),
            Write::Truncate => OFlags::CREATE,
            Write::New => OFlags::CREATE | OFlags::EXCL,
        };
    let opened = open_checked(path, None, flags, Mode::from_raw_mode(mode), Links::Refused)?;
    let (file, md) = opened.ok_or_else(|| io::Error::from(Errno::NOENT))?;
    if md.nlink() > 1 {
        return Err(io::Error::other(format!(
            "has {} names (hard links); luzia writes only to a file of one name in a job \
             directory",
            md.nlink()
        )));
    }
    blocking(&file)?;
    if how == Write::Truncate {
        file.set_len(0)?;
    }
    Ok(file)
}

/// [`open_write`] appending, made (0644 less the umask) when missing: the exit line, the
/// raw stream, the logs a job keeps growing.
pub fn open_append(path: &Path) -> io::Result<File> {
    open_write(path, Write::Append { create: true }, 0o644)
}

/// Opens a new file of no name in the directory `dir` (`O_TMPFILE`), for writing, made with
/// `mode`: its bytes are written whole before it is given a name (`publish`), so a process
/// stopped by a signal at any moment leaves nothing behind. `Ok(None)` where the file system
/// cannot make one.
pub fn open_unnamed(dir: &Path, mode: u32) -> io::Result<Option<File>> {
    let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags, Mode::from_raw_mode(mode)) {
        Ok(fd) => Ok(Some(File::from(fd))),
        // No O_TMPFILE here: the file system (EOPNOTSUPP) or the kernel (EISDIR, EINVAL).
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens the directory `path` to sync it or lock it: a directory only (`O_DIRECTORY` refuses a
/// FIFO before opening it, so this never blocks either), never a link to one.
pub fn open_dir(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
}

/// Reads a file of at most `cap` bytes whole, following a symbolic link (but not a loop of
/// them), refusing anything but a regular file, never blocking. For a file the operator names
/// outside any job directory, the config: there a link is the operator's own (a dotfiles
/// manager's), which a job file's never is. `Ok(None)` when it does not exist.
pub fn read_following(path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let flags = OFlags::RDONLY;
    open_checked(path, None, flags, Mode::empty(), Links::Followed)?
        .map(|(file, md)| read_whole(file, md.len(), cap))
        .transpose()
}

/// What a path that is not a directory is, said so that a person knows what to fix: "does not
/// exist", "is a file, not a directory", "is a loop of symbolic links". `None` when it is a
/// directory (links followed).
pub fn not_a_directory(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(md) if md.is_dir() => None,
        Ok(md) if md.is_file() => Some("is a file, not a directory".into()),
        Ok(md) => Some(format!("is {}, not a directory", kind_of(md.file_type()))),
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            Some(LINK_LOOP.to_owned())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A dangling link names what is missing: its target.
            Some(std::fs::read_link(path).map_or_else(
                |_| "does not exist".to_owned(),
                |to| {
                    format!(
                        "is a symbolic link to {}, which does not exist",
                        to.display()
                    )
                },
            ))
        }
        Err(e) => Some(format!("cannot be looked at: {e}")),
    }
}

const LINK_LOOP: &str = "is a loop of symbolic links (or a chain of more than 40)";

/// Makes an open regular file's descriptor blocking again: `O_NONBLOCK` was for the open.
fn blocking(file: &File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    if flags.contains(OFlags::NONBLOCK) {
        rustix::fs::fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
    }
    Ok(())
}

/// A job directory whose files are read: by their paths, or, when a scan has opened the jobs
/// root once, relative to it (`ID/meta.json`). The kernel then looks up two names per file
/// instead of every component of the path again: at 100,000 jobs the lookups were a third of
/// a scan's time.
#[derive(Clone, Copy, Debug)]
pub struct JobDir<'a> {
    /// The directory: what a problem names, and what its files are opened by without `at`.
    pub path: &'a Path,
    /// The jobs root opened, and the directory's name in it.
    at: Option<(BorrowedFd<'a>, &'a str)>,
}

impl<'a> JobDir<'a> {
    pub fn new(path: &'a Path) -> JobDir<'a> {
        JobDir { path, at: None }
    }

    /// The directory `name` of the jobs root `root` (opened by [`open_root`]), at `path`.
    pub fn in_root(path: &'a Path, root: Option<BorrowedFd<'a>>, name: &'a str) -> JobDir<'a> {
        JobDir {
            path,
            at: root.map(|fd| (fd, name)),
        }
    }

    /// Opens the file `name` as [`open_nofollow`] does, with what `fstat` said of it.
    pub fn open(&self, name: &str) -> io::Result<Option<(File, Metadata)>> {
        let rel = self.at.map(|(fd, dir)| (fd, format!("{dir}/{name}")));
        let at = rel.as_ref().map(|(fd, rel)| (*fd, rel.as_str()));
        open_file(&self.path.join(name), at)
    }

    /// [`read_capped`] of the file `name`.
    pub fn read_capped(&self, name: &str, cap: u64) -> io::Result<Option<Vec<u8>>> {
        Ok(self
            .read_capped_with(name, cap, |_| ())?
            .map(|(bytes, ())| bytes))
    }

    /// [`read_capped`] of the file `name`, with what `before` says of the open file before a
    /// byte of it is read.
    pub fn read_capped_with<T>(
        &self,
        name: &str,
        cap: u64,
        before: impl FnOnce(&File) -> T,
    ) -> io::Result<Option<(Vec<u8>, T)>> {
        let Some((file, md)) = self.open(name)? else {
            return Ok(None);
        };
        let said = before(&file);
        read_whole(file, md.len(), cap).map(|bytes| Some((bytes, said)))
    }

    /// [`read_small`] of the file `name`.
    pub fn read_small(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.read_capped(name, SMALL_FILE_CAP)
    }
}

/// Opens `path` for reading as [`open_nofollow`] says, or `at`'s name relative to its directory
/// when given (the same file), with what `fstat` said of it.
fn open_file(
    path: &Path,
    at: Option<(BorrowedFd<'_>, &str)>,
) -> io::Result<Option<(File, Metadata)>> {
    open_checked(path, at, OFlags::RDONLY, Mode::empty(), Links::Refused)
}

/// Whether the last component of a path may be a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    Refused,
    Followed,
}

/// The one open: `flags` and the rule's own (`O_NONBLOCK`, `O_NOCTTY`, `O_CLOEXEC`, and
/// `O_NOFOLLOW` unless links are followed), then a regular file or an error saying what it is
/// instead. `Ok(None)` when nothing has the name and nothing was to be made.
fn open_checked(
    path: &Path,
    at: Option<(BorrowedFd<'_>, &str)>,
    flags: OFlags,
    mode: Mode,
    links: Links,
) -> io::Result<Option<(File, Metadata)>> {
    let mut flags = flags | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if links == Links::Refused {
        flags |= OFlags::NOFOLLOW;
    }
    let opened = match at {
        Some((root, rel)) => rustix::fs::openat(root, rel, flags, mode),
        None => rustix::fs::open(path, flags, mode),
    };
    let what_it_is = || {
        let md = match links {
            Links::Refused => std::fs::symlink_metadata(path),
            Links::Followed => std::fs::metadata(path),
        };
        md.map(|md| not_regular(md.file_type()))
    };
    let file = match opened {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT) if !flags.contains(OFlags::CREATE) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(io::Error::other(match links {
                Links::Refused => {
                    "is a symbolic link; luzia does not follow links in a job directory"
                }
                Links::Followed => LINK_LOOP,
            }));
        }
        // A socket cannot be opened at all, nor a FIFO for writing that nobody reads, and a
        // directory cannot be written: say what it is rather than "no such device".
        Err(e @ (Errno::NXIO | Errno::ISDIR)) => return Err(what_it_is().unwrap_or(e.into())),
        // A lease another process holds on the file: opening would wait for it to let go.
        Err(Errno::WOULDBLOCK) => {
            return Err(io::Error::other(
                "is leased by another process, which would make luzia wait",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let md = file.metadata()?;
    if !md.file_type().is_file() {
        return Err(not_regular(md.file_type()));
    }
    Ok(Some((file, md)))
}

/// Opens the directory `path` for opening files relative to it ([`JobDir::in_root`]).
pub fn open_root(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path, flags, Mode::empty())?)
}

/// The descriptor of an opened root, to lend to [`JobDir::in_root`].
pub fn borrow(fd: &Option<OwnedFd>) -> Option<BorrowedFd<'_>> {
    fd.as_ref().map(AsFd::as_fd)
}

/// "is a FIFO, not a regular file": what a file turned out to be instead.
fn not_regular(kind: FileType) -> io::Error {
    io::Error::other(format!("is {}, not a regular file", kind_of(kind)))
}

/// "a FIFO", "a directory": what kind of file `kind` is, for a person.
fn kind_of(kind: FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "something else"
    }
}

/// meta.json carries the task, which may be long (a pasted log, a spec): it may be this large.
pub const META_FILE_CAP: u64 = 8 * 1024 * 1024;

/// Reads a small file whole; `Ok(None)` when it does not exist.
pub fn read_small(path: &Path) -> io::Result<Option<Vec<u8>>> {
    read_capped(path, SMALL_FILE_CAP)
}

/// Reads a file of at most `cap` bytes whole; `Ok(None)` when it does not exist.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    open_file(path, None)?
        .map(|(file, md)| read_whole(file, md.len(), cap))
        .transpose()
}

/// Reads a small file that names a process luzia may signal (`pid`, `process.json`), only if
/// it is owned by root, by the user luzia runs as, or by the owner of the jobs root `root`
/// (the orchestrator's account). An agent switched to a project's user owns its job directory
/// and could write such a file naming any process: luzia, perhaps running as root, must not
/// take its word for which process to signal.
pub fn read_trusted(path: &Path, root: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::MetadataExt;
    let Some((file, md)) = open_file(path, None)? else {
        return Ok(None);
    };
    let owner = md.uid();
    if !trusted_owner(owner, root) {
        return Err(io::Error::other(format!(
            "is owned by uid {owner}, not by root, the user luzia runs as or the jobs root's \
             owner, so it is not trusted to name the job's process"
        )));
    }
    read_whole(file, md.len(), SMALL_FILE_CAP).map(Some)
}

/// Whether files owned by `owner` may name a process for luzia to signal: root, the user luzia
/// runs as, or the owner of the jobs root `root` (the orchestrator's account). Owner alone is
/// not enough where someone else may rename into the file's directory (see `private`).
pub fn trusted_owner(owner: u32, root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    owner == 0
        || owner == rustix::process::geteuid().as_raw()
        || std::fs::metadata(root).is_ok_and(|m| m.uid() == owner)
}

/// Reads `file`, `len` bytes long by `fstat`, whole. One `read` of `len` and a byte more takes
/// the whole file when it is as long as `fstat` said (a short read of a regular file is its
/// end); only a file that changed meanwhile is read on until a read returns nothing.
fn read_whole(mut file: File, len: u64, cap: u64) -> io::Result<Vec<u8>> {
    let want = len.min(cap) + 1;
    let mut buf = vec![0u8; usize::try_from(want).unwrap_or(usize::MAX)];
    let n = loop {
        match file.read(&mut buf) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    buf.truncate(n);
    if n as u64 != len || n as u64 == want {
        file.take(cap + 1 - n as u64).read_to_end(&mut buf)?;
    }
    if buf.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "is larger than {} KiB, which no job file should be",
            cap / 1024
        )));
    }
    Ok(buf)
}

#[cfg(test)]
pub(crate) mod tests;
