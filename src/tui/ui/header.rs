//! The top line: where we look, what we filter, how many jobs are in each state, read-only,
//! and how changes are noticed. The wall display adds a large status line.

use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::{BTreeMap, BTreeSet};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::jobs::Status;
use crate::jobs::insight::alarms::AlarmKind;
use crate::jobs::os::system::SystemAlert;
use crate::jobs::text::sanitize::plain_text;
use crate::tui::app::App;
use crate::tui::theme::Theme;
use crate::watch::{POLL_EVERY, WatchMode};

/// (label, statuses counted together).
const COUNTED: &[(&str, &[Status])] = &[
    ("running", &[Status::Running]),
    ("waiting for you", &[Status::Waiting, Status::NeedsInput]),
    ("queued", &[Status::Queued]),
    ("completed", &[Status::Completed]),
    (
        "failed",
        &[Status::Failed, Status::ChecksFailed, Status::Killed],
    ),
    ("died", &[Status::Died]),
];

fn short(label: &str) -> &str {
    match label {
        "running" => "run",
        "waiting for you" => "wait",
        "completed" => "done",
        "queued" => "queue",
        "failed" => "fail",
        other => other,
    }
}

pub fn count(app: &App, statuses: &[Status]) -> usize {
    statuses
        .iter()
        .map(|s| app.table.counts.get(s).copied().unwrap_or(0))
        .sum()
}

/// Below this width the header is compact (`Form::Compact`).
const FULL_FROM: u16 = 130;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let narrow = area.width < FULL_FROM;
    // Alarms make the line longer: it gives up only what it must to fit, step by step.
    let forms: &[Form] = if narrow {
        &[Form::Compact]
    } else {
        &[Form::Full, Form::Trimmed, Form::Compact]
    };
    let mut spans = Vec::new();
    for form in forms {
        spans = top_line(app, theme, narrow, *form);
        if Line::from(spans.clone()).width() <= usize::from(area.width) {
            break;
        }
    }
    let mut lines = vec![Line::from(spans)];
    if app.opts.read_only && area.height > 1 {
        lines.push(wall_line(app, theme));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// How much the top line says, from the most to the least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Full,
    /// No name, no `all projects`, the root's last parts: the labels stay long.
    Trimmed,
    /// Short labels too.
    Compact,
}

/// The top line in `form`; `narrow`: alarms and hosts say their short forms.
fn top_line(app: &App, theme: &Theme, narrow: bool, form: Form) -> Vec<Span<'static>> {
    let alarms = alarm_spans(app, theme, narrow);
    let compact = form == Form::Compact;
    let mut spans = Vec::new();
    if form == Form::Full {
        spans.push(Span::styled(" luzia ", theme.accent()));
    }
    if app.opts.read_only {
        spans.push(Span::styled(" READ-ONLY ", theme.badge()));
    }
    spans.push(Span::raw(" "));
    // A filter that matches nothing looks like a quiet fleet: say so first, loudly, where even
    // 80 columns show it (the counts behind it are all zero anyway).
    let unknown = app.unknown_projects();
    if !unknown.is_empty() {
        let hint = if compact {
            "esc clears"
        } else {
            "p picks, esc clears"
        };
        spans.push(Span::styled(
            format!(" NO PROJECT {} ({hint}) ", plain_text(&unknown.join(","))),
            theme.badge(),
        ));
        spans.push(Span::raw(" "));
    }
    // The wall display has its own large counts line.
    if !app.opts.read_only {
        // Beside the hosts' own counts, the totals say only their figures where room is short.
        let terse = narrow && !app.hosts.is_empty();
        spans.extend(count_spans(app, theme, compact, terse));
    }
    spans.extend(super::hosts::header_spans(app, theme, narrow));
    // A compact header names the project only when one is picked: the root matters more.
    if !unknown.is_empty() {
        // Already said, first.
    } else if !app.table.projects.is_empty() {
        spans.push(Span::styled(
            format!("│ {} ", plain_text(&app.table.projects.join(","))),
            theme.title(),
        ));
    } else if form == Form::Full {
        spans.push(Span::styled("│ all projects ", theme.title()));
    }
    spans.extend(alarms);
    spans.extend(hold_spans(app, theme, compact));
    spans.push(match &app.watch_mode {
        // Nothing to watch, nor to poll: what is listed is what was there.
        _ if app.root_gone => Span::styled("│ root missing ", theme.warn()),
        WatchMode::Inotify => Span::styled("│ live ", theme.dim()),
        WatchMode::Polling { .. } if compact => Span::styled(
            format!("│ polling every {}s ", POLL_EVERY.as_secs()),
            theme.warn(),
        ),
        WatchMode::Polling { reason } => Span::styled(
            format!("│ polling every {}s ({reason}) ", POLL_EVERY.as_secs()),
            theme.warn(),
        ),
    });
    let root = if form != Form::Full {
        short_path(&app.opts.root)
    } else {
        app.opts.root.display().to_string()
    };
    spans.push(Span::styled(format!("│ {root}"), theme.dim()));
    spans
}

/// The counts by state; short labels when room is short, none when `terse` (`2● 1◆`).
fn count_spans(app: &App, theme: &Theme, short_labels: bool, terse: bool) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (label, statuses) in COUNTED {
        if terse {
            let n = count(app, statuses);
            let style = if n == 0 {
                theme.dim()
            } else {
                theme.status(statuses[0])
            };
            spans.push(Span::styled(
                format!("{n}{}", theme.symbol(statuses[0])),
                style,
            ));
            spans.push(Span::raw(" "));
            continue;
        }
        let n = count(app, statuses);
        let style = if n == 0 {
            theme.dim()
        } else {
            theme.status(statuses[0])
        };
        let label = if short_labels { short(label) } else { label };
        spans.push(Span::styled(
            format!("{} {n} {label}", theme.symbol(statuses[0])),
            style,
        ));
        spans.push(Span::raw(if short_labels { " " } else { "  " }));
    }
    spans
}

/// Each account's usage limit that stands, and how many queued tasks wait on it:
/// `│ claude limit · resets 17:00 · 3 held` (`│ limit 17:00 · 3 held` where room is short).
fn hold_spans(app: &App, theme: &Theme, compact: bool) -> Vec<Span<'static>> {
    app.held()
        .into_iter()
        .map(|(hold, waiting)| {
            let clock = crate::jobs::model::limit::clock(hold.resets_at, app.now);
            let mut text = if compact {
                format!("│ limit {clock}")
            } else {
                format!("│ {} limit · resets {clock}", plain_text(&hold.agent))
            };
            if waiting > 0 {
                text.push_str(&format!(" · {waiting} held"));
            }
            text.push(' ');
            Span::styled(text, theme.warn())
        })
        .collect()
}

/// How many jobs (of the projects shown) stand in each alarm, and the server's alerts.
pub fn alarm_counts(app: &App) -> Vec<(AlarmKind, usize)> {
    let mut counts: BTreeMap<AlarmKind, usize> = BTreeMap::new();
    for (id, alarms) in &app.insight.alarms {
        let shown = app
            .jobs
            .get(id)
            .is_some_and(|j| crate::tui::app::table::view::in_projects(j, &app.table.projects));
        if !shown {
            continue;
        }
        let kinds: BTreeSet<AlarmKind> = alarms.iter().map(|a| a.kind).collect();
        for k in kinds {
            *counts.entry(k).or_default() += 1;
        }
    }
    counts.into_iter().collect()
}

/// A word for each alarm where the header has little room.
fn short_alarm(kind: AlarmKind) -> &'static str {
    match kind {
        AlarmKind::Stalled => "stalled",
        AlarmKind::OverBudget => "over",
        AlarmKind::QuestionWaiting => "ask",
        AlarmKind::NearBudget => "near",
    }
}

fn alarm_spans(app: &App, theme: &Theme, narrow: bool) -> Vec<Span<'static>> {
    let mut parts: Vec<(String, Style)> = alarm_counts(app)
        .into_iter()
        .map(|(kind, n)| {
            let style = match kind {
                AlarmKind::Stalled | AlarmKind::OverBudget => theme.error(),
                _ => theme.warn(),
            };
            let label = if narrow {
                short_alarm(kind)
            } else {
                kind.label()
            };
            (format!("{n} {label}"), style)
        })
        .collect();
    parts.extend(app.insight.system.iter().map(|a| match a {
        SystemAlert::Memory { used_percent } if narrow => {
            (format!("mem {used_percent:.0}%"), theme.error())
        }
        SystemAlert::Load { load1, .. } if narrow => (format!("load {load1:.1}"), theme.error()),
        other => (other.to_string(), theme.error()),
    }));
    if parts.is_empty() {
        return vec![];
    }
    let mut spans = vec![Span::styled(
        format!("│ {} ", theme.alarm_mark()),
        theme.error(),
    )];
    for (i, (text, style)) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(if narrow { " " } else { " · " }, theme.dim()));
        }
        spans.push(Span::styled(text, style));
    }
    spans.push(Span::raw(" "));
    spans
}

/// Large, readable counts for a screen across the room: only the states that need eyes.
fn wall_line(app: &App, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for (label, statuses) in [COUNTED[1], COUNTED[0], COUNTED[4], COUNTED[5], COUNTED[3]] {
        let label = label.trim_end_matches(" for you");
        let n = count(app, statuses);
        let style = if n == 0 {
            theme.dim()
        } else {
            theme
                .status(statuses[0])
                .add_modifier(Modifier::REVERSED | Modifier::BOLD)
        };
        spans.push(Span::styled(
            format!(
                " {} {n} {} ",
                theme.symbol(statuses[0]),
                label.to_uppercase()
            ),
            style,
        ));
        spans.push(Span::raw("  "));
    }
    Line::from(spans)
}

/// The last two components of a path (`…/luz-orchestrator/jobs`): what tells roots apart.
fn short_path(path: &std::path::Path) -> String {
    let parts: Vec<_> = path.components().collect();
    if parts.len() <= 3 {
        return path.display().to_string();
    }
    let tail: std::path::PathBuf = parts[parts.len() - 2..].iter().collect();
    format!("…/{}", tail.display())
}
