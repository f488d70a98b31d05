//! Where each region goes, computed from the terminal size alone, so that `update` (mouse
//! clicks, page sizes) and rendering agree without sharing mutable state.

use ratatui::layout::{Constraint, Layout, Rect};

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub tabs: Rect,
    pub table: Rect,
    pub output: Rect,
    pub footer: Rect,
}

impl Areas {
    /// Rows of jobs that fit in the table (inside its border, below its header row).
    pub fn table_rows(&self) -> usize {
        self.table.height.saturating_sub(3) as usize
    }

    /// Lines of output that fit in the output pane (inside its border).
    pub fn output_lines(&self) -> usize {
        self.output.height.saturating_sub(2) as usize
    }

    pub fn output_width(&self) -> usize {
        self.output.width.saturating_sub(2) as usize
    }
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// `wall`: the read-only display gets a second, large status line.
pub fn areas(area: Rect, wall: bool) -> Areas {
    let header_height = if wall { 2 } else { 1 };
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(header_height),
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(1),
    ])
    .areas(area);
    // The table gets 45% but never fewer than 3 rows of jobs; the output takes the rest.
    let table_height = (body.height * 45 / 100).max(6).min(body.height);
    let [table, output] =
        Layout::vertical([Constraint::Length(table_height), Constraint::Min(0)]).areas(body);
    Areas {
        header,
        tabs,
        table,
        output,
        footer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_80x24_and_160x45() {
        for (w, h) in [(80, 24), (160, 45), (60, 15)] {
            let a = areas(Rect::new(0, 0, w, h), false);
            assert!(a.table_rows() >= 3, "{w}x{h}: {a:?}");
            assert!(a.output_lines() >= 3, "{w}x{h}: {a:?}");
            assert_eq!(a.footer.y, h - 1);
            assert!(!too_small(Rect::new(0, 0, w, h)));
        }
        assert!(too_small(Rect::new(0, 0, 59, 24)));
        assert!(too_small(Rect::new(0, 0, 80, 14)));
    }
}
