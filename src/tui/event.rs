//! Everything that can happen to the cockpit, as data. The terminal, the watcher, timers,
//! signals and finished effects all send these into one channel; only the loop consumes them.

use crossterm::event::{KeyEvent, MouseEvent};

use crate::jobs::fs::follow::Reset;
use crate::jobs::fs::tail::RawLine;
use crate::jobs::insight::known_issues::Findings;
use crate::jobs::insight::timeline::TimelineEvent;
use crate::jobs::model::limit::Holds;
use crate::jobs::model::review::Change;
use crate::jobs::os::system::SystemAlert;
use crate::jobs::{Job, JobId};
use crate::tui::effect::ReviewOp;
use crate::watch::WatchMode;

#[derive(Debug)]
pub enum Event {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// Text pasted into the terminal (bracketed paste): one event, newlines and all.
    Paste(String),
    Resize(u16, u16),
    /// Once a second, while elapsed times are on screen (or the wall display cycles).
    Tick,
    /// Polling mode: time to look again.
    PollTick,
    /// These jobs' directories changed (or appeared, or went away).
    JobsChanged(Vec<JobId>),
    /// Only these jobs' output grew (see [`crate::watch::Signal::Output`]).
    OutputGrew(Vec<JobId>),
    /// The first frame with the jobs listed is on screen.
    FirstFrameDrawn,
    /// The watcher lost track (overflow, error): read everything again.
    Rescan,
    /// The jobs root is no longer at its path (moved away, removed).
    RootGone,
    /// A directory is at the root's path again, watched from now on: read everything again.
    RootBack,
    WatchMode(WatchMode),
    /// A full or partial listing of the root was read.
    Synced(Synced),
    /// Jobs re-read by id; `None` means the directory is gone.
    JobsRead(Vec<(JobId, Option<Job>)>),
    LogLoaded {
        id: JobId,
        lines: Vec<RawLine>,
        error: Option<String>,
    },
    LogAppended {
        id: JobId,
        reset: Option<Reset>,
        lines: Vec<RawLine>,
    },
    /// The log's last line so far, still without its newline: shown after the lines, until
    /// the next `LogAppended` (which takes it away) or `LogPartial` (which replaces it).
    LogPartial {
        id: JobId,
        line: RawLine,
    },
    PromptLoaded {
        id: JobId,
        text: Result<Option<String>, String>,
    },
    /// What came of a dispatch or retry: the new job (if it started) and what to say, or why not.
    Dispatched(Result<(Option<JobId>, String), String>),
    /// Something to tell the operator (a kill's outcome).
    Notice(String),
    /// The queue as it stands, as jobs with the `queued` status (each naming its agent's
    /// program), and the accounts' usage limits that stand (read with it, off the loop's
    /// thread).
    QueueListed(Vec<Job>, Holds),
    /// What came of an answer or decision: whether it stands, and what to tell the operator.
    Answered {
        job: JobId,
        ok: bool,
        message: String,
    },
    /// The known-issue patterns are compiled (off the loop, so the first frame does not wait);
    /// `problems` are the patterns of known_issues.json that could not be used.
    PatternsReady {
        patterns: std::sync::Arc<crate::jobs::insight::known_issues::PatternSet>,
        problems: Vec<String>,
    },
    /// Known issues found in these jobs' logs since they were last reported (the whole finding
    /// for each job, not a difference).
    IssuesFound(Vec<(JobId, Findings)>),
    /// The server's alerts changed (memory, load).
    SystemAlerts(Vec<SystemAlert>),
    /// A job's history.jsonl, for its timeline.
    HistoryLoaded {
        id: JobId,
        history: Result<Vec<serde_json::Value>, String>,
    },
    /// What the recent-events feed is made of.
    FeedLoaded {
        histories: Vec<(JobId, Vec<serde_json::Value>)>,
        notifications: Vec<TimelineEvent>,
        problems: Vec<String>,
    },
    /// The unmerged worktree jobs that overlap others, each with what its row says.
    Overlaps(std::collections::BTreeMap<JobId, String>),
    /// A job's change as git computes it, or why it could not be read (for the diff view).
    ChangeLoaded {
        id: JobId,
        change: Result<Change, String>,
    },
    /// What merging or discarding a job's change would do, or why it cannot be done.
    ReviewPreviewed {
        job: JobId,
        op: ReviewOp,
        preview: Result<String, String>,
    },
    /// What came of a merge or discard: what was done, or why it was refused.
    Reviewed {
        job: JobId,
        op: ReviewOp,
        result: Result<String, String>,
    },
    /// SIGTERM, SIGHUP, SIGINT, or the terminal went away: leave now.
    Signal(Stop),
    /// What a remote host's link reported.
    Host {
        host: String,
        news: HostNews,
    },
}

/// What a host's link reported (`fleet::link::LinkEvent` turned into the app's terms: jobs already keyed with
/// `JobId::on_host` and converted with `Record::into_job`; many job lines arriving together come as one `Jobs`).
#[derive(Debug)]
pub enum HostNews {
    /// Connecting (first time or again).
    Connecting,
    /// `hello` arrived: the remote luzia's version and its configured projects.
    Up {
        luzia: String,
        projects: Vec<String>,
    },
    /// Jobs added or changed (a question or gate raised or settled is a change).
    Jobs(Vec<Job>),
    /// Jobs gone from the host's root.
    Gone(Vec<JobId>),
    /// The host's whole state has been sent since `Up`: its jobs not sent since then are gone.
    Synced,
    /// The host is alive (a heartbeat), nothing changed.
    Heartbeat,
    /// Unreachable, or the connection dropped: its jobs stay, marked stale from now.
    Down { error: String },
    /// The remote luzia cannot talk to this one: what to install.
    Incompatible { message: String },
}

/// Why the cockpit was told to stop from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Terminate,
    Hangup,
    Interrupt,
    /// Reading the terminal failed: it is gone, as after a dropped SSH session.
    TerminalLost,
}

impl Stop {
    /// The shell's convention for a process ended by a signal: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Terminate => 143,
            Stop::Hangup | Stop::TerminalLost => 129,
            Stop::Interrupt => 130,
        }
    }
}

#[derive(Debug)]
pub struct Synced {
    /// Every job id present under the root.
    pub present: Vec<JobId>,
    /// The jobs that were (re)read.
    pub read: Vec<Job>,
    pub error: Option<String>,
}
