//! The tabs line and the jobs table. Only the rows on screen are built.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use crate::jobs::insight::alarms::AlarmKind;
use crate::jobs::model::session::format_cost;
use crate::jobs::model::time::{format_duration, format_duration_coarse};
use crate::jobs::text::sanitize::{ellipsize, plain_text};
use crate::jobs::text::width::width as text_width;
use crate::jobs::{Job, Status};
use crate::tui::action::NormalAction;
use crate::tui::app::table::note::RowNote;
use crate::tui::app::table::view::Tab;
use crate::tui::app::{App, Focus};
use crate::tui::theme::Theme;

pub fn render_tabs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut spans = vec![Span::raw(" ")];
    for tab in Tab::ALL {
        let n = app
            .jobs
            .values()
            .filter(|j| {
                tab.admits(j) && crate::tui::app::table::view::in_projects(j, &app.table.projects)
            })
            .count();
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

/// Column widths: (status, id, project, progress, elapsed, alert); the task takes the rest.
const WIDE: [u16; 6] = [13, 14, 12, 26, 8, 26];
const NARROW: [u16; 6] = [13, 12, 8, 11, 7, 10];
/// The cost column (`$999.99`), shown only when some job the table lists has a cost and the
/// task keeps at least `TASK_WITH_COST` columns beside it.
const COST: u16 = 7;
const TASK_WITH_COST: u16 = 30;

/// The table's columns for a given width.
struct Columns {
    widths: &'static [u16; 6],
    wide: bool,
    /// The cost column is shown.
    cost: bool,
}

impl Columns {
    /// The columns for a table `inner` columns wide: wide or narrow, and whether the cost fits.
    fn fit(inner: u16, any_cost: bool) -> Columns {
        let wide = inner >= 110;
        let widths = if wide { &WIDE } else { &NARROW };
        // Seven columns, one space between each. Only the wide layout takes the cost: the
        // narrow one could fit it just below 110, and the column would come and go as the
        // window grew.
        let fixed: u16 = widths.iter().sum::<u16>() + 6;
        let cost = any_cost && wide && inner >= fixed + COST + 1 + TASK_WITH_COST;
        Columns { widths, wide, cost }
    }

    fn constraints(&self) -> Vec<Constraint> {
        let mut c: Vec<Constraint> = self.widths.iter().map(|w| Constraint::Length(*w)).collect();
        if self.cost {
            c.insert(5, Constraint::Length(COST));
        }
        c.push(Constraint::Min(6));
        c
    }

    fn titles(&self) -> Vec<&'static str> {
        let mut t = vec![
            "STATUS", "ID", "PROJECT", "PROGRESS", "ELAPSED", "ALERT", "TASK",
        ];
        if self.cost {
            // Right-aligned, as the costs under it.
            t.insert(5, "   COST");
        }
        t
    }
}

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
    // Any job the table lists, on screen or not, so that scrolling never moves the columns.
    let any_cost = app
        .table
        .view
        .iter()
        .filter_map(|id| app.jobs.get(id))
        .any(|j| cost_of(j).is_some());
    let cols = Columns::fit(area.width.saturating_sub(2), any_cost);
    let rows_fit = area.height.saturating_sub(3) as usize;
    let selected = app.table.selected_index();
    let rows: Vec<Row> = (app.table.top..app.table.view.len().min(app.table.top + rows_fit))
        .filter_map(|i| app.jobs.get(&app.table.view[i]).map(|j| (i, j)))
        .map(|(i, job)| {
            let note = app.row_note(job);
            let row =
                job_row(job, &note, theme, app.now, &cols).with_alert(alert_cell(app, job, theme));
            if Some(i) == selected {
                row.style(theme.selected())
            } else if job.status == Status::Waiting {
                // A job waiting for a person stands out even when not selected.
                row.style(Style::new().add_modifier(Modifier::BOLD))
            } else {
                row
            }
        })
        .collect();
    let empty = rows.is_empty();
    let header = Row::new(cols.titles()).style(theme.title());
    let table = Table::new(rows, cols.constraints())
        .header(header)
        .block(block)
        .column_spacing(1);
    f.render_widget(table, area);
    if empty {
        let inner = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: 1,
        };
        f.render_widget(
            Paragraph::new(Span::styled(empty_message(app), theme.dim())),
            inner,
        );
    }
}

/// Why the table is empty, and what to do about it.
fn empty_message(app: &App) -> String {
    if !app.loaded {
        "reading jobs…".to_string()
    } else if let Some(e) = &app.scan_error {
        e.clone()
    } else if app.jobs.is_empty() {
        format!("no jobs under {}", app.opts.root.display())
    } else {
        let k = |a| app.opts.keymap.first_key(a);
        format!(
            "no jobs match this view ({}/{} changes the view, {} clears the filter)",
            k(NormalAction::PrevTab),
            k(NormalAction::NextTab),
            k(NormalAction::Back)
        )
    }
}

/// A row's cells before the alert column is put in (it needs the app, a row does not).
struct RowCells<'a> {
    cells: Vec<Cell<'a>>,
}

impl<'a> RowCells<'a> {
    /// The alert goes before the last cell, the task.
    fn with_alert(mut self, alert: Line<'a>) -> Row<'a> {
        let at = self.cells.len().saturating_sub(1);
        self.cells.insert(at, Cell::from(alert));
        Row::new(self.cells)
    }
}

/// The worst alarm of the job, else the worst known issue in its output: what needs eyes.
fn alert_cell<'a>(app: &App, job: &Job, theme: &Theme) -> Line<'a> {
    if let Some(alarm) = app
        .insight
        .alarms
        .get(&job.id)
        .and_then(|a| crate::jobs::insight::alarms::worst(a))
    {
        let style = match alarm.kind {
            AlarmKind::Stalled | AlarmKind::OverBudget => theme.error(),
            AlarmKind::QuestionWaiting | AlarmKind::NearBudget => theme.warn(),
        };
        return Line::from(Span::styled(
            format!("{} {}", theme.alarm_mark(), alarm.kind.label()),
            style,
        ));
    }
    if let (Some(f), Some(set)) = (
        app.insight.issues.get(&job.id).and_then(|f| f.worst()),
        app.insight.patterns.as_deref(),
    ) {
        let p = set.pattern(f.pattern);
        return Line::from(vec![
            Span::styled(theme.issue_mark(), theme.severity(f.severity)),
            Span::styled(
                format!(" {}", p.name),
                theme
                    .severity(f.severity)
                    .remove_modifier(Modifier::REVERSED),
            ),
        ]);
    }
    Line::default()
}

/// What the job's run cost, when its figures say.
fn cost_of(job: &Job) -> Option<f64> {
    job.meta.as_ref()?.usage.as_ref()?.cost_usd
}

fn job_row<'a>(
    job: &'a Job,
    note: &RowNote,
    theme: &Theme,
    now: DateTime<Utc>,
    cols: &Columns,
) -> RowCells<'a> {
    let mut status_label = format!("{} {}", theme.symbol(job.status), job.status.as_str());
    if !job.problems.is_empty() {
        status_label.push('!');
    }
    let project = plain_text(job.project());
    let elapsed = job.elapsed_secs(now).map_or("-".into(), format_duration);
    let task = plain_text(job.task());
    let id_style = if cols.wide { Style::new() } else { theme.dim() };
    let mut cells = vec![
        Cell::from(Span::styled(status_label, theme.job_status(job))),
        Cell::from(Span::styled(job.shown_id(), id_style)),
        Cell::from(project),
        Cell::from(progress_cell(
            job,
            note,
            theme,
            now,
            cols.widths[3] as usize,
        )),
        Cell::from(elapsed),
    ];
    if cols.cost {
        // Blank without figures: the costs that exist stand out.
        let text = cost_of(job).map_or(String::new(), format_cost);
        cells.push(Cell::from(Line::from(text).alignment(Alignment::Right)));
    }
    cells.push(Cell::from(task));
    RowCells { cells }
}

/// `Bash: npm test 3m`: the call in flight and how long it has run, the command cut to leave
/// room for the time.
fn activity_line<'a>(
    what: &str,
    since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    width: usize,
    theme: &Theme,
) -> Line<'a> {
    let what = plain_text(what);
    let what = if what.is_empty() {
        "busy".to_string()
    } else {
        what
    };
    let age = since.map_or(String::new(), |t| {
        format_duration_coarse((now - t).num_seconds())
    });
    let room = width.saturating_sub(if age.is_empty() { 0 } else { age.len() + 1 });
    let shown = if text_width(&what) <= room {
        what
    } else {
        ellipsize(&what, room.saturating_sub(1).max(1))
    };
    let mut spans = vec![Span::raw(shown)];
    if !age.is_empty() {
        spans.push(Span::styled(format!(" {age}"), theme.dim()));
    }
    Line::from(spans)
}

/// What a person is needed for, else what the agent is doing this minute: either says more
/// than any bar.
fn needed_or_doing<'a>(
    job: &Job,
    note: &RowNote,
    theme: &Theme,
    now: DateTime<Utc>,
    width: usize,
) -> Option<Line<'a>> {
    if let Some(w) = job.waiting() {
        let what = match (w, width >= 16) {
            (crate::jobs::Waiting::Question, true) => "needs an answer",
            (crate::jobs::Waiting::Approval, true) => "needs approval",
            (crate::jobs::Waiting::Question, false) => "answer?",
            (crate::jobs::Waiting::Approval, false) => "approve?",
        };
        return Some(Line::from(Span::styled(what, theme.warn())));
    }
    let stage = if width >= 20 {
        &note.stage
    } else {
        &note.stage_short
    };
    if let Some(stage) = stage {
        return Some(Line::from(Span::styled(stage.clone(), theme.dim())));
    }
    let a = job.activity.as_ref().filter(|_| job.status.is_active())?;
    Some(activity_line(&a.what, a.since, now, width, theme))
}

/// What a person is needed for, or what the agent is doing now; else a bar with the percent;
/// the step k/n and its name; an estimate from the expected duration (marked `~`); or, with
/// nothing known, a moving marker and nothing else.
pub fn progress_cell<'a>(
    job: &Job,
    note: &RowNote,
    theme: &Theme,
    now: DateTime<Utc>,
    width: usize,
) -> Line<'a> {
    if let Some(now_line) = needed_or_doing(job, note, theme, now, width) {
        return now_line;
    }
    let progress = job.progress.as_ref();
    if let Some(p) = progress
        && let (Some(step), Some(total)) = (p.step, p.total_steps)
    {
        let name = p.step_name.as_deref().map(plain_text).unwrap_or_default();
        let pct = p.percent_done().unwrap_or(0.0);
        let bar_w = 4.min(width.saturating_sub(6));
        let mut spans = bar(pct, bar_w, theme, Style::new());
        spans.push(Span::raw(format!(" {step}/{total} {name}")));
        return Line::from(spans);
    }
    if let Some(pct) = progress.and_then(|p| p.percent_done()) {
        let mut spans = bar(pct, width.saturating_sub(5), theme, Style::new());
        spans.push(Span::raw(format!("{pct:>4.0}%")));
        return Line::from(spans);
    }
    if let Some(n) = job.queue_position {
        let text = if n == 1 {
            "next in queue".to_string()
        } else {
            format!("#{n} in queue")
        };
        return Line::from(Span::styled(text, theme.dim()));
    }
    if let Some(link) = &note.link {
        return Line::from(Span::styled(link.clone(), theme.dim()));
    }
    if !job.status.is_active() {
        return Line::from(Span::styled("-", theme.dim()));
    }
    let elapsed = job.elapsed_secs(now);
    if let (Some(est), Some(el)) = (
        job.meta
            .as_ref()
            .and_then(|m| m.estimated_duration_seconds)
            .filter(|e| *e > 0),
        elapsed,
    ) {
        let pct = (el as f64 / est as f64 * 100.0).min(99.0);
        let mut spans = bar(pct, width.saturating_sub(6), theme, theme.dim());
        spans.push(Span::styled(format!(" ~{pct:>2.0}%"), theme.dim()));
        return Line::from(spans);
    }
    // Indeterminate: a marker that moves once a second along an empty track.
    let track = width.saturating_sub(1).clamp(1, 10);
    let pos = elapsed.unwrap_or(0).unsigned_abs() as usize % track;
    let mut s = theme.bar_empty().repeat(track);
    let byte = s.char_indices().nth(pos).map_or(0, |(b, _)| b);
    let ch_len = theme.bar_empty().len();
    s.replace_range(byte..byte + ch_len, theme.bar_full());
    Line::from(Span::styled(s, theme.dim()))
}

fn bar<'a>(pct: f64, width: usize, theme: &Theme, style: Style) -> Vec<Span<'a>> {
    let filled = ((pct / 100.0) * width as f64).round() as usize;
    let filled = filled.min(width);
    vec![
        Span::styled(
            theme.bar_full().repeat(filled),
            theme.status(Status::Running).patch(style),
        ),
        Span::styled(theme.bar_empty().repeat(width - filled), theme.dim()),
    ]
}
