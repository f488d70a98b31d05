//! Agent output is hostile text. This turns one raw log line into styled, printable text:
//! SGR colours are kept (as data, so each front end draws them its own way); every other escape
//! sequence (cursor moves, screen clears, OSC titles and clipboard writes, mode switches, DCS)
//! and every control character is dropped; bidi overrides are dropped; tabs are expanded; a `\r`
//! keeps only what follows it, as a terminal would show a progress redraw; width is capped.
//! What is kept is settled (see `width`): every grapheme takes the columns every terminal gives
//! it, so rows drawn again leave no debris.

use vte::{Params, Parser, Perform};

use super::width::{self, char_width};

/// Columns one line may take, its `…` included: a longer line is cut to fit, ending in `…`.
pub const MAX_WIDTH: usize = 4096;
/// Characters kept of one line while reading it, whatever their width: zero-width marks by the
/// million must not cost memory before the line is cut.
pub const MAX_CHARS: usize = 4 * MAX_WIDTH;
const TAB_STOP: usize = 8;
/// What stands for a grapheme no terminal would draw in the columns it is measured at.
const UNSETTLED: &str = "\u{FFFD}";

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

/// The first `max` columns of `s` (cut between graphemes), and `…` when there was more.
pub fn ellipsize(s: &str, max: usize) -> String {
    let kept = width::fit(s, max);
    if kept.len() < s.len() {
        format!("{kept}…")
    } else {
        s.to_string()
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
    /// Characters and columns (each character's own width) kept so far.
    chars: usize,
    cols: usize,
    /// More came than is kept: the line ends in `…`.
    overflow: bool,
}

impl Sink {
    fn push_char(&mut self, c: char) {
        let w = char_width(c);
        if self.overflow || self.chars >= MAX_CHARS || self.cols + w > MAX_WIDTH {
            self.overflow = true;
            return;
        }
        self.chars += 1;
        self.cols += w;
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
        let ascii = self.segments.iter().all(|s| s.text.is_ascii());
        if ascii && !self.overflow {
            // One character, one grapheme, one column: settled and within the cap as it is.
            return StyledLine {
                segments: self.segments,
            };
        }
        StyledLine {
            segments: settle(&self.segments, self.overflow),
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
        if let Some(c) = width::shown(c) {
            self.push_char(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\t' => {
                let spaces = TAB_STOP - self.cols % TAB_STOP;
                for _ in 0..spaces {
                    self.push_char(' ');
                }
            }
            b'\r' => {
                // What follows the carriage return overwrites the line: keep only that.
                self.segments.clear();
                self.chars = 0;
                self.cols = 0;
                self.overflow = false;
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

/// The line regrouped by grapheme, each whole in the style where it starts (an accent coloured
/// apart from its letter goes with the letter); a grapheme of no width dropped, one no terminal
/// would draw in the columns measured replaced by U+FFFD; and cut to [`MAX_WIDTH`] columns with
/// a `…` when `overflow` or when it is wider.
fn settle(segments: &[Segment], overflow: bool) -> Vec<Segment> {
    let text: String = segments.iter().map(|s| s.text.as_str()).collect();
    let mut starts = Vec::with_capacity(segments.len());
    let mut at = 0;
    for seg in segments {
        starts.push((at, seg.style));
        at += seg.text.len();
    }
    let mut kept: Vec<(Style, &str, usize)> = Vec::new();
    let mut seg = 0;
    for (at, g, w) in width::grapheme_indices(&text) {
        while seg + 1 < starts.len() && starts[seg + 1].0 <= at {
            seg += 1;
        }
        match w {
            0 => {}
            _ if width::settled(g) => kept.push((starts[seg].1, g, w)),
            _ => kept.push((starts[seg].1, UNSETTLED, 1)),
        }
    }
    let total: usize = kept.iter().map(|k| k.2).sum();
    if overflow || total > MAX_WIDTH {
        let mut used = 0;
        kept.retain(|k| {
            used += k.2;
            used < MAX_WIDTH
        });
        let style = kept.last().map_or(Style::default(), |k| k.0);
        kept.push((style, "…", 1));
    }
    let mut out: Vec<Segment> = Vec::new();
    for (style, g, _) in kept {
        match out.last_mut() {
            Some(last) if last.style == style => last.text.push_str(g),
            _ => out.push(Segment {
                style,
                text: g.to_string(),
            }),
        }
    }
    out
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
        let long = vec![b'x'; MAX_WIDTH * 3];
        let out = plain(&long);
        assert_eq!(out.chars().count(), MAX_WIDTH);
        assert!(out.ends_with('…'));
        let exact = vec![b'x'; MAX_WIDTH];
        assert_eq!(plain(&exact).as_bytes(), exact, "a line that fits is whole");
    }

    #[test]
    fn width_is_capped_whatever_the_characters() {
        let wide = "日".repeat(MAX_WIDTH);
        let out = plain(wide.as_bytes());
        assert_eq!(
            width::width(&out),
            MAX_WIDTH - 1,
            "a wide character does not fit in one"
        );
        assert!(out.ends_with("日…"));
        // Accents by the thousand on each letter cost no columns, yet are not kept forever.
        let zalgo = "e\u{301}\u{302}\u{303}".repeat(MAX_WIDTH * 2);
        let out = plain(zalgo.as_bytes());
        assert!(out.ends_with('…'));
        assert!(out.chars().count() <= MAX_CHARS + 1);
        let tabs = plain("日\tx".as_bytes());
        assert_eq!(tabs, "日      x", "tab stops count columns, not characters");
    }

    #[test]
    fn what_terminals_draw_at_other_widths_is_settled() {
        let cases: &[(&str, &str)] = &[
            ("family 👨\u{200D}👩\u{200D}👧 ok", "family 👨👩👧 ok"),
            ("\u{2764}\u{FE0F} love", "\u{2764} love"),
            ("caf\x1b[31me\u{301}\x1b[0m", "cafe\u{301}"),
            ("\u{301}lone accent", "lone accent"),
            ("thumbs 👍\u{1F3FD}", "thumbs 👍"),
        ];
        for (raw, want) in cases {
            assert_eq!(plain(raw.as_bytes()), *want, "{raw:?}");
        }
        // The accent coloured apart from its letter goes with the letter.
        let line = sanitize_line("caf\x1b[31me\x1b[32m\u{301}\x1b[0m!".as_bytes());
        let texts: Vec<&str> = line.segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["caf", "e\u{301}", "!"]);
        assert_eq!(line.segments[1].style.fg, Color::Indexed(1));
    }

    #[test]
    fn plain_text_flattens_newlines() {
        assert_eq!(plain_text("a\nb\x1b[2Jc"), "a bc");
    }
}
