//! Things drawn on top of the main screen: help and the project picker.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use super::theme::Theme;
use crate::tui::action::Action;
use crate::tui::app::App;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

pub fn help(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let km = &app.opts.keymap;
    let mut lines: Vec<Line> = Action::ALL
        .iter()
        .map(|a| {
            Line::from(vec![
                Span::styled(format!("{:>16}  ", km.keys_for(*a)), theme.accent()),
                Span::raw(a.describe()),
            ])
        })
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls the table or the output",
        theme.dim(),
    )));
    lines.push(Line::from(Span::styled(
        "keys can be rebound in the config file under [keys]",
        theme.dim(),
    )));
    if app.opts.read_only {
        lines.push(Line::from(Span::styled(
            "read-only: this cockpit writes nothing, anywhere",
            theme.warn(),
        )));
    }
    let height = lines.len() as u16 + 2;
    let rect = centered(area, 72, height);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(" help (any key closes) ", theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}

pub fn picker(items: &[String], selected: usize, theme: &Theme, f: &mut Frame, area: Rect) {
    let width = items
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(10)
        .clamp(24, 60) as u16
        + 4;
    let rect = centered(
        area,
        width,
        (items.len() as u16 + 2)
            .min(area.height.saturating_sub(2))
            .max(3),
    );
    f.render_widget(Clear, rect);
    let list = List::new(items.iter().map(|i| ListItem::new(i.clone())))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focus_border())
                .title(Span::styled(" project ", theme.title())),
        )
        .highlight_style(theme.selected());
    let mut state = ListState::default().with_selected(Some(selected));
    f.render_stateful_widget(list, rect, &mut state);
}
