//! What the agents' runs consumed, added up: tokens and cost per project, per kind of agent
//! and per day, over the
//! jobs whose meta.json records the figures of their run (`usage`). A job without figures
//! counts nowhere here: an unknown cost is not a zero cost.

use std::collections::BTreeMap;

use chrono::{DateTime, Local, NaiveDate, Utc};

use crate::jobs::model::job::Job;
use crate::jobs::model::session::Usage;
use crate::jobs::run::agents::Kind;
use crate::jobs::text::sanitize::plain_text;

/// The figures of some jobs, added up.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Total {
    /// Jobs with figures.
    pub jobs: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub cost_usd: f64,
    /// Jobs with figures but no cost among them (their tokens still count).
    pub without_cost: usize,
}

impl Total {
    fn add(&mut self, u: &Usage) {
        self.jobs += 1;
        self.input_tokens += u.input_tokens.unwrap_or(0);
        self.output_tokens += u.output_tokens.unwrap_or(0);
        self.cache_read_tokens += u.cache_read_tokens.unwrap_or(0);
        self.cache_creation_tokens += u.cache_creation_tokens.unwrap_or(0);
        match u.cost_usd {
            Some(c) => self.cost_usd += c,
            None => self.without_cost += 1,
        }
    }

    /// Every token, caches included.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_creation_tokens
    }

    /// Cache reads and writes together.
    pub fn cache_tokens(&self) -> u64 {
        self.cache_read_tokens + self.cache_creation_tokens
    }
}

/// Totals over every job with figures, by project and by kind of agent (most costly first) and
/// by day (newest first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub all: Total,
    /// `(project, total)`, the project as plain text (empty when unknown).
    pub by_project: Vec<(String, Total)>,
    /// `(agent, total)`, the kind of agent by its short name (`claude`, `codex`; empty for the
    /// jobs that name no agent, as the orchestrator's do).
    pub by_agent: Vec<(String, Total)>,
    /// `(day, total)`, the day the job started in local time (`None`: no start time known).
    pub by_day: Vec<(Option<NaiveDate>, Total)>,
}

impl Totals {
    pub fn of(jobs: &[Job]) -> Totals {
        Totals::of_in(jobs, |t| t.with_timezone(&Local).date_naive())
    }

    /// As [`Totals::of`], with `day` telling a time's calendar day (the tests' own zone).
    pub fn of_in(jobs: &[Job], day: impl Fn(DateTime<Utc>) -> NaiveDate) -> Totals {
        let mut all = Total::default();
        let mut projects: BTreeMap<String, Total> = BTreeMap::new();
        let mut agents: BTreeMap<&'static str, Total> = BTreeMap::new();
        let mut days: BTreeMap<Option<NaiveDate>, Total> = BTreeMap::new();
        for job in jobs {
            let Some(usage) = job.meta.as_ref().and_then(|m| m.usage.as_ref()) else {
                continue;
            };
            all.add(usage);
            projects
                .entry(plain_text(job.project()))
                .or_default()
                .add(usage);
            agents.entry(agent_of(job)).or_default().add(usage);
            days.entry(job.started.or(job.finished).map(&day))
                .or_default()
                .add(usage);
        }
        // Most costly first; equal costs by name, for a stable report.
        let costly_first = |a: &(String, Total), b: &(String, Total)| {
            b.1.cost_usd.total_cmp(&a.1.cost_usd).then(a.0.cmp(&b.0))
        };
        let mut by_project: Vec<(String, Total)> = projects.into_iter().collect();
        by_project.sort_by(costly_first);
        let mut by_agent: Vec<(String, Total)> =
            agents.into_iter().map(|(a, t)| (a.to_owned(), t)).collect();
        by_agent.sort_by(costly_first);
        // Newest first, a job of unknown day last.
        let mut by_day: Vec<(Option<NaiveDate>, Total)> = days.into_iter().collect();
        by_day.sort_by_key(|(d, _)| (d.is_none(), std::cmp::Reverse(*d)));
        Totals {
            all,
            by_project,
            by_agent,
            by_day,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.all.jobs == 0
    }

    /// How many kinds of agent ran the jobs with figures (those that name none left out).
    pub fn agent_kinds(&self) -> usize {
        self.by_agent.iter().filter(|(a, _)| !a.is_empty()).count()
    }
}

/// The short name of the kind of agent a job ran, from the program its meta.json names; empty
/// when it names none.
fn agent_of(job: &Job) -> &'static str {
    match job.meta.as_ref().map(|m| m.agent.as_str()) {
        Some(program) if !program.is_empty() => Kind::of_program(program).short(),
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::{JobId, Meta, Status};
    use chrono::{Duration, TimeZone};

    fn job(project: &str, started: Option<DateTime<Utc>>, usage: Option<Usage>) -> Job {
        agent_job("", project, started, usage)
    }

    fn agent_job(
        agent: &str,
        project: &str,
        started: Option<DateTime<Utc>>,
        usage: Option<Usage>,
    ) -> Job {
        Job {
            meta: Some(Box::new(Meta {
                project: project.into(),
                more: usage.map(|u| {
                    Box::new(crate::jobs::model::meta::MetaMore {
                        usage: Some(Box::new(u)),
                        agent: agent.into(),
                        ..Default::default()
                    })
                }),
                ..Meta::default()
            })),
            status: Status::Completed,
            exit_code: Some(0),
            started,
            ..Job::bare(
                JobId::parse("120000-abcd").unwrap(),
                "/srv/jobs/120000-abcd".into(),
            )
        }
    }

    fn usage(cost: Option<f64>, input: u64) -> Option<Usage> {
        Some(Usage {
            input_tokens: Some(input),
            output_tokens: Some(10),
            cache_read_tokens: Some(100),
            cache_creation_tokens: None,
            cost_usd: cost,
            ..Usage::default()
        })
    }

    #[test]
    fn totals_per_project_and_per_day_over_the_jobs_with_figures() {
        let noon = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let day = |t: DateTime<Utc>| t.date_naive();
        let jobs = [
            job("musica", Some(noon), usage(Some(0.5), 1000)),
            job("musica", Some(noon - Duration::days(1)), usage(None, 2000)),
            job("librec", Some(noon), usage(Some(1.25), 3000)),
            job("librec", Some(noon), None),
            job("\x1b[31mred", None, usage(Some(0.25), 4000)),
        ];
        let t = Totals::of_in(&jobs, day);
        assert_eq!(t.all.jobs, 4, "the job without figures counts nowhere");
        assert_eq!(t.all.cost_usd, 2.0);
        assert_eq!(t.all.without_cost, 1);
        assert_eq!(t.all.input_tokens, 10_000);
        assert_eq!(t.all.tokens(), 10_000 + 40 + 400);
        let projects: Vec<(&str, usize, f64)> = t
            .by_project
            .iter()
            .map(|(p, t)| (p.as_str(), t.jobs, t.cost_usd))
            .collect();
        assert_eq!(
            projects,
            [("librec", 1, 1.25), ("musica", 2, 0.5), ("red", 1, 0.25)]
        );
        let days: Vec<(Option<String>, usize)> = t
            .by_day
            .iter()
            .map(|(d, t)| (d.map(|d| d.to_string()), t.jobs))
            .collect();
        assert_eq!(
            days,
            [
                (Some("2026-11-21".into()), 2),
                (Some("2026-11-20".into()), 1),
                (None, 1)
            ]
        );
        assert!(Totals::of_in(&jobs[3..4], day).is_empty());
    }

    #[test]
    fn totals_per_kind_of_agent_from_the_program_each_job_names() {
        let day = |t: DateTime<Utc>| t.date_naive();
        let jobs = [
            agent_job("claude", "musica", None, usage(Some(0.5), 1000)),
            agent_job("/opt/bin/claude", "librec", None, usage(Some(0.25), 1000)),
            agent_job("codex", "musica", None, usage(None, 5000)),
            agent_job("/usr/bin/aider", "musica", None, usage(Some(1.0), 10)),
            job("musica", None, usage(Some(0.1), 1)),
            agent_job("codex", "musica", None, None),
        ];
        let t = Totals::of_in(&jobs, day);
        let agents: Vec<(&str, usize, u64)> = t
            .by_agent
            .iter()
            .map(|(a, t)| (a.as_str(), t.jobs, t.input_tokens))
            .collect();
        assert_eq!(
            agents,
            [
                ("aider", 1, 10),
                ("claude", 2, 2000),
                ("", 1, 1),
                ("codex", 1, 5000)
            ],
            "most costly first; a job naming no agent apart; one without figures nowhere"
        );
        assert_eq!(t.agent_kinds(), 3);
        assert_eq!(Totals::of_in(&jobs[..2], day).agent_kinds(), 1);
        assert_eq!(Totals::of_in(&jobs[4..5], day).agent_kinds(), 0);
    }
}
