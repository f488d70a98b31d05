//! What a retry takes from the job it retries.

use super::*;
use crate::jobs::{JobId, Meta};

fn job(meta: &str) -> Job {
    let id = JobId::parse("142315-a1b2").unwrap();
    Job {
        meta: Some(Box::new(Meta::parse(meta.as_bytes()).unwrap())),
        ..Job::bare(id, PathBuf::from("/jobs/142315-a1b2"))
    }
}

/// A project the config does not name is retried where its job ran: the directory meta.json
/// records, or for a worktree job the repository its worktree came from.
#[test]
fn a_retry_runs_where_the_job_ran() {
    let cases = [
        (
            r#"{"project": "shop", "task": "t", "cwd": "/home/ana/shop"}"#,
            Some("/home/ana/shop"),
        ),
        (
            r#"{"project": "shop", "task": "t", "cwd": "/jobs/142315-a1b2/worktree",
                "review": {"isolation": "worktree", "repo": "/home/ana/shop",
                           "worktree": "/jobs/142315-a1b2/worktree", "base": "abc"}}"#,
            Some("/home/ana/shop"),
        ),
        (r#"{"project": "shop", "task": "t"}"#, None),
        (
            r#"{"project": "shop", "task": "t", "cwd": "relative"}"#,
            None,
        ),
    ];
    for (meta, want) in cases {
        let req = retry_request(&job(meta), None).unwrap();
        assert_eq!(req.path.as_deref(), want.map(Path::new), "{meta}");
        assert_eq!(req.retry_of.as_deref(), Some("142315-a1b2"));
    }
}
