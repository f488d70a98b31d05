//! What each cell of the jobs table says: the status, the agent, the alert, the cost, the changes (the
//! progress is `progress.rs`); and cutting a cell to its column with an ellipsis, so that
//! nothing is cut unseen.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::jobs::Job;
use crate::jobs::insight::alarms::AlarmKind;
use crate::jobs::model::checks::CheckState;
use crate::jobs::model::review::ChangeStat;
use crate::jobs::run::agents::Kind;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::text::width::{self, width as text_width};
use crate::tui::app::App;
use crate::tui::theme::Theme;

/// The status as the table says it: a symbol, or a symbol and the word; `!` when the job's files
/// have problems.
pub fn status_label(job: &Job, theme: &Theme, words: bool) -> String {
    let mut label = theme.symbol(job.status).to_string();
    if words {
        label.push(' ');
        label.push_str(job.status.as_str());
    }
    if !job.problems.is_empty() {
        label.push('!');
    }
    label
}

/// The kind of agent the job ran, from the program its meta.json names (`None` for a job that
/// names none, as the orchestrator's do).
pub fn agent_of(job: &Job) -> Option<Kind> {
    job.meta
        .as_ref()
        .map(|m| m.agent.as_str())
        .filter(|a| !a.is_empty())
        .map(Kind::of_program)
}

/// `s` in at most `max` columns: whole, or its start and an ellipsis.
pub fn cut(s: &str, max: usize, theme: &Theme) -> String {
    if text_width(s) <= max {
        return s.to_string();
    }
    let ell = theme.ellipsis();
    let room = max.saturating_sub(text_width(ell));
    if room == 0 {
        return width::fit(ell, max).to_string();
    }
    format!("{}{ell}", width::fit(s, room))
}

/// A line of styled spans in at most `max` columns, cut with an ellipsis (in the style of the
/// span it cuts).
pub fn cut_line<'a>(line: Line<'a>, max: usize, theme: &Theme) -> Line<'a> {
    if line.width() <= max {
        return line;
    }
    let ell = theme.ellipsis();
    let mut room = max.saturating_sub(text_width(ell));
    let mut spans = Vec::new();
    for span in line.spans {
        let w = text_width(&span.content);
        if w <= room {
            room -= w;
            spans.push(span);
            continue;
        }
        let kept = format!("{}{ell}", width::fit(&span.content, room));
        spans.push(Span::styled(kept, span.style));
        return Line::from(spans);
    }
    Line::from(spans)
}

/// The columns the alert takes, for sizing its column without drawing it (for every job
/// listed: two lookups and no text made). `issues` holds the width of each known issue's
/// alert once measured, by pattern: a large root has the same few alerts thousands of times.
pub fn alert_width(app: &App, job: &Job, theme: &Theme, issues: &mut Vec<usize>) -> usize {
    if let Some(alarm) = app
        .insight
        .alarms
        .get(&job.id)
        .and_then(|a| crate::jobs::insight::alarms::worst(a))
    {
        return text_width(theme.alarm_mark()) + 1 + text_width(alarm.kind.label());
    }
    if let (Some(f), Some(set)) = (
        app.insight.issues.get(&job.id).and_then(|f| f.worst()),
        app.insight.patterns.as_deref(),
    ) {
        let at = f.pattern as usize;
        if issues.len() <= at {
            issues.resize(at + 1, usize::MAX);
        }
        if issues[at] == usize::MAX {
            issues[at] = text_width(theme.issue_mark()) + 1 + text_width(&set.pattern(at).name);
        }
        return issues[at];
    }
    if let Some(o) = app.overlap.found.get(&job.id) {
        return text_width(theme.alarm_mark()) + 1 + text_width(o);
    }
    0
}

/// The worst alarm of the job, else the worst known issue in its output: what needs eyes.
pub fn alert_cell<'a>(app: &App, job: &Job, theme: &Theme) -> Line<'a> {
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
    if let Some(o) = app.overlap.found.get(&job.id) {
        // Another unmerged job touches the same files: the order of their merges matters.
        return Line::from(Span::styled(
            format!("{} {}", theme.alarm_mark(), plain_text(o)),
            theme.warn(),
        ));
    }
    Line::default()
}

/// What the job changed in its project, as meta.json recorded it when it ended (no git is run
/// for the table), and what became of it (`merged`, `discarded`; empty until decided).
pub fn changes_of(job: &Job) -> Option<(ChangeStat, &str)> {
    let review = job.meta.as_ref()?.review.as_ref()?;
    let outcome = review.outcome.split_whitespace().next().unwrap_or("");
    Some((review.changes?, outcome))
}

/// `+120 -8 · 5 files` (`· merged` once merged), or `+120-8` where narrow (`merged` alone once
/// decided); `none` when nothing changed.
pub fn changes_label((stat, outcome): (ChangeStat, &str), short: bool) -> String {
    match (stat.files, short, outcome.is_empty()) {
        (_, true, false) => plain_text(outcome),
        (0, true, true) => "none".to_string(),
        (_, true, true) => format!("+{}-{}", stat.added, stat.removed),
        (_, false, true) => stat.summary(),
        (_, false, false) => format!("{} · {}", stat.summary(), plain_text(outcome)),
    }
}

/// The CHANGES cell: additions green, removals red, the files and the outcome dimmed.
pub fn changes_cell<'a>(job: &Job, short: bool, theme: &Theme) -> Line<'a> {
    let Some((stat, outcome)) = changes_of(job) else {
        return Line::default();
    };
    if stat.files == 0 || (short && !outcome.is_empty()) {
        return Line::from(Span::styled(
            changes_label((stat, outcome), short),
            theme.dim(),
        ));
    }
    let sep = if short { "" } else { " " };
    let mut spans = vec![
        Span::styled(format!("+{}", stat.added), theme.added()),
        Span::raw(sep),
        Span::styled(format!("-{}", stat.removed), theme.removed()),
    ];
    if !short {
        let label = changes_label((stat, outcome), false);
        let rest = label.split_once(" · ").map_or("", |(_, r)| r);
        spans.push(Span::styled(format!(" · {rest}"), theme.dim()));
    }
    Line::from(spans)
}

/// The CHECKS cell's text (`✓ 3/3`, `✗ 1/3`, `… 2/3`), for a job whose project has checks.
/// Checks that never ran say so only once the job has ended: before, they are yet to come.
pub fn checks_label(job: &Job) -> Option<String> {
    let c = job.checks()?;
    if c.state == CheckState::Planned && job.status.is_active() {
        return None;
    }
    Some(c.label())
}

/// The CHECKS cell: passed green, failed red, running or not run dimmed.
pub fn checks_cell<'a>(job: &Job, theme: &Theme) -> Line<'a> {
    let (Some(label), Some(c)) = (checks_label(job), job.checks()) else {
        return Line::default();
    };
    let style = match c.state {
        CheckState::Passed => theme.added(),
        CheckState::Failed => theme.error(),
        _ => theme.dim(),
    };
    Line::from(Span::styled(label, style))
}

/// What the job's run cost, when its figures say.
pub fn cost_of(job: &Job) -> Option<f64> {
    job.meta.as_ref()?.usage.as_ref()?.cost_usd
}
