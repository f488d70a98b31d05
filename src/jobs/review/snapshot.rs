//! A snapshot: a commit of a working tree as it is (HEAD plus every uncommitted change, tracked
//! files and untracked ones that are not ignored), made without touching the user's index,
//! stash, branches or files. It is built in a private index (`GIT_INDEX_FILE`), seeded with a
//! copy of the repository's own index so that git's record of file times spares it reading
//! every unchanged file again, then `git add -A`, `git write-tree` and `git commit-tree` with
//! HEAD as parent. Stored under `refs/luzia/<job id>/`, a namespace no branch, tag or stash
//! command ever looks at.

use std::path::{Path, PathBuf};

use super::ReviewError;
use super::git::Git;

/// A snapshot made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    pub tree: String,
    /// HEAD when it was taken; `None` in a repository with no commit yet.
    pub head: Option<String>,
}

/// The ref a job's snapshot is stored under: `refs/luzia/<id>/before` or `/after`.
pub fn ref_name(id: &str, which: &str) -> String {
    format!("refs/luzia/{id}/{which}")
}

/// Takes a snapshot of the working tree `git` is run in. `tag` names the private index file
/// (the job id), so two snapshots at once never share one.
pub fn take(git: &Git, tag: &str, message: &str) -> Result<Snapshot, ReviewError> {
    let head = git.commit("HEAD")?;
    let git_dir = git.git_dir()?;
    let index = git_dir.join(format!("luzia-index-{tag}-{}", std::process::id()));
    let made = (|| {
        seed(git, &git_dir, &index, head.as_deref())?;
        let private = git.with_index(&index);
        private.run(["add", "-A", "--", "."])?;
        let tree = private.text(["write-tree"])?;
        // Never signed: a snapshot must not wait for a passphrase or a key agent.
        let mut args = vec![
            "commit-tree".to_owned(),
            "--no-gpg-sign".to_owned(),
            tree.clone(),
        ];
        if let Some(h) = &head {
            args.extend(["-p".to_owned(), h.clone()]);
        }
        args.extend(["-m".to_owned(), message.to_owned()]);
        let commit = git.text(&args)?;
        Ok(Snapshot { commit, tree, head })
    })();
    remove_index(&index);
    made
}

/// The private index's first content: a copy of the repository's index, or HEAD's tree when it
/// has none, or nothing in a repository with no commit.
fn seed(git: &Git, git_dir: &Path, index: &Path, head: Option<&str>) -> Result<(), ReviewError> {
    let own = git_dir.join("index");
    match std::fs::copy(&own, index) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ReviewError::Io {
                path: own.clone(),
                source,
            });
        }
    }
    if head.is_some() {
        git.with_index(index).run(["read-tree", "HEAD"])?;
    }
    Ok(())
}

fn remove_index(index: &Path) {
    let _ = std::fs::remove_file(index);
    let lock = PathBuf::from(format!("{}.lock", index.display()));
    let _ = std::fs::remove_file(lock);
}

/// Stores `commit` under `name`.
pub fn store(git: &Git, name: &str, commit: &str) -> Result<(), ReviewError> {
    git.run(["update-ref", "-m", "luzia snapshot", name, commit])
        .map(|_| ())
}
