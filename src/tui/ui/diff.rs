//! The diff view (`d`): which job, what to know about its change, then one page of the files it
//! changed and the unified diff. Every line from git goes through the sanitizer (a diff is text
//! from disk: an escape sequence in a changed file must never reach the terminal) and is styled
//! only when it is on screen.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::output::skip_columns;
use super::table::cut;
use crate::jobs::model::checks::CheckState;
use crate::jobs::model::review::{Change, ChangeKind, FileChange};
use crate::jobs::text::sanitize::{plain_text, sanitize_line};
use crate::jobs::text::width::width;
use crate::tui::action::DiffAction;
use crate::tui::app::App;
use crate::tui::app::diff::{DiffView, header_rows};
use crate::tui::theme::Theme;

pub fn render(app: &App, view: &DiffView, theme: &Theme, f: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(title(app, view, theme));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [head, page] = Layout::vertical([
        Constraint::Length(header_rows(view) as u16),
        Constraint::Min(0),
    ])
    .areas(inner);
    let room = inner.width as usize;
    f.render_widget(Paragraph::new(header(app, view, theme, room)), head);
    let rows = match &view.change {
        None => vec![Line::from(Span::styled(
            "reading the change from git…",
            theme.dim(),
        ))],
        Some(Err(e)) => e
            .lines()
            .map(|l| Line::from(Span::styled(plain_text(l), theme.error())))
            .collect(),
        Some(Ok(change)) => (view.scroll..view.rows())
            .take(page.height as usize)
            .map(|row| page_row(view, change, row, theme, room))
            .map(|line| skip_columns(line, view.left))
            .collect(),
    };
    f.render_widget(Paragraph::new(rows), page);
}

/// `<id> · diff 12/340 (esc closes)`, and how far the lines are scrolled sideways.
fn title<'a>(app: &App, view: &DiffView, theme: &Theme) -> Line<'a> {
    let km = &app.opts.keymap;
    let mut spans = vec![Span::styled(
        format!(" {} · diff ", view.job),
        theme.title(),
    )];
    if view.change().is_some() {
        let page = app.diff_page(view);
        let last = (view.scroll + page).min(view.rows());
        spans.push(Span::styled(
            format!("{}-{last}/{} ", view.scroll + 1, view.rows()),
            theme.dim(),
        ));
    }
    if view.left > 0 {
        spans.push(Span::styled(
            format!(
                "from column {} ({} back) ",
                view.left + 1,
                km.first_key(DiffAction::Left)
            ),
            theme.dim(),
        ));
    }
    spans.push(Span::styled(
        format!("({} closes) ", km.first_key(DiffAction::Close)),
        theme.dim(),
    ));
    Line::from(spans)
}

/// The task; how the job was isolated, its project, status and change; then each note.
fn header<'a>(app: &App, view: &DiffView, theme: &Theme, room: usize) -> Vec<Line<'a>> {
    let job = app.jobs.get(&view.job);
    let task = job.map_or_else(String::new, |j| plain_text(j.task()));
    let mut about = Vec::new();
    if let Some(j) = job {
        let review = j.meta.as_ref().and_then(|m| m.review.as_ref());
        about.push(
            review
                .map_or("not isolated", |r| r.isolation.as_str())
                .to_string(),
        );
        if let Some(branch) = review.map(|r| &r.branch).filter(|b| !b.is_empty()) {
            about.push(format!("branch {}", plain_text(branch)));
        }
        about.push(format!("project {}", plain_text(j.project())));
        about.push(j.status.as_str().to_string());
    }
    // The checks, after the rest of the line: a failure is what a merge would be refused for.
    let checks = job.and_then(|j| j.checks()).map(|c| {
        let style = match c.state {
            CheckState::Failed => theme.error(),
            CheckState::Passed => theme.added(),
            _ => theme.dim(),
        };
        (format!(" · checks {}", plain_text(&c.summary())), style)
    });
    let about = about.join(" · ");
    let about_line = match checks {
        Some((text, style)) => {
            let whole = cut(&format!("{about}{text}"), room, theme);
            // Cut within the first part, the line is that part alone.
            match whole.strip_prefix(about.as_str()) {
                Some(tail) => Line::from(vec![
                    Span::styled(about.clone(), theme.dim()),
                    Span::styled(tail.to_owned(), style),
                ]),
                None => Line::from(Span::styled(whole, theme.dim())),
            }
        }
        None => Line::from(Span::styled(cut(&about, room, theme), theme.dim())),
    };
    let mut lines = vec![
        Line::from(Span::styled(cut(&task, room, theme), theme.accent())),
        about_line,
    ];
    for note in view.notes() {
        let text = format!("! {}", plain_text(note));
        lines.push(Line::from(Span::styled(
            cut(&text, room, theme),
            theme.warn(),
        )));
    }
    lines
}

/// One row of the page: the summary, a file, the blank row, a line of the patch, or the note
/// that the patch was cut.
fn page_row<'a>(
    view: &DiffView,
    change: &Change,
    row: usize,
    theme: &Theme,
    room: usize,
) -> Line<'a> {
    let files = change.files.len();
    if row == 0 {
        let stat = change.stat();
        return Line::from(vec![
            Span::styled(
                match files {
                    0 => "no files changed".to_string(),
                    1 => "1 file changed  ".to_string(),
                    n => format!("{n} files changed  "),
                },
                theme.title(),
            ),
            Span::styled(format!("+{}", stat.added), theme.added()),
            Span::raw(" "),
            Span::styled(format!("-{}", stat.removed), theme.removed()),
        ]);
    }
    if let Some(file) = change.files.get(row - 1) {
        // The counts in one column after the widest path, where there is room.
        let path_room = view.path_cols.min(room.saturating_sub(16)).max(8);
        return file_row(file, theme, path_room);
    }
    let Some(i) = row.checked_sub(view.patch_row()) else {
        return Line::default();
    };
    match view.patch_line(i) {
        Some((raw, header)) => patch_line(raw, header, theme),
        None => Line::from(Span::styled(
            "… the diff is cut here: it is too large to show whole (every file is listed above)",
            theme.warn(),
        )),
    }
}

/// `M  src/app.rs   +12 -3`: the kind, the path (a rename from where) in `path_room` columns,
/// then the counts.
fn file_row<'a>(file: &FileChange, theme: &Theme, path_room: usize) -> Line<'a> {
    let (mark, style) = match file.kind {
        ChangeKind::Added => ("A", theme.added()),
        ChangeKind::Modified => ("M", theme.warn()),
        ChangeKind::Deleted => ("D", theme.removed()),
        ChangeKind::Renamed => ("R", theme.hunk()),
    };
    let path = match &file.from {
        Some(from) => format!("{} → {}", plain_text(from), plain_text(&file.path)),
        None => plain_text(&file.path),
    };
    let counts = if file.binary {
        vec![Span::styled("binary", theme.dim())]
    } else {
        vec![
            Span::styled(format!("+{}", file.added), theme.added()),
            Span::raw(" "),
            Span::styled(format!("-{}", file.removed), theme.removed()),
        ]
    };
    let path = cut(&path, path_room, theme);
    let pad = path_room.saturating_sub(width(&path)) + 2;
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(mark, style),
        Span::raw("  "),
        Span::raw(path),
        Span::raw(" ".repeat(pad)),
    ];
    spans.extend(counts);
    Line::from(spans)
}

/// A line of the patch, sanitized, in the colour of what it is.
fn patch_line<'a>(raw: &str, header: bool, theme: &Theme) -> Line<'a> {
    let text = sanitize_line(raw.as_bytes()).plain();
    let style = if text.starts_with("diff --git ") {
        theme.title().patch(theme.accent())
    } else if header && (text.starts_with("+++ ") || text.starts_with("--- ")) {
        theme.title()
    } else if header {
        theme.dim()
    } else if text.starts_with("@@") {
        theme.hunk()
    } else if text.starts_with('+') {
        theme.added()
    } else if text.starts_with('-') {
        theme.removed()
    } else if text.starts_with('\\') {
        // `\ No newline at end of file`
        theme.dim()
    } else {
        Style::new()
    };
    Line::from(Span::styled(text, style))
}
