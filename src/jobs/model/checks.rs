//! meta.json's `checks`: the project's check commands (`[projects.NAME] checks`, fixed at
//! dispatch) and what each did when it ran in the job's tree after the agent ended, its exit
//! code, duration and last lines. Written by the supervisor before the exit line (so whoever
//! sees the job end sees its checks), and again by `luzia checks ID`. Read leniently, like the
//! rest of meta.json.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::jobs::model::meta::lenient_text;

/// Where the checks of a job stand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    /// Not run (yet): the agent has not ended, or it did not end well, or the job is older.
    #[default]
    Planned,
    /// Running now: `results` holds the ones that have ended.
    Running,
    Passed,
    Failed,
    /// A stop was asked for while they ran.
    Stopped,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Planned => "planned",
            CheckState::Running => "running",
            CheckState::Passed => "passed",
            CheckState::Failed => "failed",
            CheckState::Stopped => "stopped",
        }
    }
}

/// One check as it ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    #[serde(default, deserialize_with = "lenient_text")]
    pub command: String,
    /// `None`: it could not be started (see `tail`).
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub seconds: f64,
    /// Its last lines of output, plain text (at most [`TAIL_LINES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<String>,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// How many last lines of a check's output are kept in meta.json.
pub const TAIL_LINES: usize = 12;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Checks {
    /// The command lines, in order.
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default)]
    pub state: CheckState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<CheckResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    /// Why they did not run, or who ran them again (`luzia checks`).
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "String::is_empty"
    )]
    pub note: String,
}

impl Checks {
    /// meta.json's `checks`, if it is an object with at least one command; `None` otherwise.
    pub fn from_meta(v: Option<&serde_json::Value>) -> Option<Box<Checks>> {
        v.filter(|v| v.is_object())
            .and_then(|v| serde_json::from_value::<Checks>(v.clone()).ok())
            .filter(|c| !c.commands.is_empty())
            .map(Box::new)
    }

    pub fn planned(commands: Vec<String>) -> Checks {
        Checks {
            commands,
            ..Checks::default()
        }
    }

    /// How many have ended, how many failed, out of how many.
    pub fn counts(&self) -> (usize, usize, usize) {
        let failed = self.results.iter().filter(|r| !r.passed()).count();
        (self.results.len(), failed, self.commands.len())
    }

    /// The first check that failed.
    pub fn first_failure(&self) -> Option<&CheckResult> {
        self.results.iter().find(|r| !r.passed())
    }

    /// What the CHECKS column says: `✓ 3/3`, `✗ 1/3` (one failed of three), `… 2/3` while
    /// they run (two ended), `- 0/3` for checks that never ran.
    pub fn label(&self) -> String {
        let (ended, failed, total) = self.counts();
        match self.state {
            CheckState::Passed => format!("✓ {ended}/{total}"),
            CheckState::Failed => format!("✗ {failed}/{total}"),
            CheckState::Running => format!("… {ended}/{total}"),
            CheckState::Planned | CheckState::Stopped => format!("- {ended}/{total}"),
        }
    }

    /// One line a person reads: `passed (3 of 3)`, `failed: cargo test (exit 101)`, ….
    pub fn summary(&self) -> String {
        let (ended, _, total) = self.counts();
        match (self.state, self.first_failure()) {
            (CheckState::Passed, _) => format!("passed ({ended} of {total})"),
            (CheckState::Failed, Some(f)) => format!("failed: {}", failure(f)),
            (CheckState::Failed, None) => "failed".to_owned(),
            (CheckState::Running, _) => format!("running ({ended} of {total} done)"),
            (CheckState::Stopped, _) => format!("stopped ({ended} of {total} done)"),
            (CheckState::Planned, _) if self.note.is_empty() => format!("not run ({total})"),
            (CheckState::Planned, _) => format!("not run: {}", self.note),
        }
    }
}

/// `cargo test (exit 101)`, or why it did not start.
pub fn failure(r: &CheckResult) -> String {
    match r.exit_code {
        Some(code) => format!("{} (exit {code})", r.command),
        None => format!("{} (could not start)", r.command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ran(command: &str, code: i32) -> CheckResult {
        CheckResult {
            command: command.into(),
            exit_code: Some(code),
            ..CheckResult::default()
        }
    }

    #[test]
    fn the_column_and_the_summary_say_where_the_checks_stand() {
        let mut c = Checks::planned(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(
            (c.label(), c.summary()),
            ("- 0/3".into(), "not run (3)".into())
        );
        c.state = CheckState::Running;
        c.results = vec![ran("a", 0), ran("b", 0)];
        assert_eq!(c.label(), "… 2/3");
        c.state = CheckState::Failed;
        c.results.push(ran("c", 101));
        assert_eq!(c.label(), "✗ 1/3");
        assert_eq!(c.summary(), "failed: c (exit 101)");
        c.results[2].exit_code = Some(0);
        c.state = CheckState::Passed;
        assert_eq!(
            (c.label(), c.summary()),
            ("✓ 3/3".into(), "passed (3 of 3)".into())
        );
    }

    #[test]
    fn checks_are_read_leniently() {
        let c = Checks::from_meta(Some(&json!({
            "commands": ["cargo test"], "state": "failed", "zzz": 1,
            "results": [{"command": 7, "exit_code": 1, "seconds": 0.5, "tail": ["x"]}]
        })))
        .unwrap();
        assert_eq!(c.results[0].command, "7");
        assert_eq!(c.state, CheckState::Failed);
        assert!(Checks::from_meta(Some(&json!({"commands": []}))).is_none());
        assert!(Checks::from_meta(Some(&json!("yes"))).is_none());
        assert!(Checks::from_meta(Some(&json!({"commands": ["x"], "state": "odd"}))).is_none());
    }
}
