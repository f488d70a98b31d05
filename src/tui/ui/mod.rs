//! Rendering: a function of the state. It reads `App` and draws; it changes nothing.

pub mod detail;
pub mod events;
pub mod footer;
pub mod header;
pub mod inbox;
pub mod output;
pub mod popup;
pub mod table;
pub mod theme;

#[cfg(test)]
mod tests;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Mode};
use super::layout::{self, MIN_HEIGHT, MIN_WIDTH};
pub use theme::Theme;

pub fn render(app: &App, f: &mut Frame) {
    render_with(app, &app.opts.theme, f)
}

pub fn render_with(app: &App, theme: &Theme, f: &mut Frame) {
    let area = f.area();
    if layout::too_small(area) {
        return too_small(theme, f, area);
    }
    let a = layout::areas(area, app.opts.read_only);
    header::render(app, theme, f, a.header);
    table::render_tabs(app, theme, f, a.tabs);
    if app.mode == Mode::Detail {
        let body = a.table.union(a.output);
        detail::render(app, theme, f, body);
    } else if app.mode == Mode::Events {
        events::render(app, theme, f, a.table.union(a.output));
    } else {
        table::render(app, theme, f, a.table);
        output::render(app, theme, f, a.output);
    }
    footer::render(app, theme, f, a.footer);
    match &app.mode {
        Mode::Help => popup::help(app, theme, f, area),
        Mode::Inbox => inbox::render(app, theme, f, area),
        Mode::Confirm(what) => popup::confirm(what, theme, f, area),
        Mode::Dispatch => {
            if let Some(draft) = &app.draft {
                popup::dispatch_bar(draft, theme, f, area);
            }
        }
        Mode::ProjectPicker { items, selected } => popup::picker(items, *selected, theme, f, area),
        _ => {}
    }
}

fn too_small(theme: &Theme, f: &mut Frame, area: Rect) {
    let lines = vec![
        Line::from(Span::styled("terminal too small", theme.warn())),
        Line::from(format!(
            "{}x{} now, {MIN_WIDTH}x{MIN_HEIGHT} needed",
            area.width, area.height
        )),
        Line::from(Span::styled(
            "enlarge the window, or press q to quit",
            theme.dim(),
        )),
    ];
    let y = area.y + area.height.saturating_sub(lines.len() as u16) / 2;
    let rect = Rect {
        y,
        height: area.height.min(lines.len() as u16),
        ..area
    };
    f.render_widget(Paragraph::new(lines).alignment(Alignment::Center), rect);
}
