//! The bottom line: the keys that matter now, a message, or the text being typed.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::Theme;
use crate::tui::action::Action;
use crate::tui::app::{App, Focus, Mode};
use crate::tui::input::LineInput;

pub fn render(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let line = match &app.mode {
        Mode::FilterInput(input) => {
            return prompt(
                f,
                area,
                theme,
                "filter jobs: ",
                input,
                "enter keeps · esc clears",
            );
        }
        Mode::SearchInput(input) => {
            return prompt(
                f,
                area,
                theme,
                "search output: ",
                input,
                "enter searches · esc cancels",
            );
        }
        _ => hints(app, theme, area.width as usize),
    };
    f.render_widget(Paragraph::new(line), area);
}

fn prompt(f: &mut Frame, area: Rect, theme: &Theme, label: &str, input: &LineInput, hint: &str) {
    let line = Line::from(vec![
        Span::styled(label.to_string(), theme.accent()),
        Span::raw(input.text().to_string()),
        Span::styled(format!("   {hint}"), theme.dim()),
    ]);
    f.render_widget(Paragraph::new(line), area);
    let before: String = input.text().chars().take(input.cursor()).collect();
    let x = area.x
        + (label.chars().count() + unicode_width::UnicodeWidthStr::width(before.as_str())) as u16;
    f.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
}

fn hints<'a>(app: &App, theme: &Theme, width: usize) -> Line<'a> {
    let km = &app.opts.keymap;
    let k = |a: Action| km.first_key(a);
    let pairs: Vec<(String, &str)> = match (&app.mode, app.focus) {
        (Mode::Detail, _) => vec![
            (k(Action::Back), "close"),
            (format!("{}/{}", k(Action::Up), k(Action::Down)), "scroll"),
            (k(Action::Quit), "quit"),
        ],
        (Mode::Help, _) => vec![("any key".into(), "close")],
        (Mode::Events, _) => vec![
            (format!("{}/{}", k(Action::Up), k(Action::Down)), "move"),
            (k(Action::Open), "go to the job"),
            (k(Action::Back), "close"),
            (k(Action::Quit), "quit"),
        ],
        (Mode::Inbox, _) => vec![("tab".into(), "next"), (k(Action::Back), "close the inbox")],
        (Mode::Dispatch, _) => vec![("enter".into(), "dispatch"), (k(Action::Back), "hide")],
        (Mode::Confirm(_), _) => vec![("y".into(), "yes"), ("any".into(), "no")],
        (Mode::ProjectPicker { .. }, _) => {
            vec![("enter".into(), "choose"), (k(Action::Back), "cancel")]
        }
        (_, Focus::Table) => vec![
            (format!("{}/{}", k(Action::Up), k(Action::Down)), "select"),
            (k(Action::Open), "open"),
            (k(Action::Inbox), "inbox"),
            (k(Action::NewTask), "new"),
            (k(Action::Kill), "kill"),
            (k(Action::Retry), "retry"),
            (k(Action::FocusNext), "output"),
            (k(Action::Filter), "filter"),
            (k(Action::PickProject), "project"),
            (k(Action::Sort), "sort"),
            (k(Action::Events), "events"),
            (
                format!("{}/{}", k(Action::PrevTab), k(Action::NextTab)),
                "view",
            ),
            (k(Action::Help), "help"),
            (k(Action::Quit), "quit"),
        ],
        (_, Focus::Output) => vec![
            (format!("{}/{}", k(Action::Up), k(Action::Down)), "scroll"),
            (k(Action::Follow), "follow"),
            (k(Action::Search), "search"),
            (
                format!("{}/{}", k(Action::SearchNext), k(Action::SearchPrev)),
                "match",
            ),
            (k(Action::ToggleWrap), "wrap"),
            (
                format!("{}/{}", k(Action::NextIssue), k(Action::PrevIssue)),
                "issue",
            ),
            (k(Action::FocusNext), "jobs"),
            (k(Action::Help), "help"),
            (k(Action::Quit), "quit"),
        ],
    };
    let mut pairs = pairs;
    if app.opts.read_only {
        // Nothing that writes is offered on a wall display.
        pairs.retain(|(_, what)| !matches!(*what, "new" | "kill" | "retry"));
    }
    let reserved = app.message.as_ref().map_or(0, |m| m.chars().count() + 3)
        + if app.opts.read_only { 10 } else { 0 };
    fit(&mut pairs, width.saturating_sub(reserved));
    let mut spans = Vec::new();
    if let Some(msg) = &app.message {
        spans.push(Span::styled(format!(" {msg} "), theme.warn()));
        spans.push(Span::raw(" "));
    }
    for (key, what) in pairs {
        spans.push(Span::styled(format!(" {key}"), theme.accent()));
        spans.push(Span::raw(format!(" {what} ")));
    }
    if app.opts.read_only {
        spans.push(Span::styled(" read-only", theme.dim()));
    }
    Line::from(spans)
}

/// Hints dropped first when the line is too narrow; help and quit always stay.
const DROP_FIRST: &[&str] = &[
    "events", "issue", "retry", "kill", "inbox", "project", "sort", "view", "wrap", "match",
    "output", "jobs", "filter", "search", "detail",
];

fn fit(pairs: &mut Vec<(String, &str)>, width: usize) {
    let len = |p: &[(String, &str)]| {
        p.iter()
            .map(|(k, w)| k.chars().count() + w.chars().count() + 3)
            .sum::<usize>()
    };
    for what in DROP_FIRST {
        if len(pairs) <= width {
            return;
        }
        pairs.retain(|(_, w)| w != what);
    }
}
