//! Text for the plain terminal, in display columns: a CJK character or an emoji takes two, a
//! combining mark none. Spans of plain text with an optional colour, lines of spans cut to a
//! width without breaking a colour or a wide character, and tables whose columns line up
//! whatever the text. Every command that prints columns (`jobs`, `status`, `questions`,
//! `queue`) lays them out here.

use unicode_width::UnicodeWidthChar;

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

/// One line of output. Every span's text is plain already (sanitized by whoever made it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line(pub Vec<Span>);

impl Line {
    /// The line as terminal text: colours only when asked, at most `max_cols` columns (the cut
    /// marked `…`), no trailing blanks.
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

/// How many terminal columns `s` takes.
pub fn width(s: &str) -> usize {
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

/// `s` cut to at most `cols` columns, the cut marked `…`.
pub fn cut(s: &str, cols: usize) -> String {
    if width(s) <= cols {
        return s.to_string();
    }
    let (mut out, _) = take_cols(s, cols.saturating_sub(1));
    out.push('…');
    out
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Align {
    #[default]
    Left,
    Right,
}

/// One column: its alignment, the width it takes at least, and the blanks after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub align: Align,
    pub min: usize,
    pub gap: usize,
}

impl Column {
    pub const fn left() -> Column {
        Column {
            align: Align::Left,
            min: 0,
            gap: 2,
        }
    }

    pub const fn right() -> Column {
        Column {
            align: Align::Right,
            ..Column::left()
        }
    }

    pub const fn min(self, min: usize) -> Column {
        Column { min, ..self }
    }

    pub const fn gap(self, gap: usize) -> Column {
        Column { gap, ..self }
    }
}

/// Rows of cells, each column as wide as its widest cell (or its minimum); the last column is
/// not padded, so a long last cell (a task, a question) runs on to the end of the line.
#[derive(Clone, Debug, Default)]
pub struct Table {
    indent: &'static str,
    columns: Vec<Column>,
    header: Option<Vec<Span>>,
    rows: Vec<Vec<Span>>,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            ..Table::default()
        }
    }

    /// Left-aligned columns two blanks apart under a header, each header cell in `color`.
    pub fn with_header(header: &[&str], color: Option<&'static str>) -> Table {
        let cells = header
            .iter()
            .map(|h| Span {
                text: h.to_string(),
                color,
            })
            .collect();
        Table::new(vec![Column::left(); header.len()]).header(cells)
    }

    /// Put before every line.
    pub fn indent(self, indent: &'static str) -> Table {
        Table { indent, ..self }
    }

    pub fn header(self, cells: Vec<Span>) -> Table {
        Table {
            header: Some(cells),
            ..self
        }
    }

    pub fn push(&mut self, row: Vec<Span>) {
        self.rows.push(row);
    }

    fn all_rows(&self) -> impl Iterator<Item = &Vec<Span>> {
        self.header.iter().chain(&self.rows)
    }

    /// Each column's width in terminal columns.
    pub fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.min).collect();
        for row in self.all_rows() {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(&cell.text));
            }
        }
        widths
    }

    /// The columns before the last, with their gaps and the indent: where the last one starts.
    pub fn last_column_start(&self) -> usize {
        let widths = self.widths();
        let before = self.columns.len().saturating_sub(1);
        self.indent.len()
            + (0..before)
                .map(|i| widths[i] + self.columns[i].gap)
                .sum::<usize>()
    }

    /// Cuts every cell of the last column (the header's too) to `cols` columns.
    pub fn cut_last(&mut self, cols: usize) {
        let last = self.columns.len().saturating_sub(1);
        for row in self.header.iter_mut().chain(self.rows.iter_mut()) {
            if let Some(cell) = row.get_mut(last) {
                cell.text = cut(&cell.text, cols);
            }
        }
    }

    pub fn lines(self) -> Vec<Line> {
        let widths = self.widths();
        let last = self.columns.len().saturating_sub(1);
        let Table {
            indent,
            columns,
            header,
            rows,
        } = self;
        header
            .into_iter()
            .chain(rows)
            .map(|row| {
                let mut spans = Vec::new();
                if !indent.is_empty() {
                    spans.push(plain(indent));
                }
                for (i, cell) in row.into_iter().enumerate().take(columns.len()) {
                    let pad = widths[i].saturating_sub(width(&cell.text));
                    let gap = if i < last { columns[i].gap } else { 0 };
                    match columns[i].align {
                        Align::Right => {
                            spans.push(plain(" ".repeat(pad)));
                            spans.push(cell);
                            spans.push(plain(" ".repeat(gap)));
                        }
                        Align::Left if i < last => {
                            spans.push(cell);
                            spans.push(plain(" ".repeat(pad + gap)));
                        }
                        Align::Left => spans.push(cell),
                    }
                }
                spans.retain(|s| !s.text.is_empty());
                Line(spans)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(table: Table) -> Vec<String> {
        table
            .lines()
            .iter()
            .map(|l| l.render(false, None))
            .collect()
    }

    #[test]
    fn lines_are_cut_to_the_width_without_breaking_colours_or_wide_characters() {
        let red = "\x1b[31m";
        let line = Line(vec![plain("ab"), colored("cdef", red), plain("界界")]);
        assert_eq!(line.render(false, None), "abcdef界界");
        assert_eq!(line.render(false, Some(10)), "abcdef界界");
        assert_eq!(line.render(false, Some(9)), "abcdef界…");
        assert_eq!(line.render(false, Some(8)), "abcdef…");
        assert_eq!(line.render(true, Some(4)), "ab\x1b[31mc\x1b[0m…");
        assert_eq!(line.render(true, Some(3)), "ab…");
    }

    #[test]
    fn cuts_count_columns() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("界界界", 4), "界…");
        assert_eq!(cut("界界界", 6), "界界界");
        assert_eq!(cut("🚀🚀🚀", 5), "🚀🚀…");
        assert_eq!(cut("abc", 0), "…");
    }

    /// Every cell of a column ends in the same terminal column, whatever its script: each row's
    /// prefix up to a column has the same display width.
    #[test]
    fn wide_text_keeps_the_columns_in_line() {
        let mut t = Table::with_header(&["ID", "PROJECT", "STATUS", "TASK"], None);
        for row in [
            ["a1", "音楽", "running", "ビルドを修正する"],
            ["b22", "🚀rocket", "failed", "deploy 🚀"],
            ["c333", "plain", "completed", "x"],
            ["d4", "naïve", "waiting", "テスト"],
        ] {
            t.push(row.map(plain).to_vec());
        }
        let lines = rendered(t);
        assert_eq!(
            lines,
            [
                "ID    PROJECT   STATUS     TASK",
                "a1    音楽      running    ビルドを修正する",
                "b22   🚀rocket  failed     deploy 🚀",
                "c333  plain     completed  x",
                "d4    naïve     waiting    テスト",
            ]
        );
        // Where each cell starts, in terminal columns: the same on every line.
        for line in &lines {
            let mut at = Vec::new();
            let mut col = 0;
            let mut rest = line.as_str();
            for cell in line.split("  ").map(str::trim).filter(|c| !c.is_empty()) {
                let i = rest.find(cell).unwrap();
                col += width(&rest[..i]);
                at.push(col);
                col += width(cell);
                rest = &rest[i + cell.len()..];
            }
            assert_eq!(at, [0, 6, 16, 27], "{line}");
        }
    }

    #[test]
    fn minimum_widths_gaps_and_right_alignment() {
        let mut t = Table::new(vec![
            Column::right().min(3),
            Column::left().min(4).gap(1),
            Column::left(),
        ])
        .indent("  ");
        t.push(vec![plain("1"), plain("ab"), plain("last")]);
        t.push(vec![plain("10"), plain("界界界"), plain("")]);
        assert_eq!(rendered(t), ["    1  ab     last", "   10  界界界"]);
    }

    #[test]
    fn the_last_column_gets_what_is_left() {
        let mut t = Table::with_header(&["ID", "TASK"], None);
        t.push(vec![plain("a1"), plain("界界界界")]);
        assert_eq!(t.last_column_start(), 4);
        t.cut_last(5);
        assert_eq!(rendered(t), ["ID  TASK", "a1  界界…"]);
    }
}
