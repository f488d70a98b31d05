//! `luzia checks ID`: the project's checks run again in a finished job's tree (see
//! [`crate::jobs::run::steps::again`]): those of the config as it is now, else those the job
//! was given. Exit 0 when they pass, 1 when one fails.

use std::io::Write;

use anyhow::Result;

use crate::cli::ChecksArgs;
use crate::commands::find_job;
use crate::config::Config;
use crate::jobs::model::checks::CheckState;
use crate::jobs::run::steps::again::{AgainError, run_again};
use crate::jobs::text::sanitize::plain_text;

pub fn run(cfg: &Config, args: &ChecksArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let project = job.project().to_owned();
    let configured = cfg.steps(&project).checks;
    let commands = if configured.is_empty() {
        job.checks().map(|c| c.commands.clone()).unwrap_or_default()
    } else {
        configured
    };
    if commands.is_empty() {
        return Err(AgainError::NoChecks {
            project,
            config: cfg.file_to_edit(),
        }
        .into());
    }
    let by = crate::jobs::hitl::operator::operator();
    let checks = if args.json {
        // The checks' own output to stderr: stdout is the JSON.
        run_again(
            &job,
            commands,
            &cfg.agent_env(&project),
            &by,
            &mut std::io::stderr(),
        )?
    } else {
        run_again(&job, commands, &cfg.agent_env(&project), &by, out)?
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &checks)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "checks of job {}: {}",
            job.id,
            plain_text(&checks.summary())
        )?;
    }
    Ok(u8::from(checks.state != CheckState::Passed))
}
