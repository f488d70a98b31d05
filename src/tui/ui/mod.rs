//! Rendering: a function of the state. It reads `App` and draws; it changes nothing.

pub mod detail;
pub mod diff;
pub mod empty;
pub mod events;
pub mod footer;
pub mod header;
pub mod hosts;
pub mod inbox;
pub mod output;
pub mod popup;
pub mod table;

#[cfg(test)]
mod agents_tests;
#[cfg(test)]
mod first_use_tests;
#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod review_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod width_tests;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::action::NormalAction;
use super::app::{App, Mode};
use super::layout::{self, MIN_HEIGHT, MIN_WIDTH};
use super::theme::Theme;

pub fn render(app: &App, f: &mut Frame) {
    render_with(app, &app.opts.theme, f)
}

pub fn render_with(app: &App, theme: &Theme, f: &mut Frame) {
    let area = f.area();
    if layout::too_small(area) {
        let quit = app.opts.keymap.first_key(NormalAction::Quit);
        return too_small(theme, f, area, &quit);
    }
    let a = layout::areas(area, app.opts.read_only, app.fill());
    header::render(app, theme, f, a.header);
    table::render_tabs(app, theme, f, a.tabs);
    let keys = &app.opts.keymap;
    match &app.mode {
        Mode::Detail(d) => detail::render(app, d, theme, f, a.table.union(a.output)),
        Mode::Diff(view) => diff::render(app, view, theme, f, a.table.union(a.output)),
        Mode::Events(feed) => events::render(app, feed, theme, f, a.table.union(a.output)),
        _ => {
            // A zoomed pane leaves the other no rows.
            if a.table.height > 0 {
                table::render(app, theme, f, a.table);
            }
            if a.output.height > 0 {
                output::render(app, theme, f, a.output);
            }
        }
    }
    footer::render(app, theme, f, a.footer);
    match &app.mode {
        Mode::Help => popup::help(app, theme, f, area),
        Mode::Inbox(inbox) => inbox::render(app, inbox, theme, f, area),
        Mode::Confirm(what) => popup::confirm(app, what, theme, f, area),
        Mode::InputBar => {
            if let Some(draft) = &app.draft {
                popup::input_bar(draft, keys, theme, f, area);
            }
        }
        Mode::Picker(picker) => popup::picker(picker, theme, f, area),
        _ => {}
    }
}

fn too_small(theme: &Theme, f: &mut Frame, area: Rect, quit: &str) {
    let lines = vec![
        Line::from(Span::styled("terminal too small", theme.warn())),
        Line::from(format!(
            "{}x{} now, {MIN_WIDTH}x{MIN_HEIGHT} needed",
            area.width, area.height
        )),
        Line::from(Span::styled(
            format!("enlarge the window, or press {quit} to quit"),
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
