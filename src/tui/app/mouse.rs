//! Mouse: a click selects a job or focuses the output, the wheel scrolls what is under it (the
//! page of the detail or diff view, or the recent events, where one is open).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::{App, Focus, Mode};
use crate::tui::effect::Effect;

impl App {
    pub(super) fn on_mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        if self.too_small() {
            // The regions clicked are not on screen.
            self.dirty = false;
            return vec![];
        }
        let areas = self.areas();
        let at = Position::new(m.column, m.row);
        let in_table = areas.table.contains(at);
        let in_output = areas.output.contains(at);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) if in_table && self.mode == Mode::Normal => {
                self.focus = Focus::Table;
                // Border and header row come first, then the rows of hosts that are down.
                let hosts = u16::try_from(self.host_rows()).unwrap_or(u16::MAX);
                let first_row = areas.table.y.saturating_add(2).saturating_add(hosts);
                if m.row >= first_row {
                    let i = self.table.top + (m.row - first_row) as usize;
                    if i < self.table.view.len() {
                        return self.select_index(i);
                    }
                }
                vec![]
            }
            MouseEventKind::Down(MouseButton::Left) if in_output && self.mode == Mode::Normal => {
                self.focus = Focus::Output;
                vec![]
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let down = m.kind == MouseEventKind::ScrollDown;
                let diff_page = match &self.mode {
                    Mode::Diff(view) => self.diff_page(view),
                    _ => 0,
                };
                if let Mode::Diff(view) = &mut self.mode {
                    view.scroll_by(if down { 3 } else { -3 }, diff_page);
                    vec![]
                } else if let Mode::Events(feed) = &mut self.mode {
                    // The feed covers the table: the wheel moves through the events, as j/k do.
                    let last = feed.shown.len().saturating_sub(1);
                    feed.selected = if down {
                        (feed.selected + 1).min(last)
                    } else {
                        feed.selected.saturating_sub(1)
                    };
                    vec![]
                } else if let Mode::Detail(detail) = &mut self.mode {
                    detail.scroll = if down {
                        detail.scroll.saturating_add(3)
                    } else {
                        detail.scroll.saturating_sub(3)
                    };
                    vec![]
                } else if in_table {
                    self.move_selection(if down { 1 } else { -1 })
                } else if in_output {
                    self.log
                        .scroll(if down { 3 } else { -3 }, areas.output_lines());
                    vec![]
                } else {
                    self.dirty = false;
                    vec![]
                }
            }
            _ => {
                self.dirty = false;
                vec![]
            }
        }
    }
}
