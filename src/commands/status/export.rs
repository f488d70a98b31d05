//! `luzia status --export json|md`: where the file goes, the JSON form (its shape is documented
//! in docs/status.md; the Markdown form is `markdown.rs`), and the write itself, atomic (a
//! temporary file in the same directory, then a rename), so a reader never sees half a report
//! and a failed write leaves nothing behind.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use chrono::{DateTime, Local, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use super::render::system_alert_kind;
use super::usage::UsageSection;
use crate::cli::ExportFormat;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::insight::alarms::{Alarm, AlarmKind};
use crate::jobs::insight::report::{Counts, IssueRow, Report, RunningRow, WaitingRow};

fn rfc3339(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// `stalled`, `over_budget`, `question_waiting`, `near_budget`.
fn kind_key(kind: AlarmKind) -> String {
    kind.label().replace(' ', "_")
}

/// One decimal is all a person reads; more would only make reports differ.
fn tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The report as the JSON object docs/status.md describes; the fields in this order.
#[derive(Serialize)]
pub struct Document<'a> {
    generated_at: Option<String>,
    jobs_root: &'a str,
    project: Option<&'a str>,
    note: Option<&'a str>,
    alerts_only: bool,
    alert_count: usize,
    #[serde(serialize_with = "counts_by_status")]
    counts: Counts,
    jobs_with_problems: usize,
    system: System,
    running: Vec<RunningEntry<'a>>,
    waiting: Vec<WaitingEntry<'a>>,
    alarms: Vec<AlarmOfJob<'a>>,
    issues: Vec<Issue<'a>>,
    recent: Vec<Recent<'a>>,
    usage: UsageSection<'a>,
}

/// `{"running": 1, "waiting": 0, ...}` in the order the header shows them.
fn counts_by_status<S: Serializer>(counts: &Counts, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(counts.by_status().map(|(status, n)| (status.as_str(), n)))
}

#[derive(Serialize)]
struct System {
    memory_used_percent: Option<f64>,
    load1: Option<f64>,
    cores: Option<usize>,
    memory_alert_percent: u8,
    alerts: Vec<SystemAlertJson>,
    error: Option<String>,
}

#[derive(Serialize)]
struct SystemAlertJson {
    kind: &'static str,
    text: String,
}

#[derive(Serialize)]
struct AlarmJson<'a> {
    kind: String,
    since: Option<String>,
    detail: &'a str,
}

impl<'a> AlarmJson<'a> {
    fn of(a: &'a Alarm) -> AlarmJson<'a> {
        AlarmJson {
            kind: kind_key(a.kind),
            since: rfc3339(Some(a.since)),
            detail: &a.detail,
        }
    }
}

#[derive(Serialize)]
struct IssueOfRow<'a> {
    severity: &'static str,
    pattern: &'a str,
}

#[derive(Serialize)]
struct RunningEntry<'a> {
    id: &'a str,
    project: &'a str,
    elapsed_seconds: Option<i64>,
    percent: Option<f64>,
    estimated: bool,
    step: &'a str,
    issue: Option<IssueOfRow<'a>>,
    alarm: Option<AlarmJson<'a>>,
}

#[derive(Serialize)]
struct WaitingEntry<'a> {
    id: &'a str,
    project: &'a str,
    kind: Option<&'static str>,
    text: &'a str,
    options: &'a [String],
    since: Option<String>,
    waited_seconds: Option<i64>,
    stopped: bool,
    /// A stopped job's answer, once given: it then waits only for its retry.
    answer: Option<AnswerEntry<'a>>,
}

#[derive(Serialize)]
struct AnswerEntry<'a> {
    answer: &'a str,
    answered_by: &'a str,
    answered_at: Option<String>,
    source: &'a str,
}

#[derive(Serialize)]
struct AlarmOfJob<'a> {
    job: &'a str,
    project: &'a str,
    kind: String,
    since: Option<String>,
    detail: &'a str,
}

#[derive(Serialize)]
struct Issue<'a> {
    job: &'a str,
    project: &'a str,
    status: &'static str,
    severity: &'static str,
    pattern: &'a str,
    description: &'a str,
    count: u64,
    last_line: &'a str,
    fix: &'a str,
    seen_at: Option<String>,
}

#[derive(Serialize)]
struct Recent<'a> {
    at: Option<String>,
    job: Option<&'a str>,
    kind: &'static str,
    text: &'a str,
}

/// The report as the document `--export json` writes.
pub fn document(r: &Report) -> Document<'_> {
    Document {
        generated_at: rfc3339(Some(r.generated_at)),
        jobs_root: &r.jobs_root,
        project: r.project.as_deref(),
        note: r.note.as_deref(),
        alerts_only: r.alerts_only,
        alert_count: r.alert_count(),
        counts: r.counts,
        jobs_with_problems: r.jobs_with_problems,
        system: system(r),
        running: r.running.iter().map(running).collect(),
        waiting: r
            .waiting
            .iter()
            .map(|w| waiting(w, r.generated_at))
            .collect(),
        alarms: r
            .alarms
            .iter()
            .map(|a| AlarmOfJob {
                job: a.id.as_str(),
                project: &a.project,
                kind: kind_key(a.alarm.kind),
                since: rfc3339(Some(a.alarm.since)),
                detail: &a.alarm.detail,
            })
            .collect(),
        issues: r.issues.iter().map(issue).collect(),
        recent: r
            .recent
            .iter()
            .map(|e| Recent {
                at: rfc3339(e.at),
                job: e.job.as_ref().map(|j| j.as_str()),
                kind: e.kind.label(),
                text: &e.text,
            })
            .collect(),
        usage: UsageSection::of(&r.usage),
    }
}

fn system(r: &Report) -> System {
    let load = r.system.load.as_ref().ok();
    System {
        memory_used_percent: load.map(|l| tenth(l.memory_used_percent())),
        load1: load.map(|l| l.load1),
        cores: load.map(|l| l.cores),
        memory_alert_percent: r.system.memory_percent,
        alerts: r
            .system
            .alerts
            .iter()
            .map(|a| SystemAlertJson {
                kind: system_alert_kind(a),
                text: a.to_string(),
            })
            .collect(),
        error: r.system.load.as_ref().err().map(ToString::to_string),
    }
}

fn running(row: &RunningRow) -> RunningEntry<'_> {
    RunningEntry {
        id: row.id.as_str(),
        project: &row.project,
        elapsed_seconds: row.elapsed_secs,
        percent: row.percent.map(tenth),
        estimated: row.estimated,
        step: &row.step,
        issue: row.issue.as_ref().map(|(sev, name)| IssueOfRow {
            severity: sev.as_str(),
            pattern: name,
        }),
        alarm: row.alarm.as_ref().map(AlarmJson::of),
    }
}

fn waiting(w: &WaitingRow, now: DateTime<Utc>) -> WaitingEntry<'_> {
    WaitingEntry {
        id: w.id.as_str(),
        project: &w.project,
        kind: w.kind.map(|k| k.as_str()),
        text: &w.text,
        options: &w.options,
        since: rfc3339(w.since),
        waited_seconds: w.since.map(|t| (now - t).num_seconds().max(0)),
        stopped: w.stopped,
        answer: w.answer.as_ref().map(|a| AnswerEntry {
            answer: &a.answer,
            answered_by: &a.answered_by,
            answered_at: rfc3339(a.answered_at),
            source: &a.source,
        }),
    }
}

fn issue(i: &IssueRow) -> Issue<'_> {
    Issue {
        job: i.id.as_str(),
        project: &i.project,
        status: i.status.as_str(),
        severity: i.severity.as_str(),
        pattern: &i.pattern,
        description: &i.description,
        count: i.count,
        last_line: &i.last_line,
        fix: &i.fix,
        seen_at: rfc3339(i.seen_at),
    }
}

/// Where the report goes: `--output` (a file, or a directory to put the default name in), else
/// the current directory; the default name is `luzia-status-YYYYMMDD-HHMMSS.EXT`.
pub fn target(
    output: Option<&Path>,
    format: ExportFormat,
    now: DateTime<Local>,
) -> Result<(PathBuf, String)> {
    let ext = match format {
        ExportFormat::Json => "json",
        ExportFormat::Md => "md",
    };
    let default = format!("luzia-status-{}.{ext}", now.format("%Y%m%d-%H%M%S"));
    let cwd = || std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let Some(path) = output else {
        return Ok((cwd(), default));
    };
    if path.is_dir() {
        return Ok((path.to_owned(), default));
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        bail!(
            "--output {} does not end in a file name: give a file (report.{ext}) or a directory",
            path.display()
        );
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => cwd(),
    };
    Ok((dir, name.to_string()))
}

/// Writes `bytes` to `dir/name` atomically; the error names the path and what to do.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    write_atomic(dir, name, bytes).map_err(|e| {
        let hint = match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                "choose a directory you can write to with --output PATH"
            }
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
                "free some space there, or write elsewhere with --output PATH"
            }
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
                "its directory does not exist: create it, or choose another with --output PATH"
            }
            _ => "write it elsewhere with --output PATH",
        };
        anyhow!(
            "cannot write the report to {}: {e} ({hint}); nothing was written",
            path.display()
        )
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::JobId;
    use crate::jobs::Waiting;
    use crate::jobs::insight::known_issues::Severity;
    use crate::jobs::insight::report::{AlarmRow, SystemSection};
    use crate::jobs::insight::timeline::{EventKind, TimelineEvent};
    use crate::jobs::insight::totals::{Total, Totals};
    use crate::jobs::model::status::Status;
    use crate::jobs::os::system::{SystemError, SystemLoad};
    use chrono::TimeZone;

    /// A report with a row in every section, for the shape of the document.
    fn sample() -> Report {
        let t = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
        let id = |s: &str| JobId::parse(s).unwrap();
        let alarm = Alarm {
            kind: AlarmKind::Stalled,
            since: t - chrono::Duration::minutes(12),
            detail: "no output for 12m".into(),
        };
        let load = SystemLoad {
            mem_total_kib: 1000,
            mem_available_kib: 123,
            load1: 5.25,
            cores: 4,
        };
        Report {
            generated_at: t,
            jobs_root: "/srv/jobs".into(),
            project: Some("musica".into()),
            note: None,
            alerts_only: false,
            counts: Counts {
                running: 1,
                waiting: 1,
                ..Counts::default()
            },
            jobs_with_problems: 1,
            system: SystemSection::new(Ok(load), 80),
            running: vec![RunningRow {
                id: id("a1"),
                project: "musica".into(),
                elapsed_secs: Some(754),
                percent: Some(33.333),
                estimated: true,
                step: "2/5 tests".into(),
                issue: Some((Severity::Error, "oom".into())),
                alarm: Some(alarm.clone()),
            }],
            waiting: vec![WaitingRow {
                id: id("b2"),
                project: "musica".into(),
                kind: Some(Waiting::Question),
                text: "Which database?".into(),
                options: vec!["production".into(), "staging".into()],
                since: Some(t - chrono::Duration::minutes(5)),
                stopped: false,
                answer: None,
            }],
            alarms: vec![AlarmRow {
                id: id("a1"),
                project: "musica".into(),
                alarm,
            }],
            issues: vec![IssueRow {
                id: id("a1"),
                project: "musica".into(),
                status: Status::Running,
                severity: Severity::Error,
                pattern: "oom".into(),
                description: "out of memory".into(),
                fix: "give it more memory".into(),
                count: 3,
                last_line: "Killed".into(),
                seen_at: None,
            }],
            recent: vec![TimelineEvent {
                at: Some(t),
                job: Some(id("a1")),
                kind: EventKind::Started,
                text: "started: a task".into(),
            }],
            usage: Totals {
                all: sample_total(3, 2.25),
                by_project: vec![
                    ("musica".into(), sample_total(2, 2.0)),
                    ("librec".into(), sample_total(1, 0.25)),
                ],
                by_agent: vec![
                    ("claude".into(), sample_total(2, 2.0)),
                    ("codex".into(), sample_total(1, 0.25)),
                ],
                by_day: vec![
                    (t.date_naive().into(), sample_total(2, 2.0)),
                    (None, sample_total(1, 0.25)),
                ],
            },
        }
    }

    fn sample_total(jobs: usize, cost_usd: f64) -> Total {
        Total {
            jobs,
            input_tokens: 1000 * jobs as u64,
            output_tokens: 500,
            cache_read_tokens: 20_000,
            cache_creation_tokens: 0,
            cost_usd: cost_usd + 0.1 + 0.2 - 0.3,
            without_cost: jobs - 1,
        }
    }

    #[test]
    fn the_document_keeps_its_fields_and_their_order() {
        let text = serde_json::to_string_pretty(&document(&sample())).unwrap();
        assert_eq!(format!("{text}\n"), GOLDEN_EXPORT);
        let mut r = sample();
        r.system = SystemSection::new(
            Err(SystemError::Missing {
                path: "/proc/loadavg".into(),
                what: "a load average",
            }),
            80,
        );
        let text = serde_json::to_string(&document(&r).system).unwrap();
        assert_eq!(
            text,
            r#"{"memory_used_percent":null,"load1":null,"cores":null,"memory_alert_percent":80,"alerts":[],"error":"/proc/loadavg does not say a load average"}"#
        );
    }

    /// Today's document, byte for byte (docs/status.md describes it).
    const GOLDEN_EXPORT: &str = include_str!("../../../tests/golden/status-export.json");

    #[test]
    fn the_target_is_output_a_directory_in_it_or_the_current_directory() {
        let now = Local::now();
        let dir = tempfile::tempdir().unwrap();
        let (d, n) = target(Some(dir.path()), ExportFormat::Md, now).unwrap();
        assert_eq!(d, dir.path());
        assert!(n.starts_with("luzia-status-") && n.ends_with(".md"), "{n}");
        assert_eq!(n.len(), "luzia-status-YYYYMMDD-HHMMSS.md".len());
        let file = dir.path().join("r.json");
        let (d, n) = target(Some(&file), ExportFormat::Json, now).unwrap();
        assert_eq!((d.as_path(), n.as_str()), (dir.path(), "r.json"));
        let (d, _) = target(None, ExportFormat::Json, now).unwrap();
        assert_eq!(d, std::env::current_dir().unwrap());
        let err = target(Some(&dir.path().join("gone/..")), ExportFormat::Json, now);
        assert!(err.unwrap_err().to_string().contains("gone/.."));
    }
}
