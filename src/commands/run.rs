//! `luzia run`, `luzia kill`, `luzia retry`, `luzia queue`, and the hidden `luzia supervise`.

use crate::jobs::fs::names::QUESTION_FILE;
use std::io::Write;

use anyhow::{Result, bail};
use chrono::Utc;

use crate::cli::{
    KillArgs, PriorityArg, QueueAction, QueueArgs, RetryArgs, RunArgs, SuperviseArgs,
};
use crate::commands::table::{Column, Table, plain};
use crate::config::Config;
use crate::dispatcher::limits::account_of;
use crate::dispatcher::{Dispatched, Dispatcher, Request};
use crate::jobs::hitl::operator::{self, Outcome};
use crate::jobs::model::stop::StopSource;
use crate::jobs::run::queue::{self, Priority};
use crate::jobs::run::{kill, slots, supervise};
use crate::jobs::text::sanitize::plain_text;

pub fn run(cfg: &Config, args: &RunArgs, out: &mut dyn Write) -> Result<u8> {
    let cwd = std::env::current_dir().ok();
    let mut req = super::run_project::request(cfg, args, cwd.as_deref())?;
    req.priority = match args.priority {
        PriorityArg::High => Priority::High,
        PriorityArg::Normal => Priority::Normal,
    };
    req.queue = args.queue;
    req.agent = args.agent.clone();
    if args.fg {
        return super::session::run_foreground(cfg, &req);
    }
    report(cfg, &req, out)
}

fn report(cfg: &Config, req: &Request, out: &mut dyn Write) -> Result<u8> {
    super::ensure_jobs_root(cfg)?;
    let (dispatched, notes) = Dispatcher::new(cfg)?.dispatch_noting(req)?;
    // Tasks queued earlier that could not start: this one was dispatched all the same.
    for note in notes {
        crate::say!("luzia: {note}");
    }
    said(cfg, dispatched, out)
}

/// The new job's id on stdout, or that the task was queued.
fn said(cfg: &Config, dispatched: Dispatched, out: &mut dyn Write) -> Result<u8> {
    match dispatched {
        Dispatched::Started(c) => writeln!(out, "{}", c.id)?,
        Dispatched::Queued(q) => {
            match Dispatcher::new(cfg)?.hold_for(&q.project, q.agent.as_deref(), Utc::now()) {
                Some(hold) => writeln!(
                    out,
                    "queued {} ({}; `luzia queue` lists the queue)",
                    q.id,
                    hold.why(Utc::now())
                )?,
                None => writeln!(
                    out,
                    "queued {} (every one of the {} slots is taken; `luzia queue` lists the queue)",
                    q.id, cfg.agent.max_concurrent
                )?,
            }
        }
    }
    Ok(0)
}

/// `luzia PROJECT TASK...`, as the orchestrator is called.
pub fn shorthand(cfg: &Config, words: &[String], out: &mut dyn Write) -> Result<u8> {
    // Not a project either: a mistyped command, so a usage error (exit 2) like clap's own.
    let usage = |message: String| {
        crate::say!("luzia: error: {message}");
        Ok(2)
    };
    let Some((project, task)) = words.split_first() else {
        return usage("usage: luzia PROJECT TASK...".into());
    };
    if !cfg.projects.contains_key(project) {
        let shown = project.escape_debug();
        if let Some(meant) = super::suggest::closest_command(project) {
            return usage(format!(
                "unknown command '{shown}': did you mean '{meant}'? (`luzia --help` lists the commands)"
            ));
        }
        if task.is_empty() {
            return usage(format!(
                "unknown command '{shown}' (`luzia --help` lists the commands; `luzia PROJECT TASK...` \
                 runs a task in a configured project)"
            ));
        }
        return usage(format!(
            "'{}' is neither a command nor a configured project (`luzia --help` lists the commands)",
            project.escape_debug()
        ));
    }
    if task.is_empty() {
        return usage(format!(
            "usage: luzia {project} TASK...: say what the agent should do"
        ));
    }
    report(cfg, &Request::new(project, &task.join(" ")), out)
}

pub fn kill(cfg: &Config, args: &KillArgs, out: &mut dyn Write) -> Result<u8> {
    let job = super::find_job(cfg, &args.id)?;
    let code = kill::kill(&job, args.grace, StopSource::Cli)?;
    writeln!(out, "killed {} (exit:{code})", job.id)?;
    Ok(0)
}

pub fn retry(cfg: &Config, args: &RetryArgs, out: &mut dyn Write) -> Result<u8> {
    let job = super::find_job(cfg, &args.id)?;
    if job.status.is_active() {
        bail!(
            "job {} is still {}: kill it first (`luzia kill {}`)",
            job.id,
            job.status,
            job.id
        );
    }
    if args.answer.is_some()
        && job.question.is_none()
        && let Some(r) = operator::settled(&job.dir(), None).or_else(|| {
            let q = crate::jobs::fs::files::read_small(&job.file(QUESTION_FILE)).ok()??;
            let q = crate::jobs::Question::parse(&q, None).ok()?;
            operator::settled(&job.dir(), Some(&q.id))
        })
    {
        bail!(
            "job {} was already answered by {}: '{}' (retry without --answer uses that)",
            job.id,
            r.who(),
            plain_text(&r.answer)
        );
    }
    if let Some(a) = &args.answer
        && job.question.is_some()
    {
        // Recorded like any answer, so the history says who answered what.
        match operator::answer(&job, a, "cli", &operator::operator(), Utc::now())? {
            Outcome::Done(_) => {}
            Outcome::Already(r) => bail!(
                "job {} was already answered by {}: '{}'",
                job.id,
                r.who(),
                plain_text(&r.answer)
            ),
        }
    }
    super::jobs_root(cfg)?;
    let (dispatched, note) = Dispatcher::new(cfg)?.retry(&job, args.answer.as_deref())?;
    if let Some(note) = note {
        crate::say!("luzia: {note}");
    }
    said(cfg, dispatched, out)
}

/// A queue id as typed: the id of a task in the queue (waiting, starting or failed to start),
/// or the start of the one such id that starts so; anything else is passed on as it is, for
/// the queue to say it has no such task.
fn queue_id(cfg: &Config, typed: &str) -> Result<String> {
    let (Ok(listed), Ok(failed)) = (queue::list(&cfg.queue_dir), queue::failed(&cfg.queue_dir))
    else {
        return Ok(typed.to_owned());
    };
    let mut ids: Vec<String> = listed
        .into_iter()
        .map(|q| q.id)
        .chain(failed.into_iter().map(|f| f.entry.id))
        .collect();
    if typed.is_empty() || ids.iter().any(|id| id == typed) {
        return Ok(typed.to_owned());
    }
    ids.retain(|id| id.starts_with(typed));
    ids.sort();
    ids.dedup();
    match ids.as_slice() {
        [] => Ok(typed.to_owned()),
        [one] => Ok(one.clone()),
        several => bail!(
            "'{}' is the start of {} queued ids ({}): type more of the id (`luzia queue` lists them)",
            plain_text(typed),
            several.len(),
            several
                .iter()
                .take(10)
                .map(|id| plain_text(id))
                .chain((several.len() > 10).then(|| "…".to_owned()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn queue(cfg: &Config, args: &QueueArgs, out: &mut dyn Write) -> Result<u8> {
    match &args.action {
        Some(QueueAction::Cancel { id }) => {
            let q = queue::cancel(&cfg.queue_dir, &queue_id(cfg, id)?)?;
            writeln!(
                out,
                "cancelled {} ({}: {})",
                q.id,
                q.project,
                plain_text(&q.task)
            )?;
        }
        Some(QueueAction::Retry { ids, all }) => return queue_retry(cfg, ids, *all, out),
        None => {
            let listing = queue::listing(&cfg.queue_dir)?;
            list_pending(&listing.queued, out)?;
            say_held(cfg, &listing.queued, out)?;
            list_failed(&listing.failed, out)?;
        }
    }
    Ok(0)
}

/// Below the queued tasks, each usage limit that holds some of them: how many (those whose
/// agent runs on that account), and that they start at the reset.
fn say_held(cfg: &Config, queued: &[queue::Queued], out: &mut dyn Write) -> Result<()> {
    let now = Utc::now();
    let holds = Dispatcher::new(cfg)?.holds(now);
    if queued.is_empty() || holds.is_empty() {
        return Ok(());
    }
    for hold in holds.standing(now) {
        let held = queued
            .iter()
            .filter(|q| account_of(cfg, &q.project, q.agent.as_deref()) == hold.agent)
            .count();
        let agent = plain_text(&hold.agent);
        match held {
            0 => continue,
            1 => writeln!(
                out,
                "{}: 1 task ({agent}'s) starts after the reset",
                hold.why(now)
            )?,
            n => writeln!(
                out,
                "{}: {n} tasks ({agent}'s) start after the reset, in order",
                hold.why(now)
            )?,
        }
    }
    Ok(())
}

/// The queue's columns: place (or `!` for a task that failed to start), id, priority, project,
/// task.
fn queue_table() -> Table {
    Table::new(vec![
        Column::right().min(3),
        Column::left().min(8),
        Column::left().min(6),
        Column::left().min(12),
        Column::left(),
    ])
}

fn list_pending(all: &[queue::Queued], out: &mut dyn Write) -> Result<()> {
    if all.is_empty() {
        writeln!(out, "the queue is empty")?;
    }
    let mut table = queue_table();
    for (i, q) in all.iter().enumerate() {
        table.push(vec![
            plain((i + 1).to_string()),
            plain(q.id.clone()),
            plain(q.priority.dir()),
            plain(plain_text(&q.project)),
            plain(plain_text(&q.task)),
        ]);
    }
    for line in table.lines() {
        writeln!(out, "{}", line.render(false, None))?;
    }
    Ok(())
}

/// The tasks that could not start, each with its reason on the line below.
fn list_failed(failed: &[queue::Failed], out: &mut dyn Write) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nfailed to start (`luzia queue retry ID` queues one again once fixed, `luzia queue cancel ID` drops it):"
    )?;
    let mut table = queue_table();
    for f in failed {
        table.push(vec![
            plain("!"),
            plain(plain_text(&f.entry.id)),
            plain(f.entry.priority.dir()),
            plain(plain_text(&f.entry.project)),
            plain(plain_text(&f.entry.task)),
        ]);
    }
    for (line, f) in table.lines().into_iter().zip(failed) {
        writeln!(out, "{}", line.render(false, None))?;
        let at = if f.failed_at.is_empty() {
            String::new()
        } else {
            format!(" ({})", plain_text(&f.failed_at))
        };
        writeln!(out, "      {}{at}", plain_text(&f.why()))?;
    }
    Ok(())
}

/// `luzia queue retry`: back in the queue, then started while slots are free.
fn queue_retry(cfg: &Config, ids: &[String], all: bool, out: &mut dyn Write) -> Result<u8> {
    let ids: Vec<String> = if all {
        queue::failed(&cfg.queue_dir)?
            .into_iter()
            .map(|f| f.entry.id)
            .collect()
    } else {
        // Every id worked out before any task moves: an ambiguous one moves none.
        ids.iter()
            .map(|id| queue_id(cfg, id))
            .collect::<Result<_>>()?
    };
    if ids.is_empty() {
        writeln!(out, "no task failed to start")?;
        return Ok(0);
    }
    for id in &ids {
        let q = queue::retry(&cfg.queue_dir, id)?;
        writeln!(
            out,
            "queued {} again ({}: {})",
            q.id,
            plain_text(&q.project),
            plain_text(&q.task)
        )?;
    }
    super::jobs_root(cfg)?;
    if let Err(e) = Dispatcher::new(cfg)?.start_queued() {
        crate::say!("luzia: {}", super::describe(&e));
        return Ok(1);
    }
    Ok(0)
}

/// The supervisor's first act: a session of its own, so that neither a hangup of the terminal
/// `luzia run` was typed in nor its Ctrl-C reaches the supervisor or its agent, and the agent
/// has no controlling terminal. Done here rather than between fork and exec by the starter,
/// which would force a full fork (see `dispatch::start_supervisor`). Fails harmlessly when
/// already a session leader (started by a luzia that made it one).
pub fn detach() {
    let _ = rustix::process::setsid();
}

pub fn supervise(cfg: &Config, args: &SuperviseArgs) -> Result<u8> {
    supervise::adopt_orphans();
    // Held until the exit line is written: the job counts as running until then.
    let slot = args
        .slot_fd
        .and_then(|fd| slots::Entry::inherited(fd, &cfg.queue_dir, &args.job_dir));
    let d = Dispatcher::new(cfg).ok();
    // The hold is on disk before the exit line: a task dispatched the moment the job reads
    // `limited` is held, not started.
    let held = std::cell::Cell::new(false);
    let ending = |code: i32| {
        if let Some(d) = &d {
            held.set(record_limit(d, &args.job_dir, code));
        }
    };
    let code = supervise::supervise_with(
        &args.job_dir,
        Some(&cfg.notifications_log),
        &|p| cfg.agent_env(p),
        &ending,
    );
    if let Some(slot) = slot {
        slot.remove();
    }
    // Someone must look at the reset, whether or not anything else of luzia runs then: a
    // waiter of its own, which outlives this process.
    if let Some(d) = &d
        && held.get()
        && let Err(e) = crate::dispatcher::waiter::start(d)
    {
        crate::say!(
            "luzia: cannot start the waiter for the usage limit's reset in {}: {e} (the cockpit, \
             `luzia notify --watch` or the next `luzia run` continues the job instead)",
            d.cfg.queue_dir.display()
        );
    }
    // A slot is free now, whatever became of this job's bookkeeping (a full disk may have
    // refused it): queued tasks may start, or be recorded as unable to.
    if let Some(d) = &d
        && let Err(e) = d.start_queued()
    {
        crate::say!("luzia: cannot start queued tasks: {}", super::describe(&e));
    }
    Ok(u8::try_from(code?).unwrap_or(1))
}

/// A job the account's usage limit stopped holds its agent's queue until the reset, and is
/// continued then ([`limits`](crate::dispatcher::limits)). Whether it holds the queue now.
fn record_limit(d: &Dispatcher, job_dir: &std::path::Path, code: i32) -> bool {
    let Some(id) = job_dir
        .file_name()
        .and_then(|n| crate::jobs::JobId::parse(&n.to_string_lossy()).ok())
    else {
        return false;
    };
    let root = job_dir.parent().unwrap_or(job_dir);
    let Some(job) = crate::jobs::model::job::read_job(root, &id, Utc::now()) else {
        return false;
    };
    d.record_limit(&job, code).unwrap_or_else(|e| {
        crate::say!(
            "luzia: cannot record that the usage limit stopped job {id}: {}",
            super::describe(&e)
        );
        false
    })
}
