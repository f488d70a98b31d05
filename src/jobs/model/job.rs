//! One job read from its directory: everything the status table needs, and what could not be
//! read, said per file so that one bad job never hides the others.

use crate::jobs::fs::names::{
    ACTIVITY_FILE, LOG_FILE, META_FILE, PID_FILE, PROCESS_FILE, PROGRESS_FILE, PROMPT_FILE,
    STOP_FILE,
};
use std::fmt;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::{JobDir, META_FILE_CAP, read_small, read_trusted};
use crate::jobs::fs::tail;
use crate::jobs::model::id::JobId;
use crate::jobs::model::lifecycle::{self, Exchange};
use crate::jobs::model::meta::Meta;
use crate::jobs::model::process::{ProcessRecord, Processes};
use crate::jobs::model::progress::Progress;
use crate::jobs::model::session::Activity;
use crate::jobs::model::status::{self, Evidence, Status};
use crate::jobs::model::stop::{self, StopRequest};
use crate::jobs::model::waiting::{self, Gate, Question, Waiting};

/// Something in a job directory that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.path.display(), self.message)
    }
}

/// A question or gate is pending only while its agent waits; after exit 100 it is to be answered
/// before a retry; otherwise nobody will read the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    Pending,
    AnswerThenRetry,
    Orphaned,
}

impl Standing {
    pub fn note(self) -> &'static str {
        match self {
            Standing::Pending => "waiting for you",
            Standing::AnswerThenRetry => "the agent stopped for this: answer, then retry",
            Standing::Orphaned => "orphaned: the agent is not running",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Job {
    pub id: JobId,
    pub dir: PathBuf,
    /// `None` when meta.json is missing or unreadable (see `problems`).
    pub meta: Option<Box<Meta>>,
    pub status: Status,
    pub exit_code: Option<i32>,
    pub pid: Option<u32>,
    /// What `process.json` says of the job's processes (read only while it has no exit line).
    pub process_record: Option<Box<ProcessRecord>>,
    pub progress: Option<Box<Progress>>,
    /// What the agent is doing now (`activity.json`), read only while it has no exit line.
    pub activity: Option<Box<Activity>>,
    pub question: Option<Box<Question>>,
    pub gate: Option<Box<Gate>>,
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    /// Length of output.log when read (0 when there is none).
    pub log_len: u64,
    /// When output.log was last written: the agent's last sign of life on screen.
    pub log_mtime: Option<DateTime<Utc>>,
    /// For a queued task: its place in the queue (1 starts next).
    pub queue_position: Option<usize>,
    /// Someone asked for the agent to be stopped: who, when, from where.
    pub stop: Option<Box<StopRequest>>,
    /// For a job that stopped for an answer (`needs_input`): the question it asked and the
    /// answer given since, answered or not (`question` holds it only while unanswered).
    pub exchange: Option<Box<Exchange>>,
    /// The jobs that retried this one (their meta.json's `retry_of` names it), oldest first.
    /// Not in this job's files: filled in from the others ([`lifecycle`](crate::jobs::model::lifecycle)).
    pub retried_by: Vec<JobId>,
    pub problems: Vec<Problem>,
}

impl Job {
    /// A job of which nothing is known yet but its id and directory: what a reading fills in,
    /// and what a queued task or a test starts from (`..Job::bare(id, dir)`), so that a new
    /// field is written in one place.
    pub fn bare(id: JobId, dir: PathBuf) -> Job {
        Job {
            id,
            dir,
            meta: None,
            status: Status::Unknown,
            exit_code: None,
            pid: None,
            process_record: None,
            progress: None,
            activity: None,
            question: None,
            gate: None,
            started: None,
            finished: None,
            log_len: 0,
            log_mtime: None,
            queue_position: None,
            exchange: None,
            retried_by: Vec::new(),
            stop: None,
            problems: Vec::new(),
        }
    }

    pub fn project(&self) -> &str {
        self.meta.as_ref().map_or("", |m| m.project.as_str())
    }

    pub fn task(&self) -> &str {
        self.meta.as_ref().map_or("", |m| m.task.as_str())
    }

    /// The id a person knows it by: the job id, or for a queued task its queue id (what `luzia
    /// queue` lists), as plain text.
    pub fn shown_id(&self) -> String {
        match (&self.meta, self.id.is_queued()) {
            (Some(m), true) if !m.id.is_empty() => crate::jobs::text::sanitize::plain_text(&m.id),
            _ => self.id.to_string(),
        }
    }

    /// What the job waits for, while it is `waiting`.
    pub fn waiting(&self) -> Option<Waiting> {
        if self.status != Status::Waiting {
            return None;
        }
        if self.question.is_some() {
            Some(Waiting::Question)
        } else {
            self.gate.as_ref().map(|_| Waiting::Approval)
        }
    }

    /// Seconds from start to finish, or to `now` while unfinished.
    pub fn elapsed_secs(&self, now: DateTime<Utc>) -> Option<i64> {
        let end = self.finished.unwrap_or(now);
        self.started.map(|s| (end - s).num_seconds().max(0))
    }

    /// How a question or gate on disk stands for this job.
    pub fn standing(&self) -> Standing {
        match self.status {
            Status::Waiting => Standing::Pending,
            Status::NeedsInput => Standing::AnswerThenRetry,
            _ => Standing::Orphaned,
        }
    }

    /// Finished for good: nothing on disk will change what is shown of it (a job that stopped
    /// for input is not: it is answered and retried).
    pub fn is_settled(&self) -> bool {
        self.exit_code.is_some() && self.status != Status::NeedsInput
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join(LOG_FILE)
    }

    /// The processes that stand for the job, each with what tells it from a later process of
    /// the same pid.
    pub fn processes(&self) -> Processes {
        Processes::identify(self.pid, self.process_record.as_deref(), self.started)
    }
}

/// Reads the job `id` under `root`. `None` when its directory does not exist (any more), or is
/// a symbolic link (never a job).
pub fn read_job(root: &Path, id: &JobId, now: DateTime<Utc>) -> Option<Job> {
    std::fs::symlink_metadata(root.join(id.as_str()))
        .ok()
        .filter(|m| m.is_dir())?;
    read_listed_job(root, id, now)
}

/// Reads a job whose directory a listing of the root has just shown to be a real directory.
pub fn read_listed_job(root: &Path, id: &JobId, now: DateTime<Utc>) -> Option<Job> {
    read_listed_job_in(root, None, id, now)
}

/// [`read_listed_job`], its files opened relative to the jobs root `root_fd` when given (see
/// [`JobDir`]).
pub fn read_listed_job_in(
    root: &Path,
    root_fd: Option<BorrowedFd<'_>>,
    id: &JobId,
    now: DateTime<Utc>,
) -> Option<Job> {
    let dir = root.join(id.as_str());
    let mut r = DirReader {
        dir: &dir,
        files: JobDir::in_root(&dir, root_fd, id.as_str()),
        problems: Vec::new(),
    };
    let meta = r.meta();
    let log = r.log_end();
    // The directory itself is looked at only when its files cannot say the job exists (or
    // when it started): a stat per job is a tenth of a scan.
    let dir_stat = || std::fs::symlink_metadata(&dir).ok().filter(|m| m.is_dir());
    // Without a log, make sure the directory is still there: `luzia gc` may have moved it
    // between the two reads, and a job read half before and half after would show as died.
    if !log.exists {
        dir_stat()?;
    }
    let mut job = Job {
        exit_code: log.exit_code,
        pid: meta.as_ref().and_then(|m| m.pid),
        progress: r.progress().map(Box::new),
        started: meta.as_ref().and_then(|m| m.started),
        finished: meta.as_ref().and_then(|m| m.finished),
        log_len: log.len,
        log_mtime: log.mtime,
        stop: r.stop(meta.as_ref()),
        meta: meta.map(Box::new),
        ..Job::bare(id.clone(), dir.clone())
    };
    if let Some(code) = log.exit_code {
        job.finished = job.finished.or(log.mtime);
        job.status = Status::ended(code, job.stop.is_some());
        if job.status != Status::NeedsInput {
            // Finished for good: no pid or question changes what is shown.
            job.problems = r.problems;
            return Some(job);
        }
    }
    job.pid = r.pid().or(job.pid);
    job.process_record = r.process_record().map(Box::new);
    job.activity = r.activity().map(Box::new);
    let pending = r.pending();
    let waiting = match (&pending.question, &pending.gate) {
        (Some(_), _) => Some(Waiting::Question),
        (None, Some(_)) => Some(Waiting::Approval),
        _ => None,
    };
    // Without a start time, the directory's age stands in (for the 30 s start-up grace).
    let born = job
        .started
        .or_else(|| dir_stat()?.modified().ok().map(DateTime::<Utc>::from));
    if log.exit_code.is_none() {
        let processes = job.processes();
        job.status = status::derive(&Evidence {
            has_meta: job.meta.is_some(),
            has_log: log.exists,
            exit_code: None,
            pid_alive: processes.is_known().then(|| processes.is_alive()),
            age_secs: born.map(|t| (now - t).num_seconds()),
            waiting,
            stop_requested: job.stop.is_some(),
        });
    }
    if job.status == Status::Died {
        // It ended without a word; its last output is the last sign of life.
        job.finished = job.finished.or(log.mtime);
    }
    if job.status == Status::NeedsInput {
        job.exchange = lifecycle::read_exchange(&dir).map(Box::new);
    }
    job.question = pending.question.map(Box::new);
    job.gate = pending.gate.map(Box::new);
    job.problems = r.problems;
    Some(job)
}

/// What the end of output.log says; a few KiB read at most.
#[derive(Default)]
struct LogEnd {
    exists: bool,
    len: u64,
    mtime: Option<DateTime<Utc>>,
    exit_code: Option<i32>,
}

/// Reads the files of one job directory, collecting what could not be read.
struct DirReader<'a> {
    dir: &'a Path,
    files: JobDir<'a>,
    problems: Vec<Problem>,
}

impl DirReader<'_> {
    fn problem(&mut self, name: &str, message: String) {
        self.problems.push(Problem {
            path: self.dir.join(name),
            message,
        });
    }

    /// A small file, or `None` (absent, or unreadable and noted).
    fn small(&mut self, name: &str) -> Option<Vec<u8>> {
        self.files.read_small(name).unwrap_or_else(|e| {
            self.problem(name, e.to_string());
            None
        })
    }

    fn meta(&mut self) -> Option<Meta> {
        let bytes = self
            .files
            .read_capped(META_FILE, META_FILE_CAP)
            .unwrap_or_else(|e| {
                self.problem(META_FILE, e.to_string());
                None
            })?;
        Meta::parse(&bytes)
            .map_err(|e| {
                self.problem(
                    META_FILE,
                    format!("{e}: shown with what the other files say"),
                )
            })
            .ok()
    }

    fn log_end(&mut self) -> LogEnd {
        let read = || -> std::io::Result<LogEnd> {
            let Some((file, md)) = self.files.open(LOG_FILE)? else {
                return Ok(LogEnd::default());
            };
            Ok(LogEnd {
                exists: true,
                len: md.len(),
                mtime: md.modified().ok().map(DateTime::<Utc>::from),
                exit_code: tail::exit_code(&file, md.len())?,
            })
        };
        read().unwrap_or_else(|e| {
            self.problem(LOG_FILE, e.to_string());
            LogEnd::default()
        })
    }

    fn activity(&mut self) -> Option<Activity> {
        let bytes = self.small(ACTIVITY_FILE)?;
        Activity::parse(&bytes)
            .map_err(|e| self.problem(ACTIVITY_FILE, e.to_string()))
            .ok()
    }

    fn progress(&mut self) -> Option<Progress> {
        let bytes = self.small(PROGRESS_FILE)?;
        Progress::parse(&bytes)
            .map_err(|e| self.problem(PROGRESS_FILE, e.to_string()))
            .ok()
    }

    /// A requested stop: what the supervisor recorded in meta.json when the agent ended, else
    /// the request itself. A file that exists but cannot be read or parsed still says a stop was
    /// asked for (by someone unknown), and is noted.
    fn stop(&mut self, meta: Option<&Meta>) -> Option<Box<StopRequest>> {
        if let Some(recorded) = meta.and_then(|m| m.stop.clone()) {
            return Some(recorded);
        }
        let (request, problem) = stop::read_in(self.files)?;
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

    fn pending(&mut self) -> waiting::PendingRead {
        let mut pending = waiting::read_pending(self.dir);
        for (name, error) in std::mem::take(&mut pending.problems) {
            self.problem(name, error.to_string());
        }
        pending
    }
}

/// The prompt the agent was given, if any (capped like every small file).
pub fn read_prompt(job: &Job) -> Result<Option<String>, Problem> {
    let path = job.dir.join(PROMPT_FILE);
    read_small(&path)
        .map(|b| b.map(|b| String::from_utf8_lossy(&b).into_owned()))
        .map_err(|e| Problem {
            path,
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job directory with meta.json (`extra` merged in), output.log ending in `exit:code`,
    /// and `stop.json` when given.
    fn ended(meta_extra: &str, code: i32, stop: Option<&str>) -> (tempfile::TempDir, Job) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("120000-abcd");
        std::fs::create_dir(&dir).unwrap();
        let meta = format!(r#"{{"id": "120000-abcd", "project": "p", "task": "t"{meta_extra}}}"#);
        std::fs::write(dir.join(META_FILE), meta).unwrap();
        std::fs::write(dir.join(LOG_FILE), format!("done\n\nexit:{code}\n")).unwrap();
        if let Some(s) = stop {
            std::fs::write(dir.join(STOP_FILE), s).unwrap();
        }
        let id = JobId::parse("120000-abcd").unwrap();
        let job = read_job(root.path(), &id, Utc::now()).unwrap();
        (root, job)
    }

    const ANA: &str =
        r#"{"requested_by": "ana@host", "requested_at": "2026-01-11T14:31:02Z", "source": "cli"}"#;

    #[test]
    fn a_requested_stop_reads_as_killed_with_the_code_kept() {
        let (_r, plain) = ended("", 0, None);
        assert_eq!(
            (plain.status, plain.stop.clone()),
            (Status::Completed, None)
        );
        for code in [0, 1, 100, -15] {
            let (_r, job) = ended("", code, Some(ANA));
            assert_eq!(job.status, Status::Killed, "exit {code}");
            assert_eq!(job.exit_code, Some(code));
            assert_eq!(job.stop.as_ref().unwrap().requested_by, "ana@host");
            assert!(job.is_settled() && job.problems.is_empty());
        }
    }

    #[test]
    fn meta_json_s_record_is_used_and_a_torn_request_still_counts() {
        let recorded = r#", "exit_code": 0, "stop": {"requested_by": "bo@host", "source": "tui"}"#;
        let (_r, job) = ended(recorded, 0, Some(ANA));
        assert_eq!(
            job.stop.unwrap().requested_by,
            "bo@host",
            "the supervisor's record"
        );
        let (_r, torn) = ended("", 0, Some("{\"requested_by"));
        assert_eq!(torn.status, Status::Killed);
        assert_eq!(torn.stop.as_ref().unwrap().who(), "someone");
        assert!(
            torn.problems[0]
                .to_string()
                .contains("stop.json is not a JSON object"),
            "{:?}",
            torn.problems
        );
    }
}
