//! The recent-events view (`e`): what happened while the operator was away, newest first, with
//! a mark under what arrived since it was last closed.

use chrono::{DateTime, Local, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::jobs::insight::timeline::EventKind;
use crate::tui::action::EventsAction;
use crate::tui::app::App;
use crate::tui::app::events::{Feed, Kinds};
use crate::tui::theme::Theme;

fn title(app: &App, feed: &Feed) -> String {
    let keys = &app.opts.keymap;
    let view = app.events_view;
    let kinds = match view.kinds {
        Kinds::All => String::new(),
        k => format!(" · only {}", k.title()),
    };
    let progress = if view.progress || view.kinds == Kinds::Progress {
        String::new()
    } else {
        format!(
            " · progress hidden ({})",
            keys.first_key(EventsAction::Progress)
        )
    };
    format!(
        " Recent events {}{kinds}{progress} · {} goes to the job · {} closes ",
        feed.shown.len(),
        keys.first_key(EventsAction::Open),
        keys.first_key(EventsAction::Close)
    )
}

pub fn render(app: &App, feed: &Feed, theme: &Theme, f: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(title(app, feed), theme.title()));
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
    } else if feed.shown.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                "no events of this kind ({} shows every kind)",
                app.opts.keymap.first_key(EventsAction::AllKinds)
            ),
            theme.dim(),
        )));
    }
    for p in feed.problems.iter().take(2) {
        lines.push(Line::from(Span::styled(p.clone(), theme.warn())));
    }
    said_lines(app, theme, inner.width.into(), height / 3, &mut lines);
    let room = height.saturating_sub(lines.len()).max(1);
    // The selection stays on screen, a third of the way down once it has moved that far.
    let top = feed.selected.saturating_sub(room * 2 / 3);
    let today = app.now.with_timezone(&Local).date_naive();
    let mark_at = feed.new.filter(|_| !feed.shown.is_empty());
    for (row, &i) in feed.shown.iter().enumerate().skip(top) {
        if lines.len() >= height {
            break;
        }
        if let Some((n, seen)) = mark_at
            && n == row
        {
            lines.push(mark(n, seen, today, theme));
        }
        let e = &feed.events[i];
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
        if row == feed.selected {
            line = line.style(theme.selected());
        }
        lines.push(line);
    }
    if let Some((n, seen)) = mark_at
        && n == feed.shown.len()
        && lines.len() < height
    {
        lines.push(mark(n, seen, today, theme));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The cockpit's recent messages, newest first, each whole (wrapped): the footer cuts a long
/// one. The newest is shown whatever its length; older ones while they fit in `rows`.
fn said_lines(app: &App, theme: &Theme, width: usize, rows: usize, lines: &mut Vec<Line>) {
    if app.said.is_empty() {
        return;
    }
    let today = app.now.with_timezone(&Local).date_naive();
    let mut block = vec![Line::from(Span::styled(
        "messages, newest first",
        theme.dim(),
    ))];
    for (i, (at, text)) in app.said.newest_first().enumerate() {
        let line = Line::from(vec![
            Span::styled(format!("{:<12} ", when(Some(*at), today)), theme.dim()),
            Span::styled(text.clone(), theme.warn()),
        ]);
        let wrapped = super::output::wrap(line, width);
        if i > 0 && block.len() + wrapped.len() > rows {
            break;
        }
        block.extend(wrapped);
    }
    block.push(Line::default());
    lines.extend(block);
}

/// The line between what arrived since the view was last closed (above) and the rest.
fn mark(new: usize, seen: DateTime<Utc>, today: chrono::NaiveDate, theme: &Theme) -> Line<'static> {
    let at = when(Some(seen), today);
    let text = if new == 0 {
        format!("── nothing new since you last looked ({at}) ──")
    } else {
        format!("── above: new since you last looked ({at}) ──")
    };
    Line::from(Span::styled(text, theme.accent()))
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
