//! `luzia status`: a one-shot dashboard in the plain terminal (counts, system, running and
//! waiting jobs, alarms, known issues, usage, recent events), the alerts alone for cron and
//! monitoring (`--alerts`, exit 3 when there is one), a file (`--export json|md`), or the
//! dashboard redrawn in place (`--watch`). The report itself is built by [`crate::jobs::report`].

mod export;
mod markdown;
mod render;
mod text;
mod usage;
mod watch;

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Result;
use chrono::{DateTime, Local, Utc};

use crate::cli::{ExportFormat, StatusArgs};
use crate::config::Config;
use crate::jobs::Job;
use crate::jobs::insight::known_issues::PatternSet;
use crate::jobs::insight::report::{self, IssueCache, Report, Sources};
use crate::jobs::insight::timeline;
use crate::jobs::model::scan::Rescan;
use crate::jobs::os::system;
use crate::jobs::run::queue;
use crate::jobs::text::sanitize::plain_text;

/// `--alerts` found something to act on.
pub const ALERT_EXIT: u8 = 3;

/// Where system figures are read (a fake one in tests, the host's in a container).
pub const PROC_ENV: &str = "LUZIA_PROC";

pub fn run(cfg: &Config, args: &StatusArgs, out: &mut dyn Write) -> Result<u8> {
    // Nothing ever ran here: say so, and what to do first. A root that cannot be used fails
    // early, with the path and what to do.
    if super::existing_jobs_root(cfg)?.is_none() {
        writeln!(out, "{}", super::no_jobs_yet(cfg))?;
        return Ok(0);
    }
    let mut collector = Collector::new(cfg, args);
    if args.watch {
        return watch::run(&mut collector, args.interval, out);
    }
    let now = Utc::now();
    let report = collector.collect(now)?;
    let code = if args.alerts && report.alert_count() > 0 {
        ALERT_EXIT
    } else {
        0
    };
    match args.export {
        Some(format) => {
            let when = report.generated_at.with_timezone(&Local);
            let path = export_to(&report, format, args.output.as_deref(), when)?;
            writeln!(out, "{}", plain_text(&path.display().to_string()))?;
        }
        None => {
            let colors = super::stdout_colors();
            let width = std::io::stdout()
                .is_terminal()
                .then(|| crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| usize::from(w).saturating_sub(1));
            for line in render::lines(&report, now, width) {
                writeln!(out, "{}", line.render(colors, width))?;
            }
        }
    }
    Ok(code)
}

fn export_to(
    report: &Report,
    format: ExportFormat,
    output: Option<&std::path::Path>,
    now: DateTime<Local>,
) -> Result<PathBuf> {
    let (dir, name) = export::target(output, format, now)?;
    let bytes = match format {
        ExportFormat::Json => {
            let mut b = serde_json::to_vec_pretty(&export::document(report))?;
            b.push(b'\n');
            b
        }
        ExportFormat::Md => markdown::markdown(report).into_bytes(),
    };
    export::write(&dir, &name, &bytes)
}

/// What one refresh needs, kept between refreshes: the pattern database (loaded and checked
/// once), the issue scanners (so each refresh reads only new bytes), and the warnings already
/// said (each is said once).
pub struct Collector<'a> {
    cfg: &'a Config,
    project: Option<String>,
    alerts: bool,
    recent: usize,
    /// Progress milestones among the recent events (`--progress`).
    progress: bool,
    proc_root: PathBuf,
    set: PatternSet,
    cache: IssueCache,
    warned: HashSet<String>,
    rescan: Rescan,
}

impl<'a> Collector<'a> {
    pub fn new(cfg: &'a Config, args: &StatusArgs) -> Collector<'a> {
        let (set, problems) = PatternSet::with_file(&cfg.known_issues);
        let proc_root = std::env::var_os(PROC_ENV)
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from("/proc"), PathBuf::from);
        let mut c = Collector {
            cfg,
            project: args.project.clone(),
            alerts: args.alerts,
            recent: args.recent,
            progress: args.progress,
            proc_root,
            set,
            cache: IssueCache::new(),
            warned: HashSet::new(),
            rescan: Rescan::through(super::jobs_root(cfg).ok().and_then(super::jobs_index)),
        };
        c.warn(problems.iter().map(ToString::to_string));
        c
    }

    /// Each problem once, on stderr, however many refreshes meet it.
    fn warn(&mut self, problems: impl IntoIterator<Item = String>) {
        for p in problems {
            if self.warned.insert(p.clone()) {
                crate::say!("luzia: warning: {}", plain_text(&p));
            }
        }
    }

    /// Reads everything once more and builds the report.
    pub fn collect(&mut self, now: DateTime<Utc>) -> Result<Report> {
        let root = super::jobs_root(self.cfg)?;
        // Lent by the rescan for this refresh, and given back below.
        let mut rescan = std::mem::take(&mut self.rescan);
        let result = self.collect_from(root, rescan.scan(root, now), now);
        self.rescan = rescan;
        result
    }

    fn collect_from(
        &mut self,
        root: &std::path::Path,
        all: Result<&[Job], crate::jobs::model::scan::ScanError>,
        now: DateTime<Utc>,
    ) -> Result<Report> {
        let all = all?;
        let wanted = self.project.clone();
        let project = wanted.as_deref();
        let note = project
            .filter(|p| !all.iter().any(|j| j.project() == *p))
            .map(|p| {
                let configured: Vec<String> = self.cfg.projects.keys().cloned().collect();
                report::project_note(p, all, &configured)
            });
        // Only a project's jobs are copied; the whole root is used as it is.
        let of_project: Vec<Job>;
        let jobs: &[Job] = match project {
            None => all,
            Some(p) => {
                of_project = all.iter().filter(|j| j.project() == p).cloned().collect();
                &of_project
            }
        };
        let queued = self.queued();
        let problems = self.cache.refresh(&report::jobs_to_scan(jobs), &self.set);
        self.warn(problems);
        let (recent, problems) = if self.recent == 0 {
            (Vec::new(), Vec::new())
        } else {
            let notifications = project
                .is_none()
                .then_some(self.cfg.notifications_log.as_path());
            let cache = &self.cache;
            timeline::feed(
                jobs,
                &|job: &Job| cache.findings(&job.id).cloned(),
                &self.set,
                &self.cfg.alarms,
                notifications,
                now,
                self.recent,
                self.progress,
            )
        };
        self.warn(problems.iter().map(ToString::to_string));
        let report = report::build(Sources {
            jobs_root: root,
            project,
            note,
            jobs,
            queued,
            cache: &self.cache,
            set: &self.set,
            rules: &self.cfg.alarms,
            system: system::read(&self.proc_root),
            recent,
            now,
        });
        Ok(if self.alerts {
            report.into_alerts()
        } else {
            report
        })
    }

    /// Tasks waiting in the queue (of the project, with one).
    fn queued(&mut self) -> usize {
        match queue::list(&self.cfg.queue_dir) {
            Ok(list) => list
                .iter()
                .filter(|q| self.project.as_deref().is_none_or(|p| q.project == p))
                .count(),
            Err(e) => {
                self.warn([e.to_string()]);
                0
            }
        }
    }
}
