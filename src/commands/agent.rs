//! The agent's commands: `luzia ask`, `luzia gate`, `luzia progress`. They run inside a job
//! (LUZIA_JOB_DIR) and talk to the operator through the job directory.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::Result;

use crate::cli::{AskArgs, AskType, GateArgs, ProgressArgs};
use crate::jobs::fs::wait::Stop;
use crate::jobs::hitl::agent::{
    self, AgentError, Ask, AskResult, GateResult, GateSpec, ProgressReport,
};
use crate::jobs::hitl::operator::Scope;
use crate::jobs::model::waiting::QuestionType;

/// Exit code when a question timed out with no default.
pub const EXIT_NO_ANSWER: u8 = 3;
/// Exit code when a gate was denied.
pub const EXIT_DENIED: u8 = 4;

pub fn ask(args: &AskArgs, out: &mut dyn Write) -> Result<u8> {
    let kind = match args.kind {
        Some(AskType::Choice) => QuestionType::Choice,
        Some(AskType::Text) => QuestionType::Text,
        Some(AskType::Confirm) => QuestionType::Confirm,
        None if !args.options.is_empty() => QuestionType::Choice,
        None => QuestionType::Text,
    };
    let spec = Ask {
        question: args.question.clone(),
        kind,
        options: args.options.clone(),
        context: args.context.clone(),
        timeout: args.timeout,
        default: args.default.clone(),
        header: args.header.clone(),
        descriptions: args.descriptions.clone(),
        multi_select: args.several,
    };
    let (stop, signalled) = stop_on_signals()?;
    match agent::ask_or_stop(&args.dir.job_dir, &spec, &stop) {
        Err(AgentError::Stopped(what)) => interrupted(&what, &signalled),
        Err(e) => Err(e.into()),
        Ok(result) => said_ask(result, out),
    }
}

fn said_ask(result: AskResult, out: &mut dyn Write) -> Result<u8> {
    match result {
        AskResult::Answered(r) => {
            crate::say!("luzia: answered by {}", r.who());
            writeln!(out, "{}", r.answer)?;
            Ok(0)
        }
        AskResult::TimedOutDefault(r) => {
            crate::say!("luzia: no answer in time: using the default");
            writeln!(out, "{}", r.answer)?;
            Ok(0)
        }
        AskResult::TimedOut => {
            crate::say!("luzia: no answer in time and no --default: giving up on the question");
            Ok(EXIT_NO_ANSWER)
        }
    }
}

pub fn gate(args: &GateArgs, out: &mut dyn Write) -> Result<u8> {
    let spec = GateSpec {
        gate: args.name.clone(),
        description: args.description.clone(),
        context: args.context.clone(),
        auto_approve_after: args.auto_approve_after,
        allow_session: args.allow_session.clone(),
    };
    let (stop, signalled) = stop_on_signals()?;
    match agent::gate_or_stop(&args.dir.job_dir, &spec, &stop) {
        Err(AgentError::Stopped(what)) => interrupted(&what, &signalled),
        Err(e) => Err(e.into()),
        Ok(result) => {
            // A gate that offers the session says which was approved, for the script to keep.
            if let (Some(_), GateResult::Decided(d) | GateResult::AutoApproved(d)) =
                (&args.allow_session, &result)
                && d.approved
            {
                let word = match d.scope {
                    Scope::Once => "once",
                    Scope::Session => "session",
                };
                writeln!(out, "{word}")?;
            }
            Ok(said_gate(result))
        }
    }
}

/// A stop for the wait that SIGTERM, SIGINT or SIGHUP sets (`luzia kill`, a Bash tool giving
/// up, a closed terminal), and the number of the signal that set it.
fn stop_on_signals() -> Result<(Stop, Arc<AtomicI32>)> {
    let (stop, signalled) = (Stop::default(), Arc::new(AtomicI32::new(0)));
    let (s, n) = (stop.clone(), Arc::clone(&signalled));
    super::signals::on_stop_signal(move |signal| {
        n.store(signal, Ordering::SeqCst);
        s.stop_because(format!(
            "the agent was stopped ({})",
            super::signals::signal_name(signal)
        ));
    })?;
    Ok((stop, signalled))
}

/// Stopped by a signal while waiting: what was withdrawn, and the exit code of a process that
/// signal ended.
fn interrupted(what: &str, signalled: &AtomicI32) -> Result<u8> {
    let n = signalled.load(Ordering::SeqCst);
    crate::say!(
        "luzia: stopped by {} while waiting: {what} was withdrawn",
        super::signals::signal_name(n)
    );
    Ok(u8::try_from(128 + n).unwrap_or(1))
}

fn said_gate(result: GateResult) -> u8 {
    match result {
        GateResult::Decided(d) if d.approved => {
            crate::say!("luzia: {} by {}", d.verb(), d.who());
            0
        }
        GateResult::AutoApproved(_) => {
            crate::say!("luzia: approved automatically");
            0
        }
        GateResult::Decided(d) => {
            // The reason, word for word, and nothing else: the agent may parse it.
            crate::say!("{}", d.reason);
            EXIT_DENIED
        }
    }
}

pub fn progress(args: &ProgressArgs) -> Result<u8> {
    let report = ProgressReport::checked(
        args.percent,
        args.step.zip(args.of),
        args.name.clone(),
        args.eta.map(|eta| eta.as_secs()),
    )?;
    agent::report_progress(&args.dir.job_dir, &report)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::JobDirArg;

    fn args(dir: &std::path::Path) -> ProgressArgs {
        ProgressArgs {
            percent: None,
            step: None,
            of: None,
            name: None,
            eta: None,
            dir: JobDirArg {
                job_dir: dir.to_owned(),
            },
        }
    }

    /// `progress.json` as `luzia progress` writes it, byte for byte, its time aside.
    #[test]
    fn progress_keeps_its_fields_and_their_order() {
        let at = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = || {
            let text = std::fs::read_to_string(dir.path().join("progress.json")).unwrap();
            at.replace_all(&text, "T").into_owned()
        };
        let all = ProgressArgs {
            percent: Some(40.0),
            step: Some(2),
            of: Some(5),
            name: Some("Running tests".into()),
            eta: Some(std::time::Duration::from_secs(90)),
            ..args(dir.path())
        };
        assert_eq!(progress(&all).unwrap(), 0);
        assert_eq!(
            written(),
            r#"{"percent":40.0,"step":2,"total_steps":5,"step_name":"Running tests","eta_seconds":90,"updated_at":"T"}"#
        );
        let some = ProgressArgs {
            percent: Some(7.5),
            ..args(dir.path())
        };
        progress(&some).unwrap();
        assert_eq!(written(), r#"{"percent":7.5,"updated_at":"T"}"#);
        assert!(progress(&args(dir.path())).is_err(), "nothing to report");
    }
}

#[cfg(test)]
mod ask_tests {
    use super::*;
    use crate::cli::JobDirArg;
    use crate::jobs::hitl::operator::{answer, operator};
    use crate::jobs::{JobId, read_job};

    fn args(dir: &std::path::Path) -> AskArgs {
        AskArgs {
            question: "Which checks?".into(),
            options: vec!["unit".into(), "smoke".into(), "load".into()],
            kind: None,
            context: String::new(),
            timeout: None,
            default: None,
            descriptions: vec!["fast".into(), "after".into(), "slow".into()],
            header: "Checks".into(),
            several: true,
            dir: JobDirArg {
                job_dir: dir.to_owned(),
            },
        }
    }

    #[test]
    fn ask_asks_a_choice_of_several_with_descriptions_and_prints_the_picks() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("j1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
        let asker = {
            let a = args(&dir);
            std::thread::spawn(move || {
                let mut out = Vec::new();
                let code = ask(&a, &mut out).unwrap();
                (code, String::from_utf8(out).unwrap())
            })
        };
        let id = JobId::parse("j1").unwrap();
        let job = loop {
            let j = read_job(root.path(), &id, chrono::Utc::now()).unwrap();
            if j.question.is_some() {
                break j;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let q = job.question.as_ref().unwrap();
        assert_eq!((q.header.as_str(), q.multi_select), ("Checks", true));
        assert_eq!(q.descriptions, ["fast", "after", "slow"]);
        answer(&job, "3, 1", "cli", &operator(), chrono::Utc::now()).unwrap();
        assert_eq!(asker.join().unwrap(), (0, "unit, load\n".to_string()));

        let mismatched = AskArgs {
            descriptions: vec!["only one".into()],
            ..args(&dir)
        };
        let err = ask(&mismatched, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("one description for each option"), "{err}");
    }
}
