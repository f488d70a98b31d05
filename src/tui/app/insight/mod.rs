//! What the cockpit works out beyond each job's status: the known issues in its output (found by
//! the executor's scanner, kept here), the alarms the rules raise (worked out here, from the
//! jobs and the time), and the server's alerts. A job's timeline is the detail view's, the
//! recent events are the events view's.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::App;
use crate::jobs::insight::alarms::{self, Alarm, AlarmKind, AlarmRules};
use crate::jobs::insight::known_issues::{Findings, PatternSet};
use crate::jobs::os::system::SystemAlert;
use crate::jobs::{JobId, Status};
use crate::tui::effect::Effect;
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
    /// Alarms the bell has rung for; one that clears may ring again when raised again.
    pub(super) rung: HashSet<(JobId, AlarmKind)>,
    /// The log length each job's scan was last asked for.
    pub(super) scan_asked: HashMap<JobId, u64>,
    /// The first listing has been judged: alarms standing then ring nothing (like questions
    /// already waiting when the cockpit starts).
    pub(super) primed: bool,
}

impl App {
    /// After jobs were read (`read`, or every job after a full listing): scan the logs that
    /// grew, forget the jobs that are gone, and work the alarms out again.
    pub(super) fn insight_after_read(
        &mut self,
        now: DateTime<Utc>,
        read: Option<&[JobId]>,
    ) -> (bool, Vec<Effect>) {
        let mut effects = Vec::new();
        let jobs = &self.jobs;
        let asked = &mut self.insight.scan_asked;
        let looked_at: Box<dyn Iterator<Item = &JobId>> = match read {
            Some(ids) => Box::new(ids.iter()),
            None => Box::new(jobs.keys()),
        };
        let mut wanted: Vec<(bool, JobId, PathBuf)> = Vec::new();
        for job in looked_at.filter_map(|id| jobs.get(id)) {
            if job.log_len == 0 || asked.get(&job.id) == Some(&job.log_len) {
                continue;
            }
            asked.insert(job.id.clone(), job.log_len);
            wanted.push((!job.status.is_active(), job.id.clone(), job.log_path()));
        }
        if !wanted.is_empty() {
            // The live ones first: they are what is watched now.
            wanted.sort();
            effects.push(Effect::ScanIssues(
                wanted.into_iter().map(|(_, id, p)| (id, p)).collect(),
            ));
        }
        let gone: Vec<JobId> = match read {
            Some(ids) => ids
                .iter()
                .filter(|id| !jobs.contains_key(*id) && asked.contains_key(*id))
                .cloned()
                .collect(),
            None => asked
                .keys()
                .filter(|id| !jobs.contains_key(*id))
                .cloned()
                .collect(),
        };
        if !gone.is_empty() {
            for id in &gone {
                asked.remove(id);
                self.insight.issues.remove(id);
            }
            effects.push(Effect::ForgetIssues(gone));
        }
        let (changed, bell) = self.refresh_alarms(now);
        effects.extend(bell);
        (changed, effects)
    }

    /// Works out every live job's alarms at `now`. Returns whether any changed, and a bell for
    /// alarms newly raised.
    pub(super) fn refresh_alarms(&mut self, now: DateTime<Utc>) -> (bool, Option<Effect>) {
        let rules = &self.opts.insight.rules;
        let fresh: HashMap<JobId, Vec<Alarm>> = self
            .jobs
            .values()
            .filter(|j| {
                matches!(
                    j.status,
                    Status::Running | Status::Waiting | Status::NeedsInput
                )
            })
            .map(|j| (j.id.clone(), alarms::job_alarms(j, rules, now)))
            .filter(|(_, a)| !a.is_empty())
            .collect();
        let kinds = |m: &HashMap<JobId, Vec<Alarm>>| -> HashSet<(JobId, AlarmKind)> {
            m.iter()
                .flat_map(|(id, a)| a.iter().map(move |x| (id.clone(), x.kind)))
                .collect()
        };
        let standing = kinds(&fresh);
        // The details say "for 12m": they move every second, but a frame is due only when an
        // alarm comes or goes (or when elapsed times are drawn anyway).
        let changed = standing != kinds(&self.insight.alarms);
        let raised = self.insight.primed && standing.difference(&self.insight.rung).count() > 0;
        self.insight.rung = standing;
        self.insight.alarms = fresh;
        let bell = (raised && self.opts.insight.alarm_bell).then_some(Effect::Bell);
        (changed, bell)
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

    fn on_issues_found(&mut self, found: Vec<(JobId, Findings)>) {
        let mut shown = false;
        for (id, findings) in found {
            if !self.jobs.contains_key(&id) {
                continue;
            }
            shown |= self.table.shows(&id);
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

#[cfg(test)]
mod tests;
