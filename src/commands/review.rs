//! `luzia diff`, `luzia merge`, `luzia discard`, `luzia push`, `luzia pr`: a job's change as
//! git records it, and what to do with a worktree job's branch (see docs/review.md).

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::cli::{DiffArgs, MergeArgs, PushArgs, ReviewArgs};
use crate::commands::{find_job, stdout_colors};
use crate::config::Config;
use crate::jobs::Job;
use crate::jobs::model::review::{Change, ChangeKind, FileChange};
use crate::jobs::review;
use crate::jobs::review::gate::Gate;
use crate::jobs::text::sanitize::{plain_text, sanitize_line};

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

pub fn diff(cfg: &Config, args: &DiffArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let change = review::change(&job)?;
    if args.json {
        let mut v = serde_json::to_value(&change)?;
        v["id"] = json!(job.id.as_str());
        v["stat"] = serde_json::to_value(change.stat())?;
        if args.stat {
            v["patch"] = json!(null);
        }
        serde_json::to_writer_pretty(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(0);
    }
    let color = stdout_colors();
    let paint = |code: &str, text: &str| match color {
        true => format!("{code}{text}{RESET}"),
        false => text.to_owned(),
    };
    for note in &change.notes {
        writeln!(
            out,
            "{}",
            paint(YELLOW, &format!("note: {}", plain_text(note)))
        )?;
    }
    for f in &change.files {
        writeln!(out, "{}", file_line(f, &paint))?;
    }
    writeln!(out, "{}", change.stat().summary())?;
    if args.stat {
        return Ok(0);
    }
    if !change.patch.is_empty() {
        writeln!(out)?;
    }
    patch(&change, color, out)?;
    if change.truncated {
        writeln!(
            out,
            "{}",
            paint(
                YELLOW,
                "note: the diff was cut at 8 MiB (the file list above is complete)"
            )
        )?;
    }
    Ok(0)
}

fn file_line(f: &FileChange, paint: &dyn Fn(&str, &str) -> String) -> String {
    let (mark, code) = match f.kind {
        ChangeKind::Added => ("A", GREEN),
        ChangeKind::Deleted => ("D", RED),
        ChangeKind::Renamed => ("R", CYAN),
        ChangeKind::Modified => ("M", ""),
    };
    let path = match &f.from {
        Some(from) => format!("{} -> {}", plain_text(from), plain_text(&f.path)),
        None => plain_text(&f.path),
    };
    let counts = match f.binary {
        true => "binary".to_owned(),
        false => format!(
            "{} {}",
            paint(GREEN, &format!("+{}", f.added)),
            paint(RED, &format!("-{}", f.removed))
        ),
    };
    format!("{} {path}  {counts}", paint(code, mark))
}

/// The patch: as git printed it when the output is a file or a pipe (so that it applies); on a
/// terminal, each line made safe to show and coloured.
fn patch(change: &Change, color: bool, out: &mut dyn Write) -> Result<()> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        out.write_all(change.patch.as_bytes())?;
        return Ok(());
    }
    for line in change.patch.lines() {
        let safe = sanitize_line(line.as_bytes()).plain();
        let code = match line.as_bytes().first() {
            _ if !color => "",
            Some(b'+') if !line.starts_with("+++") => GREEN,
            Some(b'-') if !line.starts_with("---") => RED,
            Some(b'@') => CYAN,
            Some(b'd') if line.starts_with("diff --git") => BOLD,
            _ => "",
        };
        if code.is_empty() {
            writeln!(out, "{safe}")?;
        } else {
            writeln!(out, "{code}{safe}{RESET}")?;
        }
    }
    Ok(())
}

pub fn merge(cfg: &Config, args: &MergeArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let gate = Gate {
        project_has_checks: !cfg.steps(job.project()).checks.is_empty(),
        forced_by: args.force.then(crate::jobs::hitl::operator::operator),
    };
    let others = overlapping(cfg, &job);
    if let Some(mine) = others.get(&job.id) {
        writeln!(
            out,
            "{}: its files are also changed by those jobs, which merge after it",
            plain_text(&review::overlap::describe(mine))
        )?;
    }
    let done = review::merge(&job, &gate)?;
    writeln!(out, "{}", plain_lines(&done))?;
    // The jobs it overlapped: do they still merge cleanly into the project as it is now?
    for (other, _) in others.get(&job.id).into_iter().flatten() {
        let Ok(other_job) = find_job(cfg, other) else {
            continue;
        };
        let said = match review::overlap::merges_cleanly(&other_job) {
            Ok(Ok(())) => format!("job {other} still merges cleanly"),
            Ok(Err(files)) => format!(
                "job {other} now conflicts in {}: merge it by hand, or retry it",
                files.join(", ")
            ),
            Err(e) => format!("job {other}: cannot tell whether it still merges ({e})"),
        };
        let recorded = format!("{said} (after {} was merged)", job.id);
        review::overlap::record_after_merge(&other_job, &recorded);
        writeln!(out, "{}", plain_text(&said))?;
    }
    Ok(0)
}

/// The unmerged worktree jobs of the root that overlap others.
pub fn overlapping(cfg: &Config, job: &Job) -> review::overlap::Overlaps {
    let Ok(root) = crate::commands::jobs_root(cfg) else {
        return Default::default();
    };
    if !review::overlap::is_unmerged_worktree(job) {
        return Default::default();
    }
    let now = chrono::Utc::now();
    let index = crate::commands::jobs_index(root);
    let all =
        crate::jobs::model::scan::scan_through(root, now, index.as_deref()).unwrap_or_default();
    let same: Vec<&Job> = all
        .iter()
        .filter(|j| j.project() == job.project())
        .collect();
    review::overlap::overlaps(same)
}

pub fn push(cfg: &Config, args: &PushArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let done = review::push(&job, args.remote.as_deref())?;
    writeln!(out, "{}", plain_lines(&done))?;
    Ok(0)
}

pub fn pr(cfg: &Config, args: &ReviewArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let Some(command) = cfg
        .projects
        .get(job.project())
        .and_then(|p| p.pr_command.clone())
    else {
        return Err(review::ReviewError::NoPrCommand(job.project().to_owned()).into());
    };
    let done = review::pull_request(&job, &command)?;
    writeln!(out, "{}", plain_lines(&done))?;
    Ok(0)
}

pub fn discard(cfg: &Config, args: &ReviewArgs, out: &mut dyn Write) -> Result<u8> {
    let job = find_job(cfg, &args.id)?;
    let done = review::discard(&job)?;
    writeln!(out, "{}", plain_lines(&done))?;
    Ok(0)
}

fn plain_lines(s: &str) -> String {
    s.lines().map(plain_text).collect::<Vec<_>>().join("\n")
}
