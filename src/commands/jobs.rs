//! `luzia jobs`: the list (a table or JSON), and one job in full.

use std::io::Write;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::cli::JobsArgs;
use crate::commands::job_rows::{JobRow, local, write_table};
use crate::commands::table::cut;
use crate::config::Config;
use crate::jobs::fs::tail::last_lines;
use crate::jobs::insight::known_issues::{IssueScanner, PatternSet, SCAN_WINDOW};
use crate::jobs::insight::{alarms, timeline};
use crate::jobs::model::checks::Checks;
use crate::jobs::model::describe::{self, Emphasis};
use crate::jobs::model::job::read_prompt;
use crate::jobs::model::lifecycle::{self, Exchange, Stage};
use crate::jobs::model::meta::Meta;
use crate::jobs::model::scan::scan_through;
use crate::jobs::model::session::Usage;
use crate::jobs::model::stop::StopRequest;
use crate::jobs::text::sanitize::{plain_text, sanitize_line};
use crate::jobs::{Job, Status, fs::files::open_nofollow};

pub fn run(cfg: &Config, args: &JobsArgs, out: &mut dyn Write) -> Result<()> {
    match &args.id {
        Some(id) => {
            let mut job = super::find_job(cfg, id)?;
            if job.finished.is_some() {
                // Only an ended job is retried; its retries are in other directories.
                job.retried_by = lifecycle::find_retries(super::jobs_root(cfg)?, &job).into();
            }
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&job_json(&job, Utc::now()))?
                )?;
            } else {
                show_one(cfg, &job, out, super::stdout_colors())?;
            }
        }
        None => {
            let Some(root) = super::existing_jobs_root(cfg)? else {
                return nothing_yet(cfg, args, out);
            };
            let now = Utc::now();
            let all = scan_through(root, now, super::jobs_index(root).as_deref())?;
            super::check_projects(cfg, &all, &args.projects)?;
            let jobs = select(all, args);
            if args.json {
                write_json_list(&jobs, now, out)?;
            } else {
                let width = terminal_width();
                let rows: Vec<JobRow> = jobs.iter().map(|j| JobRow::of(j, now)).collect();
                write_table(&rows, args.timing, now, width, super::stdout_colors(), out)?;
                let troubled = jobs.iter().filter(|j| !j.problems.is_empty()).count();
                if troubled > 0 {
                    out.flush()?;
                    crate::say!(
                        "luzia: {troubled} job(s) marked '!' have files that could not be read: \
                         `luzia jobs ID` says which and why"
                    );
                }
            }
        }
    }
    Ok(())
}

/// The list of a jobs root that does not exist yet: empty, with the next step.
fn nothing_yet(cfg: &Config, args: &JobsArgs, out: &mut dyn Write) -> Result<()> {
    super::check_projects(cfg, &[], &args.projects)?;
    if args.json {
        writeln!(out, "[]")?;
    } else {
        writeln!(out, "{}", super::no_jobs_yet(cfg))?;
    }
    Ok(())
}

/// The list as `serde_json::to_string_pretty` writes it, byte for byte, one job at a time:
/// at 100,000 jobs the whole text would be hundreds of megabytes held at once.
fn write_json_list(jobs: &[Job], now: DateTime<Utc>, out: &mut dyn Write) -> Result<()> {
    use serde::Serializer;
    let mut buffered = std::io::BufWriter::new(out);
    let mut json = serde_json::Serializer::pretty(&mut buffered);
    json.collect_seq(jobs.iter().map(|j| job_json(j, now)))?;
    buffered.write_all(b"\n")?;
    buffered.flush()?;
    Ok(())
}

/// Filters by project and status (each a set: any of them matches), then applies the limit.
pub fn select(jobs: Vec<Job>, args: &JobsArgs) -> Vec<Job> {
    let mut selected: Vec<Job> = jobs
        .into_iter()
        .filter(|j| args.projects.is_empty() || args.projects.iter().any(|p| p == j.project()))
        .filter(|j| args.statuses.is_empty() || args.statuses.contains(&j.status))
        .collect();
    if let Some(limit) = args.limit {
        selected.truncate(limit);
    }
    selected
}

fn rfc3339(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// One element of `luzia jobs --json`: protocol.md's "Machine-readable CLI output", plus
/// `problems`; the fields in this order.
#[derive(Serialize)]
pub struct JobJson<'a> {
    id: &'a str,
    project: &'a str,
    task: &'a str,
    status: &'static str,
    exit_code: Option<i32>,
    pid: Option<u32>,
    started: Option<String>,
    finished: Option<String>,
    elapsed_seconds: Option<i64>,
    progress: Option<ProgressJson<'a>>,
    waiting: Option<&'static str>,
    stop: Option<&'a StopRequest>,
    session_id: Option<&'a str>,
    resumes: Option<&'a str>,
    usage: Option<UsageJson<'a>>,
    activity: Option<ActivityJson<'a>>,
    /// For a `needs_input` job: `asking`, `answered` or `retried`.
    stage: Option<&'static str>,
    /// For a `needs_input` job: the question it stopped for and the answer given since.
    exchange: Option<ExchangeJson<'a>>,
    /// For a `limited` job: when the usage limit that stopped it resets.
    resets_at: Option<String>,
    /// The project's checks and how they went (meta.json's `checks`), when it has some.
    checks: Option<&'a Checks>,
    /// Why the project's setup failed (the agent was then not started).
    setup_error: Option<&'a str>,
    /// The first of the job's ports (`LUZIA_PORT`).
    port: Option<u16>,
    retry_of: Option<String>,
    retried_by: Vec<&'a str>,
    problems: Vec<String>,
}

#[derive(Serialize)]
struct ExchangeJson<'a> {
    question_id: &'a str,
    question: &'a str,
    answer: Option<&'a str>,
    answered_by: Option<&'a str>,
    answered_at: Option<String>,
    source: Option<&'a str>,
}

impl<'a> ExchangeJson<'a> {
    fn of(e: &'a Exchange) -> ExchangeJson<'a> {
        let a = e.answer.as_ref();
        ExchangeJson {
            question_id: &e.question.id,
            question: &e.question.question,
            answer: a.map(|a| a.answer.as_str()),
            answered_by: a.map(|a| a.answered_by.as_str()),
            answered_at: rfc3339(a.and_then(|a| a.answered_at)),
            source: a.map(|a| a.source.as_str()),
        }
    }
}

/// meta.json's `usage` with every field present (`null` when unknown), so that a reader never
/// has to tell a missing key from a missing figure.
#[derive(Serialize)]
struct UsageJson<'a> {
    model: Option<&'a str>,
    turns: Option<u64>,
    duration_ms: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_creation_tokens: Option<u64>,
    total_tokens: u64,
    cost_usd: Option<f64>,
    outcome: Option<&'a str>,
    error: Option<&'a str>,
}

impl<'a> UsageJson<'a> {
    fn of(u: &'a Usage) -> UsageJson<'a> {
        let text = |s: &'a String| Some(s.as_str()).filter(|s| !s.is_empty());
        UsageJson {
            model: text(&u.model),
            turns: u.turns,
            duration_ms: u.duration_ms,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_creation_tokens: u.cache_creation_tokens,
            total_tokens: u.total_tokens(),
            cost_usd: u.cost_usd,
            outcome: text(&u.outcome),
            error: text(&u.error),
        }
    }
}

#[derive(Serialize)]
struct ActivityJson<'a> {
    what: &'a str,
    since: Option<String>,
}

#[derive(Serialize)]
struct ProgressJson<'a> {
    percent: Option<f64>,
    step: Option<u64>,
    total_steps: Option<u64>,
    step_name: Option<&'a str>,
}

pub fn job_json(job: &Job, now: DateTime<Utc>) -> JobJson<'_> {
    JobJson {
        id: job.id.as_str(),
        project: job.project(),
        task: job.task(),
        status: job.status.as_str(),
        exit_code: job.exit_code,
        pid: job.pid,
        started: rfc3339(job.started),
        finished: rfc3339(job.finished),
        elapsed_seconds: job.elapsed_secs(now),
        progress: job.progress.as_ref().map(|p| ProgressJson {
            percent: p.percent_done(),
            step: p.step,
            total_steps: p.total_steps,
            step_name: p.step_name.as_deref(),
        }),
        waiting: job.waiting().map(|w| w.as_str()),
        stop: job.stop.as_deref(),
        session_id: meta_text(job, |m| &m.session_id),
        resumes: meta_text(job, |m| &m.resumes),
        usage: job
            .meta
            .as_ref()
            .and_then(|m| m.usage.as_deref())
            .map(UsageJson::of),
        activity: job
            .activity
            .as_ref()
            .filter(|_| job.status.is_active())
            .map(|a| ActivityJson {
                what: &a.what,
                since: rfc3339(a.since),
            }),
        stage: job.stage().map(|s| match s {
            Stage::Asking => "asking",
            Stage::Answered => "answered",
            Stage::Retried(_) => "retried",
        }),
        exchange: job.exchange.as_deref().map(ExchangeJson::of),
        resets_at: rfc3339(
            job.limit_resets_at()
                .filter(|_| job.status == Status::Limited),
        ),
        checks: job.checks(),
        setup_error: meta_text(job, |m| &m.setup_error),
        port: job.meta.as_ref().and_then(|m| m.port),
        retry_of: job.retry_of().map(|id| id.to_string()),
        retried_by: job.retried_by.iter().map(|id| id.as_str()).collect(),
        problems: job.problems.iter().map(|p| p.to_string()).collect(),
    }
}

/// A text field of meta.json, `None` when empty or unknown.
fn meta_text(job: &Job, field: impl Fn(&Meta) -> &str) -> Option<&str> {
    job.meta
        .as_ref()
        .map(|m| field(m))
        .filter(|s| !s.is_empty())
}

pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size().ok().map(|(w, _)| w as usize)
}

/// The progress column: `40%`, `2/5 Running tests`, or `-`.
pub fn progress_text(job: &Job) -> String {
    let Some(p) = &job.progress else {
        return "-".into();
    };
    progress_words(
        p.step,
        p.total_steps,
        p.percent_done(),
        p.step_name.as_deref(),
    )
}

/// `2/5 Running tests`, `40%`, or `-`: the step when both its number and the count are known,
/// else the percent.
pub fn progress_words(
    step: Option<u64>,
    total: Option<u64>,
    percent: Option<f64>,
    name: Option<&str>,
) -> String {
    let name = name.map(plain_text).unwrap_or_default();
    let head = match (step, total, percent) {
        (Some(s), Some(t), _) => format!("{s}/{t}"),
        (_, _, Some(pct)) => format!("{pct:.0}%"),
        _ => String::new(),
    };
    let text = format!("{head} {name}").trim().to_owned();
    if text.is_empty() { "-".into() } else { text }
}

pub fn status_color(status: Status) -> &'static str {
    match status {
        Status::Running => "\x1b[36m",
        Status::Waiting | Status::NeedsInput => "\x1b[1;33m",
        Status::Limited => "\x1b[33m",
        Status::Completed => "\x1b[32m",
        Status::Failed | Status::Died | Status::ChecksFailed => "\x1b[31m",
        Status::Killed => "\x1b[35m",
        Status::Queued | Status::Unknown => "\x1b[2m",
    }
}

fn show_one(cfg: &Config, job: &Job, out: &mut dyn Write, colors: bool) -> Result<()> {
    writeln!(out, "{:<10} {}", "id:", job.id)?;
    for fact in describe::facts(job, Utc::now()) {
        let value = match fact.emphasis {
            Emphasis::Status if colors => {
                format!("{}{}\x1b[0m", status_color(job.status), fact.value)
            }
            _ => fact.value,
        };
        writeln!(out, "{:<10} {value}", format!("{}:", fact.label))?;
    }
    // Other unmerged jobs touching its files (read from what each recorded: no git).
    if let Some(others) = super::review::overlapping(cfg, job).get(&job.id) {
        let said = crate::jobs::review::overlap::describe(others);
        writeln!(out, "{:<10} {}", "overlap:", plain_text(&said))?;
    }
    if let Ok(Some(prompt)) = read_prompt(job) {
        let first = plain_text(prompt.lines().next().unwrap_or(""));
        writeln!(out, "{:<10} {}", "prompt:", cut(&first, 100))?;
    }
    write_insight(cfg, job, out)?;
    write_last_lines(job, 10, out, colors)
}

/// Known issues in the log (its last `SCAN_WINDOW`), standing alarms, and the timeline: what
/// the cockpit's detail view shows, by the same rules.
fn write_insight(cfg: &Config, job: &Job, out: &mut dyn Write) -> Result<()> {
    let (set, problems) = PatternSet::with_file(&cfg.known_issues);
    for p in &problems {
        crate::say!("luzia: warning: {p}");
    }
    let mut scanner = IssueScanner::new();
    if let Err(e) = scanner.advance(&job.log_path(), &set, SCAN_WINDOW) {
        writeln!(
            out,
            "{:<10} cannot scan {}: {e}",
            "issues:",
            job.log_path().display()
        )?;
    }
    for f in scanner.findings.found.iter() {
        let p = set.pattern(f.pattern);
        writeln!(
            out,
            "{:<10} {} {} (×{}): {}",
            "issue:",
            f.severity,
            p.name,
            f.count,
            cut(&f.last_line, 100)
        )?;
        writeln!(out, "{:<10} {}", "  fix:", plain_text(&p.fix))?;
    }
    let now = Utc::now();
    for a in alarms::job_alarms(job, &cfg.alarms, now) {
        writeln!(out, "{:<10} {}: {}", "alarm:", a.kind, a.detail)?;
    }
    let history = timeline::read_history(&job.dir()).unwrap_or_else(|e| {
        crate::say!("luzia: warning: {e}");
        Vec::new()
    });
    let findings = Some((&scanner.findings, &set)).filter(|(f, _)| !f.is_empty());
    writeln!(out, "--- timeline ---")?;
    for e in timeline::job_timeline(job, &history, findings, &cfg.alarms, now) {
        writeln!(out, "{:<19}  {:<9} {}", local(e.at), e.kind.label(), e.text)?;
    }
    Ok(())
}

fn write_last_lines(job: &Job, n: usize, out: &mut dyn Write, colors: bool) -> Result<()> {
    writeln!(
        out,
        "--- last {n} lines of {} ---",
        job.log_path().display()
    )?;
    match open_nofollow(&job.log_path()) {
        Ok(Some(file)) => {
            let len = file.metadata()?.len();
            for line in last_lines(&file, len, n)? {
                let styled = sanitize_line(&line.bytes);
                let text = if colors {
                    styled.to_ansi()
                } else {
                    styled.plain()
                };
                writeln!(out, "{}{}", if line.cut { "…" } else { "" }, text)?;
            }
        }
        Ok(None) => writeln!(out, "(no output yet)")?,
        Err(e) => writeln!(out, "(cannot read it: {e})")?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fixtures;

    /// Today's `jobs --json`, byte for byte (protocol.md's "Machine-readable CLI output").
    const GOLDEN: &str = include_str!("../../tests/golden/jobs.json");

    #[test]
    fn the_json_keeps_its_fields_and_their_order() {
        let jobs = fixtures::jobs();
        let list: Vec<_> = jobs.iter().map(|j| job_json(j, fixtures::now())).collect();
        let text = serde_json::to_string_pretty(&list).unwrap();
        assert_eq!(format!("{text}\n"), GOLDEN);
    }

    #[test]
    fn the_list_written_one_job_at_a_time_is_the_same_text() {
        let jobs = fixtures::jobs();
        let mut streamed = Vec::new();
        write_json_list(&jobs, fixtures::now(), &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), GOLDEN);
        for n in [0, 1, 2] {
            let some = &jobs[..n];
            let list: Vec<_> = some.iter().map(|j| job_json(j, fixtures::now())).collect();
            let whole = format!("{}\n", serde_json::to_string_pretty(&list).unwrap());
            let mut streamed = Vec::new();
            write_json_list(some, fixtures::now(), &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), whole, "{n} jobs");
        }
    }

    fn doing_or_progress(job: &Job, now: DateTime<Utc>, cols: usize) -> String {
        JobRow::of(job, now).doing_or_progress(now, cols)
    }

    #[test]
    fn the_progress_column_says_what_the_agent_does_and_keeps_the_time_when_cut() {
        let jobs = fixtures::jobs();
        let now = fixtures::now();
        let by_id = |id: &str| jobs.iter().find(|j| j.id.as_str() == id).unwrap();
        let mut gated = by_id("g2").clone();
        assert_eq!(doing_or_progress(&gated, now, 24), "Bash: rm -rf build 1m");
        gated.activity.as_mut().unwrap().what =
            "Bash: cargo test --workspace --all-features".into();
        let cut_to = doing_or_progress(&gated, now, 24);
        assert_eq!(cut_to, "Bash: cargo test --w… 1m");
        assert_eq!(crate::commands::table::width(&cut_to), 24);
        // A finished job's progress, whatever activity.json was left behind.
        let mut done = by_id("d3").clone();
        done.activity = gated.activity.clone();
        assert_eq!(doing_or_progress(&done, now, 24), "12%");
    }
}
