//! `luzia doctor`: what a first job needs, checked one thing a line (ok, warning, problem),
//! each problem with its fix. A problem is a blocker (no agent program, no credential for
//! Claude Code, a jobs root or queue luzia cannot write, a config that does not load): the
//! exit code is then 1. Credentials are named, never shown.

mod checks;
mod probe;

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::cli::DoctorArgs;
use crate::config::{Config, Overrides};

pub use checks::{Facts, gather};

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warning,
    /// A blocker: a first job cannot run until it is fixed.
    Problem,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Problem => "problem",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub level: Level,
    /// What was checked: `agent`, `credentials`, `jobs root`, ...
    pub topic: &'static str,
    pub says: String,
    /// What to do, for a warning or a problem.
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(topic: &'static str, says: impl Into<String>) -> Check {
        Check {
            level: Level::Ok,
            topic,
            says: says.into(),
            fix: None,
        }
    }

    pub fn warning(topic: &'static str, says: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Warning,
            topic,
            says: says.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn problem(topic: &'static str, says: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Problem,
            topic,
            says: says.into(),
            fix: Some(fix.into()),
        }
    }
}

pub fn run(overrides: &Overrides, args: &DoctorArgs, out: &mut dyn Write) -> Result<u8> {
    let config = Config::load(overrides);
    let facts = Facts::of_this_machine();
    let chosen = args.agent.as_deref();
    let checks = gather(chosen, config.as_ref().map_err(|e| e.to_string()), &facts);
    if args.json {
        write_json(&checks, out)?;
    } else {
        write_text(&checks, chosen, out)?;
    }
    Ok(u8::from(checks.iter().any(|c| c.level == Level::Problem)))
}

/// `ok       topic        what it says`, a problem's or a warning's fix on the next line,
/// then a last line that sums up (with the first job's command line, for the agent `chosen`).
pub fn write_text(
    checks: &[Check],
    chosen: Option<&str>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let width = checks.iter().map(|c| c.topic.len()).max().unwrap_or(0);
    for c in checks {
        writeln!(out, "{:<8} {:<width$}  {}", c.level.word(), c.topic, c.says)?;
        if let Some(fix) = &c.fix {
            writeln!(out, "{:<8} {:<width$}  fix: {fix}", "", "")?;
        }
    }
    let count = |l: Level| checks.iter().filter(|c| c.level == l).count();
    let (problems, warnings) = (count(Level::Problem), count(Level::Warning));
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    if problems > 0 {
        writeln!(
            out,
            "\n{}, {}: a job cannot run until each problem is fixed",
            plural(problems, "problem"),
            plural(warnings, "warning")
        )
    } else {
        writeln!(
            out,
            "\nready for a first job ({}): luzia run {}\"your task\"",
            plural(warnings, "warning"),
            chosen.map_or(String::new(), |a| format!("--agent {a} "))
        )
    }
}

fn write_json(checks: &[Check], out: &mut dyn Write) -> std::io::Result<()> {
    let checks: Vec<_> = checks
        .iter()
        .map(|c| json!({"level": c.level.word(), "topic": c.topic, "says": c.says, "fix": c.fix}))
        .collect();
    let ready = !checks.iter().any(|c| c["level"] == "problem");
    writeln!(out, "{}", json!({"ready": ready, "checks": checks}))
}

#[cfg(test)]
mod tests;
