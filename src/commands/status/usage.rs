//! The dashboard's usage section, in the terminal, in Markdown and in the JSON export: tokens and
//! cost of the jobs whose runs recorded them, per project, per kind of agent and per day. Absent
//! from the terminal and Markdown when no job has figures, so that a fleet of agents without
//! them sees no empty section; the JSON always has it, with zeros. The table per agent is shown
//! only when more than one kind of agent has figures (the JSON always lists them).

use std::fmt::Write as _;

use serde::Serialize;

use super::markdown::md_escape;
use super::text::{BOLD, DIM, Line, colored, plain, table};
use crate::jobs::insight::totals::{Total, Totals};
use crate::jobs::model::session::{format_cost, format_tokens};

/// Days shown in the terminal, newest first; the export lists them all.
const DAYS_SHOWN: usize = 7;

const COLUMNS: [&str; 5] = ["JOBS", "INPUT", "OUTPUT", "CACHE", "COST"];

/// `$1.25`, with how many jobs reported no cost when some did not: their cost is unknown, not
/// nothing.
fn cost(t: &Total) -> String {
    let shown = format_cost(t.cost_usd);
    match t.without_cost {
        0 => shown,
        n => format!("{shown} (+{n} without a cost)"),
    }
}

fn cells(label: String, t: &Total) -> Vec<String> {
    vec![
        label,
        t.jobs.to_string(),
        format_tokens(t.input_tokens),
        format_tokens(t.output_tokens),
        format_tokens(t.cache_tokens()),
        cost(t),
    ]
}

fn named(label: &str) -> String {
    if label.is_empty() {
        "-".into()
    } else {
        label.to_owned()
    }
}

/// The rows per agent, when more than one kind of agent has figures.
fn agent_rows(t: &Totals) -> Option<Vec<Vec<String>>> {
    (t.agent_kinds() > 1).then(|| {
        t.by_agent
            .iter()
            .map(|(a, total)| cells(named(a), total))
            .collect()
    })
}

fn day_label(day: Option<chrono::NaiveDate>) -> String {
    day.map_or("unknown".into(), |d| d.format("%Y-%m-%d").to_string())
}

/// `4 jobs · 10.4k tokens · $2.00`
fn summary(t: &Total) -> String {
    format!(
        "{} job{} · {} tokens · {}",
        t.jobs,
        if t.jobs == 1 { "" } else { "s" },
        format_tokens(t.tokens()),
        cost(t)
    )
}

/// The section for the plain terminal, or nothing when no job has figures.
pub fn lines(t: &Totals) -> Vec<Line> {
    if t.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Line::default(),
        Line(vec![
            colored("Usage", BOLD),
            plain(format!("  {}", summary(&t.all))),
        ]),
    ];
    let text_table = |first: &'static str, rows: Vec<Vec<String>>| {
        let mut header = vec![first];
        header.extend(COLUMNS);
        table(
            &header,
            rows.into_iter()
                .map(|r| r.into_iter().map(plain).collect())
                .collect(),
        )
    };
    let projects = t
        .by_project
        .iter()
        .map(|(p, total)| cells(named(p), total))
        .collect();
    out.extend(text_table("PROJECT", projects));
    if let Some(agents) = agent_rows(t) {
        out.extend(text_table("AGENT", agents));
    }
    let shown = &t.by_day[..t.by_day.len().min(DAYS_SHOWN)];
    let days = shown.iter().map(|(d, total)| cells(day_label(*d), total));
    out.extend(text_table("DAY", days.collect()));
    if t.by_day.len() > shown.len() {
        out.push(Line(vec![colored(
            format!(
                "  … {} earlier day(s) (`luzia status --export json` lists them all)",
                t.by_day.len() - shown.len()
            ),
            DIM,
        )]));
    }
    out
}

/// The section in Markdown, or nothing when no job has figures.
pub fn markdown(t: &Totals, out: &mut String) {
    if t.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Usage\n\n{}.\n", summary(&t.all));
    let row = |cells: Vec<String>| {
        let escaped: Vec<String> = cells.iter().map(|c| md_escape(c)).collect();
        format!("| {} |\n", escaped.join(" | "))
    };
    let projects = t.by_project.iter().map(|(p, total)| cells(named(p), total));
    let agents = agent_rows(t).map(|rows| ("Agent", rows));
    let days = t
        .by_day
        .iter()
        .map(|(d, total)| cells(day_label(*d), total));
    let tables = [("Project", projects.collect::<Vec<_>>())]
        .into_iter()
        .chain(agents)
        .chain([("Day", days.collect())]);
    for (first, rows) in tables {
        let _ = writeln!(out, "| {first} | Jobs | Input | Output | Cache | Cost |");
        out.push_str("|---|---|---|---|---|---|\n");
        rows.into_iter().for_each(|r| out.push_str(&row(r)));
        out.push('\n');
    }
}

/// Tokens and cost of the jobs with figures: all of them, per project, per day.
#[derive(Serialize)]
pub struct UsageSection<'a> {
    #[serde(flatten)]
    all: TotalJson,
    by_project: Vec<ProjectTotal<'a>>,
    by_agent: Vec<AgentTotal<'a>>,
    by_day: Vec<DayTotal>,
}

#[derive(Serialize)]
struct AgentTotal<'a> {
    /// The kind of agent (`claude`, `codex`), null for the jobs that name none.
    agent: Option<&'a str>,
    #[serde(flatten)]
    total: TotalJson,
}

#[derive(Serialize)]
struct ProjectTotal<'a> {
    project: &'a str,
    #[serde(flatten)]
    total: TotalJson,
}

#[derive(Serialize)]
struct DayTotal {
    day: Option<String>,
    #[serde(flatten)]
    total: TotalJson,
}

#[derive(Serialize)]
struct TotalJson {
    jobs: usize,
    jobs_without_cost: usize,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_creation_tokens: u64,
    total_tokens: u64,
    cost_usd: f64,
}

impl TotalJson {
    fn of(t: &Total) -> TotalJson {
        TotalJson {
            jobs: t.jobs,
            jobs_without_cost: t.without_cost,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            cache_read_tokens: t.cache_read_tokens,
            cache_creation_tokens: t.cache_creation_tokens,
            total_tokens: t.tokens(),
            // A sum of costs carries float noise in its last digits; a millionth of a dollar
            // is finer than any cost reported.
            cost_usd: (t.cost_usd * 1e6).round() / 1e6,
        }
    }
}

impl UsageSection<'_> {
    pub fn of(t: &Totals) -> UsageSection<'_> {
        UsageSection {
            all: TotalJson::of(&t.all),
            by_project: t
                .by_project
                .iter()
                .map(|(project, total)| ProjectTotal {
                    project,
                    total: TotalJson::of(total),
                })
                .collect(),
            by_agent: t
                .by_agent
                .iter()
                .map(|(agent, total)| AgentTotal {
                    agent: Some(agent.as_str()).filter(|a| !a.is_empty()),
                    total: TotalJson::of(total),
                })
                .collect(),
            by_day: t
                .by_day
                .iter()
                .map(|(day, total)| DayTotal {
                    day: day.map(|d| d.format("%Y-%m-%d").to_string()),
                    total: TotalJson::of(total),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn total(jobs: usize, cost_usd: f64, without_cost: usize) -> Total {
        Total {
            jobs,
            input_tokens: 12_000,
            output_tokens: 3_400,
            cache_read_tokens: 200_000,
            cache_creation_tokens: 5_000,
            cost_usd,
            without_cost,
        }
    }

    fn totals(days: usize) -> Totals {
        let day = |n: u32| Some(NaiveDate::from_ymd_opt(2026, 11, 21 - n).unwrap());
        Totals {
            all: total(3, 2.5, 1),
            by_project: vec![
                ("librec".into(), total(1, 2.0, 0)),
                ("mu|sica".into(), total(2, 0.5, 1)),
            ],
            by_agent: vec![("claude".into(), total(3, 2.5, 1))],
            by_day: (0..days as u32)
                .map(|n| (day(n), total(1, 0.5, 0)))
                .collect(),
        }
    }

    #[test]
    fn the_terminal_shows_the_totals_per_project_and_the_last_days() {
        let text: Vec<String> = lines(&totals(2))
            .iter()
            .map(|l| l.render(false, None))
            .collect();
        assert_eq!(
            text,
            [
                "",
                "Usage  3 jobs · 220.4k tokens · $2.50 (+1 without a cost)",
                "  PROJECT  JOBS  INPUT  OUTPUT  CACHE   COST",
                "  librec   1     12.0k  3.4k    205.0k  $2.00",
                "  mu|sica  2     12.0k  3.4k    205.0k  $0.50 (+1 without a cost)",
                "  DAY         JOBS  INPUT  OUTPUT  CACHE   COST",
                "  2026-11-21  1     12.0k  3.4k    205.0k  $0.50",
                "  2026-11-20  1     12.0k  3.4k    205.0k  $0.50",
            ]
        );
        let many = lines(&totals(9));
        let last = many.last().unwrap().render(false, None);
        assert!(last.contains("… 2 earlier day(s)"), "{last}");
        assert!(lines(&Totals::default()).is_empty());
    }

    #[test]
    fn markdown_lists_every_day_and_escapes_project_names() {
        let mut md = String::new();
        markdown(&totals(9), &mut md);
        assert!(md.starts_with("## Usage\n\n3 jobs · 220.4k tokens"), "{md}");
        assert!(md.contains("| mu\\|sica | 2 |"), "{md}");
        assert!(md.contains("| 2026-11-13 | 1 |"), "{md}");
        let mut none = String::new();
        markdown(&Totals::default(), &mut none);
        assert_eq!(none, "");
    }

    #[test]
    fn a_table_per_agent_only_when_more_than_one_kind_has_figures() {
        let mut t = totals(1);
        let text = |t: &Totals| -> Vec<String> {
            lines(t).iter().map(|l| l.render(false, None)).collect()
        };
        assert!(!text(&t).iter().any(|l| l.contains("AGENT")), "one kind");
        t.by_agent = vec![
            ("claude".into(), total(2, 2.0, 0)),
            ("".into(), total(1, 0.25, 0)),
            ("codex".into(), total(1, 0.0, 1)),
        ];
        let shown = text(&t);
        let at = shown.iter().position(|l| l.contains("AGENT")).unwrap();
        assert_eq!(
            &shown[at..at + 4],
            [
                "  AGENT   JOBS  INPUT  OUTPUT  CACHE   COST",
                "  claude  2     12.0k  3.4k    205.0k  $2.00",
                "  -       1     12.0k  3.4k    205.0k  $0.25",
                "  codex   1     12.0k  3.4k    205.0k  $0.00 (+1 without a cost)",
            ]
        );
        let mut md = String::new();
        markdown(&t, &mut md);
        assert!(
            md.contains("| Agent | Jobs |") && md.contains("| codex | 1 |"),
            "{md}"
        );
        let json = serde_json::to_value(UsageSection::of(&t)).unwrap();
        assert_eq!(json["by_agent"][0]["agent"], "claude");
        assert_eq!(json["by_agent"][1]["agent"], serde_json::Value::Null);
        assert_eq!(json["by_agent"][2]["jobs_without_cost"], 1);
    }
}
