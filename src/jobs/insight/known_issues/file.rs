//! `known_issues.json`, the orchestrator's format:
//! `{"patterns": [{"name", "description", "error_patterns": [...], "fix", "severity"}]}`.
//! Read leniently, like every file the orchestrator writes: a bad entry is reported with the
//! file and the pattern, and the others are used.

use std::path::Path;

use serde_json::Value;

use super::{Origin, Pattern, PatternProblem, Severity};
use crate::jobs::fs::files::read_capped;

pub const KNOWN_ISSUES_FILE: &str = "known_issues.json";
const FILE_CAP: u64 = 8 * 1024 * 1024;

/// The patterns of the file at `path` (none when it does not exist), and what was wrong with
/// some of them. `Err` when the file as a whole cannot be used.
pub fn load_file(path: &Path) -> Result<(Vec<Pattern>, Vec<PatternProblem>), PatternProblem> {
    let origin = Origin::File(path.to_owned());
    let whole = |message: String| PatternProblem {
        origin: origin.clone(),
        pattern: "*".into(),
        message,
    };
    let bytes = match read_capped(path, FILE_CAP) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(whole(format!("cannot be read: {e}"))),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        whole(format!(
            "is not valid JSON ({e}); the built-in patterns are used alone"
        ))
    })?;
    let list = match value.get("patterns") {
        Some(Value::Array(list)) => list,
        _ => {
            return Err(whole(
                "has no \"patterns\" list; expected {\"patterns\": [{\"name\", \"error_patterns\", \"fix\", \"severity\"}]}"
                    .into(),
            ));
        }
    };
    let mut patterns = Vec::new();
    let mut problems = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
        let name = text("name").unwrap_or_else(|| format!("#{}", i + 1));
        let problem = |message: String| PatternProblem {
            origin: origin.clone(),
            pattern: name.clone(),
            message,
        };
        let regexes: Vec<String> = match entry.get("error_patterns") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => {
                problems.push(problem("has no \"error_patterns\" list".into()));
                continue;
            }
        };
        let severity = match text("severity") {
            None => Severity::Error,
            Some(s) => Severity::parse(&s).unwrap_or_else(|| {
                problems.push(problem(format!(
                    "severity '{s}' is not warning, error or critical; taken as error"
                )));
                Severity::Error
            }),
        };
        patterns.push(Pattern {
            description: text("description").unwrap_or_default(),
            fix: text("fix").unwrap_or_default(),
            name,
            severity,
            regexes,
            // Tools differ in the case of the same message; a file pattern matches either.
            ignore_case: true,
            origin: origin.clone(),
        });
    }
    Ok((patterns, problems))
}
