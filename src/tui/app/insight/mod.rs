//! What the cockpit works out beyond each job's status: the known issues in its output (found by
//! the executor's scanner, kept here), the alarms the rules raise (worked out here, from the
//! jobs and the time), and the server's alerts. A job's timeline is the detail view's, the
//! recent events are the events view's.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::App;
use crate::jobs::insight::alarms::{self, Alarm, AlarmKind, AlarmRules};
use crate::jobs::insight::known_issues::{Findings, PatternSet};
use crate::jobs::os::system::SystemAlert;
use crate::jobs::{Job, JobId, Status};
use crate::tui::effect::{Effect, LogAt, LogScan};
use crate::tui::event::Event;

/// What the cockpit starts with for insight (from the config).
#[derive(Clone, Debug)]
pub struct InsightOptions {
    /// The compiled patterns, when already at hand; else the scanning thread compiles them
    /// (built in, plus `known_issues`) and reports `Event::PatternsReady`, so the first frame
    /// does not wait for the compilation.
    pub patterns: Option<Arc<PatternSet>>,
    pub known_issues: Option<PathBuf>,
    pub rules: AlarmRules,
    /// Ring the bell once when an alarm is raised.
    pub alarm_bell: bool,
}

impl Default for InsightOptions {
    fn default() -> Self {
        InsightOptions {
            patterns: Some(PatternSet::shared_builtin()),
            known_issues: None,
            rules: AlarmRules::default(),
            alarm_bell: true,
        }
    }
}

#[derive(Debug, Default)]
pub struct Insight {
    /// The pattern set the findings' indices refer to (`None` until compiled).
    pub patterns: Option<Arc<PatternSet>>,
    pub issues: HashMap<JobId, Findings>,
    pub alarms: HashMap<JobId, Vec<Alarm>>,
    pub system: Vec<SystemAlert>,
    /// When each live job's alarms may next change by time alone, soonest first
    /// (`alarms::next_change`); `due_at` is the same, by job.
    pub(super) due: BTreeSet<(DateTime<Utc>, JobId)>,
    pub(super) due_at: HashMap<JobId, DateTime<Utc>>,
    /// The log length each job's scan was last asked for.
    pub(super) scan_asked: foldhash::HashMap<JobId, u64>,
    /// The first listing has been judged: alarms standing then ring nothing (like questions
    /// already waiting when the cockpit starts).
    pub(super) primed: bool,
    /// The first listing's settled logs are asked for once the first frame is on screen, not
    /// before it: at 100,000 jobs making the list takes tens of milliseconds, and the scan
    /// takes seconds anyway.
    pub(super) settled_after_frame: bool,
}

impl App {
    /// After jobs were read (`read`, or every job after a full listing, of which `fresh` were
    /// read in it): scan the logs that grew, forget the jobs that are gone, and work the alarms
    /// out again.
    ///
    /// A settled job's log is asked for each time the job is read, and the job is not kept in
    /// `scan_asked`: its log does not grow, a full listing does not read it again, and at
    /// 100,000 jobs the map's slots for every settled job were 33 bytes a job.
    pub(super) fn insight_after_read(
        &mut self,
        now: DateTime<Utc>,
        read: Option<&[JobId]>,
        fresh: &[JobId],
    ) -> (bool, Vec<Effect>) {
        let mut effects = Vec::new();
        let jobs = &self.jobs;
        let asked = &mut self.insight.scan_asked;
        let mut wanted: Vec<(bool, LogScan)> = Vec::new();
        let hold_settled = self.insight.settled_after_frame;
        for job in fresh.iter().filter_map(|id| jobs.get(id)) {
            // Another host's log is not a file here.
            if job.log_len == 0 || job.id.host().is_some() {
                continue;
            }
            if job.is_settled() {
                if hold_settled {
                    continue;
                }
                asked.remove(&job.id);
            } else if asked.insert(job.id.clone(), job.log_len) == Some(job.log_len) {
                continue;
            }
            wanted.push((!job.status.is_active(), log_scan(job)));
        }
        if !wanted.is_empty() {
            // The live ones first: they are what is watched now. Ids are unique: no need to
            // compare paths, nor to keep the order of equals.
            wanted.sort_unstable_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
            effects.push(Effect::ScanIssues(
                wanted.into_iter().map(|(_, log)| log).collect(),
            ));
        }
        let gone: Vec<JobId> = match read {
            Some(ids) => ids
                .iter()
                .filter(|id| {
                    !jobs.contains_key(*id)
                        && (asked.contains_key(*id) || self.insight.issues.contains_key(*id))
                })
                .cloned()
                .collect(),
            // The settled ones asked for are not in `asked`: those with findings are in
            // `issues`, and the scanner kept nothing of the others.
            None => asked
                .keys()
                .chain(self.insight.issues.keys())
                .filter(|id| !jobs.contains_key(*id))
                .cloned()
                .collect::<HashSet<_>>()
                .into_iter()
                .collect(),
        };
        if !gone.is_empty() {
            for id in &gone {
                asked.remove(id);
                self.insight.issues.remove(id);
            }
            effects.push(Effect::ForgetIssues(gone));
        }
        let (changed, bell) = self.refresh_alarms(now, read);
        effects.extend(bell);
        (changed, effects)
    }

    /// Works out again the alarms that may have changed at `now`: those of the jobs just read
    /// (`read`, or every job after a full listing) and those whose next threshold has come.
    /// Returns whether any alarm came or went, and a bell for alarms newly raised (one that
    /// cleared may ring again when raised again).
    pub(super) fn refresh_alarms(
        &mut self,
        now: DateTime<Utc>,
        read: Option<&[JobId]>,
    ) -> (bool, Option<Effect>) {
        let mut ids: Vec<JobId> = match read {
            Some(ids) => ids.to_vec(),
            None => {
                let mut all: HashSet<JobId> = self.insight.alarms.keys().cloned().collect();
                all.extend(self.insight.due_at.keys().cloned());
                all.extend(
                    self.jobs
                        .values()
                        .filter(|j| has_alarms(j.status))
                        .map(|j| j.id.clone()),
                );
                all.into_iter().collect()
            }
        };
        while let Some((at, _)) = self.insight.due.first()
            && *at <= now
        {
            if let Some((_, id)) = self.insight.due.pop_first() {
                self.insight.due_at.remove(&id);
                ids.push(id);
            }
        }
        let (mut changed, mut raised) = (false, false);
        for id in ids {
            let (was, is) = self.judge(&id, now);
            changed |= was != is;
            raised |= is.difference(&was).next().is_some();
        }
        let raised = raised && self.insight.primed;
        let bell = (raised && self.opts.insight.alarm_bell).then_some(Effect::Bell);
        (changed, bell)
    }

    /// Works out the alarms of one job at `now`, and when they may next change; returns the
    /// kinds it stood in before and stands in now.
    fn judge(
        &mut self,
        id: &JobId,
        now: DateTime<Utc>,
    ) -> (BTreeSet<AlarmKind>, BTreeSet<AlarmKind>) {
        let kinds = |a: Option<&Vec<Alarm>>| -> BTreeSet<AlarmKind> {
            a.into_iter().flatten().map(|x| x.kind).collect()
        };
        let stale = self.stale_since(id).is_some();
        let insight = &mut self.insight;
        let was = kinds(insight.alarms.get(id));
        if let Some(at) = insight.due_at.remove(id) {
            insight.due.remove(&(at, id.clone()));
        }
        if stale {
            // Its host dropped: what it shows is as old as that, and its clock-based alarms
            // (silence, time waiting) would be about the link, not the job. They stand as they
            // were until the host sends it again.
            return (was.clone(), was);
        }
        let rules = &self.opts.insight.rules;
        let job = self.jobs.get(id).filter(|j| has_alarms(j.status));
        let fresh = job
            .map(|j| alarms::job_alarms(j, rules, now))
            .unwrap_or_default();
        if let Some(at) = job.and_then(|j| alarms::next_change(j, rules, now)) {
            insight.due.insert((at, id.clone()));
            insight.due_at.insert(id.clone(), at);
        }
        let is = kinds(Some(&fresh));
        if fresh.is_empty() {
            insight.alarms.remove(id);
        } else {
            insight.alarms.insert(id.clone(), fresh);
        }
        (was, is)
    }

    /// What the executor's insight readers report.
    pub(super) fn on_insight(&mut self, event: Event) {
        match event {
            Event::IssuesFound(found) => self.on_issues_found(found),
            Event::PatternsReady { patterns, problems } => {
                self.log.set_patterns(patterns.clone());
                self.insight.patterns = Some(patterns);
                if let Some(first) = problems.first() {
                    self.message = Some(match problems.len() - 1 {
                        0 => first.clone(),
                        more => format!("{first} (and {more} more: see the log)"),
                    });
                }
            }
            Event::SystemAlerts(alerts) => self.on_system(alerts),
            _ => {}
        }
    }

    /// The first frame is on screen: the settled logs of the first listing are asked for now
    /// (see [`Insight::settled_after_frame`]).
    pub(super) fn on_first_frame(&mut self) -> Vec<Effect> {
        if !std::mem::take(&mut self.insight.settled_after_frame) {
            return Vec::new();
        }
        let settled = |j: &Job| j.is_settled() && j.log_len > 0 && j.id.host().is_none();
        // Made to its size: at 100,000 jobs a list grown by doubling leaves megabytes in the
        // heap's holes once the scanner has freed it.
        let n = self.jobs.values().filter(|j| settled(j)).count();
        if n == 0 {
            return Vec::new();
        }
        let mut wanted: Vec<LogScan> = Vec::with_capacity(n);
        wanted.extend(
            self.jobs
                .values()
                .filter(|j| settled(j))
                .map(|j| log_scan(j)),
        );
        wanted.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        vec![Effect::ScanIssues(wanted)]
    }

    fn on_issues_found(&mut self, found: Vec<(JobId, Findings)>) {
        let mut shown = false;
        for (id, findings) in found {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            // The table shows the worst finding's kind; the detail view, all of them with their
            // counts. A log that keeps printing a known issue changes only its count: no frame
            // for that unless its detail is open. (Asked of every log the first scan reads: by
            // the filters, not through the rows.)
            let worst =
                |f: Option<&Findings>| f.and_then(|f| f.worst()).map(|w| (w.pattern, w.severity));
            shown = shown
                || self.shows_detail_of(&id)
                || (worst(self.insight.issues.get(&id)) != worst(Some(&findings))
                    && self.table.admits(job));
            if findings.is_empty() {
                self.insight.issues.remove(&id);
            } else {
                self.insight.issues.insert(id, findings);
            }
        }
        self.dirty = shown;
    }

    fn on_system(&mut self, alerts: Vec<SystemAlert>) {
        self.dirty = alerts != self.insight.system;
        self.insight.system = alerts;
    }
}

/// What the scanner is asked of `job`'s log.
fn log_scan(job: &Job) -> LogScan {
    LogScan {
        id: job.id.clone(),
        at: LogAt::of(job),
        settled: job.is_settled(),
    }
}

/// Only jobs that run, wait, or stopped for an answer raise alarms.
fn has_alarms(status: Status) -> bool {
    matches!(
        status,
        Status::Running | Status::Waiting | Status::NeedsInput
    )
}

#[cfg(test)]
mod tests;
