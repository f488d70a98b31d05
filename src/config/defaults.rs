//! Where the jobs root, the queue and the notifications log are when nothing sets them, and
//! where each setting came from. The orchestrator's directories are used whenever its jobs root
//! exists; elsewhere (a laptop, a user without root) everything goes under the user's
//! `$XDG_STATE_HOME/luzia/`, created on first write. A queue belongs to the jobs root it serves:
//! a root that is neither of those two keeps its queue and log in a hidden `.luzia/` inside it,
//! never in the system's.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::xdg::Env;

pub const DEFAULT_JOBS_DIR: &str = "/var/log/luz-orchestrator/jobs";
pub const DEFAULT_NOTIFICATIONS_LOG: &str = "/var/log/luz-orchestrator/notifications.log";
pub const DEFAULT_QUEUE_DIR: &str = "/var/lib/luzia/queue";

/// The hidden directory, inside a jobs root of its own, holding that root's queue and log.
/// A dot name is never a job id, so the root's scan and watcher pass over it.
pub const ROOT_STATE_DIR: &str = ".luzia";

/// Where a setting came from, so an error about it (and `luzia doctor`) can say what to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The orchestrator's directory (its jobs root exists here, or there is no HOME to
    /// put a per-user one in).
    Default,
    /// The per-user default under `$XDG_STATE_HOME/luzia/`: the orchestrator's jobs root
    /// does not exist here.
    User,
    /// Kept with the jobs root it serves, in its `.luzia/`.
    JobsRoot,
    File(PathBuf),
    Env(&'static str),
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("the built-in default"),
            Source::User => write!(
                f,
                "the per-user default, as {DEFAULT_JOBS_DIR} does not exist here"
            ),
            Source::JobsRoot => write!(f, "the jobs root's own {ROOT_STATE_DIR}/ directory"),
            Source::File(p) => write!(f, "the config file {}", p.display()),
            Source::Env(var) => write!(f, "the {var} environment variable"),
            Source::Flag => f.write_str("--jobs-dir"),
        }
    }
}

/// A path and where it came from.
pub type Sourced = (PathBuf, Source);

/// What the file, the environment and the flags set; `None` for what none of them did.
#[derive(Debug, Default)]
pub(super) struct Given {
    pub(super) jobs_dir: Option<Sourced>,
    pub(super) queue_dir: Option<Sourced>,
    pub(super) notifications_log: Option<Sourced>,
}

/// The three places, each set.
#[derive(Debug)]
pub(super) struct Settled {
    pub(super) jobs_dir: Sourced,
    pub(super) queue_dir: Sourced,
    pub(super) notifications_log: Sourced,
}

/// Fills in what `given` leaves out. `system_root_exists` says whether the orchestrator's jobs
/// root is a directory here (passed in, so tests do not depend on the machine they run on).
pub(super) fn settle(
    given: Given,
    env: Env,
    system_root_exists: &dyn Fn(&Path) -> bool,
) -> Settled {
    let user = user_state(env).filter(|_| !system_root_exists(Path::new(DEFAULT_JOBS_DIR)));
    let jobs_dir = given.jobs_dir.unwrap_or_else(|| match &user {
        Some(state) => (state.join("jobs"), Source::User),
        None => (DEFAULT_JOBS_DIR.into(), Source::Default),
    });
    let home = Home::of(&jobs_dir.0, user_state(env).as_deref());
    let queue_dir = given.queue_dir.unwrap_or_else(|| match &home {
        Home::System => (DEFAULT_QUEUE_DIR.into(), Source::Default),
        Home::User(state) => (state.join("queue"), Source::User),
        Home::Own(root) => (root.join(ROOT_STATE_DIR).join("queue"), Source::JobsRoot),
    });
    let notifications_log = given.notifications_log.unwrap_or_else(|| match &home {
        Home::System => (DEFAULT_NOTIFICATIONS_LOG.into(), Source::Default),
        Home::User(state) => (state.join("notifications.log"), Source::User),
        Home::Own(root) => (
            root.join(ROOT_STATE_DIR).join("notifications.log"),
            Source::JobsRoot,
        ),
    });
    Settled {
        jobs_dir,
        queue_dir,
        notifications_log,
    }
}

/// `$XDG_STATE_HOME/luzia`, when there is a HOME to put it in.
pub fn user_state(env: Env) -> Option<PathBuf> {
    crate::xdg::state_home(env).map(|s| s.join("luzia"))
}

/// Whose queue and log a jobs root uses, told by the root's path however it was set.
enum Home {
    /// The orchestrator's root: its queue and log.
    System,
    /// The per-user root: the per-user queue and log beside it.
    User(PathBuf),
    /// Any other root: its own, inside it.
    Own(PathBuf),
}

impl Home {
    fn of(root: &Path, user_state: Option<&Path>) -> Home {
        if root == Path::new(DEFAULT_JOBS_DIR) {
            return Home::System;
        }
        match user_state {
            Some(state) if root == state.join("jobs") => Home::User(state.to_owned()),
            _ => Home::Own(root.to_owned()),
        }
    }
}
