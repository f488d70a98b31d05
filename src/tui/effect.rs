//! Effect: what `App::update` asks the world to do. Data only; the executor in `effects/`
//! performs it off the event loop and reports back with events.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::hitl::operator::Scope;
use crate::jobs::{Job, JobId};

/// The most events the recent-events feed holds (and reads from the notifications log).
pub const FEED_EVENTS: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// List the root and read every job except `skip` (settled jobs, when polling).
    Sync {
        skip: HashSet<JobId>,
    },
    ReadJobs(Vec<JobId>),
    /// Re-read the live jobs whose process is gone, or is no longer the job's (or which have
    /// none yet), of those whose end is not noticed by event (the reads worker knows which).
    CheckAlive,
    OpenLog(JobId),
    PollLog(JobId),
    CloseLog,
    LoadPrompt(JobId),
    /// Publish an answer to this question of this job, exactly once.
    Answer {
        job: JobId,
        question_id: String,
        answer: String,
    },
    /// Publish a decision at this gate instance (`approval.json`'s id) of this job, exactly once.
    Decide {
        job: JobId,
        gate_id: String,
        approved: bool,
        /// An approval for the session (where the gate offers it), or for this request.
        scope: Scope,
        reason: String,
    },
    /// Start a job (or queue it): from the input bar, or a retry (`retry_of`); on `host`, or
    /// on this machine (`None`).
    Dispatch {
        host: Option<String>,
        project: String,
        task: String,
        retry_of: Option<JobId>,
        /// The agent chosen by name (as `luzia run --agent`); `None`: the project's own.
        agent: Option<String>,
    },
    /// Start the job again, with the answer it stopped for (a Claude job resumes its session).
    Retry(JobId),
    /// Continue the job's Claude Code session with this text, as a new job.
    Reply {
        job: JobId,
        text: String,
    },
    /// Open the job's Claude Code session in this terminal (performed by the loop, which owns
    /// the terminal: the cockpit steps aside until the session ends).
    Attach(JobId),
    /// Stop the job: SIGTERM, then SIGKILL after the grace period.
    Kill(JobId),
    /// List the queue (and start queued tasks if slots are free).
    SyncQueue,
    /// Scan these logs for known issues (only what was appended since the last scan).
    ScanIssues(Vec<LogScan>),
    /// These jobs are gone: their scanners can go too.
    ForgetIssues(Vec<JobId>),
    /// Read a job's history.jsonl, for its timeline.
    LoadHistory(JobId),
    /// Read what the recent-events feed needs: these jobs' histories and the notifications log.
    LoadFeed(Vec<JobId>),
    /// Read the job's change from git (the diff view).
    LoadChange(JobId),
    /// Work out which of these unmerged worktree jobs touch the same files.
    CheckOverlaps(Vec<JobId>),
    /// Work out what merging or discarding the job's change would do, for the confirmation.
    PreviewReview {
        job: JobId,
        op: ReviewOp,
    },
    /// Merge or discard the job's change, as the confirmation said.
    Review {
        job: JobId,
        op: ReviewOp,
    },
    /// Ring the terminal bell (performed by the loop, which owns the terminal).
    Bell,
    Quit,
}

impl Effect {
    /// Whether performing this writes anything. A read-only cockpit refuses these here, where
    /// effects are performed, not only by hiding keys.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Effect::Answer { .. }
                | Effect::Decide { .. }
                | Effect::Dispatch { .. }
                | Effect::Retry(_)
                | Effect::Reply { .. }
                | Effect::Attach(_)
                | Effect::Kill(_)
                | Effect::Review { .. }
        )
    }
}

/// What can be done with a job's change once it is reviewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewOp {
    /// Bring it into the project: a worktree job's branch merged (a snapshot job's change is
    /// in the project already, which the domain says).
    Merge,
    /// Throw it away: a worktree job's worktree and branch removed.
    Discard,
}

impl ReviewOp {
    pub fn verb(self) -> &'static str {
        match self {
            ReviewOp::Merge => "merge",
            ReviewOp::Discard => "discard",
        }
    }
}

/// A log to scan for known issues, and whether its job is settled: a settled job's log does not
/// grow, so the scanner keeps nothing of it once scanned (its findings are the cockpit's), and
/// reads it again from the start of its window if it ever does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogScan {
    pub id: JobId,
    pub at: LogAt,
    pub settled: bool,
}

/// Where a job's log is, for the known-issue scanner: a whole root's logs are asked for at once
/// (100,000 at the first frame), so a job whose directory is `ROOT/ID` names its root, shared
/// with the others, rather than a path of its own; the path is made when the log is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogAt {
    /// `ROOT/ID/output.log`, for the id it is paired with.
    Under(Arc<Path>),
    /// Any other place (a job whose directory is not named by its id).
    Own(Box<Path>),
}

impl LogAt {
    /// Where `job`'s log is: under the root its directory is named under, shared with the other
    /// jobs of that root, or in a directory of its own.
    pub fn of(job: &Job) -> LogAt {
        match job.root() {
            Some(root) => LogAt::Under(root.clone()),
            None => LogAt::Own(job.log_path().into_boxed_path()),
        }
    }

    /// The log's path, for the job `id`.
    pub fn path(&self, id: &JobId) -> PathBuf {
        match self {
            LogAt::Under(root) => root.join(id.as_str()).join(LOG_FILE),
            LogAt::Own(path) => path.to_path_buf(),
        }
    }
}
