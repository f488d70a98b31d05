//! The agent's commands: `luzia ask`, `luzia gate`, `luzia progress`. They run inside a job
//! (LUZIA_JOB_DIR) and talk to the operator through the job directory.

use std::io::Write;

use anyhow::Result;

use crate::cli::{AskArgs, AskType, GateArgs, ProgressArgs};
use crate::jobs::hitl::agent::{self, Ask, AskResult, GateResult, GateSpec, ProgressReport};
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
        header: String::new(),
        descriptions: Vec::new(),
        multi_select: false,
    };
    match agent::ask(&args.dir.job_dir, &spec)? {
        AskResult::Answered(r) => {
            eprintln!("luzia: answered by {}", r.who());
            writeln!(out, "{}", r.answer)?;
            Ok(0)
        }
        AskResult::TimedOutDefault(r) => {
            eprintln!("luzia: no answer in time: using the default");
            writeln!(out, "{}", r.answer)?;
            Ok(0)
        }
        AskResult::TimedOut => {
            eprintln!("luzia: no answer in time and no --default: giving up on the question");
            Ok(EXIT_NO_ANSWER)
        }
    }
}

pub fn gate(args: &GateArgs) -> Result<u8> {
    let spec = GateSpec {
        gate: args.name.clone(),
        description: args.description.clone(),
        context: args.context.clone(),
        auto_approve_after: args.auto_approve_after,
    };
    match agent::gate(&args.dir.job_dir, &spec)? {
        GateResult::Decided(d) if d.approved => {
            eprintln!("luzia: approved by {}", d.who());
            Ok(0)
        }
        GateResult::AutoApproved(_) => {
            eprintln!("luzia: approved automatically");
            Ok(0)
        }
        GateResult::Decided(d) => {
            // The reason, word for word, and nothing else: the agent may parse it.
            eprintln!("{}", d.reason);
            Ok(EXIT_DENIED)
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
