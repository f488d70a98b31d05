//! Agent output is hostile text. This turns one raw log line into styled, printable text:
//! SGR colours are kept (as data, so each front end draws them its own way); every other escape
//! sequence (cursor moves, screen clears, OSC titles and clipboard writes, mode switches, DCS)
//! and every control character is dropped; bidi overrides are dropped; tabs are expanded; a `\r`
//! keeps only what follows it, as a terminal would show a progress redraw; length is capped.

use vte::{Params, Parser, Perform};

/// Characters kept of one line; the rest is replaced by a single `…`.
pub const MAX_CHARS: usize = 4096;
const TAB_STOP: usize = 8;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Color {
    #[default]
    Default,
    /// 0-15 are the terminal's own palette (so light and dark themes both read), 16-255 the
    /// xterm cube and greys.
    Indexed(u8),
    Rgb(u8, u8, u8),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Style {
    pub fg: Color,
    pub bg: Color,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub reverse: bool,
    pub strike: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub style: Style,
    pub text: String,
}

/// A line safe to show: text with styles, no control characters anywhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StyledLine {
    pub segments: Vec<Segment>,
}

impl StyledLine {
    pub fn plain(&self) -> String {
        self.segments.iter().map(|s| s.text.as_str()).collect()
    }

    /// The line re-encoded with SGR only (each segment resets, then sets its style).
    pub fn to_ansi(&self) -> String {
        let mut out = String::new();
        for seg in &self.segments {
            if seg.style == Style::default() {
                out.push_str(&seg.text);
            } else {
                out.push_str(&sgr_for(&seg.style));
                out.push_str(&seg.text);
                out.push_str("\x1b[0m");
            }
        }
        out
    }
}

/// Sanitizes one line (without its `\n`). Invalid UTF-8 becomes U+FFFD.
pub fn sanitize_line(bytes: &[u8]) -> StyledLine {
    let mut sink = Sink::default();
    let mut parser = Parser::new();
    parser.advance(&mut sink, bytes);
    sink.finish()
}

/// The first `max` characters of `s`, and `…` when there were more.
pub fn ellipsize(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Sanitizes free text from a job's files (a task, a question) into one plain line.
pub fn plain_text(s: &str) -> String {
    sanitize_line(s.replace(['\n', '\r'], " ").as_bytes()).plain()
}

#[derive(Default)]
struct Sink {
    segments: Vec<Segment>,
    style: Style,
    chars: usize,
    capped: bool,
}

impl Sink {
    fn push_char(&mut self, c: char) {
        if self.capped {
            return;
        }
        if self.chars >= MAX_CHARS {
            self.capped = true;
            self.push_raw('…');
            return;
        }
        self.chars += 1;
        self.push_raw(c);
    }

    fn push_raw(&mut self, c: char) {
        match self.segments.last_mut() {
            Some(seg) if seg.style == self.style => seg.text.push(c),
            _ => self.segments.push(Segment {
                style: self.style,
                text: c.to_string(),
            }),
        }
    }

    fn finish(mut self) -> StyledLine {
        self.segments.retain(|s| !s.text.is_empty());
        StyledLine {
            segments: self.segments,
        }
    }

    fn apply_sgr(&mut self, params: &Params) {
        let flat: Vec<u16> = params.iter().flat_map(|p| p.iter().copied()).collect();
        if flat.is_empty() {
            self.style = Style::default();
            return;
        }
        let mut i = 0;
        while i < flat.len() {
            let s = &mut self.style;
            match flat[i] {
                0 => *s = Style::default(),
                1 => s.bold = true,
                2 => s.dim = true,
                3 => s.italic = true,
                4 => s.underline = true,
                7 => s.reverse = true,
                9 => s.strike = true,
                22 => (s.bold, s.dim) = (false, false),
                23 => s.italic = false,
                24 => s.underline = false,
                27 => s.reverse = false,
                29 => s.strike = false,
                n @ 30..=37 => s.fg = Color::Indexed((n - 30) as u8),
                n @ 40..=47 => s.bg = Color::Indexed((n - 40) as u8),
                n @ 90..=97 => s.fg = Color::Indexed((n - 90 + 8) as u8),
                n @ 100..=107 => s.bg = Color::Indexed((n - 100 + 8) as u8),
                39 => s.fg = Color::Default,
                49 => s.bg = Color::Default,
                n @ (38 | 48) => {
                    let (color, used) = extended_color(&flat[i + 1..]);
                    if let Some(c) = color {
                        if n == 38 { s.fg = c } else { s.bg = c }
                    }
                    i += used;
                }
                _ => {} // blink, conceal, fonts...: not worth passing on
            }
            i += 1;
        }
    }
}

/// `5;n` or `2;r;g;b` after a 38/48; returns the colour and how many parameters it used.
fn extended_color(rest: &[u16]) -> (Option<Color>, usize) {
    match rest {
        [5, n, ..] => (u8::try_from(*n).ok().map(Color::Indexed), 2),
        [2, r, g, b, ..] => {
            let c = (|| {
                Some(Color::Rgb(
                    u8::try_from(*r).ok()?,
                    u8::try_from(*g).ok()?,
                    u8::try_from(*b).ok()?,
                ))
            })();
            (c, 4)
        }
        _ => (None, rest.len()),
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

impl Perform for Sink {
    fn print(&mut self, c: char) {
        if is_bidi_control(c) || c.is_control() {
            return;
        }
        self.push_char(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\t' => {
                let spaces = TAB_STOP - self.chars % TAB_STOP;
                for _ in 0..spaces {
                    self.push_char(' ');
                }
            }
            b'\r' => {
                // What follows the carriage return overwrites the line: keep only that.
                self.segments.clear();
                self.chars = 0;
                self.capped = false;
            }
            _ => {} // BEL, BS, VT, FF, SO/SI, C1 controls: never passed on
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if action == 'm' && intermediates.is_empty() && !ignore {
            self.apply_sgr(params);
        }
    }
}

fn sgr_for(style: &Style) -> String {
    let mut codes: Vec<String> = Vec::new();
    let flags = [
        (style.bold, "1"),
        (style.dim, "2"),
        (style.italic, "3"),
        (style.underline, "4"),
        (style.reverse, "7"),
        (style.strike, "9"),
    ];
    codes.extend(
        flags
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| c.to_string()),
    );
    for (color, base) in [(style.fg, 30u16), (style.bg, 40u16)] {
        match color {
            Color::Default => {}
            Color::Indexed(n) if n < 8 => codes.push((base + n as u16).to_string()),
            Color::Indexed(n) if n < 16 => codes.push((base + 60 + n as u16 - 8).to_string()),
            Color::Indexed(n) => codes.push(format!("{};5;{n}", base + 8)),
            Color::Rgb(r, g, b) => codes.push(format!("{};2;{r};{g};{b}", base + 8)),
        }
    }
    format!("\x1b[{}m", codes.join(";"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(b: &[u8]) -> String {
        sanitize_line(b).plain()
    }

    #[test]
    fn hostile_sequences_are_dropped() {
        let cases: &[(&[u8], &str)] = &[
            (b"hello", "hello"),
            (b"\x1b]0;pwned title\x07after", "after"),
            (b"\x1b]2;title\x1b\\after", "after"),
            (b"\x1b]52;c;ZXZpbA==\x07clip", "clip"),
            (b"\x1b[2J\x1b[Hclear", "clear"),
            (b"\x1b[10;10Hmove\x1b[5A", "move"),
            (b"\x1b[?1049hmode\x1b[?25l", "mode"),
            (b"\x1bPq#0;2;0;0;0#1~~\x1b\\sixel", "sixel"),
            (b"bell\x07\x08\x0b\x0c", "bell"),
            (b"\xe2\x80\xaeevil\xe2\x80\xac", "evil"),
            (b"\x9b2J8-bit csi", "2J8-bit csi"),
            (b"a\tb", "a       b"),
            (b"12345678\tX", "12345678        X"),
            (b"50%\r100%", "100%"),
            (b"old\r", ""),
            (b"\xff\xfeok", "\u{fffd}\u{fffd}ok"),
            (b"\x1bcreset", "reset"),
        ];
        for (input, want) in cases {
            assert_eq!(plain(input), *want, "{input:?}");
        }
    }

    #[test]
    fn colours_are_kept_as_styles() {
        let line = sanitize_line(b"\x1b[1;31mred\x1b[0m plain \x1b[38;5;208mor\x1b[48;2;1;2;3mbg");
        let segs = &line.segments;
        assert_eq!(segs[0].text, "red");
        assert_eq!(segs[0].style.fg, Color::Indexed(1));
        assert!(segs[0].style.bold);
        assert_eq!(segs[1].style, Style::default());
        assert_eq!(segs[2].style.fg, Color::Indexed(208));
        assert_eq!(segs[3].style.bg, Color::Rgb(1, 2, 3));
        assert_eq!(segs[3].style.fg, Color::Indexed(208));
    }

    #[test]
    fn to_ansi_round_trips_styles() {
        let src = b"\x1b[1;92mok\x1b[0m done";
        let line = sanitize_line(src);
        assert_eq!(line.to_ansi(), "\x1b[1;92mok\x1b[0m done");
        assert_eq!(sanitize_line(line.to_ansi().as_bytes()), line);
    }

    #[test]
    fn length_is_capped() {
        let long = vec![b'x'; MAX_CHARS * 3];
        let out = plain(&long);
        assert_eq!(out.chars().count(), MAX_CHARS + 1);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn plain_text_flattens_newlines() {
        assert_eq!(plain_text("a\nb\x1b[2Jc"), "a bc");
    }
}
