//! Frames sent through `Backend::frame` leave on a terminal exactly what the frame holds,
//! scrolled or not: a small terminal (cursor moves, printing, line feeds, scroll regions) is
//! fed what the backend writes and compared with the frame after every one.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use unicode_width::UnicodeWidthChar;
use vte::{Params, Parser, Perform};

use super::Backend;
use super::backend::settle_overdrawn;

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

/// A terminal that keeps characters (not colours): the part of VT100 the backend uses.
struct Screen {
    rows: Vec<Vec<String>>,
    r: usize,
    c: usize,
    top: usize,
    bottom: usize,
}

impl Screen {
    fn new(width: usize, height: usize) -> Screen {
        Screen {
            rows: vec![vec![" ".to_string(); width]; height],
            r: 0,
            c: 0,
            top: 0,
            bottom: height - 1,
        }
    }

    fn line_feed(&mut self) {
        if self.r == self.bottom {
            self.rows.remove(self.top);
            let width = self.rows[0].len();
            self.rows.insert(self.bottom, vec![" ".to_string(); width]);
        } else if self.r + 1 < self.rows.len() {
            self.r += 1;
        }
    }

    fn text(&self) -> Vec<String> {
        self.rows.iter().map(|r| r.concat()).collect()
    }
}

impl Perform for Screen {
    fn print(&mut self, ch: char) {
        let w = ch.width().unwrap_or(0);
        if w == 0 {
            return;
        }
        let row = &mut self.rows[self.r];
        if self.c + w > row.len() {
            return;
        }
        // Writing over either half of a wide glyph erases all of it, as terminals do.
        for x in self.c..self.c + w {
            let head = match row[x].as_str() {
                "" => x.checked_sub(1),
                s if s.chars().next().and_then(|c| c.width()) == Some(2) => Some(x),
                _ => None,
            };
            if let Some(h) = head {
                for cell in row.iter_mut().skip(h).take(2) {
                    *cell = " ".to_string();
                }
            }
        }
        row[self.c] = ch.to_string();
        if w == 2 {
            row[self.c + 1] = String::new();
        }
        self.c += w;
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.line_feed(),
            b'\r' => self.c = 0,
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, inter: &[u8], _: bool, action: char) {
        if !inter.is_empty() {
            return;
        }
        let arg = |i: usize| {
            params
                .iter()
                .nth(i)
                .and_then(|p| p.first().copied())
                .filter(|&v| v > 0)
        };
        match action {
            'H' => {
                self.r = usize::from(arg(0).unwrap_or(1)) - 1;
                self.c = usize::from(arg(1).unwrap_or(1)) - 1;
            }
            'r' => {
                self.top = usize::from(arg(0).unwrap_or(1)) - 1;
                self.bottom = usize::from(arg(1).unwrap_or(self.rows.len() as u16)) - 1;
                (self.r, self.c) = (0, 0);
            }
            _ => {}
        }
    }
}

/// What a terminal shows for `buf`: each cell's symbol, a wide one followed by nothing.
fn expected(buf: &Buffer) -> Vec<String> {
    let w = usize::from(buf.area.width);
    buf.content
        .chunks(w)
        .map(|row| {
            let mut s = String::new();
            let mut skip = 0;
            for cell in row {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                s.push_str(cell.symbol());
                skip = unicode_width::UnicodeWidthStr::width(cell.symbol()).saturating_sub(1);
            }
            s
        })
        .collect()
}

/// A deterministic stream of numbers for the frames.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A cockpit-like frame: a header, a table (beside the pane or above it), the output pane
/// showing log lines `first..`, and a footer.
fn frame(area: Rect, beside: bool, first: u64, header: u64) -> Buffer {
    let mut buf = Buffer::empty(area);
    let (w, h) = (area.width, area.height);
    buf.set_string(0, 0, format!("luzia  jobs {header}"), Style::default());
    buf.set_string(0, h - 1, "q quit  ? help", Style::default().fg(Color::Cyan));
    let (px, py) = if beside { (w / 3, 1) } else { (0, h / 3) };
    for y in 1..py.max(h - 1) {
        if beside || y < py {
            let style = Style::default().bg(if y == 2 { Color::Blue } else { Color::Reset });
            buf.set_string(0, y, format!("job row {y}"), style);
        }
    }
    buf.set_string(px, py, format!("┌ output {first} "), Style::default());
    for (i, y) in (py + 1..h - 1).enumerate() {
        let n = first + i as u64;
        let text = match n % 7 {
            0 => format!("│ line {n} 日本語 wide"),
            3 => format!("│ line {n} \u{2705} done"),
            5 => format!("│ line {n} {}", "x".repeat((n % 90) as usize)),
            _ => format!("│ line {n}"),
        };
        let style = Style::default().fg(if n.is_multiple_of(4) {
            Color::Red
        } else {
            Color::Reset
        });
        buf.set_stringn(px, y, text, usize::from(w - px), style);
    }
    if header % 3 == 1 {
        // A popup over the pane, its left border over the wide characters of some lines.
        let (x0, x1) = (13, w - 14);
        for y in h / 2 - 3..=h / 2 + 3 {
            for x in x0..=x1 {
                buf[(x, y)].reset();
            }
            buf.set_string(x0, y, "│", Style::default().fg(Color::Red));
            buf.set_string(x1, y, "│", Style::default().fg(Color::Red));
        }
        buf.set_string(x0 + 2, h / 2, "Kill job?", Style::default());
    }
    buf
}

fn run(width: u16, height: u16, beside: bool, frames: usize) -> (usize, usize) {
    let area = Rect::new(0, 0, width, height);
    let out = Shared::default();
    let mut backend = Backend::new(out.clone());
    let mut screen = Screen::new(usize::from(width), usize::from(height));
    let mut parser = Parser::new();
    let mut rng = Lcg(u64::from(width) * 31 + u64::from(beside));
    let (mut first, mut header) = (0u64, 0u64);
    let mut scrolls = 0;
    for i in 0..frames {
        // Mostly a few new lines; now and then a jump, a new header or nothing at all.
        match rng.below(10) {
            0 => first += rng.below(200),
            1 => header += 1,
            2 => {}
            _ => first += 1 + rng.below(4),
        }
        let buf = frame(area, beside, first, header);
        let before = out.0.borrow().len();
        backend.frame(buf.clone()).unwrap();
        let sent = out.0.borrow()[before..].to_vec();
        if sent.windows(2).any(|w| w == b"r\x1b") && sent.contains(&b'\n') {
            scrolls += 1;
        }
        parser.advance(&mut screen, &sent);
        let mut shown = buf.clone();
        settle_overdrawn(&mut shown);
        assert_eq!(
            screen.text(),
            expected(&shown),
            "frame {i} at {width}x{height}, pane beside the table: {beside}"
        );
    }
    let bytes = out.0.borrow().len();
    (scrolls, bytes)
}

#[test]
fn scrolled_frames_show_what_a_full_redraw_shows() {
    for (w, h) in [(80, 24), (160, 45)] {
        let (scrolls, _) = run(w, h, false, 150);
        assert!(
            scrolls > 50,
            "a full-width pane scrolls ({scrolls} at {w}x{h})"
        );
        let (scrolls, _) = run(w, h, true, 150);
        assert_eq!(
            scrolls, 0,
            "a pane beside the table never scrolls the table"
        );
    }
}

#[test]
fn a_new_line_costs_about_one_row() {
    let area = Rect::new(0, 0, 160, 45);
    let out = Shared::default();
    let mut backend = Backend::new(out.clone());
    backend.frame(frame(area, false, 0, 0)).unwrap();
    let start = out.0.borrow().len();
    for first in 1..=20 {
        backend.frame(frame(area, false, first, 0)).unwrap();
    }
    let scrolled = out.0.borrow().len() - start;
    // The same frames as a cell diff against the last frame, as ratatui sends them.
    let plain_out = Shared::default();
    let mut plain = Backend::new(plain_out.clone());
    for first in 1..=20 {
        let (prev, now) = (
            frame(area, false, first - 1, 0),
            frame(area, false, first, 0),
        );
        plain.send(prev.diff(&now).into_iter()).unwrap();
    }
    let plain = plain_out.0.borrow().len();
    assert!(
        scrolled * 5 < plain,
        "20 new lines: {scrolled} bytes scrolled, {plain} bytes as a cell diff"
    );
}
