//! `--export md`: the report as Markdown, a title, the counts, then one heading and one table
//! per section; agent text escaped so that it cannot break a table or start markup.

use std::fmt::Write as _;

use chrono::Local;

use super::render::{clock, system_alert_kind};
use crate::jobs::insight::report::Report;
use crate::jobs::model::time::format_duration;

/// Text safe inside a Markdown table cell or after a label on a line: `|` and every character
/// that opens inline markup (code, emphasis, links, HTML, entities) is backslash-escaped, and
/// line breaks become spaces (the report's text is one line already; this holds even if it were
/// not). Characters that mean something only at the start of a line are left alone: agent text
/// never starts one.
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A Markdown table; every cell escaped.
fn md_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        out.push_str("_none_\n\n");
        return;
    }
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

fn dash(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.into() }
}

/// The report as Markdown: a title, the counts, then one heading and table per section.
pub fn markdown(r: &Report) -> String {
    let now = r.generated_at;
    let mut out = String::from("# luzia status\n\n");
    let when = now.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S %Z");
    let _ = write!(out, "Generated {when} from {}", md_escape(&r.jobs_root));
    if let Some(p) = &r.project {
        let _ = write!(out, ", project {}", md_escape(p));
    }
    out.push_str(if r.alerts_only {
        " (alerts only).\n\n"
    } else {
        ".\n\n"
    });
    if let Some(note) = &r.note {
        let _ = writeln!(out, "**Note:** {}\n", md_escape(note));
    }
    let counts = r.counts.by_status();
    let header: Vec<&str> = counts.iter().map(|(s, _)| s.as_str()).collect();
    let values: Vec<String> = counts.iter().map(|(_, n)| n.to_string()).collect();
    md_table(&mut out, &header, &[values]);
    md_system(r, &mut out);
    if !r.alerts_only {
        md_running(r, &mut out);
        md_waiting(r, &mut out);
    }
    md_alarms(r, &mut out);
    md_issues(r, &mut out);
    if !r.alerts_only {
        super::usage::markdown(&r.usage, &mut out);
        md_recent(r, &mut out);
    }
    out
}

fn md_system(r: &Report, out: &mut String) {
    out.push_str("## System\n\n");
    match &r.system.load {
        Ok(l) => {
            let _ = writeln!(
                out,
                "Memory {:.0}% used, load {:.2} on {} cores.\n",
                l.memory_used_percent(),
                l.load1,
                l.cores
            );
        }
        Err(e) => {
            let _ = writeln!(out, "Unavailable: {}\n", md_escape(&e.to_string()));
        }
    }
    for a in &r.system.alerts {
        let _ = writeln!(out, "- **alert:** {}", md_escape(&a.to_string()));
    }
    if !r.system.alerts.is_empty() {
        out.push('\n');
    }
}

fn md_running(r: &Report, out: &mut String) {
    let _ = writeln!(out, "## Running ({})\n", r.running.len());
    let rows: Vec<Vec<String>> = r
        .running
        .iter()
        .map(|row| {
            vec![
                row.id.to_string(),
                dash(&row.project),
                row.elapsed_secs.map_or("-".into(), format_duration),
                row.percent.map_or("-".into(), |p| {
                    format!("{}{p:.0}%", if row.estimated { "~" } else { "" })
                }),
                dash(&row.step),
                row.issue
                    .as_ref()
                    .map_or("-".into(), |(s, n)| format!("{n} ({s})")),
                row.alarm
                    .as_ref()
                    .map_or("-".into(), |a| a.kind.label().into()),
            ]
        })
        .collect();
    md_table(
        out,
        &[
            "Job", "Project", "Elapsed", "Progress", "Step", "Issue", "Alarm",
        ],
        &rows,
    );
}

fn md_waiting(r: &Report, out: &mut String) {
    let _ = writeln!(out, "## Waiting ({})\n", r.waiting.len());
    let rows: Vec<Vec<String>> = r
        .waiting
        .iter()
        .map(|w| {
            let kind = w.kind.map_or("-", |k| k.as_str());
            let kind = match (w.stopped, &w.answer) {
                (true, Some(_)) => format!("{kind} (stopped, answered)"),
                (true, None) => format!("{kind} (stopped)"),
                _ => kind.to_string(),
            };
            let text = match super::render::answered(w) {
                Some(answer) => format!("{} · {answer}", w.text),
                None => w.text.clone(),
            };
            vec![
                w.id.to_string(),
                dash(&w.project),
                w.since.map_or("-".into(), |t| {
                    format_duration((r.generated_at - t).num_seconds())
                }),
                kind,
                text,
                dash(&w.options.join(" / ")),
            ]
        })
        .collect();
    md_table(
        out,
        &["Job", "Project", "Waited", "Kind", "Text", "Options"],
        &rows,
    );
}

fn md_alarms(r: &Report, out: &mut String) {
    let now = r.generated_at;
    let _ = writeln!(
        out,
        "## Alarms ({})\n",
        r.alarms.len() + r.system.alerts.len()
    );
    let mut rows: Vec<Vec<String>> = r
        .system
        .alerts
        .iter()
        .map(|a| {
            vec![
                "system".into(),
                system_alert_kind(a).into(),
                "now".into(),
                a.to_string(),
            ]
        })
        .collect();
    rows.extend(r.alarms.iter().map(|a| {
        vec![
            a.id.to_string(),
            a.alarm.kind.label().into(),
            clock(a.alarm.since, now),
            a.alarm.detail.clone(),
        ]
    }));
    md_table(out, &["Job", "Alarm", "Since", "Detail"], &rows);
}

fn md_issues(r: &Report, out: &mut String) {
    let _ = writeln!(out, "## Issues ({})\n", r.issues.len());
    let rows: Vec<Vec<String>> = r
        .issues
        .iter()
        .map(|i| {
            vec![
                i.id.to_string(),
                i.status.as_str().into(),
                i.severity.as_str().into(),
                i.pattern.clone(),
                i.count.to_string(),
                i.last_line.clone(),
                dash(&i.fix),
            ]
        })
        .collect();
    md_table(
        out,
        &[
            "Job",
            "Status",
            "Severity",
            "Pattern",
            "Count",
            "Last line",
            "Fix",
        ],
        &rows,
    );
}

fn md_recent(r: &Report, out: &mut String) {
    let _ = writeln!(out, "## Recent events ({})\n", r.recent.len());
    let rows: Vec<Vec<String>> = r
        .recent
        .iter()
        .map(|e| {
            vec![
                e.at.map_or("-".into(), |t| clock(t, r.generated_at)),
                e.job.as_ref().map_or("-".into(), |j| j.to_string()),
                e.text.clone(),
            ]
        })
        .collect();
    md_table(out, &["Time", "Job", "Event"], &rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escaping_keeps_tables_whole() {
        let hostile = "a | b\nc `d` *e* [x](javascript:y) <script> \\|";
        let escaped = md_escape(hostile);
        assert!(!escaped.contains('\n'));
        // Every `|` is escaped, so no cell boundary can come from the text.
        let bytes = escaped.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'|' {
                assert_eq!(bytes[i - 1], b'\\', "{escaped}");
            }
        }
        assert_eq!(md_escape("plain words 42"), "plain words 42");
        assert_eq!(md_escape("a|b"), "a\\|b");
        assert_eq!(md_escape("x\\|y"), "x\\\\\\|y");
    }
}
