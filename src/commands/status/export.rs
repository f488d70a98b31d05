//! `luzia status --export json|md`: where the file goes, the JSON form (its shape is documented
//! in docs/status.md; the Markdown form is `markdown.rs`), and the write itself, atomic (a
//! temporary file in the same directory, then a rename), so a reader never sees half a report
//! and a failed write leaves nothing behind.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use chrono::{DateTime, Local, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::render::system_alert_kind;
use crate::cli::ExportFormat;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::insight::alarms::{Alarm, AlarmKind};
use crate::jobs::insight::report::{IssueRow, Report, RunningRow, WaitingRow};

fn rfc3339(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| {
        Value::String(t.to_rfc3339_opts(SecondsFormat::Secs, true))
    })
}

/// `stalled`, `over_budget`, `question_waiting`, `near_budget`.
fn kind_key(kind: AlarmKind) -> String {
    kind.label().replace(' ', "_")
}

fn alarm_json(a: &Alarm) -> Value {
    json!({"kind": kind_key(a.kind), "since": rfc3339(Some(a.since)), "detail": a.detail})
}

/// The report as the JSON object docs/status.md describes.
pub fn json(r: &Report) -> Value {
    let counts: serde_json::Map<String, Value> = r
        .counts
        .by_status()
        .iter()
        .map(|(s, n)| (s.as_str().to_string(), json!(n)))
        .collect();
    json!({
        "generated_at": rfc3339(Some(r.generated_at)),
        "jobs_root": r.jobs_root,
        "project": r.project,
        "note": r.note,
        "alerts_only": r.alerts_only,
        "alert_count": r.alert_count(),
        "counts": counts,
        "jobs_with_problems": r.jobs_with_problems,
        "system": system_json(r),
        "running": r.running.iter().map(running_json).collect::<Vec<_>>(),
        "waiting": r.waiting.iter().map(|w| waiting_json(w, r.generated_at)).collect::<Vec<_>>(),
        "alarms": r.alarms.iter().map(|a| json!({
            "job": a.id.as_str(),
            "project": a.project,
            "kind": kind_key(a.alarm.kind),
            "since": rfc3339(Some(a.alarm.since)),
            "detail": a.alarm.detail,
        })).collect::<Vec<_>>(),
        "issues": r.issues.iter().map(issue_json).collect::<Vec<_>>(),
        "recent": r.recent.iter().map(|e| json!({
            "at": rfc3339(e.at),
            "job": e.job.as_ref().map(|j| j.as_str()),
            "kind": e.kind.label(),
            "text": e.text,
        })).collect::<Vec<_>>(),
    })
}

/// One decimal is all a person reads; more would only make reports differ.
fn tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn system_json(r: &Report) -> Value {
    let load = r.system.load.as_ref().ok();
    let alerts: Vec<Value> = r
        .system
        .alerts
        .iter()
        .map(|a| json!({"kind": system_alert_kind(a), "text": a.to_string()}))
        .collect();
    json!({
        "memory_used_percent": load.map(|l| tenth(l.memory_used_percent())),
        "load1": load.map(|l| l.load1),
        "cores": load.map(|l| l.cores),
        "memory_alert_percent": r.system.memory_percent,
        "alerts": alerts,
        "error": r.system.load.as_ref().err().map(ToString::to_string),
    })
}

fn running_json(row: &RunningRow) -> Value {
    json!({
        "id": row.id.as_str(),
        "project": row.project,
        "elapsed_seconds": row.elapsed_secs,
        "percent": row.percent.map(tenth),
        "estimated": row.estimated,
        "step": row.step,
        "issue": row.issue.as_ref().map(|(sev, name)| json!({"severity": sev.as_str(), "pattern": name})),
        "alarm": row.alarm.as_ref().map(alarm_json),
    })
}

fn waiting_json(w: &WaitingRow, now: DateTime<Utc>) -> Value {
    json!({
        "id": w.id.as_str(),
        "project": w.project,
        "kind": w.kind.map(|k| k.as_str()),
        "text": w.text,
        "options": w.options,
        "since": rfc3339(w.since),
        "waited_seconds": w.since.map(|t| (now - t).num_seconds().max(0)),
        "stopped": w.stopped,
    })
}

fn issue_json(i: &IssueRow) -> Value {
    json!({
        "job": i.id.as_str(),
        "project": i.project,
        "status": i.status.as_str(),
        "severity": i.severity.as_str(),
        "pattern": i.pattern,
        "description": i.description,
        "count": i.count,
        "last_line": i.last_line,
        "fix": i.fix,
        "seen_at": rfc3339(i.seen_at),
    })
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
    use crate::jobs::insight::report::{AlarmRow, Counts, SystemSection};
    use crate::jobs::insight::timeline::{EventKind, TimelineEvent};
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
        }
    }

    #[test]
    fn the_document_keeps_its_fields_and_their_order() {
        let text = serde_json::to_string_pretty(&json(&sample())).unwrap();
        assert_eq!(format!("{text}\n"), GOLDEN_EXPORT);
        let mut r = sample();
        r.system = SystemSection::new(
            Err(SystemError::Missing {
                path: "/proc/loadavg".into(),
                what: "a load average",
            }),
            80,
        );
        let text = serde_json::to_string(&json(&r)["system"]).unwrap();
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
