//! The output pane: the selected job's log, styled only for the lines on screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::jobs::fs::tail::RawLine;
use crate::jobs::text::sanitize::sanitize_line;
use crate::jobs::text::width;
use crate::tui::action::NormalAction;
use crate::tui::app::output::LogView;
use crate::tui::app::{App, Focus};
use crate::tui::theme::Theme;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let log = &app.log;
    let focused = app.focus == Focus::Output;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if focused {
            theme.focus_border()
        } else {
            theme.dim()
        })
        .title(title(app, theme));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (w, h) = (inner.width as usize, inner.height as usize);
    if w == 0 || h == 0 {
        return;
    }
    let mut rows: Vec<Line> = Vec::new();
    if let Some(note) = &log.note {
        rows.push(Line::from(Span::styled(note.clone(), theme.warn())));
    }
    if log.job.is_none() {
        rows.push(Line::from(Span::styled("no job selected", theme.dim())));
    } else if log.loading {
        rows.push(Line::from(Span::styled("reading output…", theme.dim())));
    } else if log.lines.is_empty() {
        rows.push(Line::from(Span::styled("no output yet", theme.dim())));
    }
    let room = h.saturating_sub(rows.len());
    rows.extend(visible_rows(log, theme, w, room));
    f.render_widget(Paragraph::new(rows), inner);
}

fn title<'a>(app: &App, theme: &Theme) -> Line<'a> {
    let log = &app.log;
    let mut spans = vec![Span::styled(" output ", theme.title())];
    match log.job.as_ref().map(|id| (id, id.host())) {
        Some((id, Some(host))) => {
            spans.push(Span::styled(format!("{} on ", id.local_id()), theme.dim()));
            spans.push(Span::styled(format!("{host} "), theme.accent()));
            if let Some(job) = app.jobs.get(id)
                && let Some(stale) = crate::tui::ui::hosts::stale_text(app, job)
            {
                spans.push(Span::styled(format!(" {stale} "), theme.warn()));
            }
        }
        Some((id, None)) => spans.push(Span::styled(format!("{id} "), theme.dim())),
        None => {}
    }
    if log.follow {
        spans.push(Span::styled(
            " FOLLOWING ",
            theme.status(crate::jobs::Status::Completed),
        ));
    } else {
        let keys = app.opts.keymap.keys_for(NormalAction::Follow);
        spans.push(Span::styled(
            format!(" PAUSED: {keys} follows "),
            theme.badge(),
        ));
        if log.unseen > 0 {
            let s = if log.unseen == 1 { "" } else { "s" };
            spans.push(Span::styled(
                format!(" +{} new line{s} ", log.unseen),
                theme.warn(),
            ));
        }
    }
    if log.left > 0 && !log.wrap {
        let keys = app.opts.keymap.first_key(NormalAction::ScrollLeft);
        spans.push(Span::styled(
            format!(" from column {} ({keys} back) ", log.left + 1),
            theme.dim(),
        ));
    }
    if log.wrap {
        spans.push(Span::styled(" wrap ", theme.dim()));
    }
    if !log.issues.is_empty() {
        let keys = &app.opts.keymap;
        spans.push(Span::styled(
            format!(
                " {} {} issue lines ({}/{} jumps) ",
                theme.issue_mark(),
                log.issues.len(),
                keys.first_key(NormalAction::NextIssue),
                keys.first_key(NormalAction::PrevIssue)
            ),
            theme.warn(),
        ));
    }
    if let Some(s) = &log.search {
        let pos = s.current.map_or("-".to_string(), |c| (c + 1).to_string());
        spans.push(Span::styled(
            format!(" /{}  {pos}/{} ", s.query, s.matches.len()),
            theme.warn(),
        ));
    }
    Line::from(spans)
}

/// The screen rows for a pane `width` x `height`: unwrapped lines are cut at the edge; wrapped
/// ones are split by display width, and when following, the last row is the log's last line.
fn visible_rows<'a>(log: &LogView, theme: &Theme, width: usize, height: usize) -> Vec<Line<'a>> {
    if height == 0 {
        return vec![];
    }
    let styled = |abs: u64| log.line(abs).map(|raw| styled_line(raw, abs, log, theme));
    if !log.wrap {
        let top = log.top_for(height);
        return (top..log.end_abs())
            .take(height)
            .filter_map(styled)
            .map(|line| skip_columns(line, log.left))
            .collect();
    }
    if log.follow {
        // From the end backwards until the pane is full.
        let mut rows: Vec<Line> = Vec::new();
        let mut abs = log.end_abs();
        while rows.len() < height && abs > log.first_abs {
            abs -= 1;
            if let Some(line) = styled(abs) {
                let mut wrapped = wrap(line, width);
                wrapped.append(&mut rows);
                rows = wrapped;
            }
        }
        let skip = rows.len().saturating_sub(height);
        return rows.split_off(skip);
    }
    let mut rows = Vec::new();
    let mut abs = log.top_abs;
    while rows.len() < height && abs < log.end_abs() {
        if let Some(line) = styled(abs) {
            rows.extend(wrap(line, width));
        }
        abs += 1;
    }
    rows.truncate(height);
    rows
}

fn styled_line<'a>(raw: &RawLine, abs: u64, log: &LogView, theme: &Theme) -> Line<'a> {
    let line = sanitize_line(&raw.bytes);
    let mut spans: Vec<Span> = Vec::new();
    let issue = log.issue_on(abs);
    if let (Some(p), Some(set)) = (issue, &log.patterns) {
        let style = theme.severity(set.pattern(p).severity);
        let style = if log.issue_at == Some(abs) {
            style.add_modifier(Modifier::REVERSED)
        } else {
            style
        };
        spans.push(Span::styled(theme.issue_mark(), style));
    }
    if raw.cut {
        spans.push(Span::styled(theme.ellipsis(), theme.dim()));
    }
    if let Some(search) = log
        .search
        .as_ref()
        .filter(|s| s.matches.binary_search(&abs).is_ok())
    {
        let current = log.current_match() == Some(abs);
        spans.extend(highlight(&line.plain(), &search.query, theme, current));
        return Line::from(spans);
    }
    // A line showing a known issue is bold, whatever colours the agent gave it.
    let emphasis = if issue.is_some() {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    for seg in line.segments {
        spans.push(Span::styled(
            seg.text,
            theme.log_style(&seg.style).patch(emphasis),
        ));
    }
    Line::from(spans)
}

/// A matching line, plain, with every match of `query` (case-insensitive) reversed. A match is
/// widened to whole graphemes: an accent is never drawn apart from its letter.
fn highlight<'a>(text: &str, query: &str, theme: &Theme, current: bool) -> Vec<Span<'a>> {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let q: Vec<char> = query
        .chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect();
    // Where each grapheme starts, in characters, and the end.
    let mut bounds: Vec<usize> = width::graphemes(text)
        .scan(0, |at, (g, _)| {
            let start = *at;
            *at += g.chars().count();
            Some(start)
        })
        .collect();
    bounds.push(chars.len());
    let hit = if current {
        theme.badge()
    } else {
        Style::new().add_modifier(Modifier::REVERSED)
    };
    let mut spans = Vec::new();
    let (mut i, mut plain_from) = (0, 0);
    while !q.is_empty() && i + q.len() <= lower.len() {
        if lower[i..i + q.len()] == q[..] {
            let start = bounds.iter().rev().find(|b| **b <= i).copied().unwrap_or(0);
            let start = start.max(plain_from);
            let end = bounds.iter().find(|b| **b >= i + q.len()).copied();
            let end = end.unwrap_or(chars.len());
            spans.push(Span::raw(
                chars[plain_from..start].iter().collect::<String>(),
            ));
            spans.push(Span::styled(
                chars[start..end].iter().collect::<String>(),
                hit,
            ));
            i = end;
            plain_from = end;
        } else {
            i += 1;
        }
    }
    spans.push(Span::raw(chars[plain_from..].iter().collect::<String>()));
    spans
}

/// The line without its first `n` columns (scrolled sideways), keeping each span's style; a
/// wide character cut in two leaves a space.
pub(super) fn skip_columns(line: Line<'_>, n: usize) -> Line<'_> {
    if n == 0 {
        return line;
    }
    let mut skipped = 0;
    let mut spans = Vec::new();
    for span in line.spans {
        if skipped >= n {
            spans.push(span);
            continue;
        }
        let mut kept = String::new();
        for (g, gw) in width::graphemes(&span.content) {
            if skipped >= n {
                kept.push_str(g);
            } else {
                skipped += gw;
                if skipped > n {
                    kept.push(' ');
                }
            }
        }
        if !kept.is_empty() {
            spans.push(Span::styled(kept, span.style));
        }
    }
    Line::from(spans)
}

/// Splits a line into rows of at most `columns` columns, between graphemes, keeping each span's
/// style.
pub(super) fn wrap<'a>(line: Line<'a>, columns: usize) -> Vec<Line<'a>> {
    let columns = columns.max(1);
    let mut rows: Vec<Line> = Vec::new();
    let mut current = Line::default();
    let mut used = 0;
    for span in line.spans {
        let mut piece = String::new();
        for (g, gw) in width::graphemes(&span.content) {
            if used + gw > columns && used > 0 {
                if !piece.is_empty() {
                    current
                        .spans
                        .push(Span::styled(std::mem::take(&mut piece), span.style));
                }
                rows.push(std::mem::take(&mut current));
                used = 0;
            }
            piece.push_str(g);
            used += gw;
        }
        if !piece.is_empty() {
            current.spans.push(Span::styled(piece, span.style));
        }
    }
    rows.push(current);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Line]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wrap_by_display_width() {
        let rows = wrap(Line::from(vec![Span::raw("abcdef"), Span::raw("gh")]), 3);
        assert_eq!(texts(&rows), ["abc", "def", "gh"]);
        let wide = wrap(Line::from("日本語です"), 4);
        assert_eq!(texts(&wide), ["日本", "語で", "す"]);
        let accents = wrap(Line::from("e\u{301}e\u{301}e\u{301}"), 2);
        assert_eq!(texts(&accents), ["e\u{301}e\u{301}", "e\u{301}"]);
        assert_eq!(texts(&wrap(Line::from(""), 5)), [""]);
    }

    #[test]
    fn lines_scrolled_sideways_lose_their_first_columns() {
        let line = Line::from(vec![Span::raw("abc"), Span::raw("def")]);
        assert_eq!(texts(&[skip_columns(line.clone(), 4)]), ["ef"]);
        assert_eq!(texts(&[skip_columns(line, 0)]), ["abcdef"]);
        assert_eq!(texts(&[skip_columns(Line::from("日本語"), 1)]), [" 本語"]);
    }

    #[test]
    fn highlight_marks_every_match_case_insensitively() {
        let spans = highlight("Error: error!", "ERROR", &Theme::default(), false);
        let styled: Vec<&str> = spans
            .iter()
            .filter(|s| s.style != Style::new())
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(styled, ["Error", "error"]);
        let joined: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(joined, "Error: error!");
        let spans = highlight("cafe\u{301} cafe", "cafe", &Theme::default(), true);
        let parts: Vec<&str> = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(
            parts,
            ["", "cafe\u{301}", " ", "cafe", ""],
            "the accent stays with its letter"
        );
    }
}
