//! Dispatching a job: a fresh id, `prompt.txt`, `meta.json`, a readable `run.sh` and the room its
//! supervisor's last words will need, all made in a hidden `.partial-<id>` directory that is
//! renamed to `<id>` only when whole (a rename that fails if the id is taken), then the
//! supervisor started detached in its own session, so the agent outlives the cockpit and the SSH
//! session. Whatever fails on the way (a full disk, a supervisor that cannot start), no half job
//! is left behind. The task reaches the agent through `prompt.txt` only: it never appears on a
//! command line and never passes through a shell.

use crate::jobs::fs::names::{MCP_CONFIG_FILE, META_FILE, PROMPT_FILE, RUN_SCRIPT};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::jobs::fs::files::not_a_directory;
use crate::jobs::fs::publish::{sync_dir, write_unsynced};
use crate::jobs::model::id::{JobId, is_valid};
use crate::jobs::model::review::Isolation;
use crate::jobs::review::record;
use crate::jobs::run::agents::speaks_acp;
use crate::jobs::run::claude::servers::{self, ClaudeDirs};
use crate::jobs::run::claude::{self, Permissions};
use crate::jobs::run::finish;
use crate::jobs::run::session::{self, SessionPlan};
use crate::jobs::run::steps::Steps;

/// The longest task accepted: meta.json holds it, and is read whole.
pub const MAX_TASK_BYTES: usize = 4 * 1024 * 1024;

/// Everything needed to create a job.
#[derive(Clone, Debug)]
pub struct Spec {
    pub project: String,
    pub project_path: PathBuf,
    /// When set and luzia runs as root, the agent runs as this user.
    pub user: Option<String>,
    pub task: String,
    /// The agent's argument vector, with `{project}`, `{project_path}`, `{job_id}`, `{job_dir}`.
    pub command: Vec<String>,
    /// The prompt around the task, with `{task}` and the same placeholders.
    pub prompt_template: String,
    pub retry_of: Option<String>,
    /// Appended to the prompt (the answers a retried job was missing).
    pub addendum: Option<String>,
    /// The queue id of the task this job starts, written to meta.json as `queue_id`.
    pub queue_id: Option<String>,
    /// The Claude Code session: a fresh one, or one to continue; in print mode or interactive.
    pub session: SessionPlan,
    /// Claude Code's permission settings for the project (used by a `claude` command only).
    pub permissions: Permissions,
    /// The project's `isolation`; `None` when not configured (a snapshot in a git repository).
    pub isolation: Option<Isolation>,
    /// Where the agent's Claude Code keeps its user configuration (its MCP servers).
    pub claude_dirs: ClaudeDirs,
    /// The project's setup, checks and the untracked files its worktree receives.
    pub steps: Steps,
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("'{0}' is not a valid project name: letters, digits, '.', '_' and '-' only")]
    BadProject(String),
    #[error("the task is empty: say what the agent should do")]
    EmptyTask,
    #[error(
        "the task is {0} bytes: at most 256 KiB fits in a job (put long material in a file in the project and name it in the task)"
    )]
    TaskTooLong(usize),
    /// The project's path, and what it is instead of a directory.
    #[error("the project directory {0} {1}: fix [projects.NAME] path in the config")]
    NoProjectDir(PathBuf, String),
    #[error("the agent command is empty: set [agent] command in the config")]
    NoCommand,
    #[error(
        "cannot create a job in {path}: {source} (is the jobs root writable, the disk not full?)"
    )]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot write {what} of a new job in {root}: {source} (is the disk full, the jobs root \
         writable?); {leftover}"
    )]
    Write {
        root: PathBuf,
        what: String,
        source: std::io::Error,
        /// What became of the half-made job.
        leftover: String,
    },
    #[error("cannot start the supervisor: {0}; the job {1} was removed again")]
    Spawn(std::io::Error, PathBuf),
    #[error(transparent)]
    ServerClash(#[from] servers::Clash),
}

/// A job that exists on disk.
#[derive(Clone, Debug)]
pub struct Created {
    pub id: JobId,
    pub dir: PathBuf,
}

/// Replaces `{name}` placeholders in one pass: a value is never searched for placeholders
/// itself, so a task that contains `{job_dir}` stays as written.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (close, *v))
        });
        match value {
            Some((close, v)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub use crate::jobs::text::shell_quote;

/// A fresh id like the orchestrator's: `HHMMSS-xxxx`.
fn candidate_id(now: DateTime<Utc>, salt: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(salt);
    h.write_u32(std::process::id());
    h.write_i64(now.timestamp_nanos_opt().unwrap_or_default());
    format!("{}-{:04x}", now.format("%H%M%S"), h.finish() as u16)
}

/// Creates the job directory and its files. Does not start anything.
pub fn create(root: &Path, spec: &Spec, now: DateTime<Utc>) -> Result<Created, DispatchError> {
    check(spec)?;
    let mut last = None;
    for salt in 0..64 {
        // `HHMMSS-xxxx` always parses; were it ever not to, the next salt is tried.
        let Ok(id) = JobId::parse(&candidate_id(now, salt)) else {
            continue;
        };
        match build(root, &id, spec, now) {
            Ok(created) => return Ok(created),
            Err(Built::Taken(e)) => last = Some(e),
            Err(Built::Failed(e)) => return Err(e),
        }
    }
    Err(DispatchError::Io {
        path: root.to_owned(),
        source: last.unwrap_or_else(|| std::io::Error::other("no free job id")),
    })
}

fn check(spec: &Spec) -> Result<(), DispatchError> {
    if !is_valid(&spec.project) {
        return Err(DispatchError::BadProject(
            spec.project.escape_debug().take(80).collect(),
        ));
    }
    if spec.task.trim().is_empty() {
        return Err(DispatchError::EmptyTask);
    }
    if spec.task.len() > MAX_TASK_BYTES {
        return Err(DispatchError::TaskTooLong(spec.task.len()));
    }
    if spec.command.is_empty() {
        return Err(DispatchError::NoCommand);
    }
    if let Some(what) = not_a_directory(&spec.project_path) {
        return Err(DispatchError::NoProjectDir(spec.project_path.clone(), what));
    }
    check_servers(spec)
}

/// For a Claude Code job (not a session a person runs, which gets no server of luzia's): no MCP
/// server of the person's may carry the name of luzia's, which would take its place unseen.
/// The command line is read as the job will run it, but for the job's id and directory, which
/// do not exist yet.
pub fn check_servers(spec: &Spec) -> Result<(), DispatchError> {
    if spec.session.interactive || !claude::is_claude(&spec.command) {
        return Ok(());
    }
    let path = spec.project_path.display().to_string();
    let values = [("project", spec.project.as_str()), ("project_path", &path)];
    let argv: Vec<String> = spec.command.iter().map(|a| fill(a, &values)).collect();
    Ok(servers::clash(
        &argv,
        &spec.project_path,
        &spec.claude_dirs,
    )?)
}

enum Built {
    /// The id is taken (by a job, or another dispatcher making one): try another.
    Taken(std::io::Error),
    Failed(DispatchError),
}

/// Makes job `id` in `.partial-<id>` and renames it into place; on failure removes it again.
fn build(root: &Path, id: &JobId, spec: &Spec, now: DateTime<Utc>) -> Result<Created, Built> {
    let staging = root.join(format!(".partial-{id}"));
    match std::fs::create_dir(&staging) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(Built::Taken(e)),
        Err(source) => {
            return Err(Built::Failed(DispatchError::Io {
                path: root.to_owned(),
                source,
            }));
        }
    }
    let dir = root.join(id.as_str());
    let made = write_files(&staging, &dir, id, spec, now).and_then(|()| {
        sync_dir(&staging);
        rename_into_place(&staging, &dir).map_err(|e| ("the job directory".to_owned(), e))
    });
    let Err((what, source)) = made else {
        sync_dir(root);
        return Ok(Created {
            id: id.clone(),
            dir,
        });
    };
    let leftover = match std::fs::remove_dir_all(&staging) {
        Ok(()) => "nothing was left behind".to_owned(),
        Err(e) => format!(
            "the half-made {} could not be removed ({e}): remove it by hand",
            staging.display()
        ),
    };
    if source.kind() == std::io::ErrorKind::AlreadyExists {
        return Err(Built::Taken(source));
    }
    Err(Built::Failed(DispatchError::Write {
        root: root.to_owned(),
        what,
        source,
        leftover,
    }))
}

/// The job's files, written into `staging`; `dir` is where they will be.
fn write_files(
    staging: &Path,
    dir: &Path,
    id: &JobId,
    spec: &Spec,
    now: DateTime<Utc>,
) -> Result<(), (String, std::io::Error)> {
    let dir_s = dir.display().to_string();
    let user = spec.user.as_deref().unwrap_or_default();
    // A worktree job works in its worktree: `{project_path}` and its directory name it.
    let mut planned = record::plan(&spec.project_path, spec.isolation, user, dir, id.as_str());
    if let Some(review) = planned
        .review
        .as_mut()
        .filter(|r| r.isolation == Isolation::Worktree)
    {
        review.include = spec.steps.include.clone();
    }
    let path_s = planned.cwd.display().to_string();
    let values = [
        ("project", spec.project.as_str()),
        ("project_path", path_s.as_str()),
        ("job_id", id.as_str()),
        ("job_dir", dir_s.as_str()),
    ];
    let mut prompt = fill(
        &spec.prompt_template,
        &[values.as_slice(), &[("task", spec.task.as_str())]].concat(),
    );
    if let Some(extra) = &spec.addendum {
        prompt.push_str("\n\n");
        prompt.push_str(extra);
    }
    let argv: Vec<String> = spec.command.iter().map(|a| fill(a, &values)).collect();
    // A session a person runs in their terminal answers Claude Code's prompts itself; any
    // other goes through luzia's permission bridge.
    let claude::Prepared { argv, mcp_config } = if spec.session.interactive {
        claude::for_operator(argv, &spec.permissions)
    } else {
        claude::for_job(argv, dir, &spec.permissions)
            .map_err(|e| (format!("{MCP_CONFIG_FILE} (luzia's own path)"), e))?
    };
    let (argv, session_id) = session::claude_command(argv, &spec.session);
    // An ACP agent's session is known at dispatch only when it is one to continue: the
    // supervisor loads it (`session/load`), and records a new one's id when the agent gives it.
    let session_id = session_id.or_else(|| {
        speaks_acp(&argv)
            .then(|| spec.session.resume.as_ref().map(|r| r.session_id.clone()))
            .flatten()
    });
    let mut meta = json!({
        "id": id.as_str(), "project": spec.project, "task": spec.task, "type": "agent",
        "user": spec.user.clone().unwrap_or_default(),
        "started": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "status": "running", "debug": false,
        "host": rustix::system::uname().nodename().to_string_lossy(),
        "agent": argv[0], "argv": argv, "cwd": path_s,
    });
    if let Some(review) = &planned.review {
        meta["review"] = serde_json::to_value(review).map_err(|e| (META_FILE.into(), e.into()))?;
    }
    if let Some(r) = &spec.retry_of {
        meta["retry_of"] = json!(r);
    }
    if let Some(q) = &spec.queue_id {
        meta["queue_id"] = json!(q);
    }
    session::record(&mut meta, &spec.session, session_id.as_deref());
    spec.steps.record(&mut meta);
    let meta = serde_json::to_vec_pretty(&meta).map_err(|e| (META_FILE.into(), e.into()))?;
    let write = |name: &str, bytes: &[u8]| {
        write_unsynced(staging, name, bytes).map_err(|e| (name.to_owned(), e))
    };
    write(PROMPT_FILE, prompt.as_bytes())?;
    write(
        RUN_SCRIPT,
        run_script(id, dir, &planned.cwd, &argv, spec.session.interactive).as_bytes(),
    )?;
    write(META_FILE, &meta)?;
    if let Some(config) = &mcp_config {
        write(MCP_CONFIG_FILE, config)?;
    }
    // Made now, while the disk has room: a full disk later cannot take the result away.
    finish::reserve(staging, meta.len() as u64)
        .map_err(|e| ("the room for its exit line".to_owned(), e))
}

/// `rename(2)` that fails if `to` exists (`RENAME_NOREPLACE`); on a file system without it, a
/// look first, then a plain rename (which cannot replace a job: its directory is not empty).
fn rename_into_place(from: &Path, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(std::io::ErrorKind::AlreadyExists.into());
            }
            std::fs::rename(from, to)
        }
        Err(e) => Err(e.into()),
    }
}

/// A script a person can read and run again; the supervisor does not use it. An interactive
/// job reads the terminal, not prompt.txt.
fn run_script(id: &JobId, dir: &Path, cwd: &Path, argv: &[String], interactive: bool) -> String {
    let quoted: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
    let dir_q = shell_quote(&dir.display().to_string());
    let (said, stdin) = if interactive {
        (
            "It runs in a terminal, its prompt on the command line.",
            String::new(),
        )
    } else {
        (
            "The task is in prompt.txt and reaches the agent on stdin only.",
            format!(" < {dir_q}/prompt.txt"),
        )
    };
    format!(
        "#!/bin/sh\n# luzia job {id}: runs the agent again by hand (`sh run.sh`).\n\
         # {said}\n\
         cd {} || exit 1\nexport LUZIA_JOB_DIR={dir_q} LUZIA_JOB_ID={}\nexec {}{stdin}\n",
        shell_quote(&cwd.display().to_string()),
        shell_quote(id.as_str()),
        quoted.join(" "),
    )
}

/// Starts `luzia supervise DIR`, passing it `slot` (its entry in `.running/`, see
/// [`slots`](crate::jobs::run::slots)) to hold for its life. The supervisor detaches itself (a
/// session of its own) as the first thing it does. If it cannot be started, the job directory
/// (just made by [`create`]) is removed again.
///
/// No code runs between fork and exec here, so the standard library starts the child with
/// `posix_spawn` (a `vfork`, no copy of this process's page tables) and this process waits only
/// for the exec itself, to know that it succeeded. The slot goes to the child as its standard
/// input: the spawn puts it on descriptor 0 in the child alone, while this process's own
/// descriptor stays closed on exec. So no other child ever inherits it, even one that another
/// thread (the cockpit's, starting an ssh master that lives for hours) spawns at the same
/// moment; a copy made inheritable here for the spawn would leak into such a child and hold
/// the slot for its whole life.
pub fn start_supervisor(
    exe: &Path,
    dir: &Path,
    config: Option<&Path>,
    jobs_dir: &Path,
    slot: Option<std::os::fd::BorrowedFd<'_>>,
) -> Result<(), DispatchError> {
    let fail = |e: std::io::Error| {
        // Nobody will ever run it: a job that cannot start is not left to read as died.
        let _ = std::fs::remove_dir_all(dir);
        DispatchError::Spawn(e, dir.to_owned())
    };
    let mut cmd = Command::new(exe);
    // The supervisor starts queued tasks when it finishes: in this same jobs root.
    cmd.arg("--jobs-dir").arg(jobs_dir);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("supervise");
    let stdin = match slot {
        Some(fd) => {
            cmd.arg("--slot-fd").arg(SLOT_FD.to_string());
            Stdio::from(fd.try_clone_to_owned().map_err(fail)?)
        }
        None => Stdio::null(),
    };
    cmd.arg(dir);
    cmd.stdin(stdin).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(fail)?;
    // Reap it in the background when it ends, so it never lingers as a zombie of ours.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// Where the supervisor finds its slot: its standard input, see [`start_supervisor`].
pub const SLOT_FD: std::os::fd::RawFd = 0;

#[cfg(test)]
mod tests;
