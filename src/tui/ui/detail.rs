//! The detail view (Enter): everything known about one job, in one scrollable page.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::jobs::insight::timeline::EventKind;
use crate::jobs::model::describe::{self, Emphasis};
use crate::jobs::text::sanitize::{plain_text, sanitize_line};
use crate::jobs::{Job, Status};
use crate::tui::action::DetailAction;
use crate::tui::app::App;
use crate::tui::app::detail::Detail;
use crate::tui::theme::Theme;

const PROMPT_LINES: usize = 200;

pub fn render(app: &App, detail: &Detail, theme: &Theme, f: &mut Frame, area: Rect) {
    let Some(job) = app.jobs.get(&detail.job) else {
        f.render_widget(Paragraph::new("no job selected"), area);
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(
            format!(
                " {} · detail ({} closes) ",
                job.id,
                app.opts.keymap.first_key(DetailAction::Close)
            ),
            theme.title(),
        ));
    let mut lines = job_lines(job, theme, app.now);
    lines.extend(issue_lines(app, job, theme));
    lines.extend(timeline_lines(app, job, theme));
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("prompt.txt", theme.title())));
    match &detail.prompt {
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
        .scroll((detail.scroll, 0));
    f.render_widget(para, area);
}

/// Known issues found in the output: what, how often, the line that showed it, what to do.
fn issue_lines<'a>(app: &App, job: &Job, theme: &Theme) -> Vec<Line<'a>> {
    let Some(findings) = app.insight.issues.get(&job.id).filter(|f| !f.is_empty()) else {
        return vec![];
    };
    let Some(set) = app.insight.patterns.as_deref() else {
        return vec![];
    };
    let mut lines = vec![
        Line::default(),
        Line::from(Span::styled("Known issues", theme.title())),
    ];
    for f in findings.found.iter() {
        let p = set.pattern(f.pattern);
        let times = if f.count == 1 {
            "once".to_string()
        } else {
            format!("×{}", f.count)
        };
        lines.push(Line::from(vec![
            Span::styled(theme.issue_mark(), theme.severity(f.severity)),
            Span::styled(
                format!(" {} {}", f.severity, p.name),
                theme.severity(f.severity),
            ),
            Span::styled(
                format!("  {times} · {}", plain_text(&p.description)),
                theme.dim(),
            ),
        ]));
        lines.push(Line::from(vec![
            Span::styled("  line: ", theme.dim()),
            Span::raw(f.last_line.to_string()),
        ]));
        lines.push(Line::from(vec![
            Span::styled("  fix: ", theme.accent()),
            Span::raw(plain_text(&p.fix)),
        ]));
    }
    lines
}

/// What happened to the job, oldest first, from its files.
fn timeline_lines<'a>(app: &App, job: &Job, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![
        Line::default(),
        Line::from(Span::styled("Timeline", theme.title())),
    ];
    match app.timeline(job) {
        None => lines.push(Line::from(Span::styled("reading…", theme.dim()))),
        Some(Err(e)) => lines.push(Line::from(Span::styled(e, theme.error()))),
        Some(Ok(events)) => {
            for e in events {
                let when = e.at.map_or_else(
                    || "        ".to_string(),
                    |t| {
                        t.with_timezone(&chrono::Local)
                            .format("%H:%M:%S")
                            .to_string()
                    },
                );
                let style = match e.kind {
                    EventKind::Issue | EventKind::Alarm => theme.warn(),
                    EventKind::Finished
                        if matches!(
                            job.status,
                            Status::Failed | Status::ChecksFailed | Status::Died | Status::Killed
                        ) =>
                    {
                        theme.error()
                    }
                    _ => Style::new(),
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("{when}  {:<9}", e.kind.label()), theme.dim()),
                    Span::styled(e.text, style),
                ]));
            }
        }
    }
    lines
}

/// The job's facts, label column dimmed; status, questions and problems stand out.
fn job_lines<'a>(job: &Job, theme: &Theme, now: DateTime<Utc>) -> Vec<Line<'a>> {
    describe::facts(job, now)
        .into_iter()
        .map(|fact| {
            let style = match fact.emphasis {
                Emphasis::Normal => Style::new(),
                Emphasis::Status => theme.status(job.status),
                Emphasis::Attention => theme.warn(),
                Emphasis::Problem => theme.error(),
            };
            let value = match fact.emphasis {
                Emphasis::Status => format!("{} {}", theme.symbol(job.status), fact.value),
                _ => fact.value,
            };
            Line::from(vec![
                Span::styled(format!("{:<11}", fact.label), theme.dim()),
                Span::styled(value, style),
            ])
        })
        .collect()
}
