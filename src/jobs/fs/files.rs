//! Opening files inside a job directory: never through a symbolic link (a job directory must
//! not be able to point luzia at `/etc/shadow`), only regular files, never blocking (a FIFO or a
//! device would stop the reader until someone writes to it), and never reading more than a
//! small file's cap.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::OFlags;
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
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            return Err(io::Error::other(
                "is a symbolic link; luzia does not follow links in a job directory",
            ));
        }
        // A socket cannot be opened at all: say what it is rather than "no such device".
        Err(e) if e.raw_os_error() == Some(Errno::NXIO.raw_os_error()) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(md) => not_regular(md.file_type()),
                Err(_) => e,
            });
        }
        Err(e) => return Err(e),
    };
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(not_regular(kind));
    }
    Ok(Some(file))
}

/// "is a FIFO, not a regular file": what a job file turned out to be instead.
fn not_regular(kind: FileType) -> io::Error {
    let what = if kind.is_fifo() {
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
    };
    io::Error::other(format!(
        "is {what}, not a regular file; luzia reads only regular files in a job directory"
    ))
}

/// meta.json carries the task, which may be long (a pasted log, a spec): it may be this large.
pub const META_FILE_CAP: u64 = 8 * 1024 * 1024;

/// Reads a small file whole; `Ok(None)` when it does not exist.
pub fn read_small(path: &Path) -> io::Result<Option<Vec<u8>>> {
    read_capped(path, SMALL_FILE_CAP)
}

/// Reads a file of at most `cap` bytes whole; `Ok(None)` when it does not exist.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = open_nofollow(path)? else {
        return Ok(None);
    };
    read_whole(file, cap).map(Some)
}

/// Reads a small file that names a process luzia may signal (`pid`, `process.json`), only if
/// it is owned by root, by the user luzia runs as, or by the owner of the jobs root `root`
/// (the orchestrator's account). An agent switched to a project's user owns its job directory
/// and could write such a file naming any process: luzia, perhaps running as root, must not
/// take its word for which process to signal.
pub fn read_trusted(path: &Path, root: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::MetadataExt;
    let Some(file) = open_nofollow(path)? else {
        return Ok(None);
    };
    let owner = file.metadata()?.uid();
    let trusted = owner == 0
        || owner == rustix::process::geteuid().as_raw()
        || std::fs::metadata(root).is_ok_and(|m| m.uid() == owner);
    if !trusted {
        return Err(io::Error::other(format!(
            "is owned by uid {owner}, not by root, the user luzia runs as or the jobs root's \
             owner, so it is not trusted to name the job's process"
        )));
    }
    read_whole(file, SMALL_FILE_CAP).map(Some)
}

fn read_whole(file: File, cap: u64) -> io::Result<Vec<u8>> {
    // Job files are a few hundred bytes: one read usually takes the whole file.
    let mut buf = Vec::with_capacity(4096);
    file.take(cap + 1).read_to_end(&mut buf)?;
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
