//! What the agents' runs consumed, added up: tokens and cost per project and per day, over the
//! jobs whose meta.json records the figures of their run (`usage`). A job without figures
//! counts nowhere here: an unknown cost is not a zero cost.

use std::collections::BTreeMap;

use chrono::{DateTime, Local, NaiveDate, Utc};

use crate::jobs::model::job::Job;
use crate::jobs::model::session::Usage;
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

/// Totals over every job with figures, by project (most costly first) and by day (newest
/// first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub all: Total,
    /// `(project, total)`, the project as plain text (empty when unknown).
    pub by_project: Vec<(String, Total)>,
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
            days.entry(job.started.or(job.finished).map(&day))
                .or_default()
                .add(usage);
        }
        let mut by_project: Vec<(String, Total)> = projects.into_iter().collect();
        // Most costly first; equal costs by name, for a stable report.
        by_project.sort_by(|a, b| b.1.cost_usd.total_cmp(&a.1.cost_usd).then(a.0.cmp(&b.0)));
        // Newest first, a job of unknown day last.
        let mut by_day: Vec<(Option<NaiveDate>, Total)> = days.into_iter().collect();
        by_day.sort_by_key(|(d, _)| (d.is_none(), std::cmp::Reverse(*d)));
        Totals {
            all,
            by_project,
            by_day,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.all.jobs == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::{JobId, Meta, Status};
    use chrono::{Duration, TimeZone};

    fn job(project: &str, started: Option<DateTime<Utc>>, usage: Option<Usage>) -> Job {
        Job {
            meta: Some(Box::new(Meta {
                project: project.into(),
                more: usage.map(|u| {
                    Box::new(crate::jobs::model::meta::MetaMore {
                        usage: Some(Box::new(u)),
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
}
