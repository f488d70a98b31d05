//! The tabs line and the jobs table. Only the rows on screen are built.

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use crate::jobs::model::session::format_cost;
use crate::jobs::model::time::format_duration;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, Status};
use crate::tui::app::table::view::Tab;
use crate::tui::app::{App, Focus};
use crate::tui::theme::Theme;
use crate::tui::ui::hosts::{host_label, id_text, stale_text};
use cells::{agent_of, alert_cell, changes_cell, checks_cell, cost_of, status_label};

pub fn render_tabs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut spans = vec![Span::raw(" ")];
    let counts = memo(&TABS, app, 0, || {
        Tab::ALL.map(|tab| {
            app.jobs
                .values()
                .filter(|j| {
                    tab.admits(j)
                        && crate::tui::app::table::view::in_projects(j, &app.table.projects)
                })
                .count()
        })
    });
    for (tab, n) in Tab::ALL.into_iter().zip(counts) {
        let label = format!(" {} {n} ", tab.title());
        let style = if tab == app.table.tab {
            theme.selected().add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(
        format!(" sort: {}", app.table.sort.title()),
        theme.dim(),
    ));
    if !app.table.filter.is_empty() {
        spans.push(Span::styled(
            format!("  filter: {}", plain_text(&app.table.filter)),
            theme.warn(),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

mod cells;
mod columns;
mod progress;

pub use cells::cut;
use cells::cut_line;
pub use columns::{Columns, shortest_unique};
pub use progress::progress_cell;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let border = if app.focus == Focus::Table {
        theme.focus_border()
    } else {
        theme.dim()
    };
    let title = format!(
        " jobs {}/{} ",
        app.table.selected_index().map_or(0, |i| i + 1),
        app.table.view.len()
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(title, theme.title()));
    let cols = fitted(app, theme, area.width.saturating_sub(2));
    // The rows of hosts that cannot be reached come first, left blank here and drawn over.
    let host_rows = app.host_rows();
    let rows_fit = (area.height.saturating_sub(3) as usize).saturating_sub(host_rows);
    let selected = app.table.selected_index();
    let jobs = (app.table.top..app.table.view.len().min(app.table.top + rows_fit))
        .filter_map(|i| app.jobs.get(&app.table.view[i]).map(|j| (i, j)))
        .map(|(i, job)| {
            let row = job_row(app, (i, job), theme, &cols);
            if Some(i) == selected {
                row.style(theme.selected())
            } else if app.stale_since(&job.id).is_some() {
                // What its host said before it dropped: shown, but not as news.
                row.style(theme.dim())
            } else if job.status == Status::Waiting {
                // A job waiting for a person stands out even when not selected.
                row.style(Style::new().add_modifier(Modifier::BOLD))
            } else {
                row
            }
        });
    let rows: Vec<Row> = std::iter::repeat_n(Row::new(Vec::<Cell>::new()), host_rows)
        .chain(jobs)
        .collect();
    let empty = rows.is_empty();
    let header = Row::new(titles(&cols, theme)).style(theme.title());
    let table = Table::new(rows, constraints(&cols))
        .header(header)
        .block(block)
        .column_spacing(1);
    f.render_widget(table, area);
    crate::tui::ui::hosts::render_rows(app, theme, f, area, host_rows, (cols.status, cols.host));
    if empty {
        let inner = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: area.height.saturating_sub(3),
        };
        let lines: Vec<Line> = super::empty::lines(app)
            .into_iter()
            .map(|l| {
                Line::from(Span::styled(
                    cut(&l, inner.width.into(), theme),
                    theme.dim(),
                ))
            })
            .collect();
        f.render_widget(Paragraph::new(lines), inner);
    }
}

fn constraints(c: &Columns) -> Vec<Constraint> {
    [
        c.status, c.host, c.id, c.project, c.agent, c.progress, c.elapsed, c.changes, c.checks,
        c.cost, c.alert, c.task,
    ]
    .into_iter()
    .filter(|w| *w > 0)
    .map(Constraint::Length)
    .collect()
}

/// The titles of the columns shown, each cut to its column. Symbols need no title (the help
/// has their legend).
fn titles(c: &Columns, theme: &Theme) -> Vec<Line<'static>> {
    let status = if c.words { "STATUS" } else { "" };
    [
        (c.status, status),
        (c.host, "HOST"),
        (c.id, "ID"),
        (c.project, "PROJECT"),
        (c.agent, "AGENT"),
        (c.progress, "PROGRESS"),
        (c.elapsed, "ELAPSED"),
        (c.changes, "CHANGES"),
        (c.checks, "CHECKS"),
        (c.cost, "COST"),
        (c.alert, "ALERT"),
        (c.task, "TASK"),
    ]
    .into_iter()
    .filter(|(w, _)| *w > 0)
    .map(|(w, t)| {
        let line = Line::from(cut(t, w as usize, theme));
        if t == "COST" {
            // Right-aligned, as the costs under it.
            line.alignment(Alignment::Right)
        } else {
            line
        }
    })
    .collect()
}

/// One job's row, each cell cut to its column with an ellipsis.
/// `row`: the job's place in the table's rows, which the ids' shown lengths are kept by.
fn job_row<'a>(app: &App, (row, job): (usize, &'a Job), theme: &Theme, cols: &Columns) -> Row<'a> {
    let w = |n: u16| n as usize;
    let elapsed = job
        .elapsed_secs(app.now)
        .map_or("-".into(), format_duration);
    let id_style = if cols.words {
        Style::new()
    } else {
        theme.dim()
    };
    let shown_id = id_text(job);
    let mut cells = vec![Cell::from(Span::styled(
        cut(&status_label(job, theme, cols.words), w(cols.status), theme),
        theme.job_status(job),
    ))];
    if cols.host > 0 {
        cells.push(Cell::from(cut(host_label(job), w(cols.host), theme)));
    }
    cells.push(Cell::from(Span::styled(
        cut(cols.id_shown(row, &shown_id), w(cols.id), theme),
        id_style,
    )));
    if cols.project > 0 {
        let project = plain_text(job.project());
        cells.push(Cell::from(cut(&project, w(cols.project), theme)));
    }
    if cols.agent > 0 {
        let kind = agent_of(job).map_or("", |k| k.short());
        cells.push(Cell::from(cut(kind, w(cols.agent), theme)));
    }
    let note = app.row_note(job);
    // A stale job's progress is as old as its host's link: its age says so instead.
    let progress = match stale_text(app, job) {
        Some(stale) => Line::from(Span::styled(stale, theme.warn())),
        None => progress_cell(job, &note, theme, app.now, w(cols.progress)),
    };
    cells.push(Cell::from(cut_line(progress, w(cols.progress), theme)));
    cells.push(Cell::from(cut(&elapsed, w(cols.elapsed), theme)));
    if cols.changes > 0 {
        let changes = changes_cell(job, cols.changes_short, theme);
        cells.push(Cell::from(cut_line(changes, w(cols.changes), theme)));
    }
    if cols.checks > 0 {
        let checks = checks_cell(job, theme);
        cells.push(Cell::from(cut_line(checks, w(cols.checks), theme)));
    }
    if cols.cost > 0 {
        // Blank without figures: the costs that exist stand out.
        let text = cost_of(job).map_or(String::new(), format_cost);
        cells.push(Cell::from(Line::from(text).alignment(Alignment::Right)));
    }
    if cols.alert > 0 {
        let alert = alert_cell(app, job, theme);
        cells.push(Cell::from(cut_line(alert, w(cols.alert), theme)));
    }
    let task = plain_text(job.task());
    cells.push(Cell::from(cut(&task, w(cols.task), theme)));
    Row::new(cells)
}

/// What a figure worked out from the whole list was worked out from: the app, its count of
/// changes, the width, and (should a field be changed without an update) the sizes of what it
/// is measured over.
type MemoKey = (u64, u64, u16, usize, usize, usize, usize);

fn memo_key(app: &App, width: u16) -> MemoKey {
    (
        app.id,
        app.changes,
        width,
        app.table.view.len(),
        app.jobs.len(),
        app.insight.alarms.len(),
        app.insight.issues.len(),
    )
}

pub type Memo<T> = std::cell::RefCell<Option<(MemoKey, T)>>;

/// The figure `slot` holds if it was worked out from the same app state at `width`, else
/// `compute`'s, kept. What a frame works out from every job (the columns' widths, the tabs' and
/// the inbox's counts) grows with the root: at 100,000 jobs tens of milliseconds, every second
/// while elapsed times move. A frame drawn for that alone lists the same jobs the same way.
pub fn memo<T: Clone>(
    slot: &'static std::thread::LocalKey<Memo<T>>,
    app: &App,
    width: u16,
    compute: impl FnOnce() -> T,
) -> T {
    let key = memo_key(app, width);
    slot.with_borrow_mut(|held| match held {
        Some((k, v)) if *k == key => v.clone(),
        _ => {
            let v = compute();
            *held = Some((key, v.clone()));
            v
        }
    })
}

thread_local! {
    static COLUMNS: Memo<std::rc::Rc<Columns>> = const { std::cell::RefCell::new(None) };
    static TABS: Memo<[usize; Tab::ALL.len()]> = const { std::cell::RefCell::new(None) };
}

fn fitted(app: &App, theme: &Theme, inner: u16) -> std::rc::Rc<Columns> {
    memo(&COLUMNS, app, inner, || {
        let listed: Vec<&Job> = app
            .table
            .view
            .iter()
            .filter_map(|id| app.jobs.get(id).map(|j| &**j))
            .collect();
        let mut cols = Columns::fit(app, &listed, theme, inner);
        if listed.len() != app.table.view.len() {
            // A row without its job: the lengths, kept by place in the list, would be another
            // row's. Whole ids are never ambiguous.
            cols.id_len = Box::default();
        }
        std::rc::Rc::new(cols)
    })
}
