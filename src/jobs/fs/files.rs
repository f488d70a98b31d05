//! Opening files inside a job directory: never through a symbolic link (a job directory must
//! not be able to point luzia at `/etc/shadow`), and never reading more than a small file's cap.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The most a JSON or pid file may hold; anything larger is not what the protocol writes.
pub const SMALL_FILE_CAP: u64 = 1024 * 1024;

/// Opens `path` for reading, refusing a symbolic link as its last component.
/// `Ok(None)` when it does not exist.
pub fn open_nofollow(path: &Path) -> io::Result<Option<File>> {
    let flags = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => Err(
            io::Error::other("is a symbolic link; luzia does not follow links in a job directory"),
        ),
        Err(e) => Err(e),
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
    let Some(file) = open_nofollow(path)? else {
        return Ok(None);
    };
    // Job files are a few hundred bytes: one read usually takes the whole file.
    let mut buf = Vec::with_capacity(4096);
    file.take(cap + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "is larger than {} KiB, which no job file should be",
            cap / 1024
        )));
    }
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
