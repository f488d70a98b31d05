//! The detail view (Enter): everything known about one job, in one scrollable page.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::theme::Theme;
use crate::jobs::Job;
use crate::jobs::describe::{self, Emphasis};
use crate::jobs::sanitize::sanitize_line;
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
