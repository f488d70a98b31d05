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

/// Lines of the help popup besides one per line of keys: the legend of the status symbols (three
/// lines) and the mouse; a read-only cockpit says so on one more.
pub const HELP_EXTRA: usize = 4;

/// The help popup does not fit the screen `height` rows tall: it scrolls.
pub fn help_scrolls(key_lines: usize, read_only: bool, height: u16) -> bool {
    help_last_top(key_lines, read_only, height) > 0
}

/// The help's first line shown when it is scrolled to the end: its last line then is the
/// popup's last (inside its border); 0 where it fits.
pub fn help_last_top(key_lines: usize, read_only: bool, height: u16) -> usize {
    let lines = key_lines + HELP_EXTRA + usize::from(read_only);
    lines.saturating_sub(usize::from(height).saturating_sub(2))
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Which pane has the whole body, if one is zoomed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Zoom {
    #[default]
    None,
    Table,
    Output,
}

/// Rows an empty table asks for: what it says about being empty and the next step.
pub const EMPTY_TABLE_ROWS: usize = 4;

/// What the panes hold, for sharing the height between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fill {
    /// Jobs the table lists.
    pub jobs: usize,
    /// Lines the output pane has to show.
    pub lines: usize,
    pub zoom: Zoom,
}

/// `wall`: the read-only display gets a second, large status line.
pub fn areas(area: Rect, wall: bool, fill: Fill) -> Areas {
    let header_height = if wall { 2 } else { 1 };
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(header_height),
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(1),
    ])
    .areas(area);
    let table_height = match fill.zoom {
        Zoom::Table => body.height,
        Zoom::Output => 0,
        Zoom::None => share(body.height, fill),
    };
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

/// The table's rows of a body `body` rows tall. Each pane asks for what it holds (the table
/// all its jobs, at least one row; the output its lines, at least three, at most half the
/// body): when both fit, the table gets what it asks and the output the rest; else they
/// share in proportion to what they ask (neither asking more than two thirds), the table
/// keeping three rows of jobs and the output three lines.
fn share(body: u16, fill: Fill) -> u16 {
    const TABLE_MIN: u16 = 6;
    const OUTPUT_MIN: u16 = 5;
    let rows = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    let table = rows(fill.jobs.max(1)).saturating_add(3);
    let output = rows(fill.lines.max(3)).saturating_add(2).min(body / 2);
    if table.saturating_add(output) <= body {
        return table.max(TABLE_MIN.min(body));
    }
    let (table, output) = (table.min(body * 2 / 3), output.min(body * 2 / 3));
    let shared = (u32::from(body) * u32::from(table) / u32::from(table + output).max(1)) as u16;
    shared
        .min(body.saturating_sub(OUTPUT_MIN))
        .max(TABLE_MIN.min(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_80x24_and_160x45() {
        let fill = Fill {
            jobs: 40,
            lines: 400,
            zoom: Zoom::None,
        };
        for (w, h) in [(80, 24), (160, 45), (60, 15)] {
            let a = areas(Rect::new(0, 0, w, h), false, fill);
            assert!(a.table_rows() >= 3, "{w}x{h}: {a:?}");
            assert!(a.output_lines() >= 3, "{w}x{h}: {a:?}");
            assert_eq!(a.footer.y, h - 1);
            assert!(!too_small(Rect::new(0, 0, w, h)));
        }
        assert!(too_small(Rect::new(0, 0, 59, 24)));
        assert!(too_small(Rect::new(0, 0, 80, 14)));
    }

    #[test]
    fn panes_share_the_height_by_what_they_hold() {
        let at =
            |jobs, lines, zoom| areas(Rect::new(0, 0, 80, 24), false, Fill { jobs, lines, zoom });
        let few = at(3, 500, Zoom::None);
        assert_eq!(few.table_rows(), 3, "a short table takes its rows: {few:?}");
        assert_eq!(
            few.table.height + few.output.height,
            21,
            "the output the rest"
        );
        let many = at(15, 9, Zoom::None);
        assert!(many.table_rows() >= 9, "most of 15 jobs show: {many:?}");
        assert!(many.output_lines() >= 3, "{many:?}");
        let fleet = at(400, 5000, Zoom::None);
        assert!(
            fleet.table_rows() >= 8 && fleet.output_lines() >= 5,
            "{fleet:?}"
        );
        let table = at(15, 9, Zoom::Table);
        assert_eq!((table.table.height, table.output.height), (21, 0));
        let output = at(15, 9, Zoom::Output);
        assert_eq!((output.table.height, output.output.height), (0, 21));
    }
}
