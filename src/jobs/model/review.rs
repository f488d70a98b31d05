//! What a job changed in its project, as recorded in meta.json's `review` object: how the job
//! was isolated (`snapshot` or its own `worktree`), where, the commits its change is measured
//! between, and the size of the change once the job ended. The diff itself is computed from git
//! on demand (by the `review` room of `jobs`); these are the facts any tool can read from the job directory.

use serde::{Deserialize, Serialize};

use crate::jobs::model::meta::lenient_text;

/// How a project's jobs are kept apart (`isolation` in the project's config).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The agent edits the project directory in place and nothing is recorded.
    #[default]
    None,
    /// The agent edits the project in place; its state is recorded before and after the run.
    Snapshot,
    /// The agent runs in its own git worktree on a branch `luzia/<job id>`.
    Worktree,
}

impl Isolation {
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::None => "none",
            Isolation::Snapshot => "snapshot",
            Isolation::Worktree => "worktree",
        }
    }
}

/// meta.json's `review`. Read leniently like the rest of meta.json: a field of the wrong type is
/// empty, unknown fields are ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Review {
    #[serde(default)]
    pub isolation: Isolation,
    /// The top level of the project's git repository.
    #[serde(default, deserialize_with = "lenient_text")]
    pub repo: String,
    /// The commit the change is measured from: the snapshot taken before the run (HEAD plus
    /// uncommitted changes), or the commit a worktree's branch was created from.
    #[serde(default, deserialize_with = "lenient_text")]
    pub base: String,
    /// The snapshot taken after the run; empty while the job runs (its change is then measured
    /// against the working tree as it is now).
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub after: String,
    /// `worktree` only: the worktree's directory (where the agent ran) and its branch.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub worktree: String,
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub branch: String,
    /// The size of the change, recorded when the job ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangeStat>,
    /// Something the operator should know when reading the change, e.g. that the project also
    /// changed outside the job while it ran.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub note: String,
    /// Why the isolation asked for could not be set up or recorded (the job ran regardless, or
    /// did not start, as the message says).
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub error: String,
    /// `worktree` only: the project's `worktree_include` patterns, copied into the worktree
    /// with those of its `.worktreeinclude` when it is made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// `worktree` only: who merged the job though its checks had not passed (`luzia merge
    /// --force`), when, and which check had failed.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub forced: String,
    /// `worktree` only: the remote the branch was pushed to (`luzia push`), and the pull
    /// request's address `luzia pr` recorded.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub pushed: String,
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub pr: String,
    /// `worktree` only: whether it still merges cleanly, as worked out when a job whose change
    /// overlapped it was merged.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub merges: String,
    /// `worktree` only: what became of the branch (`merged into main at <commit>`,
    /// `discarded`), once the operator decided.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub outcome: String,
}

/// How much a job changed: what the CHANGES column shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeStat {
    #[serde(default)]
    pub files: u32,
    #[serde(default)]
    pub added: u64,
    #[serde(default)]
    pub removed: u64,
}

impl ChangeStat {
    /// `+120 -8 · 5 files`; `no changes` when nothing changed.
    pub fn summary(&self) -> String {
        match self.files {
            0 => "no changes".to_owned(),
            1 => format!("+{} -{} · 1 file", self.added, self.removed),
            n => format!("+{} -{} · {n} files", self.added, self.removed),
        }
    }
}

/// One file of a change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The path in the repository after the change (before it, for a deleted file).
    pub path: String,
    /// A renamed file's path before the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub kind: ChangeKind,
    /// Lines added and removed; zero for a binary file.
    pub added: u64,
    pub removed: u64,
    pub binary: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    #[default]
    Modified,
    Deleted,
    Renamed,
}

/// A job's change as git computes it: the files, then the unified diff.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Change {
    pub files: Vec<FileChange>,
    /// The unified diff, as git printed it (not sanitized: whoever shows it must).
    pub patch: String,
    /// The patch was cut at a size cap; `files` is still complete.
    pub truncated: bool,
    /// What the operator should know (the project also changed outside the job, the job is
    /// still running so the change is not final, …).
    pub notes: Vec<String>,
}

impl Change {
    pub fn stat(&self) -> ChangeStat {
        ChangeStat {
            files: u32::try_from(self.files.len()).unwrap_or(u32::MAX),
            added: self.files.iter().map(|f| f.added).sum(),
            removed: self.files.iter().map(|f| f.removed).sum(),
        }
    }
}

impl Review {
    /// What `luzia jobs ID` says of it, as `(label, value, is_a_problem)`; values are raw text
    /// for the caller to sanitize.
    pub fn described(&self) -> Vec<(&'static str, String, bool)> {
        let mut out = Vec::new();
        let isolation = match self.isolation {
            Isolation::Worktree => format!("worktree {}", self.worktree),
            i if self.repo.is_empty() => i.as_str().to_owned(),
            i => format!("{} of {}", i.as_str(), self.repo),
        };
        out.push(("isolation", isolation, false));
        if !self.branch.is_empty() {
            let outcome = match self.outcome.as_str() {
                "" => String::new(),
                o => format!(" ({o})"),
            };
            out.push(("branch", format!("{}{outcome}", self.branch), false));
        }
        if !self.forced.is_empty() {
            out.push(("forced", self.forced.clone(), true));
        }
        if !self.pushed.is_empty() {
            out.push(("pushed", self.pushed.clone(), false));
        }
        if !self.pr.is_empty() {
            out.push(("pull request", self.pr.clone(), false));
        }
        if !self.merges.is_empty() && self.outcome.is_empty() {
            out.push((
                "merges",
                self.merges.clone(),
                self.merges.contains("conflicts"),
            ));
        }
        if let Some(c) = &self.changes {
            out.push(("changes", c.summary(), false));
        }
        for note in self.note.lines().filter(|l| !l.trim().is_empty()) {
            out.push(("change note", note.to_owned(), false));
        }
        if !self.error.is_empty() {
            out.push(("isolation error", self.error.clone(), true));
        }
        out
    }

    /// meta.json's `review`, if it is an object; `None` for anything else.
    pub fn from_meta(v: Option<&serde_json::Value>) -> Option<Box<Review>> {
        v.filter(|v| v.is_object())
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .map(Box::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_reads_like_the_column() {
        let s = ChangeStat {
            files: 5,
            added: 120,
            removed: 8,
        };
        assert_eq!(s.summary(), "+120 -8 · 5 files");
        assert_eq!(ChangeStat::default().summary(), "no changes");
    }

    #[test]
    fn review_is_read_leniently() {
        let r = Review::from_meta(Some(&json!({
            "isolation": "worktree", "repo": "/p", "base": "abc", "branch": 7,
            "changes": {"files": 2, "added": 3}, "zzz": true
        })))
        .unwrap();
        assert_eq!(r.isolation, Isolation::Worktree);
        assert_eq!(r.branch, "7");
        assert_eq!(r.changes.unwrap().removed, 0);
        assert!(Review::from_meta(Some(&json!("snapshot"))).is_none());
        assert!(Review::from_meta(None).is_none());
    }
}
