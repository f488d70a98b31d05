//! `[alarms]` and the projects' budgets, from the strings the file gives to the rules.

use std::collections::BTreeMap;
use std::time::Duration;

use super::ConfigError;
use super::file::{AlarmsFile, Project};
use crate::jobs::insight::alarms::AlarmRules;
use crate::jobs::model::time::parse_duration;

pub(super) fn alarm_rules(
    file: &AlarmsFile,
    projects: &BTreeMap<String, Project>,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<AlarmRules, ConfigError> {
    let mut rules = AlarmRules::default();
    let duration = |key: &str, v: &Option<String>, default: Duration| match v {
        None => Ok(default),
        Some(s) => parse_duration(s)
            .map_err(|e| invalid(format!("[alarms] {key}: {e}")))
            .and_then(|d| {
                if d.is_zero() {
                    Err(invalid(format!("[alarms] {key} must be longer than 0s")))
                } else {
                    Ok(d)
                }
            }),
    };
    rules.stall_after = duration("stall_after", &file.stall_after, rules.stall_after)?;
    rules.question_after = duration("question_after", &file.question_after, rules.question_after)?;
    for (key, value, slot) in [
        (
            "budget_warn_percent",
            file.budget_warn_percent,
            &mut rules.budget_warn_percent,
        ),
        (
            "memory_percent",
            file.memory_percent,
            &mut rules.memory_percent,
        ),
    ] {
        match value {
            Some(v) if (1..=100).contains(&v) => *slot = v,
            Some(v) => {
                return Err(invalid(format!(
                    "[alarms] {key} = {v}: give a percent from 1 to 100"
                )));
            }
            None => {}
        }
    }
    for (name, project) in projects {
        if let Some(b) = &project.budget {
            let d =
                parse_duration(b).map_err(|e| invalid(format!("[projects.{name}] budget: {e}")))?;
            rules.project_budgets.insert(name.clone(), d);
        }
    }
    Ok(rules)
}
