//! The plain CLI: one module per subcommand, each a thin layer over [`crate::jobs`].

pub mod agent;
pub mod checks;
pub mod complete;
pub mod demo_agent;
pub mod demo_claude;
pub mod doctor;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod gc;
pub mod hosts;
pub mod init;
pub mod install;
pub mod job_rows;
pub mod jobs;
pub mod limit_waiter;
pub mod logs;
pub mod manual;
pub mod mcp;
pub mod notify;
pub mod question_rows;
pub mod questions;
pub mod review;
pub mod run;
mod run_project;
pub mod session;
pub mod signals;
pub mod status;
pub mod stdout;
pub mod suggest;
pub mod table;
pub mod tui;
pub mod watch;

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Result, bail};

use crate::config::Config;
use crate::jobs::model::resolve::{ResolveError, resolve};
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, JobId, read_job};

/// An error as a person reads it: the message and its causes, `: `-separated (what `{:#}`
/// prints), leaving out a cause the message already states. The domain's typed errors name
/// their `io::Error` in their message and also keep it as their source, so that a caller can
/// still ask its kind; it is said once.
pub fn describe(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if part.is_empty() || (!text.is_empty() && text.contains(&part)) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Whether to colour stdout: a terminal, and NO_COLOR unset (https://no-color.org).
pub fn stdout_colors() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Where the index of settled jobs of `root` is kept: the listings read through it (only a
/// cockpit that may write refreshes it).
pub fn jobs_index(root: &Path) -> Option<std::path::PathBuf> {
    crate::xdg::cache_home(&crate::xdg::process_env)
        .map(|cache| crate::jobs::model::index::path_for(&cache, root))
}

/// What a reading command says about a jobs root that does not exist yet: nothing ever ran
/// there, which is an empty fleet, not a fault.
pub fn no_jobs_yet(cfg: &Config) -> String {
    format!(
        "no jobs yet in {}: start one with `luzia run \"task\"` inside a git repository \
         (`luzia doctor` checks what a first job needs)",
        cfg.jobs_dir.display()
    )
}

/// The jobs root when it exists, `None` when it does not exist yet; an error, saying which
/// path was tried, where it came from and how to point elsewhere, when it cannot be used.
pub fn existing_jobs_root(cfg: &Config) -> Result<Option<&Path>> {
    let root = cfg.jobs_dir.as_path();
    match std::fs::metadata(root) {
        Ok(md) if md.is_dir() => Ok(Some(root)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Ok(_) => bail!(
            "the jobs root {} (from {}) is not a directory: point luzia at the directory that \
             holds the job directories with --jobs-dir DIR or LUZIA_JOBS_DIR",
            root.display(),
            cfg.jobs_dir_source
        ),
        Err(e) => bail!(
            "cannot open the jobs root {} (from {}): {e}. Point luzia at your jobs directory with \
             --jobs-dir DIR, the LUZIA_JOBS_DIR environment variable, or jobs_dir in {}",
            root.display(),
            cfg.jobs_dir_source,
            cfg.file_to_edit()
        ),
    }
}

/// The jobs root, which must exist: a command about a job has nothing to act on without it.
pub fn jobs_root(cfg: &Config) -> Result<&Path> {
    match existing_jobs_root(cfg)? {
        Some(root) => Ok(root),
        None => bail!(
            "{} (the jobs root is {}; --jobs-dir DIR or LUZIA_JOBS_DIR points elsewhere)",
            no_jobs_yet(cfg),
            cfg.jobs_dir_source
        ),
    }
}

/// The jobs root, made (private to this user, as each directory it has to make) when it does
/// not exist yet: for the commands that start jobs.
pub fn ensure_jobs_root(cfg: &Config) -> Result<&Path> {
    if existing_jobs_root(cfg)?.is_none() {
        let root = cfg.jobs_dir.as_path();
        crate::xdg::make_private_dir(root).map_err(|e| {
            anyhow::anyhow!(
                "cannot make the jobs root {} (from {}): {e}. Point luzia at a directory \
                     you can write with --jobs-dir DIR, LUZIA_JOBS_DIR, or jobs_dir in {}",
                root.display(),
                cfg.jobs_dir_source,
                cfg.file_to_edit()
            )
        })?;
    }
    jobs_root(cfg)
}

/// Refuses a `--project` that neither the config nor any job knows: an empty answer would look
/// like a quiet fleet. Names the known projects, so a typo is one glance away.
pub fn check_projects(cfg: &Config, jobs: &[Job], wanted: &[String]) -> Result<()> {
    let unknown: Vec<&str> = wanted
        .iter()
        .filter(|p| !cfg.projects.contains_key(p.as_str()))
        .filter(|p| !jobs.iter().any(|j| j.project() == p.as_str()))
        .map(String::as_str)
        .collect();
    let Some(first) = unknown.first() else {
        return Ok(());
    };
    let known: std::collections::BTreeSet<String> = jobs
        .iter()
        .map(|j| j.project())
        .chain(cfg.projects.keys().map(String::as_str))
        .filter(|p| !p.is_empty())
        .map(plain_text)
        .collect();
    let known = if known.is_empty() {
        "no project has any job yet".to_owned()
    } else {
        format!(
            "known: {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    let first = plain_text(first);
    bail!(
        "unknown project '{first}' ({known}): check the name, or add [projects.{first}] to {}",
        cfg.file_to_edit()
    )
}

/// One job by its id or a unique prefix of it (as the cockpit shows ids in a narrow
/// terminal), or an error naming the id and the root; a prefix several jobs share is refused
/// with the candidates, so that nothing is done to a job the operator did not mean.
pub fn find_job(cfg: &Config, typed: &JobId) -> Result<Job> {
    let root = jobs_root(cfg)?;
    let id = match resolve(root, typed) {
        Ok(id) => id,
        Err(ResolveError::Ambiguous { matches, .. }) => bail!(ambiguous(root, typed, &matches)),
        Err(e) => return Err(e.into()),
    };
    match read_job(root, &id, chrono::Utc::now()) {
        Some(job) => Ok(job),
        None => bail!(
            "no job '{id}' under {} (run `luzia jobs` to list the jobs there)",
            root.display()
        ),
    }
}

/// How many candidates an ambiguous prefix lists before "and N more".
const CANDIDATES_SHOWN: usize = 10;

/// The refusal of a prefix several jobs share: each candidate on a line with its status,
/// project and the start of its task (only the candidates shown are read).
fn ambiguous(root: &Path, typed: &JobId, matches: &[JobId]) -> String {
    let now = chrono::Utc::now();
    let mut text = format!(
        "'{typed}' is the start of {} job ids under {}; type more of the id:",
        matches.len(),
        root.display()
    );
    for id in matches.iter().take(CANDIDATES_SHOWN) {
        let line = match read_job(root, id, now) {
            Some(job) => format!(
                "{id}  {}  {}  {}",
                job.status,
                plain_text(job.project()),
                table::cut(
                    &plain_text(job.task().lines().next().unwrap_or_default()),
                    50
                )
            ),
            None => id.to_string(),
        };
        text.push_str("\n  ");
        text.push_str(line.trim_end());
    }
    if matches.len() > CANDIDATES_SHOWN {
        text.push_str(&format!(
            "\n  and {} more",
            matches.len() - CANDIDATES_SHOWN
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write in /j: {source}")]
    struct Typed {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_is_said_once() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let typed = anyhow::Error::new(Typed { source: io() });
        assert_eq!(describe(&typed), format!("cannot write in /j: {}", io()));
        let kind = typed
            .chain()
            .find_map(|c| c.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(kind, Some(std::io::ErrorKind::PermissionDenied));
        let context = anyhow::Error::new(io()).context("cannot open /x");
        assert_eq!(describe(&context), format!("{context:#}"));
        assert_eq!(describe(&context), format!("cannot open /x: {}", io()));
    }
}
