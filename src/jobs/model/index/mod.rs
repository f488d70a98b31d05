//! The index of settled jobs: what reading each finished job took from its files, kept in the
//! user's cache directory so that the next full read of a large root need not open them again.
//!
//! A finished job never changes on its own, yet reading it costs about ten system calls (open,
//! `fstat`, read and close meta.json and output.log's end, and two opens that fail). An entry
//! holds what that reading took (meta.json's bytes, output.log's exit code, the absence of
//! progress.json and stop.json) and the **stamp** of each file and of the directory when it was
//! read: device, inode, size, mtime and ctime. It is used only while every stamp still matches
//! what `statx` says now, which costs one call per file and no open:
//!
//! - a file rewritten in place changes its size, mtime or ctime; one replaced by a rename is
//!   another inode, and the rename changes the directory's mtime;
//! - a file created or removed (a stop recorded, progress.json written late) changes the
//!   directory's mtime;
//! - a directory removed and made again under the same id is another inode.
//!
//! The index is never trusted over the disk: an entry whose stamps do not all match is read from
//! the disk as if there were none, and the bytes an entry holds are parsed by the same code as
//! the files' (`job::reader`), so a job read through the index is the job its files say. A
//! stamp is taken before its file's bytes are read, and a job is taken in only when its last
//! change (every ctime) is [`SETTLE_SECS`] old: a write during the reading would then stamp the
//! file with a later ctime, so the entry could never match again. Kernel timestamps are coarse
//! (a tick of a few ms), which is why a fresh change is never taken in.
//!
//! Only a cockpit that may write refreshes it ([`build`]); a read-only cockpit and the listings
//! only read it. A file that is torn, foreign or of another format is ignored and rebuilt.

mod build;
mod format;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rustix::fs::{AtFlags, FileType, Statx, StatxFlags};

pub use build::{Refreshed, refresh};
pub use format::Index;

/// A change younger than this is not taken in (see the module's comment).
pub const SETTLE_SECS: i64 = 5;

/// Where the index of the jobs root `root` is kept under the user's cache directory `cache`:
/// one file per root, named by a hash of its canonical path (the file also holds the path, and
/// one naming another root is ignored).
pub fn path_for(cache: &Path, root: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let hash = format::checksum(canonical.as_os_str().as_encoded_bytes());
    cache
        .join("luzia")
        .join("index")
        .join(format!("{hash:016x}"))
}

/// What an inode said when a file was read: a write, a rename over it or a new file in its place
/// changes one of these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub dev: (u32, u32),
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, u32),
    pub ctime: (i64, u32),
}

/// What `statx` must say for a stamp to be taken: a file system that cannot say when an inode
/// changed cannot be indexed.
const STAMP_FIELDS: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME);

impl Stamp {
    fn from_statx(st: &Statx) -> Option<(Stamp, FileType)> {
        if !StatxFlags::from_bits_retain(st.stx_mask).contains(STAMP_FIELDS) {
            return None;
        }
        let stamp = Stamp {
            dev: (st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            size: st.stx_size,
            mtime: (st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec),
            ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
        };
        Some((stamp, FileType::from_raw_mode(u32::from(st.stx_mode))))
    }

    /// The stamp of `rel` under the directory `at`, never through a link: `None` when it cannot
    /// be taken (gone, unreadable, no `statx`).
    pub fn at(at: BorrowedFd<'_>, rel: &str) -> Option<(Stamp, FileType)> {
        let st = rustix::fs::statx(at, rel, AtFlags::SYMLINK_NOFOLLOW, STAMP_FIELDS).ok()?;
        Stamp::from_statx(&st)
    }

    /// The stamp of an open file.
    pub fn of(file: &std::fs::File) -> Option<Stamp> {
        let st = rustix::fs::statx(file, "", AtFlags::EMPTY_PATH, STAMP_FIELDS).ok()?;
        Stamp::from_statx(&st).map(|(s, _)| s)
    }

    /// The file's mtime, as `Metadata::modified` gives it.
    pub fn modified(&self) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(self.mtime.0, self.mtime.1)
    }

    /// Whether the inode last changed at least [`SETTLE_SECS`] before `now`.
    fn settled_by(&self, now: DateTime<Utc>) -> bool {
        self.ctime.0 <= now.timestamp() - SETTLE_SECS
    }
}

/// The files an index entry may hold, by their one-byte tag in the file.
const FILES: [&str; 4] = [
    crate::jobs::fs::names::META_FILE,
    crate::jobs::fs::names::LOG_FILE,
    crate::jobs::fs::names::PROGRESS_FILE,
    crate::jobs::fs::names::STOP_FILE,
];

/// A file of a job directory as one reading of the job took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken<'a> {
    /// Asked for and not there: creating it changes the directory's stamp.
    Absent,
    /// Read whole.
    Bytes { stamp: Stamp, bytes: Cow<'a, [u8]> },
    /// output.log, of which only the end is read: its exit line's code.
    LogEnd {
        stamp: Stamp,
        exit_code: Option<i32>,
    },
}

impl Taken<'_> {
    fn stamp(&self) -> Option<&Stamp> {
        match self {
            Taken::Absent => None,
            Taken::Bytes { stamp, .. } | Taken::LogEnd { stamp, .. } => Some(stamp),
        }
    }
}

/// What one reading of a job took from its directory: the directory's stamp, taken before any
/// file was read, and each file it asked for, in order. `complete` is false when it asked for a
/// file an entry cannot hold, or a stamp could not be taken: such a reading is not indexed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tape<'a> {
    pub dir: Stamp,
    pub files: Vec<(&'static str, Taken<'a>)>,
    pub complete: bool,
}

impl<'a> Tape<'a> {
    /// A tape for the job directory `id` under the root `root`, its stamp taken now.
    pub fn start(root: BorrowedFd<'_>, id: &str) -> Option<Tape<'a>> {
        let (dir, kind) = Stamp::at(root, id)?;
        (kind == FileType::Directory).then(|| Tape {
            dir,
            files: Vec::new(),
            complete: true,
        })
    }

    /// Notes that the reading took `name` as `taken` (`None`: it could not be stamped).
    pub fn note(&mut self, name: &str, taken: Option<Taken<'a>>) {
        match (FILES.iter().find(|f| **f == name), taken) {
            (Some(name), Some(taken)) => self.files.push((name, taken)),
            _ => self.complete = false,
        }
    }

    /// Keeps `bytes` for `name` instead of what was read of it (meta.json's parsed record in
    /// place of its bytes); `None`: the tape is not indexed.
    pub fn keep_instead(&mut self, name: &str, bytes: Option<Vec<u8>>) {
        let kept = self.files.iter_mut().find(|(n, _)| *n == name);
        match (kept, bytes) {
            (Some((_, Taken::Bytes { bytes: b, .. })), Some(bytes)) => *b = Cow::Owned(bytes),
            _ => self.complete = false,
        }
    }

    /// What the reading took of `name`, if it asked for it.
    pub fn file(&self, name: &str) -> Option<&Taken<'a>> {
        self.files.iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Whether every stamp on the tape is what the disk says now: the job directory `id` under
    /// `root` is the same directory, unchanged, and so is each file read from it. (Opening the
    /// directory to look its name up once measured slower than naming it in each `statx`.)
    pub fn still_matches(&self, root: BorrowedFd<'_>, id: &str) -> bool {
        if Stamp::at(root, id) != Some((self.dir, FileType::Directory)) {
            return false;
        }
        let mut rel = String::with_capacity(id.len() + 16);
        self.files.iter().all(|(name, taken)| match taken.stamp() {
            None => true,
            Some(stamp) => {
                rel.clear();
                rel.extend([id, "/", name]);
                Stamp::at(root, rel.as_str()) == Some((*stamp, FileType::RegularFile))
            }
        })
    }

    /// Whether every change the tape saw is old enough to be taken in.
    fn settled_by(&self, now: DateTime<Utc>) -> bool {
        self.dir.settled_by(now)
            && self
                .files
                .iter()
                .filter_map(|(_, t)| t.stamp())
                .all(|s| s.settled_by(now))
    }
}
