//! A worktree job's branch taken elsewhere: pushed to the project's remote (`luzia push`), and
//! a pull request opened for it by the project's own `pr_command` (`luzia pr`), whose address
//! is recorded in the job. Work the agent left uncommitted is committed on the branch first,
//! as a merge would, so what is pushed is what `luzia diff` showed. Git and the command run as
//! the project's user, with its credentials; never a prompt (`GIT_TERMINAL_PROMPT=0`).

use std::path::Path;
use std::process::{Command, Stdio};

use super::git::Git;
use super::merge::{commit_leftover, git_of, set_review, worktree_review};
use super::{ReviewError, job_account};
use crate::jobs::fs::publish::update_meta;
use crate::jobs::model::job::Job;
use crate::jobs::text::shell_quote;

/// The remote a branch of the project goes to: `remote` when given, else the upstream remote
/// of the project's current branch, else `origin`; it must exist.
fn remote_of(git: &Git, remote: Option<&str>) -> Result<(String, String), ReviewError> {
    let name = match remote {
        Some(r) => r.to_owned(),
        None => git
            .branch()?
            .and_then(|b| git.text(["config", &format!("branch.{b}.remote")]).ok())
            .filter(|r| !r.is_empty() && r != ".")
            .unwrap_or_else(|| "origin".to_owned()),
    };
    let url = git
        .text(["remote", "get-url", name.as_str()])
        .map_err(|_| ReviewError::NoRemote {
            repo: git.dir.clone(),
            remote: name.clone(),
        })?;
    Ok((name, url))
}

/// Pushes the job's branch; says where.
pub fn push(job: &Job, remote: Option<&str>) -> Result<String, ReviewError> {
    let review = worktree_review(job, "push it")?;
    let git = git_of(job, review)?;
    let (name, url) = remote_of(&git, remote)?;
    let leftover = commit_leftover(job, &git, review)?;
    let spec = format!("refs/heads/{0}:refs/heads/{0}", review.branch);
    git.run(["push", "-q", name.as_str(), spec.as_str()])?;
    let pushed = format!("to {name} ({url})");
    let _ = update_meta(&job.dir(), |m| set_review(m, "pushed", &pushed));
    let mut said = format!("pushed {} {pushed}", review.branch);
    if leftover > 0 {
        said.push_str(&format!(
            "\n{leftover} file{} left uncommitted in the worktree committed on {} first",
            if leftover == 1 { "" } else { "s" },
            review.branch
        ));
    }
    Ok(said)
}

/// Pushes the branch if it was not, runs `command` (`{branch}` filled in, shell-quoted) in the
/// project as its user, and records the address it printed (its last `http` word).
pub fn pull_request(job: &Job, command: &str) -> Result<String, ReviewError> {
    let review = worktree_review(job, "open a pull request for it")?;
    let mut said = String::new();
    if review.pushed.is_empty() {
        said = push(job, None)?;
        said.push('\n');
    }
    let line = command.replace("{branch}", &shell_quote(&review.branch));
    let user = job_account(job)?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&line)
        .current_dir(Path::new(&review.repo))
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    if let Some(a) = &user {
        cmd.env("HOME", &a.home);
        a.switch(&mut cmd);
    }
    let out = cmd.output().map_err(|source| ReviewError::Io {
        path: review.repo.clone().into(),
        source,
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(ReviewError::PrCommand {
            command: line,
            code: out.status.code().unwrap_or(-1),
            said: text.trim().to_owned(),
        });
    }
    let url = text
        .split_whitespace()
        .rfind(|w| w.starts_with("https://") || w.starts_with("http://"))
        .unwrap_or_default()
        .to_owned();
    let recorded = if url.is_empty() {
        text.lines().next().unwrap_or_default().trim().to_owned()
    } else {
        url.clone()
    };
    let _ = update_meta(&job.dir(), |m| set_review(m, "pr", &recorded));
    said.push_str(&match url.is_empty() {
        true => format!("opened a pull request for {} ({recorded})", review.branch),
        false => format!("opened a pull request for {}: {url}", review.branch),
    });
    Ok(said)
}
