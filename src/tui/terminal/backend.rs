//! ratatui's crossterm backend, made sure that no glyph leaves debris.
//!
//! The drawing gives each grapheme the columns `unicode-width` says (see `jobs::text::width`);
//! the text shown is settled so that terminals agree with it, given the same Unicode tables.
//! Two things remain, both handled here:
//!
//! - A terminal with older tables does not know a new emoji: it draws it in fewer columns, or
//!   none (tmux 3.3 with glibc 2.36 draws nothing for U+1FAE8), and the columns the drawing
//!   believes covered keep what an older frame left there. So a cell that is wide, or outside
//!   the Basic Multilingual Plane (where every recent addition is), is written as blanks over
//!   all its columns and then drawn from its first column again: at worst a new emoji shows as
//!   blanks. A narrow one is drawn after every other cell, each after a cursor move of its own,
//!   so that a terminal moving the cursor by less shifts nothing else.
//! - A grapheme of two spacing characters (a flag, an Indic conjunct) is one wide cell to the
//!   drawing, and two cells to a terminal that does not cluster. When the drawing replaces it by
//!   a narrow cell, it does not send its second column again (it holds a blank in both frames),
//!   and the terminal keeps the second character there. So the backend remembers where the last
//!   frame had wide cells, and blanks the columns a narrower replacement leaves uncovered.
//!
//! A terminal giving a character *more* columns than Unicode says (East Asian ambiguous width
//! set to wide) is not helped: its glyph covers the next cell.

use std::borrow::Cow;
use std::io::{self, Write};

use ratatui::backend::{Backend as RatatuiBackend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Size};

use super::scroll::{self, Scroll};
use crate::jobs::text::width::grapheme_width;

pub struct Backend<W: Write> {
    inner: CrosstermBackend<W>,
    /// Where the last frame drawn has cells wider than one column, and how wide.
    wide: foldhash::HashMap<(u16, u16), u16>,
    /// The last frame drawn through [`Backend::frame`] and its row hashes: what the screen
    /// shows. `None` after the screen was cleared (it is blank).
    last: Option<(Buffer, Vec<u64>)>,
    /// Set while ratatui draws a frame that [`Backend::frame`] will send: its diff is dropped.
    deferred: bool,
    /// Where the cursor was put, while it is shown: put back there after a frame is sent.
    cursor: Option<Position>,
}

impl<W: Write> Backend<W> {
    pub fn new(writer: W) -> Backend<W> {
        Backend {
            inner: CrosstermBackend::new(writer),
            wide: foldhash::HashMap::default(),
            last: None,
            deferred: false,
            cursor: None,
        }
    }

    /// While set, ratatui's cell diffs are not sent: the frame is sent whole by
    /// [`Backend::frame`] instead.
    pub fn defer(&mut self, on: bool) {
        self.deferred = on;
    }

    /// Brings the screen from the last frame to `now`: rows that moved up (a followed log's
    /// new lines) are scrolled on the terminal, and then the cells that still differ are sent.
    pub fn frame(&mut self, mut now: Buffer) -> io::Result<()> {
        settle_overdrawn(&mut now);
        let hashes = scroll::row_hashes(&now);
        let (mut last, before) = match self.last.take() {
            Some((buf, h)) if buf.area == now.area => (buf, h),
            // Cleared, or first: the screen is blank, as ratatui assumes too.
            _ => {
                let blank = Buffer::empty(now.area);
                let h = scroll::row_hashes(&blank);
                (blank, h)
            }
        };
        let blank = scroll::blank_hash(now.area.width);
        if let Some(s) = scroll::find(&before, &hashes, blank) {
            self.inner.write_all(&scroll::sequence(s, now.area.y))?;
            scroll::apply(
                &mut last.content,
                usize::from(now.area.width),
                s,
                &Cell::EMPTY,
            );
            self.scroll_wide(s, now.area.y);
        }
        self.send(last.diff(&now).into_iter())?;
        // Kept as the next frame's `last`: moved, not copied (a screen of cells each frame).
        self.last = Some((now, hashes));
        if let Some(at) = self.cursor {
            self.inner.set_cursor_position(at)?;
        }
        Ok(())
    }

    /// Writes cells, the way [`Backend::plan`] orders them.
    pub(super) fn send<'a>(
        &mut self,
        content: impl Iterator<Item = (u16, u16, &'a Cell)>,
    ) -> io::Result<()> {
        for run in self.plan(content) {
            self.inner
                .draw(run.iter().map(|(x, y, cell)| (*x, *y, cell.as_ref())))?;
        }
        Ok(())
    }

    /// Moves what is known of wide cells with the rows the terminal scrolled.
    fn scroll_wide(&mut self, s: Scroll, y0: u16) {
        let (top, bottom) = (y0 + s.top, y0 + s.bottom);
        self.wide = std::mem::take(&mut self.wide)
            .into_iter()
            .filter_map(|((x, y), w)| match y {
                y if y < top || y > bottom => Some(((x, y), w)),
                y if y >= top + s.by => Some(((x, y - s.by), w)),
                _ => None,
            })
            .collect();
    }

    /// The cells to write, in runs: each run is one `draw` of the crossterm backend, which
    /// moves the cursor before a cell unless it directly follows the one before.
    fn plan<'a>(&mut self, content: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<Plan<'a>> {
        let content: Vec<(u16, u16, &'a Cell)> = content.collect();
        let changed: foldhash::HashSet<(u16, u16)> =
            content.iter().map(|(x, y, _)| (*x, *y)).collect();
        let mut first: Plan<'a> = Vec::new();
        let mut narrow: Vec<(u16, u16, &'a Cell)> = Vec::new();
        for (x, y, cell) in content {
            let columns = grapheme_width(cell.symbol()).max(1) as u16;
            let before = self.wide.remove(&(x, y)).unwrap_or(1);
            if columns > 1 {
                self.wide.insert((x, y), columns);
            }
            if !unsure(cell.symbol()) {
                first.push((x, y, Cow::Borrowed(cell)));
            } else {
                let mut blank = cell.clone();
                blank.set_symbol(" ");
                for dx in 0..columns {
                    first.push((x.saturating_add(dx), y, Cow::Owned(blank.clone())));
                }
                if columns > 1 {
                    // From its first column again; the next cell is not next to that one, so
                    // the cursor moves before it whatever the terminal made of the glyph.
                    first.push((x, y, Cow::Borrowed(cell)));
                } else {
                    narrow.push((x, y, cell));
                }
            }
            // Columns the old wide cell covered and the new one does not: unchanged, so blank
            // in this frame as in the last (the drawing resets what a wide cell hides).
            for dx in columns..before {
                let at = (x.saturating_add(dx), y);
                if !changed.contains(&at) {
                    first.push((at.0, at.1, Cow::Owned(Cell::default())));
                }
            }
        }
        let mut runs = vec![first];
        // Every other column first, so that no narrow cell directly follows another.
        narrow.sort_by_key(|(x, y, _)| (x % 2, *y, *x));
        let mut run: Plan<'a> = Vec::new();
        for (x, y, cell) in narrow {
            let follows = run
                .last()
                .is_some_and(|(px, py, _)| *py == y && px.checked_add(1) == Some(x));
            if follows {
                runs.push(std::mem::take(&mut run));
            }
            run.push((x, y, Cow::Borrowed(cell)));
        }
        runs.push(run);
        runs.retain(|r| !r.is_empty());
        runs
    }
}

/// A wide cell with something drawn over the columns it covers (a popup's border over a line
/// of CJK text) is blanked, so that what was drawn last shows: sent as it is, the wide glyph
/// would cover the border (ratatui does not send what a wide cell covers), and the border would
/// be lost, or blanked when the row changes under it.
pub(super) fn settle_overdrawn(buf: &mut Buffer) {
    let width = usize::from(buf.area.width);
    if width == 0 {
        return;
    }
    for row in buf.content.chunks_mut(width) {
        let mut x = 0;
        while x < row.len() {
            let columns = grapheme_width(row[x].symbol()).max(1);
            let covered = row.iter().skip(x + 1).take(columns - 1);
            if columns > 1 && covered.into_iter().any(|c| !matches!(c.symbol(), " " | "")) {
                row[x].set_symbol(" ");
                x += 1;
                continue;
            }
            x += columns;
        }
    }
}

/// Whether a terminal may give the cell's symbol other columns than the drawing: wide, or
/// outside the Basic Multilingual Plane.
fn unsure(symbol: &str) -> bool {
    !symbol.is_ascii() && (grapheme_width(symbol) > 1 || symbol.chars().any(|c| c > '\u{FFFF}'))
}

type Plan<'a> = Vec<(u16, u16, Cow<'a, Cell>)>;

impl<W: Write> RatatuiBackend for Backend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        // A frame drawn by `terminal::draw` is sent by `frame`, which needs to know what the
        // screen shows: every frame goes that way.
        if self.deferred {
            return Ok(());
        }
        self.send(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.cursor = None;
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let at = position.into();
        self.cursor = Some(at);
        self.inner.set_cursor_position(at)
    }

    fn clear(&mut self) -> io::Result<()> {
        // The drawing forgets the last frame too: the next one is drawn whole.
        self.wide.clear();
        self.last = None;
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.wide.clear();
        self.last = None;
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        RatatuiBackend::flush(&mut self.inner)
    }
}

impl<W: Write> Write for Backend<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Write::flush(&mut self.inner)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use ratatui::layout::Rect;
    use ratatui::widgets::Paragraph;
    use ratatui::{Terminal, TerminalOptions, Viewport};
    use unicode_width::UnicodeWidthChar;
    use vte::{Params, Parser, Perform};

    use super::*;

    /// A terminal of one row: it prints and moves the cursor, nothing else. `knows` says which
    /// characters its Unicode tables have; one it does not know is not drawn and does not move
    /// the cursor (as tmux 3.3 with glibc 2.36 does with U+1FAE8).
    struct Screen {
        cells: Vec<String>,
        x: usize,
        knows: fn(char) -> bool,
    }

    impl Screen {
        /// Writing over either half of a wide glyph erases all of it, as terminals do.
        fn erase_wide_at(&mut self, x: usize) {
            let head = match self.cells.get(x) {
                Some(c) if c.is_empty() => x.checked_sub(1),
                Some(c) if c.chars().next().and_then(|c| c.width()) == Some(2) => Some(x),
                _ => None,
            };
            if let Some(h) = head {
                for cell in self.cells.iter_mut().skip(h).take(2) {
                    *cell = " ".to_string();
                }
            }
        }
    }

    impl Perform for Screen {
        fn print(&mut self, c: char) {
            if !(self.knows)(c) {
                return;
            }
            let w = c.width().unwrap_or(0);
            if w == 0 {
                if let Some(cell) = self.x.checked_sub(1).and_then(|x| self.cells.get_mut(x)) {
                    cell.push(c);
                }
                return;
            }
            for dx in 0..w {
                self.erase_wide_at(self.x + dx);
            }
            for dx in 0..w {
                if let Some(cell) = self.cells.get_mut(self.x + dx) {
                    *cell = if dx == 0 {
                        c.to_string()
                    } else {
                        String::new()
                    };
                }
            }
            self.x += w;
        }

        fn csi_dispatch(&mut self, params: &Params, _: &[u8], _: bool, action: char) {
            if action == 'H' {
                let col = params.iter().nth(1).and_then(|p| p.first().copied());
                self.x = usize::from(col.unwrap_or(1).max(1)) - 1;
            }
        }
    }

    /// What a backend writes, kept where the test can read it.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The row after drawing each of `frames` in turn, through `backend` writing to `out`.
    fn row_after<B: RatatuiBackend>(
        backend: B,
        out: Shared,
        frames: &[&str],
        knows: fn(char) -> bool,
    ) -> String
    where
        B::Error: std::fmt::Debug,
    {
        let options = TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, 10, 1)),
        };
        let mut term = Terminal::with_options(backend, options).unwrap();
        for text in frames {
            term.draw(|f| f.render_widget(Paragraph::new(*text), f.area()))
                .unwrap();
        }
        let mut screen = Screen {
            cells: vec![" ".to_string(); 10],
            x: 0,
            knows,
        };
        Parser::new().advance(&mut screen, &out.0.borrow());
        screen.cells.concat()
    }

    fn ours(frames: &[&str], knows: fn(char) -> bool) -> String {
        let out = Shared::default();
        row_after(Backend::new(out.clone()), out, frames, knows)
    }

    fn plain(frames: &[&str], knows: fn(char) -> bool) -> String {
        let out = Shared::default();
        row_after(CrosstermBackend::new(out.clone()), out, frames, knows)
    }

    const OLD_TABLES: fn(char) -> bool = |c| c < '\u{1F900}' || c == '…';
    const NEW_TABLES: fn(char) -> bool = |_| true;

    #[test]
    fn an_emoji_the_terminal_does_not_know_leaves_blanks_not_debris() {
        let frames = ["##########", "a\u{1FAE8}b"];
        assert_eq!(
            plain(&frames, OLD_TABLES),
            "a##b      ",
            "the failure it prevents"
        );
        assert_eq!(ours(&frames, OLD_TABLES), "a  b      ");
        assert_eq!(ours(&frames, NEW_TABLES), "a\u{1FAE8}b      ");
    }

    #[test]
    fn a_narrow_character_the_terminal_does_not_know_shifts_nothing() {
        let frames = ["##########", "a\u{1D400}\u{1D401}b\u{1D402}c"];
        assert_eq!(plain(&frames, |c| c < '\u{10000}'), "abc    ###");
        assert_eq!(ours(&frames, |c| c < '\u{10000}'), "a  b c    ");
        assert_eq!(
            ours(&frames, NEW_TABLES),
            "a\u{1D400}\u{1D401}b\u{1D402}c    "
        );
    }

    #[test]
    fn known_wide_text_is_drawn_as_it_was() {
        let frames = ["##########", "日本 e\u{301} 日x", "x日本"];
        assert_eq!(ours(&frames[..2], NEW_TABLES), "日本 e\u{301} 日x");
        assert_eq!(ours(&frames, NEW_TABLES), "x日本     ");
        assert_eq!(plain(&frames, NEW_TABLES), ours(&frames, NEW_TABLES));
    }

    #[test]
    fn a_cell_of_two_characters_replaced_leaves_nothing_behind() {
        // A flag and a conjunct: one wide cell drawn, two cells to this terminal.
        for pair in ["\u{1F1EB}\u{1F1F7}", "\u{915}\u{94D}\u{937}"] {
            let frames = [format!("ab {pair} cd"), "ab x".to_string()];
            let frames: Vec<&str> = frames.iter().map(String::as_str).collect();
            let second = pair.chars().last().unwrap().to_string();
            assert!(
                plain(&frames, NEW_TABLES).contains(&second),
                "the failure it prevents, {pair:?}"
            );
            assert_eq!(ours(&frames, NEW_TABLES), "ab x      ", "{pair:?}");
        }
    }
}
