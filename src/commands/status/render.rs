//! The report as lines for the plain terminal: a two-line header, then one section after the
//! other, each a heading and an aligned table.

use chrono::{DateTime, Local, Utc};

use super::text::{BOLD, BOLD_RED, DIM, Line, RED, Span, YELLOW, colored, cut, plain, table, wrap};
use crate::commands::jobs::status_color;
use crate::jobs::insight::alarms::{Alarm, AlarmKind};
use crate::jobs::insight::known_issues::Severity;
use crate::jobs::insight::report::{IssueRow, Report, RunningRow, WaitingRow};
use crate::jobs::model::time::format_duration;
use crate::jobs::os::system::SystemAlert;
use crate::jobs::{Status, Waiting};

/// Issue rows shown in the terminal; an export lists them all.
const ISSUES_SHOWN: usize = 10;
/// Columns of a step name shown beside its bar.
const STEP_COLS: usize = 32;
/// Columns of a question or a log line shown (the terminal's width may cut them further).
const TEXT_COLS: usize = 160;

fn heading(title: &str, n: usize) -> Line {
    Line(vec![colored(format!("{title} ({n})"), BOLD)])
}

fn none() -> Line {
    Line(vec![plain("  "), colored("none", DIM)])
}

/// `14:05` today, `Nov 20 14:05` on another day, in local time.
pub fn clock(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let local = t.with_timezone(&Local);
    if local.date_naive() == now.with_timezone(&Local).date_naive() {
        local.format("%H:%M").to_string()
    } else {
        local.format("%b %d %H:%M").to_string()
    }
}

/// `[#####-----] 50%`, `~` before the percent of an estimate, `?` when nothing is known.
fn bar(percent: Option<f64>, estimated: bool) -> String {
    match percent {
        Some(p) => {
            let filled = ((p / 10.0).round() as usize).min(10);
            let mark = if estimated { "~" } else { "" };
            format!(
                "[{}{}] {mark}{p:.0}%",
                "#".repeat(filled),
                "-".repeat(10 - filled)
            )
        }
        None => "[----------] ?".into(),
    }
}

fn severity_color(s: Severity) -> &'static str {
    match s {
        Severity::Critical => BOLD_RED,
        Severity::Error => RED,
        Severity::Warning => YELLOW,
    }
}

fn alarm_color(kind: AlarmKind) -> &'static str {
    match kind {
        AlarmKind::Stalled | AlarmKind::OverBudget => RED,
        AlarmKind::QuestionWaiting | AlarmKind::NearBudget => YELLOW,
    }
}

/// The whole dashboard (or, for `--alerts`, the alerts alone), line by line; `cols` is the
/// width the header's counts wrap at.
pub fn lines(r: &Report, now: DateTime<Utc>, cols: Option<usize>) -> Vec<Line> {
    let mut out = header(r, cols);
    if let Some(note) = &r.note {
        out.push(Line(vec![colored(format!("note: {note}"), YELLOW)]));
    }
    if r.alerts_only {
        alerts(r, now, &mut out);
    } else {
        out.extend(system(r));
        out.extend(running(&r.running));
        out.extend(waiting(&r.waiting, now));
        out.extend(alarm_section(r, now));
        out.extend(issues(&r.issues));
        out.extend(super::usage::lines(&r.usage));
        out.extend(recent(r, now));
    }
    if r.jobs_with_problems > 0 {
        out.push(Line::default());
        out.push(Line(vec![colored(
            format!(
                "{} job(s) have files that could not be read: `luzia jobs` marks them '!', \
                 `luzia jobs ID` says which and why",
                r.jobs_with_problems
            ),
            YELLOW,
        )]));
    }
    out
}

/// Where and when, then the counts by status on lines of their own, wrapped between counts to
/// fit `cols` (so that an 80-column terminal shows every count whole).
fn header(r: &Report, cols: Option<usize>) -> Vec<Line> {
    let mut spans = vec![
        colored("luzia status", BOLD),
        plain(format!("  {}", r.jobs_root)),
    ];
    if let Some(p) = &r.project {
        spans.push(plain(format!("  project {p}")));
    }
    spans.push(plain(format!(
        "  {}",
        r.generated_at
            .with_timezone(&Local)
            .format("%Y-%m-%d %H:%M:%S")
    )));
    let counts = r
        .counts
        .by_status()
        .into_iter()
        .filter(|&(s, n)| {
            !matches!(s, Status::Unknown | Status::Limited | Status::ChecksFailed) || n > 0
        })
        .map(|(status, n)| {
            let text = format!("{n} {}", status.as_str().replace('_', " "));
            if n > 0 {
                colored(text, status_color(status))
            } else {
                plain(text)
            }
        })
        .collect();
    let mut out = vec![Line(spans)];
    out.extend(wrap(counts, " · ", cols));
    out
}

fn system(r: &Report) -> Vec<Line> {
    let s = &r.system;
    let mut spans = vec![colored("System", BOLD), plain("  ")];
    match &s.load {
        Ok(load) => spans.push(plain(format!(
            "memory {:.0}% used · load {:.2} on {} cores",
            load.memory_used_percent(),
            load.load1,
            load.cores
        ))),
        Err(e) => spans.push(colored(format!("unavailable: {e}"), DIM)),
    }
    let mut out = vec![Line::default(), Line(spans)];
    out.extend(s.alerts.iter().map(|a| {
        Line(vec![
            plain("  "),
            colored(system_alert(a, s.memory_percent), RED),
        ])
    }));
    out
}

/// `memory` or `load`.
pub fn system_alert_kind(a: &SystemAlert) -> &'static str {
    match a {
        SystemAlert::Memory { .. } => "memory",
        SystemAlert::Load { .. } => "load",
    }
}

fn system_alert(a: &SystemAlert, memory_percent: u8) -> String {
    match a {
        SystemAlert::Memory { .. } => format!("! {a} (above {memory_percent}%)"),
        SystemAlert::Load { .. } => format!("! {a} (more runnable than cores)"),
    }
}

fn or_dash(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.into() }
}

fn running(rows: &[RunningRow]) -> Vec<Line> {
    let mut out = vec![Line::default(), heading("Running", rows.len())];
    if rows.is_empty() {
        out.push(none());
        return out;
    }
    let cells = rows
        .iter()
        .map(|r| {
            vec![
                plain(r.id.as_str()),
                plain(or_dash(&cut(&r.project, 16))),
                plain(r.elapsed_secs.map_or("-".into(), format_duration)),
                plain(bar(r.percent, r.estimated)),
                alarm_cell(r.alarm.as_ref()),
                r.issue.as_ref().map_or(plain("-"), |(sev, name)| {
                    colored(name.clone(), severity_color(*sev))
                }),
                plain(or_dash(&cut(&r.step, STEP_COLS))),
            ]
        })
        .collect();
    // What needs acting on comes before the step's name, which a narrow terminal may cut.
    out.extend(table(
        &[
            "ID", "PROJECT", "ELAPSED", "PROGRESS", "ALARM", "ISSUE", "STEP",
        ],
        cells,
    ));
    out
}

fn alarm_cell(a: Option<&Alarm>) -> Span {
    a.map_or(plain("-"), |a| colored(a.kind.label(), alarm_color(a.kind)))
}

/// `answered 'none' by ana@host (tui): retry to go on`, for a stopped job answered since.
pub fn answered(w: &WaitingRow) -> Option<String> {
    let a = w.answer.as_ref()?;
    let by = if a.answered_by.is_empty() {
        "someone"
    } else {
        &a.answered_by
    };
    let source = if a.source.is_empty() {
        String::new()
    } else {
        format!(" ({})", a.source)
    };
    Some(format!(
        "answered '{}' by {by}{source}: `luzia retry {}` goes on",
        a.answer, w.id
    ))
}

fn waiting_text(w: &WaitingRow) -> String {
    let kind = match w.kind {
        Some(Waiting::Question) => "question: ",
        Some(Waiting::Approval) => "approval: ",
        None => "",
    };
    let stopped = if w.stopped { "(stopped) " } else { "" };
    let mut text: String = format!("{stopped}{kind}{}", w.text);
    if !w.options.is_empty() {
        let numbered: Vec<String> = w
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}) {o}", i + 1))
            .collect();
        text.push_str(&format!(" [{}]", numbered.join(" ")));
    }
    if let Some(answer) = answered(w) {
        text = format!("{answer} · {text}");
    }
    cut(&text, TEXT_COLS)
}

fn waiting(rows: &[WaitingRow], now: DateTime<Utc>) -> Vec<Line> {
    let mut out = vec![Line::default(), heading("Waiting", rows.len())];
    if rows.is_empty() {
        out.push(none());
        return out;
    }
    let cells = rows
        .iter()
        .map(|w| {
            vec![
                plain(w.id.as_str()),
                plain(or_dash(&cut(&w.project, 16))),
                plain(
                    w.since
                        .map_or("-".into(), |t| format_duration((now - t).num_seconds())),
                ),
                colored(waiting_text(w), YELLOW),
            ]
        })
        .collect();
    out.extend(table(&["ID", "PROJECT", "WAITED", "WHAT"], cells));
    out
}

fn alarm_section(r: &Report, now: DateTime<Utc>) -> Vec<Line> {
    let n = r.alarms.len() + r.system.alerts.len();
    let mut out = vec![Line::default(), heading("Alarms", n)];
    if n == 0 {
        out.push(none());
        return out;
    }
    let mut cells: Vec<Vec<Span>> = r
        .system
        .alerts
        .iter()
        .map(|a| {
            vec![
                plain("system"),
                colored(system_alert_kind(a), RED),
                plain("now"),
                plain(system_alert(a, r.system.memory_percent).trim_start_matches("! ")),
            ]
        })
        .collect();
    cells.extend(r.alarms.iter().map(|a| {
        vec![
            plain(a.id.as_str()),
            colored(a.alarm.kind.label(), alarm_color(a.alarm.kind)),
            plain(clock(a.alarm.since, now)),
            plain(a.alarm.detail.clone()),
        ]
    }));
    out.extend(table(&["JOB", "ALARM", "SINCE", "DETAIL"], cells));
    out
}

fn issues(rows: &[IssueRow]) -> Vec<Line> {
    let mut out = vec![Line::default(), heading("Issues", rows.len())];
    if rows.is_empty() {
        out.push(none());
        return out;
    }
    let shown = &rows[..rows.len().min(ISSUES_SHOWN)];
    let cells = shown
        .iter()
        .map(|i| {
            let times = if i.count > 1 {
                format!(" ×{}", i.count)
            } else {
                String::new()
            };
            vec![
                plain(i.id.as_str()),
                colored(i.status.as_str(), status_color(i.status)),
                colored(i.severity.as_str(), severity_color(i.severity)),
                plain(format!("{}{times}", i.pattern)),
            ]
        })
        .collect();
    let table = table(&["JOB", "STATUS", "SEVERITY", "PATTERN"], cells);
    let mut table = table.into_iter();
    out.extend(table.next());
    for (line, issue) in table.zip(shown) {
        out.push(line);
        out.push(Line(vec![
            plain("      "),
            colored(cut(&issue.last_line, TEXT_COLS), DIM),
        ]));
        if !issue.fix.is_empty() {
            out.push(Line(vec![plain(format!("      fix: {}", issue.fix))]));
        }
    }
    if rows.len() > shown.len() {
        out.push(Line(vec![colored(
            format!(
                "  … {} more (`luzia status --export json` lists them all)",
                rows.len() - shown.len()
            ),
            DIM,
        )]));
    }
    out
}

fn recent(r: &Report, now: DateTime<Utc>) -> Vec<Line> {
    let mut out = vec![Line::default(), heading("Recent events", r.recent.len())];
    if r.recent.is_empty() {
        out.push(none());
        return out;
    }
    let cells = r
        .recent
        .iter()
        .map(|e| {
            vec![
                colored(e.at.map_or("-".into(), |t| clock(t, now)), DIM),
                plain(e.job.as_ref().map_or("-", |j| j.as_str())),
                plain(e.text.clone()),
            ]
        })
        .collect();
    out.extend(table(&["TIME", "JOB", "EVENT"], cells));
    out
}

/// `--alerts`: the alarms and the issues that are alerts, or a line saying there are none.
fn alerts(r: &Report, now: DateTime<Utc>, out: &mut Vec<Line>) {
    if r.alert_count() == 0 {
        out.push(Line(vec![plain("no alerts")]));
        return;
    }
    out.extend(alarm_section(r, now));
    if !r.issues.is_empty() {
        out.extend(issues(&r.issues));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_read_at_a_glance() {
        assert_eq!(bar(Some(50.0), false), "[#####-----] 50%");
        assert_eq!(bar(Some(0.0), false), "[----------] 0%");
        assert_eq!(bar(Some(100.0), false), "[##########] 100%");
        assert_eq!(bar(Some(34.0), true), "[###-------] ~34%");
        assert_eq!(bar(None, false), "[----------] ?");
    }
}
