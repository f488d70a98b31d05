//! The PROGRESS cell: what a person is needed for, what the agent is doing, or how far it has
//! got. Cut to its column, a cell keeps its figures whole (`2/18`, never `22/18…`, which reads
//! as more than done): the step's name goes first, then the bar.

use chrono::{DateTime, Utc};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::jobs::model::time::format_duration_coarse;
use crate::jobs::text::sanitize::{ellipsize, plain_text};
use crate::jobs::text::width::width as text_width;
use crate::jobs::{Job, Status};
use crate::tui::app::table::note::RowNote;
use crate::tui::theme::Theme;
use crate::tui::ui::table::cut;

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
        return step_line(step, total, &name, pct, width, theme);
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

/// The bar a step line starts with, where it has room.
const STEP_BAR: usize = 4;
/// Columns of a step's name worth showing cut (with its ellipsis): fewer say nothing.
const NAME_MIN: usize = 4;

/// `████ 2/18 Build`: the bar, the step k/n and its name, in at most `width` columns. What does
/// not fit goes whole, the name first (cut while enough of it is left), then the bar; the
/// figures are never cut. Where even `k/n` does not fit, the percent done says it.
fn step_line<'a>(
    step: u64,
    total: u64,
    name: &str,
    pct: f64,
    width: usize,
    theme: &Theme,
) -> Line<'a> {
    let steps = format!("{step}/{total}");
    let with_bar = STEP_BAR + 1 + steps.len();
    let (bar_w, used) = if with_bar <= width {
        (STEP_BAR, with_bar)
    } else {
        (0, steps.len())
    };
    if used > width {
        let pct = format!("{pct:.0}%");
        return Line::from(Span::raw(if pct.len() <= width {
            pct
        } else {
            String::new()
        }));
    }
    let room = width - used;
    let name = match room.checked_sub(1) {
        _ if name.is_empty() => None,
        Some(r) if text_width(name) <= r => Some(name.to_string()),
        Some(r) if r >= NAME_MIN => Some(cut(name, r, theme)),
        _ => None,
    };
    let mut spans = if bar_w > 0 {
        let mut spans = bar(pct, bar_w, theme, Style::new());
        spans.push(Span::raw(format!(" {steps}")));
        spans
    } else {
        vec![Span::raw(steps)]
    };
    if let Some(name) = name {
        spans.push(Span::raw(format!(" {name}")));
    }
    Line::from(spans)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::Progress;
    use crate::tui::testing::{live, now};
    use crate::tui::ui::table::cells::cut_line;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    /// The cell as the table draws it: made for `width` columns, then cut to them.
    fn cell(step: u64, total: u64, name: &str, width: usize) -> String {
        let job = live("143002-c3d4", "155800-step", 5, |j| {
            j.progress = Some(Box::new(Progress {
                step: Some(step),
                total_steps: Some(total),
                step_name: Some(name.into()),
                ..Progress::default()
            }));
            j.activity = None;
        });
        let theme = Theme::default();
        let line = progress_cell(&job, &RowNote::default(), &theme, now(), width);
        text(&cut_line(line, width, &theme))
    }

    #[test]
    fn a_cut_step_keeps_its_figures_whole() {
        // (width, what the cell says): the name goes first, then the bar, never a digit.
        let cases: &[(usize, &str)] = &[
            (30, "░░░░ 2/18 Build the release"),
            (21, "░░░░ 2/18 Build the …"),
            (14, "░░░░ 2/18 Bui…"),
            (13, "░░░░ 2/18"),
            (11, "░░░░ 2/18"),
            (9, "░░░░ 2/18"),
            (8, "2/18"),
            (6, "2/18"),
            (4, "2/18"),
            (3, "11%"),
        ];
        for (width, want) in cases {
            assert_eq!(
                cell(2, 18, "Build the release", *width),
                *want,
                "{width} columns"
            );
        }
        // Whatever the width, the step shown is the step done, never more.
        for width in 0..40 {
            let shown = cell(12, 18, "Running the tests", width);
            assert!(
                shown.contains("12/18") || shown == "67%" || shown.is_empty(),
                "{width} columns: {shown:?}"
            );
            assert!(text_width(&shown) <= width, "{width} columns: {shown:?}");
        }
    }
}
