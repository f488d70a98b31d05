//! Only what passed is merged: a job of a project with checks is merged once its checks passed,
//! and refused otherwise, naming the check that failed or saying why they did not run. `--force`
//! merges all the same, and the job records who forced it, when, and past what.

use chrono::Utc;

use super::ReviewError;
use crate::jobs::model::checks::{CheckState, failure};
use crate::jobs::model::job::Job;

/// What a merge is allowed past.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    /// The project's config has checks now (a job from before they were configured has none
    /// recorded, and has not passed them either).
    pub project_has_checks: bool,
    /// Merge whatever the checks say; who asked (`user@host`).
    pub forced_by: Option<String>,
}

/// `Ok(None)`: the job may be merged. `Ok(Some(record))`: it may, because it was forced past
/// what `record` says. `Err`: refused, saying why and what to do.
pub fn check(job: &Job, gate: &Gate) -> Result<Option<String>, ReviewError> {
    let id = job.id.to_string();
    let refusal = match job.checks() {
        Some(c) if c.state == CheckState::Passed => return Ok(None),
        Some(c) => match (c.state, c.first_failure()) {
            (CheckState::Failed, Some(f)) => ReviewError::ChecksFailed {
                id,
                check: failure(f),
            },
            _ => ReviewError::ChecksNotRun {
                id,
                why: c.summary(),
            },
        },
        None if gate.project_has_checks => ReviewError::ChecksNotRun {
            id,
            why: "the project has checks, and they were not run for this job".into(),
        },
        None => return Ok(None),
    };
    let Some(by) = &gate.forced_by else {
        return Err(refusal);
    };
    let past = match &refusal {
        ReviewError::ChecksFailed { check, .. } => format!("checks failed: {check}"),
        ReviewError::ChecksNotRun { why, .. } => format!("checks not passed: {why}"),
        other => other.to_string(),
    };
    Ok(Some(format!(
        "by {by} at {}, {past}",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )))
}
