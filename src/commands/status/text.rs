//! Lines for the plain terminal: spans of plain text, each with an optional colour, laid out
//! in aligned columns and cut to a width without breaking a colour or a wide character.

use unicode_width::UnicodeWidthChar;

pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const RED: &str = "\x1b[31m";
pub const BOLD_RED: &str = "\x1b[1;31m";
pub const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub color: Option<&'static str>,
}

pub fn plain(text: impl Into<String>) -> Span {
    Span {
        text: text.into(),
        color: None,
    }
}

pub fn colored(text: impl Into<String>, color: &'static str) -> Span {
    Span {
        text: text.into(),
        color: Some(color),
    }
}

/// One line of output. Every span's text is plain already (the report sanitized it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line(pub Vec<Span>);

impl Line {
    /// The line as terminal text: colours only when asked, at most `max_cols` columns (the cut
    /// marked `…`).
    pub fn render(&self, colors: bool, max_cols: Option<usize>) -> String {
        let mut out = String::new();
        let mut left = max_cols.unwrap_or(usize::MAX);
        let total: usize = self.0.iter().map(|s| width(&s.text)).sum();
        let cut = total > left;
        if cut {
            left = left.saturating_sub(1);
        }
        for span in &self.0 {
            if left == 0 {
                break;
            }
            let (text, used) = take_cols(&span.text, left);
            left -= used;
            match span.color {
                Some(c) if colors && !text.is_empty() => {
                    out.push_str(c);
                    out.push_str(&text);
                    out.push_str(RESET);
                }
                _ => out.push_str(&text),
            }
        }
        if cut && max_cols.is_some_and(|m| m > 0) {
            out.push('…');
        }
        out.trim_end().to_string()
    }
}

fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// The longest prefix of `s` that fits in `cols` columns, and its width.
fn take_cols(s: &str, cols: usize) -> (String, usize) {
    let mut used = 0;
    let mut out = String::new();
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    (out, used)
}

/// `s` cut to `max` characters, the cut marked `…`.
pub fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) if s.chars().count() > max => format!("{}…", &s[..i]),
        _ => s.to_string(),
    }
}

/// Columns padded to their widest cell, two spaces apart, indented by two; the last column is
/// not padded.
pub fn table(header: &[&str], rows: Vec<Vec<Span>>) -> Vec<Line> {
    let mut all = vec![header.iter().map(|h| colored(*h, DIM)).collect::<Vec<_>>()];
    all.extend(rows);
    let cols = header.len();
    let mut widths = vec![0; cols];
    for row in &all {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(&cell.text));
        }
    }
    all.into_iter()
        .map(|row| {
            let mut spans = vec![plain("  ")];
            for (i, cell) in row.into_iter().enumerate() {
                let pad = widths[i].saturating_sub(width(&cell.text));
                spans.push(cell);
                if i + 1 < cols {
                    spans.push(plain(" ".repeat(pad + 2)));
                }
            }
            Line(spans)
        })
        .collect()
}

/// `items` joined by `sep` on as few lines as fit in `cols` columns, breaking only between
/// items (an item wider than `cols` gets a line of its own, cut when rendered).
pub fn wrap(items: Vec<Span>, sep: &str, cols: Option<usize>) -> Vec<Line> {
    let limit = cols.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut line: Vec<Span> = Vec::new();
    let mut used = 0;
    for item in items {
        let w = width(&item.text);
        if !line.is_empty() && used + width(sep) + w > limit {
            out.push(Line(std::mem::take(&mut line)));
            used = 0;
        }
        if !line.is_empty() {
            line.push(plain(sep));
            used += width(sep);
        }
        used += w;
        line.push(item);
    }
    if !line.is_empty() {
        out.push(Line(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_to_the_width_without_breaking_colours_or_wide_characters() {
        let line = Line(vec![plain("ab"), colored("cdef", RED), plain("界界")]);
        assert_eq!(line.render(false, None), "abcdef界界");
        assert_eq!(line.render(false, Some(10)), "abcdef界界");
        assert_eq!(line.render(false, Some(9)), "abcdef界…");
        assert_eq!(line.render(false, Some(8)), "abcdef…");
        assert_eq!(line.render(true, Some(4)), "ab\x1b[31mc\x1b[0m…");
        assert_eq!(line.render(true, Some(3)), "ab…");
    }

    #[test]
    fn tables_align_on_display_width() {
        let rows = vec![
            vec![plain("界"), plain("x")],
            vec![plain("abc"), plain("y")],
        ];
        let text: Vec<String> = table(&["A", "B"], rows)
            .iter()
            .map(|l| l.render(false, None))
            .collect();
        assert_eq!(text, ["  A    B", "  界   x", "  abc  y"]);
    }

    #[test]
    fn items_wrap_between_items_only() {
        let items = || ["1 running", "0 waiting", "12 failed"].map(plain).to_vec();
        let text = |cols| -> Vec<String> {
            wrap(items(), " · ", cols)
                .iter()
                .map(|l| l.render(false, None))
                .collect()
        };
        assert_eq!(text(None), ["1 running · 0 waiting · 12 failed"]);
        assert_eq!(text(Some(33)), ["1 running · 0 waiting · 12 failed"]);
        assert_eq!(text(Some(32)), ["1 running · 0 waiting", "12 failed"]);
        assert_eq!(text(Some(5)), ["1 running", "0 waiting", "12 failed"]);
        assert!(wrap(Vec::new(), " · ", Some(10)).is_empty());
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abcd", 4), "abcd");
        assert_eq!(truncate("ééééé", 3), "éé…");
    }
}
