//! The detail view (Enter): everything known about one job, in one scrollable page.

use chrono::{DateTime, Local, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::theme::Theme;
use crate::jobs::Job;
use crate::jobs::sanitize::{plain_text, sanitize_line};
use crate::jobs::time::format_duration;
use crate::tui::app::App;

const PROMPT_LINES: usize = 200;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let Some(job) = app.selected_job() else {
        f.render_widget(Paragraph::new("no job selected"), area);
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(
            format!(" {} · detail (esc closes) ", job.id),
            theme.title(),
        ));
    let mut lines = job_lines(job, theme, app.now);
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("prompt.txt", theme.title())));
    match app
        .prompt
        .as_ref()
        .filter(|(id, _)| *id == job.id)
        .map(|(_, t)| t)
    {
        None => lines.push(Line::from(Span::styled("reading…", theme.dim()))),
        Some(Ok(None)) => lines.push(Line::from(Span::styled("(no prompt.txt)", theme.dim()))),
        Some(Err(e)) => lines.push(Line::from(Span::styled(e.clone(), theme.error()))),
        Some(Ok(Some(text))) => {
            let total = text.lines().count();
            for l in text.lines().take(PROMPT_LINES) {
                lines.push(Line::from(sanitize_line(l.as_bytes()).plain()));
            }
            if total > PROMPT_LINES {
                lines.push(Line::from(Span::styled(
                    format!("… {} more lines", total - PROMPT_LINES),
                    theme.dim(),
                )));
            }
        }
    }
    let para = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((app.detail_scroll, 0));
    f.render_widget(para, area);
}

fn when(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or("-".into(), |t| {
        format!(
            "{} ({} ago)",
            t.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S"),
            format_duration((now - t).num_seconds())
        )
    })
}

fn job_lines<'a>(job: &Job, theme: &Theme, now: DateTime<Utc>) -> Vec<Line<'a>> {
    let field = |k: &str, v: String| {
        Line::from(vec![
            Span::styled(format!("{k:<11}"), theme.dim()),
            Span::raw(v),
        ])
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{:<11}", "status"), theme.dim()),
            Span::styled(
                format!("{} {}", theme.symbol(job.status), job.status),
                theme.status(job.status),
            ),
        ]),
        field("project", plain_text(job.project())),
        field("task", plain_text(job.task())),
        field(
            "exit code",
            job.exit_code.map_or("-".into(), |c| c.to_string()),
        ),
        field("pid", job.pid.map_or("-".into(), |p| p.to_string())),
        field("started", when(job.started, now)),
        field("finished", when(job.finished, now)),
        field(
            "elapsed",
            job.elapsed_secs(now).map_or("-".into(), format_duration),
        ),
    ];
    if let Some(m) = &job.meta {
        for (k, v) in [
            ("type", &m.kind),
            ("user", &m.user),
            ("host", &m.host),
            ("agent", &m.agent),
            ("retry of", &m.retry_of),
        ] {
            if !v.is_empty() {
                lines.push(field(k, plain_text(v)));
            }
        }
        if let Some(est) = m.estimated_duration_seconds {
            lines.push(field("estimate", format_duration(est as i64)));
        }
    }
    if let Some(p) = &job.progress {
        let mut s = String::new();
        if let Some(pct) = p.percent_done() {
            s.push_str(&format!("{pct:.0}% "));
        }
        if let (Some(k), Some(n)) = (p.step, p.total_steps) {
            s.push_str(&format!("step {k}/{n} "));
        }
        if let Some(name) = &p.step_name {
            s.push_str(&plain_text(name));
        }
        if let Some(eta) = p.eta_seconds {
            s.push_str(&format!(" (eta {})", format_duration(eta as i64)));
        }
        lines.push(field("progress", s.trim().to_owned()));
    }
    let standing = job.standing().note();
    if let Some(q) = &job.question {
        lines.push(Line::default());
        let label = format!("question ({standing})");
        lines.push(Line::from(Span::styled(label, theme.warn())));
        lines.push(Line::from(plain_text(&q.question)));
        for (i, o) in q.options.iter().enumerate() {
            lines.push(Line::from(format!("  {}) {}", i + 1, plain_text(o))));
        }
        if !q.context.is_empty() {
            lines.push(field("context", plain_text(&q.context)));
        }
        lines.push(field("asked", when(q.asked_at, now)));
        if let Some(t) = q.timeout_minutes {
            let default = q
                .default_if_timeout
                .as_deref()
                .map(plain_text)
                .unwrap_or_else(|| "none".into());
            lines.push(field("timeout", format!("{t} min, then: {default}")));
        }
    }
    if let Some(g) = &job.gate {
        lines.push(Line::default());
        let label = format!("approval gate ({standing})");
        lines.push(Line::from(Span::styled(label, theme.warn())));
        lines.push(field("gate", plain_text(&g.gate)));
        lines.push(Line::from(plain_text(&g.description)));
        lines.push(field("since", when(g.awaiting_since, now)));
        if let Some(m) = g.auto_approve_after_minutes {
            lines.push(field(
                "auto",
                format!("approved automatically after {m} min"),
            ));
        }
    }
    lines.push(Line::default());
    lines.push(field("path", job.dir.display().to_string()));
    for p in &job.problems {
        lines.push(Line::from(Span::styled(
            format!("problem: {p}"),
            theme.error(),
        )));
    }
    lines
}
