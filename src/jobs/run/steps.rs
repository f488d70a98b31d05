//! What runs around a job's agent, from the project's config: its `setup` (shell command lines
//! run in the job's tree before the agent starts: a failure stops the job there, with the
//! reason) and its `checks` (run after the agent ended well: the job is done only when each
//! exits 0). Both are fixed in meta.json at dispatch, so that a job runs what it was given and
//! says what that was; their output goes to output.log under a heading, and the checks' results
//! (exit code, duration, last lines) to meta.json's `checks`, each as it ends.
//!
//! How one line runs (a child of the supervisor, as the project's user, stoppable) is the
//! caller's, given as a [`RunLine`]: the supervisor's runs it in its own process group and
//! passes a stop on, as for the agent.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use chrono::Utc;
use serde_json::{Value, json};

use crate::jobs::fs::names::LOG_FILE;
use crate::jobs::fs::publish::{update_meta, update_meta_unsynced};
use crate::jobs::model::checks::{CheckResult, CheckState, Checks, TAIL_LINES, failure};
use crate::jobs::run::finish;
use crate::jobs::text::sanitize::{ellipsize, sanitize_line};

pub mod again;
pub mod ports;

/// The project's steps, as dispatch records them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub setup: Vec<String>,
    pub checks: Vec<String>,
    /// Untracked files a new worktree receives (gitignore patterns), beside `.worktreeinclude`.
    pub include: Vec<String>,
}

impl Steps {
    /// Into a new job's meta.json: `setup` (the lines) and `checks` (the lines, `planned`).
    pub fn record(&self, meta: &mut Value) {
        if !self.setup.is_empty() {
            meta["setup"] = json!(self.setup);
        }
        if !self.checks.is_empty() {
            meta["checks"] = json!(Checks::planned(self.checks.clone()));
        }
    }
}

/// Runs one shell command line in the job's tree, its output appended to the log. Returns its
/// exit code (minus the signal that ended it), or why it could not be started.
pub type RunLine<'a> = dyn FnMut(&str) -> Result<i32, String> + 'a;

/// The setup lines meta.json holds.
pub fn setup_of(dir: &Path) -> Vec<String> {
    read_meta(dir)
        .and_then(|m| {
            m.get("setup")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

fn read_meta(dir: &Path) -> Option<serde_json::Map<String, Value>> {
    let bytes = crate::jobs::fs::files::read_capped(
        &dir.join(crate::jobs::fs::names::META_FILE),
        crate::jobs::fs::files::META_FILE_CAP,
    )
    .ok()??;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Runs the job's setup, each line under a heading in the log. `Err` holds why the job must not
/// go on (also recorded as meta.json's `setup_error`).
pub fn setup(dir: &Path, id: &str, log: &File, run: &mut RunLine<'_>) -> Result<(), String> {
    let lines = setup_of(dir);
    for line in &lines {
        let _ = finish::append(dir, log, &format!("luzia: setup: {line}\n"));
        let why = match run(line) {
            Ok(0) => continue,
            Ok(code) => format!("the setup line `{line}` failed (exit {code})"),
            Err(e) => format!("the setup line `{line}` could not be started: {e}"),
        };
        let _ = update_meta(dir, |m| {
            m.insert("setup_error".into(), why.clone().into());
            true
        });
        let _ = finish::append(
            dir,
            log,
            &format!(
                "luzia: {why}; the agent was not started (fix the setup or the project, then \
                 `luzia retry {id}`)\n"
            ),
        );
        return Err(why);
    }
    Ok(())
}

/// The job's checks as meta.json holds them.
pub fn checks_of(dir: &Path) -> Option<Checks> {
    Checks::from_meta(read_meta(dir)?.get("checks")).map(|b| *b)
}

/// meta.json's `checks` replaced: made durable once they are over (the verdict), not while
/// they run (a crash then loses the job's run anyway).
pub fn write_checks(dir: &Path, checks: &Checks) {
    let Ok(v) = serde_json::to_value(checks) else {
        return;
    };
    let change = |m: &mut serde_json::Map<String, Value>| {
        m.insert("checks".into(), v);
        true
    };
    let _ = match checks.state {
        CheckState::Running => update_meta_unsynced(dir, change),
        _ => update_meta(dir, change),
    };
}

/// Why checks planned for a job were not run when its agent ended (`None`: they are to run).
pub fn not_run_because(code: i32, stopped: bool) -> Option<String> {
    match (stopped, code) {
        (true, _) => Some("the job was stopped".into()),
        (false, 0) => None,
        (false, code) => Some(format!("the agent did not end well (exit {code})")),
    }
}

/// One check as it ran: its exit code (or why it could not start) and its last lines.
pub type CheckRun = (Result<i32, String>, Vec<String>);

/// Runs `commands` one after the other, each announced through `say` (a heading), recording
/// each result in meta.json as it ends; `stopped` says whether a stop was asked for meanwhile
/// (the rest is then not run). Returns the record.
pub fn run_checks(
    dir: &Path,
    commands: Vec<String>,
    note: &str,
    run: &mut dyn FnMut(&str) -> CheckRun,
    say: &mut dyn FnMut(&str),
    stopped: &dyn Fn() -> bool,
) -> Checks {
    let mut checks = Checks {
        commands,
        state: CheckState::Running,
        started: Some(Utc::now()),
        note: note.to_owned(),
        ..Checks::default()
    };
    write_checks(dir, &checks);
    let commands = checks.commands.clone();
    for (i, line) in commands.iter().enumerate() {
        if stopped() {
            break;
        }
        say(&format!("luzia: check: {line}\n"));
        let begun = Instant::now();
        let (ran, mut tail) = run(line);
        let seconds = (begun.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        if let Err(e) = &ran {
            tail.push(e.clone());
        }
        checks.results.push(CheckResult {
            command: line.clone(),
            exit_code: ran.ok(),
            seconds,
            tail,
        });
        // The last one is written with the final state, below.
        if i + 1 < commands.len() {
            write_checks(dir, &checks);
        }
    }
    checks.state = match (stopped(), checks.first_failure()) {
        (true, _) => CheckState::Stopped,
        (false, Some(_)) => CheckState::Failed,
        (false, None) => CheckState::Passed,
    };
    checks.finished = Some(Utc::now());
    write_checks(dir, &checks);
    let said = match (checks.state, checks.first_failure()) {
        (CheckState::Failed, Some(f)) => {
            let (_, failed, total) = checks.counts();
            format!("checks failed ({failed} of {total}): {}", failure(f))
        }
        _ => format!("checks {}", checks.summary()),
    };
    say(&format!("luzia: {said}\n"));
    checks
}

/// [`run_checks`] by the supervisor: the headings and each check's output in output.log, its
/// last lines read back from there.
pub fn run_checks_logged(
    dir: &Path,
    log: &File,
    commands: Vec<String>,
    run: &mut RunLine<'_>,
    stopped: &dyn Fn() -> bool,
) -> Checks {
    let len = || log.metadata().map_or(0, |m| m.len());
    let mut check = |line: &str| {
        let from = len();
        let ran = run(line);
        (ran, last_lines(dir, from))
    };
    let mut say = |s: &str| {
        let _ = finish::append(dir, log, s);
    };
    run_checks(dir, commands, "", &mut check, &mut say, stopped)
}

/// Records that the job's planned checks were not run, and why.
pub fn record_not_run(dir: &Path, why: &str) {
    if let Some(mut checks) = checks_of(dir)
        && checks.state == CheckState::Planned
    {
        checks.note = why.to_owned();
        write_checks(dir, &checks);
    }
}

/// The last lines the log gained since `from`, as plain text (a check's own output). Read
/// through a reading descriptor of its own: the supervisor's is for appending only.
pub fn last_lines(dir: &Path, from: u64) -> Vec<String> {
    let Ok(Some(log)) = crate::jobs::fs::files::open_nofollow(&dir.join(LOG_FILE)) else {
        return Vec::new();
    };
    let end = log.metadata().map_or(from, |m| m.len());
    let start = from.max(end.saturating_sub(TAIL_WINDOW as u64));
    let mut bytes = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
    if log.read_exact_at(&mut bytes, start).is_err() {
        return Vec::new();
    }
    tail_of(&bytes)
}

/// How much of a check's output its last lines are looked for in.
pub const TAIL_WINDOW: usize = 16 * 1024;

/// The last non-blank lines of `bytes`, as plain text, each cut at 200 columns.
pub fn tail_of(bytes: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = bytes
        .split(|&b| b == b'\n')
        .map(|l| ellipsize(&sanitize_line(l).plain(), 200))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let keep = lines.len().saturating_sub(TAIL_LINES);
    lines.drain(..keep);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(meta: Value) -> (tempfile::TempDir, File) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("meta.json"), meta.to_string()).unwrap();
        let log = crate::jobs::fs::files::open_append(&d.path().join("output.log")).unwrap();
        (d, log)
    }

    /// A runner that writes what the line says to the log and exits with the number it ends in.
    fn echo(log: &File) -> impl FnMut(&str) -> Result<i32, String> + '_ {
        move |line: &str| {
            use std::io::Write;
            let mut l = log;
            writeln!(l, "ran {line}").unwrap();
            line.rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| "no such program".to_owned())
        }
    }

    #[test]
    fn checks_record_each_result_and_the_first_failure_decides() {
        let (d, log) = job(json!({"id": "j", "checks": {"commands": ["a 0", "b 3", "c 0"]}}));
        let planned = checks_of(d.path()).unwrap();
        assert_eq!(planned.state, CheckState::Planned);
        let mut run = echo(&log);
        let c = run_checks_logged(d.path(), &log, planned.commands, &mut run, &|| false);
        assert_eq!(c.state, CheckState::Failed);
        assert_eq!(c.label(), "✗ 1/3");
        assert_eq!(c.results[1].tail, ["ran b 3"]);
        assert_eq!(checks_of(d.path()).unwrap(), c, "recorded");
        let text = std::fs::read_to_string(d.path().join("output.log")).unwrap();
        assert!(text.contains("luzia: check: b 3\n"), "{text}");
        assert!(
            text.ends_with("luzia: checks failed (1 of 3): b 3 (exit 3)\n"),
            "{text}"
        );
    }

    #[test]
    fn a_setup_failure_is_recorded_and_stops_at_that_line() {
        let (d, log) = job(json!({"id": "j", "setup": ["a 0", "b 1", "c 0"]}));
        let mut run = echo(&log);
        let e = setup(d.path(), "j", &log, &mut run).unwrap_err();
        assert_eq!(e, "the setup line `b 1` failed (exit 1)");
        let text = std::fs::read_to_string(d.path().join("output.log")).unwrap();
        assert!(!text.contains("ran c 0"), "{text}");
        assert!(text.contains("`luzia retry j`"), "{text}");
        let meta = read_meta(d.path()).unwrap();
        assert_eq!(meta["setup_error"], json!(e));
    }

    #[test]
    fn a_stop_ends_the_checks_and_checks_not_run_say_why() {
        let (d, log) = job(json!({"id": "j", "checks": {"commands": ["a 0", "b 0"]}}));
        let mut run = echo(&log);
        let c = run_checks_logged(d.path(), &log, vec!["a 0".into()], &mut run, &|| true);
        assert_eq!((c.state, c.results.len()), (CheckState::Stopped, 0));
        let (d, _log) = job(json!({"id": "j", "checks": {"commands": ["a 0"]}}));
        record_not_run(d.path(), "the agent did not end well (exit 1)");
        let c = checks_of(d.path()).unwrap();
        assert_eq!(c.summary(), "not run: the agent did not end well (exit 1)");
        assert_eq!(not_run_because(0, false), None);
    }
}
