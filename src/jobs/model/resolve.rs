//! A job id as a person types it: the whole id, or a prefix of it that names one job, as git
//! takes a commit. The cockpit shows the shortest unique prefix in narrow terminals, so what it
//! shows must be what the command line takes.
//!
//! Resolved from the names of the root's directories alone (one listing, no job's files read),
//! so that it stays quick at 100,000 jobs; an exact id is one `stat`.

use std::path::{Path, PathBuf};

use crate::jobs::model::id::JobId;
use crate::jobs::model::scan::{ScanError, list_ids_where};

/// Why a typed id names no single job.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no job '{typed}' under {} (run `luzia jobs` to list the jobs there)", root.display())]
    NoMatch { typed: JobId, root: PathBuf },
    /// Every job whose id starts with `typed`, sorted by id (at least two).
    #[error(
        "'{typed}' is the start of {} job ids under {}: type more of the id",
        matches.len(),
        root.display()
    )]
    Ambiguous {
        typed: JobId,
        root: PathBuf,
        matches: Vec<JobId>,
    },
    #[error(transparent)]
    Scan(#[from] ScanError),
}

/// The job `typed` names under `root`: the job of that exact id if there is one (even when it
/// is also the start of other ids), else the one job whose id starts with it.
pub fn resolve(root: &Path, typed: &JobId) -> Result<JobId, ResolveError> {
    if is_job_dir(&root.join(typed.as_str())) {
        return Ok(typed.clone());
    }
    let prefix = typed.as_str();
    let mut matches = list_ids_where(root, |name| name.starts_with(prefix))?;
    match matches.len() {
        0 => Err(ResolveError::NoMatch {
            typed: typed.clone(),
            root: root.to_owned(),
        }),
        1 => Ok(matches.remove(0)),
        _ => {
            matches.sort();
            Err(ResolveError::Ambiguous {
                typed: typed.clone(),
                root: root.to_owned(),
                matches,
            })
        }
    }
}

/// A real directory, as a listing of the root would show it: a symbolic link is never a job.
fn is_job_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> JobId {
        JobId::parse(s).unwrap()
    }

    fn root_with(dirs: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        root
    }

    #[test]
    fn a_unique_prefix_names_its_job() {
        let root = root_with(&["211041-f3a9", "211041-07bc", "093000-aaaa"]);
        assert_eq!(
            resolve(root.path(), &id("211041-f")).unwrap(),
            id("211041-f3a9")
        );
        assert_eq!(resolve(root.path(), &id("09")).unwrap(), id("093000-aaaa"));
    }

    #[test]
    fn an_exact_id_wins_over_the_longer_ids_it_starts() {
        let root = root_with(&["211041", "211041-f3a9", "211041-07bc"]);
        assert_eq!(resolve(root.path(), &id("211041")).unwrap(), id("211041"));
    }

    #[test]
    fn a_shared_prefix_is_refused_with_every_candidate_sorted() {
        let root = root_with(&["211041-f3a9", "211041-07bc", "093000-aaaa"]);
        match resolve(root.path(), &id("2110")) {
            Err(ResolveError::Ambiguous { matches, .. }) => {
                assert_eq!(matches, vec![id("211041-07bc"), id("211041-f3a9")]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_match_says_so_and_names_the_listing() {
        let root = root_with(&["211041-f3a9"]);
        let err = resolve(root.path(), &id("3")).unwrap_err();
        assert!(matches!(err, ResolveError::NoMatch { .. }), "{err:?}");
        assert!(err.to_string().contains("luzia jobs"), "{err}");
    }

    #[test]
    fn files_and_links_are_not_jobs() {
        let root = root_with(&["211041-f3a9"]);
        std::fs::write(root.path().join("211041-file"), "").unwrap();
        std::os::unix::fs::symlink(
            root.path().join("211041-f3a9"),
            root.path().join("211041-link"),
        )
        .unwrap();
        assert_eq!(
            resolve(root.path(), &id("211041")).unwrap(),
            id("211041-f3a9")
        );
        assert!(matches!(
            resolve(root.path(), &id("211041-link")),
            Err(ResolveError::NoMatch { .. })
        ));
    }

    #[test]
    fn a_missing_root_is_the_scan_error() {
        let root = root_with(&[]);
        let gone = root.path().join("nope");
        assert!(matches!(
            resolve(&gone, &id("2")),
            Err(ResolveError::Scan(ScanError::Missing(_)))
        ));
    }
}
