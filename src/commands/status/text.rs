//! The dashboard's look in the plain terminal: its colours, its tables (indented, under a dim
//! header) and the counts wrapped between items. Spans, lines and columns are
//! [`crate::commands::table`]'s.

pub use crate::commands::table::{Line, Span, colored, cut, plain};
use crate::commands::table::{Table, width};

pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const RED: &str = "\x1b[31m";
pub const BOLD_RED: &str = "\x1b[1;31m";
pub const YELLOW: &str = "\x1b[33m";

/// Columns padded to their widest cell, two spaces apart, indented by two, under a dim header;
/// the last column is not padded.
pub fn table(header: &[&str], rows: Vec<Vec<Span>>) -> Vec<Line> {
    let mut t = Table::with_header(header, Some(DIM)).indent("  ");
    for row in rows {
        t.push(row);
    }
    t.lines()
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
}
