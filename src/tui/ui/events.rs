//! The recent-events view (`e`): what happened while the operator was away, newest first.

use chrono::{DateTime, Local, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::jobs::insight::timeline::EventKind;
use crate::tui::action::EventsAction;
use crate::tui::app::App;
use crate::tui::app::events::Feed;
use crate::tui::theme::Theme;

pub fn render(app: &App, feed: &Feed, theme: &Theme, f: &mut Frame, area: Rect) {
    let keys = &app.opts.keymap;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(
            format!(
                " Recent events {} · {} goes to the job · {} closes ",
                feed.events.len(),
                keys.first_key(EventsAction::Open),
                keys.first_key(EventsAction::Close)
            ),
            theme.title(),
        ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let height = inner.height as usize;
    let mut lines: Vec<Line> = Vec::new();
    if feed.loading && feed.events.is_empty() {
        lines.push(Line::from(Span::styled("reading…", theme.dim())));
    } else if feed.events.is_empty() {
        lines.push(Line::from(Span::styled(
            "nothing recorded yet: events are jobs starting and finishing, questions, issues and alarms",
            theme.dim(),
        )));
    }
    for p in feed.problems.iter().take(2) {
        lines.push(Line::from(Span::styled(p.clone(), theme.warn())));
    }
    let room = height.saturating_sub(lines.len()).max(1);
    // The selection stays on screen, a third of the way down once it has moved that far.
    let top = feed.selected.saturating_sub(room * 2 / 3);
    let today = app.now.with_timezone(&Local).date_naive();
    for (i, e) in feed.events.iter().enumerate().skip(top).take(room) {
        let style = match e.kind {
            EventKind::Issue | EventKind::Alarm => theme.warn(),
            EventKind::Asked => theme.status(crate::jobs::Status::Waiting),
            _ => Style::new(),
        };
        let job = e.job.as_ref().map_or(String::new(), |j| j.to_string());
        let mut line = Line::from(vec![
            Span::styled(format!("{:<12} ", when(e.at, today)), theme.dim()),
            Span::styled(format!("{job:<14} "), theme.dim()),
            Span::styled(format!("{:<9} ", e.kind.label()), style),
            Span::raw(e.text.clone()),
        ]);
        if i == feed.selected {
            line = line.style(theme.selected());
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// `14:03:12` today, `Nov 20 14:03` before.
fn when(at: Option<DateTime<Utc>>, today: chrono::NaiveDate) -> String {
    let Some(t) = at.map(|t| t.with_timezone(&Local)) else {
        return String::new();
    };
    if t.date_naive() == today {
        t.format("%H:%M:%S").to_string()
    } else {
        t.format("%b %d %H:%M").to_string()
    }
}
