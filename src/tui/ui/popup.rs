//! Things drawn on top of the main screen: help and the project picker.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use super::theme::Theme;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::app::dispatch_bar::{Confirm, Draft};

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

/// Help rows: related actions share a row, so the whole list fits 80x24.
const HELP: &[(&[Action], &str)] = &[
    (&[Action::Up, Action::Down], "move / scroll"),
    (&[Action::PageUp, Action::PageDown], "page up / down"),
    (
        &[Action::Top, Action::Bottom],
        "first / last job, top / end of output",
    ),
    (
        &[Action::FocusNext],
        "switch focus: jobs table / output pane",
    ),
    (
        &[Action::PrevTab, Action::NextTab],
        "view: All, Active, Waiting, Done, Failed",
    ),
    (
        &[Action::Open],
        "answer the selected job if it waits, else details",
    ),
    (
        &[Action::Inbox, Action::Details],
        "inbox of questions and gates / detail view",
    ),
    (
        &[Action::NewTask],
        "new task: the input bar (project, task)",
    ),
    (
        &[Action::Kill, Action::Retry],
        "kill the selected job (asks) / retry it",
    ),
    (
        &[Action::Filter],
        "filter jobs (table) / search output (output)",
    ),
    (
        &[Action::SearchNext, Action::SearchPrev],
        "next / previous match",
    ),
    (&[Action::Follow], "follow the output again"),
    (&[Action::ToggleWrap], "wrap long output lines"),
    (&[Action::PickProject], "pick the project filter"),
    (&[Action::Sort], "sort: status, newest, project, longest"),
    (&[Action::Back], "close, clear the filter or search"),
    (&[Action::Help], "this help"),
    (&[Action::Quit], "quit"),
];

pub fn help(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let km = &app.opts.keymap;
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|(actions, what)| {
            let keys: Vec<String> = actions.iter().map(|a| km.keys_for(*a)).collect();
            Line::from(vec![
                Span::styled(format!("{:>18}  ", keys.join("  ")), theme.accent()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        "mouse: click selects, wheel scrolls · keys: [keys] in the config",
        theme.dim(),
    )));
    if app.opts.read_only {
        lines.push(Line::from(Span::styled(
            "read-only: this cockpit writes nothing, anywhere",
            theme.warn(),
        )));
    }
    let height = lines.len() as u16 + 2;
    let rect = centered(area, 72, height);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focus_border())
        .title(Span::styled(" help (any key closes) ", theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}

pub fn picker(items: &[String], selected: usize, theme: &Theme, f: &mut Frame, area: Rect) {
    let width = items
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(10)
        .clamp(24, 60) as u16
        + 4;
    let rect = centered(
        area,
        width,
        (items.len() as u16 + 2)
            .min(area.height.saturating_sub(2))
            .max(3),
    );
    f.render_widget(Clear, rect);
    let list = List::new(items.iter().map(|i| ListItem::new(i.clone())))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focus_border())
                .title(Span::styled(" project ", theme.title())),
        )
        .highlight_style(theme.selected());
    let mut state = ListState::default().with_selected(Some(selected));
    f.render_stateful_widget(list, rect, &mut state);
}

/// The input bar, over the bottom of the screen: the project, the task being typed, an error.
pub fn dispatch_bar(draft: &Draft, theme: &Theme, f: &mut Frame, area: Rect) {
    let height = 8.min(area.height);
    let rect = Rect {
        x: area.x,
        y: area.bottom().saturating_sub(height),
        width: area.width,
        height,
    };
    f.render_widget(Clear, rect);
    let project = draft.project_name().unwrap_or("?");
    let others = if draft.projects.len() > 1 {
        " (tab: another project)"
    } else {
        ""
    };
    let hint = if draft.sending {
        " starting… "
    } else {
        " enter dispatches · alt-enter new line · esc hides (the text stays) "
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent())
        .title(Line::from(vec![
            Span::styled(" new task for ", theme.title()),
            Span::styled(project.to_string(), theme.accent()),
            Span::styled(others, theme.dim()),
        ]))
        .title_bottom(Line::from(Span::styled(hint, theme.dim())));
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let error_height = u16::from(draft.error.is_some());
    let [text, error] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(error_height)]).areas(inner);
    f.render_widget(&draft.task, text);
    if let Some(e) = &draft.error {
        f.render_widget(
            Paragraph::new(Span::styled(e.clone(), theme.error())),
            error,
        );
    }
}

pub fn confirm(what: &Confirm, theme: &Theme, f: &mut Frame, area: Rect) {
    let Confirm::Kill(id) = what;
    let lines = vec![
        Line::from(vec![
            Span::raw("Kill job "),
            Span::styled(id.to_string(), theme.title()),
            Span::raw("?"),
        ]),
        Line::from(Span::styled(
            "SIGTERM now, SIGKILL after 10 s; the exit line is recorded",
            theme.dim(),
        )),
        Line::default(),
        Line::from(Span::styled("y kill · any other key: no", theme.accent())),
    ];
    let rect = centered(area, 64, lines.len() as u16 + 2);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.error())
        .title(Span::styled(" kill ", theme.title()));
    f.render_widget(Paragraph::new(lines).block(block), rect);
}
