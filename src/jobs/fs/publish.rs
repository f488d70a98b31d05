//! Writing into a job directory safely. Every file is written under a temporary name in the same
//! directory, fsynced, and only then given its real name, so no reader ever sees half a file.
//!
//! An answer or a decision is *published exactly once*: the temporary file is `link()`ed to the
//! final name, which fails with EEXIST if anyone got there first. (`rename()` would let the last
//! writer win silently; `O_EXCL` on the final name would let a reader see half a file.)
//!
//! Taking a published file away again (a late answer's publisher removing its own, a stale one
//! set aside) is a read, a check and a removal: luzia's processes do it holding the job
//! directory's lock ([`locked`]), so two of them never interleave and one never removes what the
//! other just published. Publishing itself takes no lock: `link()` is atomic on its own, and a
//! publisher held up mid-way (a stopped process) must not hold everyone else up.

use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;
use rustix::io::Errno;

use crate::jobs::fs::files::{self, open_dir, open_unnamed, open_write, read_small};

/// What happened to an exactly-once publication.
#[derive(Debug, PartialEq, Eq)]
pub enum Published {
    /// Ours is the one.
    Won,
    /// Someone published first; these are the bytes that stand (`None`: the file went away
    /// between our `link()` and the read, taken by whoever consumes it).
    Lost(Option<Vec<u8>>),
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary name beside `name`, unique across processes and threads. It starts with a dot, so
/// it is never a job file and never a job id.
fn temp_path(dir: &Path, name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    dir.join(format!(".{name}.{}.{n}.{nanos}.tmp", std::process::id()))
}

/// A new file holding its bytes whole, not yet under its name.
///
/// Where the file system can, it has no name at all (`O_TMPFILE`) until it is linked in: a
/// process stopped by a signal while writing it (the operator's Ctrl-C right after Enter)
/// leaves nothing behind, whatever the signal, with no cleanup to run. Elsewhere it has a
/// temporary name, removed when it is done with.
enum Temp {
    Unnamed(fs::File),
    Named(PathBuf),
}

impl Temp {
    /// Writes `bytes` to a new file in `dir`, made durable when `sync`.
    fn write(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> io::Result<Temp> {
        let fill = |mut f: &fs::File| {
            f.write_all(bytes)?;
            if sync { f.sync_all() } else { Ok(()) }
        };
        if proc_fds()
            && let Some(file) = open_unnamed(dir, 0o644)?
        {
            fill(&file)?;
            return Ok(Temp::Unnamed(file));
        }
        let tmp = temp_path(dir, name);
        let filled = open_write(&tmp, files::Write::New, 0o644).and_then(|f| fill(&f));
        match filled {
            Ok(()) => Ok(Temp::Named(tmp)),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Gives the file the name `to`, which must be free (`link()`: EEXIST when it is not).
    fn link(&self, to: &Path) -> io::Result<()> {
        match self {
            // The descriptor's file through /proc: linking it by `AT_EMPTY_PATH` would need a
            // capability an agent's user has not.
            Temp::Unnamed(file) => Ok(rustix::fs::linkat(
                rustix::fs::CWD,
                format!("/proc/self/fd/{}", file.as_raw_fd()),
                rustix::fs::CWD,
                to,
                rustix::fs::AtFlags::SYMLINK_FOLLOW,
            )?),
            Temp::Named(tmp) => fs::hard_link(tmp, to),
        }
    }

    /// Gives the file the name `to` in place of whatever has it: readers see the old file or
    /// the new one. An unnamed file takes a temporary name for the moment between its `link()`
    /// and the `rename()`: no system call renames a descriptor.
    fn replace(self, dir: &Path, name: &str) -> io::Result<()> {
        let tmp = match &self {
            Temp::Named(tmp) => tmp.clone(),
            Temp::Unnamed(_) => {
                let tmp = temp_path(dir, name);
                self.link(&tmp)?;
                tmp
            }
        };
        let renamed = fs::rename(&tmp, dir.join(name));
        if renamed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        renamed
    }

    /// Removes the temporary name, if it has one.
    fn discard(self) {
        if let Temp::Named(tmp) = self {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Whether a descriptor can be linked by its /proc name: /proc is mounted (it may not be in a
/// bare chroot or container).
fn proc_fds() -> bool {
    static MOUNTED: OnceLock<bool> = OnceLock::new();
    *MOUNTED.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Makes the directory entry itself durable (the new name survives a crash).
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = open_dir(dir) {
        let _ = d.sync_all();
    }
}

/// Creates `dir/name` atomically (a new file, renamed) without making it durable: for files
/// a crash may lose as a whole, such as a job being created (`sync_dir` once when all are in).
pub fn write_unsynced(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    Temp::write(dir, name, bytes, false)?.replace(dir, name)
}

/// Replaces `dir/name` atomically: readers see the old file or the new one, never a mix.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    Temp::write(dir, name, bytes, true)?.replace(dir, name)?;
    sync_dir(dir);
    Ok(())
}

/// Creates `dir/name` with `bytes` unless it exists; never overwrites, never shows half a file.
pub fn publish_once(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<Published> {
    let temp = Temp::write(dir, name, bytes, true)?;
    let linked = temp.link(&dir.join(name));
    temp.discard();
    match linked {
        Ok(()) => {
            sync_dir(dir);
            Ok(Published::Won)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Ok(Published::Lost(read_small(&dir.join(name))?))
        }
        Err(e) => Err(e),
    }
}

/// How long [`locked`] waits for another luzia process to let go of a job directory. The lock
/// is held for a read and a removal, never across a wait: only a stopped process holds it long.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Runs `f` holding the job directory's exclusive lock (`flock` on the directory itself, so the
/// lock leaves no file behind and needs no write permission). On a file system that has no
/// such locks (some network file systems), `f` runs unlocked: every step is still atomic on
/// its own, and only two luzia processes removing files at the same instant could interleave.
pub fn locked<T>(dir: &Path, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let handle = open_dir(dir)?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(Errno::WOULDBLOCK) => {
                return Err(io::Error::other(format!(
                    "another luzia process has held the lock on {} for {}s: is one stopped?",
                    dir.display(),
                    LOCK_WAIT.as_secs()
                )));
            }
            Err(Errno::INTR) => {}
            // No locks here (ENOLCK, EOPNOTSUPP, EBADF on some network file systems).
            Err(_) => return f(),
        }
    }
    // Closing the descriptor (when `handle` drops) releases the lock.
    f()
}

/// Reads meta.json, lets `change` edit it, and replaces it atomically when `change` says it
/// changed something, keeping every other field. Under the directory's lock, which every
/// rewrite of meta.json takes, so that two writers (the supervisor recording a run, a reply
/// linking itself) never lose each other's fields. Never follows a link: the directory may be
/// the agent's user's.
pub fn update_meta(
    dir: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> io::Result<()> {
    rewrite_meta(dir, true, change)
}

/// [`update_meta`] without making the new meta.json durable: for what a crash may lose, as the
/// job it describes would be lost with it (a running job's progress through its checks).
pub fn update_meta_unsynced(
    dir: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> io::Result<()> {
    rewrite_meta(dir, false, change)
}

fn rewrite_meta(
    dir: &Path,
    durable: bool,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> io::Result<()> {
    use crate::jobs::fs::files::{META_FILE_CAP, read_capped};
    use crate::jobs::fs::names::META_FILE;
    locked(dir, || {
        let bytes = read_capped(&dir.join(META_FILE), META_FILE_CAP)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "meta.json is missing"))?;
        let Ok(serde_json::Value::Object(mut meta)) = serde_json::from_slice(&bytes) else {
            return Err(io::Error::other("meta.json is not a JSON object"));
        };
        if !change(&mut meta) {
            return Ok(());
        }
        let bytes = serde_json::to_vec_pretty(&serde_json::Value::Object(meta))
            .map_err(io::Error::other)?;
        match durable {
            true => write_atomic(dir, META_FILE, &bytes),
            false => write_unsynced(dir, META_FILE, &bytes),
        }
    })
}

/// Appends one line to `dir/name` in a single write, so concurrent appenders never interleave
/// within a line. Never through a link, never to a FIFO (see `files`): the file may be the
/// agent's to replace. An error names the file.
pub fn append_line(dir: &Path, name: &str, line: &str) -> io::Result<()> {
    let mut buf = line.trim_end_matches('\n').to_owned();
    buf.push('\n');
    let path = dir.join(name);
    let appended = files::open_append(&path)
        .and_then(|mut f| f.write_all(buf.as_bytes()).and_then(|()| f.sync_data()));
    appended.map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot append to {}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn first_publisher_wins_and_nothing_is_overwritten() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            publish_once(d.path(), "response.json", b"{\"a\":1}").unwrap(),
            Published::Won
        );
        assert_eq!(
            publish_once(d.path(), "response.json", b"{\"a\":2}").unwrap(),
            Published::Lost(Some(b"{\"a\":1}".to_vec()))
        );
        assert_eq!(
            fs::read(d.path().join("response.json")).unwrap(),
            b"{\"a\":1}"
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn threads_racing_leave_exactly_one_winner() {
        for _ in 0..50 {
            let d = tempfile::tempdir().unwrap();
            let winners: usize = std::thread::scope(|s| {
                let hs: Vec<_> = (0..8)
                    .map(|i| {
                        let dir = d.path();
                        s.spawn(move || {
                            publish_once(dir, "approved.json", format!("{i}").as_bytes()).unwrap()
                                == Published::Won
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
            });
            assert_eq!(winners, 1);
            assert!(leftovers(d.path()).is_empty());
        }
    }

    #[test]
    fn atomic_replace_and_append() {
        let d = tempfile::tempdir().unwrap();
        write_atomic(d.path(), "progress.json", b"1").unwrap();
        write_atomic(d.path(), "progress.json", b"22").unwrap();
        assert_eq!(fs::read(d.path().join("progress.json")).unwrap(), b"22");
        append_line(d.path(), "history.jsonl", "{\"x\":1}").unwrap();
        append_line(d.path(), "history.jsonl", "{\"x\":2}\n").unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("history.jsonl")).unwrap(),
            "{\"x\":1}\n{\"x\":2}\n"
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn the_lock_lets_one_holder_in_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let inside = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..20 {
                        locked(d.path(), || {
                            let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1, "never two holders at once");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0, "no lock file");
        assert!(locked(&d.path().join("gone"), || Ok(())).is_err());
    }

    /// A planted link is replaced by an atomic write, never written through, and refused by an
    /// append, which names the file; a FIFO is refused without waiting for a reader.
    #[test]
    fn planted_links_and_fifos_are_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, b"secret").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("progress.json")).unwrap();
        write_atomic(d.path(), "progress.json", b"{}").unwrap();
        assert!(
            fs::symlink_metadata(d.path().join("progress.json"))
                .unwrap()
                .is_file()
        );

        std::os::unix::fs::symlink(&victim, d.path().join("history.jsonl")).unwrap();
        let err = append_line(d.path(), "history.jsonl", "{}")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("history.jsonl") && err.contains("symbolic link"),
            "{err}"
        );
        assert_eq!(fs::read(&victim).unwrap(), b"secret");

        fs::remove_file(d.path().join("history.jsonl")).unwrap();
        crate::jobs::fs::files::tests::mkfifo(&d.path().join("history.jsonl"));
        let dir = d.path().to_owned();
        let err = crate::jobs::fs::files::tests::returns("an append to a FIFO", move || {
            append_line(&dir, "history.jsonl", "{}")
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("is a FIFO"), "{err}");
        assert!(leftovers(d.path()).is_empty());
    }

    /// Where the file system makes unnamed files, a publication never shows a temporary name,
    /// so none can be left by a signal at any moment.
    #[test]
    fn a_publication_shows_no_temporary_name() {
        let d = tempfile::tempdir().unwrap();
        if !proc_fds() || files::open_unnamed(d.path(), 0o644).unwrap().is_none() {
            eprintln!("SKIPPED: no O_TMPFILE or no /proc here: temporary names are used");
            return;
        }
        let temp = Temp::write(d.path(), "response.json", b"{}", false).unwrap();
        assert!(matches!(temp, Temp::Unnamed(_)));
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            0,
            "nothing named yet"
        );
        temp.link(&d.path().join("response.json")).unwrap();
        assert_eq!(fs::read(d.path().join("response.json")).unwrap(), b"{}");
        let again = Temp::write(d.path(), "response.json", b"[]", false).unwrap();
        let err = again.link(&d.path().join("response.json")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_missing_directory_is_an_error_that_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("gone");
        assert!(publish_once(&gone, "response.json", b"x").is_err());
        assert!(write_atomic(&gone, "progress.json", b"x").is_err());
    }
}
