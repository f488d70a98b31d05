//! One job read from its directory: everything the status table needs, and what could not be
//! read, said per file so that one bad job never hides the others.

mod reader;

use crate::jobs::fs::names::{LOG_FILE, PROMPT_FILE};
use std::fmt;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::jobs::fs::files::{JobDir, read_small};
use crate::jobs::model::id::JobId;
use crate::jobs::model::index::Tape;
use crate::jobs::model::lifecycle::{self, Exchange};
use crate::jobs::model::meta::Meta;
use crate::jobs::model::process::{ProcessRecord, Processes};
use crate::jobs::model::progress::Progress;
use crate::jobs::model::session::Activity;
use crate::jobs::model::status::{self, Evidence, Status};
use crate::jobs::model::stop::StopRequest;
use crate::jobs::model::waiting::{Gate, Question, Waiting};
use reader::{DirReader, Mode};

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
    /// Where the job's directory is: with `under_root`, a root shared by the jobs read with it
    /// (the directory is the root joined with the id, worked out when asked for, see
    /// [`Job::dir`]); else the directory itself, not named by the id. Not a path of its own per
    /// job: at 100,000 jobs that was 48 bytes a job, the same root spelt out again and again.
    pub(crate) home: Arc<Path>,
    pub(crate) under_root: bool,
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
    pub queue_position: Option<u32>,
    /// Someone asked for the agent to be stopped: who, when, from where.
    pub stop: Option<Box<StopRequest>>,
    /// For a job that stopped for an answer (`needs_input`): the question it asked and the
    /// answer given since, answered or not (`question` holds it only while unanswered).
    pub exchange: Option<Box<Exchange>>,
    /// The jobs that retried this one (their meta.json's `retry_of` names it), oldest first.
    /// Not in this job's files: filled in from the others ([`lifecycle`](crate::jobs::model::lifecycle)).
    pub retried_by: Box<[JobId]>,
    /// Boxed, not a `Vec` (as are `retried_by` and `dir`): every job of a root is kept, nearly
    /// all without a problem or a retry; with the queue's place as a `u32` too, a job fits the
    /// allocator's 208-byte chunk instead of 240.
    pub problems: Box<[Problem]>,
}

impl Job {
    /// A job of which nothing is known yet but its id and directory: what a reading fills in,
    /// and what a queued task or a test starts from (`..Job::bare(id, dir)`), so that a new
    /// field is written in one place.
    pub fn bare(id: JobId, dir: PathBuf) -> Job {
        let (home, under_root) = Job::home_of(&id, dir);
        Job::bare_at(id, home, under_root)
    }

    /// Where job `id` whose directory is `dir` keeps it: its root, when `dir` is named by the
    /// id; else `dir` itself (see [`Job::home`]).
    pub(crate) fn home_of(id: &JobId, dir: PathBuf) -> (Arc<Path>, bool) {
        match dir.parent() {
            Some(root) if dir.file_name() == Some(id.as_str().as_ref()) => (Arc::from(root), true),
            _ => (Arc::from(dir), false),
        }
    }

    /// [`Job::bare`] for the job directory `root/<id>`, the root shared with other jobs.
    pub fn bare_under(id: JobId, root: Arc<Path>) -> Job {
        Job::bare_at(id, root, true)
    }

    fn bare_at(id: JobId, home: Arc<Path>, under_root: bool) -> Job {
        Job {
            id,
            home,
            under_root,
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
            retried_by: Box::default(),
            stop: None,
            problems: Box::default(),
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
    /// When the usage limit that ended this job resets, if its last words (Claude Code's
    /// result, kept in meta.json's `usage.error`) say one did: to the second where the stream
    /// gave the reset (`usage.resets_at`), else as the words give it. Worked out when asked,
    /// from the boxed meta: a field of its own would grow every job of a root.
    pub fn limit_resets_at(&self) -> Option<DateTime<Utc>> {
        let usage = self.meta.as_ref()?.usage.as_ref()?;
        if !crate::jobs::model::limit::stopped(&usage.error) {
            return None;
        }
        if let Some(at) = usage.resets_at {
            return Some(at);
        }
        let ended = self.finished.or(self.log_mtime)?;
        crate::jobs::model::limit::resets_at(&usage.error, ended)
    }

    /// The project's checks, as the job recorded them (none when its project has none).
    pub fn checks(&self) -> Option<&crate::jobs::model::checks::Checks> {
        self.meta.as_ref()?.checks.as_deref()
    }

    /// Its checks ran and one failed.
    pub fn checks_failed(&self) -> bool {
        self.checks()
            .is_some_and(|c| c.state == crate::jobs::model::checks::CheckState::Failed)
    }

    /// The job that continued this one after it ended: the last to resume its session
    /// (meta.json's `resumed_by`), else the last retry of it.
    pub fn continued_by(&self) -> Option<&str> {
        self.meta
            .as_ref()
            .and_then(|m| m.resumed_by.last().map(String::as_str))
            .or_else(|| self.retried_by.last().map(|id| id.as_str()))
    }

    pub fn is_settled(&self) -> bool {
        self.exit_code.is_some() && self.status != Status::NeedsInput
    }

    /// The job's directory.
    pub fn dir(&self) -> PathBuf {
        if self.under_root {
            self.home.join(self.id.as_str())
        } else {
            self.home.to_path_buf()
        }
    }

    /// The root the job's directory is named under by its id (`None`: a directory of its own).
    pub fn root(&self) -> Option<&Arc<Path>> {
        self.under_root.then_some(&self.home)
    }

    /// Puts the job's directory elsewhere.
    pub fn set_dir(&mut self, dir: PathBuf) {
        (self.home, self.under_root) = Job::home_of(&self.id, dir);
    }

    /// The file `name` of the job's directory.
    pub fn file(&self, name: &str) -> PathBuf {
        let mut path = self.dir();
        path.push(name);
        path
    }

    pub fn log_path(&self) -> PathBuf {
        self.file(LOG_FILE)
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
    read_listed_job_in(&Arc::from(root), None, id, now)
}

/// [`read_listed_job`], its files opened relative to the jobs root `root_fd` when given (see
/// [`JobDir`]). The job keeps `root` (shared, not a copy: see [`Job::dir`]).
pub fn read_listed_job_in(
    root: &Arc<Path>,
    root_fd: Option<BorrowedFd<'_>>,
    id: &JobId,
    now: DateTime<Utc>,
) -> Option<Job> {
    read_through(root, root_fd, id, now, Mode::Disk).map(|(job, _)| job)
}

/// [`read_listed_job_in`], noting what the reading took from each file and each file's stamp,
/// for the index of settled jobs. `None` when the directory is gone or cannot be stamped (then
/// nothing is read: the reading could not be indexed).
pub fn record_job(
    root: &Arc<Path>,
    root_fd: BorrowedFd<'_>,
    id: &JobId,
    now: DateTime<Utc>,
) -> Option<(Job, Tape<'static>)> {
    let tape = Tape::start(root_fd, id.as_str())?;
    match read_through(root, Some(root_fd), id, now, Mode::Record(tape))? {
        (job, Mode::Record(tape)) => Some((job, tape)),
        _ => None,
    }
}

/// The settled job `id` as an index entry's `tape` says its files were, by the same reading
/// as from the disk. `None` when the entry does not hold a file the reading asks for, or does
/// not make a settled job: the disk is then read instead. The caller has checked that the
/// entry's stamps match the disk.
pub fn replay_job(root: &Arc<Path>, id: &JobId, tape: &Tape<'_>) -> Option<Job> {
    let mode = Mode::Replay {
        tape,
        missed: false,
    };
    // Nothing a settled job's reading asks depends on the time.
    let (job, mode) = read_through(root, None, id, DateTime::<Utc>::UNIX_EPOCH, mode)?;
    let missed = matches!(mode, Mode::Replay { missed: true, .. });
    (!missed && job.is_settled() && job.problems.is_empty()).then_some(job)
}

/// Reads the job `id`, taking its files as `mode` says; gives the mode back (a recording holds
/// the tape).
fn read_through<'t>(
    root: &Arc<Path>,
    root_fd: Option<BorrowedFd<'_>>,
    id: &JobId,
    now: DateTime<Utc>,
    mode: Mode<'t>,
) -> Option<(Job, Mode<'t>)> {
    let dir = root.join(id.as_str());
    let mut r = DirReader {
        dir: &dir,
        files: JobDir::in_root(&dir, root_fd, id.as_str()),
        problems: Vec::new(),
        mode,
    };
    // The log's end first, then meta.json: the supervisor writes what a job's end means (its
    // checks, its change, its usage) to meta.json before the exit line, so a reading that finds
    // the exit line finds all of it, and a job is never seen `completed` then `checks_failed`.
    let log = r.log_end();
    let meta = r.meta();
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
        ..Job::bare_under(id.clone(), root.clone())
    };
    if let Some(code) = log.exit_code {
        job.finished = job.finished.or(log.mtime);
        job.status = status::ended_checked(
            status::ended_limited(code, job.stop.is_some(), job.limit_resets_at().is_some()),
            job.checks_failed(),
        );
        if job.status != Status::NeedsInput {
            // Finished for good: no pid or question changes what is shown.
            job.problems = r.problems.into();
            return Some((job, r.mode));
        }
    }
    let (pid, record) = r.processes(id.as_str(), job.pid);
    job.pid = pid;
    job.process_record = record.map(Box::new);
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
    job.problems = r.problems.into();
    Some((job, r.mode))
}

/// The prompt the agent was given, if any (capped like every small file).
pub fn read_prompt(job: &Job) -> Result<Option<String>, Problem> {
    let path = job.file(PROMPT_FILE);
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
    use crate::jobs::fs::names::{META_FILE, STOP_FILE};

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

    #[test]
    fn a_job_fits_the_allocators_208_byte_chunk() {
        // glibc's chunks are the size asked for plus 8, rounded up to 16: a root's every job is
        // kept boxed, and 8 bytes more here would cost 16 a job.
        assert!(
            std::mem::size_of::<Job>() <= 200,
            "{}",
            std::mem::size_of::<Job>()
        );
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

    /// The stream's reset, to the second, wins over the words' minute; words that say no limit
    /// stopped the run make no limit of it, whatever else meta.json says.
    #[test]
    fn a_limit_resets_when_the_stream_said_else_when_the_words_say() {
        let words = r#""error": "You've hit your session limit · resets 3:37pm (UTC)""#;
        let (_r, both) = ended(
            &format!(r#", "usage": {{{words}, "resets_at": "2026-12-04T15:37:12Z"}}"#),
            1,
            None,
        );
        assert_eq!(both.status, Status::Limited);
        let exact = DateTime::parse_from_rfc3339("2026-12-04T15:37:12Z").unwrap();
        assert_eq!(both.limit_resets_at(), Some(exact.to_utc()));
        let (_r, words_only) = ended(&format!(r#", "usage": {{{words}}}"#), 1, None);
        let minute = words_only.limit_resets_at().unwrap();
        // The words drop the seconds: the last second of their minute, never too early.
        assert_eq!(minute.format("%H:%M:%S").to_string(), "15:37:59");
        let (_r, other) = ended(
            r#", "usage": {"error": "API Error: 500", "resets_at": "2026-12-04T15:37:12Z"}"#,
            1,
            None,
        );
        assert_eq!(
            (other.status, other.limit_resets_at()),
            (Status::Failed, None)
        );
    }
}
