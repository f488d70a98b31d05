//! The untracked files a new worktree receives from the project's checkout: those matching the
//! patterns of `.worktreeinclude` at the repository's top (gitignore syntax, as Claude Code
//! reads it) or of `[projects.NAME] worktree_include`, and ignored by git. Only ignored files:
//! one git does not ignore would show as part of the job's change. Listed by git itself
//! (`ls-files --others --ignored`, then `check-ignore`), so the patterns mean exactly what they
//! mean to git; copied with their modes, a link as a link (never followed), and given to the
//! project's user. Under that user, a file it does not own is not copied: luzia runs as root,
//! and must not hand the user a file it could not read itself.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::ReviewError;
use super::git::Git;
use crate::jobs::os::account::Account;

/// The file at the repository's top that lists what a worktree receives.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// What was copied, and what could not be (one line each).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub paths: Vec<String>,
    pub failed: Vec<String>,
}

/// The paths (relative to `repo`, a directory with a trailing `/`) to copy into a worktree.
pub fn listed(git: &Git, repo: &Path, patterns: &[String]) -> Result<Vec<String>, ReviewError> {
    let file = repo.join(INCLUDE_FILE);
    let has_file = std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file());
    if !has_file && patterns.is_empty() {
        return Ok(Vec::new());
    }
    let mut args: Vec<String> = ["ls-files", "-z", "--others", "--ignored", "--directory"]
        .map(str::to_owned)
        .to_vec();
    if has_file {
        args.push(format!("--exclude-from={}", file.display()));
    }
    args.extend(patterns.iter().map(|p| format!("--exclude={p}")));
    let out = git.run(&args)?;
    let matched: Vec<String> = split_z(&out);
    if matched.is_empty() {
        return Ok(matched);
    }
    let mut input = Vec::new();
    for m in &matched {
        input.extend_from_slice(m.as_bytes());
        input.push(0);
    }
    let args = ["check-ignore", "-z", "--stdin"];
    let out = git.output_with_input(args, &input)?;
    // 1: none of them is ignored.
    let mut ignored = match out.status.code() {
        Some(0) | Some(1) => split_z(&out.stdout),
        _ => return Err(git.failed(args, &out)),
    };
    ignored.sort();
    Ok(ignored)
}

fn split_z(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// Copies what [`listed`] names from `repo` into the worktree `tree`.
pub fn copy(
    git: &Git,
    repo: &Path,
    tree: &Path,
    patterns: &[String],
    user: Option<&Account>,
) -> Result<Copied, ReviewError> {
    let mut done = Copied::default();
    for path in listed(git, repo, patterns)? {
        let rel = path.trim_end_matches('/');
        let (from, to) = (repo.join(rel), tree.join(rel));
        if let Some(parent) = to.parent() {
            make_dirs(tree, parent, user);
        }
        match copy_one(&from, &to, user) {
            Ok(()) => done.paths.push(rel.to_owned()),
            Err(e) => done.failed.push(format!("{rel}: {e}")),
        }
    }
    Ok(done)
}

/// The directories between `tree` and `dir`, made and given to the user.
fn make_dirs(tree: &Path, dir: &Path, user: Option<&Account>) {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| *d != tree && std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    for d in missing {
        if std::fs::create_dir(&d).is_ok() {
            give(&d, user);
        }
    }
}

fn give(path: &Path, user: Option<&Account>) {
    if let Some(a) = user {
        let _ = rustix::fs::chownat(
            rustix::fs::CWD,
            path,
            Some(a.uid()),
            Some(rustix::fs::Gid::from_raw(a.gid)),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        );
    }
}

fn copy_one(from: &Path, to: &Path, user: Option<&Account>) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(from)?;
    if let Some(a) = user
        && md.uid() != a.uid
    {
        return Err(std::io::Error::other(format!(
            "not {}'s file: not copied",
            a.name
        )));
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::Error::other(
            "already in the worktree: kept as it is",
        ));
    }
    let t = md.file_type();
    if t.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
    } else if t.is_dir() {
        std::fs::create_dir(to)?;
        std::fs::set_permissions(to, md.permissions())?;
        give(to, user);
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_one(&e.path(), &to.join(e.file_name()), user)?;
        }
        return Ok(());
    } else if t.is_file() {
        std::fs::copy(from, to)?;
    } else {
        return Err(std::io::Error::other("not a file, a directory or a link"));
    }
    give(to, user);
    Ok(())
}
