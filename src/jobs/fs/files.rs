//! Opening files inside a job directory: never through a symbolic link (a job directory must
//! not be able to point luzia at `/etc/shadow`), only regular files, never blocking (a FIFO or a
//! device would stop the reader until someone writes to it), and never reading more than a
//! small file's cap.

use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// The most a JSON or pid file may hold; anything larger is not what the protocol writes.
pub const SMALL_FILE_CAP: u64 = 1024 * 1024;

/// Opens `path` for reading, refusing a symbolic link as its last component and anything that
/// is not a regular file. `Ok(None)` when it does not exist.
///
/// The open itself never waits: `O_NONBLOCK` makes opening a FIFO return at once (instead of
/// waiting for a writer), and `O_NOCTTY` keeps a terminal device from becoming ours; the file
/// is then refused by what `fstat` says it is, before a byte is read.
pub fn open_nofollow(path: &Path) -> io::Result<Option<File>> {
    Ok(open_file(path, None)?.map(|(file, _)| file))
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

/// Opens `path` as [`open_nofollow`] says, or `at`'s name relative to its directory when given
/// (the same file), with what `fstat` said of it.
fn open_file(
    path: &Path,
    at: Option<(BorrowedFd<'_>, &str)>,
) -> io::Result<Option<(File, Metadata)>> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let opened = match at {
        Some((root, rel)) => rustix::fs::openat(root, rel, flags, Mode::empty()),
        None => rustix::fs::open(path, flags, Mode::empty()),
    };
    let file = match opened {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(io::Error::other(
                "is a symbolic link; luzia does not follow links in a job directory",
            ));
        }
        // A socket cannot be opened at all: say what it is rather than "no such device".
        Err(Errno::NXIO) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(md) => not_regular(md.file_type()),
                Err(_) => Errno::NXIO.into(),
            });
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

/// "is a FIFO, not a regular file": what a job file turned out to be instead.
fn not_regular(kind: FileType) -> io::Error {
    io::Error::other(format!(
        "is {}, not a regular file; luzia reads only regular files in a job directory",
        kind_name(kind)
    ))
}

/// "a FIFO", "a directory", ...: what a file that is not a regular one is.
fn kind_name(kind: FileType) -> &'static str {
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

/// Opens `path` to append to it (made, mode 0644 less the umask, when absent) with the same
/// refusals as [`open_nofollow`]: not through a symbolic link (a link planted in a job
/// directory must not let luzia write into the file it names), not a FIFO or device (the open
/// never waits for a reader), only a regular file, and only one with no other name (a hard link
/// to a file outside the job).
pub fn open_append(path: &Path) -> io::Result<File> {
    let flags = OFlags::WRONLY
        | OFlags::APPEND
        | OFlags::CREATE
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::NOCTTY
        | OFlags::CLOEXEC;
    let file = match rustix::fs::open(path, flags, Mode::from_raw_mode(0o644)) {
        Ok(fd) => File::from(fd),
        Err(Errno::LOOP) => {
            return Err(io::Error::other(
                "is a symbolic link; luzia does not follow links in a job directory",
            ));
        }
        // A FIFO nobody reads, or a socket: say what it is.
        Err(Errno::NXIO) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(md) => not_writable(md.file_type()),
                Err(_) => Errno::NXIO.into(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let md = file.metadata()?;
    if !md.file_type().is_file() {
        return Err(not_writable(md.file_type()));
    }
    if std::os::unix::fs::MetadataExt::nlink(&md) > 1 {
        return Err(io::Error::other(
            "has other names (hard links); luzia writes only to a job's own files",
        ));
    }
    Ok(file)
}

fn not_writable(kind: FileType) -> io::Error {
    io::Error::other(format!(
        "is {}, not a regular file; luzia writes only regular files in a job directory",
        kind_name(kind)
    ))
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
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_process_file_owned_by_someone_else_is_not_trusted() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED: changing a file's owner needs root");
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let pid = root.path().join("pid");
        std::fs::write(&pid, b"1\n").unwrap();
        assert_eq!(read_trusted(&pid, root.path()).unwrap().unwrap(), b"1\n");
        std::os::unix::fs::chown(&pid, Some(54321), None).unwrap();
        let err = read_trusted(&pid, root.path()).unwrap_err().to_string();
        assert!(
            err.contains("uid 54321") && err.contains("not trusted"),
            "{err}"
        );
        // The jobs root's owner is trusted: the orchestrator's own account.
        std::os::unix::fs::chown(root.path(), Some(54321), None).unwrap();
        assert!(read_trusted(&pid, root.path()).is_ok());
    }

    #[test]
    fn refuses_links_and_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"secret").unwrap();
        let link = dir.path().join("meta.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = read_small(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");

        let big = dir.path().join("big");
        std::fs::write(&big, vec![b' '; SMALL_FILE_CAP as usize + 1]).unwrap();
        assert!(read_small(&big).is_err());

        assert_eq!(read_small(&dir.path().join("absent")).unwrap(), None);
        assert_eq!(read_small(&target).unwrap().unwrap(), b"secret");
    }

    #[test]
    fn a_file_as_long_as_its_cap_is_read_whole_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (len, ok) in [(0, true), (1, true), (4096, true), (10_000, false)] {
            let path = dir.path().join("f");
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            let cap = if ok { len as u64 } else { len as u64 - 1 };
            match read_capped(&path, cap) {
                Ok(Some(read)) => assert!(ok && read == bytes, "{len}"),
                Ok(None) => panic!("{len}: not found"),
                Err(e) => assert!(
                    !ok && e.to_string().contains("is larger than"),
                    "{len}: {e}"
                ),
            }
        }
    }

    /// Opened relative to the jobs root, a job's files read as they read by their paths: the
    /// same bytes, the same refusals, the same absence.
    #[test]
    fn files_opened_from_the_root_read_as_by_their_paths() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("120000-abcd");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), b"{}").unwrap();
        std::fs::write(root.path().join("elsewhere"), b"secret").unwrap();
        std::os::unix::fs::symlink(root.path().join("elsewhere"), dir.join("stop.json")).unwrap();
        mkfifo(&dir.join("progress.json"));
        std::fs::create_dir(dir.join("output.log")).unwrap();
        let fd = open_root(root.path()).unwrap();
        let fd = Some(fd);
        let at = JobDir::in_root(&dir, borrow(&fd), "120000-abcd");
        let by_path = JobDir::new(&dir);
        let text = |r: io::Result<Option<Vec<u8>>>| format!("{r:?}");
        for name in [
            "meta.json",
            "stop.json",
            "progress.json",
            "output.log",
            "absent",
        ] {
            let from_root = text(at.read_small(name));
            assert_eq!(from_root, text(by_path.read_small(name)), "{name}");
            assert_eq!(from_root, text(read_small(&dir.join(name))), "{name}");
        }
        assert_eq!(at.read_small("meta.json").unwrap().unwrap(), b"{}");
        assert!(at.read_small("absent").unwrap().is_none());
        let err = at.read_small("stop.json").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let (_, md) = at.open("meta.json").unwrap().unwrap();
        assert_eq!(md.len(), 2);
    }

    /// Runs `f` on a thread of its own and fails if it has not returned within five seconds:
    /// a read that blocks must fail the test, not hang the suite.
    pub(crate) fn returns<T: Send + 'static>(
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{what} blocked"))
    }

    pub(crate) fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    #[test]
    fn refuses_a_fifo_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("meta.json");
        mkfifo(&fifo);
        for (what, read) in [("open_nofollow", 0), ("read_small", 1), ("read_capped", 2)] {
            let path = fifo.clone();
            let err = returns(what, move || match read {
                0 => open_nofollow(&path).map(|_| ()),
                1 => read_small(&path).map(|_| ()),
                _ => read_capped(&path, META_FILE_CAP).map(|_| ()),
            })
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("is a FIFO, not a regular file"),
                "{what}: {err}"
            );
        }
    }

    /// A job file is appended to (kill's exit line) only if it is a regular file of its own:
    /// never through a link, never a FIFO (which would block), never a second name of another
    /// file.
    #[test]
    fn appends_only_to_a_regular_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"root's own\n").unwrap();
        let log = dir.path().join("output.log");
        std::os::unix::fs::symlink(&victim, &log).unwrap();
        let err = open_append(&log).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink(dir.path().join("absent"), &log).unwrap();
        assert!(open_append(&log).is_err());
        assert!(
            !dir.path().join("absent").exists(),
            "no file made through a link"
        );

        std::fs::remove_file(&log).unwrap();
        std::fs::hard_link(&victim, &log).unwrap();
        let err = open_append(&log).unwrap_err().to_string();
        assert!(err.contains("hard links"), "{err}");

        std::fs::remove_file(&log).unwrap();
        mkfifo(&log);
        let path = log.clone();
        let err = returns("appending to a FIFO", move || {
            open_append(&path).map(|_| ())
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("is a FIFO"), "{err}");
        // With a reader, the open itself succeeds: the file is refused by what it is.
        let reader = open_nofollow(&log);
        assert!(reader.is_err(), "a FIFO is not read either");
        let _reading = std::fs::File::from(
            rustix::fs::open(&log, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()).unwrap(),
        );
        let path = log.clone();
        let err = returns("appending to a FIFO being read", move || {
            open_append(&path).map(|_| ())
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("is a FIFO"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's own\n");

        std::fs::remove_file(&log).unwrap();
        use std::io::Write;
        open_append(&log).unwrap().write_all(b"a").unwrap();
        open_append(&log).unwrap().write_all(b"b").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"ab");
    }

    #[test]
    fn refuses_directories_and_sockets_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("output.log");
        std::fs::create_dir(&sub).unwrap();
        let err = read_small(&sub).unwrap_err().to_string();
        assert!(err.contains("is a directory, not a regular file"), "{err}");

        let sock = dir.path().join("pid");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let err = returns("opening a socket", move || read_small(&sock))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a socket, not a regular file"), "{err}");
    }
}
