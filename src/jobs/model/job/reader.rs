//! Reading the files of one job directory, file by file, collecting what could not be read. The
//! files a finished job is read from (meta.json, output.log's end, progress.json, stop.json) go
//! through [`DirReader::take`] and [`DirReader::log_end`], so that a reading can be recorded for
//! the index of settled jobs, or replayed from it, by the same code that reads the disk.

use std::borrow::Cow;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::{JobDir, META_FILE_CAP, SMALL_FILE_CAP, read_trusted};
use crate::jobs::fs::names::{
    ACTIVITY_FILE, LOG_FILE, META_FILE, PID_FILE, PROCESS_FILE, PROGRESS_FILE, STOP_FILE,
};
use crate::jobs::fs::tail;
use crate::jobs::model::index::{Stamp, Taken, Tape};
use crate::jobs::model::meta::Meta;
use crate::jobs::model::process::{self, ProcessRecord, Source};
use crate::jobs::model::progress::Progress;
use crate::jobs::model::session::Activity;
use crate::jobs::model::stop::{self, StopRequest};
use crate::jobs::model::waiting;

use super::Problem;

/// Where a reading takes a job's files from.
pub(super) enum Mode<'t> {
    /// The disk.
    Disk,
    /// The disk, noting on the tape what each file was, for the index.
    Record(Tape<'static>),
    /// An index entry whose stamps match the disk. `missed` is set when the reading asks for a
    /// file the entry does not hold: the job is then read from the disk instead.
    Replay { tape: &'t Tape<'t>, missed: bool },
}

/// What the end of output.log says; a few KiB read at most.
#[derive(Default)]
pub(super) struct LogEnd {
    pub exists: bool,
    pub len: u64,
    pub mtime: Option<DateTime<Utc>>,
    pub exit_code: Option<i32>,
}

/// Reads the files of one job directory, collecting what could not be read.
pub(super) struct DirReader<'a, 't> {
    pub dir: &'a Path,
    pub files: JobDir<'a>,
    pub problems: Vec<Problem>,
    pub mode: Mode<'t>,
}

impl<'t> DirReader<'_, 't> {
    fn problem(&mut self, name: &str, message: String) {
        self.problems.push(Problem {
            path: self.dir.join(name),
            message,
        });
    }

    /// The file `name` whole (at most `cap` bytes), from wherever this reading reads (a replay
    /// lends the entry's bytes).
    fn take(&mut self, name: &'static str, cap: u64) -> std::io::Result<Option<Cow<'t, [u8]>>> {
        match &mut self.mode {
            Mode::Disk => Ok(self.files.read_capped(name, cap)?.map(Cow::Owned)),
            Mode::Record(tape) => {
                // The stamp is taken before the bytes are read (see the index's comment).
                let read = self.files.read_capped_with(name, cap, Stamp::of)?;
                let taken = match &read {
                    None => Some(Taken::Absent),
                    Some((bytes, stamp)) => stamp.map(|stamp| Taken::Bytes {
                        stamp,
                        bytes: Cow::Owned(bytes.clone()),
                    }),
                };
                tape.note(name, taken);
                Ok(read.map(|(bytes, _)| Cow::Owned(bytes)))
            }
            Mode::Replay { tape, missed } => Ok(match (*tape).file(name) {
                Some(Taken::Bytes { bytes, .. }) => Some(Cow::Borrowed(&**bytes)),
                Some(Taken::Absent) => None,
                _ => {
                    *missed = true;
                    None
                }
            }),
        }
    }

    /// A small file, or `None` (absent, or unreadable and noted).
    fn small(&mut self, name: &'static str) -> Option<Cow<'t, [u8]>> {
        self.take(name, SMALL_FILE_CAP).unwrap_or_else(|e| {
            self.problem(name, e.to_string());
            None
        })
    }

    /// meta.json, read leniently; an index entry holds its parsed record instead (what
    /// [`Meta::record`] made of it when the job was indexed), read back as is.
    pub fn meta(&mut self) -> Option<Meta> {
        if let Mode::Replay { tape, missed } = &mut self.mode {
            return match tape.file(META_FILE) {
                Some(Taken::Bytes { bytes, .. }) => {
                    let meta = Meta::from_record(bytes).ok();
                    *missed |= meta.is_none();
                    meta
                }
                Some(Taken::Absent) => None,
                _ => {
                    *missed = true;
                    None
                }
            };
        }
        let bytes = self.take(META_FILE, META_FILE_CAP).unwrap_or_else(|e| {
            self.problem(META_FILE, e.to_string());
            None
        })?;
        let meta = Meta::parse(&bytes)
            .map_err(|e| {
                self.problem(
                    META_FILE,
                    format!("{e}: shown with what the other files say"),
                )
            })
            .ok();
        if let Mode::Record(tape) = &mut self.mode {
            tape.keep_instead(META_FILE, meta.as_ref().and_then(Meta::record));
        }
        meta
    }

    pub fn log_end(&mut self) -> LogEnd {
        if let Mode::Replay { tape, missed } = &mut self.mode {
            return match tape.file(LOG_FILE) {
                Some(Taken::LogEnd { stamp, exit_code }) => LogEnd {
                    exists: true,
                    len: stamp.size,
                    mtime: stamp.modified(),
                    exit_code: *exit_code,
                },
                _ => {
                    *missed = true;
                    LogEnd::default()
                }
            };
        }
        let read = || -> std::io::Result<(LogEnd, Option<Taken<'static>>)> {
            let Some((file, md)) = self.files.open(LOG_FILE)? else {
                return Ok((LogEnd::default(), Some(Taken::Absent)));
            };
            // Stamped before its end is read (see the index's comment).
            let stamp = match self.mode {
                Mode::Record(_) => Stamp::of(&file),
                _ => None,
            };
            let exit_code = tail::exit_code(&file, md.len())?;
            let end = LogEnd {
                exists: true,
                len: md.len(),
                mtime: md.modified().ok().map(DateTime::<Utc>::from),
                exit_code,
            };
            Ok((end, stamp.map(|stamp| Taken::LogEnd { stamp, exit_code })))
        };
        match read() {
            Ok((end, taken)) => {
                if let Mode::Record(tape) = &mut self.mode {
                    tape.note(LOG_FILE, taken);
                }
                end
            }
            Err(e) => {
                self.problem(LOG_FILE, e.to_string());
                LogEnd::default()
            }
        }
    }

    pub fn activity(&mut self) -> Option<Activity> {
        let bytes = self.small(ACTIVITY_FILE)?;
        Activity::parse(&bytes)
            .map_err(|e| self.problem(ACTIVITY_FILE, e.to_string()))
            .ok()
    }

    pub fn progress(&mut self) -> Option<Progress> {
        let bytes = self.small(PROGRESS_FILE)?;
        Progress::parse(&bytes)
            .map_err(|e| self.problem(PROGRESS_FILE, e.to_string()))
            .ok()
    }

    /// A requested stop: what the supervisor recorded in meta.json when the agent ended, else
    /// the request itself. A file that exists but cannot be read or parsed still says a stop was
    /// asked for (by someone unknown), and is noted.
    pub fn stop(&mut self, meta: Option<&Meta>) -> Option<Box<StopRequest>> {
        if let Some(recorded) = meta.and_then(|m| m.stop.clone()) {
            return Some(recorded);
        }
        let read = self.take(STOP_FILE, SMALL_FILE_CAP);
        let (request, problem) = stop::judge(read.map(|r| r.map(Cow::into_owned)))?;
        if let Some(message) = problem {
            self.problem(STOP_FILE, message);
        }
        Some(Box::new(request))
    }

    /// A file naming a process (`pid`, `process.json`), read only if its owner may be trusted
    /// to name one (see `read_trusted`).
    fn trusted(&mut self, name: &str) -> Option<Vec<u8>> {
        let root = self.dir.parent().unwrap_or(self.dir);
        read_trusted(&self.dir.join(name), root).unwrap_or_else(|e| {
            self.problem(name, e.to_string());
            None
        })
    }

    /// The job's pid and the record of its processes, from where they may be believed
    /// (`process::source`): luzia's private record; else, where only trusted users may write,
    /// the `pid` file (or `meta_pid`, meta.json's) and `process.json`; else none.
    pub fn processes(
        &mut self,
        id: &str,
        meta_pid: Option<u32>,
    ) -> (Option<u32>, Option<ProcessRecord>) {
        let mut problems = Vec::new();
        let source = process::source(self.dir, id, &mut |name, message| {
            problems.push((name.to_owned(), message));
        });
        for (name, message) in problems {
            self.problem(&name, message);
        }
        match source {
            Source::Private(record) => (record.supervisor.as_ref().map(|s| s.pid), Some(record)),
            Source::JobFiles => (self.pid().or(meta_pid), self.process_record()),
            Source::Nowhere => (None, None),
        }
    }

    fn pid(&mut self) -> Option<u32> {
        let bytes = self.trusted(PID_FILE)?;
        let pid = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        match pid {
            Some(pid) if pid > 0 => Some(pid),
            _ => {
                self.problem(PID_FILE, "does not hold a decimal pid".into());
                None
            }
        }
    }

    fn process_record(&mut self) -> Option<ProcessRecord> {
        let bytes = self.trusted(PROCESS_FILE)?;
        ProcessRecord::parse(&bytes)
            .map_err(|e| self.problem(PROCESS_FILE, e))
            .ok()
    }

    pub fn pending(&mut self) -> waiting::PendingRead {
        let mut pending = waiting::read_pending(self.dir);
        for (name, error) in std::mem::take(&mut pending.problems) {
            self.problem(name, error.to_string());
        }
        pending
    }
}
